//! Nobody else steers the controller: a real `wrctl control` writing to a Fastly
//! store refuses to take log lines from anyone on an address other than loopback
//! unless `WRCTL_LOG_SECRET` is set or the risk is accepted
//! (`--accept-unauthenticated-logs`, then it warns every minute and raises
//! `wrctl_alert{alert="unauthenticated-logs"}`); with the secret, a forged batch
//! changes nothing in every setup the docs give; `--state-listen` keeps the
//! dashboard and the metrics off the log address.

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::{MockApi, Wrctl, metric, run_to_end, to_fastly, unix_now};

const TOKEN: (&str, &str) = ("FASTLY_API_TOKEN", "token-for-tests");
const SECRET: &str = "s3cret-for-tests";

/// A process's environment: names and values.
type Env<'a> = Vec<(&'a str, &'a str)>;

/// `addr`, with an unspecified address (`0.0.0.0`, `::`) replaced by 127.0.0.1
/// (a socket on `::` takes IPv4 too, as Linux does by default).
fn reachable(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        ([127, 0, 0, 1], addr.port()).into()
    } else {
        addr
    }
}

/// `GET /metrics` at `addr`, over IPv6 for an IPv6 address.
fn metrics_at(addr: SocketAddr) -> String {
    let reply = match addr {
        SocketAddr::V6(_) => test_support::http::get_v6(addr, "/metrics", &[]),
        SocketAddr::V4(_) => test_support::http::request(addr, 1, "GET", "/metrics", &[], b""),
    };
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body
}

/// Starts `wrctl` with `args` and `env`, its listener's address made reachable.
fn start(args: &[&str], env: &[(&str, &str)]) -> Wrctl {
    let mut wrctl = Wrctl::start(args, env);
    wrctl.addr = wrctl.addr.map(reachable);
    wrctl
}

/// A forged batch: `n` new sessions (`session=new`) of room `room`, which would
/// make the controller cut admissions, then `n` lost draws, which would make it
/// open the room.
fn forged(n: usize, room: Option<&str>) -> String {
    let t = unix_now();
    let mut body = String::new();
    for i in 0..n {
        let line = format!(
            "waitingroom t={t} decision=allow uid=198.51.100.{} p=50 session=new \
             transition=lottery-won exp={} path=/events",
            i % 250,
            t + 600
        );
        body.push_str(&support::in_room(&line, room));
        body.push('\n');
        let line = format!(
            "waitingroom t={t} decision=re-wait uid=203.0.113.{} p=50 \
             transition=lottery-lost exp={} path=/events",
            i % 250,
            t + 60
        );
        body.push_str(&support::in_room(&line, room));
        body.push('\n');
    }
    body
}

/// `name` for the room `room` (`None`: unlabelled) in a metrics text.
fn room_metric(text: &str, name: &str, room: Option<&str>) -> f64 {
    let name = match room {
        Some(room) => format!("{name}{{room=\"{room}\"}}"),
        None => name.to_string(),
    };
    metric(text, &name).unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

#[test]
fn a_fastly_writer_on_a_public_address_without_the_secret_is_refused() {
    for listen in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8080"] {
        let args = to_fastly("http://127.0.0.1:9", &["--listen", listen]);
        let (code, err) = run_to_end(&args, &[TOKEN]);
        assert_eq!(
            code,
            Some(2),
            "--listen {listen}: exit code; stderr:\n{err}"
        );
        for word in ["WRCTL_LOG_SECRET", "--accept-unauthenticated-logs", listen] {
            assert!(
                err.contains(word),
                "--listen {listen}: {word:?} not in:\n{err}"
            );
        }
        assert!(!err.contains("token-for-tests"), "{err}");
    }
}

