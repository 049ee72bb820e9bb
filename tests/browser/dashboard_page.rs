//! The controller's dashboard page (`tools/wrctl/static/dashboard.html`) in headless
//! Chromium, driven by `tests/browser/dashboard.mjs`: a small loopback server here
//! serves the page and a fixed `status.json`, in the controller's schema, and the
//! script checks what the page shows, axe-core's WCAG 2.1 A/AA rules at a phone and a
//! desktop width, that no request leaves the page's origin and that the page says so
//! when status.json stops answering. Screenshots stay in `artifacts/dashboard*/`.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::browser;

/// The bound on one run of the script: two widths, axe twice, a lost connection.
const SCRIPT_BOUND: Duration = Duration::from_secs(120);
/// The newest second of the fixed snapshot.
const NOW: u64 = 1_700_000_123;
/// The seconds the snapshot's series cover, as the controller keeps them.
const WINDOW: usize = 600;
const TARGET_PER_MINUTE: u64 = 3000;

#[test]
fn the_dashboard_draws_a_flash_crowd_and_passes_axe() {
    let status = flash_crowd();
    let series = &status["series"];
    let last_minute: u64 = series["admissions"].as_array().unwrap()[WINDOW - 60..]
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    let texts = [
        "12.5 %".to_string(),
        "range 0.01–100 %".into(),
        with_commas(last_minute),
        format!("target {}", with_commas(TARGET_PER_MINUTE)),
        "2,890".into(),
        "max 20,000".into(),
        "15,234".into(),
        "123,456".into(),
        "3 bad".into(),
        "3 s ago".into(),
        "12 writes, 0 failed".into(),
        "config-file /srv/room/config.json".into(),
    ];
    let charts = [
        "New sessions per second, last 600 s: new sessions latest",
        "; target 50.",
        "New sessions in the last 60 s, last 600 s: new sessions, rolling minute latest",
        "; target 3,000.",
        "Arrivals and draws per second, last 600 s: arrivals latest",
        "Active sessions, last 600 s: active sessions latest",
        "; max active 20,000.",
        "Allow percentage in effect, last 600 s: percentage in effect latest 12.5",
    ];
    let absent = ["DRY RUN", "Connection lost", "Origin"];
    run_dashboard("dashboard", "/", status, &texts, &charts, &absent);
}

#[test]
fn following_the_origin_the_dashboard_plots_its_health_and_passes_axe() {
    // The same crowd, its target set by the origin rule: the origin's p95 rises
    // past its bound as the crowd comes in, then the cut brings it back.
    let mut status = flash_crowd();
    let p95: Vec<Option<u64>> = (0..WINDOW)
        .map(|i| match i {
            0..30 => None,
            30..200 => Some(240),
            200..320 => Some(240 + (i as u64 - 200) * 6),
            _ => Some(560),
        })
        .collect();
    let errors: Vec<Option<f64>> = (0..WINDOW)
        .map(|i| (i >= 30).then_some(if (300..330).contains(&i) { 2.5 } else { 0.0 }))
        .collect();
    status["series"]["origin_p95_ms"] = json!(p95);
    status["series"]["origin_error_percent"] = json!(errors);
    status["origin"] = json!({
        "state": "origin-limited",
        "alert": false,
        "healthy": "p95<800ms,errors<1%,window=60s",
        "p95_bound_ms": 800,
        "error_share_bound": 0.01,
        "answers": 5400,
        "answers_per_second": 90.0,
        "p95_ms": 560,
        "error_share": 0.0,
        "base_ms": 210,
        "aim_ms": 560,
        "live_sessions": 28_000,
        "target_turns": 3,
    });
    let texts = [
        "origin-limited".to_string(),
        "p95 560 ms of 800 (aim 560)".into(),
        "base 210 ms".into(),
    ];
    let charts = [
        "Origin p95, last window, last 600 s: origin p95 latest 560, peak 954; bound 800.",
        "Origin errors, last window, last 600 s: origin errors latest 0, peak 2.5; bound 1.",
    ];
    let absent = ["NaN", "undefined", "Connection lost", "ALERT"];
    run_dashboard("dashboard-origin", "/", status, &texts, &charts, &absent);
}

