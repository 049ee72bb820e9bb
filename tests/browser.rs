//! The room in a real browser: headless Chromium (Debian's `chromium`), driven by
//! playwright-core from `tests/browser/waiting_room.mjs`, opens a protected URL, sees
//! the waiting page and is let in by the page's own `Refresh` header; the test never
//! reloads. The screenshots and the script's output stay in `artifacts/` after the run.
//! Chromium connects from 127.0.0.1, so all its requests are one visitor.

mod support;

use std::fs;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use demo_origin::ORIGIN_MARKER;
use support::room::Room;

/// What the waiting page must show. Add a text here when the page gains one (an
/// estimate, say); `WAITING_ROOM_EXPECT` adds more for one run.
const WAITING_PAGE_TEXTS: &[&str] = &[
    "You are in the waiting room",
    "Half of visitors get in within",
    "Next check",
];
/// How long the page may take to refresh its way to the origin.
const ORIGIN_WITHIN_SECS: u64 = 60;
/// The bound on the whole script: the wait, plus the browser's start and screenshots.
const SCRIPT_BOUND: Duration = Duration::from_secs(ORIGIN_WITHIN_SECS + 60);

#[test]
fn a_browser_is_shown_the_waiting_page_then_refreshes_itself_to_the_origin() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = root.join("tests/browser");
    if let Some(missing) = missing_browser() {
        eprintln!(
            "SKIPPED: the browser test needs {missing}, which is not installed and could not \
             be installed here (scripts/setup.sh installs it with apt-get where it can)"
        );
        return;
    }
    assert!(
        driver.join("node_modules/playwright-core").is_dir(),
        "playwright-core is missing: run scripts/setup.sh (it runs `npm ci` in tests/browser)"
    );

    // A two-second slot and a 90 % draw: the start page, then one or two refreshes to
    // the origin. The generous redeem window keeps a refresh that a busy machine
    // delays in the draw.
    let room = Room::start(&[
        ("wait_period_duration", "2"),
        ("allow_percentage", "90"),
        ("redeem_window", "10"),
    ]);
    let artifacts = root.join("artifacts");
    fs::create_dir_all(&artifacts).unwrap();
    let waiting_png = artifacts.join("waiting-page.png");
    let origin_png = artifacts.join("origin.png");
    let log = artifacts.join("browser.log");
    for stale in [&waiting_png, &origin_png] {
        let _ = fs::remove_file(stale);
    }

    let mut command = Command::new("node");
    command
        .current_dir(&driver)
        .arg("waiting_room.mjs")
        .arg(format!("--url=http://{}/events", room.addr))
        .arg(format!("--out={}", artifacts.display()))
        .arg(format!("--origin-text={ORIGIN_MARKER}"))
        .arg(format!("--timeout-secs={ORIGIN_WITHIN_SECS}"));
    for text in WAITING_PAGE_TEXTS {
        command.arg(format!("--expect={text}"));
    }
    let status = run_bounded(command, &log);
    let output = fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "the browser script {} ({}):\n{output}\nthe room's output:\n{}",
        status.map_or("did not finish in time".to_string(), |s| s.to_string()),
        log.display(),
        room.viceroy_output()
    );
    eprintln!("{output}");

    let waiting = assert_screenshot(&waiting_png);
    let origin = assert_screenshot(&origin_png);
    assert_ne!(waiting, origin, "both screenshots show the same thing");

    // The room saw one visitor start waiting, then win its draw on a refresh.
    let lines = room.log_lines();
    let events = |decision: &str| {
        lines.iter().any(|l| {
            l.starts_with(&format!(
                "waitingroom decision={decision} uid=127.0.0.1 path=/events "
            ))
        })
    };
    assert!(
        events("anon") && events("allow"),
        "log:\n{}",
        lines.join("\n")
    );
}

/// What the browser test needs but this machine lacks, if anything.
fn missing_browser() -> Option<String> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Some(format!("Chromium ({chromium}, Debian package `chromium`)"));
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Some("Node.js (`node`, Debian package `nodejs`)".into());
    }
    None
}

/// Runs `command` with its output in `log`; `None` if it was still running after
/// [`SCRIPT_BOUND`] (it is then killed).
fn run_bounded(mut command: Command, log: &Path) -> Option<ExitStatus> {
    let file = fs::File::create(log).unwrap();
    let mut child = command
        .stdout(Stdio::from(file.try_clone().unwrap()))
        .stderr(Stdio::from(file))
        .spawn()
        .expect("cannot start node");
    let deadline = Instant::now() + SCRIPT_BOUND;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Checks `path` is a PNG screenshot of a real page; returns its bytes.
fn assert_screenshot(path: &Path) -> Vec<u8> {
    let png = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR",
        "{} is not a PNG",
        path.display()
    );
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert!(
        width >= 320 && height >= 200,
        "{} is {width}x{height}",
        path.display()
    );
    // A page of one colour at this size compresses to about 4 KB; the waiting page
    // takes about 35 KB.
    assert!(
        png.len() > 10_000,
        "{} has {} bytes: a blank page?",
        path.display(),
        png.len()
    );
    png
}
