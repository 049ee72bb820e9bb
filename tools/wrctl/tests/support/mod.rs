//! What the wrctl tests share: the built binary as a child process, HTTP requests
//! to it (test-support's client, and raw bytes), a stand-in for the Fastly API that
//! records what it is sent, and synthetic log lines.
#![allow(dead_code)]

pub mod prometheus;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

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
use wrctl::state::Info;

/// The longest any test waits for the program to do something.
pub const BOUND: Duration = Duration::from_secs(30);

/// `wrctl control` writing to the API stand-in's store, with `extra` arguments.
pub fn to_fastly<'a>(api: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let args = [
        "control",
        "--target-per-minute",
        "60",
        "--fastly-store-id",
        "store1",
        "--fastly-api-url",
        api,
        "--quiet",
    ];
    [&args[..], extra].concat()
}

/// What the control thread reports of a room's options: `target` a minute and
/// the default bounds.
pub fn info(room: Option<&str>, target: f64, dry_run: bool, sink: &str) -> Info {
    let options = control::options::Options::default();
    Info {
        target_per_minute: target,
        max_active: None,
        min: options.min,
        max: options.max,
        dry_run,
        sink: sink.into(),
        room: room.map(str::to_string),
        room_dashboards: Vec::new(),
    }
}

/// The names of the files in `dir`.
pub fn file_names(dir: &std::path::Path) -> Vec<std::ffi::OsString> {
    let entries = std::fs::read_dir(dir).unwrap();
    entries.map(|e| e.unwrap().file_name()).collect()
}

/// Unix seconds now.
pub use wrctl::clock::unix_now;

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

/// What a run of `wrctl` left: exit code, stdout, stderr.
pub struct Run {
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
}

impl Run {
    pub fn all(&self) -> String {
        format!("{}{}", self.out, self.err)
    }
}

/// `wrctl` with `args` and the environment `env` (FASTLY_API_TOKEN is removed
/// unless `env` sets it), run to its end with empty stdin.
pub fn wrctl(args: &[&str], env: &[(&str, &str)]) -> Run {
    let output = command(args, env).stdin(Stdio::null()).output().unwrap();
    Run {
        code: output.status.code(),
        out: String::from_utf8(output.stdout).unwrap(),
        err: String::from_utf8(output.stderr).unwrap(),
    }
}

/// The `wrctl` command with `args`, without FASTLY_API_TOKEN, WRCTL_LOG_SECRET and
/// WRCTL_WEBHOOK_URL unless `env` sets them.
fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wrctl"));
    command
        .args(args)
        .env_remove("FASTLY_API_TOKEN")
        .env_remove("WRCTL_LOG_SECRET")
        .env_remove("WRCTL_WEBHOOK_URL")
        .envs(env.iter().copied());
    command
}

