//! A local stand-in for the challenge providers' `siteverify` endpoints
//! (Cloudflare Turnstile, hCaptcha), over real HTTP/1.1 on 127.0.0.1: the room's
//! challenge backend points at it in Viceroy (`[local_server.backends]`), and
//! tests read what it received.
//!
//! It checks each request against the providers' documentation, written here
//! independently of the room's own constants ([`Api`]):
//! - `POST` (else `405`) to the provider's path (else `404`);
//! - `Content-Type: application/x-www-form-urlencoded`, or, for Turnstile only,
//!   `application/json`;
//! - the parameters `secret` and `response`, optional `remoteip` (an IP address),
//!   and Turnstile's optional `idempotency_key` (a UUID) or hCaptcha's optional
//!   `sitekey`; nothing else, nothing twice.
//!
//! One exception: `viceroy serve` checks at startup that each backend is up
//! with a `GET` of the backend's URL (viceroy 0.22, `execute_ctx.rs`), so a
//! `GET /` without a body is answered `200` and not recorded.
//!
//! A request that breaks a rule is recorded with its [`Received::violations`]
//! and answered `400` with `{"success":false,"error-codes":["bad-request"]}`.
//! A well-formed one is answered as the provider documents it:
//! - a missing `secret` or `response`: `missing-input-secret` / `missing-input-response`;
//! - a secret other than the configured one: `invalid-input-secret`;
//! - hCaptcha: a `sitekey` other than the configured one: `sitekey-secret-mismatch`;
//! - a token the stand-in was told is good ([`StandIn::good_tokens`],
//!   [`ChallengeServer::add_good_token`]): `success: true` with the configured
//!   hostname, **once**: tokens are single use, so a second verification is
//!   `timeout-or-duplicate` (Turnstile) / `already-seen-response` (hCaptcha) —
//!   unless Turnstile is given the `idempotency_key` of the first, which gets
//!   the first answer again;
//! - any other token: `invalid-input-response`.
//!
//! [`Mode`] makes it misbehave, to test a provider that is down: an HTTP status
//! of your choice, a body that is not JSON, Turnstile's `internal-error`, or no
//! answer for a while ([`Mode::Hang`]). Served by hyper on a current-thread
//! tokio runtime of its own thread, one request per connection; it runs until
//! the process ends.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// The `challenge_ts` of every success: a fixed instant (the room does not read it).
pub const CHALLENGE_TS: &str = "2024-01-01T00:00:00.000Z";

/// The largest request body read.
const MAX_BODY: usize = 64 * 1024;

/// The longest [`Mode::Hang`].
const MAX_HANG: Duration = Duration::from_secs(60);

/// Which provider's API the stand-in speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /turnstile/v0/siteverify`, form or JSON, with `idempotency_key`.
    Turnstile,
    /// `POST /siteverify`, form only, with `sitekey`.
    Hcaptcha,
}

impl Api {
    /// The documented path of `siteverify`.
    pub fn path(self) -> &'static str {
        match self {
            Api::Turnstile => "/turnstile/v0/siteverify",
            Api::Hcaptcha => "/siteverify",
        }
    }

    /// The parameters the API documents.
    fn params(self) -> &'static [&'static str] {
        match self {
            Api::Turnstile => &["secret", "response", "remoteip", "idempotency_key"],
            Api::Hcaptcha => &["secret", "response", "remoteip", "sitekey"],
        }
    }

    /// The error code of a token verified before.
    pub fn duplicate_code(self) -> &'static str {
        match self {
            Api::Turnstile => "timeout-or-duplicate",
            Api::Hcaptcha => "already-seen-response",
        }
    }
}

/// How the stand-in answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// As the provider documents (the default).
    #[default]
    Verify,
    /// Every request gets this HTTP status and `{"success":false}`.
    Status(u16),
    /// Every request gets `200` and a body that is not JSON.
    NotJson,
    /// Every request gets `200` and `{"success":false,"error-codes":["internal-error"]}`.
    InternalError,
    /// No answer for this long (at most 60 s), then as [`Mode::Verify`]: longer
    /// than the backend's first-byte timeout, the room sees a timeout.
    Hang(Duration),
}

