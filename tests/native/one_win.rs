//! One win, one session (docs/reference/how-it-works.md, "Sessions"): every presentation
//! of one winning wait token — tabs sharing a cookie jar, devices behind the
//! address, retries within the redeem window, a draw repeated after a lost
//! response — gets the byte-identical `Set-Cookie`, because a session a wait
//! token starts runs from a second of that token, not from the second of the
//! request. Through `plan()`, natively, at a fixed clock; one row per path that
//! starts a session from a wait token. (`tests/blackbox/basics.rs` shows the same
//! through Viceroy, from different source ports.)

use test_support::mint;

use std::collections::HashMap;

use waiting_room::admission::ceiling::{ExactCounts, PopCounts};
use waiting_room::admission::decision::{Decision, Session, Transition};
use waiting_room::admission::lottery;
use waiting_room::bots::challenge::{Outcome, Verifier};
use waiting_room::settings::config::Settings;
use waiting_room::settings::percentage::Percentage;
use waiting_room::{Plan, Visit, plan};

const NOW: u64 = 1_700_000_023;
const UID: &str = "192.0.2.10";
const K1: &str = "secret-one";
const TIMEOUT: u64 = 3600;
/// The default wait period, and so the default redeem window.
const D: u64 = 30;
const HOLD: u64 = 300;
const TOKEN: &str = "XXXX.DUMMY.TOKEN.XXXX";
const TURNSTILE: &str = r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#;

fn keys() -> HashMap<String, String> {
    HashMap::from([("key1".to_string(), K1.to_string())])
}

fn room(pairs: &[(&str, String)]) -> Settings {
    let mut store: HashMap<&str, String> = HashMap::from([("enabled", "true".to_string())]);
    store.extend(pairs.iter().cloned());
    Settings::from_lookup(|key| store.get(key).cloned())
}

fn random(percentage: u8, extra: &[(&str, String)]) -> Settings {
    let mut pairs = vec![("allow_percentage", percentage.to_string())];
    pairs.extend(extra.iter().cloned());
    room(&pairs)
}

fn fifo(extra: &[(&str, String)]) -> Settings {
    let mut pairs = vec![
        ("allow_percentage", "50".to_string()),
        ("queueing_method", "fifo".to_string()),
    ];
    pairs.extend(extra.iter().cloned());
    room(&pairs)
}

/// Passes every challenge, as a provider would for a solved widget.
#[derive(Debug)]
struct Passing;

impl Verifier for Passing {
    fn verify(&self, _token: &str, _signature: &[u8; 32]) -> Outcome {
        Outcome::Passed
    }
}

/// One request of a tab: at `now` and `millis`, with `cookie_header`.
fn request(
    now: u64,
    millis: u16,
    cookie_header: &str,
    settings: &Settings,
    pop: Option<&dyn PopCounts>,
) -> Plan {
    let visit = Visit {
        now,
        millis,
        uid: UID,
        path: "/events",
        path_and_query: "/events",
        cookie_header: Some(cookie_header),
        tls: true,
        pop,
        challenge: Some(&Passing),
        ..Visit::default()
    };
    plan(&visit, &settings.clone().into(), &keys())
}

/// The cookie value a `Set-Cookie` header carries.
fn value_of(set_cookie: &str) -> &str {
    set_cookie
        .strip_prefix("waiting_room=")
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("{set_cookie}"))
}

/// An expiry in `NOW - 1 - D ..NOW - 1` whose wait token, as `mint` makes it,
/// wins at `p` %; with the token.
fn winning(p: u8, mint: impl Fn(u64) -> (String, String)) -> (u64, String) {
    (1..=D)
        .map(|ago| NOW - ago)
        .find_map(|exp| {
            let (token, sig) = mint(exp);
            let seed = mint::seed(&format!("0x{sig}"));
            lottery::wins(seed, Percentage::whole(p)).then_some((exp, token))
        })
        .expect("a winner among 30 expiries")
}

fn plain(exp: u64) -> (String, String) {
    let token = mint::mint(K1, "wait", exp, UID, "key1");
    let sig = mint::open(&token)
        .rsplit("sig=0x")
        .next()
        .unwrap()
        .to_string();
    (token, sig)
}

