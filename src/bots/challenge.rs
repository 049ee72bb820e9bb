//! An external challenge for a room: Cloudflare Turnstile or hCaptcha, as plain
//! values (no Fastly types, so it compiles and tests natively).
//!
//! A room with a challenge shows the provider's widget on its waiting page; the
//! page puts the widget's token in the room's toll cookie, and at the visitor's
//! draw the edge verifies it once, per wait token, against the provider's
//! `siteverify` API through a Fastly backend ([`Provider::backend`]), with the
//! secret from the Secret Store [`SECRET_STORE`] (one secret per site key,
//! [`ChallengeSettings::secret_name`]). This module holds everything but the
//! network call:
//!
//! - [`ChallengeSettings::parse`]: the room's setting, e.g.
//!   `{"provider":"turnstile","site_key":"…","when_down":"closed"}`;
//! - [`validate_token`]: the cookie's token, refused before any network call
//!   unless it has the shape the providers' tokens have;
//! - [`ChallengeSettings::verify_request_body`] / [`verify_request_body`]: the
//!   `application/x-www-form-urlencoded` body of the `POST`;
//! - [`parse_verify_response`]: the provider's answer as an [`Outcome`]: passed,
//!   failed (with the provider's error codes, safe for a log line), or provider
//!   down (then [`WhenDown`] decides, [`Outcome::admits`]);
//! - [`Verifier`]: what the core asks the edge when a draw is due.
//!
//! The providers' documentation: Turnstile
//! <https://developers.cloudflare.com/turnstile/get-started/server-side-validation/>,
//! hCaptcha <https://docs.hcaptcha.com/#verify-the-user-response-server-side>.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The Secret Store that holds the providers' secret keys, one entry per site
/// key ([`ChallengeSettings::secret_name`]).
pub const SECRET_STORE: &str = "waitingroom_challenge";

/// The longest site key accepted (Turnstile's are 24 characters, hCaptcha's 36).
pub const MAX_SITE_KEY_LEN: usize = 64;

/// The longest Turnstile token: "A Turnstile token can have up to 2048 characters".
pub const TURNSTILE_MAX_TOKEN_LEN: usize = 2048;

/// The longest hCaptcha token accepted. hCaptcha documents no limit and its
/// tokens have been seen past 4000 characters; a browser keeps at most 4096
/// bytes of a cookie's name and value, so nothing longer can arrive in one.
pub const HCAPTCHA_MAX_TOKEN_LEN: usize = 4096;

/// The largest `siteverify` answer read: a real one is a few hundred bytes.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// The longest [`Reason`], in bytes.
pub const MAX_REASON_LEN: usize = 64;

/// The most error codes a [`Reason`] keeps.
const MAX_REASON_CODES: usize = 4;

/// The page's JavaScript functions the widget calls ([`ChallengeSettings::widget_html`]):
/// with the token, when it expires, and on an error.
pub const CALLBACKS: [&str; 3] = ["wrChallengeDone", "wrChallengeExpired", "wrChallengeError"];

/// The Turnstile `action` the widget declares and `siteverify` returns.
pub const TURNSTILE_ACTION: &str = "waiting-room";

