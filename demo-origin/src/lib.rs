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
//!   answers when a visitor is done (after checkout) to free their place at once;
//! - `/__origin/stats`: what the origin did, as JSON ([`Stats`]);
//! - `/__origin/capacity`: the capacity, as JSON (`GET`), or a new one (`POST
//!   /__origin/capacity?n=4&service_ms=50&queue=40`, or `n=unlimited`), for requests
//!   from a loopback address only.
//!
//! Any method is answered alike, but on the capacity path. One request a connection
//! (`Connection: close`), so that a client never reuses a connection the origin is
//! closing.
//!
//! With a [`Capacity`] (none by default), every path but the waiting pages, the
//! stats and the capacity waits for one of a number of places, holds it for a
//! service time (a slow answer's delay comes on top, the place held) and answers;
//! beyond a queue limit it answers 503 at once. The waiting pages stay outside: they
//! are what the room shows while the origin is loaded.

mod capacity;

pub use capacity::{
    Capacity, DEFAULT_SERVICE, MAX_PLACES, MAX_QUEUE, MAX_SERVICE, QUEUE_PER_PLACE, Stats,
};

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::any;
use capacity::{Full, Gate};
use hyper::server::conn::http1;
use hyper::service::{Service as _, service_fn};
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
/// Path of what the origin did, as JSON.
pub const STATS_PATH: &str = "/__origin/stats";
/// Path of the capacity: `GET` reads it, `POST ?n=…&service_ms=…&queue=…` sets it
/// (from a loopback address only).
pub const CAPACITY_PATH: &str = "/__origin/capacity";

/// The longest a slow answer waits.
const MAX_SLOW: Duration = Duration::from_secs(60);

/// A running origin, and a handle on its capacity. Its thread serves until the
/// process ends; dropping this handle does not stop it (tests keep only the address).
#[derive(Clone, Debug)]
pub struct Origin {
    addr: SocketAddr,
    gate: Arc<Gate>,
}

impl Origin {
    /// Starts an origin on `addr` (use port 0 for any free port), without a
    /// capacity. A bind error names the address.
    pub fn start(addr: &str) -> io::Result<Origin> {
        Origin::start_with(addr, None)
    }

