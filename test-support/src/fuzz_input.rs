//! Turns raw bytes (from the fuzzer, or from the native test's fixed-seed PRNG)
//! into the waiting room's inputs: cookie values and headers, settings, visits.
//!
//! The bytes steer choices rather than being used verbatim, so that random bytes
//! reach deep states: correctly signed tokens (minted here with the fixed key
//! store [`KEYS`] by the tests' own minter), tokens a byte away from valid, every
//! setting with the samples of its row of the settings table, or garbage. The bytes
//! are read with `arbitrary`'s [`Unstructured`], as fuzz targets read theirs. Running
//! out of bytes is fine: a number is then 0 and a text empty, so any input is a
//! valid case.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::{Arbitrary, Unstructured};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use waiting_room::settings::config;
use waiting_room::settings::row::{DURATIONS, Samples};

use super::mint;

/// The fixed key store the fuzzed room runs against: two real keys, one empty
/// secret (which must count as no key at all), one under an id no token can carry
/// and one under an id a token carries but no Fastly store can hold (neither may
/// ever be read, sign or verify).
pub const KEYS: &[(&str, &str)] = &[
    ("key1", "fuzz-key-one-0123456789abcdef"),
    ("key2", "fuzz-key-two-0123456789abcdef"),
    ("empty", ""),
    ("k&1", "fuzz-key-amp-0123456789abcdef"),
    ("k!1", "fuzz-key-odd-0123456789abcdef"),
];

/// Key ids a token may name: the store's, an unknown one, and odd ones.
const KIDS: &[&str] = &["key1", "key2", "empty", "key3", "k&1", "k!1", "k 1", ""];

/// A secret no key id maps to: what a forger would sign with.
pub const FORGER_KEY: &str = "not-a-key-of-the-room";

/// Paths a visit may start with.
const PATHS: &[&str] = &["/events", "/checkout/cart", "/", "/about", "/a", "/eventsX"];

/// Names of cookies next to the room's, some of them near misses.
const OTHER_COOKIE_NAMES: &[&str] = &[
    "session",
    "a",
    "waiting_roomx",
    "xwaiting_room",
    "Waiting_Room",
    "waiting_room2",
];

/// A Unix time around which tokens expire.
pub const EPOCH: u64 = 1_700_000_000;

/// Raw bytes, read as choices that never fail.
pub struct Input<'a>(Unstructured<'a>);

