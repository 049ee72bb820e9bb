//! The HTTP listener of a real `wrctl control --listen`: the logging challenge, log
//! POSTs counted in /metrics and /status.json, the dashboard, 404/405/413/415, and
//! garbage that gets a 400 without hurting the listener.

use crate::support;

use std::io::Write as _;

use support::{Wrctl, exchange, unix_now};

fn start(extra: &[&str]) -> Wrctl {
    start_with_env(extra, &[])
}

/// `wrctl control` listening, in a dry run, with `extra` arguments and the environment `env`.
fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Wrctl {
    let args = [
        "control",
        "--target-per-minute",
        "60",
        "--dry-run",
        "--listen",
        "127.0.0.1:0",
        "--quiet",
    ];
    Wrctl::start(&[&args[..], extra].concat(), env)
}

fn room_lines(n: usize) -> String {
    room_lines_at(unix_now(), n)
}

/// `n` lines of arrivals at Unix second `t`, from 250 addresses.
fn room_lines_at(t: u64, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "waitingroom t={t} decision=anon uid=192.0.2.{} p=50 exp={} path=/events\n",
                i % 250,
                t + 30
            )
        })
        .collect()
}

#[test]
fn the_challenge_lists_the_service_ids_hashes() {
    let wrctl = start(&[
        "--service-id",
        "abc",
        "--service-id",
        "SU1Z0isxPaozGVKXdv0eY",
    ]);
    let reply = wrctl.request("GET", "/.well-known/fastly/logging/challenge", &[], b"");
    assert_eq!(reply.status, 200);
    // sha256("abc"), and the other ID's digest computed here.
    use sha2::{Digest, Sha256};
    let other = hex::encode(Sha256::digest(b"SU1Z0isxPaozGVKXdv0eY"));
    assert_eq!(
        reply.body,
        format!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n{other}\n")
    );
    let wrctl = start(&[]);
    assert_eq!(wrctl.get("/.well-known/fastly/logging/challenge"), "*\n");
}

#[test]
fn posted_lines_are_counted_in_metrics_and_status() {
    let wrctl = start(&[]);
    // One second for every line, so the series' newest second holds every arrival.
    let t = unix_now();
    let mut body = room_lines_at(t, 1000);
    body.push_str("some other program's line\n\nwaitingroom t=1 uid=x\n");
    let reply = wrctl.request(
        "POST",
        "/",
        &[("Content-Type", "text/plain")],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body, "accepted 1002 lines (2 bad)\n");
    let reply = wrctl.request("POST", "/logs", &[], room_lines_at(t, 10).as_bytes());
    assert_eq!(reply.status, 200);

    // A gzip body, as Fastly sends with compression on.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(room_lines_at(t, 5).as_bytes()).unwrap();
    let reply = wrctl.request(
        "POST",
        "/logs",
        &[("Content-Encoding", "gzip")],
        &gz.finish().unwrap(),
    );
    assert_eq!(reply.body, "accepted 5 lines (0 bad)\n");

    let metrics = wrctl.get("/metrics");
    let value = |name| support::metric(&metrics, name);
    assert_eq!(value("wrctl_log_lines_total"), Some(1015.0), "{metrics}");
    assert_eq!(
        value("wrctl_bad_log_lines_total{reason=\"not_room_line\"}"),
        Some(1.0)
    );
    assert_eq!(
        value("wrctl_bad_log_lines_total{reason=\"missing_field\"}"),
        Some(1.0)
    );
    // Arrivals count addresses, not lines: the lines come from 250 of them.
    assert_eq!(value("wrctl_arrivals_last_minute"), Some(250.0));
    assert_eq!(value("wrctl_waiting_addresses"), Some(250.0));
    assert_eq!(value("wrctl_target_new_sessions_per_minute"), Some(60.0));
    // Every sample has its HELP and TYPE (OpenMetrics names a counter's family
    // without the _total its sample carries), and counters end in _total.
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        let (family, kind) = metrics
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE ")?.split_once(' '))
            .find(|(family, _)| name == *family || name.strip_suffix("_total") == Some(family))
            .unwrap_or_else(|| panic!("no TYPE for {name}"));
        assert!(metrics.contains(&format!("# HELP {family} ")), "{name}");
        assert_eq!(kind == "counter", name.ends_with("_total"), "{name}");
    }
    assert!(metrics.ends_with("# EOF\n"), "{metrics}");

    let status = wrctl.status();
    assert_eq!(status["lines_total"], 1015);
    // The room's own bad line (a room line without `room=`: the service
    // room's), and the log's, another program's line among them.
    assert_eq!(status["bad_lines_total"], 1);
    assert_eq!(status["stream_bad_lines_total"], 2);
    assert_eq!(status["dry_run"], true);
    assert_eq!(status["sink"], "dry run");
    assert_eq!(status["target_per_minute"], 60);
    assert_eq!(status["max_active"], serde_json::Value::Null);
    assert_eq!(status["waiting_estimate"], 250);
    assert_eq!(status["min_percentage"], "0.0001");
    assert_eq!(status["max_percentage"], "100");
    let series = &status["series"];
    let len = series["t"].as_array().unwrap().len();
    assert_eq!(len, 600);
    for key in [
        "arrivals",
        "draws",
        "admissions",
        "renewals",
        "releases",
        "active",
        "percentage",
    ] {
        assert_eq!(series[key].as_array().unwrap().len(), len, "{key}");
    }
    assert_eq!(series["arrivals"][len - 1], 250);
    assert_eq!(series["percentage"][len - 1], 50.0);
    assert_eq!(status["now"], series["t"][len - 1]);
}

