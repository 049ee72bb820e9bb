//! A visitor's login (`identity = login`): the site's JWT, from `Authorization:
//! Bearer` or the cookie `login_cookie`, verified with a key of `login_keys`. The
//! room keeps of it only a keyed hash of (`iss`, the identity claim), the person's
//! uid: every device of theirs holds the same uid, so the same draws and place.

use hmac::{Hmac, KeyInit, Mac};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::credentials::cookie;
use crate::credentials::jwt_verifiers::PROVIDER;
use crate::credentials::keys::Unread;
use crate::settings::config::Settings;
use crate::settings::identity::{HashKey, Identity, LoginKey, LoginKeyKind, WhoMayWait};

/// Longest token read, bytes: a login JWT is a few hundred; anything past this is refused unread.
pub const MAX_TOKEN_LEN: usize = 4096;

/// Seconds a token's `exp` and `nbf` may be off the edge's clock.
pub const LEEWAY: u64 = 60;

/// Hex digits of a person's uid: 128 bits of the keyed hash.
pub const UID_HEX_LEN: usize = 32;

/// Reads an HS256 key's secret by its configured id: `None` when missing, `Err`
/// when the read failed.
pub type ReadSecret<'a> = dyn FnMut(&str) -> Result<Option<Vec<u8>>, Unread> + 'a;

/// A request's login, when the service's identity is `login` and the path is in a room.
#[derive(Debug, Clone, PartialEq)]
pub enum Login {
    /// No token presented: the visitor is their address.
    Absent,
    /// A verified token: the person.
    Person {
        /// The keyed hash that names them.
        uid: String,
        /// The token's claims, for a room's audience.
        claims: Map<String, Value>,
    },
    /// A token presented and refused: the visitor is their address, and not signed in.
    Refused(LoginRefused),
    /// A key the token needs could not be read: nobody can say who they are.
    Unread,
}

/// Why a presented token is refused (`login_refused=` in the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefused {
    /// Longer than [`MAX_TOKEN_LEN`].
    Oversized,
    /// Not a JWS of three base64url parts with JSON header and claims, or an
    /// algorithm the room does not know (`none` among them).
    Malformed,
    /// A `crit` header the room does not understand.
    Crit,
    /// No key of `login_keys` has its `kid` (a token without `kid` needs exactly one key).
    UnknownKid,
    /// Its `alg` is not its key's.
    Algorithm,
    /// The signature does not verify under the key.
    Signature,
    /// No `exp`, or one that is not a number.
    NoExp,
    /// `exp` passed, beyond the leeway.
    Expired,
    /// `nbf` ahead, beyond the leeway.
    NotYetValid,
    /// `iss` missing or not `login_issuer`.
    Issuer,
    /// `aud` missing or without `login_audience`.
    Audience,
    /// The identity claim (`login_claim`) missing, empty or not text.
    NoIdentity,
    /// The service's login settings are incomplete (`wrctl config check` names what).
    Unconfigured,
}

impl LoginRefused {
    /// The log's word.
    pub fn word(self) -> &'static str {
        match self {
            LoginRefused::Oversized => "oversized",
            LoginRefused::Malformed => "malformed",
            LoginRefused::Crit => "crit",
            LoginRefused::UnknownKid => "unknown-kid",
            LoginRefused::Algorithm => "algorithm",
            LoginRefused::Signature => "signature",
            LoginRefused::NoExp => "no-exp",
            LoginRefused::Expired => "expired",
            LoginRefused::NotYetValid => "not-yet-valid",
            LoginRefused::Issuer => "issuer",
            LoginRefused::Audience => "audience",
            LoginRefused::NoIdentity => "no-identity",
            LoginRefused::Unconfigured => "unconfigured",
        }
    }
}

impl Login {
    /// The uid of a visitor at `address_uid`: the person's, else the address.
    pub fn uid<'a>(&'a self, address_uid: &'a str) -> &'a str {
        match self {
            Login::Person { uid, .. } => uid,
            _ => address_uid,
        }
    }

