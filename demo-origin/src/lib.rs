//! A tiny HTTP/1.1 origin server, std only, for the waiting room's local demo and
//! its black-box tests.
//!
//! Every response is `200 OK`, carries `Cache-Control: public, max-age=60` and an
//! origin cookie (`demo_origin=1`), so that tests can see the room replace the one
//! and append next to the other. The body echoes the request head, so tests can
//! see what the room forwarded (for example, which cookies reached the origin).
//! Special paths, for tests and demos of failure handling:
//! - `/__origin/page/<name>`: an operator-hosted waiting page;
//! - `/__origin/slow/<ms>/...`: the echo, after `ms` milliseconds (at most 60 s);
//! - `/__origin/status/<code>/...`: the echo with that status code;
//! - `/__origin/release/...`: the echo with `Waiting-Room-Release: 1`, as an origin
//!   answers when a visitor is done (after checkout) to free their place at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

/// The marker every proxied page contains, so a test (or a person) can tell the
/// origin's answer from a waiting-room page.
pub const ORIGIN_MARKER: &str = "You reached the demo origin";

/// Path prefix of the operator-hosted waiting pages this origin serves.
pub const PAGE_PREFIX: &str = "/__origin/page/";
/// Path prefix of slow answers: `/__origin/slow/<ms>/...`.
pub const SLOW_PREFIX: &str = "/__origin/slow/";
/// Path prefix of answers with a chosen status: `/__origin/status/<code>/...`.
pub const STATUS_PREFIX: &str = "/__origin/status/";

/// Path prefix of answers that end the visitor's session: `/__origin/release/...`.
pub const RELEASE_PREFIX: &str = "/__origin/release/";

/// Largest request head the origin reads, in bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// A running origin; the listening thread lives as long as the process.
pub struct Origin {
    addr: SocketAddr,
}

impl Origin {
    /// Starts an origin on `addr` (use port 0 for any free port).
    pub fn start(addr: &str) -> std::io::Result<Origin> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    // A client that goes away mid-request is not the origin's problem.
                    let _ = serve_one(stream);
                });
            }
        });
        Ok(Origin { addr })
    }

    /// The address the origin listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Answers one request and closes the connection.
fn serve_one(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut head = Vec::new();
    let mut content_length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || head.len() > MAX_HEAD_BYTES {
            return Ok(());
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().unwrap_or(0);
        }
        head.push(line);
    }
    let mut body = vec![0u8; content_length.min(1 << 20)];
    reader.read_exact(&mut body)?;

    let target = head
        .first()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or("/")
        .to_string();
    let html = match target.strip_prefix(PAGE_PREFIX) {
        Some(name) => origin_hosted_page(name),
        None => echo_page(&head),
    };
    if let Some(ms) = number_after(&target, SLOW_PREFIX) {
        thread::sleep(Duration::from_millis(ms.min(60_000)));
    }
    let status = number_after(&target, STATUS_PREFIX)
        .filter(|code| (200..=599).contains(code))
        .unwrap_or(200);
    let release = if target.starts_with(RELEASE_PREFIX) {
        "Waiting-Room-Release: 1\r\n"
    } else {
        ""
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} Demo\r\nContent-Type: text/html; charset=utf-8\r\n\
         Cache-Control: public, max-age=60\r\nSet-Cookie: demo_origin=1; Path=/\r\n\
         {release}Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        html.len(),
        html
    )?;
    stream.flush()
}

/// The number in `target` right after `prefix`, e.g. 500 in `/__origin/status/500/x`.
fn number_after(target: &str, prefix: &str) -> Option<u64> {
    target.strip_prefix(prefix)?.split('/').next()?.parse().ok()
}

fn origin_hosted_page(name: &str) -> String {
    format!(
        "<!doctype html><title>Waiting room</title><p>Origin-hosted waiting page: {}</p>",
        escape_html(name)
    )
}

fn echo_page(head: &[String]) -> String {
    let echoed: String = head.iter().map(|l| escape_html(l) + "\n").collect();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Demo origin</title></head>\
         <body><h1>{ORIGIN_MARKER}</h1><p>The waiting room let you in. This is what it forwarded:</p>\
         <pre id=\"request\">\n{echoed}</pre></body></html>"
    )
}

/// Enough escaping for text inside an element (not an attribute).
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;")
}
