//! `wrctl login keys`: an identity provider's JWKS made into `login_keys`. Each JWK is
//! judged by the room's own [`LoginKey::from_jwk`] and the value is the room's
//! [`parse_login_keys`] and [`login_keys_text`]: this module only fetches, explains
//! the refusals, and writes the member where `wrctl config set` writes, when it changed.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use waiting_room::settings::config::LOGIN_KEYS;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::identity::{LoginKey, login_keys_text};
use waiting_room::settings::room_settings::Remembered;

use crate::config_check::{MAX_VALUE_CHARS, Store};
use crate::config_set::{load, save, set};
use crate::fastly_api::api_from_env;
use crate::jwks_review::{describe, review};
use crate::pages::thousands;
use crate::sink::FASTLY_API;
use crate::usage::fail;

/// How long fetching a JWKS may take, connection included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a JWKS read: a provider's is a few kilobytes, certificates included.
pub const MAX_JWKS_BYTES: u64 = 256 * 1024;

/// The options of `wrctl login keys`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// The provider's JWKS: an https:// URL, or a file.
    #[arg(
        long,
        value_name = "URL|FILE",
        value_parser = source,
        long_help = "The provider's JWKS (its jwks_uri, in its OpenID configuration): an \
https:// URL, or a file. Plain http:// only to a loopback address (tests): keys fetched in \
clear could be anyone's.\nExample: --jwks https://id.example.com/.well-known/jwks.json"
    )]
    pub jwks: Source,
    /// A local store file to write login_keys to (as `wrctl config set`).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "fastly_config_store",
        long_help = "A local store file (a JSON object of string values, such as \
local/config.json) whose settings item gets the login_keys member, when it changed.\n\
Example: --config-file local/config.json"
    )]
    pub config_file: Option<PathBuf>,
    /// The service's config store ID (through the Fastly API; token from FASTLY_API_TOKEN only).
    #[arg(
        long,
        value_name = "ID",
        long_help = "The service's config store (waitingroom_config) whose settings item gets \
the login_keys member, when it changed, through the Fastly API (token in FASTLY_API_TOKEN \
only).\nExample: --fastly-config-store STORE_ID"
    )]
    pub fastly_config_store: Option<String>,
    /// The Fastly API's address.
    #[arg(long, value_name = "URL", default_value = FASTLY_API, long_help = "The Fastly API's address (for tests).\nExample: --fastly-api-url http://127.0.0.1:8081")]
    pub fastly_api_url: String,
}

/// Where a JWKS is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An `https://` URL, or an `http://` one to a loopback address.
    Url(String),
    /// A file.
    File(PathBuf),
}

/// `--jwks`: a URL of a scheme the keys may come over, else a file.
fn source(text: &str) -> Result<Source, String> {
    let Some((scheme, _)) = text.split_once("://") else {
        return Ok(Source::File(text.into()));
    };
    let uri: ureq::http::Uri = text.parse().map_err(|e| format!("not a URL: {e}"))?;
    let loopback = uri
        .host()
        .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
        .and_then(|host| host.parse::<std::net::IpAddr>().ok())
        .is_some_and(|ip| ip.is_loopback());
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(Source::Url(text.to_string())),
        "http" if loopback => Ok(Source::Url(text.to_string())),
        _ => {
            Err("keys are fetched over https:// only (plain http:// to a loopback address)".into())
        }
    }
}

