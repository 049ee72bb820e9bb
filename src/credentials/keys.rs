//! Signing keys and the store that holds them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::settings::room::RoomName;

/// Keys shorter than this many bytes work but are logged as weak (HMAC-SHA256
/// keys should carry at least 256 bits).
pub const MIN_STRONG_KEY_LEN: usize = 32;

/// Whether `kid` can name a stored key: a name Fastly's Secret Store accepts (its
/// config stores accept these too). Any other id is no key, known before a read: on
/// Fastly its read fails as an invalid name, an `ALERT=unreadable:signing-key` anyone
/// could raise with a cookie, at the cost of the request's reads.
pub use crate::settings::limits::is_secret_name as is_storable_kid;

/// Longest key id, in bytes.
pub use crate::settings::limits::MAX_SECRET_NAME_LEN as MAX_KID_LEN;

/// A non-empty HMAC key, held as the HMAC-SHA256 state keyed with it (the inner
/// and outer pads already hashed), so that every MAC of a request starts from that
/// state instead of hashing the pads again. Its `Debug` prints nothing secret.
#[derive(Clone)]
pub struct SigningKey {
    /// HMAC-SHA256 keyed with the secret; cloned for each MAC.
    keyed: Hmac<Sha256>,
    /// The secret's length in bytes (for [`SigningKey::is_weak`]).
    len: usize,
}

impl SigningKey {
    /// Keys an HMAC with `secret`; `None` for an empty secret, which must never sign
    /// or verify (anyone can compute an HMAC with the empty key).
    pub fn new(secret: impl AsRef<[u8]>) -> Option<SigningKey> {
        let secret = secret.as_ref();
        if secret.is_empty() {
            return None;
        }
        let keyed = Hmac::<Sha256>::new_from_slice(secret).ok()?;
        Some(SigningKey {
            keyed,
            len: secret.len(),
        })
    }

    /// Whether the key is shorter than [`MIN_STRONG_KEY_LEN`] bytes.
    pub fn is_weak(&self) -> bool {
        self.len < MIN_STRONG_KEY_LEN
    }

    /// The key a named room signs with: HMAC-SHA256 of the room's name under this
    /// key, so a token of one room never verifies in another (or in the service
    /// room), while rooms share the stored keys. Weak when this key is.
    pub fn for_room(&self, room: &RoomName) -> Option<SigningKey> {
        let mut mac = self.mac();
        mac.update(b"waiting-room room key\0");
        mac.update(room.as_str().as_bytes());
        let derived = SigningKey::new(mac.finalize().into_bytes())?;
        Some(SigningKey {
            len: self.len,
            ..derived
        })
    }

    /// A fresh HMAC-SHA256 keyed with this key, ready for the text.
    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        self.keyed.clone()
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// Why a key could not be had: the host failed its read (never an absent key), or
/// the request has no read left for it ([`KeyStore::spare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// The host failed the read: a decision that rests on the key waits.
    Failed,
    /// Kept for the reads the rest of the request needs: a pass goes unchecked.
    NoReadsLeft,
}

/// What looking a key up gives: the usable key, `None` when absent or empty, or why
/// it could not be had.
pub type KeyRead = Result<Option<SigningKey>, Unread>;

/// Where signing keys are looked up by key id (`kid`).
pub trait KeyStore {
    /// The usable key stored under `kid`.
    fn key(&self, kid: &str) -> KeyRead;

    /// The key under `kid` if the request can spare the read: a key already read,
    /// or a read left beyond those the rest of the request may need (a pass spends
    /// only those). A store that counts no reads spares every one.
    fn spare(&self, kid: &str) -> KeyRead {
        self.key(kid)
    }
}

/// A key store that reads each key id once, however many tokens and passes of the
/// request name it: the edge's reads are counted, and a refused pass must not cost
/// another read of a key already read.
pub struct ReadOnce<K> {
    keys: K,
    read: RefCell<HashMap<String, KeyRead>>,
}

impl<K: KeyStore> ReadOnce<K> {
    /// Wraps `keys`.
    pub fn new(keys: K) -> Self {
        ReadOnce {
            keys,
            read: RefCell::default(),
        }
    }
}

