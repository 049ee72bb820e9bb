//! The room in a real browser: headless Chromium (Debian's `chromium`), driven by
//! playwright-core from `tests/browser/waiting_room.mjs`, opens a protected URL, sees
//! the waiting page and is let in by the page's own `Refresh` header; the test never
//! reloads. On the way, axe-core checks the waiting page at a phone and a desktop
//! width. The screenshots and the script's output stay in `artifacts/` after the run.
//! Chromium connects from 127.0.0.1, so all its requests are one visitor. Without
//! Chromium, Node.js or the npm packages the test fails, unless
//! `WAITING_ROOM_SKIP_BROWSER=1` asks to skip it.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use control::record::Record;
use demo_origin::ORIGIN_MARKER;
use support::browser::{self, assert_screenshot};
use support::challenge_server::{ChallengeServer, StandIn};
use support::viceroy_room::{Room, RoomSpec};
use waiting_room::admission::decision::Decision;

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
    let Some(driver) = browser::driver_dir("the browser test of the waiting page") else {
        return;
    };

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
    let phone_png = artifacts.join("waiting-page-phone.png");
    let origin_png = artifacts.join("origin.png");
    let log = artifacts.join("browser.log");
    for stale in [&waiting_png, &phone_png, &origin_png] {
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
    let status = browser::run_bounded(command, &log, SCRIPT_BOUND);
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
    let phone = assert_screenshot(&phone_png);
    let origin = assert_screenshot(&origin_png);
    assert_ne!(waiting, phone, "the phone screenshot is the desktop one");
    assert_ne!(waiting, origin, "both screenshots show the same thing");

    // The room saw one visitor start waiting, then win its draw on a refresh.
    let lines = room.log_lines();
    let events = |decision: Decision| {
        lines.iter().any(|l| {
            l.parse::<Record>()
                .is_ok_and(|r| r.decision == Some(decision) && r.uid == "127.0.0.1")
        })
    };
    assert!(
        events(Decision::Anon) && events(Decision::Allow),
        "log:\n{}",
        lines.join("\n")
    );
}

/// With the bot toll on, the waiting page pays it in the background
/// and its own refresh carries the payment to the draw: the browser is admitted
/// without a click, and the page passes axe-core while its check runs.
#[test]
fn a_browser_pays_the_bot_toll_by_itself_and_is_let_in() {
    let Some(driver) = browser::driver_dir("the browser test of the bot toll") else {
        return;
    };
    let room = Room::start(&[
        ("wait_period_duration", "2"),
        ("allow_percentage", "90"),
        ("redeem_window", "10"),
        ("bot_toll_bits", "12"),
    ]);
    let (_, lines) = browse_to_the_origin(
        &driver,
        &room,
        "toll",
        &["--expect=your browser is running a short automatic check"],
    );
    // The browser paid on a request of its own, and its draw was never held.
    let mine = |needle: &str| browsers_line(&lines, needle);
    assert!(mine("toll=paid"), "{}", lines.join("\n"));
    assert!(mine("decision=allow"), "{}", lines.join("\n"));
    assert!(!mine("toll-unpaid"), "{}", lines.join("\n"));
}

/// With an external challenge, the waiting page shows the provider's widget; a fake
/// of the widget's script (served by the driver in place of the provider's, which
/// the tests cannot reach) hands the page's callback Turnstile's documented dummy
/// token, the callback puts it in the toll cookie, and the page's own refresh
/// carries it to the draw, where the room verifies it with the local stand-in of
/// `siteverify`: the browser is let in without a click.
#[test]
fn a_browser_passes_the_external_challenge_and_is_let_in() {
    let Some(driver) = browser::driver_dir("the browser test of the external challenge") else {
        return;
    };
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    let config = [
        ("wait_period_duration", "2"),
        ("allow_percentage", "90"),
        ("redeem_window", "10"),
        (
            "bot_challenge",
            r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#,
        ),
    ];
    let secrets = [(
        "1x00000000000000000000AA",
        "1x0000000000000000000000000000000AA",
    )];
    let room = Room::launch(RoomSpec {
        config: &config,
        challenge_server: Some(&server),
        challenge_secrets: Some(&secrets),
        ..RoomSpec::default()
    });
    let (output, lines) = browse_to_the_origin(
        &driver,
        &room,
        "challenge",
        &[
            "--challenge-token=XXXX.DUMMY.TOKEN.XXXX",
            "--expect=please complete the check below",
        ],
    );
    assert!(output.contains("fake widget served"), "{output}");
    let mine = |needle: &str| browsers_line(&lines, needle);
    assert!(mine("challenge=passed"), "{}", lines.join("\n"));
    assert!(mine("decision=allow"), "{}", lines.join("\n"));
    assert!(!mine("challenge=failed"), "{}", lines.join("\n"));
    assert_eq!(server.violations(), [], "{:#?}", server.requests());
}

