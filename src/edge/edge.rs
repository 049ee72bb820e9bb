//! Fastly glue, in the order a request flows: read the stores and the request,
//! ask the core for a plan, carry it out, log one line.

use std::cell::{OnceCell, RefCell};
use std::io::Write as _;
use std::net::IpAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use fastly::erl::{CounterDuration, Penaltybox, RateCounter};
use fastly::http::header::{
    ACCEPT, ACCEPT_LANGUAGE, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, HOST, LOCATION,
    SET_COOKIE, WWW_AUTHENTICATE,
};
use fastly::log::Endpoint;
use fastly::{Backend, ConfigStore, Request, Response, SecretStore};

use waiting_room::admission::ceiling::PopCounts;
use waiting_room::answer::{BodySource, OriginOutcome, RELEASE_HEADER, origin_page, read_capped};
use waiting_room::bots::challenge::{self, ChallengeSettings, Outcome, Reason, Verifier};
use waiting_room::credentials::keys::{KeyRead, KeyStore, ReadOnce, SigningKey, Unread};
use waiting_room::credentials::login;
use waiting_room::credentials::pass::{self, HEADER as PASS_HEADER};
use waiting_room::credentials::uid::uid_of;
use waiting_room::log::{Answered, CACHE_HEADER};
use waiting_room::pages::page::{NO_STORE, Page, PageBody};
use waiting_room::resources::{
    BACKEND, CONFIG_STORE, COUNTED_SESSIONS, KEY_STORE, LOGIN_STORE, NEW_SESSIONS, PAGE_STORE,
};
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::limits::{
    CONFIG_LOOKUP_BUDGET, Counter, SECRET_READ_BUDGET, kept_from_passes,
};
use waiting_room::settings::room::host_of;
use waiting_room::settings::room_settings::{Looked, LookupFailed, Remembered};
use waiting_room::{Action, OriginCookie, Plan, Visit, plan};

/// Handles one request. Never fails: every error becomes a clean page.
pub fn handle(req: Request) -> Response {
    // Settings: the few keys a bypass needs, then the keys of the room the request
    // is in, each looked up once, every lookup and secret read counted against the
    // room's budget. A missing store reads as empty, so every key takes its default.
    let reads = Reads::default();
    let store = open(CONFIG_STORE);
    let config = Remembered::fallible(|key: &str| reads.config(&store, key));
    let (now, millis) = unix_now();
    let parts = Parts::of(&req);
    let host = req.get_header_str_lossy(HOST).map(|h| host_of(&h));
    let context = RequestContext::for_request(&config, host.as_deref(), parts.path(), now);
    let settings = &context.settings;
    let keys = SigningKeys::new(&reads, settings.bot_challenge.is_on());
    // Identity is the connection's address (an IPv6 client's network, when
    // `uid_ipv6_prefix` says so), never a request header; in a room of a service
    // whose identity is `login`, the person a verified login names.
    let address_uid = parts.client_ip.map_or_else(
        || "unknown".to_string(),
        |ip| uid_of(ip, settings.uid_ipv6_prefix),
    );
    let login = read_login(&req, &parts, &context, &address_uid, now, &reads);
    let pop = settings
        .pop_new_sessions_per_minute
        .map(|_| EdgeCounts::open());
    let verifier = settings
        .bot_challenge
        .settings()
        .map(|settings| EdgeVerifier {
            settings,
            remote_ip: parts.client_ip,
            reads: &reads,
        });
    let visit = Visit {
        now,
        millis,
        uid: login.as_ref().map_or(&address_uid, |l| l.uid(&address_uid)),
        pop: pop.as_ref().map(|p| p as &dyn PopCounts),
        challenge: verifier.as_ref().map(|v| v as &dyn Verifier),
        login: login.as_ref(),
        ..parts.visit()
    };
    let mut plan = plan(&visit, &context, &keys);
    if let (Some(pop), Some(key)) = (
        &pop,
        plan.verdict.as_ref().and_then(|v| v.pop_count.as_deref()),
    ) {
        pop.count(key);
    }
    let mut resp = match plan.action {
        Action::Forward => match forward(req, &mut plan, parts.pass_header.is_some()) {
            Some(resp) => resp,
            // The room answers for the origin, outside every room too: its page
            // shows the settings of the request's room, else the service's, every one.
            None => {
                let full = match context.shows_all_settings(parts.path()) {
                    true => context.clone(),
                    false => RequestContext::from_store(&config),
                };
                page(
                    &mut plan,
                    Page::OriginUnavailable,
                    &visit,
                    &full,
                    None,
                    &reads,
                )
            }
        },
        Action::Serve(shown) => page(&mut plan, shown, &visit, &context, Some(&req), &reads),
        Action::Refuse(status) => refusal(status),
        Action::Redirect => redirect(plan.location.as_deref()),
    };
    if let Some(set_cookie) = &plan.set_cookie {
        resp.append_header(SET_COOKIE, set_cookie);
        resp.set_header(CACHE_CONTROL, NO_STORE);
    }
    plan.log.reads_failed = reads.failed.take();
    write_log(settings.logger_name.as_deref(), &plan.log_line());
    resp
}