#[test]
fn the_dashboard_shows_a_snapshot_of_nulls_and_empty_series_without_errors() {
    let empty: Vec<u64> = Vec::new();
    let status = json!({
        "now": null,
        "target_per_minute": TARGET_PER_MINUTE,
        "max_active": null,
        "min_percentage": "0.01", "max_percentage": "100",
        "allow_percentage": null,
        "last_write": null,
        "writes_total": 0, "write_failures_total": 0,
        "lines_total": 0, "bad_lines_total": 0,
        "dry_run": true,
        "sink": "config-file /srv/room/config.json",
        "waiting_estimate": null,
        "active_sessions": null,
        "series": {
            "t": empty, "arrivals": empty, "draws": empty, "admissions": empty,
            "renewals": empty, "releases": empty, "active": empty, "percentage": empty,
        },
    });
    let texts = [
        "DRY RUN",
        "not written yet",
        "none yet",
        "no maximum set",
        "No log record yet",
        "no data yet",
    ]
    .map(String::from);
    let charts = [
        "New sessions per second, last 0 s: new sessions no data; target 50.",
        "Active sessions, last 0 s: active sessions no data.",
    ];
    // Behind a prefix, at the controller's other path: status.json is relative.
    let absent = ["NaN", "undefined", "null", "Infinity"];
    run_dashboard(
        "dashboard-empty",
        "/ops/room/",
        status,
        &texts,
        &charts,
        &absent,
    );
}

#[test]
fn in_fifo_mode_the_dashboard_shows_the_cutoff_and_its_rate_and_passes_axe() {
    // The same crowd, held by the FIFO rule: the cutoff in effect trails the log's
    // clock by a wait that grows as the crowd waits, then shrinks.
    let mut status = flash_crowd();
    let t: Vec<u64> = status["series"]["t"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let cutoff: Vec<Option<u64>> = t
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let behind = if i < 120 {
                20
            } else {
                20 + (i as u64 - 120) / 4
            };
            (i >= 10).then_some((t - behind) * 1000 + 250)
        })
        .collect();
    let last = cutoff.last().copied().flatten().unwrap();
    status["queueing"] = json!("fifo");
    status["allow_percentage"] = Value::Null;
    status["series"]["percentage"] = json!(vec![Value::Null; WINDOW]);
    status["series"]["cutoff"] = json!(cutoff);
    status["fifo"] = json!({
        "cutoff": last + 4_000,
        "cutoff_wanted": last + 4_000,
        "cutoff_in_effect": last,
        "rate": "1.625",
        "rate_wanted": "1.625",
        "show_up": 0.982,
        "show_up_stale": 0.1,
        "propagation_seconds": 30,
        "ahead": 15000,
        "not_fifo_lines": 0,
    });
    let texts = [
        "FIFO cutoff written".to_string(),
        "rate 1.625 ms/s".into(),
        "show-up 0.98".into(),
        format!("target {}", with_commas(TARGET_PER_MINUTE)),
        "15,234".into(),
    ];
    let charts = [
        "New sessions per second, last 600 s: new sessions latest",
        "FIFO cutoff in effect, behind the log's clock, last 600 s: cutoff behind latest 138.75",
    ];
    let absent = ["Allow percentage", "NaN", "undefined", "Connection lost"];
    run_dashboard("dashboard-fifo", "/", status, &texts, &charts, &absent);
}

/// Serves the page under `prefix` with `status`, runs the script on it (the page must
/// show `texts`, its charts' text alternatives `charts`, and none of `absent`) and
/// checks its screenshots; the artifacts go to `artifacts/<name>/`.
fn run_dashboard(
    name: &str,
    prefix: &str,
    status: Value,
    texts: &[String],
    charts: &[&str],
    absent: &[&str],
) {
    let Some(driver) = browser::driver_dir(&format!("the dashboard test {name}")) else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = fs::read(root.join("tools/wrctl/static/dashboard.html")).unwrap();
    let (addr, polls) = serve(prefix, page, serde_json::to_vec(&status).unwrap());

    let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    let checks = browser::DashboardChecks {
        texts: &texts,
        charts,
        absent,
    };
    let out = root.join("artifacts").join(name);
    browser::check_dashboard(
        &driver,
        &format!("http://{addr}{prefix}"),
        &out,
        &checks,
        SCRIPT_BOUND,
    );
    // One poll per width, then again once the connection is restored.
    let polls = polls.load(Ordering::Relaxed);
    assert!(polls >= 3, "the page fetched status.json {polls} times");
}

