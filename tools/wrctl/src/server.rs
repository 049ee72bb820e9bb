//! The HTTP listener (`--listen`, and `--state-listen`'s address: [`Serves`]), on
//! [hyper] (HTTP/1.1) with [axum] routing. What it serves and the limits a client
//! meets (the constants below) are the manual's "The listener"
//! (`docs/operate/wrctl.md`). hyper because it bounds what an untrusted client can
//! make it hold: the time to send a request head, its size and its headers
//! (tiny_http has no bound on the head's time, which is what a slow client uses);
//! axum adds only the routing and the 405s. One request a connection. The server
//! runs on a single-threaded tokio runtime of its own thread; parsing a body and
//! asking the control thread for its state (both may wait on the bounded channel)
//! run on tokio's blocking threads.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::header::{self, HeaderMap, HeaderName};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use flate2::read::MultiGzDecoder;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, timeout};

use crate::ingest::{self, Msg};
use crate::state::{Views, Which};

/// The dashboard page.
pub const DASHBOARD: &str = include_str!("../static/dashboard.html");
/// Fastly's ownership check of an HTTPS logging endpoint.
pub const CHALLENGE_PATH: &str = "/.well-known/fastly/logging/challenge";
/// Connections served at once; more are answered 503.
pub const MAX_CONNECTIONS: usize = 128;
/// The default of `--http-timeout`: the longest a client may take to send its
/// request head, or between two pieces of its body.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection lives at most this many `--http-timeout`s (a client that sends its
/// body slowly but steadily, or does not read its answer, is cut off then).
pub const LIFE_IN_TIMEOUTS: u32 = 10;
/// Largest request head (request line and headers), bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most headers in a request.
pub const MAX_HEADERS: usize = 64;
/// POST bodies read and parsed at once.
pub const MAX_BODIES: usize = 4;
/// How long a request for the controller's state waits for the control thread.
const VIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a closed connection's unread bytes are drained, so that the client
/// reads the answer rather than a reset.
const LINGER: Duration = Duration::from_millis(500);

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
    /// `--http-timeout`: see [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// What this listener serves: everything, or with `--state-listen` the log
    /// POSTs and the challenge on one address and the state on the other.
    pub serves: Serves,
}

/// What a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serves {
    /// `--listen` alone: the log POSTs, the challenge, the dashboard, `/metrics`
    /// and `/status.json`.
    All,
    /// `--listen` beside `--state-listen`: the log POSTs and the challenge.
    Logs,
    /// `--state-listen`: the dashboard, `/metrics` and `/status.json`.
    State,
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
    tx: SyncSender<Msg>,
    /// Turns to read a body, [`MAX_BODIES`] of them.
    bodies: Semaphore,
}

/// Binds `addr` and serves it on a thread of its own; returns the bound address.
pub fn start(addr: SocketAddr, settings: Settings, tx: SyncSender<Msg>) -> io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let shared = Arc::new(Shared {
        challenge: challenge_body(&settings.service_ids),
        settings,
        tx,
        bodies: Semaphore::new(MAX_BODIES),
    });
    thread::Builder::new()
        .name("http".into())
        .spawn(move || runtime.block_on(accept(listener, shared)))?;
    Ok(bound)
}

async fn accept(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => return eprintln!("wrctl: the listener stopped: {e}"),
    };
    let app = router(Arc::clone(&shared));
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, or a connection reset before it was taken.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        match Arc::clone(&connections).try_acquire_owned() {
            Ok(permit) => tokio::spawn(serve(stream, app.clone(), shared.settings.timeout, permit)),
            Err(_) => tokio::spawn(refuse(stream)),
        };
    }
}

/// Serves one connection with hyper, within the limits, then lingers.
async fn serve(stream: TcpStream, app: Router, limit: Duration, _slot: OwnedSemaphorePermit) {
    let _ = stream.set_nodelay(true);
    // A second handle on the socket: hyper closes its own when it is done (after an
    // answer to a request it did not read to the end, too), and this one lets the
    // client's unread bytes drain before the socket closes.
    let Ok(stream) = stream.into_std() else {
        return;
    };
    let spare = stream.try_clone();
    let Ok(stream) = TcpStream::from_std(stream) else {
        return;
    };
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limit)
        .max_header_size(MAX_HEAD)
        .max_headers(MAX_HEADERS)
        .half_close(true)
        .keep_alive(false);
    let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    let _ = timeout(limit * LIFE_IN_TIMEOUTS, connection).await;
    if let Ok(spare) = spare {
        linger(spare).await;
    }
}

