//! Signing keys and the store that holds them.

use std::collections::HashMap;
use std::fmt;

/// Keys shorter than this many bytes work but are logged as weak (HMAC-SHA256
/// keys should carry at least 256 bits).
pub const MIN_STRONG_KEY_LEN: usize = 32;

/// A non-empty HMAC key. Its `Debug` prints nothing secret.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(Vec<u8>);

impl SigningKey {
    /// Wraps `secret`; `None` for an empty secret, which must never sign or verify
    /// (anyone can compute an HMAC with the empty key).
    pub fn new(secret: impl Into<Vec<u8>>) -> Option<SigningKey> {
        let secret = secret.into();
        (!secret.is_empty()).then_some(SigningKey(secret))
    }

    /// Whether the key is shorter than [`MIN_STRONG_KEY_LEN`] bytes.
    pub fn is_weak(&self) -> bool {
        self.0.len() < MIN_STRONG_KEY_LEN
    }

    /// The key's bytes, for the MAC.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// Where signing keys are looked up by key id (`kid`).
pub trait KeyStore {
    /// The usable key stored under `kid`; `None` when absent or empty.
    fn key(&self, kid: &str) -> Option<SigningKey>;
}

/// Any `kid → secret` function is a key store (the edge passes a config-store lookup).
impl<F: Fn(&str) -> Option<String>> KeyStore for F {
    fn key(&self, kid: &str) -> Option<SigningKey> {
        self(kid).and_then(SigningKey::new)
    }
}

impl KeyStore for HashMap<String, String> {
    fn key(&self, kid: &str) -> Option<SigningKey> {
        self.get(kid).cloned().and_then(SigningKey::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_secret() {
        let key = SigningKey::new("hunter2-very-secret").unwrap();
        let shown = format!("{key:?} {:?}", Some(&key));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redacted"));
    }

    #[test]
    fn keys_under_32_bytes_are_weak() {
        assert!(SigningKey::new("secret").unwrap().is_weak());
        assert!(SigningKey::new([7u8; 31]).unwrap().is_weak());
        assert!(!SigningKey::new([7u8; 32]).unwrap().is_weak());
    }

    #[test]
    fn empty_secret_is_no_key() {
        assert!(SigningKey::new("").is_none());
        let store = |kid: &str| (kid == "key1").then(String::new);
        assert!(store.key("key1").is_none());
    }

    #[test]
    fn closure_and_map_stores_look_up_by_kid() {
        let map = HashMap::from([("key1".to_string(), "secret".to_string())]);
        assert_eq!(map.key("key1").unwrap().bytes(), b"secret");
        assert!(map.key("key2").is_none());
        let store = |kid: &str| (kid == "key2").then(|| "s2".to_string());
        assert_eq!(store.key("key2").unwrap().bytes(), b"s2");
    }
}
