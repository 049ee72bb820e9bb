//! The `demo-origin` binary as the docs run it: the capacity flags, the admin path and
//! the stats, over real HTTP; and the flags it refuses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// The binary, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The demo origin started with `args` on a free port, and the line it printed
/// first (where it listens, and its capacity).
fn started(args: &[&str]) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_demo-origin"))
        .args(args)
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    (running, line)
}

/// Sends `method path` to `addr` and reads the answer: its status line and body.
fn send(addr: &str, method: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (
        head.lines().next().unwrap().to_string(),
        body.trim().to_string(),
    )
}

#[test]
fn the_flags_set_the_capacity_and_the_admin_path_changes_it() {
    let (_running, line) = started(&["--capacity", "4", "--service-ms", "50", "--queue", "40"]);
    assert!(
        line.ends_with(": 4 requests at once, 50 ms each, 40 waiting at most\n"),
        "{line}"
    );
    let (addr, _) = line
        .strip_prefix("demo origin listening on http://")
        .and_then(|rest| rest.split_once(": "))
        .unwrap();
    let capacity = r#"{"n":4,"service_ms":50,"queue":40}"#;
    assert_eq!(send(addr, "GET", "/__origin/capacity").1, capacity);
    let (status, body) = send(addr, "GET", "/x");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains("You reached the demo origin"));
    let (status, body) = send(addr, "POST", "/__origin/capacity?n=2&service_ms=100");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", r#"{"n":2,"service_ms":100,"queue":20}"#)
    );
    assert_eq!(
        send(addr, "GET", "/__origin/stats").1,
        r#"{"served":1,"refused":0,"in_flight":0,"queued":0,"capacity":{"n":2,"service_ms":100,"queue":20}}"#
    );
}

#[test]
fn without_a_capacity_it_says_only_where_it_listens_and_refuses_stray_flags() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_demo-origin"))
            .args(args)
            .output()
            .unwrap()
    };
    // The service time and the queue belong to a capacity.
    for args in [
        &["--service-ms", "50", "127.0.0.1:0"][..],
        &["--queue", "3", "127.0.0.1:0"],
        &["--capacity", "0", "127.0.0.1:0"],
        &["--capacity", "2", "--service-ms", "60001", "127.0.0.1:0"],
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let (_running, line) = started(&[]);
    let addr = line
        .trim_end()
        .strip_prefix("demo origin listening on http://")
        .unwrap();
    assert!(addr.parse::<std::net::SocketAddr>().is_ok(), "{line}");
    assert_eq!(send(addr, "GET", "/__origin/capacity").1, "null");
}
