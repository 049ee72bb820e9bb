//! The fail-safe sweep: for each of the room's worst paths, every store read it makes
//! fails in turn (the project's Viceroy, tools/viceroy-faults: a request's
//! `viceroy-fail-lookup: K` / `viceroy-fail-secret: K` fails the K-th read of its
//! execution), and each answer is held to the fault-free answer of the same request:
//!
//! - no unearned admission: a request the room did not send to the origin without the
//!   fault is not sent there with it;
//! - no cookie replaced or deleted: a room cookie (`waiting_…`) the faulted answer sets
//!   or deletes, the fault-free one sets or deletes too, alike (an allow token only where
//!   it set an allow token);
//! - a 5xx is a 503 with `Retry-After` and no internals in its body, and sets no cookie
//!   unless the fault-free answer was a 5xx too (the origin down);
//! - nothing panics, in the room or in Viceroy;
//! - the room's line for the request says `ALERT=unreadable:` naming what failed: the
//!   config key (a page's key for the page store), `signing-key` for a signing key,
//!   `challenge-secret` for the challenge's secret.
//!
//! One Viceroy for each place the signing keys live (the config store, a Secret Store),
//! the two side by side; between paths the config store is rewritten (Viceroy re-reads
//! it on every request). A path's positions run until a request whose fault is past its
//! reads (Viceroy fails nothing). Every broken (path, position) is reported at the end,
//! in one panic.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use demo_origin::ORIGIN_MARKER;
use support::challenge_server::{ChallengeServer, StandIn};
use support::faults::{self, FAIL_LOOKUP, FAIL_SECRET, Read};
use support::http::{self, Response};
use support::logins;
use support::mint;
use support::viceroy_room::{Backend, KEY1, KEY2, Room, RoomSpec, now};

use waiting_room::credentials::login_mint::mint as mint_login;

use crate::{due_token, unreadable, winning_exp};

const TURNSTILE: &str = r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#;
/// The Turnstile stand-in's site key and secret, and a token it takes.
const TURNSTILE_SECRETS: &[(&str, &str)] = &[(
    "1x00000000000000000000AA",
    "1x0000000000000000000000000000000AA",
)];
const TURNSTILE_TOKEN: &str = "XXXX.DUMMY.TOKEN.XXXX";
/// What the stored start page says.
const STORED_PAGE: &str = "A start page of the store's";
/// A percentage that admits nobody a test can wait for (once in 100,000 draws).
const NOBODY: &str = "0.001";
/// Most reads of one kind a request is expected to make.
const MAX_POSITION: u32 = 40;

/// Where the signing keys live.
#[derive(Debug, Clone, Copy)]
enum Keys {
    ConfigStore,
    SecretStore,
}

/// What the fault-free answer must be, for the path to be the one it names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Sent to the origin.
    Forwarded,
    /// The room's page, not the origin's (with this text, when given).
    Held(Option<&'static str>),
    /// A redirect (a pass link).
    Redirect,
    /// The room's 503 for an origin that cannot be reached.
    OriginDown,
}

