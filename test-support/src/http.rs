//! A small HTTP/1.1 client that connects from a chosen 127.0.0.x source address,
//! so that each test client is a different visitor to Viceroy.
//!
//! The socket is bound and connected here (with socket2: std cannot bind a
//! client's source address); [hyper]'s client speaks HTTP on it, on a
//! single-threaded tokio runtime of the calling thread. One request per
//! connection: it sends `Connection: close` and reads the whole response.
//!
//! - [`get`] / [`try_get`]: `GET` from 127.0.0.`from`, panicking or saying why not;
//! - [`get_raw_header`]: with one header whose value is any bytes (e.g. not UTF-8);
//! - [`get_v6`]: from `::1` to an IPv6 address;
//! - [`request`]: any method, with a body (sent with its `Content-Length` when not empty).
//!
//! Limits: 5 s to connect, then 20 s for the whole exchange.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{CONNECTION, HOST, HeaderName, HeaderValue};
use hyper::{Method, Request, client::conn::http1};
use hyper_util::rt::TokioIo;
use socket2::{Domain, Socket, Type};
use tokio::runtime::Runtime;

/// The longest a connection may take to be set up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest the request and response may take, once connected.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// A response, read to its end.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Every header, names in lower case, grouped by name in the order each name
    /// first came; a name's repeats (such as `set-cookie`) in their order.
    pub headers: Vec<(String, String)>,
    /// The body, as UTF-8 (invalid bytes replaced).
    pub body: String,
}

impl Response {
    /// Every value of header `name` (case-insensitive), in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The single value of header `name`, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        let all = self.all(name);
        assert!(all.len() <= 1, "{name} appears {} times", all.len());
        all.first().copied()
    }

    /// The value of the `waiting_room` cookie this response sets, if any.
    pub fn room_cookie(&self) -> Option<String> {
        let set: Vec<&str> = self
            .all("set-cookie")
            .into_iter()
            .filter_map(|v| v.strip_prefix("waiting_room="))
            .collect();
        assert!(set.len() <= 1, "waiting_room set {} times", set.len());
        set.first()
            .map(|value| value.split(';').next().unwrap().to_string())
    }
}

/// Why a request got no well-formed response.
#[derive(Debug)]
pub enum Failure {
    /// The source address could not be bound, or the room not reached.
    Connect(io::Error),
    /// The connection failed or timed out while the request was sent or the
    /// response read.
    Io(io::Error),
    /// What came back is not a well-formed HTTP/1.1 response (or it ended early).
    Malformed(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Connect(err) => write!(f, "cannot connect: {err}"),
            Failure::Io(err) => write!(f, "connection failed: {err}"),
            Failure::Malformed(why) => write!(f, "malformed response: {why}"),
        }
    }
}

impl std::error::Error for Failure {}

/// Sends `GET path` to `to` from source address 127.0.0.`from`, with extra
/// headers; panics when no well-formed response comes back.
pub fn get(to: SocketAddr, from: u8, path: &str, headers: &[(&str, &str)]) -> Response {
    try_get(to, from, path, headers)
        .unwrap_or_else(|failure| panic!("GET {path} from 127.0.0.{from}: {failure}"))
}

/// Like [`get`], but says what went wrong instead of panicking.
pub fn try_get(
    to: SocketAddr,
    from: u8,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Response, Failure> {
    send(to, v4(from), Method::GET, path, &text(headers), &[])
}

/// Sends `method path` with extra headers and `body` to `to` from 127.0.0.`from`;
/// panics when no well-formed response comes back.
pub fn request(
    to: SocketAddr,
    from: u8,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let verb =
        Method::from_bytes(method.as_bytes()).unwrap_or_else(|e| panic!("method {method:?}: {e}"));
    send(to, v4(from), verb, path, &text(headers), body)
        .unwrap_or_else(|failure| panic!("{method} {path} from 127.0.0.{from}: {failure}"))
}

/// Sends `GET path` with one header whose value is raw bytes (e.g. not UTF-8).
pub fn get_raw_header(to: SocketAddr, from: u8, path: &str, name: &str, value: &[u8]) -> Response {
    send(to, v4(from), Method::GET, path, &[(name, value)], &[])
        .unwrap_or_else(|failure| panic!("GET {path} with raw {name}: {failure}"))
}

/// Sends `GET path` to `to` (an IPv6 address) from the IPv6 loopback `::1`.
pub fn get_v6(to: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    let source = SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 0);
    send(to, source, Method::GET, path, &text(headers), &[])
        .unwrap_or_else(|failure| panic!("GET {path} from ::1: {failure}"))
}

