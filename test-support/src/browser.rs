//! What the browser tests share: the check that Chromium, Node.js and the driver's npm
//! packages are there (a test fails without them unless `WAITING_ROOM_SKIP_BROWSER=1`
//! asks to skip it), running a driver script with a bound on its time, and the check
//! that a screenshot is a real one.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The opt-out: with this variable set to `1` the browser tests pass without running.
pub const SKIP_VAR: &str = "WAITING_ROOM_SKIP_BROWSER";
/// The npm packages the driver scripts import (pinned in `tests/browser/package.json`).
const NPM_PACKAGES: &[&str] = &["playwright-core", "axe-core"];

/// The driver scripts' folder, `tests/browser`, if the browser test is to run: `None`
/// when `WAITING_ROOM_SKIP_BROWSER=1` asks to skip it (and says so). Panics when
/// Chromium, Node.js or the npm packages are missing.
pub fn driver_dir(test: &str) -> Option<PathBuf> {
    if std::env::var(SKIP_VAR).is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED on request ({SKIP_VAR}=1): {test} did not run");
        return None;
    }
    // The workspace's `tests/browser`: a tool's tests (tools/wrctl) share the root's.
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = crate_dir
        .ancestors()
        .map(|dir| dir.join("tests/browser"))
        .find(|dir| dir.join("package.json").is_file())
        .unwrap_or_else(|| crate_dir.join("tests/browser"));
    let mut missing = Vec::new();
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        missing.push(format!("Chromium ({chromium}, Debian package `chromium`)"));
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        missing.push("Node.js (`node`, Debian package `nodejs`)".into());
    }
    for package in NPM_PACKAGES {
        if !driver.join("node_modules").join(package).is_dir() {
            missing.push(format!(
                "the npm package {package} (`npm ci` in tests/browser)"
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "{test} needs {}: run scripts/setup.sh, which installs them, or set {SKIP_VAR}=1 \
         to skip the browser tests",
        missing.join(", ")
    );
    Some(driver)
}

/// Runs `command` with its output in `log`; `None` if it was still running after
/// `bound` (it is then killed).
pub fn run_bounded(mut command: Command, log: &Path, bound: Duration) -> Option<ExitStatus> {
    let file = fs::File::create(log).unwrap();
    let mut child = command
        .stdout(Stdio::from(file.try_clone().unwrap()))
        .stderr(Stdio::from(file))
        .spawn()
        .expect("cannot start node");
    let deadline = Instant::now() + bound;
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

/// What `tests/browser/dashboard.mjs` must find on the controller's dashboard.
pub struct DashboardChecks<'a> {
    /// Texts the page must show.
    pub texts: &'a [String],
    /// Texts the charts' text alternatives must hold.
    pub charts: &'a [&'a str],
    /// Texts the page must not show.
    pub absent: &'a [&'a str],
}

/// Runs `tests/browser/dashboard.mjs` (from `driver`) on the dashboard at `url`, with
/// its output and screenshots in `out`: it checks `checks` and axe-core's WCAG rules
/// at a phone's and a desktop's width. Panics on a failure; returns the desktop and
/// phone screenshots, checked to be real and different.
pub fn check_dashboard(
    driver: &Path,
    url: &str,
    out: &Path,
    checks: &DashboardChecks<'_>,
    bound: Duration,
) -> (Vec<u8>, Vec<u8>) {
    try_check_dashboard(driver, url, out, checks, bound).unwrap_or_else(|why| panic!("{why}"))
}

/// [`check_dashboard`], with the script's failure returned rather than panicked on
/// (for a caller that can tell a failure from a page that moved on).
pub fn try_check_dashboard(
    driver: &Path,
    url: &str,
    out: &Path,
    checks: &DashboardChecks<'_>,
    bound: Duration,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    fs::create_dir_all(out).unwrap();
    let (desktop, phone) = (
        out.join("dashboard-desktop.png"),
        out.join("dashboard-phone.png"),
    );
    for stale in [&desktop, &phone] {
        let _ = fs::remove_file(stale);
    }
    let log = out.join("dashboard.log");
    let mut command = Command::new("node");
    command
        .current_dir(driver)
        .arg("dashboard.mjs")
        .arg(format!("--url={url}"))
        .arg(format!("--out={}", out.display()))
        .arg("--timeout-secs=30");
    command.args(checks.texts.iter().map(|text| format!("--expect={text}")));
    command.args(
        checks
            .charts
            .iter()
            .map(|chart| format!("--expect-chart={chart}")),
    );
    command.args(checks.absent.iter().map(|text| format!("--absent={text}")));
    let result = run_bounded(command, &log, bound);
    let output = fs::read_to_string(&log).unwrap_or_default();
    if !result.is_some_and(|s| s.success()) {
        return Err(format!(
            "the dashboard script {} ({}):\n{output}",
            result.map_or("did not finish in time".to_string(), |s| s.to_string()),
            log.display(),
        ));
    }
    eprintln!("{output}");
    let wide = assert_screenshot(&desktop);
    let narrow = assert_screenshot(&phone);
    assert_ne!(wide, narrow, "both screenshots show the same thing");
    Ok((wide, narrow))
}

/// Checks `path` is a PNG screenshot of a real page; returns its bytes.
pub fn assert_screenshot(path: &Path) -> Vec<u8> {
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
