//! `wrctl report` as an operator runs it: the real binary on a saved log of a
//! synthetic crowd (ten minutes, a few lines in other programs' words). Its table
//! of minutes is held to what the log itself says, counted here without the
//! controller (new sessions: distinct allow tokens of `session=new` lines, by the
//! minute of their `t`; the percentage: the minute's last `p=`); and in headless
//! Chromium (the root's `tests/browser/report.mjs`) every figure is an image with
//! its title, the page fits a phone, asks for nothing and passes axe-core's WCAG
//! 2.1 A/AA rules at a phone and a desktop width. The browser part needs
//! Chromium, Node.js and the npm packages of `tests/browser` (scripts/setup.sh);
//! `WAITING_ROOM_SKIP_BROWSER=1` skips it.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::wrctl;
use test_support::browser;
use wrctl::synthetic::Crowd;

/// A whole minute of Unix time.
const START: u64 = 1_700_000_040;
const MINUTES: u64 = 10;

/// Ten minutes of a crowd's lines, and some of other programs' between them.
fn saved_log(dir: &Path) -> (std::path::PathBuf, Vec<String>) {
    let mut crowd = Crowd::new(START, 11);
    crowd.arrivals_per_second = 4;
    crowd.prefixed = 0.5;
    let mut lines = Vec::new();
    for second in 0..MINUTES * 60 {
        if second % 97 == 0 {
            lines.push("INFO viceroy: request completed".to_string());
        }
        lines.extend(crowd.next_second());
    }
    let path = dir.join("saved.log");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (path, lines)
}

/// The field `name=` of a line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_ascii_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

/// The cells of the rows of the report's table of the service room.
fn minute_rows(html: &str) -> Vec<Vec<String>> {
    let table = &html[html
        .find("<table class=\"minutes\"")
        .expect("a table of minutes")..];
    let body = &table[table.find("<tbody>").unwrap()..table.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            let row = row.replace("</th>", "</td>");
            let cells: Vec<&str> = row.split("</td>").collect();
            cells[..cells.len() - 1]
                .iter()
                .map(|c| c.rsplit('>').next().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_report_of_a_saved_log_counts_what_the_log_says() {
    let dir = tempfile::tempdir().unwrap();
    let (log, lines) = saved_log(dir.path());
    let out = dir.path().join("report.html");
    let run = wrctl(
        &[
            "report",
            log.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--",
            "--target-per-minute",
            "40",
            "--wait-period",
            "30",
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.err.contains("(10 minutes, "), "{}", run.err);
    let html = std::fs::read_to_string(&out).unwrap();

    // What the log says, minute by minute, counted here.
    let mut tokens: BTreeMap<u64, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut percentage: BTreeMap<u64, String> = BTreeMap::new();
    for line in lines.iter().filter(|l| l.contains("waitingroom t=")) {
        let t: u64 = field(line, "t").unwrap().parse().unwrap();
        let minute = (t - START) / 60;
        if field(line, "session") == Some("new") {
            let token = (
                field(line, "uid").unwrap().into(),
                field(line, "exp").unwrap().into(),
            );
            tokens.entry(minute).or_default().insert(token);
        }
        if let Some(p) = field(line, "p") {
            percentage.insert(minute, p.to_string());
        }
    }
    let rows = minute_rows(&html);
    assert_eq!(rows.len(), MINUTES as usize);
    let mut admitted = 0;
    for (m, row) in rows.iter().enumerate() {
        let m = m as u64;
        let new_sessions = tokens.get(&m).map_or(0, BTreeSet::len);
        admitted += new_sessions;
        assert_eq!(
            row[1],
            new_sessions.to_string(),
            "minute {m}'s new sessions: {row:?}"
        );
        assert_eq!(row[2], "40", "minute {m}'s target");
        assert_eq!(row[8], percentage[&m], "minute {m}'s percentage");
    }
    assert!(
        admitted > 100,
        "{admitted} admitted: a crowd worth a report"
    );
    // A crowd at 10 % admits more than 40 a minute: the alert is on the timeline.
    assert!(html.contains("<th scope=\"row\" class=\"l\">admissions-off-target</th>"));
}

#[test]
fn a_log_with_no_room_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("empty.log");
    std::fs::write(&log, "INFO viceroy: nothing\n").unwrap();
    let out = dir.path().join("r.html");
    let args = [
        "report",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--",
        "--target-per-minute",
        "40",
    ];
    let run = wrctl(&args, &[]);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(run.err.contains("no room log line"), "{}", run.err);
    assert!(!out.exists());
    let run = wrctl(&args[..5], &[]);
    assert_eq!(
        run.code,
        Some(2),
        "the controller's options are required: {}",
        run.all()
    );
}

#[test]
fn the_report_passes_axe_at_a_phone_and_a_desktop_width() {
    let Some(driver) = browser::driver_dir("the wrctl report test") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = saved_log(dir.path());
    let out = dir.path().join("report.html");
    let run = wrctl(
        &[
            "report",
            log.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--title",
            "A synthetic crowd",
            "--",
            "--target-per-minute",
            "40",
            "--wait-period",
            "30",
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.all());
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../artifacts/report");
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut command = Command::new("node");
    command
        .current_dir(&driver)
        .arg("report.mjs")
        .arg(format!("--file={}", out.display()))
        .arg(format!("--out={}", artifacts.display()))
        .arg("--figures=2")
        .arg("--expect=A synthetic crowd")
        .arg("--expect=admissions-off-target");
    let log = artifacts.join("report.log");
    let status = browser::run_bounded(command, &log, Duration::from_secs(120));
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "report.mjs: {status:?}\n{output}"
    );
    assert!(
        output.contains("axe: 0 violations on the report, phone"),
        "{output}"
    );
    assert!(
        output.contains("axe: 0 violations on the report, desktop"),
        "{output}"
    );
    let phone = browser::assert_screenshot(&artifacts.join("report-phone.png"));
    let desktop = browser::assert_screenshot(&artifacts.join("report-desktop.png"));
    assert_ne!(phone, desktop);
}