#[test]
fn the_dashboard_is_served_at_root_and_dashboard() {
    let wrctl = start(&[]);
    for path in ["/", "/dashboard", "/?x=1"] {
        let reply = wrctl.request("GET", path, &[], b"");
        assert_eq!(reply.status, 200);
        assert!(
            reply
                .header("Content-Type")
                .unwrap()
                .starts_with("text/html")
        );
        assert!(reply.body.contains("status.json"));
    }
    let reply = wrctl.request("HEAD", "/metrics", &[], b"");
    assert_eq!(reply.status, 200);
}

#[test]
fn unknown_paths_wrong_methods_and_big_bodies_are_refused() {
    let wrctl = start(&["--max-body-bytes", "1000"]);
    for path in ["/nope", "/metrics/x", "/status", "/logs/x"] {
        assert_eq!(wrctl.request("GET", path, &[], b"").status, 404, "{path}");
    }
    for (method, path, allow) in [
        ("DELETE", "/metrics", "GET, HEAD"),
        ("POST", "/status.json", "GET, HEAD"),
        ("PUT", "/", "GET, HEAD, POST"),
        ("GET", "/logs", "POST"),
        ("POST", "/.well-known/fastly/logging/challenge", "GET, HEAD"),
    ] {
        let reply = wrctl.request(method, path, &[], b"");
        assert_eq!(reply.status, 405, "{method} {path}");
        assert_eq!(reply.header("Allow"), Some(allow));
    }
    let big = room_lines(100);
    assert!(big.len() > 1000);
    let reply = wrctl.request("POST", "/logs", &[], big.as_bytes());
    assert_eq!(reply.status, 413);
    // Too big once unzipped.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(big.as_bytes()).unwrap();
    let zipped = gz.finish().unwrap();
    assert!(zipped.len() < 1000);
    let reply = wrctl.request("POST", "/logs", &[("Content-Encoding", "gzip")], &zipped);
    assert_eq!(reply.status, 413);
    // Not gzip after all, or another encoding.
    let reply = wrctl.request("POST", "/logs", &[("Content-Encoding", "gzip")], b"plain");
    assert_eq!(reply.status, 400);
    let reply = wrctl.request("POST", "/logs", &[("Content-Encoding", "br")], b"x");
    assert_eq!(reply.status, 415);
    // None of it was counted.
    assert_eq!(wrctl.status()["lines_total"], 0);
}