impl<'a> Input<'a> {
    /// Reads choices from `data`.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input(Unstructured::new(data))
    }

    /// A number in `0..n` (`n` ≥ 1).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.choose_index(n).unwrap_or(0)
    }

    /// Any value of `T`, such as a number of any size.
    pub fn arbitrary<T: Arbitrary<'a> + Default>(&mut self) -> T {
        self.0.arbitrary().unwrap_or_default()
    }

    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        *self.0.choose(items).expect("something to choose from")
    }

    /// Up to `max` bytes of arbitrary text (invalid UTF-8 becomes U+FFFD).
    pub fn text(&mut self, max: usize) -> String {
        let len = self.below(max + 1).min(self.0.len());
        String::from_utf8_lossy(self.0.bytes(len).unwrap_or_default()).into_owned()
    }

    /// A Unix time: mostly near [`EPOCH`], sometimes anything, including the extremes.
    pub fn now(&mut self) -> u64 {
        match self.below(8) {
            0 => self.arbitrary(),
            1 => u64::MAX - self.below(4) as u64,
            2 => self.below(4) as u64,
            _ => EPOCH + self.below(1 << 16) as u64,
        }
    }

    /// An expiry a little before, at, or a little after `now`, or anything.
    pub fn exp_near(&mut self, now: u64) -> u64 {
        let delta = self.below(200) as u64;
        match self.below(8) {
            0 => self.arbitrary(),
            1 => now,
            2 => now.saturating_sub(delta),
            // Up to two default sessions ahead: young and old allow tokens alike.
            3 => now.saturating_add(self.below(7200) as u64),
            // Young for the default session (kept without renewal).
            4 => now.saturating_add(1800 + self.below(1800) as u64),
            // Just expired: inside a default redeem window (a draw).
            5 => now.saturating_sub(1 + self.below(30) as u64),
            _ => now.saturating_add(delta),
        }
    }

    /// A client IP as the edge prints it (IPv6 compressed).
    pub fn ip(&mut self) -> String {
        let ip = match self.below(4) {
            0 => IpAddr::V4(Ipv4Addr::new(192, 0, 2, self.below(4) as u8)),
            1 => IpAddr::V4(self.arbitrary::<u32>().into()),
            2 => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            _ => IpAddr::V6(self.arbitrary::<u128>().into()),
        };
        ip.to_string()
    }

    /// A key id: mostly one of the store's, sometimes odd or anything.
    pub fn kid(&mut self) -> String {
        match self.below(8) {
            0 => self.text(300),
            1 | 2 => self.pick(KIDS).to_string(),
            3 => "key2".to_string(),
            _ => "key1".to_string(),
        }
    }

    /// A cookie value for a visitor `uid` at `now`: garbage, base64 of garbage,
    /// a correctly signed token (for this visitor or another, with a store key or
    /// a forger's), or such a token with one byte changed.
    pub fn cookie_value(&mut self, uid: &str, now: u64) -> String {
        match self.below(8) {
            0 => self.text(200),
            1 => STANDARD.encode(self.text(200)),
            _ => {
                let token = self.signed_token(uid, now);
                match self.below(4) {
                    0 => self.mutate(&token),
                    1 => STANDARD.encode(self.mutate(&mint::open(&token))),
                    _ => token,
                }
            }
        }
    }

    /// A token minted by the tests' minter: mostly for `uid` and a store key;
    /// some wait tokens are FIFO tokens (with an arrival time).
    fn signed_token(&mut self, uid: &str, now: u64) -> String {
        let dec = self.pick(&["wait", "allow", "wait", "allow", "deny", "fifo"]);
        let exp = self.exp_near(now);
        let token_uid = match self.below(4) {
            0 => self.ip(),
            _ => uid.to_string(),
        };
        let kid = self.kid();
        let secret = match self.below(6) {
            0 => FORGER_KEY,
            _ => key_secret(&kid).unwrap_or(FORGER_KEY),
        };
        if dec == "fifo" {
            let arr = match self.below(4) {
                0 => self.arbitrary(),
                _ => EPOCH * 1000 + self.below(1 << 16) as u64 * 1000 + self.below(1000) as u64,
            };
            return mint::mint_fifo(secret, exp, &token_uid, &kid, arr);
        }
        mint::mint(secret, dec, exp, &token_uid, &kid)
    }

    /// `text` with one byte replaced, inserted or removed (kept as UTF-8).
    pub fn mutate(&mut self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        let at = self.below(bytes.len() + 1);
        let new = self.arbitrary();
        match self.below(3) {
            0 if at < bytes.len() => bytes[at] = new,
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, new),
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A `Cookie` header built from well-formed pairs, with what it holds.
    pub fn cookie_header(&mut self, uid: &str, now: u64) -> BuiltHeader {
        let mut pairs = Vec::new();
        let mut others = Vec::new();
        let mut room_values = Vec::new();
        for _ in 0..self.below(6) {
            let spaced = |input: &mut Self, s: &str| {
                let pad = |input: &mut Self| " ".repeat(input.below(3));
                format!("{}{s}{}", pad(input), pad(input))
            };
            if self.below(3) == 0 {
                let value = self.cookie_value(uid, now).replace(';', "");
                let pair = format!(
                    "{}={}",
                    spaced(self, ROOM_COOKIE),
                    spaced(self, value.trim())
                );
                room_values.push(value.trim().to_string());
                pairs.push(pair);
            } else {
                let name = self.pick(OTHER_COOKIE_NAMES);
                let value = self.text(20).replace(';', "");
                let pair = format!("{name}={}", value.trim());
                others.push(pair.clone());
                pairs.push(spaced(self, &pair));
            }
        }
        let separator = self.pick(&[";", "; ", " ;", ";;"]);
        BuiltHeader {
            header: pairs.join(separator),
            others,
            room_values,
        }
    }

    /// The raw value of every setting of the settings table: missing, one of its
    /// row's samples (valid or invalid), or garbage.
    pub fn settings_store(&mut self) -> HashMap<String, String> {
        let mut store = HashMap::new();
        for row in config::ROWS {
            let Samples { valid, invalid } = row.samples;
            let value = match self.below(8) {
                0 => continue,
                1 => self.text(40),
                2 if row.samples == DURATIONS => {
                    (self.arbitrary::<u64>() % (config::MAX_DURATION + 2)).to_string()
                }
                2 => self.below(130).to_string(),
                _ => match self.below(valid.len() + invalid.len()) {
                    i if i < valid.len() => valid[i].to_string(),
                    i => invalid[i - valid.len()].to_string(),
                },
            };
            store.insert(row.key.to_string(), value);
        }
        store
    }

    /// A URL path: mostly under the default protected prefix, or another prefix,
    /// or anything.
    pub fn path(&mut self) -> String {
        match self.below(8) {
            0 => self.text(300),
            1 | 2 => format!("{}{}", self.pick(PATHS), self.text(8)),
            _ => format!("/events{}", self.text(8)),
        }
    }
}

/// The room cookie's name.
const ROOM_COOKIE: &str = "waiting_room";

/// A `Cookie` header and what the generator put in it.
pub struct BuiltHeader {
    /// The header.
    pub header: String,
    /// The other cookies, as `name=value` pairs, in order.
    pub others: Vec<String>,
    /// The values of the room cookies, in order.
    pub room_values: Vec<String>,
}

/// The secret stored under `kid` in [`KEYS`], if any (possibly empty).
pub fn key_secret(kid: &str) -> Option<&'static str> {
    KEYS.iter()
        .find(|(id, _)| *id == kid)
        .map(|(_, secret)| *secret)
}

/// [`KEYS`] as the key store the room reads (an empty secret is no key).
pub fn key_store(kid: &str) -> Option<String> {
    key_secret(kid).map(str::to_string)
}