impl<K: KeyStore> ReadOnce<K> {
    /// The key under `kid` as first read, or read now through `read` (not kept
    /// when the read was only refused for want of reads: a later one may have one).
    fn once(&self, kid: &str, read: impl FnOnce(&K) -> KeyRead) -> KeyRead {
        if let Some(key) = self.read.borrow().get(kid) {
            return key.clone();
        }
        let key = read(&self.keys);
        if !matches!(key, Err(Unread::NoReadsLeft)) {
            self.read.borrow_mut().insert(kid.to_string(), key.clone());
        }
        key
    }
}

impl<K: KeyStore> KeyStore for ReadOnce<K> {
    fn key(&self, kid: &str) -> KeyRead {
        self.once(kid, |keys| keys.key(kid))
    }

    fn spare(&self, kid: &str) -> KeyRead {
        self.once(kid, |keys| keys.spare(kid))
    }
}

/// Any `kid → secret` function is a key store that never fails (a map, a file the
/// tools read).
impl<F: Fn(&str) -> Option<String>> KeyStore for F {
    fn key(&self, kid: &str) -> KeyRead {
        Ok(self(kid).and_then(SigningKey::new))
    }
}

/// The keys of one room: a store's keys, each derived for the room when it is a
/// named one ([`SigningKey::for_room`]). The store is asked only for the ids it can
/// hold ([`is_storable_kid`]): every other id is unknown without a read.
pub struct RoomKeys<'a, K> {
    keys: &'a K,
    room: Option<&'a RoomName>,
}

impl<'a, K: KeyStore> RoomKeys<'a, K> {
    /// `keys` as `room` signs with them (`None`: the service room, as stored).
    pub fn new(keys: &'a K, room: Option<&'a RoomName>) -> Self {
        RoomKeys { keys, room }
    }
}

impl<K: KeyStore> RoomKeys<'_, K> {
    /// The room's key from the stored one `read` gives, for a storable `kid`.
    fn derived(&self, kid: &str, read: impl FnOnce(&K) -> KeyRead) -> KeyRead {
        if !is_storable_kid(kid) {
            return Ok(None);
        }
        Ok(read(self.keys)?.and_then(|key| match self.room {
            None => Some(key),
            Some(room) => key.for_room(room),
        }))
    }
}

impl<K: KeyStore> KeyStore for RoomKeys<'_, K> {
    fn key(&self, kid: &str) -> KeyRead {
        self.derived(kid, |keys| keys.key(kid))
    }

    fn spare(&self, kid: &str) -> KeyRead {
        self.derived(kid, |keys| keys.spare(kid))
    }
}

