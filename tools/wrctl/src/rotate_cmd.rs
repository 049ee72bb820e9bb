//! `wrctl rotate`: a new signing key in and `active_key` switched; the old key
//! goes out with `wrctl revoke` ([`crate::revoke_cmd`]) once no token it signed
//! can still be honoured.
//!
//! Rotation is safe at any moment because the room verifies with the key a token
//! names and signs with `active_key`: tokens signed with the old key stay valid
//! until they expire, and a live session is re-signed with the new key at its next
//! request. The old key is needed for at most `allow_period_timeout` (the longest an
//! allow token lives), for wait tokens up to three wait periods (the address draw
//! grid's longest wait; two on the VCL's) plus the redeem window, and in FIFO mode
//! for a place's hold (`fifo_hold`, or until the line opens plus the hold in a
//! pre-queue): with the default redeem window, `allow_period_timeout + 3 ×
//! wait_period_duration` covers the first two.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;
use waiting_room::credentials::keys::MIN_STRONG_KEY_LEN;
use waiting_room::settings::config::ACTIVE_KEY;
use waiting_room::settings::config::{QueueingMethod, Settings};
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::room_settings::Remembered;

use crate::clock::{unix_now, utc};
use crate::fastly_api::{Client as Api, api_from_env};
use crate::keygen_cmd::{check_kid, check_size, generate};
use crate::sink::FASTLY_API;
use crate::store_file::{read_store, settings, write_store};
use crate::usage::usage_error;

/// The options of `wrctl rotate`.
#[derive(Debug, Clone, Args)]
pub struct RotateArgs {
    /// JSON key file (kid → key) the new key is added to.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "fastly_config_store",
        long_help = "The JSON key store (as local/signingkeys.json) the new key is added to; \
the file is replaced atomically and its other keys are kept.\nExample: --keys local/signingkeys.json"
    )]
    pub keys: Option<PathBuf>,
    /// JSON config file whose active_key is switched.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "fastly_config_store",
        long_help = "The room's JSON config store (as local/config.json): active_key is set to \
the new key id (atomic replace, other settings kept), and allow_period_timeout and \
wait_period_duration are read from it.\nExample: --config local/config.json"
    )]
    pub config: Option<PathBuf>,
    /// The new key's id (default: the next free keyN).
    #[arg(
        long,
        value_name = "NEW",
        long_help = "The new key's id; it must not exist yet. Default with local files: key<N> \
for the first N above every keyN in the key file. Required with the Fastly API.\nExample: --kid key3"
    )]
    pub kid: Option<String>,
    /// Random bytes in the new key.
    #[arg(long, value_name = "N", default_value_t = MIN_STRONG_KEY_LEN, long_help = "Random bytes in the new key: under 32 is refused.\nExample: --bytes 48")]
    pub bytes: usize,
    /// The room's Fastly config store ID (through the Fastly API).
    #[arg(
        long,
        value_name = "ID",
        requires = "fastly_secret_store",
        conflicts_with_all = ["keys", "config"],
        long_help = "Rotate in Fastly instead of local files: the room's config store \
(its settings are read with GET …/items, active_key is switched with one PATCH …/items \
upsert). Token from the environment variable FASTLY_API_TOKEN only.\nExample: --fastly-config-store 5Wc3lJQbmiVjKvSnJmzkl2"
    )]
    pub fastly_config_store: Option<String>,
    /// The Fastly secret store ID the new key goes to (waitingroom_signingkeys).
    #[arg(
        long,
        value_name = "ID",
        requires = "fastly_config_store",
        long_help = "The secret store the room reads its keys from (waitingroom_signingkeys): the \
new key is created there with POST /resources/stores/secret/ID/secrets (an existing name is \
refused, never overwritten), before active_key is switched.\nExample: --fastly-secret-store 7nTh0qTDzAyUQeyPVKWYBS"
    )]
    pub fastly_secret_store: Option<String>,
    /// The Fastly API's address.
    #[arg(long, value_name = "URL", default_value = FASTLY_API, long_help = "The Fastly API's address (for tests).\nExample: --fastly-api-url http://127.0.0.1:8081")]
    pub fastly_api_url: String,
}

/// When a key replaced at `now` can be deleted: after every token it signed is
/// past use (see the module's documentation).
pub fn deletion_time(now: u64, settings: &Settings) -> u64 {
    let d = settings.wait_period_duration;
    let waits = d.saturating_mul(3);
    let wait_tokens = waits.saturating_add(settings.redeem_window());
    let after = settings
        .allow_period_timeout
        .saturating_add(waits)
        .max(wait_tokens);
    let held_until = match settings.queueing_method {
        QueueingMethod::Fifo => now
            .max(settings.queue_opens_at.unwrap_or(0))
            .saturating_add(settings.fifo_hold),
        QueueingMethod::Random => 0,
    };
    now.saturating_add(after).max(held_until)
}

