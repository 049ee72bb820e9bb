//! A small HTTP/1.1 client that connects from a chosen 127.0.0.x source address,
//! so that each test client is a different visitor to Viceroy.

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

/// Sends `GET path` to `to` from source address 127.0.0.`from`, with extra headers.
pub fn get(to: SocketAddr, from: u8, path: &str, headers: &[(&str, &str)]) -> Response {
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
}

fn head(to: SocketAddr, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n").into_bytes()
}

/// Sends the request head (adding the blank line) and reads the whole response.
fn send(to: SocketAddr, from: u8, mut request: Vec<u8>) -> Response {
    let source = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, from), 0));
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket.bind(&source.into()).unwrap();
    socket
        .connect_timeout(&to.into(), Duration::from_secs(5))
        .unwrap();
    let mut stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();

    request.extend_from_slice(b"\r\n");
    stream.write_all(&request).unwrap();

    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse(&raw)
}

fn parse(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response has no header end");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = std::str::from_utf8(&rest[..end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