/// The request's parts the room reads, as owned text (`_lossy`: the plain getters
/// panic on a header that is not UTF-8).
struct Parts {
    /// The path and query, in one buffer: the path is its first `path_len` bytes.
    path_and_query: String,
    path_len: usize,
    /// Browsers send one Cookie header; HTTP/2 may split it, so all are joined.
    cookies: String,
    accept: Option<String>,
    accept_language: Option<String>,
    pass_header: Option<String>,
    tls: bool,
    client_ip: Option<IpAddr>,
}

impl Parts {
    fn of(req: &Request) -> Parts {
        let path = req.get_path();
        Parts {
            path_and_query: match req.get_query_str() {
                Some(query) => format!("{path}?{query}"),
                None => path.to_string(),
            },
            path_len: path.len(),
            cookies: req.get_header_all_str_lossy(COOKIE).join("; "),
            accept: req.get_header_str_lossy(ACCEPT).map(|v| v.into_owned()),
            accept_language: req
                .get_header_str_lossy(ACCEPT_LANGUAGE)
                .map(|v| v.into_owned()),
            pass_header: req
                .get_header_str_lossy(PASS_HEADER)
                .map(|v| v.into_owned()),
            tls: req.get_tls_protocol_bytes().is_some(),
            client_ip: req.get_client_ip_addr(),
        }
    }

    fn path(&self) -> &str {
        &self.path_and_query[..self.path_len]
    }

    fn cookie_header(&self) -> Option<&str> {
        (!self.cookies.is_empty()).then_some(self.cookies.as_str())
    }

    /// The visit these parts make, but for who the visitor is and what the edge
    /// counts and verifies.
    fn visit(&self) -> Visit<'_> {
        Visit {
            path: self.path(),
            path_and_query: &self.path_and_query,
            cookie_header: self.cookie_header(),
            tls: self.tls,
            accept: self.accept.as_deref(),
            accept_language: self.accept_language.as_deref(),
            pass_header: self.pass_header.as_deref(),
            client_ip: self.client_ip,
            ..Visit::default()
        }
    }
}

/// The visitor's login, when the service's identity is `login` and the path is in
/// a room ([`login::of_request`]); an HS256 key's secret from the Secret Store.
fn read_login(
    req: &Request,
    parts: &Parts,
    context: &RequestContext,
    address_uid: &str,
    now: u64,
    reads: &Reads,
) -> Option<login::Login> {
    let login_store = OnceCell::new();
    login::of_request(
        &context.settings,
        parts.path(),
        || {
            req.get_header_str_lossy(AUTHORIZATION)
                .map(|v| v.into_owned())
        },
        parts.cookie_header(),
        address_uid,
        now,
        &mut |kid| match login_store.get_or_init(|| SecretStore::open(LOGIN_STORE).ok()) {
            Some(store) => reads.secret(store, kid, "login-key"),
            None => Ok(None),
        },
    )
}