/// `wrctl` with `args`, run to its end with empty stdin: (exit code, stderr).
pub fn run_to_end(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut child = command(args, env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
        let mut child = command(args, env)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
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

    /// The address of `--state-listen`, as printed at start.
    pub fn state_addr(&self) -> SocketAddr {
        eventually("the state listener's line", || {
            let err = self.stderr();
            let rest = err
                .split("serving the dashboard and metrics on http://")
                .nth(1)?;
            rest.lines().next()?.parse().ok()
        })
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

/// `line` with ` room=NAME` after its `uid=` field, as the room logs a named
/// room's lines (`None`: the service room's, as it is).
pub fn in_room(line: &str, room: Option<&str>) -> String {
    let Some(room) = room else {
        return line.to_string();
    };
    let at = line.find(" uid=").expect("a room line") + 1;
    let end = line[at..].find(' ').map_or(line.len(), |i| at + i);
    format!("{} room={room}{}", &line[..end], &line[end..])
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
    /// `METHOD PATH`, as its request line has them.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

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
///
/// Every answer carries the rate-limit headers the API documents ("Fastly API
/// rate limiting"): `Fastly-RateLimit-Remaining`, the modifying (non-GET,
/// non-HEAD) requests left in the current hour window, and
/// `Fastly-RateLimit-Reset`, when the window resets (Unix seconds). With a
/// budget ([`MockApi::with_budget`]) it enforces them: past the budget a
/// modifying request is answered 429 Too Many Requests, with the same headers,
/// and is not counted; and it checks every request to a config store's items
/// as the API documents it (`Fastly-Key`, JSON, at most 1,000 items of
/// `op`/`item_key`/`item_value`, keys of at most 256 characters, values of at
/// most 8,000): 401 or 400 otherwise.
pub struct MockApi {
    pub addr: SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
    /// The window's requests and the budget, with a budget.
    limit: Arc<Mutex<Limit>>,
    /// The stand-in's clock, Unix seconds (a test moves it to run an hour in a moment).
    pub clock: Arc<AtomicU64>,
}

/// What the stand-in's handler shares.
struct Api {
    script: Vec<u16>,
    answer_body: String,
    received: Arc<Mutex<Vec<Received>>>,
    limit: Arc<Mutex<Limit>>,
    clock: Arc<AtomicU64>,
}

/// The rate limit's state: the budget of modifying requests an hour window,
/// the window, and the requests counted in it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limit {
    /// `None`: headers only, with the API's default of 1,000, nothing enforced.
    pub budget: Option<u64>,
    /// The hour window (Unix seconds / 3600) counted.
    pub window: u64,
    /// Modifying requests counted in it.
    pub used: u64,
    /// Requests answered 429.
    pub refused: u64,
}

/// The API's documented default budget of modifying requests an hour per user.
pub const FASTLY_HOURLY_LIMIT: u64 = 1000;

impl MockApi {
    pub fn start(script: &[u16], answer_body: &str) -> MockApi {
        MockApi::serve(script, answer_body, None, unix_now())
    }

    /// A stand-in that enforces `budget` modifying requests an hour window
    /// (each window a whole hour of its clock, which starts at `clock`), and
    /// checks the config-store requests; otherwise answers as [`MockApi::start`].
    pub fn with_budget(script: &[u16], answer_body: &str, budget: u64, clock: u64) -> MockApi {
        MockApi::serve(script, answer_body, Some(budget), clock)
    }

    fn serve(script: &[u16], answer_body: &str, budget: Option<u64>, clock: u64) -> MockApi {
        assert!(!script.is_empty(), "a script of at least one status");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let limit = Arc::new(Mutex::new(Limit {
            budget,
            window: clock / 3600,
            ..Limit::default()
        }));
        let clock = Arc::new(AtomicU64::new(clock));
        let api = Arc::new(Api {
            script: script.to_vec(),
            answer_body: answer_body.to_string(),
            received: Arc::clone(&received),
            limit: Arc::clone(&limit),
            clock: Arc::clone(&clock),
        });
        let app = Router::new().fallback(answer).with_state(api);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        thread::spawn(move || runtime.block_on(serve(listener, app)));
        MockApi {
            addr,
            received,
            limit,
            clock,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Sets the stand-in's clock, Unix seconds.
    pub fn set_clock(&self, now: u64) {
        self.clock.store(now, Ordering::SeqCst);
    }

    /// The rate limit's state.
    pub fn limit(&self) -> Limit {
        *self.limit.lock().unwrap()
    }

    /// Counts `n` modifying requests in the current window, as another tool of
    /// the same user would.
    pub fn spend(&self, n: u64) {
        let now = self.clock.load(Ordering::SeqCst);
        let mut limit = self.limit.lock().unwrap();
        limit.roll(now);
        limit.used += n;
    }
}

impl Limit {
    /// Moves to the window of clock time `now`.
    fn roll(&mut self, now: u64) {
        if now / 3600 != self.window {
            self.window = now / 3600;
            self.used = 0;
        }
    }

    /// The rate-limit headers after this answer.
    fn headers(&self) -> [(&'static str, String); 2] {
        let budget = self.budget.unwrap_or(FASTLY_HOURLY_LIMIT);
        [
            (
                "Fastly-RateLimit-Remaining",
                budget.saturating_sub(self.used).to_string(),
            ),
            (
                "Fastly-RateLimit-Reset",
                ((self.window + 1) * 3600).to_string(),
            ),
        ]
    }
}

/// Checks a request to a config store's items as the API documents it: the
/// status to answer when it is not right.
fn check_config_store_request(request: &Received) -> Option<(u16, String)> {
    let rest = request.path.strip_prefix("/resources/stores/config/")?;
    let (store, tail) = rest.split_once('/')?;
    if tail != "items" || request.method != "PATCH" {
        return None;
    }
    let bad = |why: &str| Some((400, format!(r#"{{"msg":"{why}"}}"#)));
    if request
        .header("Fastly-Key")
        .is_none_or(|k| k.trim().is_empty())
    {
        return Some((
            401,
            r#"{"msg":"Provided credentials are missing or invalid"}"#.into(),
        ));
    }
    if store.is_empty()
        || !store
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return bad("bad store id");
    }
    if request.header("Content-Type") != Some("application/json") {
        return bad("expected Content-Type: application/json");
    }
    let Ok(body) = serde_json::from_str::<serde_json::Value>(&request.body) else {
        return bad("the body is not JSON");
    };
    let Some(items) = body.get("items").and_then(|i| i.as_array()) else {
        return bad("expected {\"items\": [...]}");
    };
    if items.is_empty() || items.len() > 1000 {
        return bad("a batch holds 1 to 1000 items");
    }
    for item in items {
        let op = item.get("op").and_then(|v| v.as_str());
        let key = item.get("item_key").and_then(|v| v.as_str());
        let value = item.get("item_value").and_then(|v| v.as_str());
        let fields = item.as_object().map_or(0, |o| o.len());
        match (op, key, value) {
            (Some("create" | "update" | "upsert"), Some(k), Some(v))
                if fields == 3 && !k.is_empty() && k.len() <= 256 && v.len() <= 8000 => {}
            (Some("delete"), Some(k), None) if fields == 2 && !k.is_empty() => {}
            _ => return bad("an item is op, item_key and item_value"),
        }
    }
    None
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

/// Records the request and answers with the script's next status, the
/// rate-limit headers, and with a budget a 429 past it.
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
    let modifying = method != Method::GET && method != Method::HEAD;
    let checked = {
        let limit = api.limit.lock().unwrap();
        limit
            .budget
            .and_then(|_| check_config_store_request(&request))
    };
    let n = {
        let mut all = api.received.lock().unwrap();
        all.push(request);
        all.len()
    };
    let now = api.clock.load(Ordering::SeqCst);
    let mut limit = api.limit.lock().unwrap();
    limit.roll(now);
    let (status, body) = if let Some((status, body)) = checked {
        (status, body)
    } else if modifying && limit.budget.is_some_and(|b| limit.used >= b) {
        limit.refused += 1;
        (
            429,
            r#"{"msg":"You have exceeded your hourly rate limit","detail":"Too Many Requests"}"#
                .to_string(),
        )
    } else {
        if modifying {
            limit.used += 1;
        }
        (
            api.script[(n - 1).min(api.script.len() - 1)],
            api.answer_body.clone(),
        )
    };
    let mut answer_headers = HeaderMap::new();
    answer_headers.insert(CONTENT_TYPE, "application/json".parse().unwrap());
    for (name, value) in limit.headers() {
        answer_headers.insert(name, value.parse().unwrap());
    }
    (StatusCode::from_u16(status).unwrap(), answer_headers, body)
}