/// The JWKS's text, at most [`MAX_JWKS_BYTES`].
pub fn read_jwks(source: &Source) -> Result<String, String> {
    let mut bytes = Vec::new();
    match source {
        Source::File(path) => {
            let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            file.take(MAX_JWKS_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Source::Url(url) => bytes = fetch(url)?,
    }
    if bytes.len() as u64 > MAX_JWKS_BYTES {
        return Err(format!("the JWKS is over {MAX_JWKS_BYTES} bytes: not read"));
    }
    String::from_utf8(bytes).map_err(|_| "the JWKS is not UTF-8".to_string())
}

/// `GET url`, bounded in time and size. An https:// fetch follows redirects to
/// https:// only; a loopback one follows none, so never leaves the machine.
fn fetch(url: &str) -> Result<Vec<u8>, String> {
    let https = url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FETCH_TIMEOUT))
        .http_status_as_error(false)
        .https_only(https)
        .max_redirects(if https { 3 } else { 0 })
        .user_agent(concat!("wrctl/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut response = agent
        .get(url)
        .header("Accept", "application/jwk-set+json, application/json")
        .call()
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    match response
        .body_mut()
        .with_config()
        .limit(MAX_JWKS_BYTES)
        .read_to_vec()
    {
        Ok(bytes) => Ok(bytes),
        Err(ureq::Error::BodyExceedsLimit(_)) => Err(format!(
            "{url}: the JWKS is over {MAX_JWKS_BYTES} bytes: not read"
        )),
        Err(e) => Err(format!("{url}: {e}")),
    }
}

/// The item to write so that `store`'s `login_keys` are `keys`: `None` when the room
/// reads these keys there already (in any order); an error when none is usable or
/// the item would pass a config-store value's limit.
pub fn update(store: &Store, keys: &[LoginKey]) -> Result<Option<(String, String)>, String> {
    let read = RequestContext::from_store(&Remembered::new(|k: &str| store.get(k).cloned()));
    let by_kid = |keys: &[LoginKey]| {
        let mut keys = keys.to_vec();
        keys.sort_by(|a, b| a.kid.cmp(&b.kid));
        keys
    };
    if by_kid(&read.settings.login_keys) == by_kid(keys) {
        return Ok(None);
    }
    let text = login_keys_text(keys).ok_or("no usable key: login_keys not written")?;
    let (_, (item, value)) = set(store, LOGIN_KEYS, &text)?;
    let chars = value.chars().count();
    if chars > MAX_VALUE_CHARS {
        return Err(format!(
            "with these keys ({} characters) the {item} item would be {} characters, over \
             a config-store value's {}: not written",
            thousands(text.chars().count()),
            thousands(chars),
            thousands(MAX_VALUE_CHARS)
        ));
    }
    Ok(Some((item, value)))
}

/// `wrctl login keys`.
pub fn run(args: KeysArgs) -> ExitCode {
    // Without a token, say so before fetching anything.
    let api = args
        .fastly_config_store
        .as_ref()
        .map(|_| api_from_env(&args.fastly_api_url));
    let raw = match read_jwks(&args.jwks) {
        Ok(raw) => raw,
        Err(e) => return fail(1, e),
    };
    let Some(review) = review(&raw) else {
        return fail(
            1,
            "not a JWKS: a JSON object with a list of keys (or the list alone)",
        );
    };
    for key in &review.kept {
        eprintln!("wrctl: kept kid {:?}: {}", key.kid, describe(key));
    }
    for (name, why) in &review.refused {
        eprintln!("wrctl: refused {name}: {why}");
    }
    let Some(text) = login_keys_text(&review.kept) else {
        return fail(
            1,
            "no key of the JWKS is one the room can use: nothing printed nor written",
        );
    };
    println!("{text}");
    if let Some(path) = &args.config_file {
        let store = match load(path) {
            Ok(store) => store,
            Err(e) => return fail(1, e),
        };
        let where_ = path.display();
        return match update(&store, &review.kept) {
            Ok(None) => said(format!(
                "{LOGIN_KEYS} unchanged in {where_}: nothing written"
            )),
            Ok(Some((item, value))) => {
                let mut entries = store;
                entries.insert(item.clone(), value);
                match save(path, &entries) {
                    Ok(()) => said(format!("{LOGIN_KEYS} written in {where_} ({item} item)")),
                    Err(e) => fail(1, e),
                }
            }
            Err(e) => fail(1, e),
        };
    }
    if let (Some(api), Some(id)) = (api, &args.fastly_config_store) {
        let store: Store = match api.config_items(id) {
            Ok(items) => items.into_iter().collect(),
            Err(e) => return fail(1, e),
        };
        return match update(&store, &review.kept) {
            Ok(None) => said(format!(
                "{LOGIN_KEYS} unchanged in config store {id}: nothing written"
            )),
            Ok(Some((item, value))) => match api.upsert_item(id, &item, &value) {
                Ok(()) => said(format!(
                    "{LOGIN_KEYS} written in config store {id} ({item} item)"
                )),
                Err(e) => fail(1, e),
            },
            Err(e) => fail(1, e),
        };
    }
    ExitCode::SUCCESS
}

fn said(message: String) -> ExitCode {
    eprintln!("wrctl: {message}");
    ExitCode::SUCCESS
}