/// A challenge provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Cloudflare Turnstile.
    Turnstile,
    /// hCaptcha.
    Hcaptcha,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 2] = [Provider::Turnstile, Provider::Hcaptcha];

    /// Its name in the settings and the logs.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Turnstile => "turnstile",
            Provider::Hcaptcha => "hcaptcha",
        }
    }

    /// The host of its `siteverify` endpoint (HTTPS, port 443).
    pub fn verify_host(self) -> &'static str {
        match self {
            Provider::Turnstile => "challenges.cloudflare.com",
            Provider::Hcaptcha => "api.hcaptcha.com",
        }
    }

    /// The path of its `siteverify` endpoint.
    pub fn verify_path(self) -> &'static str {
        match self {
            Provider::Turnstile => "/turnstile/v0/siteverify",
            Provider::Hcaptcha => "/siteverify",
        }
    }

    /// The full `siteverify` URL.
    pub fn verify_url(self) -> String {
        format!("https://{}{}", self.verify_host(), self.verify_path())
    }

    /// The name of the service's static backend that reaches [`Self::verify_host`]
    /// (locally, the stand-in).
    pub fn backend(self) -> &'static str {
        match self {
            Provider::Turnstile => "challenge_turnstile",
            Provider::Hcaptcha => "challenge_hcaptcha",
        }
    }

    /// The URL of the widget's script.
    pub fn script_url(self) -> &'static str {
        match self {
            Provider::Turnstile => "https://challenges.cloudflare.com/turnstile/v0/api.js",
            Provider::Hcaptcha => "https://js.hcaptcha.com/1/api.js",
        }
    }

    /// The class of the element the script renders the widget in.
    pub fn widget_class(self) -> &'static str {
        match self {
            Provider::Turnstile => "cf-turnstile",
            Provider::Hcaptcha => "h-captcha",
        }
    }

    /// What a page's `Content-Security-Policy` must allow for the widget, per
    /// directive (the room sends none; an operator who adds one needs these).
    pub fn csp_sources(self) -> &'static [(&'static str, &'static str)] {
        const HCAPTCHA: &str = "https://hcaptcha.com https://*.hcaptcha.com";
        match self {
            Provider::Turnstile => &[
                ("script-src", "https://challenges.cloudflare.com"),
                ("frame-src", "https://challenges.cloudflare.com"),
            ],
            Provider::Hcaptcha => &[
                ("script-src", HCAPTCHA),
                ("frame-src", HCAPTCHA),
                ("style-src", HCAPTCHA),
                ("connect-src", HCAPTCHA),
            ],
        }
    }

    /// The longest token accepted from this provider.
    pub fn max_token_len(self) -> usize {
        match self {
            Provider::Turnstile => TURNSTILE_MAX_TOKEN_LEN,
            Provider::Hcaptcha => HCAPTCHA_MAX_TOKEN_LEN,
        }
    }

    /// Seconds a token stays verifiable: Turnstile documents 300; hCaptcha's
    /// `expired-input-response` says 120 by default.
    pub fn token_lifetime(self) -> u64 {
        match self {
            Provider::Turnstile => 300,
            Provider::Hcaptcha => 120,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the room does with a visitor whose token could not be verified because
/// the provider did not answer properly ([`Outcome::ProviderDown`]).
///
/// The default is [`WhenDown::Closed`]. Weighed:
///
/// - *Closed* holds every visitor whose draw comes while the provider is down:
///   they wait on (random mode: a new wait token; FIFO: their place kept), their
///   page renders the widget again, and they are drawn as soon as the provider
///   answers. Sessions already admitted go on. The cost is availability: no new
///   admissions during the outage.
/// - *Open* admits to the draw anyone who presents a well-formed token during the
///   outage, and the outage path is partly in the visitor's hands: any junk
///   token of the right shape is then "unverifiable", and a token that makes the
///   provider fail (an `internal-error`, a 5xx, a slow answer) would be a bypass.
///   Note also that *open* can never help a visitor whose browser could not load
///   the widget (no token at all is a failure, never an outage: a bot could
///   claim as much).
///
/// A room that turns a challenge on asks for a bot filter; a filter that lets
/// bots through whenever its provider stumbles is not one. The draw still
/// caps admissions in both cases, so neither choice overloads the origin: the
/// choice is fairness (closed) against admissions during an outage (open), and
/// the operator who prefers the latter says `"when_down": "open"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenDown {
    /// Treat an unverifiable token as passed.
    Open,
    /// Treat an unverifiable token as failed (the default).
    #[default]
    Closed,
}

impl WhenDown {
    /// Its name in the settings and the logs.
    pub fn name(self) -> &'static str {
        match self {
            WhenDown::Open => "open",
            WhenDown::Closed => "closed",
        }
    }
}

/// A room's challenge, from its setting (a JSON object):
/// `{"provider":"turnstile"|"hcaptcha","site_key":"…","when_down":"open"|"closed"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeSettings {
    /// The provider.
    pub provider: Provider,
    /// The widget's public site key: 1 to [`MAX_SITE_KEY_LEN`] ASCII letters,
    /// digits, `-` or `_` (so it is safe in an HTML attribute and is a valid
    /// Secret Store entry name).
    pub site_key: String,
    /// What to do while the provider is down ([`WhenDown`], default closed).
    pub when_down: WhenDown,
}

/// The setting as written, before the site key is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsText {
    provider: Provider,
    site_key: String,
    #[serde(default)]
    when_down: WhenDown,
}

impl ChallengeSettings {
    /// Reads the setting from its JSON text; says why not (unknown fields, a
    /// missing or unknown provider, a site key of the wrong shape…).
    pub fn parse(raw: &str) -> Result<ChallengeSettings, String> {
        let value: serde_json::Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        ChallengeSettings::from_value(value)
    }

    /// Reads the setting from a JSON value (a named room's object holds it as
    /// one); only an object will do (serde would read an array by position).
    pub fn from_value(value: serde_json::Value) -> Result<ChallengeSettings, String> {
        if !value.is_object() {
            return Err("not a JSON object".to_string());
        }
        let text: SettingsText = serde_json::from_value(value).map_err(|e| e.to_string())?;
        ChallengeSettings::checked(text)
    }

    fn checked(text: SettingsText) -> Result<ChallengeSettings, String> {
        if !is_site_key(&text.site_key) {
            return Err(format!(
                "site_key: 1 to {MAX_SITE_KEY_LEN} ASCII letters, digits, '-' or '_'"
            ));
        }
        Ok(ChallengeSettings {
            provider: text.provider,
            site_key: text.site_key,
            when_down: text.when_down,
        })
    }

    /// The name of the secret key's entry in [`SECRET_STORE`]: the site key, so
    /// that rooms with widgets of their own each find their secret.
    pub fn secret_name(&self) -> &str {
        &self.site_key
    }