/// A loopback server of the page (at `prefix` and `prefix` + `dashboard`) and of
/// `prefix` + `status.json`, in a thread that lives as long as the test; it counts
/// the fetches of status.json.
fn serve(prefix: &str, page: Vec<u8>, status: Vec<u8>) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let polls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&polls);
    let (page, status, prefix) = (Arc::new(page), Arc::new(status), prefix.to_string());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (page, status, prefix, counter) = (
                Arc::clone(&page),
                Arc::clone(&status),
                prefix.clone(),
                Arc::clone(&counter),
            );
            // A thread each: Chromium may open a connection it sends nothing on.
            std::thread::spawn(move || {
                let _ = answer(stream, &prefix, &page, &status, &counter);
            });
        }
    });
    (addr, polls)
}

fn answer(
    stream: TcpStream,
    prefix: &str,
    page: &[u8],
    status: &[u8],
    polls: &AtomicUsize,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let path = request.split(' ').nth(1).unwrap_or("");
    let path = path.split('?').next().unwrap_or("");
    let (code, kind, body): (&str, &str, &[u8]) =
        if path == prefix || path == format!("{prefix}dashboard") {
            ("200 OK", "text/html; charset=utf-8", page)
        } else if path == format!("{prefix}status.json") {
            polls.fetch_add(1, Ordering::Relaxed);
            ("200 OK", "application/json", status)
        } else {
            ("404 Not Found", "text/plain", b"not found")
        };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {code}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

/// Ten minutes of a flash crowd, as the controller reports it: a quiet start, the
/// crowd at the second minute, the percentage in effect falling from 100 % until new
/// sessions hold the target, then steady at 12.5 %; the percentage is unknown for the
/// first half-minute and during a short gap in the log.
fn flash_crowd() -> Value {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut noise = move |spread: f64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 10_000) as f64 / 10_000.0 * spread - spread / 2.0
    };
    let target = TARGET_PER_MINUTE as f64 / 60.0;
    let first = NOW - WINDOW as u64 + 1;
    let (mut t, mut arrivals, mut draws, mut admissions) = (vec![], vec![], vec![], vec![]);
    let (mut renewals, mut releases, mut active, mut percentage) = (vec![], vec![], vec![], vec![]);
    let mut live = 2400.0_f64;
    for i in 0..WINDOW {
        let s = i as f64;
        let crowd = if i < 120 {
            45.0
        } else {
            45.0 + 400.0 * (-(s - 120.0) / 200.0).exp() + 90.0
        };
        let arriving = (crowd + noise(crowd * 0.3)).max(0.0).round();
        // The controller's answer: 100 % while the target holds, then down to 12.5 %.
        let pct = if i < 125 {
            100.0
        } else if i < 245 {
            100.0 - (100.0 - 12.5) * (1.0 - (-(s - 125.0) / 30.0).exp())
        } else {
            12.5
        };
        // New sessions overshoot while the percentage comes down, then hold the target.
        let admitted = if i < 120 {
            target * 0.8 + noise(10.0)
        } else if i < 300 {
            target * (1.0 + 4.0 * (-(s - 120.0) / 30.0).exp()) + noise(12.0)
        } else {
            target + noise(12.0)
        }
        .max(0.0)
        .round();
        // The lottery draws the visitors whose turn has come; pct % of draws win.
        let drawing = (admitted * 100.0 / pct + noise(6.0)).max(admitted).round();
        live += admitted - live / 60.0;
        t.push(first + i as u64);
        arrivals.push(arriving as u64);
        draws.push(drawing as u64);
        admissions.push(admitted as u64);
        renewals.push((live / 30.0).round() as u64);
        releases.push(u64::from(i.is_multiple_of(7)));
        active.push(if i + 1 == WINDOW {
            2890
        } else {
            live.round() as u64
        });
        let known = i >= 30 && !(400..405).contains(&i);
        percentage.push(known.then_some(pct));
    }
    json!({
        "now": NOW,
        "target_per_minute": TARGET_PER_MINUTE,
        "max_active": 20000,
        "min_percentage": "0.01", "max_percentage": "100",
        "allow_percentage": "12.5",
        "last_write": NOW - 3,
        "writes_total": 12, "write_failures_total": 0,
        "lines_total": 123_456, "bad_lines_total": 3,
        "dry_run": false,
        "sink": "config-file /srv/room/config.json",
        "waiting_estimate": 15234,
        "active_sessions": 2890,
        "series": {
            "t": t, "arrivals": arrivals, "draws": draws, "admissions": admissions,
            "renewals": renewals, "releases": releases, "active": active,
            "percentage": percentage,
        },
    })
}

/// `1234567` as `1,234,567`, as the page writes numbers.
fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
