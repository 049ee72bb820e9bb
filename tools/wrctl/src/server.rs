//! The HTTP listener (`--listen`).
//!
//! | method | path | answer |
//! | --- | --- | --- |
//! | POST | `/`, `/logs` | newline-separated log lines (gzip accepted): 200 `accepted N lines (M bad)`; 413 over `--max-body-bytes`; 415 for another encoding |
//! | GET | `/.well-known/fastly/logging/challenge` | 200, the SHA-256 (lowercase hex) of each `--service-id`, one a line, or `*` |
//! | GET | `/metrics` | Prometheus text format 0.0.4 |
//! | GET | `/status.json` | the controller's state (see [`crate::state::View::status_json`]) |
//! | GET | `/`, `/dashboard` | the dashboard page |
//!
//! HEAD is answered like GET. Another method on a known path: 405 with `Allow`;
//! an unknown path: 404; a request that is not HTTP: 400.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread;
use std::time::Duration;

use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use tiny_http::{Header, Method, Request, Response, Server};

use crate::ingest::{self, Msg};

/// The dashboard page.
pub const DASHBOARD: &str = include_str!("../static/dashboard.html");
/// Fastly's ownership check of an HTTPS logging endpoint.
pub const CHALLENGE_PATH: &str = "/.well-known/fastly/logging/challenge";
/// Threads answering requests.
const WORKERS: usize = 4;
/// How long a request for the controller's state waits for the control thread.
const VIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// What the listener needs to know.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--max-body-bytes`.
    pub max_body: u64,
    /// `--service-id`s.
    pub service_ids: Vec<String>,
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

/// Binds `addr` and answers requests on worker threads; returns the bound address.
pub fn start(addr: SocketAddr, settings: Settings, tx: SyncSender<Msg>) -> io::Result<SocketAddr> {
    let server = Server::http(addr).map_err(io::Error::other)?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| io::Error::other("not an IP listener"))?;
    let server = Arc::new(server);
    let shared = Arc::new(Shared {
        challenge: challenge_body(&settings.service_ids),
        settings,
    });
    for i in 0..WORKERS {
        let (server, shared, tx) = (Arc::clone(&server), Arc::clone(&shared), tx.clone());
        thread::Builder::new()
            .name(format!("http-{i}"))
            .spawn(move || {
                while let Ok(request) = server.recv() {
                    let _ = answer(request, &shared, &tx);
                }
            })?;
    }
    Ok(bound)
}

struct Shared {
    settings: Settings,
    challenge: String,
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}

fn text(status: u16, body: impl Into<String>) -> Response<io::Cursor<Vec<u8>>> {
    Response::from_string(body)
        .with_status_code(status)
        .with_header(header("Content-Type", "text/plain; charset=utf-8"))
        .with_header(header("Cache-Control", "no-store"))
}

fn answer(mut request: Request, shared: &Shared, tx: &SyncSender<Msg>) -> io::Result<()> {
    let path = request.url().split('?').next().unwrap_or("").to_string();
    let method = request.method().clone();
    let get = matches!(method, Method::Get | Method::Head);
    let post = method == Method::Post;
    let (allowed, response) = match path.as_str() {
        "/" | "/dashboard" if get => (
            "",
            Response::from_string(DASHBOARD)
                .with_header(header("Content-Type", "text/html; charset=utf-8"))
                .with_header(header("Cache-Control", "no-store")),
        ),
        "/" | "/logs" if post => ("", ingest_body(&mut request, shared, tx)),
        "/" => ("GET, HEAD, POST", text(405, "method not allowed\n")),
        "/logs" => ("POST", text(405, "method not allowed\n")),
        CHALLENGE_PATH if get => ("", text(200, shared.challenge.clone())),
        "/metrics" if get => match view(tx) {
            Some(view) => (
                "",
                text(200, view.metrics()).with_header(header(
                    "Content-Type",
                    "text/plain; version=0.0.4; charset=utf-8",
                )),
            ),
            None => ("", text(503, "the controller is busy\n")),
        },
        "/status.json" if get => match view(tx) {
            Some(view) => (
                "",
                text(200, view.status_json().to_string())
                    .with_header(header("Content-Type", "application/json")),
            ),
            None => ("", text(503, "the controller is busy\n")),
        },
        "/dashboard" | CHALLENGE_PATH | "/metrics" | "/status.json" => {
            ("GET, HEAD", text(405, "method not allowed\n"))
        }
        _ => ("", text(404, "not found\n")),
    };
    let response = response.with_header(header("X-Content-Type-Options", "nosniff"));
    let response = if allowed.is_empty() {
        response
    } else {
        response.with_header(header("Allow", allowed))
    };
    request.respond(response)
}

/// Asks the control thread for its state.
fn view(tx: &SyncSender<Msg>) -> Option<crate::state::View> {
    let (reply, rx) = sync_channel(1);
    tx.send(Msg::View(reply)).ok()?;
    rx.recv_timeout(VIEW_TIMEOUT).ok()
}

/// Reads a POSTed body of log lines (within the limit) and hands it to the controller.
fn ingest_body(
    request: &mut Request,
    shared: &Shared,
    tx: &SyncSender<Msg>,
) -> Response<io::Cursor<Vec<u8>>> {
    let limit = shared.settings.max_body;
    if request.body_length().is_some_and(|n| n as u64 > limit) {
        return too_large(limit);
    }
    let encoding = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Content-Encoding"))
        .map(|h| h.value.as_str().trim().to_ascii_lowercase());
    let raw = request.as_reader().take(limit + 1);
    let body = match encoding.as_deref() {
        None | Some("" | "identity") => read_limited(raw, limit),
        Some("gzip" | "x-gzip") => read_limited(MultiGzDecoder::new(raw), limit),
        Some(other) => {
            return text(
                415,
                format!("Content-Encoding {other} is not accepted: send gzip or none\n"),
            );
        }
    };
    let body = match body {
        Ok(Some(body)) => body,
        Ok(None) => return too_large(limit),
        Err(e) => return text(400, format!("cannot read the body: {e}\n")),
    };
    match ingest::read_body(&body, tx) {
        Ok((lines, bad)) => text(200, format!("accepted {lines} lines ({bad} bad)\n")),
        Err(_) => text(503, "the controller stopped\n"),
    }
}

fn too_large(limit: u64) -> Response<io::Cursor<Vec<u8>>> {
    text(
        413,
        format!("the body is larger than {limit} bytes (--max-body-bytes)\n"),
    )
    .with_header(header("Connection", "close"))
}

/// The whole of `reader`, or `None` past `limit` bytes.
fn read_limited(reader: impl Read, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    reader.take(limit + 1).read_to_end(&mut body)?;
    Ok((body.len() as u64 <= limit).then_some(body))
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
}