/// Sends the request on to the origin, as the room decided it: the origin's answer,
/// or `None` when the room must answer for it.
fn forward(mut req: Request, plan: &mut Plan, pass_header: bool) -> Option<Response> {
    // The origin receives the path the room decided on and logged (the SDK's parse
    // of the URL), never other bytes it could read otherwise.
    let decided = req.get_url().clone();
    req.set_url(decided);
    // The origin never sees a pass: not a probe's header, not a link's parameter.
    if pass_header {
        req.remove_header(PASS_HEADER);
    }
    if let Some((_, kept)) = req.get_query_str().and_then(pass::split_query) {
        match kept {
            Some(kept) => req.set_query_str(kept),
            None => req.remove_query(),
        }
    }
    match &plan.origin_cookie {
        OriginCookie::AsSent => {}
        OriginCookie::Remove => drop(req.remove_header(COOKIE)),
        OriginCookie::Replace(cookies) => req.set_header(COOKIE, cookies),
    }
    // `send` returns once the response's headers are in: the time to them.
    let started = Instant::now();
    let sent = req.send(BACKEND);
    let elapsed = started.elapsed();
    let mut resp = match sent {
        Ok(resp) => resp,
        Err(err) => {
            plan.origin_unreachable(&err.root_cause().to_string());
            return None;
        }
    };
    let x_cache = resp.get_header_all(CACHE_HEADER).last();
    let who = Answered::of(x_cache.and_then(|v| v.to_str().ok()), elapsed);
    let release = resp
        .get_header_str_lossy(RELEASE_HEADER)
        .map(|v| v.into_owned());
    // Each header call is a host call: remove only what is there.
    if release.is_some() {
        resp.remove_header(RELEASE_HEADER);
    }
    let status = resp.get_status().as_u16();
    match plan.origin_answered(status, release.as_deref(), who) {
        OriginOutcome::PassOn => Some(resp),
        OriginOutcome::Unavailable => None,
    }
}

/// The answer to a refused request: RFC 6750's `401` for a login, so apps learn
/// the room wants one and from which scheme; else the status with a plain line.
fn refusal(status: u16) -> Response {
    let mut resp = match status {
        401 => Response::from_status(401)
            .with_body_json(&serde_json::json!({"error": "login-required"}))
            .unwrap_or_else(|_| Response::from_status(401))
            .with_header(WWW_AUTHENTICATE, "Bearer realm=\"waiting room\""),
        400 => Response::from_status(status).with_body_text_plain("Bad Request\n"),
        403 => Response::from_status(status).with_body_text_plain("Forbidden\n"),
        _ => Response::from_status(status).with_body_text_plain("Service Unavailable\n"),
    };
    resp.set_header(CACHE_CONTROL, NO_STORE);
    resp
}

/// A `302` to `location`.
fn redirect(location: Option<&str>) -> Response {
    let mut resp = Response::from_status(302);
    if let Some(location) = location {
        resp.set_header(LOCATION, location);
    }
    resp.set_header(CACHE_CONTROL, NO_STORE);
    resp
}

/// The room's `page` as a response: JSON, or an HTML template (page store, origin
/// path or built-in) filled in. `visitor` is the request to base an origin page
/// fetch on (`None`: no fetch).
fn page(
    plan: &mut Plan,
    page: Page,
    visit: &Visit<'_>,
    context: &RequestContext,
    visitor: Option<&Request>,
    reads: &Reads,
) -> Response {
    let answer = plan.page(page, visit, context);
    let body = match answer.body {
        BodySource::Ready(body) => body,
        BodySource::Store(key) => {
            // A page that cannot be read is the built-in one; the line says so.
            let stored = key.and_then(|key| {
                reads
                    .config(&open(PAGE_STORE), &key)
                    .unwrap_or_else(|LookupFailed| {
                        reads.fail(&key);
                        None
                    })
            });
            let template = match plan.template(page, stored.as_deref()) {
                PageBody::Html(html) => html,
                PageBody::FromOrigin(path) => plan.fetched(page, fetch_page(visitor, &path)),
            };
            plan.render(page, visit, context, &template)
        }
    };
    let mut resp = Response::from_status(answer.status).with_body(body);
    for (name, value) in answer.headers {
        resp.set_header(name, value);
    }
    resp
}

/// GETs an operator-hosted page from the origin, without the visitor's cookies; its
/// body read up to the room's cap ([`origin_page`]).
fn fetch_page(visitor: Option<&Request>, path: &str) -> Result<Vec<u8>, String> {
    let visitor = visitor.ok_or("no-request")?;
    let mut url = visitor.get_url().clone();
    url.set_path(path);
    url.set_query(None);
    let mut page_req = Request::get(url);
    if let Some(host) = visitor.get_header(HOST) {
        page_req.set_header(HOST, host.clone());
    }
    let mut resp = page_req
        .send(BACKEND)
        .map_err(|err| format!("{:?}", err.root_cause().to_string()))?;
    if !resp.get_status().is_success() {
        return Err(resp.get_status().as_u16().to_string());
    }
    origin_page(resp.take_body())
}

/// The POP's counts of new sessions, for `pop_new_sessions_per_minute`: an
/// edge rate counter of the sessions started, and a penalty box of the tokens
/// counted (so that tabs presenting one token count once). Where edge rate
/// limiting is not enabled, or locally, the counter reads zero or fails: the
/// ceiling then holds nobody.
struct EdgeCounts {
    started: RateCounter,
    counted: Penaltybox,
}