/// What the stand-in knows.
#[derive(Debug, Clone)]
pub struct StandIn {
    /// The API it speaks.
    pub api: Api,
    /// The one secret it accepts.
    pub secret: String,
    /// hCaptcha: the site key a `sitekey` parameter must name.
    pub site_key: String,
    /// The tokens that pass (each once).
    pub good_tokens: Vec<String>,
    /// The `hostname` of a success.
    pub hostname: String,
}

impl StandIn {
    /// Turnstile with Cloudflare's documented test secret
    /// (`1x0000000000000000000000000000000AA`), the test site key, its dummy token
    /// `XXXX.DUMMY.TOKEN.XXXX` as the good one, and `localhost`.
    pub fn turnstile() -> StandIn {
        StandIn {
            api: Api::Turnstile,
            secret: "1x0000000000000000000000000000000AA".to_string(),
            site_key: "1x00000000000000000000AA".to_string(),
            good_tokens: vec!["XXXX.DUMMY.TOKEN.XXXX".to_string()],
            hostname: "localhost".to_string(),
        }
    }

    /// hCaptcha with its test secret, site key and token, and `localhost`.
    pub fn hcaptcha() -> StandIn {
        StandIn {
            api: Api::Hcaptcha,
            secret: "0x0000000000000000000000000000000000000000".to_string(),
            site_key: "10000000-ffff-ffff-ffff-000000000001".to_string(),
            good_tokens: vec!["10000000-aaaa-bbbb-cccc-000000000001".to_string()],
            hostname: "localhost".to_string(),
        }
    }
}

/// One request, as received, and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Received {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The parameters, decoded, in order.
    pub params: Vec<(String, String)>,
    /// Where it breaks the documented API (empty: it does not).
    pub violations: Vec<String>,
    /// The status answered (`0` while a hang lasts).
    pub status: u16,
    /// The body answered.
    pub answer: String,
}

impl Received {
    /// The value of parameter `name`, if sent.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The state the connections share.
struct Shared {
    stand_in: StandIn,
    mode: Mode,
    received: Vec<Received>,
    /// Tokens verified so far, with the idempotency key of their first
    /// verification and its answer.
    spent: BTreeMap<String, (Option<String>, String)>,
}

/// A running stand-in. Dropping the handle leaves it running (tests keep the address).
pub struct ChallengeServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
}

