//! `wrctl config set` and `wrctl config migrate`: a setting written where the room
//! reads it ([`waiting_room::settings::layout`]), in a local store file or in the
//! service's config store through Fastly's API, so that tuning a setting live stays
//! one command whether it has a key of its own or is a member of `settings`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use waiting_room::settings::config::KEYS;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::layout::{self, SETTINGS, is_member};
use waiting_room::settings::room_settings::Remembered;

use crate::config_check::{Store, moved_keys, parse_store};
use crate::fastly_api::api_from_env;
use crate::sink::FASTLY_API;
use crate::store_file::replace;

/// `wrctl config set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The setting (any key docs/operate/configuration.md lists).
    #[arg(value_name = "KEY")]
    pub key: String,
    /// Its new value, as text.
    #[arg(value_name = "VALUE")]
    pub value: String,
    /// A local store file (a JSON object of string values, such as local/config.json).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "fastly_config_store",
        conflicts_with = "fastly_config_store"
    )]
    pub config_file: Option<PathBuf>,
    /// The service's config store ID (through the Fastly API; token from FASTLY_API_TOKEN only).
    #[arg(long, value_name = "ID")]
    pub fastly_config_store: Option<String>,
    /// The Fastly API's address.
    #[arg(long, value_name = "URL", default_value = FASTLY_API, long_help = "The Fastly API's address (for tests).\nExample: --fastly-api-url http://127.0.0.1:8081")]
    pub fastly_api_url: String,
}

/// `wrctl config migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The store as exported (a JSON object, or `fastly config-store-entry list --json`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// The store's entries after setting `key` to `value`, and the item that changed;
/// an error when `key` is no setting or the room would not read `value` for it.
pub fn set(
    store: &BTreeMap<String, String>,
    key: &str,
    value: &str,
) -> Result<(Store, (String, String)), String> {
    if !KEYS.contains(&key) {
        return Err(format!("{key:?} is not a setting of the room"));
    }
    let mut entries = store.clone();
    layout::set(&mut entries, key, value);
    let read = RequestContext::from_store(&Remembered::new(|k: &str| entries.get(k).cloned()));
    if read.fallbacks.contains(&key) {
        return Err(format!(
            "the room would not read {value:?} as {key}: it would fall back"
        ));
    }
    let item = if is_member(key) { SETTINGS } else { key };
    let changed = (item.to_string(), entries[item].clone());
    Ok((entries, changed))
}

/// The `settings` value for a store configured before the settings moved: its
/// members from the flat keys, over what `settings` already holds.
pub fn migrated(store: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut entries: BTreeMap<String, String> = store
        .iter()
        .filter(|(key, _)| !is_member(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for key in moved_keys(store) {
        layout::set(&mut entries, key, &store[key]);
    }
    entries
}

/// A local store file's entries.
pub fn load(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_store(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Replaces a local store file with `entries` (atomically: renamed over it).
pub fn save(path: &Path, entries: &BTreeMap<String, String>) -> Result<(), String> {
    let text = serde_json::to_string_pretty(entries).expect("a map of strings") + "\n";
    replace(path, text.as_bytes())
}

/// `wrctl config set`: exit 0 once written, 1 when the value is refused or the
/// write fails, 2 on bad usage.
pub fn run_set(args: SetArgs) -> ExitCode {
    let fail = |code: u8, e: String| {
        eprintln!("wrctl: {e}");
        ExitCode::from(code)
    };
    if let Some(path) = &args.config_file {
        let store = match load(path) {
            Ok(store) => store,
            Err(e) => return fail(2, e),
        };
        let (entries, changed) = match set(&store, &args.key, &args.value) {
            Ok(done) => done,
            Err(e) => return fail(1, e),
        };
        if let Err(e) = save(path, &entries) {
            return fail(1, e);
        }
        eprintln!("wrctl: {} set in {}", changed.0, path.display());
        return ExitCode::SUCCESS;
    }
    let Some(store_id) = &args.fastly_config_store else {
        return fail(2, "--config-file or --fastly-config-store is needed".into());
    };
    let api = api_from_env(&args.fastly_api_url);
    let store: BTreeMap<String, String> = match api.config_items(store_id) {
        Ok(items) => items.into_iter().collect(),
        Err(e) => return fail(1, e),
    };
    let (_, changed) = match set(&store, &args.key, &args.value) {
        Ok(done) => done,
        Err(e) => return fail(1, e),
    };
    let (item, value) = &changed;
    match api.upsert_item(store_id, item, value) {
        Ok(()) => {
            eprintln!("wrctl: {item} set in config store {store_id}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(1, e),
    }
}

/// `wrctl config migrate`: prints the store with every moved key as a member of
/// `settings` (a JSON object to import), and on stderr which keys moved.
pub fn run_migrate(args: MigrateArgs) -> ExitCode {
    let store = match load(&args.file) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("wrctl: {e}");
            return ExitCode::from(2);
        }
    };
    let moved = moved_keys(&store);
    println!(
        "{}",
        serde_json::to_string_pretty(&migrated(&store)).expect("a map of strings")
    );
    match moved.is_empty() {
        true => eprintln!("wrctl: nothing to move"),
        false => eprintln!(
            "wrctl: moved into {SETTINGS}: {}; write the settings item, then delete those keys",
            moved.join(", ")
        ),
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_member_is_written_into_settings_and_an_own_key_as_itself() {
        let old = store(&[
            ("enabled", "true"),
            ("settings", r#"{"queue_all": "false"}"#),
        ]);
        let (entries, changed) = set(&old, "queue_all", "true").unwrap();
        assert_eq!(changed.0, "settings");
        let read = RequestContext::from_store(&Remembered::new(|k: &str| entries.get(k).cloned()));
        assert!(read.settings.queue_all && read.settings.enabled);
        let (_, changed) = set(&old, "allow_percentage", "12.5").unwrap();
        assert_eq!(
            changed,
            ("allow_percentage".to_string(), "12.5".to_string())
        );
    }

    #[test]
    fn unknown_keys_and_unreadable_values_are_refused() {
        let old = store(&[]);
        assert!(set(&old, "queue_al", "true").is_err());
        assert!(set(&old, "waiting_status", "404").is_err());
        assert!(set(&old, "settings", "{}").is_err());
    }

    #[test]
    fn a_flat_store_migrates_to_the_same_settings() {
        let flat = store(&[
            ("enabled", "true"),
            ("protected_paths", "/shop"),
            ("queue_all", "true"),
            ("bot_toll_bits", "12"),
            ("rooms", "{}"),
        ]);
        assert_eq!(
            moved_keys(&flat),
            ["bot_toll_bits", "protected_paths", "queue_all"]
        );
        let migrated = migrated(&flat);
        assert!(moved_keys(&migrated).is_empty());
        let read = RequestContext::from_store(&Remembered::new(|k: &str| migrated.get(k).cloned()));
        let flat_read = waiting_room::settings::config::Settings::read(&|k| flat.get(k).cloned());
        assert_eq!((read.settings, read.fallbacks), flat_read);
    }
}
