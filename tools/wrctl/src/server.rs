//! The HTTP listener (`--listen`): a small HTTP/1.1 server on std's `TcpListener`,
//! with `httparse` reading the request head. One thread a connection, at most
//! [`MAX_CONNECTIONS`] at once (more get 503), every read and write bounded by
//! [`IO_TIMEOUT`], the head by [`MAX_HEAD`] bytes, the body by `--max-body-bytes`,
//! and at most [`MAX_BODIES`] bodies read at once (so memory stays under
//! `MAX_BODIES` × 2 × `--max-body-bytes`; a POST that waits longer than
//! [`IO_TIMEOUT`] for its turn gets 503); one request a connection
//! (`Connection: close`).
//!
//! | method | path | answer |
//! | --- | --- | --- |
//! | POST | `/`, `/logs` | newline-separated log lines, as Fastly's HTTPS logging endpoint posts them (`Content-Length` or chunked; `Content-Encoding: gzip` accepted): 200 `accepted N lines (M bad)`; 401 without `Authorization: Bearer $WRCTL_LOG_SECRET` when that variable is set; 413 over `--max-body-bytes` (after unzipping too), and nothing counted; 415 for another encoding |
//! | GET | `/.well-known/fastly/logging/challenge` | 200, the SHA-256 (lowercase hex) of each `--service-id`, one a line, or `*` |
//! | GET | `/metrics` | Prometheus text format 0.0.4 |
//! | GET | `/status.json` | the controller's state (see [`crate::state::View::status_json`]) |
//! | GET | `/`, `/dashboard` | the dashboard page |
//!
//! HEAD is answered like GET, without the body. Another method on one of these
//! paths: 405 with `Allow`; any other path: 404; a request that is not HTTP: 400; a
//! head over [`MAX_HEAD`] bytes: 431.

use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};

use crate::ingest::{self, Msg};
use crate::state::View;

/// The dashboard page.
pub const DASHBOARD: &str = include_str!("../static/dashboard.html");
/// Fastly's ownership check of an HTTPS logging endpoint.
pub const CHALLENGE_PATH: &str = "/.well-known/fastly/logging/challenge";
/// Connections served at once; more are answered 503.
pub const MAX_CONNECTIONS: usize = 128;
/// Longest wait for a client to send or take the next bytes.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest request head (request line and headers), bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// POST bodies read and parsed at once.
pub const MAX_BODIES: usize = 4;
/// Most headers in a request.
const MAX_HEADERS: usize = 64;
/// How long a request for the controller's state waits for the control thread.
const VIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// What the listener needs to know.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--max-body-bytes`.
    pub max_body: u64,
    /// `--service-id`s.
    pub service_ids: Vec<String>,
    /// `WRCTL_LOG_SECRET`: when set, log POSTs must carry
    /// `Authorization: Bearer <secret>` (Fastly's HTTPS endpoint sends it as its
    /// custom header), so nobody else can feed the controller lines.
    pub log_secret: Option<String>,
}

/// The environment variable holding the secret log POSTs must carry.
pub const LOG_SECRET_VAR: &str = "WRCTL_LOG_SECRET";