#[test]
fn garbage_gets_400_and_the_listener_carries_on() {
    let wrctl = start(&["--max-body-bytes", "100000"]);
    let addr = wrctl.addr.unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut garbage = || {
        (0..512)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect::<Vec<u8>>()
    };
    let inputs: Vec<Vec<u8>> = vec![
        b"garbage\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nno colon here\r\n\r\n".to_vec(),
        b"POST /logs HTTP/1.1\r\nContent-Length: nope\r\n\r\n".to_vec(),
        b"POST /logs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        garbage(),
        garbage(),
        [
            b"POST /logs HTTP/1.1\r\nContent-Length: 600\r\n\r\n".as_slice(),
            &garbage(),
        ]
        .concat(),
    ];
    for raw in &inputs {
        // Either a 4xx answer or a closed connection; never a crash.
        if let Ok(reply) = exchange(addr, raw) {
            assert!(
                (200..500).contains(&reply.status),
                "{raw:?}: {}",
                reply.status
            );
        }
    }
    let reply = exchange(addr, b"garbage\r\n\r\n").unwrap();
    assert_eq!(reply.status, 400);
    let huge = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(20_000));
    assert_eq!(exchange(addr, huge.as_bytes()).unwrap().status, 431);
    let cut = exchange(
        addr,
        b"POST /logs HTTP/1.1\r\nContent-Length: 50\r\n\r\nwaitingroom",
    )
    .unwrap();
    assert_eq!(cut.status, 400);
    // Chunked, as some senders post.
    let chunked = b"POST /logs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                    10\r\nwaitingroom t=5 \r\n14\r\ndecision=anon uid=a\n\r\n0\r\n\r\n";
    let reply = exchange(addr, chunked).unwrap();
    assert_eq!(
        (reply.status, reply.body.as_str()),
        (200, "accepted 1 lines (0 bad)\n")
    );
    // A client that connects and says nothing does not block the others.
    let _silent = std::net::TcpStream::connect(addr).unwrap();
    let status = wrctl.status();
    assert!(status["bad_lines_total"].as_u64().is_some());
    assert!(wrctl.stderr().contains("listening on"));
}

#[test]
fn silent_clients_cannot_take_the_listener() {
    let wrctl = start(&[]);
    let addr = wrctl.addr.unwrap();
    let silent: Vec<_> = (0..wrctl::server::MAX_CONNECTIONS)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    // Each holds a connection until it sends or the timeout ends it: the next is
    // told to come back later, at once.
    support::eventually("a 503 for one connection too many", || {
        let reply = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").ok()?;
        (reply.status == 503).then_some(())
    });
    drop(silent);
    support::eventually("the listener to serve again", || {
        let reply = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").ok()?;
        (reply.status == 200).then_some(())
    });
}

#[test]
fn with_a_log_secret_only_posts_that_carry_it_are_counted() {
    let wrctl = start_with_env(&[], &[("WRCTL_LOG_SECRET", "s3cret-for-tests")]);
    let body = room_lines(3);
    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("s3cret-for-tests"),
        Some("Bearer "),
    ] {
        let headers: Vec<(&str, &str)> = authorization
            .map(|a| ("Authorization", a))
            .into_iter()
            .collect();
        let reply = wrctl.request("POST", "/logs", &headers, body.as_bytes());
        assert_eq!(reply.status, 401, "{authorization:?}");
        assert_eq!(reply.header("WWW-Authenticate"), Some("Bearer"));
    }
    assert_eq!(wrctl.metric("wrctl_log_lines_total").unwrap_or(0.0), 0.0);
    let good = [("Authorization", "Bearer s3cret-for-tests")];
    let reply = wrctl.request("POST", "/logs", &good, body.as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(wrctl.metric("wrctl_log_lines_total"), Some(3.0));
    // Reading the state needs no secret; the secret is never shown.
    assert!(!wrctl.get("/metrics").contains("s3cret"));
    assert!(!wrctl.get("/status.json").contains("s3cret"));
    assert!(!wrctl.stderr().contains("s3cret"));
}

#[test]
fn a_client_trickling_its_head_is_cut_off_while_others_are_served() {
    use std::io::Read as _;
    use std::time::{Duration, Instant};
    let wrctl = start(&["--http-timeout", "3"]);
    let addr = wrctl.addr.unwrap();
    let started = Instant::now();
    let slow = std::thread::spawn(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        stream.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        // One byte of a header every 200 ms, never the end of the head.
        let mut answer = Vec::new();
        let mut buf = [0u8; 1024];
        while started.elapsed() < support::BOUND {
            if stream.write_all(b"x").is_err() {
                return Some(answer);
            }
            match stream.read(&mut buf) {
                Ok(0) => return Some(answer),
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return Some(answer),
            }
        }
        None
    });
    // Meanwhile another client is served, at once.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(wrctl.request("GET", "/status.json", &[], b"").status, 200);
    assert!(
        !slow.is_finished(),
        "the trickling client was cut off early"
    );
    let answer = slow
        .join()
        .unwrap()
        .expect("the trickling client was not cut off");
    // Cut off without an answer to its request.
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    assert_eq!(wrctl.request("GET", "/metrics", &[], b"").status, 200);
}