impl ChallengeServer {
    /// Starts a stand-in on a free port of 127.0.0.1.
    pub fn start(stand_in: StandIn) -> io::Result<ChallengeServer> {
        let addr = "127.0.0.1:0";
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared {
            stand_in,
            mode: Mode::Verify,
            received: Vec::new(),
            spent: BTreeMap::new(),
        }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let serving = Arc::clone(&shared);
        thread::Builder::new()
            .name("challenge-stand-in".into())
            .spawn(move || runtime.block_on(serve(listener, serving)))?;
        Ok(ChallengeServer { addr, shared })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL for a `[local_server.backends]` entry: `http://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The API it speaks.
    pub fn api(&self) -> Api {
        self.lock().stand_in.api
    }

    /// Answers from now on as `mode` says.
    pub fn set_mode(&self, mode: Mode) {
        self.lock().mode = mode;
    }

    /// Makes `token` good (once).
    pub fn add_good_token(&self, token: &str) {
        self.lock().stand_in.good_tokens.push(token.to_string());
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// Every violation of the documented API so far, with its request's index.
    pub fn violations(&self) -> Vec<(usize, String)> {
        self.lock()
            .received
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.violations.iter().map(move |v| (i, v.clone())))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves each connection with hyper, one request per connection.
async fn serve(listener: std::net::TcpListener, shared: Arc<Mutex<Shared>>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => return eprintln!("challenge stand-in: the listener stopped: {e}"),
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, Arc::clone(&shared)));
            let _ = http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Reads, checks, records and answers one request.
async fn answer(
    request: Request<Incoming>,
    shared: Arc<Mutex<Shared>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    // Viceroy's startup check that the backend is up.
    if parts.method == Method::GET && parts.uri.path() == "/" && parts.uri.query().is_none() {
        return Ok(Response::new(Full::new(Bytes::from_static(
            b"stand-in up\n",
        ))));
    }
    let body = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map(|b| b.to_bytes())
        .ok();
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mut received = Received {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string(),
        content_type,
        ..Received::default()
    };
    let (mode, index) = {
        let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
        let api = state.stand_in.api;
        check(api, &parts.method, parts.uri.path(), body, &mut received);
        state.received.push(received.clone());
        (state.mode, state.received.len() - 1)
    };
    if let Mode::Hang(duration) = mode {
        tokio::time::sleep(duration.min(MAX_HANG)).await;
    }
    let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
    let (status, answer) = respond(&mut state, mode, &received);
    let record = &mut state.received[index];
    record.status = status.as_u16();
    record.answer = answer.clone();
    let mut response = Response::new(Full::new(Bytes::from(answer)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, "application/json".parse().unwrap());
    Ok(response)
}

/// Checks the request against `api`'s documentation, filling in its parameters
/// and violations.
fn check(api: Api, method: &Method, path: &str, body: Option<Bytes>, received: &mut Received) {
    let violations = &mut received.violations;
    if method != Method::POST {
        // Nothing else of it is worth reading.
        return violations.push(format!("method {method}, not POST"));
    }
    if path != api.path() {
        violations.push(format!("path {path}, not {}", api.path()));
    }
    let Some(body) = body else {
        return violations.push(format!("body unreadable or over {MAX_BODY} bytes"));
    };
    let media = received.content_type.as_deref().map(|v| {
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    let params = match (media.as_deref(), api) {
        (Some("application/x-www-form-urlencoded"), _) => Some(
            form_urlencoded::parse(&body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ),
        (Some("application/json"), Api::Turnstile) => json_params(&body),
        (other, _) => {
            let json = if api == Api::Turnstile {
                " or application/json"
            } else {
                ""
            };
            violations.push(format!(
                "content type {other:?}, not application/x-www-form-urlencoded{json}"
            ));
            None
        }
    };
    let Some(params) = params else {
        if violations.is_empty() {
            violations.push("body not a JSON object of strings".into());
        }
        return;
    };
    for (i, (name, value)) in params.iter().enumerate() {
        if !api.params().contains(&name.as_str()) {
            violations.push(format!("undocumented parameter {name}"));
        }
        if params[..i].iter().any(|(n, _)| n == name) {
            violations.push(format!("parameter {name} twice"));
        }
        match name.as_str() {
            "remoteip" if value.parse::<IpAddr>().is_err() => {
                violations.push(format!("remoteip {value:?} not an IP address"))
            }
            "idempotency_key" if !is_uuid(value) => {
                violations.push(format!("idempotency_key {value:?} not a UUID"))
            }
            _ => {}
        }
    }
    received.params = params;
}

/// A JSON object's members, when they are all strings.
fn json_params(body: &[u8]) -> Option<Vec<(String, String)>> {
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(body).ok()?;
    object
        .into_iter()
        .map(|(k, v)| Some((k, v.as_str()?.to_string())))
        .collect()
}

/// Whether `text` is a UUID: 8-4-4-4-12 hexadecimal digits.
fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The status and body for a checked request.
fn respond(state: &mut Shared, mode: Mode, received: &Received) -> (StatusCode, String) {
    let failure =
        |codes: &[&str]| serde_json::json!({"success": false, "error-codes": codes}).to_string();
    match mode {
        Mode::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, r#"{"success":false}"#.to_string());
        }
        Mode::NotJson => return (StatusCode::OK, "<html>Bad gateway</html>".to_string()),
        Mode::InternalError => return (StatusCode::OK, failure(&["internal-error"])),
        Mode::Verify | Mode::Hang(_) => {}
    }
    if !received.violations.is_empty() {
        let status = if received.method != "POST" {
            StatusCode::METHOD_NOT_ALLOWED
        } else if received.violations.iter().any(|v| v.starts_with("path ")) {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::BAD_REQUEST
        };
        return (status, failure(&["bad-request"]));
    }
    let stand_in = &state.stand_in;
    let secret = received.param("secret").filter(|s| !s.is_empty());
    let token = received.param("response").filter(|s| !s.is_empty());
    let mut codes = Vec::new();
    match secret {
        None => codes.push("missing-input-secret"),
        Some(secret) if secret != stand_in.secret => codes.push("invalid-input-secret"),
        Some(_) => {}
    }
    if token.is_none() {
        codes.push("missing-input-response");
    }
    if stand_in.api == Api::Hcaptcha
        && received
            .param("sitekey")
            .is_some_and(|key| key != stand_in.site_key)
    {
        codes.push("sitekey-secret-mismatch");
    }
    if !codes.is_empty() {
        return (StatusCode::OK, failure(&codes));
    }
    let token = token.unwrap_or_default().to_string();
    let key = received.param("idempotency_key").map(str::to_string);
    if let Some((first_key, first_answer)) = state.spent.get(&token) {
        return match (&key, first_key) {
            (Some(key), Some(first)) if key == first => (StatusCode::OK, first_answer.clone()),
            _ => (StatusCode::OK, failure(&[stand_in.api.duplicate_code()])),
        };
    }
    let answer = if stand_in.good_tokens.contains(&token) {
        match stand_in.api {
            Api::Turnstile => serde_json::json!({
                "success": true,
                "error-codes": [],
                "challenge_ts": CHALLENGE_TS,
                "hostname": stand_in.hostname,
                "action": "waiting-room",
                "cdata": "",
            }),
            Api::Hcaptcha => serde_json::json!({
                "success": true,
                "challenge_ts": CHALLENGE_TS,
                "hostname": stand_in.hostname,
                "credit": false,
            }),
        }
        .to_string()
    } else {
        failure(&["invalid-input-response"])
    };
    state.spent.insert(token, (key, answer.clone()));
    (StatusCode::OK, answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http;
    use std::io::{Read, Write};

    use waiting_room::bots::challenge::{
        ChallengeSettings, Outcome, Provider, Reason, WhenDown, parse_verify_response,
    };

    const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");
    const KEY: &str = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";

    fn post(server: &ChallengeServer, headers: &[(&str, &str)], body: &str) -> http::Response {
        send(server, "POST", server.api().path(), headers, body)
    }

    fn send(
        server: &ChallengeServer,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> http::Response {
        http::request(server.addr(), 1, method, path, headers, body.as_bytes())
    }

    fn json(response: &http::Response) -> serde_json::Value {
        serde_json::from_str(&response.body).unwrap_or_else(|e| panic!("{e}: {}", response.body))
    }

    fn codes(response: &http::Response) -> Vec<String> {
        json(response)["error-codes"]
            .as_array()
            .map(|codes| {
                codes
                    .iter()
                    .map(|c| c.as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_good_token_passes_once_with_the_hostname() {
        let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
        let body = "secret=1x0000000000000000000000000000000AA&response=XXXX.DUMMY.TOKEN.XXXX&remoteip=192.0.2.7";
        let r = post(&server, &[FORM], body);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        let answer = json(&r);
        assert_eq!(answer["success"], true);
        assert_eq!(answer["hostname"], "localhost");
        assert_eq!(answer["error-codes"], serde_json::json!([]));
        let r = post(&server, &[FORM], body);
        assert_eq!(codes(&r), ["timeout-or-duplicate"], "single use");
        let seen = server.requests();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].method, "POST");
        assert_eq!(seen[0].path, "/turnstile/v0/siteverify");
        assert_eq!(seen[0].param("remoteip"), Some("192.0.2.7"));
        assert_eq!(seen[0].status, 200);
        assert!(seen[0].answer.contains("\"success\":true"));
        assert!(server.violations().is_empty(), "{:?}", server.violations());
    }

    #[test]
    fn bad_tokens_wrong_secrets_and_missing_parameters_fail_as_documented() {
        let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
        let secret = "secret=1x0000000000000000000000000000000AA";
        let r = post(&server, &[FORM], &format!("{secret}&response=bad"));
        assert_eq!(
            (r.status, codes(&r)),
            (200, vec!["invalid-input-response".to_string()])
        );
        assert_eq!(json(&r)["success"], false);
        let r = post(
            &server,
            &[FORM],
            "secret=wrong&response=XXXX.DUMMY.TOKEN.XXXX",
        );
        assert_eq!(codes(&r), ["invalid-input-secret"]);
        let r = post(&server, &[FORM], "response=x");
        assert_eq!(codes(&r), ["missing-input-secret"]);
        let r = post(&server, &[FORM], &format!("{secret}&response="));
        assert_eq!(codes(&r), ["missing-input-response"]);
        // None of those spent the good token.
        let r = post(
            &server,
            &[FORM],
            &format!("{secret}&response=XXXX.DUMMY.TOKEN.XXXX"),
        );
        assert_eq!(json(&r)["success"], true);
        assert!(server.violations().is_empty());
    }

    #[test]
    fn turnstile_retries_with_the_same_idempotency_key() {
        let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
        server.add_good_token("0.abc");
        let body = |key: &str| {
            format!(
                "secret=1x0000000000000000000000000000000AA&response=0.abc&idempotency_key={key}"
            )
        };
        assert_eq!(json(&post(&server, &[FORM], &body(KEY)))["success"], true);
        assert_eq!(json(&post(&server, &[FORM], &body(KEY)))["success"], true);
        let other = "00000000-0000-4000-8000-000000000000";
        assert_eq!(
            codes(&post(&server, &[FORM], &body(other))),
            ["timeout-or-duplicate"]
        );
        // Turnstile also takes JSON.
        server.add_good_token("0.json");
        let r = post(
            &server,
            &[("Content-Type", "application/json")],
            r#"{"secret":"1x0000000000000000000000000000000AA","response":"0.json"}"#,
        );
        assert_eq!(json(&r)["success"], true);
        assert!(server.violations().is_empty(), "{:?}", server.violations());
    }

    #[test]
    fn hcaptcha_takes_forms_only_and_checks_the_site_key() {
        let server = ChallengeServer::start(StandIn::hcaptcha()).unwrap();
        assert_eq!(server.api().path(), "/siteverify");
        let secret = "secret=0x0000000000000000000000000000000000000000";
        let token = "response=10000000-aaaa-bbbb-cccc-000000000001";
        let r = post(&server, &[FORM], &format!("{secret}&{token}&sitekey=other"));
        assert_eq!(codes(&r), ["sitekey-secret-mismatch"]);
        let r = post(
            &server,
            &[FORM],
            &format!("{secret}&{token}&sitekey=10000000-ffff-ffff-ffff-000000000001"),
        );
        let answer = json(&r);
        assert_eq!(
            (answer["success"].clone(), answer["hostname"].clone()),
            (true.into(), "localhost".into())
        );
        assert!(
            answer.get("error-codes").is_none(),
            "hCaptcha sends codes only on failure"
        );
        let r = post(&server, &[FORM], &format!("{secret}&{token}"));
        assert_eq!(codes(&r), ["already-seen-response"]);
        assert!(server.violations().is_empty());
        let r = post(
            &server,
            &[("Content-Type", "application/json")],
            r#"{"secret":"x","response":"y"}"#,
        );
        assert_eq!(
            (r.status, codes(&r)),
            (400, vec!["bad-request".to_string()])
        );
        let r = post(
            &server,
            &[FORM],
            &format!("{secret}&{token}&idempotency_key={KEY}"),
        );
        assert_eq!(r.status, 400, "not an hCaptcha parameter");
        assert_eq!(server.violations().len(), 2, "{:?}", server.violations());
    }

    #[test]
    fn requests_off_the_documented_api_are_recorded_and_refused() {
        let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
        let ok = "secret=s&response=t";
        let r = send(&server, "GET", "/", &[], "");
        assert_eq!(
            (r.status, r.body.as_str()),
            (200, "stand-in up\n"),
            "Viceroy's check"
        );
        assert!(server.requests().is_empty(), "not recorded");
        let r = send(&server, "GET", "/turnstile/v0/siteverify", &[], "");
        assert_eq!(r.status, 405);
        let r = send(&server, "POST", "/siteverify", &[FORM], ok);
        assert_eq!(r.status, 404);
        for (headers, body) in [
            (&[][..], ok),
            (&[("Content-Type", "text/plain")][..], ok),
            (&[FORM][..], "secret=s&response=t&remoteip=nope"),
            (&[FORM][..], "secret=s&response=t&idempotency_key=42"),
            (&[FORM][..], "secret=s&response=t&sitekey=k"),
            (&[FORM][..], "secret=s&secret=s&response=t"),
            (
                &[("Content-Type", "application/json")][..],
                r#"{"secret":1}"#,
            ),
        ] {
            let r = post(&server, headers, body);
            assert_eq!(
                (r.status, codes(&r)),
                (400, vec!["bad-request".to_string()]),
                "{body}"
            );
        }
        let violations = server.violations();
        assert_eq!(violations.len(), 9, "{violations:?}");
        assert!(violations[0].1.contains("method GET"), "{violations:?}");
        assert!(
            violations[1].1.contains("path /siteverify"),
            "{violations:?}"
        );
        assert!(violations.iter().any(|(_, v)| v.contains("remoteip")));
        assert!(violations.iter().any(|(_, v)| v.contains("not a UUID")));
        assert!(
            violations
                .iter()
                .any(|(_, v)| v.contains("undocumented parameter sitekey"))
        );
        assert!(violations.iter().any(|(_, v)| v.contains("secret twice")));
        let r = post(
            &server,
            &[(
                "Content-Type",
                "application/x-www-form-urlencoded; charset=utf-8",
            )],
            ok,
        );
        assert_eq!(codes(&r), ["invalid-input-secret"], "a charset is fine");
    }

    #[test]
    fn modes_make_the_provider_look_down() {
        let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
        let body = "secret=1x0000000000000000000000000000000AA&response=XXXX.DUMMY.TOKEN.XXXX";
        server.set_mode(Mode::Status(500));
        assert_eq!(post(&server, &[FORM], body).status, 500);
        server.set_mode(Mode::Status(503));
        assert_eq!(post(&server, &[FORM], body).status, 503);
        server.set_mode(Mode::NotJson);
        let r = post(&server, &[FORM], body);
        assert!(serde_json::from_str::<serde_json::Value>(&r.body).is_err());
        server.set_mode(Mode::InternalError);
        assert_eq!(codes(&post(&server, &[FORM], body)), ["internal-error"]);

        server.set_mode(Mode::Hang(Duration::from_millis(1500)));
        let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
        write!(
            stream,
            "POST /turnstile/v0/siteverify HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 1];
        let early = stream.read(&mut buf);
        assert!(early.is_err(), "no byte within 500 ms: {early:?}");
        assert_eq!(server.requests().last().unwrap().status, 0, "still hanging");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut late = String::new();
        stream.read_to_string(&mut late).unwrap();
        assert!(late.starts_with("HTTP/1.1 200"), "{late}");
        assert!(
            late.contains("\"success\":true"),
            "the token was still good: {late}"
        );
        assert!(server.violations().is_empty());
    }

    /// The room's own request body and answer reading, end to end over HTTP.
    #[test]
    fn the_rooms_requests_meet_the_stand_ins_checks() {
        let signature = [9u8; 32];
        let ip = Some("192.0.2.44".parse().unwrap());
        for (stand_in, provider) in [
            (StandIn::turnstile(), Provider::Turnstile),
            (StandIn::hcaptcha(), Provider::Hcaptcha),
        ] {
            assert_eq!(
                stand_in.api.path(),
                provider.verify_path(),
                "documented paths agree"
            );
            let settings = ChallengeSettings::parse(&format!(
                r#"{{"provider":"{}","site_key":"{}"}}"#,
                provider.name(),
                stand_in.site_key
            ))
            .unwrap();
            let (secret, good) = (stand_in.secret.clone(), stand_in.good_tokens[0].clone());
            let server = ChallengeServer::start(stand_in).unwrap();
            let verify = |token: &str, secret: &str| {
                let body = settings.verify_request_body(secret, token, ip, &signature);
                let r = post(&server, &[FORM], &body);
                parse_verify_response(r.status, r.body.as_bytes(), Some("localhost"))
            };
            assert_eq!(verify(&good, &secret), Outcome::Passed, "{provider}");
            let again = verify(&good, &secret);
            match provider {
                // The same wait token's retry: the idempotency key makes it pass again.
                Provider::Turnstile => assert_eq!(again, Outcome::Passed),
                Provider::Hcaptcha => assert_eq!(
                    again,
                    Outcome::Failed(Reason::from_codes(["already-seen-response"]))
                ),
            }
            assert_eq!(
                verify("forged.token", &secret),
                Outcome::Failed(Reason::from_codes(["invalid-input-response"]))
            );
            let wrong = verify("other", "wrong-secret");
            assert!(wrong.reason().unwrap().blames_operator(), "{wrong:?}");
            server.set_mode(Mode::Status(500));
            let down = verify(&good, &secret);
            assert_eq!(down.word(), "down");
            assert!(down.admits(WhenDown::Open) && !down.admits(WhenDown::Closed));
            server.set_mode(Mode::InternalError);
            assert_eq!(verify(&good, &secret).word(), "down");
            server.set_mode(Mode::NotJson);
            assert_eq!(verify(&good, &secret).word(), "down");
            assert!(server.violations().is_empty(), "{:?}", server.violations());
            let first = &server.requests()[0];
            assert_eq!(first.param("remoteip"), Some("192.0.2.44"));
            assert_eq!(first.param("response"), Some(good.as_str()));
        }
    }
}
