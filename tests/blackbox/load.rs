//! Load without loss: many concurrent requests to the built wasm in Viceroy, in
//! front of a real demo origin, from 32 visitors (127.0.0.2 to .33), mixing every
//! cookie class; each response is checked against its class.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `LOAD_REQUESTS` | 3000 | requests to send |
//! | `LOAD_CONCURRENCY` | 16 | requests in flight |
//! | `LOAD_TIME_LIMIT_SECS` | 600 | stop sending after this long, whatever is left |
//!
//! The full run: `LOAD_REQUESTS=100000 LOAD_CONCURRENCY=64 cargo nextest run
//! --test blackbox load:: --no-capture`. Throughput and latency are printed, never asserted
//! (the machines are shared and noisy); errors from the room — connection
//! failures, malformed responses, 5xx, a response that does not fit its cookie
//! class — are counted and must all be zero.
//!
//! The harness client opens one connection per request (`Connection: close`, no
//! keep-alive), so the figures include a TCP handshake each; spreading the
//! visitors over 32 source addresses keeps closed connections waiting out
//! TIME_WAIT from exhausting any address's ephemeral ports.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::wait_token_wins;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use demo_origin::ORIGIN_MARKER;
use support::http::{self, Failure, Response};
use support::mint;
use support::viceroy_room::{KEY1, Room, now};
use waiting_room::pages::page::{NO_STORE, Page};

/// Source addresses 127.0.0.2 to 127.0.0.33.
const VISITORS: std::ops::RangeInclusive<u8> = 2..=33;
/// The room's `allow_percentage` and `cookie_lifetime` (test-support/src/viceroy_room.rs).
const PERCENTAGE: u8 = 50;
const COOKIE_LIFETIME: u64 = 7200;
const ALLOW_PERIOD: u64 = 3600;

/// What the request's `waiting_room` cookie is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    NoCookie,
    Waiting,
    Allowed,
    Renewing,
    ExpiredWait,
    ExpiredAllow,
    Forged,
}

const CLASSES: [Class; 7] = [
    Class::NoCookie,
    Class::Waiting,
    Class::Allowed,
    Class::Renewing,
    Class::ExpiredWait,
    Class::ExpiredAllow,
    Class::Forged,
];

/// What the room must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Expect {
    /// The start page and a new wait cookie.
    StartPage,
    /// The keep-waiting page, with a new wait cookie or none.
    KeepWaiting { new_cookie: bool },
    /// The origin's page, with the origin's cookie and an allow cookie whose
    /// session ends at this Unix second or later: a renewal's a whole session after
    /// the run began, a win's a whole session after the draw (its wait token's
    /// `exp` + 1), whenever it is presented.
    Origin { ends_from: u64 },
    /// The origin's page exactly as the origin sent it (a young allow token is kept).
    OriginUntouched,
}

/// One visitor's cookies, minted by the tests' own minter for its address.
struct Visitor {
    from: u8,
    uid: String,
    waiting: String,
    allowed: String,
    renewing: String,
    expired_wait: String,
    expired_wait_wins: bool,
    /// When a win of `expired_wait` starts its session: the draw, its `exp` + 1.
    expired_wait_draw: u64,
    renewing_from: u64,
    expired_allow: String,
    forged: [String; 4],
}

impl Visitor {
    fn new(from: u8, start: u64) -> Visitor {
        let uid = format!("127.0.0.{from}");
        let other_uid = format!("127.0.0.{}", from + 100);
        // Expired just before the run, one expiry per visitor: a fixed lottery
        // outcome, inside the room's redeem window for the whole run.
        let old_exp = start - 1 - u64::from(from);
        Visitor {
            waiting: mint::mint(KEY1, "wait", start + 3600, &uid, "key1"),
            allowed: mint::mint(KEY1, "allow", start + 3600, &uid, "key1"),
            // Less than half the session left: renewed on every request.
            renewing: mint::mint(KEY1, "allow", start + 600, &uid, "key1"),
            expired_wait: mint::mint(KEY1, "wait", old_exp, &uid, "key1"),
            expired_wait_draw: old_exp + 1,
            renewing_from: start,
            expired_wait_wins: wait_token_wins(old_exp, &uid, PERCENTAGE),
            expired_allow: mint::mint(KEY1, "allow", start - 10, &uid, "key1"),
            forged: [
                mint::mint("a forger's key", "allow", start + 3600, &uid, "key1"),
                mint::mint(KEY1, "allow", start + 3600, &other_uid, "key1"),
                mint::mint(KEY1, "allow", start + 3600, &uid, "key9"),
                "not-a-token".to_string(),
            ],
            from,
            uid,
        }
    }

