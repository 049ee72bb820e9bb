//! The local JSON store files (a flat object of string values, as Viceroy reads
//! them) that `token`, `rotate`, `revoke`, `pass`, `config set` and `control
//! --config-file` read and replace atomically, and the room's settings from one.

use std::collections::HashMap;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use serde_json::{Map, Value};
use waiting_room::settings::config::Settings;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::room_settings::Remembered;

/// Reads a JSON store file: one object.
pub fn read_object(path: &Path) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(e) => Err(format!("{} is not JSON: {e}", path.display())),
    }
}

/// Reads a JSON store file: one object of string values.
pub fn read_store(path: &Path) -> Result<Map<String, Value>, String> {
    let map = read_object(path)?;
    if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_string()) {
        return Err(format!(
            "{}: the value of {key:?} is not a string",
            path.display()
        ));
    }
    Ok(map)
}

/// A store file's entries as text.
pub fn store_strings(map: &Map<String, Value>) -> HashMap<String, String> {
    map.iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// Replaces a store file atomically (a temporary file renamed over it).
pub fn write_store(path: &Path, map: &Map<String, Value>) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(&Value::Object(map.clone()))
        .map_err(|e| format!("cannot encode {}: {e}", path.display()))?;
    text.push('\n');
    replace(path, text.as_bytes())
}

/// The room's settings from a config file, as the room reads its config store;
/// the defaults when `path` is `None`.
pub fn settings(path: Option<&Path>) -> Result<Settings, String> {
    let map = match path {
        Some(path) => store_strings(&read_store(path)?),
        None => HashMap::new(),
    };
    Ok(RequestContext::from_store(&Remembered::new(|key: &str| map.get(key).cloned())).settings)
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
