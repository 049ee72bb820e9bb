//! Who a visitor is: their address (`identity = address`, the VCL's) or their login
//! on the site (`identity = login`, a JWT verified with `login_keys`); and who may
//! wait in a room (`who_may_wait`). The verification is [`crate::credentials::login`].

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::settings::limits::is_secret_name;
use crate::settings::row::Words;

/// Shortest RSA modulus a login key may have, bits.
pub const MIN_RSA_BITS: usize = 2048;

/// Longest RSA modulus a login key may have, bits (the `rsa` crate's own bound).
pub const MAX_RSA_BITS: usize = 4096;

/// What names a visitor: the uid in their token, their draws and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The connection's address (the VCL's; the default).
    Address,
    /// A verified login from the site, where one is presented; the address where not.
    Login,
}

impl Words for Identity {
    const WORDS: &'static [(&'static str, Self)] =
        &[("address", Identity::Address), ("login", Identity::Login)];
}

/// Who may wait in a room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhoMayWait {
    /// Anyone, by login or by address (the default).
    Anyone,
    /// Only a visitor with a verified login.
    SignedIn,
    /// Only a verified login whose claim `claim` is `value` (or a list holding it).
    Audience {
        /// The claim's name.
        claim: String,
        /// The value it must hold.
        value: String,
    },
}

impl WhoMayWait {
    /// `anyone`, `signed-in`, or `<claim>=<value>` (`tier=presale`).
    pub fn parse(raw: &str) -> Option<WhoMayWait> {
        match raw.trim() {
            "anyone" => Some(WhoMayWait::Anyone),
            "signed-in" => Some(WhoMayWait::SignedIn),
            other => {
                let (claim, value) = other.split_once('=')?;
                let (claim, value) = (claim.trim(), value.trim());
                let plain = |text: &str| {
                    (1..=64).contains(&text.len())
                        && text.bytes().all(|b| b.is_ascii_graphic() && b != b',')
                };
                (plain(claim) && plain(value)).then(|| WhoMayWait::Audience {
                    claim: claim.to_string(),
                    value: value.to_string(),
                })
            }
        }
    }

    /// Whether a login is required.
    pub fn needs_login(&self) -> bool {
        *self != WhoMayWait::Anyone
    }
}

impl fmt::Display for WhoMayWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhoMayWait::Anyone => f.write_str("anyone"),
            WhoMayWait::SignedIn => f.write_str("signed-in"),
            WhoMayWait::Audience { claim, value } => write!(f, "{claim}={value}"),
        }
    }
}

/// A key logins are verified with; the algorithm is the key's, never the token's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginKey {
    /// Its id, matched against a token's `kid`.
    pub kid: String,
    /// Its algorithm and public parts.
    pub kind: LoginKeyKind,
}

/// A login key's algorithm and what verifying needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginKeyKind {
    /// RS256: the modulus and exponent, base64url as in a JWK.
    Rs256 {
        /// Modulus.
        n: String,
        /// Exponent.
        e: String,
    },
    /// ES256 on P-256: the point's coordinates, base64url as in a JWK.
    Es256 {
        /// x.
        x: String,
        /// y.
        y: String,
    },
    /// HS256: the secret is the Secret Store `waitingroom_login`'s entry named `kid`.
    Hs256,
}