/// The one entry of the rate counter: every new session of the service counts
/// under it.
const STARTED_ENTRY: &str = "started";

impl EdgeCounts {
    fn open() -> EdgeCounts {
        EdgeCounts {
            started: RateCounter::open(NEW_SESSIONS),
            counted: Penaltybox::open(COUNTED_SESSIONS),
        }
    }

    /// Counts the new session `key` (errors leave it uncounted: the ceiling is a guard,
    /// and a request is never failed for it).
    fn count(&self, key: &str) {
        let _ = self.counted.add(key, std::time::Duration::from_secs(60));
        let _ = self.started.increment(STARTED_ENTRY, 1);
    }
}

impl std::fmt::Debug for EdgeCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EdgeCounts")
    }
}

impl PopCounts for EdgeCounts {
    fn last_minute(&self, _now: u64) -> Option<u32> {
        self.started
            .lookup_count(STARTED_ENTRY, CounterDuration::SixtySecs)
            .ok()
    }

    fn counted(&self, token: &str) -> bool {
        self.counted.has(token).unwrap_or(false)
    }
}

/// The room's external challenge, verified with the provider's `siteverify`
/// through its static backend ([`challenge::Provider::backend`]), with the
/// secret from the Secret Store [`challenge::SECRET_STORE`]. The core asks only
/// when a draw is due and the cookie holds a token of the provider's shape.
#[derive(Debug)]
struct EdgeVerifier<'a> {
    settings: &'a ChallengeSettings,
    remote_ip: Option<IpAddr>,
    reads: &'a Reads,
}

impl EdgeVerifier<'_> {
    /// The secret key, trimmed (a file's final newline is no part of it); `None`
    /// when the store, the entry or its plaintext is missing; `Err` when its read
    /// failed (named in the line). Never `get` or `plaintext`: they panic.
    fn secret(&self) -> Result<Option<String>, Unread> {
        let Ok(store) = SecretStore::open(challenge::SECRET_STORE) else {
            return Ok(None);
        };
        let bytes = self
            .reads
            .secret(&store, self.settings.secret_name(), "challenge-secret")?;
        let text = bytes.as_deref().and_then(|b| std::str::from_utf8(b).ok());
        Ok(text
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string))
    }
}

impl Verifier for EdgeVerifier<'_> {
    fn verify(&self, token: &str, signature: &[u8; 32]) -> Outcome {
        // A missing secret or backend is the operator's to mend, and a failure,
        // never "down": a room that fails open must not open on a missing setup.
        let secret = match self.secret() {
            Ok(Some(secret)) => secret,
            Ok(None) => return Outcome::Failed(Reason::from_codes(["missing-input-secret"])),
            Err(_) => return Outcome::Unread,
        };
        let provider = self.settings.provider;
        let backend = match Backend::from_name(provider.backend()) {
            Ok(backend) if backend.exists() => backend,
            _ => return Outcome::Failed(Reason::from_codes(["no-backend"])),
        };
        let body = self
            .settings
            .verify_request_body(&secret, token, self.remote_ip, signature);
        let mut req = Request::post(provider.verify_url())
            .with_header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .with_body(body);
        // Never cache a verdict.
        req.set_pass(true);
        // The backend's timeouts bound the wait (fastly.toml, or the service's
        // backend settings); a timeout is the provider down.
        match req.send(backend) {
            Err(err) => Outcome::unreachable(&err.root_cause().to_string()),
            Ok(mut resp) => {
                let status = resp.get_status().as_u16();
                match read_capped(resp.take_body(), challenge::MAX_ANSWER_BYTES) {
                    Ok(answer) => challenge::parse_verify_response(status, &answer, None),
                    Err(err) => Outcome::unreachable(&err.to_string()),
                }
            }
        }
    }
}

/// The execution's store reads, counted against the room's budget
/// ([`waiting_room::settings::limits`]): past it a read fails as the host's does
/// past Fastly's limit. `failed` names the reads that failed outside the settings
/// (pages, signing keys, secrets), for the line's `ALERT=unreadable:`.
#[derive(Debug)]
struct Reads {
    lookups: Counter,
    secrets: Counter,
    failed: RefCell<Vec<String>>,
}

