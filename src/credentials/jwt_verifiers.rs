//! The three JWT verifiers the room links ([`PROVIDER`]): HS256, RS256 and ES256 on
//! the RustCrypto crates, for `jsonwebtoken`'s parsing and claim checks. Its own
//! `rust_crypto` provider links every algorithm, signing included, for 676 KB of wasm
//! (docs/research/jwt-crates.md).

use hmac::{Hmac, KeyInit, Mac};
use jsonwebtoken::crypto::{CryptoProvider, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::signature::{self, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind};
use rsa::{BoxedUint, Pkcs1v15Sign, PublicKey};
use sha2::{Digest, Sha256};

/// Verifies only; signing is refused (the room signs no JWT).
pub static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: |_, _| Err(ErrorKind::UnsupportedAlgorithm.into()),
    verifier_factory,
    key_utils: KeyUtils::new_unimplemented(),
};

/// A verifier of `algorithm` under `key`, when the key is of its family.
fn verifier_factory(
    algorithm: &Algorithm,
    key: &DecodingKey,
) -> jsonwebtoken::errors::Result<Box<dyn JwtVerifier>> {
    let family = match algorithm {
        Algorithm::HS256 => AlgorithmFamily::Hmac,
        Algorithm::RS256 => AlgorithmFamily::Rsa,
        Algorithm::ES256 => AlgorithmFamily::Ec,
        _ => return Err(ErrorKind::UnsupportedAlgorithm.into()),
    };
    if key.family() != family {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    let verifier: Box<dyn JwtVerifier> = match (algorithm, key.kind()) {
        (Algorithm::HS256, DecodingKeyKind::SecretOrDer(secret)) => Box::new(Hs256(secret.clone())),
        (Algorithm::RS256, DecodingKeyKind::RsaModulusExponent { n, e }) => Box::new(Rs256(
            PublicKey::new(
                BoxedUint::from_be_slice_vartime(n),
                BoxedUint::from_be_slice_vartime(e),
            )
            .map_err(|_| Error::from(ErrorKind::InvalidRsaKey(String::new())))?,
        )),
        (Algorithm::ES256, DecodingKeyKind::SecretOrDer(point)) => Box::new(Es256(
            p256::ecdsa::VerifyingKey::from_sec1_bytes(point)
                .map_err(|_| Error::from(ErrorKind::InvalidEcdsaKey))?,
        )),
        _ => return Err(ErrorKind::InvalidKeyFormat.into()),
    };
    Ok(verifier)
}

struct Hs256(Vec<u8>);
struct Rs256(PublicKey);
struct Es256(p256::ecdsa::VerifyingKey);

impl Verifier<Vec<u8>> for Hs256 {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).map_err(|_| signature::Error::new())?;
        mac.update(msg);
        // Constant time.
        mac.verify_slice(signature)
            .map_err(|_| signature::Error::new())
    }
}

impl Verifier<Vec<u8>> for Rs256 {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        self.0
            .verify(
                Pkcs1v15Sign::new::<Sha256>(),
                &Sha256::digest(msg),
                signature,
            )
            .map_err(|_| signature::Error::new())
    }
}

impl Verifier<Vec<u8>> for Es256 {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        // The raw 64-byte r‖s of RFC 7518 only: a DER signature is refused, as are r or s of zero.
        let signature = p256::ecdsa::Signature::from_slice(signature)?;
        self.0.verify(msg, &signature)
    }
}

macro_rules! algorithm_of {
    ($($name:ident => $algorithm:ident),*) => {$(
        impl JwtVerifier for $name {
            fn algorithm(&self) -> Algorithm {
                Algorithm::$algorithm
            }
        }
    )*};
}
algorithm_of!(Hs256 => HS256, Rs256 => RS256, Es256 => ES256);