/// Answers a connection over [`MAX_CONNECTIONS`] with a 503, unread.
async fn refuse(stream: TcpStream) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
        Content-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n\
        Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections\n";
    // A new socket's send buffer takes these bytes at once; if not, no answer.
    let _ = stream.try_write(BUSY);
    if let Ok(stream) = stream.into_std() {
        linger(stream).await;
    }
}

/// Closes our side and reads what the client still sends for [`LINGER`] (at most
/// 1 MiB), so that it reads the answer rather than a reset.
async fn linger(stream: std::net::TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let Ok(stream) = TcpStream::from_std(stream) else {
        return;
    };
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 8192];
    let mut left = 1usize << 20;
    while left > 0 {
        match tokio::time::timeout_at(deadline, stream.readable()).await {
            Ok(Ok(())) => match stream.try_read(&mut sink) {
                Ok(0) => break,
                Ok(n) => left = left.saturating_sub(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            },
            _ => break,
        }
    }
}

type App = State<Arc<Shared>>;

fn router(shared: Arc<Shared>) -> Router {
    let serves = shared.settings.serves;
    let root = match serves {
        Serves::All => get(dashboard)
            .post(logs)
            .fallback(not_allowed("GET, HEAD, POST")),
        Serves::Logs => post(logs).fallback(not_allowed("POST")),
        Serves::State => get(dashboard).fallback(not_allowed("GET, HEAD")),
    };
    let mut router = Router::new().route("/", root);
    if serves != Serves::State {
        router = router
            .route("/logs", post(logs).fallback(not_allowed("POST")))
            .route(
                CHALLENGE_PATH,
                get(challenge).fallback(not_allowed("GET, HEAD")),
            );
    }
    if serves != Serves::Logs {
        router = router
            .route(
                "/dashboard",
                get(dashboard).fallback(not_allowed("GET, HEAD")),
            )
            .route("/metrics", get(metrics).fallback(not_allowed("GET, HEAD")))
            .route(
                "/status.json",
                get(status).fallback(not_allowed("GET, HEAD")),
            );
    }
    router
        .fallback(|| async { text(StatusCode::NOT_FOUND, "not found\n") })
        .with_state(shared)
}

/// The 405 for the methods a path does not take.
fn not_allowed(allow: &'static str) -> MethodRouter<Arc<Shared>> {
    MethodRouter::new().fallback(move || async move {
        let mut answer = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        answer
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
        answer
    })
}

/// An answer with the headers every answer carries.
fn answer(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response {
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    (status, headers, body.into()).into_response()
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    answer(status, "text/plain; charset=utf-8", body.into())
}

fn with(mut answer: Response, name: HeaderName, value: &'static str) -> Response {
    answer
        .headers_mut()
        .insert(name, HeaderValue::from_static(value));
    answer
}

async fn dashboard() -> Response {
    answer(StatusCode::OK, "text/html; charset=utf-8", DASHBOARD)
}

async fn challenge(State(shared): App) -> Response {
    text(StatusCode::OK, shared.challenge.clone())
}

async fn metrics(State(shared): App) -> Response {
    match views(&shared).await {
        Some(view) => answer(
            StatusCode::OK,
            crate::state::METRICS_CONTENT_TYPE,
            view.metrics(),
        ),
        None => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the controller did not answer\n",
        ),
    }
}

/// `GET /status.json`: the first room's, or with `?room=NAME` that room's
/// (`?room=`: the service room's); 404 for a room not held here.
async fn status(State(shared): App, uri: axum::http::Uri) -> Response {
    let which = Which::from_query(uri.query());
    match views(&shared).await {
        Some(views) => match views.status_json(&which) {
            Some(status) => answer(StatusCode::OK, "application/json", status.to_string()),
            None => text(
                StatusCode::NOT_FOUND,
                "no such room here: ?room=NAME names a room this controller holds, \
                 ?room= the service room\n",
            ),
        },
        None => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the controller did not answer\n",
        ),
    }
}

/// Asks the control thread for the state of the rooms and the writer (on a
/// blocking thread: the channel may be full).
async fn views(shared: &Shared) -> Option<Views> {
    let tx = shared.tx.clone();
    tokio::task::spawn_blocking(move || {
        let (reply, rx) = sync_channel(1);
        tx.send(Msg::View(reply)).ok()?;
        rx.recv_timeout(VIEW_TIMEOUT).ok()
    })
    .await
    .ok()
    .flatten()
}