/// One worst path: the settings, the request, and what its fault-free answer is.
struct Path {
    name: &'static str,
    config: Vec<(&'static str, String)>,
    from: u8,
    target: String,
    headers: Vec<(&'static str, String)>,
    expect: Expect,
}

impl Path {
    fn new(name: &'static str, from: u8, expect: Expect) -> Path {
        Path {
            name,
            config: Vec::new(),
            from,
            target: "/events".to_string(),
            headers: Vec::new(),
            expect,
        }
    }

    fn config(mut self, key: &'static str, value: &str) -> Path {
        self.config.push((key, value.to_string()));
        self
    }

    /// The service's identity is the login of [`logins`].
    fn login(mut self) -> Path {
        self.config.extend(logins::settings_members());
        self
    }

    fn cookie(mut self, cookie: String) -> Path {
        self.headers.push(("Cookie", cookie));
        self
    }

    fn header(mut self, name: &'static str, value: String) -> Path {
        self.headers.push((name, value));
        self
    }

    fn target(mut self, target: String) -> Path {
        self.target = target;
        self
    }

    /// The origin is down for this path.
    fn origin_down(&self) -> bool {
        self.expect == Expect::OriginDown
    }
}

/// The worst paths, their tokens minted at `t`.
fn paths(t: u64) -> Vec<Path> {
    let uid = |from: u8| format!("127.0.0.{from}");
    let allow = |from: u8| mint::mint(KEY1, "allow", t + 600, &uid(from), "key1");
    let pass = mint::mint_pass(KEY1, "", t - 10, t + 3600, "key1");
    let events = format!(
        r#"[{{"name": "drop", "prequeue_start": {}, "start": {}, "end": {}}}]"#,
        t - 60,
        t + 3600,
        t + 7200
    );
    let arrived = t * 1000 - 5000;
    // Draws at 50 % with tokens that win them (the lottery is the token's).
    let winner = winning_exp(t - 20..t - 2, &uid(12), 50).expect("one of 18 wins");
    let (toll_token, toll_challenge) = due_token(31, 8, true);
    let nonce = mint::toll_nonce(&toll_challenge, 8);
    let (challenge_token, _) = due_token(33, 32, true);
    let rooms = r#"{"drops": {"paths": ["/drops/"]}}"#;
    let keys = logins::keys();
    let login = |i: usize| mint_login(&logins::claims("alice", t), &keys[i], logins::KIDS[i]);
    let person = logins::person_uid("alice", None);
    let person_wins = winning_exp(t - 20..t - 2, &person, 50).expect("one of 18 wins");
    vec![
        Path::new("newcomer", 10, Expect::Held(None)).config("allow_percentage", NOBODY),
        Path::new("newcomer-admitted", 11, Expect::Forwarded).config("allow_percentage", "100"),
        Path::new("due-wait-token-wins", 12, Expect::Forwarded)
            .config("allow_percentage", "50")
            .cookie(format!(
                "waiting_room={}",
                mint::mint(KEY1, "wait", winner, &uid(12), "key1")
            )),
        Path::new("due-wait-token-loses", 13, Expect::Held(None))
            .config("allow_percentage", NOBODY)
            .cookie(format!(
                "waiting_room={}",
                mint::mint(KEY1, "wait", t - 5, &uid(13), "key1")
            )),
        Path::new("wait-token-not-yet-due", 14, Expect::Held(None))
            .config("allow_percentage", NOBODY)
            .cookie(format!(
                "waiting_room={}",
                mint::mint(KEY1, "wait", t + 25, &uid(14), "key1")
            )),
        Path::new("allow-token", 15, Expect::Forwarded)
            .config("allow_percentage", NOBODY)
            .cookie(format!("waiting_room={}", allow(15))),
        Path::new("allow-token-of-the-older-key", 16, Expect::Forwarded)
            .config("allow_percentage", NOBODY)
            .cookie(format!(
                "waiting_room={}",
                mint::mint(KEY2, "allow", t + 600, &uid(16), "key2")
            )),
        Path::new("pass-link", 17, Expect::Redirect)
            .config("allow_percentage", NOBODY)
            .target(format!("/events?waiting_pass={pass}")),
        Path::new("pass-header", 18, Expect::Forwarded)
            .config("allow_percentage", NOBODY)
            .header("Waiting-Room-Pass", pass.clone()),
        Path::new("pass-cookie", 19, Expect::Forwarded)
            .config("allow_percentage", NOBODY)
            .cookie(format!("waiting_pass={pass}")),
        Path::new("toll-newcomer", 30, Expect::Held(None))
            .config("allow_percentage", NOBODY)
            .config("bot_toll_bits", "8"),
        Path::new("toll-paid", 31, Expect::Forwarded)
            .config("allow_percentage", "50")
            .config("bot_toll_bits", "8")
            .cookie(format!("waiting_room={toll_token}; waiting_toll={nonce}")),
        Path::new("challenge", 33, Expect::Forwarded)
            .config("allow_percentage", "50")
            .config("bot_challenge", TURNSTILE)
            .cookie(format!(
                "waiting_room={challenge_token}; waiting_toll={TURNSTILE_TOKEN}"
            )),
        Path::new("fifo-admitted", 34, Expect::Forwarded)
            .config("queueing_method", "fifo")
            .config("fifo_cutoff", &(arrived + 1000).to_string())
            .config("fifo_rate", "1")
            .cookie(format!(
                "waiting_room={}",
                mint::mint_fifo(KEY1, t + 200, &uid(34), "key1", arrived)
            )),
        Path::new("fifo-held", 35, Expect::Held(None))
            .config("queueing_method", "fifo")
            .config("fifo_cutoff", &(arrived - 1000).to_string())
            .config("fifo_rate", "1")
            .cookie(format!(
                "waiting_room={}",
                mint::mint_fifo(KEY1, t + 200, &uid(35), "key1", arrived)
            )),
        Path::new("event-pre-queue", 36, Expect::Held(None))
            .config("allow_percentage", "100")
            .config("events", &events),
        Path::new("origin-down", 37, Expect::OriginDown)
            .config("allow_percentage", "100")
            .cookie(format!("waiting_room={}", allow(37))),
        Path::new("named-room-newcomer", 38, Expect::Held(None))
            .config("protected_paths", "/events,/drops/")
            .config("rooms", rooms)
            .config(
                "room.drops",
                &format!(r#"{{"enabled": true, "allow_percentage": "{NOBODY}"}}"#),
            )
            .target("/drops/1".to_string()),
        Path::new("named-room-allow-token", 39, Expect::Forwarded)
            .config("protected_paths", "/events,/drops/")
            .config("rooms", rooms)
            .config(
                "room.drops",
                &format!(r#"{{"enabled": true, "allow_percentage": "{NOBODY}"}}"#),
            )
            .target("/drops/1".to_string())
            .cookie(format!(
                "waiting_room_drops={}",
                mint::mint_in_room(KEY1, "drops", "allow", t + 600, &uid(39), "key1")
            )),
        Path::new("stored-page", 40, Expect::Held(Some(STORED_PAGE)))
            .config("allow_percentage", NOBODY)
            .config("custom_pages", "startwaiting"),
        // Logins: an HS256 one (its secret a read) and an RS256 one (none).
        Path::new("login-newcomer", 41, Expect::Held(None))
            .login()
            .config("allow_percentage", NOBODY)
            .cookie(format!("session={}", login(2))),
        Path::new("login-due-wait-token-wins", 42, Expect::Forwarded)
            .login()
            .config("allow_percentage", "50")
            .cookie(format!(
                "session={}; waiting_room={}",
                login(2),
                mint::mint(KEY1, "wait", person_wins, &person, "key1")
            )),
        Path::new("login-allow-token-members-only", 43, Expect::Forwarded)
            .login()
            .config("allow_percentage", NOBODY)
            .config("who_may_wait", "signed-in")
            .cookie(format!(
                "session={}; waiting_room={}",
                login(0),
                mint::mint(KEY1, "allow", t + 600, &person, "key1")
            )),
        Path::new("members-only-sign-in", 44, Expect::Redirect)
            .login()
            .config("who_may_wait", "signed-in")
            .config("sign_in_url", "https://shop.example/login"),
    ]
}

/// One request's answer, what Viceroy printed meanwhile, and the room's line.
struct Answer {
    response: Result<Response, String>,
    output: String,
    line: Option<String>,
}

impl Answer {
    fn forwarded(&self) -> bool {
        let origin = self
            .response
            .as_ref()
            .is_ok_and(|r| r.body.contains(ORIGIN_MARKER));
        // The room asked the origin, whatever came back (the origin down).
        let tried = self
            .line
            .as_ref()
            .is_some_and(|l| l.contains(" origin_error=") || l.contains(" origin_status="));
        origin || tried
    }
}

/// A room, the origin behind a relay that can be cut, and the challenge's stand-in.
struct Bench {
    room: Room,
    relay: Relay,
    _challenge: ChallengeServer,
}

impl Bench {
    fn start(keys: Keys) -> Bench {
        let origin = demo_origin::Origin::start("127.0.0.1:0").unwrap();
        let relay = Relay::start(origin.addr());
        let challenge = ChallengeServer::start(StandIn::turnstile()).unwrap();
        let page = mint::encode(&format!("<p>{STORED_PAGE}</p>"));
        let keys_in_secrets: &[(&str, &str)] = &[("key1", KEY1), ("key2", KEY2)];
        let room = Room::launch(RoomSpec {
            pages: &[("startwaiting", &page)],
            backend: Backend::Origin(relay.addr),
            secret_keys: match keys {
                Keys::ConfigStore => None,
                Keys::SecretStore => Some(keys_in_secrets),
            },
            challenge_server: Some(&challenge),
            challenge_secrets: Some(TURNSTILE_SECRETS),
            login_secrets: Some(&[(logins::KIDS[2], logins::HS256_SECRET)]),
            ..RoomSpec::default()
        });
        Bench {
            room,
            relay,
            _challenge: challenge,
        }
    }

    /// `path`'s request, with `fault` (a header and a position) when given.
    fn ask(&self, path: &Path, fault: Option<(&str, u32)>) -> Answer {
        let position = fault.map(|(_, k)| k.to_string());
        let mut headers: Vec<(&str, &str)> =
            path.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        if let (Some((name, _)), Some(k)) = (fault, &position) {
            headers.push((name, k));
        }
        let mark = self.room.output_mark();
        let response = http::try_get(self.room.addr, path.from, &path.target, &headers)
            .map_err(|e| e.to_string());
        // The line is written before the answer is sent; give Viceroy's output a moment.
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let line = self.room.try_log_line_since(mark);
            if line.is_some() || Instant::now() > deadline {
                return Answer {
                    response,
                    output: self.room.output_since(mark),
                    line,
                };
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A TCP relay to the origin that can be cut: while cut it closes the connections it
/// holds, and every new one at once, as a host that is down.
struct Relay {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(origin: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (is_cut, held) = (cut.clone(), open.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if is_cut.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(origin) else {
                    continue;
                };
                let mut held = held.lock().unwrap();
                held.extend(client.try_clone());
                held.extend(server.try_clone());
                if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                    pipe(c, s);
                    pipe(server, client);
                }
            }
        });
        Relay { addr, cut, open }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
        if cut {
            for stream in self.open.lock().unwrap().drain(..) {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    thread::spawn(move || {
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// What a `Set-Cookie` does to a room cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deletes,
    Allow,
    Wait,
    Other,
}

/// The room cookies (`waiting_…`) `r` sets or deletes, and how.
fn room_cookies(r: &Response) -> Vec<(String, Kind)> {
    r.all("set-cookie")
        .into_iter()
        .filter_map(|header| {
            let (name, rest) = header.split_once('=')?;
            if !name.starts_with("waiting_") {
                return None;
            }
            let value = rest.split(';').next().unwrap_or_default();
            let kind = if value == "deleted" || header.contains("1970") {
                Kind::Deletes
            } else {
                match mint::try_open(value) {
                    Some(text) if text.starts_with("dec=allow&") => Kind::Allow,
                    Some(text) if text.starts_with("dec=wait&") => Kind::Wait,
                    _ => Kind::Other,
                }
            };
            Some((name.to_string(), kind))
        })
        .collect()
}

/// What a body must not show: a panic, a backtrace, Rust's error text.
const INTERNALS: &[&str] = &[
    "panicked",
    "backtrace",
    "RUST_BACKTRACE",
    "called `",
    ".rs:",
    "Error {",
];

/// What a fault-free answer that is not the path it names says is wrong with it.
fn baseline_problems(path: &Path, base: &Answer) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(r) = &base.response else {
        return vec![format!("no answer: {:?}", base.response.as_ref().err())];
    };
    let held = !base.forwarded() && r.status == 200;
    let ok = match path.expect {
        Expect::Forwarded => base.forwarded(),
        Expect::Held(text) => held && text.is_none_or(|t| r.body.contains(t)),
        Expect::Redirect => r.status == 302,
        Expect::OriginDown => r.status == 503 && base.forwarded(),
    };
    if !ok {
        problems.push(format!(
            "the fault-free answer is not {:?}: {} {}",
            path.expect,
            r.status,
            base.line.as_deref().unwrap_or("(no line)")
        ));
    }
    if !faults::lines(&base.output).is_empty()
        || base
            .line
            .as_ref()
            .is_none_or(|l| l.contains("ALERT=unreadable"))
    {
        problems.push(format!("a read failed without a fault:\n{}", base.output));
    }
    problems
}

/// What the faulted answer `f` breaks of the fail-safe invariants, against the
/// fault-free answer `base`, the fault being `fault`.
fn broken(base: &Answer, f: &Answer, fault: &faults::Line) -> Vec<String> {
    let mut broken = Vec::new();
    let base_r = base.response.as_ref().expect("checked");
    if f.output.contains("panicked") || f.output.contains("wasm backtrace") {
        broken.push("a panic in Viceroy's output".to_string());
    }
    let r = match &f.response {
        Ok(r) => r,
        Err(e) => {
            broken.push(format!("no answer: {e}"));
            return broken;
        }
    };
    if f.forwarded() && !base.forwarded() {
        broken.push(format!(
            "admitted (to the origin) where the fault-free answer was {}",
            base_r.status
        ));
    }
    let base_cookies = room_cookies(base_r);
    for (name, kind) in room_cookies(r) {
        if !base_cookies.contains(&(name.clone(), kind)) {
            broken.push(format!(
                "Set-Cookie {name} ({kind:?}) where the fault-free answer set {base_cookies:?}"
            ));
        }
    }
    if r.status >= 500 {
        if r.status != 503 || r.header("retry-after").is_none() {
            broken.push(format!(
                "a {} with Retry-After {:?}, not a 503 \"try again\"",
                r.status,
                r.header("retry-after")
            ));
        }
        if base_r.status < 500 && !r.all("set-cookie").is_empty() {
            broken.push(format!("a 503 that sets {:?}", r.all("set-cookie")));
        }
    }
    if let Some(shown) = INTERNALS.iter().find(|i| r.body.contains(*i)) {
        broken.push(format!("the body shows internals ({shown:?})"));
    }
    let named = match (fault.read, fault.store.as_str()) {
        (_, "waitingroom_signingkeys") => "signing-key".to_string(),
        (Read::Secret, "waitingroom_challenge") => "challenge-secret".to_string(),
        (Read::Secret, "waitingroom_login") => "login-key".to_string(),
        _ => fault.key.clone(),
    };
    match &f.line {
        None => broken.push("no line of the room's".to_string()),
        Some(line) if !unreadable(line).contains(&named) => broken.push(format!(
            "the line does not name {named} as unreadable: {line}"
        )),
        Some(_) => {}
    }
    broken
}

/// Sweeps every path on the room whose keys live in `keys`: the failures, and for
/// each path how many lookups and secret reads it makes.
fn sweep(keys: Keys) -> (Vec<String>, Vec<String>) {
    let bench = Bench::start(keys);
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    let paths = paths(now());
    // Each path's visitor is its own: a token's `uid` is its visitor's address.
    let mut visitors: Vec<u8> = paths.iter().map(|p| p.from).collect();
    visitors.sort_unstable();
    visitors.dedup();
    assert_eq!(visitors.len(), paths.len(), "two paths share a visitor");
    for path in paths {
        let config: Vec<(&str, &str)> = path.config.iter().map(|(k, v)| (*k, v.as_str())).collect();
        bench.room.reset_config(&config);
        bench.relay.set_cut(path.origin_down());
        let here = format!("{keys:?} {} (127.0.0.{})", path.name, path.from);
        let base = bench.ask(&path, None);
        let problems = baseline_problems(&path, &base);
        if !problems.is_empty() {
            failures.extend(problems.iter().map(|p| format!("{here} baseline: {p}")));
            continue;
        }
        let mut made: Vec<Vec<String>> = Vec::new();
        for (read, header) in [(Read::Lookup, FAIL_LOOKUP), (Read::Secret, FAIL_SECRET)] {
            let mut keys = Vec::new();
            let mut k = 1;
            loop {
                let f = bench.ask(&path, Some((header, k)));
                let lines = faults::lines(&f.output);
                let Some(fault) = lines.first() else { break };
                if (fault.read, fault.position, fault.refused) != (read, k, false) {
                    failures.push(format!("{here} {header}: {k}: Viceroy failed {fault:?}"));
                    break;
                }
                for what in broken(&base, &f, fault) {
                    failures.push(format!(
                        "{here} {header}: {k} ({} {}): {what}",
                        fault.store, fault.key
                    ));
                }
                keys.push(fault.key.clone());
                k += 1;
                if k > MAX_POSITION {
                    failures.push(format!("{here}: more than {MAX_POSITION} reads"));
                    break;
                }
            }
            made.push(keys);
        }
        counts.push(format!(
            "{here}: {} lookups {}; {} secret reads {}",
            made[0].len(),
            made[0].join(","),
            made[1].len(),
            made[1].join(",")
        ));
    }
    (failures, counts)
}

#[test]
fn every_read_of_every_worst_path_fails_safe() {
    if !faults::required("fail_safe::every_read_of_every_worst_path_fails_safe") {
        return;
    }
    let started = Instant::now();
    let sweeps: Vec<_> = [Keys::ConfigStore, Keys::SecretStore]
        .into_iter()
        .map(|keys| thread::spawn(move || sweep(keys)))
        .collect();
    let mut failures = Vec::new();
    for sweep in sweeps {
        let (failed, counts) = sweep.join().expect("a sweep panicked");
        for count in counts {
            eprintln!("{count}");
        }
        failures.extend(failed);
    }
    eprintln!("the sweep took {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "{} reads fail unsafely:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
