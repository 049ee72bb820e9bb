//! `wrctl revoke`: a signing key out of the room's key store, never the active
//! key; when it is safe, `wrctl rotate` says ([`crate::rotate_cmd`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use waiting_room::credentials::keys::is_storable_kid;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::room_settings::Remembered;

use crate::fastly_api::{Client as Api, api_from_env};
use crate::rotate_cmd::fail;
use crate::sink::FASTLY_API;
use crate::store_file::{read_store, settings, store_strings, write_store};

/// The options of `wrctl revoke`.
#[derive(Debug, Clone, Args)]
pub struct RevokeArgs {
    /// The key id to remove.
    #[arg(
        value_name = "KID",
        long_help = "The key id to remove from the key store.\nExample: key1"
    )]
    pub kid: String,
    /// JSON key file (kid → key).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "fastly_config_store",
        long_help = "The JSON key store the key is removed from (atomic replace).\nExample: --keys local/signingkeys.json"
    )]
    pub keys: Option<PathBuf>,
    /// JSON config file (its active_key is never revoked).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "fastly_config_store",
        long_help = "The room's JSON config store: the key its active_key names is never removed.\nExample: --config local/config.json"
    )]
    pub config: Option<PathBuf>,
    /// The room's Fastly config store ID (through the Fastly API).
    #[arg(
        long,
        value_name = "ID",
        requires = "fastly_secret_store",
        conflicts_with_all = ["keys", "config"],
        long_help = "Revoke in Fastly instead of local files: active_key is read from the room's \
config store (GET …/items) and never removed. Token from the environment variable \
FASTLY_API_TOKEN only.\nExample: --fastly-config-store 5Wc3lJQbmiVjKvSnJmzkl2"
    )]
    pub fastly_config_store: Option<String>,
    /// The Fastly secret store ID the key is deleted from (waitingroom_signingkeys).
    #[arg(
        long,
        value_name = "ID",
        requires = "fastly_config_store",
        long_help = "The secret store the room reads its keys from: the key is deleted with \
DELETE /resources/stores/secret/ID/secrets/KID.\nExample: --fastly-secret-store 7nTh0qTDzAyUQeyPVKWYBS"
    )]
    pub fastly_secret_store: Option<String>,
    /// The Fastly API's address.
    #[arg(long, value_name = "URL", default_value = FASTLY_API, long_help = "The Fastly API's address (for tests).\nExample: --fastly-api-url http://127.0.0.1:8081")]
    pub fastly_api_url: String,
}

/// `wrctl revoke` through the Fastly API: never the active key.
fn revoke_fastly(api: &Api, config_store: &str, secret_store: &str, kid: &str) -> ExitCode {
    // The id goes into a URL path: an id the room reads (letters, digits, `-`, `_`
    // and `.`), never a `.` or `..` segment.
    if !is_storable_kid(kid) || kid.starts_with('.') {
        return fail(&format!(
            "{kid:?} is not a key id this command sends to the Fastly API"
        ));
    }
    let items = match api.config_items(config_store) {
        Ok(items) => items,
        Err(e) => return fail(&e),
    };
    let settings =
        RequestContext::from_store(&Remembered::new(|key: &str| items.get(key).cloned())).settings;
    if kid == settings.active_key {
        return fail(&format!(
            "{kid:?} is the active key: rotate first (wrctl rotate), then revoke it once its \
             tokens are past use"
        ));
    }
    if let Err(e) = api.delete_secret(secret_store, kid) {
        return fail(&e);
    }
    println!(
        "removed {kid} from secret store {secret_store}; active_key {}",
        settings.active_key
    );
    ExitCode::SUCCESS
}

/// `wrctl revoke`.
pub fn revoke(args: RevokeArgs) -> ExitCode {
    if let (Some(config_store), Some(secret_store)) =
        (&args.fastly_config_store, &args.fastly_secret_store)
    {
        let api = api_from_env(&args.fastly_api_url);
        return revoke_fastly(&api, config_store, secret_store, &args.kid);
    }
    let (Some(keys_path), Some(config_path)) = (&args.keys, &args.config) else {
        return fail("--keys and --config, or --fastly-config-store and --fastly-secret-store");
    };
    let mut keys = match read_store(keys_path) {
        Ok(k) => k,
        Err(e) => return fail(&format!("--keys: {e}")),
    };
    let settings = match settings(Some(config_path)) {
        Ok(s) => s,
        Err(e) => return fail(&format!("--config: {e}")),
    };
    if args.kid == settings.active_key {
        return fail(&format!(
            "{:?} is the active key: rotate first (wrctl rotate), then revoke it once its \
             tokens are past use",
            args.kid
        ));
    }
    if keys.remove(&args.kid).is_none() {
        return fail(&format!(
            "no key {:?} in {} (it holds {})",
            args.kid,
            keys_path.display(),
            keys.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if let Err(e) = write_store(keys_path, &keys) {
        return fail(&e);
    }
    let left = store_strings(&keys);
    println!(
        "removed {} from {}; {} key(s) left, active_key {}",
        args.kid,
        keys_path.display(),
        left.len(),
        settings.active_key
    );
    ExitCode::SUCCESS
}
