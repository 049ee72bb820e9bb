//! Fastly glue, in the order a request flows: read the stores and the request,
//! ask the core for a plan, carry it out, log one line.

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use fastly::http::header::{ACCEPT, ACCEPT_LANGUAGE, CACHE_CONTROL, COOKIE, HOST, SET_COOKIE};
use fastly::log::Endpoint;
use fastly::{ConfigStore, Request, Response, SecretStore};

use waiting_room::config::Settings;
use waiting_room::keys::{KeyStore, SigningKey};
use waiting_room::page::{NO_STORE, Page, PageBody};
use waiting_room::resources::{BACKEND, CONFIG_STORE, KEY_STORE, PAGE_STORE};
use waiting_room::view::{self, Status};
use waiting_room::{Action, RELEASE_HEADER, Visit, cookie, plan};

/// Handles one request. Never fails: every error becomes a clean page.
pub fn handle(mut req: Request) -> Response {
    // Settings: a missing store reads as empty, so every key takes its default.
    let config = open(CONFIG_STORE);
    let settings = Settings::from_lookup(|key| lookup(&config, key));
    let keys = SigningKeys::open();

    // Identity is the connection's address, never a request header.
    let uid = req
        .get_client_ip_addr()
        .map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
    // Browsers send one Cookie header; HTTP/2 may split it, so join them all.
    let cookie_header = req.get_header_all_str_lossy(COOKIE).join("; ");
    let path_and_query = match req.get_query_str() {
        Some(query) => format!("{}?{query}", req.get_path()),
        None => req.get_path().to_string(),
    };
    let now = unix_now();
    let visit = Visit {
        now,
        uid: &uid,
        path: req.get_path(),
        path_and_query: &path_and_query,
        cookie_header: (!cookie_header.is_empty()).then_some(cookie_header.as_str()),
        tls: req.get_tls_protocol_bytes().is_some(),
    };
    let mut plan = plan(&visit, &settings, &keys);

    // The origin never sees the waiting-room cookie, whatever the decision; a
    // Cookie header without one is left exactly as the client sent it.
    if cookie::has_room_cookie(&cookie_header) {
        match cookie::without_room_cookie(&cookie_header) {
            Some(rest) => req.set_header(COOKIE, rest),
            None => {
                req.remove_header(COOKIE);
            }
        }
    }

    let shown = Shown {
        url: &path_and_query,
        // `_lossy`: the plain getters panic on a header that is not UTF-8.
        json: view::wants_json(req.get_header_str_lossy(ACCEPT).as_deref()),
        accept_language: req
            .get_header_str_lossy(ACCEPT_LANGUAGE)
            .map(|v| v.into_owned()),
    };
    let mut resp = match plan.action {
        Action::Forward => {
            // Inside the room, an origin 5xx becomes the room's clean page too;
            // outside it, the origin's answer goes back as it is.
            let in_room = plan.verdict.is_some();
            match req.send(BACKEND) {
                Ok(mut resp) if !(in_room && resp.get_status().is_server_error()) => {
                    // Only the origin can end a session, and the header stops here.
                    let release = resp.get_header_str_lossy(RELEASE_HEADER);
                    plan.apply_release(release.as_deref());
                    drop(release);
                    resp.remove_header(RELEASE_HEADER);
                    resp
                }
                failure => {
                    let why = match failure {
                        Ok(resp) => format!(" origin_status={}", resp.get_status().as_u16()),
                        Err(err) => format!(" origin_error={:?}", err.root_cause().to_string()),
                    };
                    plan.log_line.push_str(&why);
                    let status = plan.status(Page::OriginUnavailable, &settings, now);
                    shown.page(&status, &settings, None, &mut plan.log_line)
                }
            }
        }
        Action::Serve(page) => {
            let status = plan.status(page, &settings, now);
            shown.page(&status, &settings, Some(&req), &mut plan.log_line)
        }
    };

    if let Some(set_cookie) = plan.set_cookie {
        resp.append_header(SET_COOKIE, set_cookie);
        resp.set_header(CACHE_CONTROL, NO_STORE);
    }
    write_log(settings.logger_name.as_deref(), &plan.log_line);
    resp
}

