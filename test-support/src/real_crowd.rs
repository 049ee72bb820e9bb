//! `scripts/real-crowd.py` as a process against a room: its browser-like crowd,
//! killed when the test ends, whatever happens; its minute table and its JSON
//! report once it stops.

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The crowd; killed when dropped.
pub struct Crowd {
    child: Child,
    json: PathBuf,
}

impl Crowd {
    /// `scripts/real-crowd.py --room http://ADDR ARGS --json <a temporary file>`.
    pub fn start(room: SocketAddr, args: &[&str]) -> Crowd {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/real-crowd.py");
        let json = std::env::temp_dir().join(format!(
            "real-crowd-{}-{}.json",
            std::process::id(),
            room.port()
        ));
        let child = Command::new("python3")
            .arg(&script)
            .args(["--room", &format!("http://{room}")])
            .args(args)
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is needed for the crowd (scripts/real-crowd.py)");
        Crowd { child, json }
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Once it has stopped: the minute table it printed, and its JSON report.
    pub fn finish(&mut self) -> (String, serde_json::Value) {
        let mut table = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            let _ = out.read_to_string(&mut table);
        }
        let text = std::fs::read_to_string(&self.json)
            .unwrap_or_else(|e| panic!("{}: {e}\n{table}", self.json.display()));
        let report = serde_json::from_str(&text).unwrap();
        (table, report)
    }
}

/// The new sessions of each minute of a crowd's report (distinct allow tokens).
pub fn new_sessions_per_minute(report: &serde_json::Value) -> Vec<u64> {
    report["minutes"]
        .as_array()
        .expect("the report's minutes")
        .iter()
        .map(|m| m["new_sessions"].as_u64().expect("a minute's new sessions"))
        .collect()
}

impl Drop for Crowd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.json);
    }
}
