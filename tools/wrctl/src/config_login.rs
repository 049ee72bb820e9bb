//! `wrctl config check`'s checks of identity from the site's login (`identity =
//! login`): what the service needs to verify a login, the rooms that ask for one,
//! and the secret reads an HS256 login key adds to a request. Secrets are never
//! shown: `login_hash_key` is `set (64 hex digits)`, a JWK's `k` never appears.

use clap::ValueEnum;
use waiting_room::bots::challenge::ChallengeSettings;
use waiting_room::resources::LOGIN_STORE;
use waiting_room::settings::config::{
    BOT_CHALLENGE, EVENTS, LOGIN_AUDIENCE, LOGIN_HASH_KEY, LOGIN_ISSUER, LOGIN_KEYS, Settings,
};
use waiting_room::settings::events::Schedule;
use waiting_room::settings::identity::{Identity, LoginKeyKind};
use waiting_room::settings::limits::SECRET_READ_BUDGET;

use crate::config_report::{Report, Store};
use crate::jwks_review::{describe, review};

/// Where the service's signing keys (`waitingroom_signingkeys`) live. A store file
/// cannot tell: the edge reads the Secret Store of that name whenever the service
/// has one, else the config store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeysIn {
    /// A Secret Store (the recommended set-up, fastly.toml's): up to 2 secret reads a request.
    SecretStore,
    /// A config store (local runs, a service without a Secret Store): lookups, no secret read.
    ConfigStore,
}

/// Secret reads the signing keys may take a request when in a Secret Store: a
/// token's key and the active one (passes take only the reads left over).
const SIGNING_KEY_READS: u32 = 2;

/// The text `wrctl config check` shows for `key`'s effective value, when it is not
/// the stored text: a secret's, or a value too long to read.
pub fn effective(s: &Settings, key: &str) -> Option<String> {
    match key {
        LOGIN_HASH_KEY => s
            .login_hash_key
            .as_ref()
            .map(|_| "set (64 hex digits)".into()),
        LOGIN_KEYS if !s.login_keys.is_empty() => Some(format!(
            "{} key(s): {}",
            s.login_keys.len(),
            s.login_keys
                .iter()
                .map(|key| format!("{} {}", key.kid, describe(key)))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => None,
    }
}

/// How a stored value the room cannot use is shown: its length only for the keys
/// that may hold a secret (a hash key, a JWK's `k`).
pub fn stored(key: &str, raw: &str) -> String {
    match key {
        LOGIN_HASH_KEY | LOGIN_KEYS => format!("a value of {} characters", raw.chars().count()),
        _ => format!("{:?}", raw.escape_debug().to_string()),
    }
}

/// The service's login settings (`store`: one key each, as read; `fallbacks`: the
/// keys already named unusable). The JWKs of `login_keys` the room ignores are
/// named; with `identity = login`, what it lacks to verify a login is an error.
pub fn check_service(report: &mut Report, s: &Settings, store: &Store, fallbacks: &[&str]) {
    if let Some(review) = store.get(LOGIN_KEYS).and_then(|raw| review(raw)) {
        for (name, why) in review.refused {
            report
                .warnings
                .push(format!("{LOGIN_KEYS}: {name} is ignored: {why}"));
        }
    }
    if s.identity != Identity::Login {
        return;
    }
    let missing = [
        (LOGIN_ISSUER, s.login_issuer.is_none()),
        (LOGIN_AUDIENCE, s.login_audience.is_none()),
        (LOGIN_HASH_KEY, s.login_hash_key.is_none()),
    ];
    for (key, _) in missing
        .iter()
        .filter(|(key, missing)| *missing && !fallbacks.contains(key))
    {
        report.errors.push(format!(
            "identity = login without {key}: every login is refused \
             (login_refused=unconfigured) and every visitor is their address"
        ));
    }
    if s.login_keys.is_empty() && !fallbacks.contains(&LOGIN_KEYS) {
        report.errors.push(format!(
            "identity = login without a usable key in {LOGIN_KEYS}: every login is refused \
             (login_refused=unknown-kid); `wrctl login keys` makes it from the provider's JWKS"
        ));
    }
}

/// A room's login settings (`s`, read from `store`): who may wait against the
/// service's identity, and the secret reads of an HS256 login key.
pub fn check_room(report: &mut Report, s: &Settings, store: &Store, keys_in: KeysIn) {
    let who = &s.who_may_wait;
    if who.needs_login() && s.identity == Identity::Address {
        report.errors.push(format!(
            "who_may_wait = {who} asks for a login, but the service's identity is address: \
             no login is read, so every visitor to the room is refused (sent to sign_in_url, \
             else 401); set identity = login"
        ));
    }
    if who.needs_login() && s.sign_in_url.is_none() {
        report.notes.push(format!(
            "who_may_wait = {who} without sign_in_url: a visitor without the login gets a \
             401, browsers too (set sign_in_url to send them to the site's sign-in)"
        ));
    }
    if s.identity != Identity::Login {
        return;
    }
    let hs256: Vec<&str> = s
        .login_keys
        .iter()
        .filter(|key| key.kind == LoginKeyKind::Hs256)
        .map(|key| key.kid.as_str())
        .collect();
    let challenge = challenge(s, store);
    let keys = match keys_in {
        KeysIn::SecretStore => SIGNING_KEY_READS,
        KeysIn::ConfigStore => 0,
    };
    let reads = u32::from(!hs256.is_empty()) + keys + u32::from(challenge.is_some());
    if let Some(challenge) = challenge.filter(|_| reads > SECRET_READ_BUDGET) {
        report.errors.push(format!(
            "the HS256 login key {} (its secret read from the Secret Store {LOGIN_STORE}: 1 \
             read), the signing keys in a Secret Store ({SIGNING_KEY_READS} reads: a token's \
             key and the active one) and {challenge} (1 read, its secret) make {reads} secret \
             reads a request > the room's {SECRET_READ_BUDGET}: a read past them fails. Use an \
             RS256 or ES256 login key, or keep the signing keys in a config store \
             (--keys-in config-store)",
            hs256.join(", ")
        ));
    }
}

/// `bot_challenge`, or the first event that sets it, when the room has a challenge.
fn challenge(s: &Settings, store: &Store) -> Option<String> {
    if s.bot_challenge.settings().is_some() {
        return Some(BOT_CHALLENGE.to_string());
    }
    let schedule = Schedule::parse(store.get(EVENTS)?);
    let event = schedule.events.iter().find(|event| {
        let set = event.settings.get(BOT_CHALLENGE);
        set.is_some_and(|raw| ChallengeSettings::parse(raw).is_ok())
    })?;
    Some(format!("{BOT_CHALLENGE} (set by event {})", event.name))
}