/// One row: a room, the wait token presented, the cookies beside it, the seconds
/// it is presented at, and the second its session must start at.
struct Row {
    path: &'static str,
    settings: Settings,
    cookie: String,
    extra_cookies: String,
    at: Vec<u64>,
    transition: Transition,
    start: u64,
    /// How far the end may lie before `now + allow_period_timeout`.
    bound: u64,
    fixed: bool,
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    // A won draw: the draw's first second, from the first to the last second
    // of the redeem window.
    let (exp, token) = winning(50, plain);
    for fixed in [false, true] {
        let mode = if fixed { "fixed" } else { "sliding" };
        rows.push(Row {
            path: if fixed { "lottery, fixed" } else { "lottery" },
            settings: random(50, &[("session_mode", mode.to_string())]),
            cookie: token.clone(),
            extra_cookies: String::new(),
            at: vec![exp + 1, exp + 2, NOW, exp + D],
            transition: Transition::LotteryWon,
            start: exp + 1,
            bound: D - 1,
            fixed,
        });
    }
    // Under the POP's ceiling, admitted (the first tab counts it, the others
    // are admitted uncounted).
    rows.push(Row {
        path: "lottery under the POP's ceiling",
        settings: random(50, &[("pop_new_sessions_per_minute", "5".to_string())]),
        cookie: token.clone(),
        extra_cookies: String::new(),
        at: vec![exp + 1, exp + D],
        transition: Transition::LotteryWon,
        start: exp + 1,
        bound: D - 1,
        fixed: false,
    });
    // A draw after paying the bot toll.
    let (exp, token) = winning(50, |exp| mint::mint_toll(K1, exp, UID, "key1", 8));
    let sig = mint::open(&token)
        .rsplit("sig=0x")
        .next()
        .unwrap()
        .to_string();
    let nonce = mint::toll_nonce(&sig, 8);
    rows.push(Row {
        path: "toll paid",
        settings: random(50, &[("bot_toll_bits", "8".to_string())]),
        cookie: token,
        extra_cookies: format!("; waiting_toll={nonce}"),
        at: vec![exp + 1, exp + D],
        transition: Transition::LotteryWon,
        start: exp + 1,
        bound: D - 1,
        fixed: false,
    });
    // A draw after passing the external challenge.
    let (exp, token) = winning(50, |exp| mint::mint_toll(K1, exp, UID, "key1", 32));
    rows.push(Row {
        path: "challenge passed",
        settings: random(50, &[("bot_challenge", TURNSTILE.to_string())]),
        cookie: token,
        extra_cookies: format!("; waiting_toll={TOKEN}"),
        at: vec![exp + 1, exp + D],
        transition: Transition::LotteryWon,
        start: exp + 1,
        bound: D - 1,
        fixed: false,
    });
    // A FIFO place the cutoff reached: the start of its hold, whenever in the
    // hold it is presented.
    let arr = (NOW - 900) * 1000 + 123;
    let hold_end = NOW + 100;
    for fixed in [false, true] {
        let mode = if fixed { "fixed" } else { "sliding" };
        rows.push(Row {
            path: if fixed { "FIFO, fixed" } else { "FIFO" },
            settings: fifo(&[
                ("fifo_cutoff", arr.to_string()),
                ("session_mode", mode.to_string()),
            ]),
            cookie: mint::mint_fifo(K1, hold_end, UID, "key1", arr),
            extra_cookies: String::new(),
            at: vec![hold_end - HOLD, NOW, hold_end],
            transition: Transition::CutoffReached,
            start: hold_end - HOLD,
            bound: HOLD,
            fixed,
        });
    }
    // A pre-queue place, admitted after the line opened: its hold started at
    // the opening.
    let opens = NOW - 60;
    let arr = opens * 1000 + 400;
    rows.push(Row {
        path: "pre-queue place",
        settings: fifo(&[
            ("fifo_cutoff", arr.to_string()),
            ("queue_opens_at", opens.to_string()),
        ]),
        cookie: mint::mint_fifo(K1, opens + HOLD, UID, "key1", arr),
        extra_cookies: String::new(),
        at: vec![opens, NOW, opens + HOLD],
        transition: Transition::CutoffReached,
        start: opens,
        bound: HOLD,
        fixed: false,
    });
    // A lottery ticket a FIFO cutoff admits at once: its place, `exp - 2d`.
    let exp = NOW - 10;
    rows.push(Row {
        path: "lottery ticket under a FIFO cutoff",
        settings: fifo(&[("fifo_cutoff", (NOW * 1000).to_string())]),
        cookie: mint::mint(K1, "wait", exp, UID, "key1"),
        extra_cookies: String::new(),
        at: vec![exp - 2 * D, NOW, exp + D],
        transition: Transition::CutoffReached,
        start: exp - 2 * D,
        bound: 2 * D + D,
        fixed: false,
    });
    rows
}

