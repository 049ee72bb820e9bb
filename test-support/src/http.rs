//! A small HTTP/1.1 client that connects from a chosen 127.0.0.x source address,
//! so that each test client is a different visitor to Viceroy. One request per
//! connection: it sends `Connection: close` and reads the response to the end.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::Duration;

use socket2::{Domain, Socket, Type};

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
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
        let set = self
            .all("set-cookie")
            .into_iter()
            .filter(|v| v.starts_with("waiting_room="))
            .collect::<Vec<_>>();
        assert!(set.len() <= 1, "waiting_room set {} times", set.len());
        set.first().map(|v| {
            let value = &v["waiting_room=".len()..];
            value.split(';').next().unwrap().to_string()
        })
    }
}

/// Why a request got no well-formed response.
#[derive(Debug)]
pub enum Failure {
    /// The source address could not be bound, or the room not reached.
    Connect(std::io::Error),
    /// The connection failed while the request was sent or the response read.
    Io(std::io::Error),
    /// What came back is not a well-formed HTTP/1.1 response.
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

/// Sends `GET path` to `to` from source address 127.0.0.`from`, with extra
/// headers; panics when no well-formed response comes back.
pub fn get(to: SocketAddr, from: u8, path: &str, headers: &[(&str, &str)]) -> Response {
    try_get(to, from, path, headers)
        .unwrap_or_else(|failure| panic!("GET {path} from 127.0.0.{from}: {failure}"))
}

/// Like [`get`], but says what went wrong instead of panicking.
///
/// Every request is its own TCP connection: the request says `Connection: close`
/// and the response is read to the end of the stream (no keep-alive).
pub fn try_get(
    to: SocketAddr,
    from: u8,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Response, Failure> {
    let mut request = head(to, path);
    for (name, value) in headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    send(to, from, request)
}

/// Sends `GET path` with one header whose value is raw bytes (e.g. not UTF-8).
pub fn get_raw_header(to: SocketAddr, from: u8, path: &str, name: &str, value: &[u8]) -> Response {
    let mut request = head(to, path);
    request.extend_from_slice(format!("{name}: ").as_bytes());
    request.extend_from_slice(value);
    request.extend_from_slice(b"\r\n");
    send(to, from, request)
        .unwrap_or_else(|failure| panic!("GET {path} with raw {name}: {failure}"))
}

fn head(to: SocketAddr, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n").into_bytes()
}

/// Sends `GET path` to `to` (an IPv6 address) from the IPv6 loopback `::1`.
pub fn get_v6(to: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut request = head(to, path);
    for (name, value) in headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    let source = SocketAddr::new(std::net::Ipv6Addr::LOCALHOST.into(), 0);
    send_from(to, source, request)
        .unwrap_or_else(|failure| panic!("GET {path} from ::1: {failure}"))
}

/// Sends the request head (adding the blank line) and reads the whole response.
fn send(to: SocketAddr, from: u8, request: Vec<u8>) -> Result<Response, Failure> {
    let source = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, from), 0));
    send_from(to, source, request)
}

/// [`send`] from any source address.
fn send_from(
    to: SocketAddr,
    source: SocketAddr,
    mut request: Vec<u8>,
) -> Result<Response, Failure> {
    let domain = if source.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let socket = Socket::new(domain, Type::STREAM, None).map_err(Failure::Connect)?;
    socket.bind(&source.into()).map_err(Failure::Connect)?;
    socket
        .connect_timeout(&to.into(), Duration::from_secs(5))
        .map_err(Failure::Connect)?;
    let mut stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(Failure::Io)?;

    request.extend_from_slice(b"\r\n");
    stream.write_all(&request).map_err(Failure::Io)?;

    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(Failure::Io)?;
    parse(&raw).map_err(Failure::Malformed)
}

/// Parses a whole response; its body must be exactly as long as it says.
fn parse(raw: &[u8]) -> Result<Response, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of header")?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| "header not UTF-8")?;
    let rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.split(' ').next())
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("status line {status_line:?}"))?;
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').ok_or_else(|| format!("header {l:?}"))?;
            Ok((n.trim().to_string(), v.trim().to_string()))
        })
        .collect::<Result<Vec<(String, String)>, String>>()?;
    let value = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let body = if value("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        dechunk(rest)?
    } else {
        if let Some(length) = value("content-length") {
            let length: usize = length.parse().map_err(|_| "content-length")?;
            if length != rest.len() {
                return Err(format!("body of {} bytes, {length} announced", rest.len()));
            }
        }
        rest.to_vec()
    };
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let truncated = || "truncated chunk".to_string();
    let mut body = Vec::new();
    loop {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(truncated)?;
        let size_text = std::str::from_utf8(&rest[..end]).map_err(|_| "chunk size not UTF-8")?;
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| "chunk size")?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or_else(truncated)?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).ok_or_else(truncated)?;
    }
}