fn v4(from: u8) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, from), 0))
}

fn text<'a>(headers: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a [u8])> {
    headers.iter().map(|&(n, v)| (n, v.as_bytes())).collect()
}

/// `method path` from `source`, on a connection of its own. A header that is not
/// valid HTTP is the test's mistake: it panics.
fn send(
    to: SocketAddr,
    source: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &[u8])],
    body: &[u8],
) -> Result<Response, Failure> {
    let mut request = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(CONNECTION, "close");
    // The address the request goes to, unless the test names a host of its own.
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request = request.header(HOST, to.to_string());
    }
    for &(name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .unwrap_or_else(|e| panic!("header name {name:?}: {e}"));
        let value = HeaderValue::from_bytes(value)
            .unwrap_or_else(|e| panic!("{name} value {value:?}: {e}"));
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(Bytes::copy_from_slice(body)))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let stream = connect(to, source).map_err(Failure::Connect)?;
    block_on(async {
        tokio::time::timeout(EXCHANGE_TIMEOUT, exchange(stream, request))
            .await
            .unwrap_or_else(|_| {
                Err(Failure::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no whole response within {EXCHANGE_TIMEOUT:?}"),
                )))
            })
    })
}

/// A TCP connection from `source` (port 0: any) to `to`.
fn connect(to: SocketAddr, source: SocketAddr) -> io::Result<std::net::TcpStream> {
    let domain = if source.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let socket = Socket::new(domain, Type::STREAM, None)?;
    socket.bind(&source.into())?;
    socket.connect_timeout(&to.into(), CONNECT_TIMEOUT)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Sends `request` on `stream` and reads the response to its end.
async fn exchange(
    stream: std::net::TcpStream,
    request: Request<Full<Bytes>>,
) -> Result<Response, Failure> {
    let stream = tokio::net::TcpStream::from_std(stream).map_err(Failure::Io)?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(failure)?;
    // The connection ends after the response (`Connection: close`); an error of
    // its own reaches `send_request` or the body too.
    let connection = tokio::spawn(connection);
    let answer = read(sender.send_request(request)).await;
    connection.abort();
    answer
}

/// The whole response `sent` brings.
async fn read(
    sent: impl Future<Output = hyper::Result<hyper::Response<hyper::body::Incoming>>>,
) -> Result<Response, Failure> {
    let (parts, body) = sent.await.map_err(failure)?.into_parts();
    let body = body.collect().await.map_err(failure)?.to_bytes();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_string(), value)
        })
        .collect();
    Ok(Response {
        status: parts.status.as_u16(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// What a hyper error means to a test: the answer was not HTTP, or the connection failed.
fn failure(err: hyper::Error) -> Failure {
    if err.is_parse() || err.is_parse_status() || err.is_incomplete_message() {
        Failure::Malformed(err.to_string())
    } else {
        Failure::Io(io::Error::other(err))
    }
}

/// Runs `future` on this thread's runtime (one per calling thread, made once).
fn block_on<T>(future: impl Future<Output = T>) -> T {
    thread_local! {
        static RUNTIME: Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .expect("a tokio runtime for the HTTP client");
    }
    RUNTIME.with(|runtime| runtime.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;
    use demo_origin::{ORIGIN_MARKER, Origin, RELEASE_PREFIX, SLOW_PREFIX, STATUS_PREFIX};
    use std::io::{Read, Write};

    fn origin() -> SocketAddr {
        Origin::start("127.0.0.1:0").unwrap().addr()
    }

    #[test]
    fn reads_the_demo_origin_from_a_chosen_source() {
        let to = origin();
        let r = get(to, 7, "/x?y=1", &[("Cookie", "a=1"), ("X-Two", "b")]);
        assert_eq!(r.status, 200);
        assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
        assert!(r.body.contains("GET /x?y=1 HTTP/1.1\n"), "{}", r.body);
        assert!(r.body.contains("cookie: a=1\n"), "{}", r.body);
        assert!(r.body.contains("x-two: b\n"), "{}", r.body);
        assert_eq!(r.header("Set-Cookie"), Some("demo_origin=1; Path=/"));
        assert_eq!(r.header("cache-control"), Some("public, max-age=60"));
        assert_eq!(r.header("connection"), Some("close"));
        assert_eq!(r.header("waiting-room-release"), None);
    }

    #[test]
    fn sends_any_method_with_its_body() {
        let to = origin();
        let r = request(to, 8, "POST", "/p", &[("X-One", "1")], b"hello");
        assert_eq!(r.status, 200);
        assert!(r.body.contains("POST /p HTTP/1.1\n"), "{}", r.body);
        assert!(r.body.contains("content-length: 5\n"), "{}", r.body);
        assert!(r.body.contains("x-one: 1\n"), "{}", r.body);
        let r = request(to, 8, "DELETE", "/d", &[], b"");
        assert!(r.body.contains("DELETE /d HTTP/1.1\n"), "{}", r.body);
        assert!(!r.body.contains("content-length"), "{}", r.body);
    }

    #[test]
    fn special_paths() {
        let to = origin();
        let r = get(to, 2, &format!("{STATUS_PREFIX}503/x"), &[]);
        assert_eq!(r.status, 503);
        assert!(r.body.contains(ORIGIN_MARKER));
        assert_eq!(get(to, 2, &format!("{STATUS_PREFIX}99/x"), &[]).status, 200);
        let began = std::time::Instant::now();
        assert!(
            get(to, 2, &format!("{SLOW_PREFIX}300/x"), &[])
                .body
                .contains(ORIGIN_MARKER)
        );
        assert!(began.elapsed() >= Duration::from_millis(300));
        let r = get(to, 2, &format!("{RELEASE_PREFIX}done"), &[]);
        assert_eq!(r.header("waiting-room-release"), Some("1"));
        let r = get(to, 2, "/__origin/page/keep%3C", &[]);
        assert!(r.body.contains("Origin-hosted waiting page: keep&lt;"));
        let r = get_raw_header(to, 2, "/", "Accept", b"\xff text/html");
        assert!(r.body.contains("accept: \u{fffd} text/html"), "{}", r.body);
    }

    #[test]
    fn repeated_headers_chunked_bodies_and_failures() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = listener.local_addr().unwrap();
        let answers: [&[u8]; 2] = [
            b"HTTP/1.1 404 Not Found\r\nSet-Cookie: a=1\r\nX: y\r\nSet-Cookie: waiting_room=t; Path=/\r\n\
              Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            b"not http\r\n\r\n",
        ];
        let server = std::thread::spawn(move || {
            for answer in answers {
                let (mut stream, _) = listener.accept().unwrap();
                let mut head = [0u8; 1024];
                let _ = stream.read(&mut head);
                stream.write_all(answer).unwrap();
            }
        });
        let r = get(to, 3, "/", &[]);
        assert_eq!((r.status, r.body.as_str()), (404, "abcde"));
        assert_eq!(r.all("set-cookie"), ["a=1", "waiting_room=t; Path=/"]);
        assert_eq!(r.room_cookie().as_deref(), Some("t"));
        assert!(matches!(
            try_get(to, 3, "/", &[]),
            Err(Failure::Malformed(_))
        ));
        server.join().unwrap();
        assert!(matches!(try_get(to, 3, "/", &[]), Err(Failure::Connect(_))));
    }
}