    /// The verification `POST` body for `token` (already through
    /// [`validate_token`]), presented with the wait token whose signature is
    /// `signature`, by a visitor at `remote_ip`. Turnstile gets an
    /// `idempotency_key` derived from the wait token ([`idempotency_key`]), so
    /// that a retry of the same draw (a lost response) verifies again instead of
    /// failing as a duplicate; hCaptcha, which has no idempotency, gets the
    /// `sitekey` the token must belong to.
    pub fn verify_request_body(
        &self,
        secret: &str,
        token: &str,
        remote_ip: Option<IpAddr>,
        signature: &[u8; 32],
    ) -> String {
        match self.provider {
            Provider::Turnstile => {
                let key = idempotency_key(signature);
                encode_form(secret, token, remote_ip, Some(&key), None)
            }
            Provider::Hcaptcha => encode_form(secret, token, remote_ip, None, Some(&self.site_key)),
        }
    }

    /// The widget's HTML: the provider's script and the element it renders in,
    /// calling the page's [`CALLBACKS`]. The site key is checked at parsing, so
    /// it needs no escaping.
    pub fn widget_html(&self) -> String {
        let [done, expired, error] = CALLBACKS;
        let extra = match self.provider {
            // The action comes back in siteverify; no hidden form field.
            Provider::Turnstile => {
                format!(" data-action=\"{TURNSTILE_ACTION}\" data-response-field=\"false\"")
            }
            Provider::Hcaptcha => String::new(),
        };
        format!(
            "<script src=\"{script}\" async defer></script>\n\
             <div class=\"{class}\" data-sitekey=\"{key}\" data-callback=\"{done}\" \
             data-expired-callback=\"{expired}\" data-error-callback=\"{error}\"{extra}></div>",
            script = self.provider.script_url(),
            class = self.provider.widget_class(),
            key = self.site_key,
        )
    }
}

impl FromStr for ChallengeSettings {
    type Err = String;
    fn from_str(raw: &str) -> Result<ChallengeSettings, String> {
        ChallengeSettings::parse(raw)
    }
}

/// A room's `bot_challenge` setting, as read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BotChallenge {
    /// No challenge (the key is missing, or `null` in a named room's object).
    #[default]
    Off,
    /// This challenge.
    On(ChallengeSettings),
    /// A value that does not parse. The filter stays on rather than turning off
    /// on a typo: every due draw comes unpaid (held) until it is mended, and the
    /// log says `config_fallback=bot_challenge`.
    Unreadable,
}

impl BotChallenge {
    /// Reads the setting's stored text (see [`ChallengeSettings::parse`]).
    pub fn parse(raw: &str) -> BotChallenge {
        ChallengeSettings::parse(raw).map_or(BotChallenge::Unreadable, BotChallenge::On)
    }

    /// Whether the room asks a challenge (readable or not).
    pub fn is_on(&self) -> bool {
        !matches!(self, BotChallenge::Off)
    }

    /// The challenge, when readable.
    pub fn settings(&self) -> Option<&ChallengeSettings> {
        match self {
            BotChallenge::On(settings) => Some(settings),
            _ => None,
        }
    }
}

/// Whether `key` is a site key: 1 to [`MAX_SITE_KEY_LEN`] of `[A-Za-z0-9_-]`.
fn is_site_key(key: &str) -> bool {
    (1..=MAX_SITE_KEY_LEN).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `raw` if it can be a token of `provider`: 1 to [`Provider::max_token_len`]
/// characters of the two base64 alphabets (RFC 4648 §4 and §5) and `.`.
///
/// Neither provider documents its tokens' alphabet. Seen so far: Turnstile's
/// `0.` followed by URL-safe base64 segments separated by dots (test token
/// `XXXX.DUMMY.TOKEN.XXXX`), hCaptcha's `P1_` + a JWT (test token
/// `10000000-aaaa-bbbb-cccc-000000000001`). The standard alphabet's `+`, `/` and
/// `=` are let through as well (all cookie-safe): a provider that changed its
/// encoding would otherwise hold every visitor. Everything else — whitespace,
/// quotes, `;`, `,`, `\`, `%`, `&`, controls, non-ASCII — is refused before any
/// network call.
pub fn validate_token(provider: Provider, raw: &str) -> Option<&str> {
    let shaped = !raw.is_empty()
        && raw.len() <= provider.max_token_len()
        && raw.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+' | b'/' | b'=')
        });
    shaped.then_some(raw)
}

/// The `application/x-www-form-urlencoded` body of a `siteverify` request:
/// `secret`, `response`, then `remoteip` and `idempotency_key` when given.
pub fn verify_request_body(
    secret: &str,
    response_token: &str,
    remote_ip: Option<IpAddr>,
    idempotency_key: Option<&str>,
) -> String {
    encode_form(secret, response_token, remote_ip, idempotency_key, None)
}

