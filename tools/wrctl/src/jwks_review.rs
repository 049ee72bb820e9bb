//! What the room makes of a provider's JWKS, said for people: each key kept
//! ([`describe`]) and each refused with why ([`why`]), from the room's own
//! [`LoginKey::from_jwk`]. Used by `wrctl login keys`, `wrctl login mint` and
//! `wrctl config check`.

use serde_json::Value;
use waiting_room::resources::LOGIN_STORE;
use waiting_room::settings::identity::{
    LoginKey, LoginKeyKind, MAX_RSA_BITS, MIN_RSA_BITS, jwks_entries, parse_login_keys, rsa_bits,
};

/// What the room makes of each JWK of a JWKS.
#[derive(Debug)]
pub struct Review {
    /// The keys it verifies with: the first usable key of each kid, in order.
    pub kept: Vec<LoginKey>,
    /// Each JWK it ignores: a name for it, and why.
    pub refused: Vec<(String, String)>,
}

/// The room's reading of the JWKS `raw`; `None` when it is not a JWKS.
pub fn review(raw: &str) -> Option<Review> {
    let entries = jwks_entries(raw)?;
    let mut refused = Vec::new();
    let mut kids: Vec<String> = Vec::new();
    for (i, jwk) in entries.iter().enumerate() {
        match LoginKey::from_jwk(jwk) {
            Ok(key) if kids.contains(&key.kid) => refused.push((
                name(jwk, i),
                "a second key of this kid: the first is used".into(),
            )),
            Ok(key) => kids.push(key.kid),
            Err(code) => refused.push((name(jwk, i), why(jwk, code))),
        }
    }
    let kept = parse_login_keys(raw).unwrap_or_default();
    Some(Review { kept, refused })
}

/// `kid "…"`, or the JWK's place in the list when it has no kid.
fn name(jwk: &Value, i: usize) -> String {
    match jwk.get("kid").and_then(Value::as_str) {
        Some(kid) => format!("kid {:?}", short(kid)),
        None => format!("key #{} (no kid)", i + 1),
    }
}

/// At most 64 characters of a provider's text, for a message.
fn short(text: &str) -> String {
    text.chars().take(64).collect()
}

/// Why the room refuses `jwk`, from [`LoginKey::from_jwk`]'s word `code`. Names
/// only public members: an `oct` key's `k` is never shown.
pub fn why(jwk: &Value, code: &str) -> String {
    let field = |name: &str| {
        jwk.get(name)
            .and_then(Value::as_str)
            .map_or("none".into(), |v| format!("{:?}", short(v)))
    };
    let text = match code {
        "kid" => "no kid the room can read (1 to 255 letters, digits, -, _ and .)".to_string(),
        "kty" => format!(
            "kty {} is not one the room verifies (RSA, EC on P-256, oct)",
            field("kty")
        ),
        "rsa-bits" => format!(
            "an RSA key of {} bits: the room takes {MIN_RSA_BITS} to {MAX_RSA_BITS}",
            jwk.get("n")
                .and_then(Value::as_str)
                .and_then(rsa_bits)
                .map_or("?".into(), |b| b.to_string())
        ),
        "crv" => format!(
            "an EC key on curve {}: the room verifies P-256 only",
            field("crv")
        ),
        "k" => format!(
            "an oct key holding its secret: an HS256 secret goes to the Secret Store \
             {LOGIN_STORE} under the key's kid, never into the config store"
        ),
        "alg" => format!("alg {} is not its key's", field("alg")),
        "use" => format!(
            "use {} is not sig: not a key tokens are signed with",
            field("use")
        ),
        "n" | "e" => format!("its {code} is not a usable RSA {code}"),
        "x" | "y" => format!("its {code} is not a coordinate of P-256"),
        _ => "its point is not on P-256".to_string(),
    };
    format!("{text} ({code})")
}

/// `RS256 (2048 bits)`, `ES256 (P-256)` or `HS256 (…)`: a kept key, for people.
pub fn describe(key: &LoginKey) -> String {
    match &key.kind {
        LoginKeyKind::Rs256 { n, .. } => {
            format!("RS256 ({} bits)", rsa_bits(n).unwrap_or_default())
        }
        LoginKeyKind::Es256 { .. } => "ES256 (P-256)".into(),
        LoginKeyKind::Hs256 => format!(
            "HS256 (its secret read from the Secret Store {LOGIN_STORE}, under {:?})",
            key.kid
        ),
    }
}