/// A refused body: the status and the text said.
type Refusal = (StatusCode, String);

fn too_large(limit: u64) -> Refusal {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the body is larger than {limit} bytes (--max-body-bytes); none of it was counted\n"
        ),
    )
}

/// Takes a POSTed body of log lines (within the limits) and hands it to the controller.
async fn logs(State(shared): App, headers: HeaderMap, body: Body) -> Response {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    if let Some(secret) = &shared.settings.log_secret
        && !authorized(header(header::AUTHORIZATION), secret)
    {
        let refused = text(
            StatusCode::UNAUTHORIZED,
            "log lines need Authorization: Bearer <WRCTL_LOG_SECRET>\n",
        );
        return with(refused, header::WWW_AUTHENTICATE, "Bearer");
    }
    let limit = shared.settings.max_body;
    // hyper has checked that a Content-Length is a number.
    if header(header::CONTENT_LENGTH)
        .and_then(|n| n.trim().parse::<u64>().ok())
        .is_some_and(|n| n > limit)
    {
        let (status, why) = too_large(limit);
        return text(status, why);
    }
    let encoding = header(header::CONTENT_ENCODING)
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let gzip = match encoding.as_str() {
        "" | "identity" => false,
        "gzip" | "x-gzip" => true,
        other => {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Content-Encoding {other} is not accepted: gzip or none\n"),
            );
        }
    };
    let Ok(Ok(_turn)) = timeout(shared.settings.timeout, shared.bodies.acquire()).await else {
        let busy = text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many log bodies at once: try again\n",
        );
        return with(busy, header::RETRY_AFTER, "1");
    };
    let raw = match read_body(body, limit, shared.settings.timeout).await {
        Ok(raw) => raw,
        Err((status, why)) => return text(status, why),
    };
    let tx = shared.tx.clone();
    let counted = tokio::task::spawn_blocking(move || {
        let body = if gzip { gunzip(&raw, limit)? } else { raw };
        ingest::read_body(&body, &tx).map_err(|_| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the controller stopped\n".into(),
            )
        })
    })
    .await;
    match counted {
        Ok(Ok((lines, bad))) => text(
            StatusCode::OK,
            format!("accepted {lines} lines ({bad} bad)\n"),
        ),
        Ok(Err((status, why))) => text(status, why),
        Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "the controller stopped\n"),
    }
}

/// The body, at most `limit` bytes, each piece within `idle` of the one before.
async fn read_body(body: Body, limit: u64, idle: Duration) -> Result<Vec<u8>, Refusal> {
    let mut body = Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX));
    let mut raw = Vec::new();
    loop {
        match timeout(idle, body.frame()).await {
            Err(_) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    "the body stopped coming (--http-timeout)\n".into(),
                ));
            }
            Ok(None) => return Ok(raw),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    raw.extend_from_slice(&data);
                }
            }
            Ok(Some(Err(e))) if e.is::<LengthLimitError>() => return Err(too_large(limit)),
            Ok(Some(Err(e))) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the body: {e}\n"),
                ));
            }
        }
    }
}

/// The gzip `raw` unzipped, or the answer when it is not gzip or larger than `limit`.
fn gunzip(raw: &[u8], limit: u64) -> Result<Vec<u8>, Refusal> {
    use std::io::Read as _;
    let mut body = Vec::new();
    match MultiGzDecoder::new(raw)
        .take(limit + 1)
        .read_to_end(&mut body)
    {
        Ok(_) if body.len() as u64 > limit => Err(too_large(limit)),
        Ok(_) => Ok(body),
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            format!("the body is not gzip: {e}\n"),
        )),
    }
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
    fn only_the_bearer_secret_is_authorized() {
        assert!(authorized(Some("Bearer s3cret"), "s3cret"));
        for wrong in [
            None,
            Some("s3cret"),
            Some("Bearer s3cre"),
            Some("bearer s3cret"),
        ] {
            assert!(!authorized(wrong, "s3cret"), "{wrong:?}");
        }
    }

    #[test]
    fn gzip_is_bounded_after_unzipping() {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&[b'a'; 1000]).unwrap();
        let zipped = gz.finish().unwrap();
        assert_eq!(gunzip(&zipped, 1000).unwrap().len(), 1000);
        assert_eq!(gunzip(&zipped, 999).unwrap_err().0, 413);
        assert_eq!(gunzip(b"plain", 1000).unwrap_err().0, 400);
    }
}