/// Whether `authorization` is `Bearer <secret>`, compared in constant time (the
/// SHA-256 of each side, byte by byte, without stopping early).
fn authorized(authorization: Option<&str>, secret: &str) -> bool {
    let presented = Sha256::digest(authorization.unwrap_or("").as_bytes());
    let expected = Sha256::digest(format!("Bearer {secret}").as_bytes());
    presented
        .iter()
        .zip(expected.iter())
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

/// The challenge's body: the SHA-256 hex of each service ID, one a line, or `*`.
pub fn challenge_body(service_ids: &[String]) -> String {
    if service_ids.is_empty() {
        return "*\n".into();
    }
    service_ids
        .iter()
        .map(|id| format!("{}\n", hex::encode(Sha256::digest(id.as_bytes()))))
        .collect()
}

struct Shared {
    settings: Settings,
    challenge: String,
    open: AtomicUsize,
    tx: SyncSender<Msg>,
    /// Bodies being read, out of [`MAX_BODIES`].
    bodies: Mutex<usize>,
    body_done: Condvar,
}

impl Shared {
    /// Waits for a turn to read a body; `None` after [`IO_TIMEOUT`].
    fn body_turn(&self) -> Option<BodyTurn<'_>> {
        let bodies = self.bodies.lock().unwrap_or_else(|e| e.into_inner());
        let (mut bodies, _) = self
            .body_done
            .wait_timeout_while(bodies, IO_TIMEOUT, |n| *n >= MAX_BODIES)
            .unwrap_or_else(|e| e.into_inner());
        if *bodies >= MAX_BODIES {
            return None;
        }
        *bodies += 1;
        Some(BodyTurn(self))
    }
}

/// A turn to read a body, given back when dropped.
struct BodyTurn<'a>(&'a Shared);

impl Drop for BodyTurn<'_> {
    fn drop(&mut self) {
        *self.0.bodies.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.0.body_done.notify_one();
    }
}

/// A connection's place among the [`MAX_CONNECTIONS`], given back when dropped.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Binds `addr` and serves it on a thread of its own; returns the bound address.
pub fn start(addr: SocketAddr, settings: Settings, tx: SyncSender<Msg>) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let shared = Arc::new(Shared {
        challenge: challenge_body(&settings.service_ids),
        settings,
        open: AtomicUsize::new(0),
        tx,
        bodies: Mutex::new(0),
        body_done: Condvar::new(),
    });
    thread::Builder::new()
        .name("http".into())
        .spawn(move || accept(listener, shared))?;
    Ok(bound)
}

fn accept(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of file descriptors, or a connection reset before it was taken.
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        if shared.open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = Answer::text(503, "too many connections\n").send(&stream, false);
            continue;
        }
        let slot = Slot(Arc::clone(&shared));
        // If the thread cannot start, the closure (and the slot) is dropped.
        let _ = thread::Builder::new()
            .name("http-conn".into())
            .spawn(move || {
                let _ = serve(&stream, &slot.0);
                linger(&stream);
            });
    }
}

/// Closes our side and lets the client's unread bytes drain a moment, so that it
/// reads the answer rather than a reset.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut sink = [0u8; 8192];
    let mut left = 1 << 20;
    while left > 0 {
        match (&*stream).read(&mut sink) {
            Ok(n) if n > 0 => left -= n.min(left),
            _ => break,
        }
    }
}

/// A request's head, owned.
struct Head {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer about to be sent.
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type", content_type.to_string())],
            body: body.into(),
        }
    }

    fn text(status: u16, body: impl Into<String>) -> Answer {
        Answer::new(status, "text/plain; charset=utf-8", body.into())
    }

    fn with(mut self, name: &'static str, value: &str) -> Answer {
        self.headers.push((name, value.to_string()));
        self
    }

    fn send(&self, mut stream: &TcpStream, head_only: bool) -> io::Result<()> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n\
             Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n",
            self.status,
            reason(self.status),
            self.body.len()
        );
        for (name, value) in &self.headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if !head_only {
            bytes.extend_from_slice(&self.body);
        }
        stream.write_all(&bytes)?;
        stream.flush()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Reads one request from `stream` and answers it.
fn serve(stream: &TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let (head, rest) = match read_head(stream)? {
        Ok(parsed) => parsed,
        Err(answer) => return answer.send(stream, false),
    };
    let head_only = head.method == "HEAD";
    let answer = route(&head, rest, stream, shared);
    answer.send(stream, head_only)
}