/// Every presentation of one win — at different seconds and milliseconds, from
/// tabs whose other cookies differ — gets the byte-identical `Set-Cookie`, whose
/// session starts at the row's second; its end lies at most the row's bound
/// before (and never after) the end a session starting at the request would get.
#[test]
fn every_presentation_of_one_win_gets_the_same_allow_cookie() {
    for row in rows() {
        let mut counts = ExactCounts::default();
        let mut cookies: Vec<String> = Vec::new();
        for (i, &now) in row.at.iter().enumerate() {
            // Another tab, another order of the jar's cookies, another millisecond.
            let header = if i % 2 == 0 {
                format!("waiting_room={}{}", row.cookie, row.extra_cookies)
            } else {
                format!(
                    "theme=dark; waiting_room={}{}",
                    row.cookie, row.extra_cookies
                )
            };
            let millis = (i as u16 * 397) % 1000;
            let p = request(now, millis, &header, &row.settings, Some(&counts));
            let verdict = p.verdict.clone().unwrap();
            assert_eq!(
                (verdict.decision, verdict.transition, verdict.session),
                (Decision::Allow, Some(row.transition), Some(Session::New)),
                "{} at {now}",
                row.path
            );
            if let Some(key) = &verdict.pop_count {
                counts.count(now, key.clone());
            }
            let set_cookie = p.set_cookie.clone().expect("an allow cookie");
            let text = mint::open(value_of(&set_cookie));
            let exp = mint::number(&text, "exp");
            assert_eq!(exp, row.start + TIMEOUT, "{}: {text}", row.path);
            assert_eq!(verdict.exp, Some(exp), "{}", row.path);
            if row.fixed {
                assert_eq!(mint::number(&text, "adm"), row.start, "{}", row.path);
            } else {
                assert!(!text.contains("adm="), "{}: {text}", row.path);
            }
            let today = now + TIMEOUT;
            assert!(
                exp <= today && today - exp <= row.bound,
                "{} at {now}: ends {} s early",
                row.path,
                today - exp
            );
            cookies.push(set_cookie);
        }
        assert!(
            cookies.windows(2).all(|w| w[0] == w[1]),
            "{}: {cookies:#?}",
            row.path
        );
    }
}

/// Random mode over the whole redeem window: the end moves by at most the redeem
/// window against `now + allow_period_timeout` (never later), every second of the
/// window gets the same token, and that token is kept, not renewed, by the
/// requests that follow.
#[test]
fn a_won_draw_ends_at_most_the_redeem_window_before_today_and_is_kept_afterwards() {
    let settings = random(50, &[]);
    let (exp, token) = winning(50, plain);
    let header = format!("waiting_room={token}");
    let mut set = Vec::new();
    for now in exp + 1..=exp + D {
        for millis in [0, 999] {
            let p = request(now, millis, &header, &settings, None);
            let set_cookie = p.set_cookie.expect("an allow cookie");
            let value = value_of(&set_cookie).to_string();
            let end = mint::number(&mint::open(&value), "exp");
            let today = now + TIMEOUT;
            assert!(end <= today && today - end < D, "at exp + {}", now - exp);
            // Held afterwards, it is kept as it is: no second token.
            let next = format!("waiting_room={value}");
            for later in [now, now + 1, exp + D + 1] {
                let p = request(later, 0, &next, &settings, None);
                let v = p.verdict.unwrap();
                assert_eq!(
                    (v.session, p.set_cookie),
                    (Some(Session::Kept), None),
                    "{later}"
                );
            }
            set.push(set_cookie);
        }
    }
    set.dedup();
    assert_eq!(set.len(), 1, "{set:#?}");
}

/// Sessions started without a wait token (a room open at 100 %) start at the
/// request; a derived second that would leave less than half the timeout (a
/// redeem window longer than half of it) falls back to the request too, so lazy
/// renewal never re-issues a fresh token.
#[test]
fn without_a_drawn_token_or_with_too_little_left_a_session_starts_now() {
    let open = random(100, &[]);
    for now in [NOW, NOW + 1] {
        let p = request(now, 0, "theme=dark", &open, None);
        let text = mint::open(value_of(&p.set_cookie.unwrap()));
        assert_eq!(mint::number(&text, "exp"), now + TIMEOUT);
    }
    // A win presented at 100 % is not drawn: it starts now as well.
    let (exp, token) = winning(50, plain);
    let p = request(NOW, 0, &format!("waiting_room={token}"), &open, None);
    assert_eq!(p.verdict.unwrap().transition, None);
    let text = mint::open(value_of(&p.set_cookie.unwrap()));
    assert_eq!(mint::number(&text, "exp"), NOW + TIMEOUT);

    // allow_period_timeout 40 s, redeem window 30 s: a draw 20 s after its
    // first second still derives; 21 s after, it starts now.
    let short = random(
        50,
        &[
            ("allow_period_timeout", "40".to_string()),
            ("redeem_window", "30".to_string()),
        ],
    );
    let header = format!("waiting_room={token}");
    let end_at = |now: u64| {
        let p = request(now, 0, &header, &short, None);
        mint::number(&mint::open(value_of(&p.set_cookie.unwrap())), "exp")
    };
    assert_eq!(end_at(exp + 21), exp + 1 + 40);
    if exp + 22 <= exp + D {
        assert_eq!(end_at(exp + 22), exp + 22 + 40);
    }
}

/// Under the POP's ceiling a win counts once, whichever tabs present it when.
#[test]
fn the_pops_ceiling_counts_one_win_once() {
    let settings = random(50, &[("pop_new_sessions_per_minute", "5".to_string())]);
    let (exp, token) = winning(50, plain);
    let header = format!("waiting_room={token}");
    let mut counts = ExactCounts::default();
    let mut counted = 0;
    for now in [exp + 1, exp + 2, exp + D] {
        let p = request(now, 0, &header, &settings, Some(&counts));
        if let Some(key) = p.verdict.unwrap().pop_count {
            counts.count(now, key);
            counted += 1;
        }
    }
    assert_eq!(counted, 1);
}