    /// Whether the login lets its holder wait where `who` may.
    pub fn may_wait(&self, who: &WhoMayWait) -> bool {
        match (who, self) {
            (WhoMayWait::Anyone, _) => true,
            (WhoMayWait::SignedIn, Login::Person { .. }) => true,
            (WhoMayWait::Audience { claim, value }, Login::Person { claims, .. }) => {
                match claims.get(claim) {
                    Some(Value::String(held)) => held == value,
                    Some(Value::Array(held)) => held.iter().any(|v| v.as_str() == Some(value)),
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// The token a request presents: `Authorization: Bearer` first (apps), then the
/// cookie `cookie_name` (browsers).
pub fn presented<'a>(
    authorization: Option<&'a str>,
    cookie_header: Option<&'a str>,
    cookie_name: Option<&str>,
) -> Option<&'a str> {
    let bearer = authorization.and_then(|value| {
        let (scheme, token) = value.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    bearer.or_else(|| cookie::find(cookie_header?, cookie_name?))
}

/// The login of a request to `path` at `now`, from `address_uid`, presenting the
/// header `cookie_header` and the `Authorization` header `authorization` gives: read
/// only when the service's identity is `login` and the path is in its room (`None`:
/// the visitor is their address), so other requests never ask for the header.
pub fn of_request(
    settings: &Settings,
    path: &str,
    authorization: impl FnOnce() -> Option<String>,
    cookie_header: Option<&str>,
    address_uid: &str,
    now: u64,
    secret: &mut ReadSecret<'_>,
) -> Option<Login> {
    if settings.identity != Identity::Login || !settings.protects(path) {
        return None;
    }
    let authorization = authorization();
    let token = presented(
        authorization.as_deref(),
        cookie_header,
        settings.login_cookie.as_deref(),
    );
    Some(verify(token, settings, address_uid, now, secret))
}

/// The login of a request presenting `token` at `now`, from `address_uid`, under the
/// service's settings. `secret` reads an HS256 key's secret by its configured id
/// (never a name taken from the token).
pub fn verify(
    token: Option<&str>,
    settings: &Settings,
    address_uid: &str,
    now: u64,
    secret: &mut ReadSecret<'_>,
) -> Login {
    let Some(token) = token else {
        return Login::Absent;
    };
    match person(token, settings, address_uid, now, secret) {
        Ok(person) => person,
        Err(None) => Login::Unread,
        Err(Some(why)) => Login::Refused(why),
    }
}

/// The uid of person `who` of `issuer` (at `address`, when bound to it): the first
/// [`UID_HEX_LEN`] hex digits of HMAC-SHA256 under `key` of the JSON list of them.
pub fn person_uid(key: &HashKey, issuer: &str, who: &str, address: Option<&str>) -> String {
    let text = serde_json::json!([issuer, who, address]).to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key.0).expect("HMAC takes any key length");
    mac.update(text.as_bytes());
    let mut uid = hex::encode(mac.finalize().into_bytes());
    uid.truncate(UID_HEX_LEN);
    uid
}

/// The person `token` names, verified, or why not (`None`: a key could not be read).
fn person(
    token: &str,
    settings: &Settings,
    address_uid: &str,
    now: u64,
    secret: &mut ReadSecret<'_>,
) -> Result<Login, Option<LoginRefused>> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(Some(LoginRefused::Oversized));
    }
    let (Some(issuer), Some(audience), Some(hash_key)) = (
        &settings.login_issuer,
        &settings.login_audience,
        &settings.login_hash_key,
    ) else {
        return Err(Some(LoginRefused::Unconfigured));
    };
    let header = jsonwebtoken::decode_header(token).map_err(|_| Some(LoginRefused::Malformed))?;
    let keys = &settings.login_keys;
    let key = match &header.kid {
        Some(kid) => keys.iter().find(|key| key.kid == *kid),
        None => keys.first().filter(|_| keys.len() == 1),
    }
    .ok_or(Some(LoginRefused::UnknownKid))?;
    let (algorithm, decoding) = decoding_key(key, secret)?;
    let mut validation = Validation::new(algorithm);
    // Times are checked below against the request's clock, not the host's.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.set_required_spec_claims(&["iss", "aud"]);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    let _ = PROVIDER.install_default();
    let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &decoding, &validation)
        .map_err(|err| {
            Some(match err.kind() {
                ErrorKind::InvalidSignature => LoginRefused::Signature,
                ErrorKind::InvalidAlgorithm | ErrorKind::InvalidKeyFormat => {
                    LoginRefused::Algorithm
                }
                ErrorKind::InvalidIssuer => LoginRefused::Issuer,
                ErrorKind::InvalidAudience => LoginRefused::Audience,
                ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => LoginRefused::Issuer,
                ErrorKind::MissingRequiredClaim(_) => LoginRefused::Audience,
                ErrorKind::InvalidToken if header.crit.is_some() => LoginRefused::Crit,
                _ => LoginRefused::Malformed,
            })
        })?
        .claims;
    let time = |name: &str| claims.get(name).map(seconds);
    let (now, leeway) = (i128::from(now), i128::from(LEEWAY));
    match time("exp") {
        None | Some(None) => return Err(Some(LoginRefused::NoExp)),
        Some(Some(exp)) if exp + leeway < now => return Err(Some(LoginRefused::Expired)),
        _ => {}
    }
    match time("nbf") {
        Some(None) => return Err(Some(LoginRefused::Malformed)),
        Some(Some(nbf)) if nbf > now + leeway => return Err(Some(LoginRefused::NotYetValid)),
        _ => {}
    }
    let who = match claims.get(&settings.login_claim) {
        Some(Value::String(who)) if !who.is_empty() => who,
        _ => return Err(Some(LoginRefused::NoIdentity)),
    };
    let bound = settings.login_binds_address.then_some(address_uid);
    Ok(Login::Person {
        uid: person_uid(hash_key, issuer, who, bound),
        claims,
    })
}

/// A NumericDate as whole seconds, exactly (RFC 7519 allows fractions: rounded down).
fn seconds(value: &Value) -> Option<i128> {
    match (value.as_i64(), value.as_u64(), value.as_f64()) {
        (Some(t), _, _) => Some(i128::from(t)),
        (_, Some(t), _) => Some(i128::from(t)),
        // Beyond the integers only f64 can say it; the cast saturates.
        (_, _, Some(t)) if t.is_finite() => Some(t.floor() as i128),
        _ => None,
    }
}

/// The algorithm and key of a login key; an HS256 key's secret is read.
fn decoding_key(
    key: &LoginKey,
    secret: &mut ReadSecret<'_>,
) -> Result<(Algorithm, DecodingKey), Option<LoginRefused>> {
    let malformed = |_| Some(LoginRefused::UnknownKid);
    match &key.kind {
        LoginKeyKind::Rs256 { n, e } => Ok((
            Algorithm::RS256,
            DecodingKey::from_rsa_components(n, e).map_err(malformed)?,
        )),
        LoginKeyKind::Es256 { x, y } => Ok((
            Algorithm::ES256,
            DecodingKey::from_ec_components(x, y).map_err(malformed)?,
        )),
        LoginKeyKind::Hs256 => match secret(&key.kid) {
            Ok(Some(secret)) if !secret.is_empty() => Ok((
                Algorithm::HS256,
                DecodingKey::from_secret(&secret).map_err(malformed)?,
            )),
            Ok(_) => Err(Some(LoginRefused::UnknownKid)),
            Err(_) => Err(None),
        },
    }
}