/// The request head, and the bytes read past it; or the answer to a bad head.
/// `Ok(Err(_))` also when the client closed before sending anything.
fn read_head(mut stream: &TcpStream) -> io::Result<Result<(Head, Vec<u8>), Answer>> {
    let mut data = Vec::with_capacity(2048);
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(Err(Answer::text(
                400,
                "the request ended before its head did\n",
            )));
        }
        data.extend_from_slice(&buf[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&data) {
            Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD => {
                let head = Head {
                    method: request.method.unwrap_or_default().to_string(),
                    path: request.path.unwrap_or_default().to_string(),
                    headers: request
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_string(),
                                String::from_utf8_lossy(h.value).trim().to_string(),
                            )
                        })
                        .collect(),
                };
                return Ok(Ok((head, data[len..].to_vec())));
            }
            Ok(httparse::Status::Partial) if data.len() <= MAX_HEAD => {}
            Ok(_) | Err(httparse::Error::TooManyHeaders) => {
                return Ok(Err(Answer::text(431, "the request head is too large\n")));
            }
            Err(e) => {
                return Ok(Err(Answer::text(
                    400,
                    format!("not an HTTP request: {e}\n"),
                )));
            }
        }
    }
}

fn route(head: &Head, rest: Vec<u8>, stream: &TcpStream, shared: &Shared) -> Answer {
    let path = head.path.split('?').next().unwrap_or("");
    let get = matches!(head.method.as_str(), "GET" | "HEAD");
    let post = head.method == "POST";
    let not_allowed = |allow: &str| Answer::text(405, "method not allowed\n").with("Allow", allow);
    match path {
        "/" | "/dashboard" if get => Answer::new(200, "text/html; charset=utf-8", DASHBOARD),
        "/" | "/logs" if post => match &shared.settings.log_secret {
            Some(secret) if !authorized(head.header("Authorization"), secret) => Answer::text(
                401,
                "log lines need Authorization: Bearer <WRCTL_LOG_SECRET>\n",
            )
            .with("WWW-Authenticate", "Bearer"),
            _ => ingest_body(head, rest, stream, shared),
        },
        "/" => not_allowed("GET, HEAD, POST"),
        "/logs" => not_allowed("POST"),
        CHALLENGE_PATH if get => Answer::text(200, shared.challenge.clone()),
        "/metrics" if get => match view(&shared.tx) {
            Some(view) => Answer::new(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                view.metrics(),
            ),
            None => Answer::text(503, "the controller did not answer\n"),
        },
        "/status.json" if get => match view(&shared.tx) {
            Some(view) => Answer::new(200, "application/json", view.status_json().to_string()),
            None => Answer::text(503, "the controller did not answer\n"),
        },
        "/dashboard" | CHALLENGE_PATH | "/metrics" | "/status.json" => not_allowed("GET, HEAD"),
        _ => Answer::text(404, "not found\n"),
    }
}

/// Asks the control thread for its state.
fn view(tx: &SyncSender<Msg>) -> Option<View> {
    let (reply, rx) = sync_channel(1);
    tx.send(Msg::View(reply)).ok()?;
    rx.recv_timeout(VIEW_TIMEOUT).ok()
}

fn too_large(limit: u64) -> Answer {
    Answer::text(
        413,
        format!(
            "the body is larger than {limit} bytes (--max-body-bytes); none of it was counted\n"
        ),
    )
}

