//! A real Prometheus on loopback for the tests: a temporary data folder, a
//! generated configuration that scrapes the given targets every second under the
//! job `wrctl`, evaluating every second, with the committed rules file loaded
//! after its `for:` durations are rewritten to `1s` in a temporary copy (so a
//! rule fires after two evaluations rather than minutes). Prometheus is Debian's
//! `prometheus` package (scripts/setup.sh); `PROMETHEUS=/path` picks another
//! binary; without one the test fails unless `WAITING_ROOM_SKIP_PROMTOOL=1` asks
//! to skip the Prometheus checks.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::eventually;

/// The opt-out shared with the promtool test: `1` skips the Prometheus checks.
pub const SKIP: &str = "WAITING_ROOM_SKIP_PROMTOOL";

/// The Prometheus binary, or `None` when the checks are skipped on request;
/// panics when it is missing.
pub fn binary(test: &str) -> Option<String> {
    if std::env::var(SKIP).is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED on request ({SKIP}=1): {test} not run");
        return None;
    }
    let bin = std::env::var("PROMETHEUS").unwrap_or_else(|_| "prometheus".into());
    let version = Command::new(&bin).arg("--version").output();
    assert!(
        version.is_ok_and(|o| o.status.success()),
        "prometheus ({bin}) is missing: run scripts/setup.sh (Debian's prometheus package), \
         set PROMETHEUS=/path/to/prometheus, or set {SKIP}=1 to skip {test}"
    );
    Some(bin)
}

/// The committed rules, each `for:` rewritten to `1s`.
pub fn rules_with_short_for() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(wrctl::alerts::RULES_PATH);
    let rules = std::fs::read_to_string(path).unwrap();
    let mut rewritten = 0;
    let out: Vec<String> = rules
        .lines()
        .map(|line| match line.split_once("for: ") {
            Some((indent, _)) if indent.trim().is_empty() => {
                rewritten += 1;
                format!("{indent}for: 1s")
            }
            _ => line.to_string(),
        })
        .collect();
    assert_eq!(rewritten, wrctl::alerts::ALERTS.len(), "a for: per rule");
    out.join("\n") + "\n"
}

/// A free port on loopback (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running Prometheus; killed when dropped.
pub struct Prometheus {
    child: Child,
    pub addr: SocketAddr,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts `bin` scraping `targets` (job `wrctl`) every second, with `rules`
    /// (a rules file's text) loaded; waits until it is ready.
    pub fn start(bin: &str, targets: &[String], rules: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.yml"), rules).unwrap();
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - rules.yml\n\
             scrape_configs:\n  - job_name: wrctl\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new(bin)
            .current_dir(dir.path())
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e}"));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut prometheus = Prometheus {
            child,
            addr,
            agent,
            _dir: dir,
        };
        eventually("Prometheus to be ready", || {
            if let Ok(Some(status)) = prometheus.child.try_wait() {
                panic!("prometheus exited: {status}");
            }
            let ready = prometheus
                .agent
                .get(format!("http://{addr}/-/ready"))
                .call()
                .ok()?;
            (ready.status() == 200).then_some(())
        });
        prometheus
    }

    /// `GET /api/v1/PATH` with `query` parameters: its `data`, or the error said.
    pub fn api(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, String> {
        let mut request = self
            .agent
            .get(format!("http://{}/api/v1/{path}", self.addr));
        for (k, v) in query {
            request = request.query(*k, *v);
        }
        let mut response = request.call().map_err(|e| e.to_string())?;
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| e.to_string())?;
        let body: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        if body["status"] != "success" {
            return Err(format!("{body}"));
        }
        Ok(body["data"].clone())
    }

    /// The result of an instant query `q`: its series (errors for a query that
    /// does not parse).
    pub fn query(&self, q: &str) -> Result<Vec<Value>, String> {
        let data = self.api("query", &[("query", q)])?;
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }

    /// The alerts (`/api/v1/alerts`), each with `labels` and `state`.
    pub fn alerts(&self) -> Vec<Value> {
        let data = self.api("alerts", &[]).unwrap();
        data["alerts"].as_array().cloned().unwrap_or_default()
    }

    /// The scrape targets' health (`/api/v1/targets`): (scrape URL, health).
    pub fn targets(&self) -> Vec<(String, String)> {
        let data = self.api("targets", &[]).unwrap();
        data["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|t| {
                (
                    t["scrapeUrl"].as_str().unwrap_or("").to_string(),
                    t["health"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