impl LoginKey {
    /// One JWK of `login_keys`, or why it is not used. `kty` decides the algorithm
    /// (`RSA`: RS256, `EC` with `crv` `P-256`: ES256, `oct`: HS256); an `alg` other
    /// than that one, a `use` other than `sig`, an RSA modulus under [`MIN_RSA_BITS`],
    /// a point off the curve, or an `oct` key holding its secret (`k`) is refused.
    pub fn from_jwk(jwk: &Value) -> Result<LoginKey, &'static str> {
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        let kid = field("kid")
            .filter(|kid| is_secret_name(kid))
            .ok_or("kid")?;
        let (kind, alg) = match field("kty") {
            Some("RSA") => {
                let (n, e) = (field("n").ok_or("n")?, field("e").ok_or("e")?);
                let bits = rsa_bits(n).ok_or("n")?;
                if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
                    return Err("rsa-bits");
                }
                URL_SAFE_NO_PAD
                    .decode(e)
                    .ok()
                    .filter(|e| !e.is_empty() && e.len() <= 8)
                    .ok_or("e")?;
                let kind = LoginKeyKind::Rs256 {
                    n: n.to_string(),
                    e: e.to_string(),
                };
                (kind, "RS256")
            }
            Some("EC") => {
                if field("crv") != Some("P-256") {
                    return Err("crv");
                }
                let (x, y) = (field("x").ok_or("x")?, field("y").ok_or("y")?);
                let coordinate = |c: &str| URL_SAFE_NO_PAD.decode(c).ok().filter(|c| c.len() == 32);
                let mut point = vec![4];
                point.extend(coordinate(x).ok_or("x")?);
                point.extend(coordinate(y).ok_or("y")?);
                p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).map_err(|_| "point")?;
                (
                    LoginKeyKind::Es256 {
                        x: x.to_string(),
                        y: y.to_string(),
                    },
                    "ES256",
                )
            }
            Some("oct") if jwk.get("k").is_none() => (LoginKeyKind::Hs256, "HS256"),
            Some("oct") => return Err("k"),
            _ => return Err("kty"),
        };
        if field("alg").is_some_and(|given| given != alg) {
            return Err("alg");
        }
        // A provider's encryption key is not one its tokens are signed with.
        if field("use").is_some_and(|usage| usage != "sig") {
            return Err("use");
        }
        Ok(LoginKey {
            kid: kid.to_string(),
            kind,
        })
    }

    /// The key as a JWK, with only what verifying needs.
    pub fn to_jwk(&self) -> Value {
        let kid = &self.kid;
        match &self.kind {
            LoginKeyKind::Rs256 { n, e } => {
                json!({"kty": "RSA", "kid": kid, "alg": "RS256", "n": n, "e": e})
            }
            LoginKeyKind::Es256 { x, y } => {
                json!({"kty": "EC", "kid": kid, "alg": "ES256", "crv": "P-256", "x": x, "y": y})
            }
            LoginKeyKind::Hs256 => json!({"kty": "oct", "kid": kid, "alg": "HS256"}),
        }
    }
}

/// The bits of an RSA modulus given base64url, leading zeros aside.
pub fn rsa_bits(n: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(n).ok()?;
    let first = bytes.iter().position(|&b| b != 0)?;
    Some((bytes.len() - first) * 8 - bytes[first].leading_zeros() as usize)
}

/// The JWKs of a `login_keys` value: `{"keys": [...]}` (a JWKS) or the list alone.
pub fn jwks_entries(raw: &str) -> Option<Vec<Value>> {
    match serde_json::from_str(raw).ok()? {
        Value::Array(keys) => Some(keys),
        Value::Object(mut jwks) => match jwks.remove("keys")? {
            Value::Array(keys) => Some(keys),
            _ => None,
        },
        _ => None,
    }
}

/// `login_keys`: the usable keys of a JWKS, the first of each `kid`; `None` when
/// it is not a JWKS or holds no usable key.
pub fn parse_login_keys(raw: &str) -> Option<Vec<LoginKey>> {
    let mut keys: Vec<LoginKey> = Vec::new();
    for key in jwks_entries(raw)?
        .iter()
        .filter_map(|jwk| LoginKey::from_jwk(jwk).ok())
    {
        if !keys.iter().any(|kept| kept.kid == key.kid) {
            keys.push(key);
        }
    }
    (!keys.is_empty()).then_some(keys)
}

/// `login_keys` as written: a JWKS with only what verifying needs.
pub fn login_keys_text(keys: &[LoginKey]) -> Option<String> {
    (!keys.is_empty())
        .then(|| json!({"keys": keys.iter().map(LoginKey::to_jwk).collect::<Vec<_>>()}).to_string())
}

/// The key of the hash that names a person (`login_hash_key`): 32 bytes, written as
/// 64 hex digits. It is not a signing key, so it stays when those rotate.
#[derive(Clone, PartialEq, Eq)]
pub struct HashKey(pub [u8; 32]);

impl HashKey {
    /// 64 hex digits.
    pub fn parse(raw: &str) -> Option<HashKey> {
        let mut key = [0; 32];
        hex::decode_to_slice(raw.trim(), &mut key).ok()?;
        Some(HashKey(key))
    }
}

impl fmt::Debug for HashKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HashKey(..)")
    }
}

impl fmt::Display for HashKey {
    /// The hex the store holds (written back by the tools, never logged).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// Where `sign_in_url` sends a visitor who asked for `path_and_query`: `{return}` in
/// the URL, else a `return_to` parameter added, becomes that path, percent-encoded
/// and with one leading `/` (so never another host's `//…`).
pub fn sign_in_location(url: &str, path_and_query: &str) -> String {
    let own = format!("/{}", path_and_query.trim_start_matches(['/', '\\']));
    let encoded: String = form_urlencoded::byte_serialize(own.as_bytes()).collect();
    if url.contains("{return}") {
        return url.replace("{return}", &encoded);
    }
    let joint = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joint}return_to={encoded}")
}
