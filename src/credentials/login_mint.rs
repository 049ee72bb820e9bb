//! Login tokens as a site's sign-in would issue them, for tests and load tests
//! (`wrctl login mint`): any header and claims, signed HS256, RS256 or ES256 with a
//! key of the caller's. Native only: the room verifies logins, it never signs one.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use p256::ecdsa::signature::{SignatureEncoding, Signer};
use pkcs8::DecodePrivateKey;
use serde_json::{Value, json};
use sha2::Sha256;

/// A key logins are signed with.
pub enum MintKey {
    /// HS256, with this secret.
    Hs256(Vec<u8>),
    /// RS256, with this private key.
    Rs256(Box<rsa::PrivateKey>),
    /// ES256, with this private key.
    Es256(p256::ecdsa::SigningKey),
}

impl MintKey {
    /// A PKCS #8 PEM private key (`openssl genpkey`), RSA or P-256.
    pub fn from_pem(pem: &str) -> Result<MintKey, String> {
        if let Ok(key) = p256::ecdsa::SigningKey::from_pkcs8_pem(pem) {
            return Ok(MintKey::Es256(key));
        }
        rsa::PrivateKey::from_pkcs8_pem(pem)
            .map(|key| MintKey::Rs256(Box::new(key)))
            .map_err(|_| "not a PKCS #8 PEM private key of RSA or P-256".to_string())
    }

    /// Its algorithm's name.
    pub fn alg(&self) -> &'static str {
        match self {
            MintKey::Hs256(_) => "HS256",
            MintKey::Rs256(_) => "RS256",
            MintKey::Es256(_) => "ES256",
        }
    }

    /// The JWK a service's `login_keys` holds for it, under `kid`.
    pub fn public_jwk(&self, kid: &str) -> Value {
        let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        match self {
            MintKey::Hs256(_) => json!({"kty": "oct", "kid": kid, "alg": "HS256"}),
            MintKey::Rs256(key) => {
                use rsa::traits::PublicKeyParts as _;
                let public = key.to_public_key();
                json!({"kty": "RSA", "kid": kid, "alg": "RS256",
                       "n": b64(&public.n_bytes()), "e": b64(&public.e_bytes())})
            }
            MintKey::Es256(key) => {
                let point = key.verifying_key().to_sec1_point(false);
                let bytes = point.as_bytes();
                json!({"kty": "EC", "kid": kid, "alg": "ES256", "crv": "P-256",
                       "x": b64(&bytes[1..33]), "y": b64(&bytes[33..65])})
            }
        }
    }

    /// The signature of `message`: HMAC, PKCS #1 v1.5, or ECDSA's raw r‖s.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self {
            MintKey::Hs256(secret) => {
                let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
                mac.update(message);
                mac.finalize().into_bytes().to_vec()
            }
            MintKey::Rs256(key) => rsa::pkcs1v15::SigningKey::<Sha256>::new((**key).clone())
                .sign(message)
                .to_vec(),
            MintKey::Es256(key) => {
                let signature: p256::ecdsa::Signature = key.sign(message);
                signature.to_bytes().to_vec()
            }
        }
    }
}

/// The compact JWS of `header` and `claims` signed with `key`, as given: a test may
/// name another `alg` than the key's.
pub fn mint_with_header(header: &Value, claims: &Value, key: &MintKey) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = URL_SAFE_NO_PAD.encode(key.sign(message.as_bytes()));
    format!("{message}.{signature}")
}

/// A login token of `claims` under `key`, named `kid`.
pub fn mint(claims: &Value, key: &MintKey, kid: &str) -> String {
    mint_with_header(
        &json!({"alg": key.alg(), "typ": "JWT", "kid": kid}),
        claims,
        key,
    )
}