/// Reads a POSTed body of log lines (within the limit) and hands it to the controller.
fn ingest_body(head: &Head, rest: Vec<u8>, stream: &TcpStream, shared: &Shared) -> Answer {
    let limit = shared.settings.max_body;
    let chunked = match head
        .header("Transfer-Encoding")
        .map(str::to_ascii_lowercase)
    {
        None => false,
        Some(te) if te.trim() == "chunked" => true,
        Some(_) => return Answer::text(501, "only chunked transfer encoding is understood\n"),
    };
    let length = match (chunked, head.header("Content-Length")) {
        (true, _) | (false, None) => None,
        (false, Some(text)) => match text.parse::<u64>() {
            Ok(n) if n > limit => return too_large(limit),
            Ok(n) => Some(n),
            Err(_) => return Answer::text(400, "Content-Length is not a number\n"),
        },
    };
    let encoding = head
        .header("Content-Encoding")
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    let gzip = match encoding.as_str() {
        "" | "identity" => false,
        "gzip" | "x-gzip" => true,
        other => {
            return Answer::text(
                415,
                format!("Content-Encoding {other} is not accepted: gzip or none\n"),
            );
        }
    };
    let Some(_turn) = shared.body_turn() else {
        return Answer::text(503, "too many log bodies at once: try again\n")
            .with("Retry-After", "1");
    };
    if head
        .header("Expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        let mut s = stream;
        if s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err() {
            return Answer::text(400, "the connection failed\n");
        }
    }
    let mut input = BufReader::new(Cursor::new(rest).chain(stream));
    let raw = if chunked {
        read_chunked(&mut input, limit)
    } else {
        read_exact_len(&mut input, length.unwrap_or(0))
    };
    let raw = match raw {
        Ok(Some(raw)) => raw,
        Ok(None) => return too_large(limit),
        Err(e) => return Answer::text(400, format!("cannot read the body: {e}\n")),
    };
    let body = if gzip {
        let mut body = Vec::new();
        match MultiGzDecoder::new(raw.as_slice())
            .take(limit + 1)
            .read_to_end(&mut body)
        {
            Ok(_) if body.len() as u64 > limit => return too_large(limit),
            Ok(_) => body,
            Err(e) => return Answer::text(400, format!("the body is not gzip: {e}\n")),
        }
    } else {
        raw
    };
    match ingest::read_body(&body, &shared.tx) {
        Ok((lines, bad)) => Answer::text(200, format!("accepted {lines} lines ({bad} bad)\n")),
        Err(_) => Answer::text(503, "the controller stopped\n"),
    }
}

/// Exactly `length` bytes.
fn read_exact_len(input: &mut impl Read, length: u64) -> io::Result<Option<Vec<u8>>> {
    let mut body = Vec::with_capacity(length.min(1 << 20) as usize);
    input.take(length).read_to_end(&mut body)?;
    if (body.len() as u64) < length {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the body ended early",
        ));
    }
    Ok(Some(body))
}

/// A chunked body, or `None` past `limit` bytes.
fn read_chunked(input: &mut impl BufRead, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_string());
    let mut body = Vec::new();
    loop {
        let line = read_line(input)?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size, 16).map_err(|_| bad("a chunk size is not hex"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while !read_line(input)?.is_empty() {}
            return Ok(Some(body));
        }
        if body.len() as u64 + size > limit {
            return Ok(None);
        }
        let before = body.len();
        input.take(size).read_to_end(&mut body)?;
        if (body.len() - before) as u64 != size || !read_line(input)?.is_empty() {
            return Err(bad("a chunk is cut short"));
        }
    }
}

/// One CRLF-terminated line of at most 1 KiB, without its end.
fn read_line(input: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    input.take(1024).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a chunk line is cut short or too long",
        ));
    }
    Ok(String::from_utf8_lossy(&line).trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_lists_the_hashes_or_a_star() {
        assert_eq!(challenge_body(&[]), "*\n");
        // printf abc | sha256sum
        assert_eq!(
            challenge_body(&["abc".into(), "abc".into()]),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n".repeat(2)
        );
    }

    #[test]
    fn chunked_bodies_are_joined_and_bounded() {
        let raw = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
        assert_eq!(
            read_chunked(&mut &raw[..], 100).unwrap(),
            Some(b"hello world".to_vec())
        );
        assert_eq!(read_chunked(&mut &raw[..], 8).unwrap(), None);
        for bad in [
            &b"zz\r\n"[..],
            b"5\r\nhel",
            b"5\r\nhelloXX\r\n0\r\n\r\n",
            b"5",
        ] {
            assert!(read_chunked(&mut &bad[..], 100).is_err(), "{bad:?}");
        }
    }
}