fn encode_form(
    secret: &str,
    response_token: &str,
    remote_ip: Option<IpAddr>,
    idempotency_key: Option<&str>,
    sitekey: Option<&str>,
) -> String {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("secret", secret);
    form.append_pair("response", response_token);
    if let Some(ip) = remote_ip {
        form.append_pair("remoteip", &ip.to_string());
    }
    if let Some(key) = idempotency_key {
        form.append_pair("idempotency_key", key);
    }
    if let Some(key) = sitekey {
        form.append_pair("sitekey", key);
    }
    form.finish()
}

/// The Turnstile `idempotency_key` for the wait token whose signature is
/// `signature`: a UUID (version 4 layout) made of the first 16 bytes of
/// `SHA-256("waiting-room-challenge:" + hex(signature))`. The same wait token
/// always gets the same key, and no two get one in common but by chance; it
/// reveals nothing the visitor does not already hold.
pub fn idempotency_key(signature: &[u8; 32]) -> String {
    let mut hash = Sha256::new();
    hash.update("waiting-room-challenge:");
    hash.update(hex::encode(signature));
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Why a verification failed or could not be made, fit for a log line: only
/// `[a-z0-9-]`, with `,` between the provider's error codes; at most
/// [`MAX_REASON_LEN`] bytes, never empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reason(String);

impl Reason {
    /// `text` made safe: ASCII letters lowered, runs of anything else but digits
    /// and `-` turned into one `-`, trimmed of `-`, cut to [`MAX_REASON_LEN`];
    /// `unspecified` when nothing is left. (For a Fastly `SendErrorCause` such as
    /// "HTTP response timeout": `http-response-timeout`.)
    pub fn sanitize(text: &str) -> Reason {
        Reason(clean(text, MAX_REASON_LEN).unwrap_or_else(|| "unspecified".to_string()))
    }

    /// The provider's error codes, each [sanitized](Self::sanitize), empty ones
    /// dropped, at most four, joined with `,` within [`MAX_REASON_LEN`] bytes.
    pub fn from_codes<'a>(codes: impl IntoIterator<Item = &'a str>) -> Reason {
        let mut joined = String::new();
        for code in codes
            .into_iter()
            .filter_map(|code| clean(code, MAX_REASON_LEN))
            .take(MAX_REASON_CODES)
        {
            let needed = code.len() + usize::from(!joined.is_empty());
            if joined.len() + needed > MAX_REASON_LEN {
                break;
            }
            if !joined.is_empty() {
                joined.push(',');
            }
            joined.push_str(&code);
        }
        if joined.is_empty() {
            joined.push_str("unspecified");
        }
        Reason(joined)
    }

    /// The reason as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The reason's codes.
    pub fn codes(&self) -> impl Iterator<Item = &str> {
        self.0.split(',')
    }

    /// Whether a code says the service, not the visitor, is at fault (a missing
    /// or wrong secret, a secret of another site key, a test key in production,
    /// a request the provider could not read; and the edge's own `no-backend`,
    /// for a service without the provider's backend): every visitor will fail
    /// until an operator fixes it, so the edge should say so loudly.
    pub fn blames_operator(&self) -> bool {
        self.codes().any(|code| {
            matches!(
                code,
                "missing-input-secret"
                    | "invalid-input-secret"
                    | "sitekey-secret-mismatch"
                    | "not-using-dummy-passcode"
                    | "not-using-dummy-secret"
                    | "bad-request"
                    | "missing-input-response"
                    | "no-backend"
            )
        })
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `text` lowered to `[a-z0-9-]` (other runs become one `-`), trimmed of `-`, at
/// most `max` bytes; `None` when empty.
fn clean(text: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    let mut dash = false;
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
        if out.len() >= max {
            break;
        }
    }
    out.truncate(max);
    let out = out.trim_end_matches('-');
    (!out.is_empty()).then(|| out.to_string())
}

/// The result of one verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The provider vouches for the token.
    Passed,
    /// The provider refused the token (or it vouched for another host): the
    /// visitor has not passed the challenge.
    Failed(Reason),
    /// No usable answer: not reached, timed out, not 2xx, not the documented
    /// JSON, or the provider's own `internal-error`. [`WhenDown`] decides.
    ProviderDown(Reason),
    /// The room's secret could not be read: nothing was asked, and the request
    /// waits for a read that works (its token neither honoured nor replaced).
    Unread,
}

impl Outcome {
    /// The provider could not be reached: `cause` is the transport's error (for
    /// a Fastly `SendError`, its root cause's text), [sanitized](Reason::sanitize)
    /// after `send-`, so that the log tells it from an answer
    /// (`send-http-response-timeout`, not `internal-error`).
    pub fn unreachable(cause: &str) -> Outcome {
        Outcome::ProviderDown(Reason::sanitize(&format!("send {cause}")))
    }

    /// Whether the visitor goes on to the draw: passed, or down in a room that
    /// fails open.
    pub fn admits(&self, when_down: WhenDown) -> bool {
        match self {
            Outcome::Passed => true,
            Outcome::Failed(_) => false,
            Outcome::ProviderDown(_) => when_down == WhenDown::Open,
            Outcome::Unread => false,
        }
    }