/// The next free `keyN` id.
fn next_kid<'a>(existing: impl Iterator<Item = &'a String>) -> String {
    let n = existing
        .filter_map(|k| k.strip_prefix("key")?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    format!("key{}", n + 1)
}

pub(crate) fn fail(message: &str) -> ExitCode {
    eprintln!("wrctl: {message}");
    ExitCode::FAILURE
}

/// What to tell the operator once the switch is made.
fn report(old: &str, new: &str, now: u64, settings: &Settings, revoke_hint: &str) {
    let at = deletion_time(now, settings);
    println!("active_key: {old} -> {new} (the new key is stored; it is not shown)");
    println!(
        "{old} can be deleted after {} (unix {at}), in {}: allow_period_timeout {} s + 3 × \
         wait_period_duration {} s, or longer for a long redeem_window or held FIFO places",
        utc(at),
        waiting_room::pages::view::human_duration(at - now),
        settings.allow_period_timeout,
        settings.wait_period_duration
    );
    println!("then: {revoke_hint}");
}

/// `wrctl rotate`.
pub fn rotate(args: RotateArgs) -> ExitCode {
    if let Err(e) = check_size(args.bytes, false) {
        usage_error(&format!("--bytes: {e}"));
    }
    if let Some(kid) = &args.kid
        && let Err(e) = check_kid(kid)
    {
        usage_error(&format!("--kid: {e}"));
    }
    match (&args.fastly_config_store, &args.fastly_secret_store) {
        (Some(config_store), Some(secret_store)) => {
            let Some(kid) = args.kid.clone() else {
                usage_error("--kid is required with --fastly-config-store");
            };
            let api = api_from_env(&args.fastly_api_url);
            rotate_fastly(&api, config_store, secret_store, &kid, args.bytes)
        }
        _ => rotate_files(&args),
    }
}

fn rotate_files(args: &RotateArgs) -> ExitCode {
    let (Some(keys_path), Some(config_path)) = (&args.keys, &args.config) else {
        usage_error("--keys and --config are required");
    };
    let mut keys = match read_store(keys_path) {
        Ok(k) => k,
        Err(e) => return fail(&format!("--keys: {e}")),
    };
    let mut config = match read_store(config_path) {
        Ok(c) => c,
        Err(e) => return fail(&format!("--config: {e}")),
    };
    let settings = match settings(Some(config_path)) {
        Ok(s) => s,
        Err(e) => return fail(&format!("--config: {e}")),
    };
    let old = settings.active_key.clone();
    let new = args
        .kid
        .clone()
        .unwrap_or_else(|| next_kid(keys.keys().chain([&old])));
    if keys.contains_key(&new) {
        return fail(&format!(
            "key {new:?} already exists in {}: rotate to a new id",
            keys_path.display()
        ));
    }
    if old == new {
        return fail(&format!("{new:?} is already the active key"));
    }
    let key = match generate(args.bytes) {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    // The key first, then the switch: the room never names a key it cannot find.
    keys.insert(new.clone(), Value::String(key));
    if let Err(e) = write_store(keys_path, &keys) {
        return fail(&e);
    }
    config.insert(ACTIVE_KEY.to_string(), Value::String(new.clone()));
    if let Err(e) = write_store(config_path, &config) {
        return fail(&format!(
            "{e} (the new key {new:?} is in {}, active_key is still {old:?})",
            keys_path.display()
        ));
    }
    let now = unix_now();
    report(
        &old,
        &new,
        now,
        &settings,
        &format!(
            "wrctl revoke {old} --keys {} --config {}",
            keys_path.display(),
            config_path.display()
        ),
    );
    ExitCode::SUCCESS
}

fn rotate_fastly(
    api: &Api,
    config_store: &str,
    secret_store: &str,
    new: &str,
    bytes: usize,
) -> ExitCode {
    let items = match api.config_items(config_store) {
        Ok(items) => items,
        Err(e) => return fail(&e),
    };
    let settings =
        RequestContext::from_store(&Remembered::new(|key: &str| items.get(key).cloned())).settings;
    let old = settings.active_key.clone();
    if old == new {
        return fail(&format!("{new:?} is already the active key"));
    }
    let key = match generate(bytes) {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    if let Err(e) = api.create_secret(secret_store, new, &key) {
        return fail(&format!("{e} (active_key is still {old:?})"));
    }
    drop(key);
    if let Err(e) = api.upsert_item(config_store, ACTIVE_KEY, new) {
        return fail(&format!(
            "{e} (the key {new:?} is in secret store {secret_store}, active_key is still {old:?})"
        ));
    }
    report(
        &old,
        new,
        unix_now(),
        &settings,
        &format!(
            "wrctl revoke {old} --fastly-config-store {config_store} --fastly-secret-store {secret_store}"
        ),
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_kid_is_above_every_numbered_key() {
        let ids = ["key1".to_string(), "key7".into(), "other".into()];
        assert_eq!(next_kid(ids.iter()), "key8");
        assert_eq!(next_kid([].iter()), "key1");
    }

    #[test]
    fn deletion_waits_for_sessions_and_wait_tokens() {
        let s = Settings::from_lookup(|k| match k {
            "allow_period_timeout" => Some("600".into()),
            "wait_period_duration" => Some("10".into()),
            _ => None,
        });
        assert_eq!(deletion_time(1000, &s), 1000 + 600 + 30);
        // In FIFO mode, places held until the line opens plus their hold.
        let fifo = Settings::from_lookup(|k| match k {
            "allow_period_timeout" => Some("600".into()),
            "wait_period_duration" => Some("10".into()),
            "queueing_method" => Some("fifo".into()),
            "queue_opens_at" => Some("5000".into()),
            _ => None,
        });
        assert_eq!(deletion_time(1000, &fifo), 5000 + 300);
        assert_eq!(deletion_time(9000, &fifo), 9000 + 630);
    }
}