#[test]
fn loopback_another_sink_or_the_secret_starts_without_the_alert() {
    let api = MockApi::start(&[200], r#"{"status":"ok"}"#);
    let url = api.url();
    let starts: [(Vec<&str>, Env); 4] = [
        // Loopback, behind a proxy: the docs' setup, the secret asked for by the docs.
        (to_fastly(&url, &["--listen", "127.0.0.1:0"]), vec![TOKEN]),
        // The secret set.
        (
            to_fastly(&url, &["--listen", "0.0.0.0:0"]),
            vec![TOKEN, ("WRCTL_LOG_SECRET", SECRET)],
        ),
        // Nothing written to Fastly: a dry run on every address.
        (
            vec![
                "control",
                "--target-per-minute",
                "60",
                "--dry-run",
                "--listen",
                "0.0.0.0:0",
            ],
            vec![],
        ),
        (to_fastly(&url, &["--listen", "[::1]:0"]), vec![TOKEN]),
    ];
    for (i, (args, env)) in starts.into_iter().enumerate() {
        let wrctl = start(&args, &env);
        let err = wrctl.stderr();
        assert!(!err.contains("anyone who can reach"), "{args:?}:\n{err}");
        // On loopback without the secret, a warning at start: a proxy in front
        // forwards anyone's lines.
        let loopback_without_secret = i == 0 || i == 3;
        assert_eq!(
            err.contains("takes log lines without WRCTL_LOG_SECRET"),
            loopback_without_secret,
            "{args:?}:\n{err}"
        );
        assert_eq!(
            metric(
                &metrics_at(wrctl.addr.unwrap()),
                "wrctl_alert{alert=\"unauthenticated-logs\"}"
            ),
            Some(0.0),
            "{args:?}"
        );
    }
}

#[test]
fn accepting_the_risk_starts_warns_every_minute_and_raises_the_alert() {
    let api = MockApi::start(&[200], r#"{"status":"ok"}"#);
    let url = api.url();
    let args = to_fastly(
        &url,
        &["--listen", "0.0.0.0:0", "--accept-unauthenticated-logs"],
    );
    let wrctl = start(&args, &[TOKEN]);
    let warning = "log lines are taken from anyone who can reach --listen";
    let started = Instant::now();
    assert_eq!(
        wrctl.stderr().matches(warning).count(),
        1,
        "{}",
        wrctl.stderr()
    );
    assert_eq!(
        metric(
            &wrctl.get("/metrics"),
            "wrctl_alert{alert=\"unauthenticated-logs\"}"
        ),
        Some(1.0)
    );
    // Lines are taken without a secret, as accepted.
    let reply = wrctl.request("POST", "/logs", &[], forged(2, None).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Said again a minute later (at the first tick past it),
    // and not before.
    let deadline = started + Duration::from_secs(90);
    loop {
        let count = wrctl.stderr().matches(warning).count();
        if count >= 2 {
            assert!(
                started.elapsed() >= Duration::from_secs(58),
                "said again after {:?}",
                started.elapsed()
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not said again:\n{}",
            wrctl.stderr()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Posts a forged batch with each wrong authorization and checks it is refused
/// and counted nowhere, then posts it with the secret and checks it is counted:
/// the route is live, and only the secret opens it.
fn forged_batches_change_nothing(wrctl: &Wrctl, rooms: &[Option<&str>]) {
    let state = |wrctl: &Wrctl| -> String { wrctl.get("/metrics") };
    for room in rooms {
        let body = forged(100, *room);
        for authorization in [None, Some("Bearer wrong"), Some(SECRET), Some("Bearer ")] {
            let headers: Vec<(&str, &str)> = authorization
                .map(|a| ("Authorization", a))
                .into_iter()
                .collect();
            for path in ["/", "/logs"] {
                let reply = wrctl.request("POST", path, &headers, body.as_bytes());
                assert_eq!(reply.status, 401, "{room:?} {authorization:?} {path}");
            }
        }
    }
    let before = state(wrctl);
    for room in rooms {
        for name in [
            "wrctl_log_lines_total",
            "wrctl_admissions_last_minute",
            "wrctl_draws_last_minute",
        ] {
            assert_eq!(room_metric(&before, name, *room), 0.0, "{name} {room:?}");
        }
    }
    let secret = format!("Bearer {SECRET}");
    for room in rooms {
        let body = forged(100, *room);
        let reply = wrctl.request(
            "POST",
            "/logs",
            &[("Authorization", &secret)],
            body.as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    let after = state(wrctl);
    for room in rooms {
        assert_eq!(room_metric(&after, "wrctl_log_lines_total", *room), 200.0);
        assert_eq!(
            room_metric(&after, "wrctl_admissions_last_minute", *room),
            100.0
        );
    }
}

#[test]
fn with_the_secret_a_forged_batch_changes_nothing_in_every_documented_setup() {
    let api = MockApi::start(&[200], r#"{"status":"ok"}"#);
    let url = api.url();
    let env = [TOKEN, ("WRCTL_LOG_SECRET", SECRET)];
    // controller.md and the README's checklist: loopback behind a TLS proxy.
    let readme = to_fastly(
        &url,
        &[
            "--max-active",
            "20000",
            "--wait-period",
            "30",
            "--start",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--service-id",
            "SU1Z0isxPaozGVKXdv0eY",
        ],
    );
    // wrctl control --help: the endpoint posting straight to the controller.
    let public = to_fastly(
        &url,
        &[
            "--listen",
            "0.0.0.0:0",
            "--service-id",
            "SU1Z0isxPaozGVKXdv0eY",
        ],
    );
    let public_v6 = to_fastly(&url, &["--listen", "[::]:0"]);
    for args in [readme, public, public_v6] {
        let wrctl = start(&args, &env);
        forged_batches_change_nothing(&wrctl, &[None]);
    }
    // --help's rooms of one service, one writer.
    let rooms = to_fastly(
        &url,
        &[
            "--service-room",
            "--room",
            "drops:target=300,queueing=fifo,event.drop-1=1200",
            "--room",
            "vip:target=100",
            "--listen",
            "0.0.0.0:0",
            "--service-id",
            "SU1Z0isxPaozGVKXdv0eY",
        ],
    );
    let wrctl = start(&rooms, &env);
    forged_batches_change_nothing(&wrctl, &[None, Some("drops"), Some("vip")]);
    // The docs' split: logs on the public address, the state on loopback.
    let split = to_fastly(
        &url,
        &["--listen", "0.0.0.0:0", "--state-listen", "127.0.0.1:0"],
    );
    let mut wrctl = start(&split, &env);
    let logs = wrctl.addr.unwrap();
    // The state is read on its own address: what forged_batches_change_nothing
    // reads with GET goes there, what it posts to the log address.
    let state = wrctl.state_addr();
    let reply = test_support::http::request(logs, 1, "POST", "/logs", &[], b"x\n");
    assert_eq!(reply.status, 401);
    wrctl.addr = Some(state);
    let reply = wrctl.request("POST", "/logs", &[], forged(1, None).as_bytes());
    assert_eq!(reply.status, 404, "the state address takes no log lines");
    let reply = wrctl.request("POST", "/", &[], forged(1, None).as_bytes());
    assert_eq!(reply.status, 405, "the state address takes no log lines");
    assert_eq!(
        room_metric(&wrctl.get("/metrics"), "wrctl_log_lines_total", None),
        0.0
    );
    let secret = format!("Bearer {SECRET}");
    let reply = test_support::http::request(
        logs,
        1,
        "POST",
        "/logs",
        &[("Authorization", &secret)],
        forged(3, None).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        room_metric(&wrctl.get("/metrics"), "wrctl_log_lines_total", None),
        6.0
    );
}

#[test]
fn with_state_listen_the_log_address_shows_no_state() {
    let wrctl = start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--dry-run",
            "--listen",
            "127.0.0.1:0",
            "--state-listen",
            "127.0.0.1:0",
            "--service-id",
            "abc",
        ],
        &[],
    );
    let logs = wrctl.addr.unwrap();
    let state = wrctl.state_addr();
    assert_ne!(logs, state);
    let get = |addr, path| test_support::http::request(addr, 1, "GET", path, &[], b"");
    for path in ["/metrics", "/status.json", "/dashboard"] {
        assert_eq!(get(logs, path).status, 404, "{path} on the log address");
        assert_eq!(get(state, path).status, 200, "{path} on the state address");
    }
    assert_eq!(
        get(logs, "/").status,
        405,
        "the dashboard on the log address"
    );
    assert_eq!(get(state, "/").status, 200);
    // The challenge is the log address's business only.
    let challenge = "/.well-known/fastly/logging/challenge";
    assert_eq!(get(logs, challenge).status, 200);
    assert_eq!(get(state, challenge).status, 404);
}

#[test]
fn state_listen_needs_listen() {
    let (code, err) = run_to_end(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--dry-run",
            "--state-listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--listen"), "{err}");
}

#[test]
fn accepting_a_risk_that_is_not_there_is_warned_about() {
    let api = MockApi::start(&[200], r#"{"status":"ok"}"#);
    let url = api.url();
    let flag = "--accept-unauthenticated-logs";
    let unused = "--accept-unauthenticated-logs is used only with";
    let secret = [TOKEN, ("WRCTL_LOG_SECRET", SECRET)];
    let no_risk: [(Vec<&str>, Env); 3] = [
        (
            to_fastly(&url, &["--listen", "0.0.0.0:0", flag]),
            secret.to_vec(),
        ),
        (
            to_fastly(&url, &["--listen", "127.0.0.1:0", flag]),
            vec![TOKEN],
        ),
        (
            vec![
                "control",
                "--target-per-minute",
                "60",
                "--dry-run",
                "--listen",
                "0.0.0.0:0",
                flag,
            ],
            vec![],
        ),
    ];
    for (args, env) in no_risk {
        let wrctl = start(&args, &env);
        assert!(
            wrctl.stderr().contains(unused),
            "{args:?}:\n{}",
            wrctl.stderr()
        );
        assert_eq!(
            metric(
                &wrctl.get("/metrics"),
                "wrctl_alert{alert=\"unauthenticated-logs\"}"
            ),
            Some(0.0),
            "{args:?}"
        );
    }
    // Where the risk is there, the flag is not said to be unused.
    let wrctl = start(&to_fastly(&url, &["--listen", "0.0.0.0:0", flag]), &[TOKEN]);
    assert!(!wrctl.stderr().contains(unused), "{}", wrctl.stderr());
}
