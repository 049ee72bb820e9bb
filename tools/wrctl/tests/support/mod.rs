//! What the wrctl tests share: the built binary as a child process, HTTP requests
//! to it (test-support's client, and raw bytes), a stand-in for the Fastly API that
//! records what it is sent, and synthetic log lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, HeaderMap};
use axum::http::{Method, StatusCode, Uri};
use axum::response::IntoResponse;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use test_support::http::{self, Response};

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
    ) -> Response {
        http::request(self.addr.unwrap(), 1, method, path, headers, body)
    }

    /// `GET path`: the body of a 200 answer.
    pub fn get(&self, path: &str) -> String {
        let reply = self.request("GET", path, &[], b"");
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.body);
        reply.body
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

/// Sends `raw` bytes and reads the answer to the end of the connection. Raw on
/// purpose: it sends what no HTTP client would (garbage, cut or oversized requests).
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Response> {
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
    let head = String::from_utf8_lossy(&answer[..split]);
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1)?.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line: {head}")))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&answer[split + 4..]).into_owned(),
    })
}

/// A request the API stand-in received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// Names in lower case.
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
/// `script` (the last one repeats), with `answer_body` as JSON, and records the
/// requests. Served by hyper and axum on a current-thread runtime of its own thread.
pub struct MockApi {
    pub addr: SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
}

/// What the stand-in's handler shares.
struct Api {
    script: Vec<u16>,
    answer_body: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl MockApi {
    pub fn start(script: &[u16], answer_body: &str) -> MockApi {
        assert!(!script.is_empty(), "a script of at least one status");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let api = Arc::new(Api {
            script: script.to_vec(),
            answer_body: answer_body.to_string(),
            received: Arc::clone(&received),
        });
        let app = Router::new().fallback(answer).with_state(api);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        thread::spawn(move || runtime.block_on(serve(listener, app)));
        MockApi { addr, received }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// Serves each connection with hyper, one request per connection.
async fn serve(listener: std::net::TcpListener, app: Router) {
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let mut http = http1::Builder::new();
            http.keep_alive(false);
            let _ = http.serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// Records the request and answers with the script's next status.
async fn answer(
    State(api): State<Arc<Api>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let request = Received {
        method: method.to_string(),
        path: uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_string(), v)
            })
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let n = {
        let mut all = api.received.lock().unwrap();
        all.push(request);
        all.len()
    };
    let status = api.script[(n - 1).min(api.script.len() - 1)];
    (
        StatusCode::from_u16(status).unwrap(),
        [(CONTENT_TYPE, "application/json")],
        api.answer_body.clone(),
    )
}