/// The waiting page's two solvers of the bot toll, its WebAssembly module and the
/// WebCrypto fallback, each alone, find exactly the nonce the room's own solver finds,
/// also from a saved count (a reload); the module inlined imports nothing. The pages
/// stay in `artifacts/toll-solver/` with one to time the solvers on (see
/// `tests/browser/toll_solver.mjs`, `--rate`).
#[test]
fn both_toll_solvers_of_the_page_find_the_rooms_nonce() {
    use waiting_room::bots::toll;
    use waiting_room::pages::page::Page;
    use waiting_room::pages::view::{Status, TollChallenge};

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(driver) = browser::driver_dir("the browser test of the toll's solvers") else {
        return;
    };
    let dir = root.join("artifacts").join("toll-solver");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let page = |signature: &[u8; 32], bits: u8| {
        let status = Status {
            page: Page::KeepWaiting,
            decision: Some(Decision::Wait),
            now: 1_700_000_000,
            allow_percentage: waiting_room::settings::percentage::Percentage::whole(12),
            wait_period_duration: 30,
            refresh_after: None,
            estimate: None,
            queueing_method: waiting_room::settings::config::QueueingMethod::Random,
            place: None,
            toll: Some(TollChallenge {
                challenge: toll::challenge(signature),
                bits,
                cookie: "waiting_toll".to_string(),
            }),
            challenge: None,
        };
        status.render(Page::KeepWaiting.default_html().as_bytes())
    };
    let mut expected = serde_json::Map::new();
    for (i, bits) in [1u8, 8, 11, 12, 13].into_iter().enumerate() {
        let signature = [0x5a ^ i as u8; 32];
        let file = format!("toll-b{bits:02}-{i}.html");
        fs::write(dir.join(&file), page(&signature, bits)).unwrap();
        expected.insert(file, toll::solve(&signature, bits).into());
    }
    fs::write(
        dir.join("expected.json"),
        serde_json::Value::Object(expected).to_string(),
    )
    .unwrap();
    // Not solved in any likely time: for the hashes per second.
    fs::write(dir.join("rate.html"), page(&[0xa5; 32], 32)).unwrap();
    let log = dir.join("solvers.log");
    let mut command = Command::new("node");
    command
        .current_dir(&driver)
        .arg("toll_solver.mjs")
        .arg(format!("--dir={}", dir.display()));
    let status = browser::run_bounded(command, &log, Duration::from_secs(180));
    let output = fs::read_to_string(&log).unwrap_or_default();
    assert!(status.is_some_and(|s| s.success()), "{output}");
    assert!(output.contains("5 pages solved by each solver"), "{output}");
}