impl KeyStore for HashMap<String, String> {
    fn key(&self, kid: &str) -> KeyRead {
        Ok(self.get(kid).and_then(SigningKey::new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_read_once_a_request() {
        let reads = std::cell::Cell::new(0);
        let store = |kid: &str| {
            reads.set(reads.get() + 1);
            (kid == "key1").then(|| "secret".to_string())
        };
        let once = ReadOnce::new(store);
        for _ in 0..3 {
            assert!(once.key("key1").unwrap().is_some());
            assert!(once.key("gone").unwrap().is_none());
        }
        assert_eq!(reads.get(), 2);
    }

    #[test]
    fn a_key_id_is_letters_digits_dash_underscore_and_dot_up_to_255_bytes() {
        for kid in [
            "key1",
            "K-2",
            "2027_a.b",
            "-",
            ".",
            &"k".repeat(MAX_KID_LEN),
        ] {
            assert!(is_storable_kid(kid), "{kid:?}");
        }
        let odd = (0..=u8::MAX)
            .filter(|b| !b.is_ascii_alphanumeric() && !b"-_.".contains(b))
            .map(|b| format!("k{}1", char::from(b)));
        for kid in odd.chain(["".into(), "k".repeat(MAX_KID_LEN + 1), "ключ".into()]) {
            assert!(!is_storable_kid(&kid), "{kid:?}");
        }
    }

    #[test]
    fn an_odd_key_id_is_unknown_without_a_read() {
        let reads = std::cell::Cell::new(0);
        // A store that holds a key under any id, as a file store could.
        let store = |_: &str| {
            reads.set(reads.get() + 1);
            Some("a long random secret of 32 bytes or more".to_string())
        };
        let drops = RoomName::new("drops").unwrap();
        for room in [None, Some(&drops)] {
            let keys = RoomKeys::new(&store, room);
            for kid in ["k!1", "k/1", "k:1", "", &"k".repeat(MAX_KID_LEN + 1)] {
                assert!(keys.key(kid).unwrap().is_none(), "{kid:?}");
            }
            assert_eq!(reads.get(), 0);
            assert!(keys.key("key1").unwrap().is_some());
            reads.set(0);
        }
    }

    #[test]
    fn each_room_signs_with_a_key_of_its_own() {
        let key = SigningKey::new("a long random secret of 32 bytes or more").unwrap();
        let drops = RoomName::new("drops").unwrap();
        let shop = RoomName::new("shop").unwrap();
        let a = tag(&key.for_room(&drops).unwrap(), "text");
        assert_ne!(a, tag(&key, "text"));
        assert_ne!(a, tag(&key.for_room(&shop).unwrap(), "text"));
        assert_eq!(a, tag(&key.for_room(&drops).unwrap(), "text"));
        // Derived as documented: HMAC of the name, used as the room's secret.
        let mut mac = key.mac();
        mac.update(b"waiting-room room key\0drops");
        assert_eq!(a, fresh_tag(&mac.finalize().into_bytes(), "text"));
        let weak = SigningKey::new("short").unwrap();
        assert!(weak.for_room(&drops).unwrap().is_weak());
        let store: HashMap<String, String> = HashMap::from([(
            "k".to_string(),
            "a long random secret of 32 bytes or more".to_string(),
        )]);
        let room_keys = RoomKeys::new(&store, Some(&drops));
        assert_eq!(tag(&room_keys.key("k").unwrap().unwrap(), "text"), a);
        assert_eq!(
            tag(
                &RoomKeys::new(&store, None).key("k").unwrap().unwrap(),
                "text"
            ),
            tag(&key, "text")
        );
    }

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
        assert!(store.key("key1").unwrap().is_none());
    }

    /// The MAC of `text` under `key`, as bytes.
    fn tag(key: &SigningKey, text: &str) -> Vec<u8> {
        use hmac::Mac as _;
        let mut mac = key.mac();
        mac.update(text.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// The MAC of `text` under `secret`, keyed afresh (the reference).
    fn fresh_tag(secret: &[u8], text: &str) -> Vec<u8> {
        use hmac::Mac as _;
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(text.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    #[test]
    fn closure_and_map_stores_look_up_by_kid() {
        let map = HashMap::from([("key1".to_string(), "secret".to_string())]);
        assert_eq!(
            tag(&map.key("key1").unwrap().unwrap(), "t"),
            fresh_tag(b"secret", "t")
        );
        assert!(map.key("key2").unwrap().is_none());
        let store = |kid: &str| (kid == "key2").then(|| "s2".to_string());
        assert_eq!(
            tag(&store.key("key2").unwrap().unwrap(), "t"),
            fresh_tag(b"s2", "t")
        );
    }

    /// The keyed state is cloned for every MAC: one MAC never leaks into the next,
    /// and each equals an HMAC keyed afresh (RFC 4231 test case 2 as well).
    #[test]
    fn every_mac_starts_from_the_keyed_state() {
        let key = SigningKey::new("Jefe").unwrap();
        let first = tag(&key, "what do ya want for nothing?");
        assert_eq!(
            hex::encode(&first),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(tag(&key, "dec=wait"), fresh_tag(b"Jefe", "dec=wait"));
        assert_eq!(tag(&key, "what do ya want for nothing?"), first);
        // Keys longer than a block are hashed first, as HMAC requires.
        let long = [0xaa_u8; 131];
        assert_eq!(
            tag(&SigningKey::new(long).unwrap(), "x"),
            fresh_tag(&long, "x")
        );
    }
}
