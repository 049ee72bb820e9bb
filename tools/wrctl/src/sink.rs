//! Where the controller's writes go: a Viceroy JSON config-store file, a Fastly
//! config store through the Fastly API, or nowhere (`--dry-run`).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fastly_api::Client;
use control::rule;
use serde_json::{Map, Value, json};

/// The environment variable the Fastly API token is read from (never a flag or a file).
pub const TOKEN_VAR: &str = "FASTLY_API_TOKEN";
/// The Fastly API's address.
pub const FASTLY_API: &str = "https://api.fastly.com";
/// How long one write to the Fastly API may take, connection included.
pub const API_TIMEOUT: Duration = Duration::from_secs(10);

/// A place the controller writes its items to.
pub trait Sink: Send {
    /// Writes the items of `write` (all of them, or reports a failure).
    fn write(&mut self, write: &dyn rule::Write) -> Result<(), String>;
    /// Where writes go, as `status.json` shows it.
    fn describe(&self) -> String;
    /// Whether writes go nowhere.
    fn is_dry_run(&self) -> bool {
        false
    }
}

/// `--dry-run`: nothing is written; the controller goes on as if it had been.
pub struct DryRun;

impl Sink for DryRun {
    fn write(&mut self, _: &dyn rule::Write) -> Result<(), String> {
        Ok(())
    }

    fn describe(&self) -> String {
        "dry run".into()
    }

    fn is_dry_run(&self) -> bool {
        true
    }
}

/// `--config-file PATH`: a Viceroy JSON config store (one object of string values).
/// Each write reads the file afresh, sets the controller's keys, keeps every other
/// key, and replaces the file atomically (a temporary file in the same directory,
/// renamed over it).
pub struct ConfigFile {
    path: PathBuf,
}

impl ConfigFile {
    /// Checks the file can be read and holds a JSON object.
    pub fn open(path: &Path) -> Result<ConfigFile, String> {
        read_object(path)?;
        Ok(ConfigFile {
            path: path.to_path_buf(),
        })
    }

    /// The file's current settings (for the start-up checks).
    pub fn settings(&self) -> Result<Map<String, Value>, String> {
        read_object(&self.path)
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn read_object(path: &Path) -> Result<Map<String, Value>, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(e) => Err(format!("{} is not JSON: {e}", path.display())),
    }
}

impl Sink for ConfigFile {
    fn write(&mut self, write: &dyn rule::Write) -> Result<(), String> {
        let mut settings = read_object(&self.path)?;
        for (key, value) in write.items() {
            settings.insert(key.to_string(), Value::String(value));
        }
        let mut text = serde_json::to_string_pretty(&Value::Object(settings))
            .map_err(|e| format!("cannot encode the settings: {e}"))?;
        text.push('\n');
        replace(&self.path, text.as_bytes())
    }

    fn describe(&self) -> String {
        format!("config-file {}", self.path.display())
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`, so
/// that a reader sees the old file or the new one, never a part of one.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| format!("{} names no file", path.display()))?;
    let temp = path.with_file_name(format!(
        ".{}.wrctl-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&temp);
        format!("cannot replace {}: {e}", path.display())
    })
}

/// `--fastly-store-id ID`: one `PATCH /resources/stores/config/ID/items` a write,
/// with every item as an upsert (in FIFO mode the cutoff, the rate and the
/// heartbeat in one batch, so the edge never sees a cutoff without its rate).
pub struct FastlyApi {
    client: Client,
    url: String,
    store_id: String,
}

impl FastlyApi {
    /// A client of the API at `api` (no trailing slash needed) for config store
    /// `store_id`, authenticated with `token`.
    pub fn new(api: &str, store_id: &str, token: String) -> FastlyApi {
        let client = Client::new(api, token);
        FastlyApi {
            url: client.items_url(store_id),
            client,
            store_id: store_id.to_string(),
        }
    }

    /// The address each write is sent to.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The request body of a write: `{"items":[{"op":"upsert","item_key":…,"item_value":…},…]}`.
pub fn batch_body(write: &dyn rule::Write) -> String {
    let items: Vec<Value> = write
        .items()
        .into_iter()
        .map(|(key, value)| json!({"op": "upsert", "item_key": key, "item_value": value}))
        .collect();
    json!({ "items": items }).to_string()
}

impl Sink for FastlyApi {
    fn write(&mut self, write: &dyn rule::Write) -> Result<(), String> {
        self.client.patch_items(&self.store_id, batch_body(write))
    }

    fn describe(&self) -> String {
        format!("fastly config store {}", self.store_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control::{Write, fifo};

    #[test]
    fn the_body_upserts_both_items() {
        let write = Write {
            allow_percentage: Some("12.5".parse().unwrap()),
            heartbeat: 1_700_000_000,
        };
        assert_eq!(
            batch_body(&write),
            r#"{"items":[{"item_key":"allow_percentage","item_value":"12.5","op":"upsert"},{"item_key":"controller_heartbeat","item_value":"1700000000","op":"upsert"}]}"#
        );
    }

    #[test]
    fn the_fifo_body_upserts_cutoff_rate_and_heartbeat_in_that_order() {
        let write = fifo::Write {
            fifo_cutoff: Some(1_700_000_000_123),
            fifo_rate: Some("1.625".parse().unwrap()),
            heartbeat: 1_700_000_010,
        };
        assert_eq!(
            batch_body(&write),
            r#"{"items":[{"item_key":"fifo_cutoff","item_value":"1700000000123","op":"upsert"},{"item_key":"fifo_rate","item_value":"1.625","op":"upsert"},{"item_key":"controller_heartbeat","item_value":"1700000010","op":"upsert"}]}"#
        );
    }
}
