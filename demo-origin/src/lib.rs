//! A tiny HTTP/1.1 origin server for the waiting room's local demo and its
//! black-box tests, on [hyper] with [axum] routing (the stack wrctl's listener
//! uses), on a single-threaded tokio runtime of its own thread.
//!
//! Every response carries `Cache-Control: public, max-age=60` and an origin cookie
//! (`demo_origin=1`), so that tests can see the room replace the one and append
//! next to the other. The body echoes the request head (header names in lower
//! case, as hyper gives them), so tests can see what the room forwarded (for
//! example, which cookies reached the origin). Special paths, for tests and demos
//! of failure handling:
//! - `/__origin/page/<name>`: an operator-hosted waiting page;
//! - `/__origin/slow/<ms>/...`: the echo, after `ms` milliseconds (at most 60 s);
//! - `/__origin/status/<code>/...`: the echo with that status code (200 to 599);
//! - `/__origin/release/...`: the echo with `Waiting-Room-Release: 1`, as an origin
//!   answers when a visitor is done (after checkout) to free their place at once.
//!
//! Any method is answered alike. One request a connection (`Connection: close`), so
//! that a client never reuses a connection the origin is closing.

use std::io;
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::any;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

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

/// The longest a slow answer waits.
const MAX_SLOW: Duration = Duration::from_secs(60);

/// A running origin. Its thread serves until the process ends; dropping this
/// handle does not stop it (tests keep only the address).
pub struct Origin {
    addr: SocketAddr,
}

impl Origin {
    /// Starts an origin on `addr` (use port 0 for any free port). A bind error
    /// names the address.
    pub fn start(addr: &str) -> io::Result<Origin> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        thread::Builder::new()
            .name("demo-origin".into())
            .spawn(move || runtime.block_on(serve(listener)))?;
        Ok(Origin { addr })
    }

    /// The address the origin listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

async fn serve(listener: std::net::TcpListener) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => return eprintln!("demo origin: the listener stopped: {e}"),
    };
    let app = TowerToHyperService::new(router());
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, or a connection reset before it was taken.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            // A client that goes away mid-request is not the origin's problem.
            let _ = http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), app)
                .await;
        });
    }
}

fn router() -> Router {
    Router::new()
        .route(&format!("{PAGE_PREFIX}{{*name}}"), any(page))
        .route(&format!("{SLOW_PREFIX}{{*rest}}"), any(slow))
        .route(&format!("{STATUS_PREFIX}{{*rest}}"), any(status))
        .route(&format!("{RELEASE_PREFIX}{{*rest}}"), any(release))
        .fallback(|request: Request| async move { echo(&request) })
}

async fn page(Path(name): Path<String>) -> Response {
    with_origin_headers(Html(format!(
        "<!doctype html><title>Waiting room</title><p>Origin-hosted waiting page: {}</p>",
        escape_html(&name)
    )))
}

async fn slow(Path(rest): Path<String>, request: Request) -> Response {
    if let Some(ms) = leading_number(&rest) {
        tokio::time::sleep(Duration::from_millis(ms).min(MAX_SLOW)).await;
    }
    echo(&request)
}

async fn status(Path(rest): Path<String>, request: Request) -> Response {
    let mut answer = echo(&request);
    if let Some(code) = leading_number(&rest)
        .filter(|code| (200..=599).contains(code))
        .and_then(|code| StatusCode::from_u16(code as u16).ok())
    {
        *answer.status_mut() = code;
    }
    answer
}

async fn release(request: Request) -> Response {
    let mut answer = echo(&request);
    answer
        .headers_mut()
        .insert("waiting-room-release", HeaderValue::from_static("1"));
    answer
}

/// The number that starts `rest`, e.g. 500 in `500/x`.
fn leading_number(rest: &str) -> Option<u64> {
    rest.split('/').next()?.parse().ok()
}

/// The page that shows the request head as the origin received it.
fn echo(request: &Request) -> Response {
    let mut head = format!(
        "{} {} {:?}\n",
        request.method(),
        request.uri(),
        request.version()
    );
    for (name, value) in request.headers() {
        let value = String::from_utf8_lossy(value.as_bytes());
        head.push_str(&format!("{name}: {value}\n"));
    }
    let head = escape_html(&head);
    with_origin_headers(Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Demo origin</title></head>\
         <body><h1>{ORIGIN_MARKER}</h1><p>The waiting room let you in. This is what it forwarded:</p>\
         <pre id=\"request\">\n{head}</pre></body></html>"
    )))
}

/// `page` with the headers every answer carries.
fn with_origin_headers(page: Html<String>) -> Response {
    let headers = [
        (header::CACHE_CONTROL, "public, max-age=60"),
        (header::SET_COOKIE, "demo_origin=1; Path=/"),
    ];
    (headers, page).into_response()
}

/// Enough escaping for text inside an element (not an attribute).
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;")
}
