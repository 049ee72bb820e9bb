//! Where the controller's writes go: a Viceroy JSON config-store file, a Fastly
//! config store through the Fastly API, or nowhere (`--dry-run`).

use std::path::{Path, PathBuf};

use crate::budget::Answer;
use crate::fastly_api::Client;
use control::store_write::StoreWrite;
use serde_json::{Map, Value, json};

use crate::store_file::{read_object, write_store};
use waiting_room::settings::room::RoomName;

/// The Fastly API's address.
pub const FASTLY_API: &str = "https://api.fastly.com";

/// A place the controller writes its items to.
pub trait Sink: Send {
    /// Writes `items` (key, value), all of them, or reports a failure.
    fn write_items(&mut self, items: &[(String, String)]) -> Result<(), String>;
    /// Writes the items of `write`.
    fn write(&mut self, write: &dyn StoreWrite) -> Result<(), String> {
        let items: Vec<(String, String)> = write
            .items()
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect();
        self.write_items(&items)
    }
    /// Where writes go, as `status.json` shows it.
    fn describe(&self) -> String;
    /// Whether writes go nowhere.
    fn is_dry_run(&self) -> bool {
        false
    }
    /// The Fastly API's answer to the last write (status and rate-limit
    /// headers); `None` for a sink that is not the API.
    fn answer(&self) -> Option<Answer> {
        None
    }
    /// Whether writes count against Fastly's API budget (the writer paces them).
    fn budgeted(&self) -> bool {
        false
    }
}

/// `--room NAME`: the controller of a named room writes its keys as
/// `room.NAME.<key>`, apart from the operator's value of the room.
pub struct InRoom {
    inner: Box<dyn Sink>,
    room: RoomName,
}

impl InRoom {
    /// `inner`, with every key written as the room's.
    pub fn new(inner: Box<dyn Sink>, room: RoomName) -> InRoom {
        InRoom { inner, room }
    }
}

impl Sink for InRoom {
    fn write_items(&mut self, items: &[(String, String)]) -> Result<(), String> {
        let items: Vec<(String, String)> = items
            .iter()
            .map(|(key, value)| (self.room.key(key), value.clone()))
            .collect();
        self.inner.write_items(&items)
    }

    fn describe(&self) -> String {
        format!("{} (room {})", self.inner.describe(), self.room)
    }

    fn is_dry_run(&self) -> bool {
        self.inner.is_dry_run()
    }

    fn answer(&self) -> Option<Answer> {
        self.inner.answer()
    }

    fn budgeted(&self) -> bool {
        self.inner.budgeted()
    }
}

/// `--dry-run`: nothing is written; the controller goes on as if it had been.
pub struct DryRun;

impl Sink for DryRun {
    fn write_items(&mut self, _: &[(String, String)]) -> Result<(), String> {
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

impl Sink for ConfigFile {
    fn write_items(&mut self, items: &[(String, String)]) -> Result<(), String> {
        let mut settings = read_object(&self.path)?;
        for (key, value) in items {
            settings.insert(key.clone(), Value::String(value.clone()));
        }
        write_store(&self.path, &settings)
    }

    fn describe(&self) -> String {
        format!("config-file {}", self.path.display())
    }
}

/// `--fastly-store-id ID`: one `PATCH /resources/stores/config/ID/items` a write,
/// with every item as an upsert (in FIFO mode the cutoff, the rate and the
/// heartbeat in one batch, so the edge never sees a cutoff without its rate; with
/// several rooms, every room's items of the tick in the same batch).
pub struct FastlyApi {
    client: Client,
    url: String,
    store_id: String,
    /// The answer to the last write.
    answer: Option<Answer>,
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
            answer: None,
        }
    }

    /// The address each write is sent to.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The request body of a write: `{"items":[{"op":"upsert","item_key":…,"item_value":…},…]}`.
pub fn batch_body(items: &[(String, String)]) -> String {
    let items: Vec<Value> = items
        .iter()
        .map(|(key, value)| json!({"op": "upsert", "item_key": key, "item_value": value}))
        .collect();
    json!({ "items": items }).to_string()
}

impl Sink for FastlyApi {
    fn write_items(&mut self, items: &[(String, String)]) -> Result<(), String> {
        let (result, answer) = self
            .client
            .patch_items_answered(&self.store_id, batch_body(items));
        self.answer = Some(answer);
        result
    }

    fn describe(&self) -> String {
        format!("fastly config store {}", self.store_id)
    }

    fn answer(&self) -> Option<Answer> {
        self.answer
    }

    fn budgeted(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control::fifo_rule::CutoffWrite;
    use control::percentage_rule::PercentageWrite;
    use std::sync::{Arc, Mutex};

    fn items(write: &dyn StoreWrite) -> Vec<(String, String)> {
        write
            .items()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// A sink that keeps what it is given.
    struct Kept(Arc<Mutex<Vec<(String, String)>>>);

    impl Sink for Kept {
        fn write_items(&mut self, items: &[(String, String)]) -> Result<(), String> {
            self.0.lock().unwrap().extend_from_slice(items);
            Ok(())
        }

        fn describe(&self) -> String {
            "kept".into()
        }
    }

    #[test]
    fn a_rooms_controller_writes_the_rooms_own_keys() {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let room = RoomName::new("drops").unwrap();
        let mut sink = InRoom::new(Box::new(Kept(kept.clone())), room);
        let write = PercentageWrite {
            allow_percentage: Some("12.5".parse().unwrap()),
            heartbeat: 1_700_000_000,
        };
        sink.write(&write).unwrap();
        assert_eq!(
            *kept.lock().unwrap(),
            [
                (
                    "room.drops.allow_percentage".to_string(),
                    "12.5".to_string()
                ),
                (
                    "room.drops.controller_heartbeat".to_string(),
                    "1700000000".to_string()
                )
            ]
        );
        assert_eq!(sink.describe(), "kept (room drops)");
    }

    #[test]
    fn the_body_upserts_both_items() {
        let write = PercentageWrite {
            allow_percentage: Some("12.5".parse().unwrap()),
            heartbeat: 1_700_000_000,
        };
        assert_eq!(
            batch_body(&items(&write)),
            r#"{"items":[{"item_key":"allow_percentage","item_value":"12.5","op":"upsert"},{"item_key":"controller_heartbeat","item_value":"1700000000","op":"upsert"}]}"#
        );
    }

    #[test]
    fn the_fifo_body_upserts_cutoff_rate_and_heartbeat_in_that_order() {
        let write = CutoffWrite {
            fifo_cutoff: Some(1_700_000_000_123),
            fifo_rate: Some("1.625".parse().unwrap()),
            heartbeat: 1_700_000_010,
        };
        assert_eq!(
            batch_body(&items(&write)),
            r#"{"items":[{"item_key":"fifo_cutoff","item_value":"1700000000123","op":"upsert"},{"item_key":"fifo_rate","item_value":"1.625","op":"upsert"},{"item_key":"controller_heartbeat","item_value":"1700000010","op":"upsert"}]}"#
        );
    }
}
