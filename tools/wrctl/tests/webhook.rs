//! The alert notifications (`WRCTL_WEBHOOK_URL`, `wrctl::notify`) against a local
//! receiver on loopback: a receiver that hangs never delays a controller write
//! (the real process keeps writing every tick, measured); a receiver that fails
//! then recovers gets every message its queue held, in order, and the count of
//! those dropped; the URL never shows on stderr or in the metrics.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Wrctl, eventually, in_room, metric, run_to_end, unix_now};
use wrctl::notify::{Notifier, Options, Transition};
use wrctl::synthetic::Crowd;

/// What the receiver does with a post.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// 200.
    Take,
    /// 500.
    Fail,
    /// Reads it and never answers (until the mode changes: then the connection is
    /// closed without an answer).
    Hang,
}

/// A webhook receiver: records every post's body (and the mode it met).
#[derive(Clone)]
struct Receiver {
    addr: SocketAddr,
    mode: Arc<Mutex<Mode>>,
    posts: Arc<Mutex<Vec<(Mode, Value)>>>,
}

impl Receiver {
    fn start(mode: Mode) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let receiver = Receiver {
            addr: listener.local_addr().unwrap(),
            mode: Arc::new(Mutex::new(mode)),
            posts: Arc::new(Mutex::new(Vec::new())),
        };
        let shared = receiver.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = shared.clone();
                thread::spawn(move || shared.serve(stream));
            }
        });
        receiver
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn posts(&self) -> Vec<(Mode, Value)> {
        self.posts.lock().unwrap().clone()
    }

    fn serve(&self, mut stream: TcpStream) {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let body_at = loop {
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        };
        let head = String::from_utf8_lossy(&raw[..body_at]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while raw.len() < body_at + length {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
        let body = serde_json::from_slice(&raw[body_at..body_at + length]).unwrap_or(Value::Null);
        let mode = *self.mode.lock().unwrap();
        self.posts.lock().unwrap().push((mode, body));
        let status = match mode {
            Mode::Take => "200 OK",
            Mode::Fail => "500 Internal Server Error",
            Mode::Hang => {
                while *self.mode.lock().unwrap() == Mode::Hang {
                    thread::sleep(Duration::from_millis(20));
                }
                // Closed without an answer.
                return;
            }
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        );
    }
}

fn transition(n: u64) -> Transition {
    Transition {
        alert: "writes-failing",
        raised: n % 2 == 1,
        room: None,
        at: 1_700_000_000 + n,
        figures: json!({ "n": n }),
    }
}

#[test]
fn a_receiver_that_fails_then_recovers_gets_the_queue_in_order_and_the_drops_count() {
    let receiver = Receiver::start(Mode::Fail);
    let notifier = Notifier::start(
        format!("http://{}/hook", receiver.addr),
        Options {
            queue: 3,
            per_minute: 600,
            backoff: Duration::from_millis(50),
            backoff_max: Duration::from_millis(200),
            attempts: 1_000,
            timeout: Duration::from_secs(5),
        },
    )
    .unwrap();
    // The first is being posted (and failing) before the others come: three
    // wait in the queue, four find it full.
    notifier.notify(transition(1));
    eventually("a first failed post", || {
        (!receiver.posts().is_empty()).then_some(())
    });
    for n in 2..=8 {
        notifier.notify(transition(n));
    }
    let counters = notifier.counters();
    assert_eq!((counters.dropped, counters.queued), (4, 4), "{counters:?}");
    // Failing for a while: the first is retried with back-off, nothing delivered.
    thread::sleep(Duration::from_millis(400));
    assert_eq!(notifier.counters().delivered, 0);
    receiver.set(Mode::Take);
    eventually("the queue delivered", || {
        (notifier.counters().delivered == 4).then_some(())
    });
    let posts = receiver.posts();
    let failed = posts.iter().filter(|(m, _)| *m == Mode::Fail).count();
    assert!(failed >= 2, "retried while failing: {failed}");
    assert!(
        posts
            .iter()
            .take(failed)
            .all(|(_, b)| b["figures"]["n"] == 1)
    );
    let delivered: Vec<(u64, u64)> = posts
        .iter()
        .filter(|(m, _)| *m == Mode::Take)
        .map(|(_, b)| {
            (
                b["figures"]["n"].as_u64().unwrap(),
                b["dropped_before"].as_u64().unwrap(),
            )
        })
        .collect();
    // In order; the first delivered after the drops says how many.
    assert_eq!(delivered, [(1, 4), (2, 0), (3, 0), (4, 0)]);
    let first = &posts[failed].1;
    assert!(
        first["text"]
            .as_str()
            .unwrap()
            .contains("4 earlier notification(s) dropped"),
        "{first}"
    );
    assert_eq!(first["state"], "raised");
    assert_eq!(posts[failed + 1].1["state"], "cleared");
    let counters = notifier.counters();
    assert_eq!(
        (counters.delivered, counters.dropped, counters.queued),
        (4, 4, 0)
    );
    assert_eq!(counters.failed_posts, failed as u64);
}

/// A minute of a crowd's lines in `room` that admits far more than 60 a minute
/// with people waiting (`admissions-off-target`), one of them saying a store
/// read failed (`unreadable-store-keys`).
fn lines_of(room: Option<&str>, seed: u64) -> Vec<String> {
    let mut crowd = Crowd::new(unix_now() - 120, seed);
    crowd.arrivals_per_second = 20;
    let mut lines: Vec<String> = crowd.lines(120).iter().map(|l| in_room(l, room)).collect();
    let last = lines.pop().unwrap();
    lines.push(format!("{last} ALERT=unreadable:page.fr"));
    lines
}

#[test]
fn a_hanging_receiver_never_delays_a_write_and_the_url_is_never_shown() {
    let receiver = Receiver::start(Mode::Hang);
    let secret = "T0AAAA/B0BBBB/s3cretHookPath";
    let url = format!("http://{}/services/{secret}", receiver.addr);
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--service-room",
            "--room",
            "drops",
            "--room",
            "vip",
            "--dry-run",
            "--tick",
            "1",
            "--heartbeat-every",
            "1",
            "--log-silence",
            "0",
            "--listen",
            "127.0.0.1:0",
            "--webhook-queue",
            "1",
        ],
        &[("WRCTL_WEBHOOK_URL", url.as_str())],
    );
    for (i, room) in [None, Some("drops"), Some("vip")].into_iter().enumerate() {
        wrctl.feed(&lines_of(room, 7 + i as u64));
    }
    // The first transition's post hangs; the others wait (one) or are dropped.
    eventually("a post to the hanging receiver", || {
        (!receiver.posts().is_empty()).then_some(())
    });
    let dropped = eventually("transitions dropped", || {
        metric(&wrctl.get("/metrics"), "wrctl_webhook_dropped_total").filter(|d| *d >= 1.0)
    });
    // Writes keep their cadence, one a tick, while the post hangs.
    let start = Instant::now();
    let before = wrctl.metric("wrctl_writes_total").unwrap();
    thread::sleep(Duration::from_secs(5));
    let after = wrctl.metric("wrctl_writes_total").unwrap();
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        after - before >= seconds.floor() - 1.0,
        "{} writes in {seconds:.1} s while the webhook hung",
        after - before
    );
    assert!(
        receiver.posts().iter().all(|(m, _)| *m == Mode::Hang),
        "nothing answered yet"
    );
    let text = wrctl.get("/metrics");
    assert_eq!(metric(&text, "wrctl_webhook_delivered_total"), Some(0.0));
    assert!(metric(&text, "wrctl_webhook_queued").is_some_and(|q| q >= 1.0));
    // The receiver closes without an answer: the failure is said on stderr,
    // without the URL; the next post is taken and says what was dropped.
    receiver.set(Mode::Take);
    let err = eventually("the failure said", || {
        let err = wrctl.stderr();
        err.contains("webhook: ").then_some(err)
    });
    let delivered = eventually("a delivered post", || {
        receiver
            .posts()
            .into_iter()
            .find(|(m, _)| *m == Mode::Take)
            .map(|(_, b)| b)
    });
    assert!(
        delivered["dropped_before"].as_f64().unwrap() >= dropped,
        "{delivered}"
    );
    let text = wrctl.get("/metrics");
    for shown in [&err, &text, &wrctl.get("/status.json")] {
        assert!(
            !shown.contains("s3cret") && !shown.contains("/services/"),
            "the webhook's URL is shown:\n{shown}"
        );
    }
    assert!(err.contains("WRCTL_WEBHOOK_URL"), "{err}");
}

#[test]
fn a_webhook_url_that_is_not_http_is_a_usage_error_that_does_not_show_it() {
    for url in ["", "  ", "ftp://hooks.invalid/s3cret", "s3cret"] {
        let (code, err) = run_to_end(
            &["control", "--target-per-minute", "60", "--dry-run"],
            &[("WRCTL_WEBHOOK_URL", url)],
        );
        assert_eq!(code, Some(2), "{url:?}: {err}");
        assert!(err.contains("WRCTL_WEBHOOK_URL"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
