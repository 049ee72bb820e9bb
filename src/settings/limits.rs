//! Fastly's limits on what one execution may read, and the room's budget within
//! them (docs/operate/platform-limits.md).
//!
//! Fastly allows 32 config-store lookups an execution (its Compute resource
//! limits) and 5 secret reads a request (its Secret Store guide); past them the
//! host fails the call. The room holds itself to half as many lookups and 3 secret
//! reads on every path, with every feature on, so that a lower limit (16 lookups
//! until 2025), a host that counts a retried read twice, or tomorrow's feature does
//! not silently switch a setting off. The edge's glue counts every read through a
//! [`Counter`] set to the budget, locally and on Fastly alike: a read past it fails
//! as the host's would, so every local run keeps within the budget or shows where
//! it does not.

use std::cell::Cell;

/// Longest Secret Store secret name, in bytes: Fastly's Secret Store takes names of
/// at most 255 bytes, and its config stores keys of at most 255 characters
/// (docs/operate/platform-limits.md).
pub const MAX_SECRET_NAME_LEN: usize = 255;

/// Whether `name` can name a secret: 1 to [`MAX_SECRET_NAME_LEN`] letters, digits,
/// `-`, `_` and `.`, the names Fastly's Secret Store accepts.
pub fn is_secret_name(name: &str) -> bool {
    (1..=MAX_SECRET_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Config-store lookups Fastly allows an execution (every `get`, a missing key
/// included).
pub const FASTLY_CONFIG_LOOKUPS: u32 = 32;
/// Config-store lookups the room may make on any path: the limit its glue enforces.
pub const CONFIG_LOOKUP_BUDGET: u32 = 16;
/// Secret-store reads Fastly allows a request (its Secret Store guide).
pub const FASTLY_SECRET_READS: u32 = 5;
/// Secret reads the room may make on any path: the limit its glue enforces.
pub const SECRET_READ_BUDGET: u32 = 3;

/// Reads a pass may not spend ([`crate::credentials::keys::KeyStore::spare`]): those
/// the rest of the request may need after it. With the keys in a Secret Store, the
/// challenge's secret (when the room has a challenge); in a config store, the
/// page's lookup.
pub fn kept_from_passes(keys_in_secrets: bool, challenge: bool) -> u32 {
    match keys_in_secrets {
        true => u32::from(challenge),
        false => 1,
    }
}

/// Counts one kind of read against a limit.
#[derive(Debug)]
pub struct Counter {
    limit: u32,
    used: Cell<u32>,
}

/// A read refused because the execution has used its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitReached;

impl Counter {
    /// A counter that allows `limit` reads.
    pub fn new(limit: u32) -> Counter {
        Counter {
            limit,
            used: Cell::new(0),
        }
    }

    /// Counts one read; `Err` once the limit is used (the read must not happen).
    pub fn take(&self) -> Result<(), LimitReached> {
        let used = self.used.get();
        if used >= self.limit {
            return Err(LimitReached);
        }
        self.used.set(used + 1);
        Ok(())
    }

    /// Reads left before the limit.
    pub fn left(&self) -> u32 {
        self.limit.saturating_sub(self.used.get())
    }

    /// Reads counted so far (refused ones not included).
    pub fn used(&self) -> u32 {
        self.used.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_allows_its_limit_and_refuses_the_next() {
        let counter = Counter::new(2);
        assert_eq!(counter.take(), Ok(()));
        assert_eq!(counter.take(), Ok(()));
        assert_eq!(counter.take(), Err(LimitReached));
        assert_eq!((counter.used(), counter.left()), (2, 0));
    }

    #[test]
    fn the_budgets_leave_half_of_fastlys_lookups_and_room_for_secrets() {
        const { assert!(2 * CONFIG_LOOKUP_BUDGET <= FASTLY_CONFIG_LOOKUPS) };
        const { assert!(SECRET_READ_BUDGET < FASTLY_SECRET_READS) };
    }
}
