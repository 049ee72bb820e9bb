//! Fixed login keys and a service that accepts them, for the login tests: a site's
//! sign-in as the room would meet it. The uid a person gets is computed here from
//! the documented hash, independently of the room's code.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use waiting_room::credentials::login_mint::MintKey;

/// A 2048-bit RSA key (test only).
pub const RS256_PEM: &str = include_str!("login_keys/rs256.pem");
/// A 1024-bit RSA key, too short for the room (test only).
pub const RS256_1024_PEM: &str = include_str!("login_keys/rs256-1024.pem");
/// A P-256 key (test only).
pub const ES256_PEM: &str = include_str!("login_keys/es256.pem");
/// The HS256 secret, the Secret Store `waitingroom_login`'s entry `site-hs`.
pub const HS256_SECRET: &str = "a site's login secret, 32 bytes or more";
/// `login_hash_key`.
pub const HASH_KEY: &str = "6c6f67696e2068617368206b6579206f66207468652074657374207365727621";
/// `login_issuer`.
pub const ISSUER: &str = "https://id.example.test/";
/// `login_audience`.
pub const AUDIENCE: &str = "waiting-room";
/// The key ids of the three keys.
pub const KIDS: [&str; 3] = ["site-rs", "site-es", "site-hs"];

/// The three signing keys, by [`KIDS`]' order.
pub fn keys() -> [MintKey; 3] {
    [
        MintKey::from_pem(RS256_PEM).expect("RS256 test key"),
        MintKey::from_pem(ES256_PEM).expect("ES256 test key"),
        MintKey::Hs256(HS256_SECRET.as_bytes().to_vec()),
    ]
}

/// `login_keys` of the three keys, as a JWKS.
pub fn jwks() -> Value {
    let keys = keys();
    json!({"keys": KIDS.iter().zip(&keys).map(|(kid, key)| key.public_jwk(kid)).collect::<Vec<_>>()})
}

/// The members of `settings` for a service whose identity is the login: the keys,
/// the issuer, the audience, the hash key, the cookie `session`.
pub fn settings_members() -> Vec<(&'static str, String)> {
    vec![
        ("identity", "login".into()),
        ("login_issuer", ISSUER.into()),
        ("login_audience", AUDIENCE.into()),
        ("login_cookie", "session".into()),
        ("login_hash_key", HASH_KEY.into()),
        ("login_keys", jwks().to_string()),
    ]
}

/// Claims of person `sub` valid from `now` for an hour.
pub fn claims(sub: &str, now: u64) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 3600})
}

/// The uid of person `sub` of [`ISSUER`] (at `address`, when bound): the first 32 hex
/// digits of HMAC-SHA256 under [`HASH_KEY`] of the JSON list `[iss, sub, address]`.
pub fn person_uid(sub: &str, address: Option<&str>) -> String {
    let key = hex::decode(HASH_KEY).expect("hex");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(json!([ISSUER, sub, address]).to_string().as_bytes());
    hex::encode(mac.finalize().into_bytes())[..32].to_string()
}
