//! Black-box tests: the built wasm in Viceroy, a real demo origin, real HTTP from
//! several 127.0.0.x visitors. Tokens in a given state come from the tests' own minter.

use crate::{
    DENY_PAGE, KEEP_PAGE, START_PAGE, UNAVAILABLE_PAGE, assert_logged, assert_logged_but_not,
    origin_saw_cookie, wait_token_wins, winning_exp,
};
use control::origin_rule::OriginAnswer;
use control::record::Record;
use demo_origin::{Capacity, ORIGIN_MARKER, Origin};
use support::http::Response;
use support::mint;
use support::viceroy_room::{Backend, KEY1, KEY2, Room, now};

/// Checks `value` is a wait token for `uid`, signed by key1, on the address's draw
/// grid (the first point of `FNV-1a(uid) mod 2d` at least `d` ahead); returns its exp.
fn assert_wait_token(value: &str, uid: &str, wait: u64) -> u64 {
    let text = mint::open(value);
    let (signed, sig) = text.split_once("&sig=").unwrap();
    assert_eq!(sig, mint::vcl_sig(KEY1, signed), "signature of {text}");
    let exp: u64 = signed
        .strip_prefix("dec=wait&exp=")
        .and_then(|r| r.split('&').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        signed.ends_with(&format!("&uid={uid}&kid=key1")),
        "{signed}"
    );
    let t = now();
    // The request was made within the last few seconds: one of those seconds' point.
    let points: Vec<u64> = (t.saturating_sub(3)..=t)
        .map(|at| mint::address_exp(at, uid, wait))
        .collect();
    assert!(
        points.contains(&exp),
        "exp {exp} now {t}: expected one of {points:?}"
    );
    exp
}

/// Checks the page refreshes to `url` when the token `exp` becomes eligible (on the
/// address grid the point itself spreads visitors: no extra phase), with
/// `Retry-After` alike; `before` is a clock reading taken before the request.
fn assert_refresh_at_eligibility(r: &Response, url: &str, exp: u64, before: u64) {
    let refresh = r.header("refresh").unwrap();
    let (secs, target) = refresh.split_once("; url=").unwrap();
    assert_eq!(target, url);
    let secs: u64 = secs.parse().unwrap();
    let latest = exp + 1 - before;
    assert!(
        (latest.saturating_sub(2)..=latest).contains(&secs),
        "Refresh {secs}, expected about {latest} (exp {exp})"
    );
    assert_eq!(r.header("retry-after"), Some(secs.to_string().as_str()));
}

#[test]
fn new_visitor_gets_the_start_page_and_a_wait_cookie() {
    let room = Room::start(&[]);
    let before = now();
    let r = room.get(2, "/events/launch?id=7", &[]);
    assert_eq!(r.status, 200);
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let set = r.all("set-cookie");
    assert_eq!(set.len(), 1);
    assert!(
        set[0].ends_with("; path=/; max-age=7200; HttpOnly; SameSite=Lax"),
        "{}",
        set[0]
    );
    let exp = assert_wait_token(&r.room_cookie().unwrap(), "127.0.0.2", 30);
    assert_refresh_at_eligibility(&r, "/events/launch?id=7", exp, before);
    assert_logged(&room, &["decision=anon uid=127.0.0.2"]);
}

#[test]
fn fixed_refresh_mode_keeps_the_vcl_grid() {
    let room = Room::start(&[("refresh_mode", "fixed")]);
    let r = room.get(2, "/events/launch?id=7", &[]);
    assert_eq!(r.header("refresh"), Some("30; url=/events/launch?id=7"));
    assert_eq!(r.header("retry-after"), Some("30"));
}

#[test]
fn a_crowd_arriving_together_comes_back_spread_over_the_slot() {
    let room = Room::start(&[]);
    let mut refresh: Vec<u64> = (2..=41)
        .map(|visitor| {
            let r = room.get(visitor, "/events", &[]);
            r.header("retry-after").unwrap().parse().unwrap()
        })
        .collect();
    refresh.sort_unstable();
    refresh.dedup();
    // 40 visitors in (nearly) the same second: the VCL sends them all back at once;
    // their addresses' draw grids spread them over the 60 s draw period.
    assert!(
        refresh.len() >= 12,
        "only {} distinct refresh times: {refresh:?}",
        refresh.len()
    );
}