    /// The cookie header for request `i` of `class`, and what it must get.
    fn request(&self, class: Class, i: usize) -> (Option<String>, Expect) {
        let (value, expect) = match class {
            Class::NoCookie => return (None, Expect::StartPage),
            Class::Waiting => (&self.waiting, Expect::KeepWaiting { new_cookie: false }),
            Class::Allowed => (&self.allowed, Expect::OriginUntouched),
            Class::Renewing => (
                &self.renewing,
                Expect::Origin {
                    ends_from: self.renewing_from + ALLOW_PERIOD,
                },
            ),
            Class::ExpiredWait if self.expired_wait_wins => (
                &self.expired_wait,
                Expect::Origin {
                    ends_from: self.expired_wait_draw + ALLOW_PERIOD,
                },
            ),
            Class::ExpiredWait => (&self.expired_wait, Expect::KeepWaiting { new_cookie: true }),
            Class::ExpiredAllow => (&self.expired_allow, Expect::StartPage),
            Class::Forged => (&self.forged[i % self.forged.len()], Expect::StartPage),
        };
        (Some(format!("waiting_room={value}")), expect)
    }
}

/// Counts and samples from one worker, merged at the end.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    answered: BTreeMap<(Class, Expect), usize>,
    errors: BTreeMap<&'static str, usize>,
    examples: Vec<String>,
}

impl Tally {
    fn error(&mut self, kind: &'static str, example: String) {
        *self.errors.entry(kind).or_default() += 1;
        if self.examples.len() < 5 {
            self.examples.push(example);
        }
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        for (key, n) in other.answered {
            *self.answered.entry(key).or_default() += n;
        }
        for (kind, n) in other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
        let room = 5usize.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.into_iter().take(room));
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn every_cookie_class_under_concurrent_load_gets_its_answer_and_no_error() {
    let requests = env_number("LOAD_REQUESTS", 3000) as usize;
    let concurrency = env_number("LOAD_CONCURRENCY", 16) as usize;
    let time_limit = Duration::from_secs(env_number("LOAD_TIME_LIMIT_SECS", 600));

    // A redeem window longer than any run, so expired wait tokens keep their draw.
    let room = Room::start(&[("redeem_window", "3600")]);
    let start = now();
    let visitors: Vec<Visitor> = VISITORS.map(|from| Visitor::new(from, start)).collect();
    let next = AtomicUsize::new(0);
    let began = Instant::now();
    let deadline = began + time_limit;

    let mut tally = Tally::default();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..concurrency)
            .map(|_| {
                scope.spawn(|| {
                    let mut tally = Tally::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= requests || Instant::now() >= deadline {
                            return tally;
                        }
                        one_request(&room, &visitors, i, start, &mut tally);
                    }
                })
            })
            .collect();
        for worker in workers {
            tally.merge(worker.join().expect("worker"));
        }
    });
    let elapsed = began.elapsed();

    let sent = tally.latencies.len();
    report(&tally, requests, concurrency, elapsed);
    let output = room.viceroy_output();
    assert!(!output.contains("panicked"), "the room panicked:\n{output}");
    let logged = wait_for_log_lines(&room, sent);
    assert!(
        tally.errors.is_empty(),
        "errors: {:?}, e.g.:\n{}",
        tally.errors,
        tally.examples.join("\n")
    );
    assert_eq!(logged, sent, "every request gets one log line");
    if sent < requests {
        println!("stopped by LOAD_TIME_LIMIT_SECS after {sent} of {requests} requests");
    }
}

/// Sends request `i` and records its latency and any error.
fn one_request(room: &Room, visitors: &[Visitor], i: usize, start: u64, tally: &mut Tally) {
    let visitor = &visitors[i % visitors.len()];
    let class = CLASSES[(i / visitors.len()) % CLASSES.len()];
    let (cookie, expect) = visitor.request(class, i);
    let path = format!("/events/launch?id={}", i % 100);
    let headers: Vec<(&str, &str)> = cookie.iter().map(|c| ("Cookie", c.as_str())).collect();

    let sent_at = Instant::now();
    let result = http::try_get(room.addr, visitor.from, &path, &headers);
    tally.latencies.push(sent_at.elapsed());

    let context = format!("#{i} {class:?} from {}", visitor.uid);
    match result {
        Err(Failure::Connect(err)) => tally.error("connect", format!("{context}: {err}")),
        Err(Failure::Io(err)) => tally.error("io", format!("{context}: {err}")),
        Err(Failure::Malformed(why)) => tally.error("malformed", format!("{context}: {why}")),
        Ok(r) if r.status >= 500 => tally.error("5xx", format!("{context}: {}", r.status)),
        Ok(r) => match answers(&r, expect, &visitor.uid, &path, start) {
            Ok(()) => *tally.answered.entry((class, expect)).or_default() += 1,
            Err(why) => tally.error("inconsistent", format!("{context}: {why}")),
        },
    }
}