    /// One word for the log line: `passed`, `failed` or `down`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::ProviderDown(_) => "down",
            Outcome::Unread => "unread",
        }
    }

    /// Why it failed or could not be made; `None` when passed.
    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Outcome::Passed | Outcome::Unread => None,
            Outcome::Failed(reason) | Outcome::ProviderDown(reason) => Some(reason),
        }
    }
}

/// The fields of a `siteverify` answer the room reads; the others (`challenge_ts`,
/// `action`, `cdata`, `metadata`, `credit`, `score`…) are ignored, as the
/// providers say more may come.
#[derive(Deserialize)]
struct Answer {
    success: bool,
    #[serde(rename = "error-codes", default)]
    error_codes: Vec<serde_json::Value>,
    #[serde(default)]
    hostname: Option<String>,
}

/// Reads a `siteverify` answer: HTTP `status` and `body`. With
/// `expected_hostname`, a success must name that host (case-insensitive) as the
/// one the challenge was served on.
///
/// - not 2xx, a body over [`MAX_ANSWER_BYTES`], not JSON, no boolean `success`:
///   [`Outcome::ProviderDown`] (`status-503`, `oversized-answer`, `bad-json`);
/// - `success: false`: [`Outcome::Failed`] with the error codes, but for
///   `internal-error` ("the request can be retried"), which is the provider's
///   own failure: [`Outcome::ProviderDown`];
/// - `success: true` for another host, or none: [`Outcome::Failed`]
///   (`hostname-mismatch`, `hostname-missing`); else [`Outcome::Passed`].
pub fn parse_verify_response(status: u16, body: &[u8], expected_hostname: Option<&str>) -> Outcome {
    if !(200..300).contains(&status) {
        return Outcome::ProviderDown(Reason(format!("status-{status}")));
    }
    if body.len() > MAX_ANSWER_BYTES {
        return Outcome::ProviderDown(Reason("oversized-answer".to_string()));
    }
    let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
        return Outcome::ProviderDown(Reason("bad-json".to_string()));
    };
    let codes = || {
        answer
            .error_codes
            .iter()
            .filter_map(serde_json::Value::as_str)
    };
    if !answer.success {
        if codes().any(|code| code == "internal-error") {
            return Outcome::ProviderDown(Reason("internal-error".to_string()));
        }
        return Outcome::Failed(Reason::from_codes(codes()));
    }
    match (expected_hostname, answer.hostname.as_deref()) {
        (None, _) => Outcome::Passed,
        (Some(expected), Some(served)) if served.eq_ignore_ascii_case(expected) => Outcome::Passed,
        (Some(_), Some(_)) => Outcome::Failed(Reason("hostname-mismatch".to_string())),
        (Some(_), None) => Outcome::Failed(Reason("hostname-missing".to_string())),
    }
}

/// What the core asks the edge when a challenge is due: verify `token` (already
/// through [`validate_token`]) for the wait token whose signature is
/// `signature`. Called at most once per request, only when a draw is due.
pub trait Verifier: fmt::Debug {
    /// The outcome of verifying `token`.
    fn verify(&self, token: &str, signature: &[u8; 32]) -> Outcome;
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: [u8; 32] = [7; 32];

    fn settings(raw: &str) -> ChallengeSettings {
        ChallengeSettings::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }

