//! What the wrctl tests share: the built binary as a child process, a raw HTTP
//! client, a stand-in for the Fastly API that records what it is sent, and
//! synthetic log lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The longest any test waits for the program to do something.
pub const BOUND: Duration = Duration::from_secs(30);

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Polls `check` every 50 ms until it returns something, or panics after [`BOUND`].
pub fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// `wrctl` with `args`, run to its end with empty stdin: (exit code, stderr).
pub fn run_to_end(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wrctl"));
    command
        .args(args)
        .env_remove("FASTLY_API_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("wrctl {args:?} did not end");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

/// A running `wrctl`; killed when dropped.
pub struct Wrctl {
    child: Child,
    /// Its stdin, until [`Wrctl::close_stdin`].
    pub stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<String>>,
    /// The address it listens on, with `--listen`.
    pub addr: Option<SocketAddr>,
}

impl Wrctl {
    /// Starts `wrctl` with `args` and the environment `env` (FASTLY_API_TOKEN is
    /// removed unless `env` sets it); with `--listen`, waits for its address.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Wrctl {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wrctl"));
        command
            .args(args)
            .env_remove("FASTLY_API_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        let pipe = child.stderr.take().unwrap();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let stdin = child.stdin.take();
        let mut wrctl = Wrctl {
            child,
            stdin,
            stderr,
            addr: None,
        };
        if args.contains(&"--listen") {
            let addr = eventually("the listening line", || {
                let err = wrctl.stderr();
                let rest = err.split("listening on http://").nth(1)?;
                rest.lines().next()?.parse().ok()
            });
            wrctl.addr = Some(addr);
        }
        wrctl
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Writes lines to its stdin.
    pub fn feed(&mut self, lines: &[String]) {
        let stdin = self.stdin.as_mut().unwrap();
        let mut text = lines.join("\n");
        text.push('\n');
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Closes its stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for it to exit; its exit code.
    pub fn wait(&mut self) -> Option<i32> {
        eventually("wrctl to exit", || self.child.try_wait().unwrap()).code()
    }

    /// An HTTP request to its listener.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        request(self.addr.unwrap(), method, path, headers, body)
    }

    /// `GET path`: the body of a 200 answer.
    pub fn get(&self, path: &str) -> String {
        let reply = self.request("GET", path, &[], b"");
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.text());
        reply.text()
    }

    /// `GET /status.json`, parsed.
    pub fn status(&self) -> serde_json::Value {
        serde_json::from_str(&self.get("/status.json")).unwrap()
    }

    /// The value of an unlabelled metric in `GET /metrics`.
    pub fn metric(&self, name: &str) -> Option<f64> {
        metric(&self.get("/metrics"), name)
    }
}

impl Drop for Wrctl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of sample `name` (with its labels, if any) in a metrics text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One HTTP/1.1 request on its own connection.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body);
    exchange(addr, &raw).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// Sends `raw` bytes and reads the answer to the end of the connection.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(BOUND))?;
    stream.write_all(raw)?;
    // End of request: the server sees the end of anything cut short at once.
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    // The server may close before reading all of a refused body: keep what came.
    let _ = stream.read_to_end(&mut answer);
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "no HTTP answer: {:?}",
                String::from_utf8_lossy(&answer)
            ))
        })?;
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line: {head}")))?;
    Ok(Reply {
        status,
        head,
        body: answer[split + 4..].to_vec(),
    })
}

/// A request the API stand-in received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A stand-in for the Fastly API: answers each request with the next status of
/// `script` (the last one repeats), with `answer_body`, and records the requests.
pub struct MockApi {
    pub addr: SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
}

impl MockApi {
    pub fn start(script: &[u16], answer_body: &str) -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let script = script.to_vec();
        let answer_body = answer_body.to_string();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let Some(request) = read_request(&stream) else {
                    continue;
                };
                let n = {
                    let mut all = log.lock().unwrap();
                    all.push(request);
                    all.len()
                };
                let status = script[(n - 1).min(script.len() - 1)];
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} Whatever\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{answer_body}",
                    answer_body.len()
                );
            }
        });
        MockApi { addr, received }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    stream.set_read_timeout(Some(BOUND)).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next()?.to_string(), words.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (k, v) = header.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}