/// Every built-in page in every language the room speaks, filled in as a waiting
/// visitor sees it, passes axe-core (WCAG 2.1 A and AA) at a phone and a desktop width
/// in headless Chromium, and says its language.
#[test]
fn every_built_in_page_in_every_language_is_accessible() {
    use waiting_room::pages::page::Page;
    use waiting_room::pages::view::Status;
    use waiting_room::settings::config::QueueingMethod;
    use waiting_room::settings::language::Language;
    use waiting_room::settings::percentage::Percentage;

    let Some(driver) = browser::driver_dir("the browser test of the built-in pages") else {
        return;
    };
    let dir = tempfile_dir();
    let pages = [
        (Page::StartWaiting, "startwaiting", Some(Decision::Anon)),
        (Page::KeepWaiting, "keepwaiting", Some(Decision::Wait)),
        (Page::Deny, "deny", Some(Decision::Deny)),
        (Page::Ended, "ended", Some(Decision::Deny)),
        (Page::OriginUnavailable, "unavailable", None),
    ];
    // The waiting pages once more while their bot toll is being paid: 30 bits keep
    // the page's script at work through every check.
    let toll = waiting_room::pages::view::TollChallenge {
        challenge: "ab".repeat(32),
        bits: 30,
        cookie: "waiting_toll".to_string(),
    };
    let variants = pages
        .into_iter()
        .map(|(page, name, decision)| (page, name.to_string(), decision, None))
        .chain(pages[..2].iter().map(|&(page, name, decision)| {
            (page, format!("{name}-toll"), decision, Some(toll.clone()))
        }));
    let variants: Vec<_> = variants.collect();
    for language in Language::ALL {
        for (page, name, decision, toll) in variants.iter().cloned() {
            let waiting = page.refreshes();
            let status = Status {
                page,
                decision,
                now: 1_700_000_000,
                allow_percentage: Percentage::whole(12),
                wait_period_duration: 30,
                refresh_after: waiting.then_some(31),
                estimate: waiting
                    .then(|| {
                        waiting_room::admission::estimate::estimate(31, Percentage::whole(12), 30)
                    })
                    .flatten(),
                queueing_method: QueueingMethod::Random,
                place: None,
                toll: toll.clone(),
                challenge: None,
            };
            let html = status.render(page.default_html_in(language).as_bytes());
            let text = String::from_utf8(html.clone()).unwrap();
            let comments = if toll.is_some() { 2 } else { 0 };
            assert!(
                !text.contains("{{") && text.matches("<!--").count() == comments,
                "{language:?} {name}"
            );
            assert_eq!(
                text.contains("id=\"toll\""),
                toll.is_some(),
                "{language:?} {name}"
            );
            fs::write(dir.join(format!("{}-{name}.html", language.code())), html).unwrap();
        }
    }
    let log = dir.join("pages.log");
    let mut command = Command::new("node");
    command
        .current_dir(&driver)
        .arg("pages.mjs")
        .arg(format!("--dir={}", dir.display()));
    let status = browser::run_bounded(command, &log, Duration::from_secs(180));
    let output = fs::read_to_string(&log).unwrap_or_default();
    assert!(status.is_some_and(|s| s.success()), "{output}");
    assert!(output.contains("42 pages checked"), "{output}");
    let _ = fs::remove_dir_all(&dir);
}

/// A fresh directory under the system's temporary one.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("waiting-room-pages-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// `waiting_room.mjs` in headless Chromium against `room`, until the origin shows
/// (artifacts in `artifacts/<name>/`, `extra` options passed on): the script's
/// output and the room's log lines, once it succeeded.
fn browse_to_the_origin(
    driver: &Path,
    room: &Room,
    name: &str,
    extra: &[&str],
) -> (String, Vec<String>) {
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("artifacts")
        .join(name);
    fs::create_dir_all(&artifacts).unwrap();
    let log = artifacts.join("browser.log");
    let mut command = Command::new("node");
    command
        .current_dir(driver)
        .arg("waiting_room.mjs")
        .arg(format!("--url=http://{}/events", room.addr))
        .arg(format!("--out={}", artifacts.display()))
        .arg(format!("--origin-text={ORIGIN_MARKER}"))
        .arg(format!("--timeout-secs={ORIGIN_WITHIN_SECS}"))
        .args(extra);
    let status = browser::run_bounded(command, &log, SCRIPT_BOUND);
    let output = fs::read_to_string(&log).unwrap_or_default();
    let lines = room.log_lines();
    assert!(
        status.is_some_and(|s| s.success()),
        "the browser script:\n{output}\nthe room's log:\n{}",
        lines.join("\n")
    );
    (output, lines)
}

/// Whether one of the room's `lines` for the browser (127.0.0.1) says `needle`.
fn browsers_line(lines: &[String], needle: &str) -> bool {
    lines
        .iter()
        .any(|l| l.contains("uid=127.0.0.1 ") && l.contains(needle))
}