/// Whether `r` is the answer `expect` calls for, for visitor `uid` asking for `path`.
fn answers(r: &Response, expect: Expect, uid: &str, path: &str, start: u64) -> Result<(), String> {
    if expect == Expect::OriginUntouched {
        let untouched = r.status == 200
            && r.body.contains(ORIGIN_MARKER)
            && r.all("cache-control") == ["public, max-age=60"]
            && r.all("set-cookie") == ["demo_origin=1; Path=/"];
        return untouched
            .then_some(())
            .ok_or_else(|| format!("not the untouched origin: {:?}", r.headers));
    }
    if r.status != 200 || r.all("cache-control") != [NO_STORE] {
        return Err(format!("{} {:?}", r.status, r.all("cache-control")));
    }
    let set_cookies = r.all("set-cookie");
    let refresh = r.all("refresh");
    let page = |page: Page, cookie: Option<&str>| {
        let refreshes = refresh.len() == 1 && refresh[0].ends_with(&format!("; url={path}"));
        let cookies_ok = match cookie {
            Some(dec) => set_cookies.len() == 1 && room_token(set_cookies[0], dec, uid, start),
            None => set_cookies.is_empty(),
        };
        // The page's own title, and every template variable filled in.
        let html = page.default_html();
        let title = html.split("</title>").next().unwrap_or_default();
        let right_page = r.body.contains(title) && !r.body.contains("{{");
        (right_page && refreshes && cookies_ok)
            .then_some(())
            .ok_or_else(|| format!("not {page:?} with {cookie:?}: {set_cookies:?} {refresh:?}"))
    };
    match expect {
        Expect::StartPage => page(Page::StartWaiting, Some("wait")),
        Expect::KeepWaiting { new_cookie } => page(Page::KeepWaiting, new_cookie.then_some("wait")),
        Expect::OriginUntouched => Ok(()),
        Expect::Origin { ends_from } => {
            let origin = r.body.contains(ORIGIN_MARKER) && !r.body.contains("waiting_room");
            let cookies = set_cookies.len() == 2
                && set_cookies[0] == "demo_origin=1; Path=/"
                && room_token(set_cookies[1], "allow", uid, ends_from);
            (origin && cookies)
                .then_some(())
                .ok_or_else(|| format!("not the origin with a renewed cookie: {set_cookies:?}"))
        }
    }
}

/// Whether `set_cookie` stores a `dec` token for `uid`, signed with key1, that
/// expires at `earliest` or later.
fn room_token(set_cookie: &str, dec: &str, uid: &str, earliest: u64) -> bool {
    // The default attributes over plain HTTP.
    let suffix = format!("; path=/; max-age={COOKIE_LIFETIME}; HttpOnly; SameSite=Lax");
    let Some(value) = set_cookie
        .strip_prefix("waiting_room=")
        .and_then(|rest| rest.strip_suffix(&suffix))
    else {
        return false;
    };
    let Some(text) = STANDARD
        .decode(value)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
    else {
        return false;
    };
    let Some((signed, sig)) = text.split_once("&sig=") else {
        return false;
    };
    let exp = signed
        .strip_prefix(&format!("dec={dec}&exp="))
        .and_then(|rest| rest.strip_suffix(&format!("&uid={uid}&kid=key1")))
        .and_then(|exp| exp.parse::<u64>().ok());
    exp.is_some_and(|exp| exp >= earliest) && sig == mint::vcl_sig(KEY1, signed)
}

/// The number of room log lines once it reaches `expected` (or after 10 s).
fn wait_for_log_lines(room: &Room, expected: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logged = room.log_lines().len();
        if logged >= expected || Instant::now() >= deadline {
            return logged;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Prints throughput, latency percentiles, answers per class and errors.
fn report(tally: &Tally, requests: usize, concurrency: usize, elapsed: Duration) {
    let mut latencies = tally.latencies.clone();
    latencies.sort_unstable();
    let percentile = |p: usize| {
        let at = (latencies.len() * p / 100).min(latencies.len().saturating_sub(1));
        latencies.get(at).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let sent = latencies.len();
    let errors: usize = tally.errors.values().sum();
    println!(
        "load: {sent} of {requests} requests, concurrency {concurrency}, {} visitors, \
         {:.1} s, {:.0} req/s",
        VISITORS.count(),
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64()
    );
    println!(
        "latency ms: p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1}",
        percentile(50),
        percentile(90),
        percentile(99),
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    );
    for ((class, expect), n) in &tally.answered {
        println!("answered: {class:?} -> {expect:?}: {n}");
    }
    println!("errors: {errors} {:?}", tally.errors);
    for example in &tally.examples {
        println!("  e.g. {example}");
    }
}