impl Default for Reads {
    fn default() -> Self {
        Reads {
            lookups: Counter::new(CONFIG_LOOKUP_BUDGET),
            secrets: Counter::new(SECRET_READ_BUDGET),
            failed: RefCell::default(),
        }
    }
}

impl Reads {
    /// Looks `key` up in a config store (no store: `None`, and no lookup made).
    /// Every error is a failure, never a missing key.
    fn config(&self, store: &Option<ConfigStore>, key: &str) -> Looked {
        let Some(store) = store else {
            return Ok(None);
        };
        self.lookups.take().map_err(|_| LookupFailed)?;
        store.try_get(key).map_err(|_| LookupFailed)
    }

    /// The plaintext of secret `name`; `None` when missing; `Err` when the read
    /// failed, a failure named `what` in the line.
    fn secret(
        &self,
        store: &SecretStore,
        name: &str,
        what: &str,
    ) -> Result<Option<Vec<u8>>, Unread> {
        let read = match self.secrets.take() {
            Err(_) => Err(()),
            Ok(()) => match store.try_get(name) {
                Ok(Some(secret)) => secret
                    .try_plaintext()
                    .map(|b| Some(b.to_vec()))
                    .map_err(drop),
                Ok(None) => Ok(None),
                Err(_) => Err(()),
            },
        };
        read.map_err(|()| self.fail(what))
    }

    /// Records a failed read, named `what` in the line.
    fn fail(&self, what: &str) -> Unread {
        self.failed.borrow_mut().push(what.to_string());
        Unread::Failed
    }
}

/// Where signing keys live: a Secret Store named `waitingroom_signingkeys` when the
/// service has one (recommended), else the config store of the same name. Opened
/// at the first lookup: a request the room does not apply to never opens it.
/// Wrapped in [`ReadOnce`], so each key is read once a request.
struct SigningKeys<'r> {
    reads: &'r Reads,
    stores: OnceCell<KeyStores>,
    /// Whether the room's challenge may need its secret (a read a pass must leave).
    challenge: bool,
}

enum KeyStores {
    Secrets(SecretStore),
    Config(Option<ConfigStore>),
}

impl<'r> SigningKeys<'r> {
    fn new(reads: &'r Reads, challenge: bool) -> ReadOnce<Self> {
        ReadOnce::new(SigningKeys {
            reads,
            stores: OnceCell::new(),
            challenge,
        })
    }

    fn stores(&self) -> &KeyStores {
        self.stores
            .get_or_init(|| match SecretStore::open(KEY_STORE) {
                Ok(secrets) => KeyStores::Secrets(secrets),
                Err(_) => KeyStores::Config(open(KEY_STORE)),
            })
    }
}

impl KeyStore for SigningKeys<'_> {
    fn key(&self, kid: &str) -> KeyRead {
        let secret = match self.stores() {
            KeyStores::Secrets(store) => self.reads.secret(store, kid, "signing-key")?,
            KeyStores::Config(store) => match self.reads.config(store, kid) {
                Ok(secret) => secret.map(String::into_bytes),
                Err(LookupFailed) => return Err(self.reads.fail("signing-key")),
            },
        };
        Ok(secret.and_then(SigningKey::new))
    }

    /// Leaves the reads the rest of the request may need ([`kept_from_passes`]).
    fn spare(&self, kid: &str) -> KeyRead {
        let in_secrets = matches!(self.stores(), KeyStores::Secrets(_));
        let left = match in_secrets {
            true => self.reads.secrets.left(),
            false => self.reads.lookups.left(),
        };
        if left <= kept_from_passes(in_secrets, self.challenge) {
            return Err(Unread::NoReadsLeft);
        }
        self.key(kid)
    }
}

/// Opens a config store; `None` when it does not exist (never a panic).
fn open(name: &str) -> Option<ConfigStore> {
    ConfigStore::try_open(name).ok()
}

/// Unix seconds, and the milliseconds past them.
fn unix_now() -> (u64, u16) {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or((0, 0), |elapsed| {
            (elapsed.as_secs(), elapsed.subsec_millis() as u16)
        })
}

/// Writes the line in one call (each write is one log line). Without a usable
/// endpoint name, the line goes to standard error.
fn write_log(endpoint: Option<&str>, line: &str) {
    let endpoint = endpoint.and_then(|name| Endpoint::try_from_name(name).ok());
    let written = match endpoint {
        Some(mut endpoint) => endpoint.write_all(line.as_bytes()).is_ok(),
        None => false,
    };
    if !written {
        eprintln!("{line}");
    }
}