    /// The form body as pairs, decoded independently of the encoder.
    fn pairs(body: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(body.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    #[test]
    fn providers_name_their_documented_endpoints_and_widgets() {
        let t = Provider::Turnstile;
        assert_eq!(
            t.verify_url(),
            "https://challenges.cloudflare.com/turnstile/v0/siteverify"
        );
        assert_eq!(
            t.script_url(),
            "https://challenges.cloudflare.com/turnstile/v0/api.js"
        );
        assert_eq!(t.widget_class(), "cf-turnstile");
        assert_eq!(t.max_token_len(), 2048);
        assert_eq!(t.token_lifetime(), 300);
        let h = Provider::Hcaptcha;
        assert_eq!(h.verify_url(), "https://api.hcaptcha.com/siteverify");
        assert_eq!(h.script_url(), "https://js.hcaptcha.com/1/api.js");
        assert_eq!(h.widget_class(), "h-captcha");
        assert_ne!(t.backend(), h.backend());
        for p in Provider::ALL {
            assert!(p.verify_url().starts_with("https://"));
            assert!(p.verify_path().starts_with('/'));
            assert!(p.csp_sources().iter().any(|(d, _)| *d == "script-src"));
            assert!(p.csp_sources().iter().any(|(d, _)| *d == "frame-src"));
            assert_eq!(p.to_string(), p.name());
        }
        assert_eq!(
            Provider::Hcaptcha.csp_sources().len(),
            4,
            "style and connect too"
        );
    }

    #[test]
    fn settings_read_the_documented_object() {
        let s = settings(
            r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA","when_down":"open"}"#,
        );
        assert_eq!(s.provider, Provider::Turnstile);
        assert_eq!(s.site_key, "1x00000000000000000000AA");
        assert_eq!(s.secret_name(), "1x00000000000000000000AA");
        assert_eq!(s.when_down, WhenDown::Open);
        let s = settings(
            r#"{"provider":"hcaptcha","site_key":"10000000-ffff-ffff-ffff-000000000001"}"#,
        );
        assert_eq!(s.provider, Provider::Hcaptcha);
        assert_eq!(s.when_down, WhenDown::Closed, "closed by default");
        assert_eq!(WhenDown::default().name(), "closed");
        let value =
            serde_json::json!({"provider": "hcaptcha", "site_key": "k_1", "when_down": "closed"});
        assert_eq!(
            ChallengeSettings::from_value(value).unwrap().site_key,
            "k_1"
        );
        assert_eq!(
            "{\"provider\":\"turnstile\",\"site_key\":\"k\"}"
                .parse::<ChallengeSettings>()
                .unwrap()
                .provider,
            Provider::Turnstile
        );
    }

    #[test]
    fn settings_refuse_anything_else() {
        let long = format!(
            r#"{{"provider":"turnstile","site_key":"{}"}}"#,
            "a".repeat(65)
        );
        let bad = [
            r#"{"provider":"turnstile","site_key":"k","extra":1}"#,
            r#"{"provider":"recaptcha","site_key":"k"}"#,
            r#"{"provider":"Turnstile","site_key":"k"}"#,
            r#"{"site_key":"k"}"#,
            r#"{"provider":"turnstile"}"#,
            r#"{"provider":"turnstile","site_key":""}"#,
            r#"{"provider":"turnstile","site_key":"a\"b"}"#,
            r#"{"provider":"turnstile","site_key":"a b"}"#,
            r#"{"provider":"turnstile","site_key":"a<b>"}"#,
            r#"{"provider":"turnstile","site_key":"clé"}"#,
            r#"{"provider":"turnstile","site_key":"k","when_down":"maybe"}"#,
            r#"{"provider":"turnstile","site_key":"k","when_down":"OPEN"}"#,
            r#"{"provider":"turnstile","site_key":7}"#,
            r#"["turnstile","k"]"#,
            r#"["turnstile","k","open"]"#,
            "turnstile",
            "",
            &long,
        ];
        for raw in bad {
            assert!(ChallengeSettings::parse(raw).is_err(), "{raw}");
        }
        let ok = format!(
            r#"{{"provider":"turnstile","site_key":"{}"}}"#,
            "a".repeat(64)
        );
        assert!(ChallengeSettings::parse(&ok).is_ok(), "64 is the limit");
    }

    #[test]
    fn tokens_of_the_providers_shapes_pass_and_nothing_else() {
        let turnstile = Provider::Turnstile;
        for good in [
            "XXXX.DUMMY.TOKEN.XXXX",
            "0.zrSnRHO7h0HwSjSCU8oyzbjEtD8p-_AbC.e1f2",
            "P1_eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.abc.def",
            "10000000-aaaa-bbbb-cccc-000000000001",
            "abc+/=",
            "a",
        ] {
            assert_eq!(validate_token(turnstile, good), Some(good), "{good}");
            assert_eq!(
                validate_token(Provider::Hcaptcha, good),
                Some(good),
                "{good}"
            );
        }
        let at_limit = "a".repeat(2048);
        assert!(validate_token(turnstile, &at_limit).is_some());
        let over = "a".repeat(2049);
        assert_eq!(validate_token(turnstile, &over), None, "Turnstile's 2048");
        assert!(
            validate_token(Provider::Hcaptcha, &over).is_some(),
            "hCaptcha's are longer"
        );
        assert_eq!(validate_token(Provider::Hcaptcha, &"a".repeat(4097)), None);
        for bad in [
            "",
            " abc",
            "abc ",
            "a b",
            "a;b",
            "a,b",
            "a\"b",
            "a\\b",
            "a%20b",
            "a&b=c",
            "a\nb",
            "a\u{0}b",
            "é",
            "a\u{202e}b",
            "<script>",
        ] {
            assert_eq!(validate_token(turnstile, bad), None, "{bad:?}");
            assert_eq!(validate_token(Provider::Hcaptcha, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_body_is_form_encoded_with_every_byte_escaped() {
        let body = verify_request_body(
            "s3cr&t=+ %",
            "tok.en-_+/=",
            Some("2001:db8::1".parse().unwrap()),
            Some("k"),
        );
        assert_eq!(
            body,
            "secret=s3cr%26t%3D%2B+%25&response=tok.en-_%2B%2F%3D&remoteip=2001%3Adb8%3A%3A1&idempotency_key=k"
        );
        assert_eq!(
            pairs(&body),
            [
                ("secret".to_string(), "s3cr&t=+ %".to_string()),
                ("response".to_string(), "tok.en-_+/=".to_string()),
                ("remoteip".to_string(), "2001:db8::1".to_string()),
                ("idempotency_key".to_string(), "k".to_string()),
            ]
        );
        assert_eq!(
            verify_request_body("s", "t", None, None),
            "secret=s&response=t"
        );
        let unicode = verify_request_body("é", "t", Some("192.0.2.1".parse().unwrap()), None);
        assert_eq!(unicode, "secret=%C3%A9&response=t&remoteip=192.0.2.1");
    }

    #[test]
    fn each_provider_gets_its_own_extras() {
        let ip = Some("192.0.2.9".parse().unwrap());
        let t = settings(r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#);
        let body = pairs(&t.verify_request_body("sec", "tok", ip, &SIG));
        let names: Vec<_> = body.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["secret", "response", "remoteip", "idempotency_key"]);
        assert_eq!(body[3].1, idempotency_key(&SIG));
        let h = settings(
            r#"{"provider":"hcaptcha","site_key":"10000000-ffff-ffff-ffff-000000000001"}"#,
        );
        let body = pairs(&h.verify_request_body("sec", "tok", None, &SIG));
        assert_eq!(
            body,
            [
                ("secret".to_string(), "sec".to_string()),
                ("response".to_string(), "tok".to_string()),
                (
                    "sitekey".to_string(),
                    "10000000-ffff-ffff-ffff-000000000001".to_string()
                ),
            ]
        );
    }

    #[test]
    fn the_idempotency_key_is_a_uuid_of_the_wait_token() {
        let key = idempotency_key(&SIG);
        assert_eq!(key, idempotency_key(&SIG), "stable");
        let mut other = SIG;
        other[0] ^= 1;
        assert_ne!(key, idempotency_key(&other));
        let parts: Vec<_> = key.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert!(
            key.bytes()
                .all(|b| b == b'-' || b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(&key[14..15], "4", "version 4 layout");
        assert!("89ab".contains(&key[19..20]), "RFC 4122 variant");
        // The documented derivation.
        let digest = Sha256::digest(format!("waiting-room-challenge:{}", "07".repeat(32)));
        assert_eq!(&key[..8], hex::encode(&digest[..4]));
    }

    #[test]
    fn the_widget_is_the_documented_markup() {
        let t = settings(r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#);
        let html = t.widget_html();
        assert!(html.starts_with(
            "<script src=\"https://challenges.cloudflare.com/turnstile/v0/api.js\" async defer></script>"
        ));
        assert!(
            html.contains("<div class=\"cf-turnstile\" data-sitekey=\"1x00000000000000000000AA\"")
        );
        assert!(html.contains("data-callback=\"wrChallengeDone\""));
        assert!(html.contains("data-expired-callback=\"wrChallengeExpired\""));
        assert!(html.contains("data-error-callback=\"wrChallengeError\""));
        assert!(html.contains("data-action=\"waiting-room\""));
        let h = settings(
            r#"{"provider":"hcaptcha","site_key":"10000000-ffff-ffff-ffff-000000000001"}"#,
        );
        let html = h.widget_html();
        assert!(html.contains("src=\"https://js.hcaptcha.com/1/api.js\""));
        assert!(html.contains(
            "<div class=\"h-captcha\" data-sitekey=\"10000000-ffff-ffff-ffff-000000000001\""
        ));
        assert!(!html.contains("data-action"));
    }

    #[test]
    fn a_success_passes_and_may_be_bound_to_the_host() {
        let ok = br#"{"success":true,"error-codes":[],"challenge_ts":"2022-02-28T15:14:30.096Z","hostname":"example.com","action":"waiting-room","cdata":"x","metadata":{"ephemeral_id":"x:1"}}"#;
        assert_eq!(parse_verify_response(200, ok, None), Outcome::Passed);
        assert_eq!(
            parse_verify_response(200, ok, Some("example.com")),
            Outcome::Passed
        );
        assert_eq!(
            parse_verify_response(200, ok, Some("EXAMPLE.com")),
            Outcome::Passed
        );
        assert_eq!(
            parse_verify_response(200, ok, Some("evil.example")),
            Outcome::Failed(Reason("hostname-mismatch".into()))
        );
        let hcaptcha = br#"{"success":true,"challenge_ts":"2022-02-28T15:14:30Z","credit":false}"#;
        assert_eq!(parse_verify_response(200, hcaptcha, None), Outcome::Passed);
        assert_eq!(
            parse_verify_response(200, hcaptcha, Some("example.com")),
            Outcome::Failed(Reason("hostname-missing".into()))
        );
        assert_eq!(
            parse_verify_response(204, br#"{"success":true}"#, None),
            Outcome::Passed
        );
    }

    #[test]
    fn a_refusal_fails_with_its_codes_made_safe() {
        let bad = br#"{"success":false,"error-codes":["invalid-input-response"]}"#;
        let outcome = parse_verify_response(200, bad, Some("example.com"));
        assert_eq!(
            outcome,
            Outcome::Failed(Reason("invalid-input-response".into()))
        );
        assert!(
            !outcome.admits(WhenDown::Open),
            "a refusal is never an outage"
        );
        assert_eq!(outcome.word(), "failed");
        let two = br#"{"success":false,"error-codes":["timeout-or-duplicate","Bad Request"]}"#;
        assert_eq!(
            parse_verify_response(200, two, None)
                .reason()
                .unwrap()
                .as_str(),
            "timeout-or-duplicate,bad-request"
        );
        let none = br#"{"success":false}"#;
        assert_eq!(
            parse_verify_response(200, none, None),
            Outcome::Failed(Reason("unspecified".into()))
        );
        let hostile = format!(
            r#"{{"success":false,"error-codes":["a b\nc=d","<script>",7,null,"{}","x","y","z","w"]}}"#,
            "q".repeat(500)
        );
        let reason = parse_verify_response(200, hostile.as_bytes(), None);
        let reason = reason.reason().unwrap().as_str().to_string();
        assert!(reason.len() <= MAX_REASON_LEN, "{reason}");
        assert!(
            reason
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b','),
            "{reason}"
        );
        assert!(reason.starts_with("a-b-c-d,script"), "{reason}");
        let secret = br#"{"success":false,"error-codes":["invalid-input-secret"]}"#;
        let outcome = parse_verify_response(200, secret, None);
        assert!(outcome.reason().unwrap().blames_operator());
        let visitor = parse_verify_response(200, bad, None);
        assert!(!visitor.reason().unwrap().blames_operator());
        assert!(Reason::from_codes(["no-backend"]).blames_operator());
        assert!(!Reason::from_codes(["timeout-or-duplicate"]).blames_operator());
    }

    #[test]
    fn anything_but_a_documented_answer_is_the_provider_down() {
        let ok = br#"{"success":true}"#;
        for (status, body, reason) in [
            (500, &ok[..], "status-500"),
            (503, b"", "status-503"),
            (
                404,
                br#"{"success":false,"error-codes":["bad-request"]}"#,
                "status-404",
            ),
            (302, b"", "status-302"),
            (200, b"", "bad-json"),
            (200, b"<html>oops</html>", "bad-json"),
            (200, br#"{"success":"true"}"#, "bad-json"),
            (200, br#"{"error-codes":[]}"#, "bad-json"),
            (200, br#"{"success":true"#, "bad-json"),
            (
                200,
                br#"{"success":false,"error-codes":["internal-error"]}"#,
                "internal-error",
            ),
        ] {
            let outcome = parse_verify_response(status, body, None);
            assert_eq!(
                outcome,
                Outcome::ProviderDown(Reason(reason.into())),
                "{status}"
            );
            assert!(outcome.admits(WhenDown::Open));
            assert!(!outcome.admits(WhenDown::Closed));
            assert_eq!(outcome.word(), "down");
        }
        let mut huge = br#"{"success":true,"pad":""#.to_vec();
        huge.resize(MAX_ANSWER_BYTES + 1, b'a');
        assert_eq!(
            parse_verify_response(200, &huge, None),
            Outcome::ProviderDown(Reason("oversized-answer".into()))
        );
    }

    #[test]
    fn an_unreachable_provider_is_down_with_a_clean_cause() {
        let outcome = Outcome::unreachable("HTTP response timeout");
        assert_eq!(
            outcome,
            Outcome::ProviderDown(Reason("send-http-response-timeout".into()))
        );
        // Viceroy's text for a first-byte timeout.
        let viceroy = Outcome::unreachable("internal error (status: Some(FastlyStatus::ERROR))");
        let reason = viceroy.reason().unwrap().as_str();
        assert!(reason.starts_with("send-internal-error"), "{reason}");
        assert_eq!(
            Reason::sanitize("DNS error (rcode=Some(2), info_code=None)").as_str(),
            "dns-error-rcode-some-2-info-code-none"
        );
        assert_eq!(Reason::sanitize("   ").as_str(), "unspecified");
        assert_eq!(Reason::sanitize("--x--").as_str(), "x");
        let long = Reason::sanitize(&"ab ".repeat(100));
        assert!(long.as_str().len() <= MAX_REASON_LEN, "{long}");
        assert!(long.as_str().starts_with("ab-ab-") && !long.as_str().ends_with('-'));
        assert!(Outcome::Passed.admits(WhenDown::Closed));
        assert_eq!(Outcome::Passed.reason(), None);
        assert_eq!(Outcome::Passed.word(), "passed");
    }

    #[test]
    fn a_verifier_can_stand_in_for_the_edge() {
        #[derive(Debug)]
        struct Canned;
        impl Verifier for Canned {
            fn verify(&self, token: &str, signature: &[u8; 32]) -> Outcome {
                match (token, signature == &SIG) {
                    ("good", true) => Outcome::Passed,
                    _ => Outcome::Failed(Reason::from_codes(["invalid-input-response"])),
                }
            }
        }
        let v: &dyn Verifier = &Canned;
        assert_eq!(v.verify("good", &SIG), Outcome::Passed);
        assert!(!v.verify("good", &[0; 32]).admits(WhenDown::Open));
    }
}
