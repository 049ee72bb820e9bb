//! The Prometheus rules generated from wrctl's alert table hold in Prometheus's own
//! tool: `promtool check rules` takes `deploy/prometheus/wrctl-rules.yml`, and
//! `promtool test rules` runs its unit tests (`wrctl-rules.test.yml`: for each rule,
//! series that should fire it and series that should not). promtool is Debian's
//! `prometheus` package, which scripts/setup.sh installs; without it the test fails
//! unless `WAITING_ROOM_SKIP_PROMTOOL=1` asks to skip it. `PROMTOOL=/path` picks
//! another binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use wrctl::alerts::{self, ALERTS};

/// The opt-out: with this set to `1` the promtool test passes without running.
const SKIP_PROMTOOL: &str = "WAITING_ROOM_SKIP_PROMTOOL";

fn rules_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(alerts::RULES_PATH)
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `promtool ARGS` in the rules' folder: its output, after checking it succeeded.
fn promtool(promtool: &str, args: &[&str]) -> String {
    let output = Command::new(promtool)
        .args(args)
        .current_dir(rules_dir())
        .output()
        .unwrap_or_else(|e| panic!("{promtool} {args:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

#[test]
fn promtool_checks_the_rules_and_passes_their_unit_tests() {
    if std::env::var(SKIP_PROMTOOL).is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED on request ({SKIP_PROMTOOL}=1): promtool not run");
        return;
    }
    let tool = std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".into());
    let version = Command::new(&tool).arg("--version").output();
    assert!(
        version.is_ok_and(|o| o.status.success()),
        "promtool ({tool}) is missing: run scripts/setup.sh (it installs Debian's prometheus \
         package, which has it), set PROMTOOL=/path/to/promtool, or set {SKIP_PROMTOOL}=1 to \
         skip this check"
    );
    let checked = promtool(&tool, &["check", "rules", "wrctl-rules.yml"]);
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", ALERTS.len())),
        "{checked}"
    );
    let tested = promtool(&tool, &["test", "rules", "wrctl-rules.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
fn the_unit_tests_try_every_rule_firing_and_not() {
    let tests = std::fs::read_to_string(rules_dir().join("wrctl-rules.test.yml")).unwrap();
    for alert in ALERTS {
        let name = alert.rule_name();
        // Each of the rule's evaluations, up to the next one.
        let evals: Vec<&str> = tests
            .split("      - eval_time: ")
            .filter(|e| e.contains(&format!("\n        alertname: {name}\n")))
            .collect();
        assert!(
            evals.iter().any(|e| e.contains("exp_labels:")),
            "{name}: no evaluation where it fires"
        );
        assert!(
            evals.iter().any(|e| e.contains("exp_alerts: []")),
            "{name}: no evaluation where it stays quiet"
        );
    }
}