    /// Starts an origin on `addr` with `capacity` (`None`: unlimited). A bind error
    /// names the address; a capacity out of bounds is an invalid input.
    pub fn start_with(addr: &str, capacity: Option<Capacity>) -> io::Result<Origin> {
        if let Some(capacity) = capacity {
            capacity
                .check()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let gate = Gate::new(capacity);
        let app = router(gate.clone());
        thread::Builder::new()
            .name("demo-origin".into())
            .spawn(move || runtime.block_on(serve(listener, app)))?;
        Ok(Origin { addr, gate })
    }

    /// The address the origin listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The capacity now (`None`: unlimited).
    pub fn capacity(&self) -> Option<Capacity> {
        self.gate.capacity()
    }

    /// Sets the capacity (`None`: unlimited) for the requests that come next and
    /// those waiting, as `POST /__origin/capacity` does.
    pub fn set_capacity(&self, capacity: Option<Capacity>) -> Result<(), String> {
        if let Some(capacity) = capacity {
            capacity.check()?;
        }
        self.gate.set(capacity);
        Ok(())
    }

    /// What the origin did, as `/__origin/stats` answers.
    pub fn stats(&self) -> Stats {
        self.gate.stats()
    }
}

/// The address a request came from.
#[derive(Clone, Copy)]
struct Peer(SocketAddr);

async fn serve(listener: std::net::TcpListener, app: Router) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => return eprintln!("demo origin: the listener stopped: {e}"),
    };
    let app = TowerToHyperService::new(app);
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            // Out of file descriptors, or a connection reset before it was taken.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let app = app.clone();
        let service = service_fn(move |mut request: hyper::Request<_>| {
            request.extensions_mut().insert(Peer(peer));
            app.call(request)
        });
        tokio::spawn(async move {
            // A client that goes away mid-request is not the origin's problem.
            let _ = http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn router(gate: Arc<Gate>) -> Router {
    Router::new()
        .route(&format!("{PAGE_PREFIX}{{*name}}"), any(page))
        .route(STATS_PATH, any(stats))
        .route(CAPACITY_PATH, any(capacity))
        .route(&format!("{SLOW_PREFIX}{{*rest}}"), any(slow))
        .route(&format!("{STATUS_PREFIX}{{*rest}}"), any(status))
        .route(&format!("{RELEASE_PREFIX}{{*rest}}"), any(release))
        .fallback(|State(gate): State<Arc<Gate>>, request: Request| {
            through(gate, async move { echo(&request) })
        })
        .with_state(gate)
}

/// `answer`, once the request has a place and has held it for the service time;
/// 503 at once when the queue is full.
async fn through(gate: Arc<Gate>, answer: impl Future<Output = Response>) -> Response {
    let place = match gate.enter().await {
        Ok(place) => place,
        Err(Full(capacity)) => return at_capacity(capacity),
    };
    if !place.service.is_zero() {
        tokio::time::sleep(place.service).await;
    }
    let answer = answer.await;
    gate.served();
    drop(place);
    answer
}

/// The answer of an origin whose queue is full: not to be cached.
fn at_capacity(capacity: Capacity) -> Response {
    let text = format!(
        "The demo origin is at capacity: {} requests at once, {} waiting.\n",
        capacity.places, capacity.queue
    );
    let headers = [
        (header::CACHE_CONTROL, "no-store"),
        (header::RETRY_AFTER, "1"),
    ];
    (StatusCode::SERVICE_UNAVAILABLE, headers, text).into_response()
}

async fn page(Path(name): Path<String>) -> Response {
    with_origin_headers(Html(format!(
        "<!doctype html><title>Waiting room</title><p>Origin-hosted waiting page: {}</p>",
        escape_html(&name)
    )))
}

async fn slow(
    State(gate): State<Arc<Gate>>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    through(gate, async move {
        if let Some(ms) = leading_number(&rest) {
            tokio::time::sleep(Duration::from_millis(ms).min(MAX_SLOW)).await;
        }
        echo(&request)
    })
    .await
}

async fn status(
    State(gate): State<Arc<Gate>>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    through(gate, async move {
        let mut answer = echo(&request);
        if let Some(code) = leading_number(&rest)
            .filter(|code| (200..=599).contains(code))
            .and_then(|code| StatusCode::from_u16(code as u16).ok())
        {
            *answer.status_mut() = code;
        }
        answer
    })
    .await
}

async fn release(State(gate): State<Arc<Gate>>, request: Request) -> Response {
    through(gate, async move {
        let mut answer = echo(&request);
        answer
            .headers_mut()
            .insert("waiting-room-release", HeaderValue::from_static("1"));
        answer
    })
    .await
}

async fn stats(State(gate): State<Arc<Gate>>) -> Response {
    json(StatusCode::OK, gate.stats().to_json())
}

/// `GET`: the capacity; `POST ?n=…`: a new one. From a loopback address only.
async fn capacity(State(gate): State<Arc<Gate>>, request: Request) -> Response {
    let loopback = request
        .extensions()
        .get::<Peer>()
        .is_some_and(|Peer(peer)| is_loopback(peer.ip()));
    if !loopback {
        return text(
            StatusCode::FORBIDDEN,
            "The capacity is changed from loopback only.\n",
        );
    }
    match *request.method() {
        Method::GET => {}
        Method::POST => match Capacity::from_query(request.uri().query().unwrap_or("")) {
            Ok(capacity) => gate.set(capacity),
            Err(e) => return text(StatusCode::BAD_REQUEST, &format!("{e}\n")),
        },
        _ => return text(StatusCode::METHOD_NOT_ALLOWED, "GET or POST\n"),
    }
    json(StatusCode::OK, capacity::capacity_json(gate.capacity()))
}

/// Loopback, IPv4 mapped into IPv6 too.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
    }
}

/// An admin answer: JSON, not cached.
fn json(status: StatusCode, body: String) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "application/json"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    (status, headers, format!("{body}\n")).into_response()
}

/// An admin answer: plain text, not cached.
fn text(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        body.to_string(),
    )
        .into_response()
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