#[test]
fn one_client_gets_one_token_per_slot_and_clients_get_different_tokens() {
    // The VCL's grid. Hour-long slots, and never within 3 s of a slot's end, so
    // both requests share a slot.
    let room = Room::start(&[("wait_period_duration", "3600"), ("draw_grid", "global")]);
    while now() % 3600 > 3596 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let first = room.get(2, "/events", &[]).room_cookie().unwrap();
    let again = room.get(2, "/checkout", &[]).room_cookie().unwrap();
    let third = room.get(3, "/events", &[]).room_cookie().unwrap();
    let fourth = room.get(4, "/events", &[]).room_cookie().unwrap();
    assert_eq!(first, again);
    assert_ne!(first, third);
    assert_ne!(third, fourth);
    for (value, uid) in [(&third, "127.0.0.3"), (&fourth, "127.0.0.4")] {
        let text = mint::open(value);
        let exp = mint::number(&text, "exp");
        assert_eq!(exp, mint::global_exp(now(), 3600), "{uid}: {text}");
    }
}

#[test]
fn every_device_behind_an_address_holds_its_one_token_per_draw() {
    // Devices joining over the draw period before a point all get that point's
    // token (hour-long periods; never within 3 s of the moment the next point
    // takes over, `point - d`).
    let room = Room::start(&[("wait_period_duration", "3600")]);
    let uid = "127.0.0.2";
    while mint::address_exp(now() + 3, uid, 3600) != mint::address_exp(now(), uid, 3600) {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let phone = room.get(2, "/events", &[]).room_cookie().unwrap();
    let laptop = room
        .get(2, "/checkout", &[("User-Agent", "laptop")])
        .room_cookie()
        .unwrap();
    assert_eq!(phone, laptop);
    assert_wait_token(&phone, uid, 3600);
    let neighbour = room.get(3, "/events", &[]).room_cookie().unwrap();
    assert_ne!(phone, neighbour);
}

#[test]
fn unexpired_wait_token_keeps_waiting_without_set_cookie() {
    let room = Room::start(&[]);
    let before = now();
    let exp = before + 600;
    let token = mint::mint(KEY1, "wait", exp, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert_eq!(r.status, 200);
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert!(r.all("set-cookie").is_empty());
    assert_refresh_at_eligibility(&r, "/events", exp, before);
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
    assert_logged(&room, &["decision=wait"]);
}

#[test]
fn expired_wait_tokens_are_a_deterministic_mix_of_admit_and_rewait() {
    let room = Room::start(&[("allow_percentage", "50")]);
    let (mut admitted, mut rewaited) = (0, 0);
    for visitor in 5..29u8 {
        let uid = format!("127.0.0.{visitor}");
        // Expired, but within the redeem window (one wait period).
        let exp = now() - 2 - u64::from(visitor % 10);
        let wins = wait_token_wins(exp, &uid, 50);
        let token = mint::mint(KEY1, "wait", exp, &uid, "key1");
        for _ in 0..2 {
            let r = room.get_with_cookie(visitor, "/events", &format!("waiting_room={token}"));
            let renewed = mint::open(&r.room_cookie().unwrap());
            if wins {
                assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
                assert!(renewed.starts_with("dec=allow&"), "{renewed}");
                assert_logged(&room, &["transition=lottery-won"]);
            } else {
                assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
                assert!(renewed.starts_with("dec=wait&"), "{renewed}");
                assert_logged(&room, &["transition=lottery-lost"]);
            }
        }
        if wins { admitted += 1 } else { rewaited += 1 }
    }
    assert!(
        admitted > 0 && rewaited > 0,
        "{admitted} admitted, {rewaited} re-waited"
    );
}

/// With `pop_new_sessions_per_minute` set the edge opens its rate counter and
/// penalty box on every draw; Viceroy's read zero, so the ceiling (whose rule
/// the native tests pin) holds nobody here, and nothing fails.
#[test]
fn the_pops_ceiling_uses_the_edges_counters_and_locally_holds_nobody() {
    let room = Room::start(&[
        ("allow_percentage", "99"),
        ("pop_new_sessions_per_minute", "1"),
    ]);
    let mut admitted = 0;
    for visitor in 30..34u8 {
        let uid = format!("127.0.0.{visitor}");
        let Some(exp) = winning_exp(now() - 20..now() - 2, &uid, 99) else {
            continue;
        };
        let token = mint::mint(KEY1, "wait", exp, &uid, "key1");
        let r = room.get_with_cookie(visitor, "/events", &format!("waiting_room={token}"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
        assert_logged(&room, &["transition=lottery-won"]);
        admitted += 1;
    }
    assert!(admitted >= 2, "{admitted} admitted");
}

#[test]
fn a_winning_wait_token_replayed_after_its_window_does_not_admit() {
    // At 99 % almost every token wins its draw (at 100 % there is no draw at all).
    let room = Room::start(&[("allow_percentage", "99")]);
    let exp = winning_exp(now() - 400..now() - 100, "127.0.0.2", 99).unwrap();
    let token = mint::mint(KEY1, "wait", exp, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert!(mint::open(&r.room_cookie().unwrap()).starts_with("dec=wait&"));
    assert_logged(&room, &["decision=re-wait"]);
    assert_logged(&room, &["transition=redeem-window-passed"]);
}

/// One win, one session: a winning wait token presented twice, seconds apart,
/// on new connections (other source ports) and beside other cookies (another
/// tab), gets the byte-identical allow cookie: its session runs from the draw's
/// first second, `exp + 1`, not from the second of the request.
#[test]
fn a_winning_wait_token_presented_twice_seconds_apart_gets_one_allow_cookie() {
    let room = Room::start(&[("allow_percentage", "99")]);
    // Expired 10–20 s ago: both presentations fall inside the 30 s redeem window.
    let t0 = now();
    let exp = winning_exp(t0 - 20..t0 - 10, "127.0.0.2", 99).unwrap();
    let token = mint::mint(KEY1, "wait", exp, "127.0.0.2", "key1");
    let first = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    let first_at = now();
    while now() < first_at + 2 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let second = room.get_with_cookie(
        2,
        "/events/other-tab",
        &format!("theme=dark; waiting_room={token}"),
    );
    for r in [&first, &second] {
        assert_eq!(r.status, 200);
        assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    }
    let allow = |r: &Response| {
        r.all("set-cookie")
            .into_iter()
            .find(|c| c.starts_with("waiting_room="))
            .map(str::to_string)
            .expect("an allow cookie")
    };
    assert_eq!(allow(&first), allow(&second));
    let text = mint::open(&first.room_cookie().unwrap());
    assert_eq!(
        text,
        format!(
            "dec=allow&exp={}&uid=127.0.0.2&kid=key1&sig={}",
            exp + 1 + 3600,
            mint::vcl_sig(
                KEY1,
                &format!("dec=allow&exp={}&uid=127.0.0.2&kid=key1", exp + 1 + 3600)
            )
        )
    );
    // Two lines, each a new session (the edge keeps nothing), seconds apart, with
    // one `exp`: a reader counting allow tokens counts one session.
    let lines: Vec<String> = room
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("session=new transition=lottery-won"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let field = |line: &str, name: &str| -> u64 {
        line.split(&format!(" {name}="))
            .nth(1)
            .and_then(|v| v.split(' ').next())
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        field(&lines[1], "t") >= field(&lines[0], "t") + 2,
        "{lines:#?}"
    );
    assert_eq!(field(&lines[0], "exp"), exp + 1 + 3600);
    assert_eq!(field(&lines[1], "exp"), exp + 1 + 3600);
}

#[test]
fn allowed_visitor_reaches_the_origin_without_the_room_cookie() {
    let room = Room::start(&[]);
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let r = room.get_with_cookie(
        2,
        "/checkout/pay",
        &format!("session=abc; waiting_room={token}; theme=dark"),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        origin_saw_cookie(&r.body).as_deref(),
        Some("session=abc; theme=dark")
    );
    // The origin's own cookie is kept, the renewed allow cookie appended beside it.
    let set = r.all("set-cookie");
    assert_eq!(set.len(), 2, "{set:?}");
    assert!(set.contains(&"demo_origin=1; Path=/"));
    let renewed = mint::open(&r.room_cookie().unwrap());
    let exp: u64 = renewed["dec=allow&exp=".len()..][..10].parse().unwrap();
    assert!(exp >= now() + 3600 - 5, "session slides: {renewed}");
    // The origin said public, max-age=60; a response that sets the cookie must not be cached.
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
}

/// What the controller reads of the room's last line about the origin.
fn last_origin_answer(room: &Room) -> Option<OriginAnswer> {
    let line = room.last_log_line();
    line.parse::<Record>()
        .unwrap_or_else(|e| panic!("unreadable log line ({e}): {line}"))
        .origin
}

#[test]
fn every_forwarded_request_logs_the_origins_time_and_status_admitted_or_bypassed() {
    let room = Room::start(&[("protected_paths", "/events,/__origin/")]);
    let token = mint::mint(KEY1, "allow", now() + 3000, "127.0.0.2", "key1");
    let cookie = format!("waiting_room={token}");
    for (path, decision) in [("/events", "decision=allow"), ("/about", "decision=bypass")] {
        let r = room.get_with_cookie(2, path, &cookie);
        assert!(r.body.contains(ORIGIN_MARKER), "{path}: {}", r.body);
        let line = room.last_log_line();
        assert!(line.contains(decision), "{line}");
        // After the path; no cache in Viceroy: every answer is the origin's.
        let origin = line.split_once(&format!(" path={path} ")).map(|(_, o)| o);
        assert!(
            origin.is_some_and(|o| o.starts_with("origin_ms=") && o.contains(" origin_status=200")),
            "{line}"
        );
        assert!(!line.contains("origin=cache"), "{line}");
        assert!(
            matches!(
                last_origin_answer(&room),
                Some(OriginAnswer::Answered { status: 200, .. })
            ),
            "{line}"
        );
    }
    // The time is the origin's, to its headers: a slow answer logs at least its wait.
    let r = room.get_with_cookie(2, "/__origin/slow/400/x", &cookie);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    match last_origin_answer(&room) {
        Some(OriginAnswer::Answered { ms, status: 200 }) => {
            assert!((400..5_000).contains(&ms), "{}", room.last_log_line())
        }
        other => panic!("{other:?}: {}", room.last_log_line()),
    }
}

#[test]
fn origin_gets_no_cookie_header_when_the_room_cookie_was_the_only_one() {
    let room = Room::start(&[]);
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert_eq!(origin_saw_cookie(&r.body), None);
}

#[test]
fn expired_allow_token_starts_waiting_again() {
    let room = Room::start(&[]);
    let token = mint::mint(KEY1, "allow", now() - 1, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_wait_token(&r.room_cookie().unwrap(), "127.0.0.2", 30);
    assert_logged(&room, &["decision=anon"]);
    assert_logged(&room, &["transition=session-expired"]);
}

#[test]
fn full_percentage_lets_everyone_in_with_an_allow_cookie() {
    let room = Room::start(&[("allow_percentage", "100")]);
    for visitor in [2, 3] {
        let r = room.get(visitor, "/events", &[]);
        assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
        assert!(mint::open(&r.room_cookie().unwrap()).starts_with("dec=allow&"));
    }
}

#[test]
fn zero_percentage_denies_and_deletes_the_cookie() {
    let room = Room::start(&[("allow_percentage", "0")]);
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert_eq!(r.status, 200);
    assert!(r.body.contains(DENY_PAGE), "{}", r.body);
    assert_eq!(r.header("refresh"), None);
    assert_eq!(
        r.all("set-cookie"),
        ["waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT"]
    );
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
}

#[test]
fn disabled_room_and_unprotected_paths_pass_through_without_the_room_cookie() {
    let token = mint::mint(KEY1, "wait", now() + 600, "127.0.0.2", "key1");
    let cookie = format!("a=1; waiting_room={token}");
    let disabled = Room::start(&[("enabled", "false")]);
    let enabled = Room::start(&[]);
    for (room, path) in [
        (&disabled, "/events"),
        (&enabled, "/about"),
        (&enabled, "/"),
    ] {
        let r = room.get_with_cookie(2, path, &cookie);
        assert!(r.body.contains(ORIGIN_MARKER), "{path}: {}", r.body);
        assert_eq!(origin_saw_cookie(&r.body).as_deref(), Some("a=1"));
        assert_eq!(r.room_cookie(), None);
        // Untouched: the origin's caching headers stand.
        assert_eq!(r.header("cache-control"), Some("public, max-age=60"));
        assert_logged(room, &["decision=bypass"]);
    }
}

/// The edge reads only the keys a request can use: a garbled FIFO setting is not
/// read, so not named, while the room draws at random; it is once the room queues
/// in order. (An edge that read every key would name it on both lines.)
#[test]
fn a_request_names_only_the_unusable_keys_it_read() {
    let room = Room::start(&[
        ("allow_percentage", "100"),
        ("fifo_cutoff", "garbled"),
        ("controller_timeout", "0"),
    ]);
    // The room applies: every key is read, the FIFO ones in random mode too.
    assert!(room.get(2, "/events", &[]).body.contains(ORIGIN_MARKER));
    assert_logged(
        &room,
        &[
            "decision=allow",
            " config_fallback=controller_timeout,fifo_cutoff origin_ms=",
        ],
    );
    // A bypass reads only the keys it needs.
    assert!(room.get(2, "/about", &[]).body.contains(ORIGIN_MARKER));
    assert_logged_but_not(&room, &["decision=bypass"], &["config_fallback"]);
}

#[test]
fn spoofed_client_ip_headers_change_nothing() {
    let room = Room::start(&[]);
    let spoof = [
        ("Fastly-Client-IP", "127.0.0.2"),
        ("X-Forwarded-For", "127.0.0.2"),
        ("True-Client-IP", "127.0.0.2"),
        ("Forwarded", "for=127.0.0.2"),
    ];
    // A new visitor's token names the connection's address, not the headers'.
    let r = room.get(3, "/events", &spoof);
    assert_wait_token(&r.room_cookie().unwrap(), "127.0.0.3", 30);
    // Visitor .2's allow token, presented from .3 with .2 in every header: refused.
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let mut headers = spoof.to_vec();
    let cookie = format!("waiting_room={token}");
    headers.push(("Cookie", &cookie));
    let r = room.get(3, "/events", &headers);
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_logged(
        &room,
        &[
            " uid=127.0.0.3 p=50 ",
            " path=/events rejected=uid-mismatch token_uid=127.0.0.2",
        ],
    );
}

#[test]
fn every_rejected_token_is_logged_with_its_reason() {
    let room = Room::start(&[]);
    let exp = now() + 600;
    let text = format!("dec=allow&exp={exp}&uid=127.0.0.2&kid=key1");
    let sig = mint::vcl_sig(KEY1, &text);
    let cases = [
        (
            mint::mint("wrong key", "allow", exp, "127.0.0.2", "key1"),
            "rejected=bad-signature",
        ),
        (
            mint::mint(KEY1, "allow", exp, "127.0.0.2", "nokey"),
            "rejected=unknown-key kid=nokey",
        ),
        (
            mint::mint(KEY1, "allow", exp, "127.0.0.9", "key1"),
            "rejected=uid-mismatch token_uid=127.0.0.9",
        ),
        (
            mint::encode(&format!("{text}&sig={}", sig.to_uppercase())),
            "rejected=malformed:sig",
        ),
        ("@@@".to_string(), "rejected=malformed:not-base64"),
    ];
    for (token, reason) in cases {
        let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
        assert!(r.body.contains(START_PAGE), "{reason}: {}", r.body);
        let line = room.last_log_line();
        assert!(
            line.contains("decision=anon") && line.contains(reason),
            "{line}"
        );
        // The log never carries the cookie itself.
        assert!(!line.contains(&token), "{line}");
    }
}

#[test]
fn allow_percentage_is_tuned_live() {
    let room = Room::start(&[("allow_percentage", "0")]);
    assert!(room.get(2, "/events", &[]).body.contains(DENY_PAGE));
    room.set_config("allow_percentage", "100");
    assert!(room.get(2, "/events", &[]).body.contains(ORIGIN_MARKER));
    room.set_config("allow_percentage", "not a number");
    let r = room.get(2, "/events", &[]);
    assert!(r.body.contains(ORIGIN_MARKER), "fails open");
    assert_logged(&room, &["config_fallback=allow_percentage"]);
    room.set_config("enabled", "false");
    room.set_config("allow_percentage", "0");
    assert!(room.get(2, "/events", &[]).body.contains(ORIGIN_MARKER));
}

#[test]
fn rotation_keeps_old_tokens_until_their_key_is_removed() {
    let room = Room::start(&[("active_key", "key2")]);
    let old = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={old}"));
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    let renewed = mint::open(&r.room_cookie().unwrap());
    let (signed, sig) = renewed.split_once("&sig=").unwrap();
    assert!(signed.ends_with("&kid=key2"), "{renewed}");
    assert_eq!(sig, mint::vcl_sig(KEY2, signed));

    // Emergency revocation: key1 goes, and every token it signed with it.
    room.remove_key("key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={old}"));
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_logged(&room, &["rejected=unknown-key kid=key1"]);
}

#[test]
fn unusable_active_key_serves_the_page_without_a_cookie_and_alerts() {
    let room = Room::start(&[("active_key", "key9")]);
    let r = room.get(2, "/events", &[]);
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert!(r.all("set-cookie").is_empty());
    assert_logged(&room, &["ALERT=active-key-unusable"]);
}

#[test]
fn pages_come_from_the_store_as_base64_or_from_an_origin_path() {
    let custom = mint::encode("<!doctype html><p>Custom start page</p>");
    let room = Room::start_with(
        &[],
        &[
            ("startwaiting", custom.as_str()),
            ("keepwaiting", "/__origin/page/keep"),
            ("deny", "this is not base64!"),
        ],
        Backend::DemoOrigin,
    );
    let r = room.get(2, "/events", &[]);
    assert!(r.body.contains("Custom start page"), "{}", r.body);
    assert!(r.room_cookie().is_some());

    let token = mint::mint(KEY1, "wait", now() + 600, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert!(
        r.body.contains("Origin-hosted waiting page: keep"),
        "{}",
        r.body
    );
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
    assert!(r.header("refresh").is_some());

    room.set_config("allow_percentage", "0");
    let r = room.get(2, "/events", &[]);
    assert!(
        r.body.contains(DENY_PAGE),
        "garbage falls back to the built-in page"
    );
    assert_logged(&room, &["page_fallback=NotBase64"]);
}

#[test]
fn origin_down_gives_a_clean_503_and_admitted_visitors_keep_their_cookie() {
    let room = Room::start_with(&[], &[], Backend::Down);
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert_eq!(r.status, 503);
    assert!(r.body.contains(UNAVAILABLE_PAGE), "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("30"));
    assert!(mint::open(&r.room_cookie().unwrap()).starts_with("dec=allow&"));
    for internal in ["panic", "backtrace", "wasm", "Error", "127.0.0.1"] {
        assert!(!r.body.contains(internal), "leaks {internal}: {}", r.body);
    }
    assert_logged_but_not(
        &room,
        &[" origin_error="],
        &["origin_ms=", "origin_status="],
    );
    assert_eq!(last_origin_answer(&room), Some(OriginAnswer::Failed));
    // Outside the room too, showing the stored settings (the edge read only the
    // bypass's few keys for the plan: the page reads them all).
    assert_eq!(room.get(2, "/about", &[]).status, 503);
    let json = room.get(2, "/about", &[("Accept", "application/json")]);
    assert_eq!(json.status, 503);
    assert!(
        json.body.contains(r#""allow_percentage":50,"#)
            && json.body.contains(r#""status":"unavailable""#),
        "{}",
        json.body
    );
}

#[test]
fn a_loaded_origin_is_slow_through_the_room_and_its_full_queue_is_logged() {
    use std::time::{Duration, Instant};
    // One request at a time, 300 ms each, none waiting: a second at once is refused.
    let capacity = Capacity::new(1)
        .with_service(Duration::from_millis(300))
        .with_queue(0);
    let origin = Origin::start_with("127.0.0.1:0", Some(capacity)).unwrap();
    let room = Room::start_with(
        &[("allow_percentage", "100")],
        &[],
        Backend::Origin(origin.addr()),
    );
    // Counted from here: Viceroy reaches the origin once as it starts.
    let served = origin.stats().served;
    let began = Instant::now();
    let r = room.get(2, "/events", &[]);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    assert!(began.elapsed() >= Duration::from_millis(300));
    // The line has the origin's time: its 300 ms of service.
    match last_origin_answer(&room) {
        Some(OriginAnswer::Answered { ms, status: 200 }) => assert!(ms >= 300, "{ms}"),
        other => panic!("{other:?}: {}", room.last_log_line()),
    }
    // Held while the origin serves another: the admitted visitor gets the room's page.
    // The other is a slow answer (the place held 2 s more), so the visitor's request
    // reaches the origin while it is held however slowly Viceroy starts it.
    let held = std::thread::spawn({
        let addr = origin.addr();
        move || support::http::get(addr, 3, "/__origin/slow/2000/held", &[]).status
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while origin.stats().in_flight == 0 {
        assert!(Instant::now() < deadline, "{:?}", origin.stats());
        std::thread::sleep(Duration::from_millis(2));
    }
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.4", "key1");
    let r = room.get_with_cookie(4, "/events", &format!("waiting_room={token}"));
    assert_eq!(r.status, 503);
    assert!(r.body.contains(UNAVAILABLE_PAGE), "{}", r.body);
    assert!(
        matches!(
            last_origin_answer(&room),
            Some(OriginAnswer::Answered { status: 503, .. })
        ),
        "{}",
        room.last_log_line()
    );
    assert_eq!(held.join().unwrap(), 200);
    let stats = origin.stats();
    assert_eq!((stats.served, stats.refused), (served + 2, 1));
}

#[test]
fn a_cookie_header_without_the_room_cookie_reaches_the_origin_as_sent() {
    let room = Room::start(&[("allow_percentage", "100")]);
    for path in ["/events", "/about"] {
        let r = room.get_with_cookie(2, path, "b=2;a=1 ;  c=\"x y\"");
        assert_eq!(
            origin_saw_cookie(&r.body).as_deref(),
            Some("b=2;a=1 ;  c=\"x y\""),
            "{path}"
        );
    }
}

#[test]
fn the_waiting_page_shows_the_visitors_estimate() {
    let room = Room::start(&[]);
    let r = room.get(2, "/events", &[]);
    assert!(
        r.body.contains("Half of visitors get in within"),
        "{}",
        r.body
    );
    assert!(!r.body.contains("{{"), "unfilled variable: {}", r.body);
    // 30 s slots at 50 %: the median visitor gets in at the first draw, 31–61 s away.
    let median = r.body.split("get in within</dt><dd>").nth(1).unwrap();
    let median = median.split("</dd>").next().unwrap();
    assert!(
        median.ends_with(" s") || median.contains("1 min"),
        "{median}"
    );
    let countdown = r.body.split("role=\"timer\">").nth(1).unwrap();
    let countdown: u64 = countdown.split('<').next().unwrap().parse().unwrap();
    assert_eq!(countdown.to_string(), r.header("retry-after").unwrap());
}

#[test]
fn apps_asking_for_json_get_the_status_as_json() {
    let room = Room::start(&[("waiting_status", "429")]);
    let r = room.get(2, "/events", &[("Accept", "application/json")]);
    assert_eq!(r.status, 429);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["status"], "waiting");
    assert_eq!(v["decision"], "anon");
    assert_eq!(v["queueing_method"], "random");
    assert_eq!(v["allow_percentage"], 50);
    assert_eq!(v["refresh_after"], retry);
    // The first draw comes when the page comes back: eligibility plus the phase.
    let next = v["next_draw_in"].as_u64().unwrap();
    assert_eq!(next, retry);
    assert!((31..=90).contains(&next), "{next}");
    assert_eq!(v["estimate"]["p50"], next);
    assert!(v["estimate"]["p75"].as_u64().unwrap() > next);
    assert!(v["timestamp"].as_u64().unwrap() >= now() - 5);
    // The same cookie handling as the HTML page.
    assert_wait_token(&r.room_cookie().unwrap(), "127.0.0.2", 30);
    // Admitted apps get the origin's own answer.
    room.set_config("allow_percentage", "100");
    let r = room.get(2, "/events", &[("Accept", "application/json")]);
    assert!(r.body.contains(ORIGIN_MARKER));
    // Closed.
    room.set_config("allow_percentage", "0");
    let r = room.get(2, "/events", &[("Accept", "application/json")]);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!((r.status, v["status"].as_str()), (200, Some("closed")));
}

#[test]
fn waiting_pages_use_the_configured_status_code() {
    for code in [202u16, 429, 503] {
        let room = Room::start(&[("waiting_status", &code.to_string())]);
        let r = room.get(2, "/events", &[]);
        assert_eq!(r.status, code);
        assert!(r.body.contains(START_PAGE));
        assert!(r.header("retry-after").is_some());
    }
    let room = Room::start(&[("waiting_status", "404")]);
    assert_eq!(room.get(2, "/events", &[]).status, 200);
    assert_logged(&room, &["config_fallback=waiting_status"]);
}

#[test]
fn stored_pages_are_templates_and_can_be_per_language() {
    let english =
        mint::encode("<p>p50={{wait_p50_seconds}} at {{allow_percentage}}% {{unknown}}</p>");
    let german = mint::encode("<p>Bitte warten: {{wait_p50}}</p>");
    let room = Room::start_with(
        &[],
        &[
            ("startwaiting", english.as_str()),
            ("startwaiting.de", german.as_str()),
        ],
        Backend::DemoOrigin,
    );
    let r = room.get(2, "/events", &[]);
    let p50: u64 = r.body["<p>p50=".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((31..=90).contains(&p50), "{}", r.body);
    assert!(r.body.ends_with(" at 50% {{unknown}}</p>"), "{}", r.body);
    let r = room.get(2, "/events", &[("Accept-Language", "de-CH, en;q=0.5")]);
    assert!(r.body.starts_with("<p>Bitte warten: "), "{}", r.body);
    let r = room.get(2, "/events", &[("Accept-Language", "fr, en;q=0.5")]);
    assert!(r.body.starts_with("<p>p50="), "{}", r.body);
}

#[test]
fn cookie_attributes_follow_the_settings() {
    let room = Room::start(&[("cookie_secure", "always"), ("cookie_samesite", "None")]);
    let set = room.get(2, "/events", &[]).all("set-cookie")[0].to_string();
    assert!(
        set.ends_with("; path=/; max-age=7200; HttpOnly; SameSite=None; Secure"),
        "{set}"
    );
    room.set_config("cookie_secure", "auto");
    room.set_config("cookie_httponly", "false");
    // Plain HTTP: no Secure, so SameSite=None is not allowed and becomes Lax.
    let set = room.get(2, "/events", &[]).all("set-cookie")[0].to_string();
    assert!(
        set.ends_with("; path=/; max-age=7200; SameSite=Lax"),
        "{set}"
    );
}

#[test]
fn fixed_sessions_do_not_slide() {
    let room = Room::start(&[("session_mode", "fixed")]);
    let adm = now() - 600;
    let token = mint::mint_fixed(KEY1, adm + 3600, "127.0.0.2", "key1", adm);
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={token}"));
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    // Kept as it is (no cookie, the origin's own caching): the session does not move.
    assert_eq!(r.room_cookie(), None);
    assert_eq!(r.header("cache-control"), Some("public, max-age=60"));
    let over = mint::mint_fixed(KEY1, now() + 100, "127.0.0.2", "key1", now() - 3700);
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={over}"));
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_logged(&room, &["transition=session-expired"]);
}

#[test]
fn a_header_that_is_not_utf8_is_no_500() {
    let room = Room::start(&[]);
    for header in ["Accept", "Accept-Language", "Cookie"] {
        let r =
            support::http::get_raw_header(room.addr, 2, "/events", header, b"\xff\xfe text/html");
        assert_eq!(r.status, 200, "{header}: {}", r.body);
        assert!(r.body.contains(START_PAGE), "{header}");
    }
}