/// How the visitor wants a room page shown.
struct Shown<'a> {
    /// The request's path and query, to come back to.
    url: &'a str,
    /// JSON for apps instead of HTML.
    json: bool,
    /// For a per-language page.
    accept_language: Option<String>,
}

impl Shown<'_> {
    /// A room page: JSON, or an HTML template (page store, origin path or built-in)
    /// filled in with the visitor's figures. `visitor` is the request to base an
    /// origin page fetch on (`None`: no fetch).
    fn page(
        &self,
        status: &Status,
        settings: &Settings,
        visitor: Option<&Request>,
        log_line: &mut String,
    ) -> Response {
        let page = status.page;
        let body = if self.json {
            status.json().into_bytes()
        } else {
            status.render(&self.template(page, visitor, log_line))
        };
        let mut resp = Response::from_status(page.status(settings.waiting_status)).with_body(body);
        let refresh = status
            .refresh_after
            .unwrap_or(settings.wait_period_duration);
        for (name, value) in page.headers(refresh, self.url, self.json) {
            resp.set_header(name, value);
        }
        resp
    }

    /// The page's HTML template: the first stored page for the visitor's languages,
    /// else the built-in page; a stored `/path` is fetched from the origin.
    fn template(&self, page: Page, visitor: Option<&Request>, log_line: &mut String) -> Vec<u8> {
        let pages = open(PAGE_STORE);
        let stored = page
            .store_keys(self.accept_language.as_deref())
            .iter()
            .find_map(|key| lookup(&pages, key));
        let (body, problem) = page.body(stored.as_deref());
        if let Some(problem) = problem {
            log_line.push_str(&format!(" page_fallback={problem:?}"));
        }
        match body {
            PageBody::Html(html) => html,
            PageBody::FromOrigin(path) => fetch_page(visitor, &path).unwrap_or_else(|why| {
                log_line.push_str(&format!(" page_fallback=origin:{why}"));
                page.default_html().into_bytes()
            }),
        }
    }
}

/// GETs an operator-hosted page from the origin, without the visitor's cookies.
fn fetch_page(visitor: Option<&Request>, path: &str) -> Result<Vec<u8>, String> {
    let visitor = visitor.ok_or("no-request")?;
    let mut url = visitor.get_url().clone();
    url.set_path(path);
    url.set_query(None);
    let mut page_req = Request::get(url);
    if let Some(host) = visitor.get_header(HOST) {
        page_req.set_header(HOST, host.clone());
    }
    let resp = page_req
        .send(BACKEND)
        .map_err(|err| format!("{:?}", err.root_cause().to_string()))?;
    if !resp.get_status().is_success() {
        return Err(resp.get_status().as_u16().to_string());
    }
    Ok(resp.into_body_bytes())
}

/// Where signing keys live: a Secret Store named `waitingroom_signingkeys` when the
/// service has one (recommended), else the config store of the same name.
enum SigningKeys {
    Secrets(SecretStore),
    Config(ConfigStore),
    Missing,
}

impl SigningKeys {
    fn open() -> SigningKeys {
        if let Ok(secrets) = SecretStore::open(KEY_STORE) {
            return SigningKeys::Secrets(secrets);
        }
        match open(KEY_STORE) {
            Some(config) => SigningKeys::Config(config),
            None => SigningKeys::Missing,
        }
    }
}

impl KeyStore for SigningKeys {
    fn key(&self, kid: &str) -> Option<SigningKey> {
        match self {
            SigningKeys::Secrets(store) => {
                SigningKey::new(store.try_get(kid).ok()??.plaintext().to_vec())
            }
            SigningKeys::Config(store) => SigningKey::new(store.try_get(kid).ok()??),
            SigningKeys::Missing => None,
        }
    }
}

/// Opens a config store; `None` when it does not exist (never a panic).
fn open(name: &str) -> Option<ConfigStore> {
    ConfigStore::try_open(name).ok()
}

/// A store lookup where every failure reads as "missing".
fn lookup(store: &Option<ConfigStore>, key: &str) -> Option<String> {
    store.as_ref()?.try_get(key).ok().flatten()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
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
