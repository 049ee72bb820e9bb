//! What `wrctl config check` reads and what it reports, shared by its checks.

use std::collections::BTreeMap;

/// A config store read from a file: key → value.
pub type Store = BTreeMap<String, String>;

/// What `wrctl config check` found.
#[derive(Debug, Default)]
pub struct Report {
    /// `key = value  (set|default|fallback)` for every key the room reads.
    pub effective: Vec<String>,
    /// The room's `config_fallback=` field, when anything falls back.
    pub fallback_field: Option<String>,
    /// Errors: the room would fall back, or could not work as configured.
    pub errors: Vec<String>,
    /// Works, but probably not as meant.
    pub warnings: Vec<String>,
    /// Works as meant, with a consequence worth knowing.
    pub notes: Vec<String>,
}
