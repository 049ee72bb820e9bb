//! Fixed login keys and a service that accepts them, for the login tests: a site's
//! sign-in as the room would meet it. The uid a person gets is computed here from
//! the documented hash, independently of the room's code.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use waiting_room::credentials::login::{LEEWAY, MAX_TOKEN_LEN};
use waiting_room::credentials::login_mint::{MintKey, mint, mint_with_header};

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
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now.saturating_add(3600)})
}

/// The uid of person `sub` of [`ISSUER`] (at `address`, when bound): the first 32 hex
/// digits of HMAC-SHA256 under [`HASH_KEY`] of the JSON list `[iss, sub, address]`.
pub fn person_uid(sub: &str, address: Option<&str>) -> String {
    let key = hex::decode(HASH_KEY).expect("hex");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(json!([ISSUER, sub, address]).to_string().as_bytes());
    hex::encode(mac.finalize().into_bytes())[..32].to_string()
}

fn b64(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

/// A JWS of `header` and the raw `payload`, signed with `key`.
fn signed_raw(header: &Value, payload: &str, key: &MintKey) -> String {
    let message = format!("{}.{payload}", b64(header));
    format!(
        "{message}.{}",
        URL_SAFE_NO_PAD.encode(key.sign(message.as_bytes()))
    )
}

/// The ECDSA signature `raw` (r‖s) in DER: a SEQUENCE of two INTEGERs.
fn der(raw: &[u8]) -> Vec<u8> {
    let int = |half: &[u8]| {
        let mut v: Vec<u8> = half.iter().copied().skip_while(|&b| b == 0).collect();
        if v.first().is_none_or(|&b| b >= 0x80) {
            v.insert(0, 0);
        }
        let mut out = vec![2, v.len() as u8];
        out.extend(v);
        out
    };
    let mut body = int(&raw[..32]);
    body.extend(int(&raw[32..]));
    let mut out = vec![0x30, body.len() as u8];
    out.extend(body);
    out
}

/// Every bad token the room must refuse, at `now`: what it is, the token, and the
/// word `login_refused=` gives (docs/operate/rooms.md, "Tokens it refuses").
pub fn bad_tokens(now: u64) -> Vec<(&'static str, String, &'static str)> {
    let [rs, es, hs] = keys();
    let good = claims("alice", now);
    let with = |changes: Value| {
        let mut claims = good.clone();
        for (k, v) in changes.as_object().expect("an object") {
            let map = claims.as_object_mut().expect("an object");
            match v {
                Value::Null => map.remove(k),
                v => map.insert(k.clone(), v.clone()),
            };
        }
        claims
    };
    let valid = mint(&good, &rs, KIDS[0]);
    let mut parts = valid.split('.');
    let (head, body, sig) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let es_header = json!({"alg": "ES256", "kid": KIDS[1]});
    let es_message = format!("{}.{}", b64(&es_header), b64(&good));
    let es_raw = es.sign(es_message.as_bytes());
    let attacker = MintKey::from_pem(RS256_1024_PEM).expect("test key");
    let rs_header = |extra: Value| {
        let mut header = json!({"alg": "RS256", "kid": KIDS[0]});
        header
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        header
    };
    vec![
        (
            "tampered claims",
            format!("{head}.{}.{sig}", b64(&with(json!({"sub": "mallory"})))),
            "signature",
        ),
        (
            "tampered signature",
            format!("{head}.{body}.{}", URL_SAFE_NO_PAD.encode([7u8; 256])),
            "signature",
        ),
        (
            "expired past the leeway",
            mint(&with(json!({"exp": now - LEEWAY - 1})), &rs, KIDS[0]),
            "expired",
        ),
        (
            "not yet valid",
            mint(&with(json!({"nbf": now + LEEWAY + 1})), &rs, KIDS[0]),
            "not-yet-valid",
        ),
        (
            "wrong iss",
            mint(&with(json!({"iss": "https://evil.example/"})), &rs, KIDS[0]),
            "issuer",
        ),
        (
            "no iss",
            mint(&with(json!({"iss": null})), &rs, KIDS[0]),
            "issuer",
        ),
        (
            "wrong aud",
            mint(&with(json!({"aud": "another-app"})), &es, KIDS[1]),
            "audience",
        ),
        (
            "aud list without ours",
            mint(&with(json!({"aud": ["a", "b"]})), &es, KIDS[1]),
            "audience",
        ),
        (
            "no aud",
            mint(&with(json!({"aud": null})), &es, KIDS[1]),
            "audience",
        ),
        (
            "no exp",
            mint(&with(json!({"exp": null})), &hs, KIDS[2]),
            "no-exp",
        ),
        (
            "exp not a number",
            mint(&with(json!({"exp": "tomorrow"})), &hs, KIDS[2]),
            "no-exp",
        ),
        (
            "no sub",
            mint(&with(json!({"sub": null})), &hs, KIDS[2]),
            "no-identity",
        ),
        (
            "empty sub",
            mint(&with(json!({"sub": ""})), &hs, KIDS[2]),
            "no-identity",
        ),
        (
            "sub not text",
            mint(&with(json!({"sub": 42})), &hs, KIDS[2]),
            "no-identity",
        ),
        (
            "unknown kid",
            mint(&good, &rs, "another-key"),
            "unknown-kid",
        ),
        (
            "a kid naming a store entry",
            mint(&good, &hs, "key1"),
            "unknown-kid",
        ),
        (
            "no kid among three keys",
            mint_with_header(&json!({"alg": "RS256"}), &good, &rs),
            "unknown-kid",
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "kid": KIDS[0]})),
                b64(&good)
            ),
            "malformed",
        ),
        (
            "alg none, unsigned",
            format!("{}.{}", b64(&json!({"alg": "none"})), b64(&good)),
            "malformed",
        ),
        (
            "HS256 keyed with the RSA public key",
            mint_with_header(
                &json!({"alg": "HS256", "kid": KIDS[0]}),
                &good,
                &MintKey::Hs256(
                    rs.public_jwk(KIDS[0])["n"]
                        .as_str()
                        .unwrap()
                        .as_bytes()
                        .to_vec(),
                ),
            ),
            "algorithm",
        ),
        (
            "RS256 header on the ES256 key",
            mint_with_header(&json!({"alg": "RS256", "kid": KIDS[1]}), &good, &rs),
            "algorithm",
        ),
        (
            "jwk header with the attacker's key",
            mint_with_header(
                &rs_header(json!({"jwk": attacker.public_jwk(KIDS[0])})),
                &good,
                &attacker,
            ),
            "signature",
        ),
        (
            "jku header",
            mint_with_header(
                &rs_header(json!({"jku": "https://evil.example/jwks"})),
                &good,
                &attacker,
            ),
            "signature",
        ),
        (
            "x5u header",
            mint_with_header(
                &rs_header(json!({"x5u": "https://evil.example/cert"})),
                &good,
                &attacker,
            ),
            "signature",
        ),
        (
            "x5c header",
            mint_with_header(&rs_header(json!({"x5c": ["MIIB"]})), &good, &attacker),
            "signature",
        ),
        (
            "unknown crit",
            mint_with_header(
                &rs_header(json!({"crit": ["exp-v2"], "exp-v2": 1})),
                &good,
                &rs,
            ),
            "crit",
        ),
        (
            "ES256 signature of zeros",
            format!("{es_message}.{}", URL_SAFE_NO_PAD.encode([0u8; 64])),
            "signature",
        ),
        (
            "ES256 signature in DER",
            format!("{es_message}.{}", URL_SAFE_NO_PAD.encode(der(&es_raw))),
            "signature",
        ),
        (
            "oversized",
            format!("{head}.{}.{sig}", "A".repeat(MAX_TOKEN_LEN)),
            "oversized",
        ),
        ("two parts", format!("{head}.{body}"), "malformed"),
        ("four parts", format!("{valid}.x"), "malformed"),
        (
            "header not JSON",
            format!("bm90IGpzb24.{body}.{sig}"),
            "malformed",
        ),
        (
            "claims not JSON, signed",
            signed_raw(&json!({"alg": "RS256", "kid": KIDS[0]}), "bm90IGpzb24", &rs),
            "malformed",
        ),
        ("not base64", "@@@.@@@.@@@".to_string(), "malformed"),
    ]
}
