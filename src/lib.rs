//! The waiting room's core: everything it decides, with no Fastly types, so it
//! compiles and tests natively with a fixed clock.
//!
//! [`plan`] takes one request as plain values and says what the edge must do:
//! forward it or answer with a page, which `Set-Cookie` to append, and what to log.
//! `src/edge/main.rs` only carries that out.
//!
//! ```
//! use std::collections::HashMap;
//! use waiting_room::settings::{context::RequestContext, room_settings::Remembered};
//! use waiting_room::{Action, Visit, pages::page::Page, plan};
//!
//! let store = HashMap::from([("enabled", "true"), ("allow_percentage", "50")]);
//! let lookup = Remembered::new(|key: &str| store.get(key).map(|v| v.to_string()));
//! let context = RequestContext::for_request(&lookup, None, "/events", 1_700_000_023);
//! let keys = HashMap::from([("key1".to_string(), "a long random secret of 32 bytes or more".to_string())]);
//! let visit = Visit {
//!     now: 1_700_000_023,
//!     millis: 0,
//!     uid: "192.0.2.10",
//!     path: "/events",
//!     path_and_query: "/events",
//!     cookie_header: None,
//!     tls: false,
//!     accept: None,
//!     accept_language: None,
//!     pop: None,
//!     pass_header: None,
//!     client_ip: None,
//!     challenge: None,
//!     login: None,
//! };
//! let plan = plan(&visit, &context, &keys);
//! assert_eq!(plan.action, Action::Serve(Page::StartWaiting));
//! assert!(plan.set_cookie.as_ref().unwrap().starts_with("waiting_room="));
//! assert_eq!(
//!     plan.log_line(),
//!     "waitingroom t=1700000023 decision=anon uid=192.0.2.10 p=50 exp=1700000096 path=/events"
//! );
//! ```

#![deny(missing_docs)]

pub mod admission;
pub mod answer;
pub mod bots;
pub mod credentials;
pub mod log;
pub mod pages;
pub mod settings;

use admission::decision::{CookieAction, Decision, Verdict};
use admission::estimate::{Estimate, Place};
use admission::{ceiling, decision, estimate, refresh};
use bots::challenge;
use credentials::keys::{KeyStore, RoomKeys};
use credentials::login::Login;
use credentials::pass::{PassClaims, PassRefusal};
use credentials::{cookie, cookie_names, pass, token};
use log::{LineKind, LogLine};
use pages::page::Page;
use pages::view;
use settings::config::{self, Settings};
use settings::context::{Refusal, RequestContext};
use settings::language::Language;
use settings::refresh_mode::RefreshMode;
use settings::{identity, rules};

/// Names of the Fastly resources the program uses.
pub mod resources {
    /// Config store with the settings.
    pub const CONFIG_STORE: &str = "waitingroom_config";
    /// Config store with the signing keys (key id → secret).
    pub const KEY_STORE: &str = "waitingroom_signingkeys";
    /// Secret Store with the secrets of HS256 login keys, by `kid`.
    pub const LOGIN_STORE: &str = "waitingroom_login";
    /// Config store with the pages (base64 HTML or an origin `/path`).
    pub const PAGE_STORE: &str = "waitingroom_pages";
    /// The protected site.
    pub const BACKEND: &str = "origin";
    /// Edge rate counter of the new sessions a POP started (`pop_new_sessions_per_minute`).
    pub const NEW_SESSIONS: &str = "waitingroom_new_sessions";
    /// Penalty box of the new sessions counted, by token.
    pub const COUNTED_SESSIONS: &str = "waitingroom_counted_sessions";
}

/// One request, as plain values.
#[derive(Debug, Clone, Copy, Default)]
pub struct Visit<'a> {
    /// Unix seconds.
    pub now: u64,
    /// Milliseconds past `now` (0–999): FIFO places are kept to the millisecond.
    pub millis: u16,
    /// The visitor's identity: their login's hash, else the connection's client IP
    /// as text (IPv6 compressed, or its network by `uid_ipv6_prefix`).
    pub uid: &'a str,
    /// URL path, without the query.
    pub path: &'a str,
    /// URL path and query, to refresh to.
    pub path_and_query: &'a str,
    /// The request's `Cookie` header, if any.
    pub cookie_header: Option<&'a str>,
    /// Whether the client connection is TLS (for the cookie's `Secure`).
    pub tls: bool,
    /// The request's `Accept` header: apps that ask for JSON get the room's pages as JSON.
    pub accept: Option<&'a str>,
    /// The request's `Accept-Language` header, for per-language pages.
    pub accept_language: Option<&'a str>,
    /// The POP's counts of new sessions, for `pop_new_sessions_per_minute`
    /// (`None`: not counted, and the ceiling holds nobody).
    pub pop: Option<&'a dyn ceiling::PopCounts>,
    /// The request's `Waiting-Room-Pass` header (a probe's signed pass), if any.
    pub pass_header: Option<&'a str>,
    /// The connection's client address, for `bypass_addresses` (`None`: the uid's,
    /// when it is a whole address).
    pub client_ip: Option<std::net::IpAddr>,
    /// The verifier of the room's external challenge (`bot_challenge`), asked only
    /// at a due draw (`None`: a challenged room's draws come unpaid).
    pub challenge: Option<&'a dyn challenge::Verifier>,
    /// The visitor's login, when the service's identity is `login` and the path is
    /// in a room (`None`: identity by address).
    pub login: Option<&'a Login>,
}

/// What the edge does with the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send it to the origin (without the waiting-room cookie).
    Forward,
    /// Answer with this page.
    Serve(Page),
    /// Send the visitor to [`Plan::location`] (`302`): a pass link, once its
    /// cookie is set.
    Redirect,
    /// Answer with this status and no page ([`settings::config::Refusal`]): the
    /// path reads into different rooms at different origins, or the rooms could
    /// not be read, so the room grants nothing.
    Refuse(u16),
}

/// What the edge must do for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Forward or answer with a page.
    pub action: Action,
    /// The `Cookie` header a forwarded request carries: never the room's cookie.
    pub origin_cookie: OriginCookie,
    /// `Set-Cookie` value to append to whatever response goes back.
    pub set_cookie: Option<String>,
    /// The request's log line, field by field: the edge writes it once.
    pub log: LogLine,
    /// For a waiting visitor: seconds until the page should come back (`Refresh`,
    /// `Retry-After`). `None` for pages that do not refresh, and outside the room.
    pub refresh_after: Option<u64>,
    /// For a waiting visitor in random mode: when they can expect to be admitted.
    pub estimate: Option<Estimate>,
    /// For a waiting visitor in FIFO mode: their place and expected time of entry.
    pub place: Option<Place>,
    /// The room's verdict; `None` when the room did not apply.
    pub verdict: Option<Verdict>,
    /// The name of the room's cookie (for a release by the origin).
    pub cookie_name: String,
    /// Where [`Action::Redirect`] sends the visitor.
    pub location: Option<String>,
    /// The language of the built-in pages for this visitor.
    pub language: Language,
}

/// The `Cookie` header of the request the origin gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginCookie {
    /// As the visitor sent it (no room cookie in it, or no header at all).
    AsSent,
    /// Removed: it held only the room's cookie.
    Remove,
    /// These cookies: the visitor's, without the room's.
    Replace(String),
}

impl OriginCookie {
    /// What becomes of `header` on its way to the origin: the rooms' cookies (the
    /// service room's and `room_cookies`) are removed whatever the decision; a
    /// header without one is left byte for byte.
    pub fn for_header(header: Option<&str>, room_cookies: &[String]) -> OriginCookie {
        match header {
            Some(header) if cookie::has_room_cookie(header, room_cookies) => {
                match cookie::without_room_cookie(header, room_cookies) {
                    None => OriginCookie::Remove,
                    Some(others) => OriginCookie::Replace(others),
                }
            }
            _ => OriginCookie::AsSent,
        }
    }
}

/// Plans the response to `visit`: the steps in the order the room takes them,
/// each a function of values; the first that settles the request makes the plan.
pub fn plan(visit: &Visit<'_>, context: &RequestContext, keys: &impl KeyStore) -> Plan {
    let settings = &context.settings;
    let ground = Ground::of(visit, context);
    let keys = RoomKeys::new(keys, context.room.name());
    if let Some(refusal) = context.refusal {
        return ground.refused(refusal, visit, context);
    }
    if let Some(scope) = bypass_scope(visit, settings) {
        return ground.bypassed(scope, visit, context);
    }
    let room_cookie = visit
        .cookie_header
        .and_then(|header| cookie::find(header, &ground.cookie_name));
    let passes = Passes::check(visit, context, &keys, room_cookie);
    if let Some(accepted) = passes.accepted {
        return ground.passed(accepted, visit, context);
    }
    if let Some(refusal) = who_may_wait(visit.login, settings) {
        return ground.refused(refusal, visit, context);
    }
    // A read the decision rests on failed: nobody gains and nobody loses. A live
    // session goes on (its token as it is), everyone else is asked to try again.
    if context.holds() {
        return match decision::live_session(visit.now, visit.uid, room_cookie, &keys) {
            true => ground.bypassed("live-session", visit, context),
            false => ground.refused(Refusal::Unreadable, visit, context),
        };
    }
    let verdict = decide(visit, context, &keys, room_cookie);
    // A key read the outcome may rest on failed (the token's, the active one, a
    // pass's) or the challenge's secret: only a live session goes on.
    if (verdict.unread || passes.unread) && !verdict.stands_unread() {
        return ground.refused(Refusal::Unreadable, visit, context);
    }
    ground.decided(verdict, passes.first_refusal, visit, context)
}

/// Why the room does not apply to the request, if it does not: an unprotected
/// path (or the room disabled), a bypassed path or address.
fn bypass_scope(visit: &Visit<'_>, settings: &Settings) -> Option<&'static str> {
    if !settings.protects(visit.path) {
        return Some(match settings.enabled {
            true => "unprotected-path",
            false => "disabled",
        });
    }
    rules::bypass_scope(
        visit.client_ip.or_else(|| visit.uid.parse().ok()),
        visit.path,
        &settings.bypass_paths,
        &settings.bypass_addresses,
    )
}

/// Who may wait: a room for members asks for a login (or one audience's); a
/// login whose key could not be read says nothing of who the visitor is.
fn who_may_wait(login: Option<&Login>, settings: &Settings) -> Option<Refusal> {
    match login {
        Some(Login::Unread) => Some(Refusal::Unreadable),
        Some(login) if !login.may_wait(&settings.who_may_wait) => Some(match login {
            Login::Person { .. } => Refusal::NotInAudience,
            _ => Refusal::LoginRequired,
        }),
        None if settings.who_may_wait.needs_login() => Some(Refusal::LoginRequired),
        _ => None,
    }
}

/// The room's decision on the visitor's cookie.
fn decide(
    visit: &Visit<'_>,
    context: &RequestContext,
    keys: &impl KeyStore,
    room_cookie: Option<&str>,
) -> Verdict {
    let settings = &context.settings;
    // Read only where a token can owe a toll: most rooms ask none.
    let toll_nonce = visit
        .cookie_header
        .filter(|_| settings.toll_bits() > 0)
        .and_then(|header| cookie::find(header, &cookie_names::toll(&context.room)));
    let request = decision::Request {
        now: visit.now,
        millis: visit.millis,
        uid: visit.uid,
        cookie: room_cookie,
    };
    let room = decision::Context {
        settings,
        pop: visit.pop,
        toll_nonce,
        challenge: visit.challenge,
    };
    decision::decide(&request, &room, keys)
}

/// The signed passes a request presents: from a link (then set as a cookie), a
/// probe's header, or the pass cookie. The first that holds lets the visitor
/// through; a refused one changes nothing but the log line.
struct Passes {
    /// The pass that holds.
    accepted: Option<Accepted>,
    /// Why the first refused one was refused.
    first_refusal: Option<PassRefusal>,
    /// Whether a pass's key could not be read.
    unread: bool,
}

/// A pass that holds.
struct Accepted {
    /// The link it came from, if it did: its value, and where the visitor goes on
    /// to without it.
    link: Option<(String, String)>,
    claims: PassClaims,
    id: String,
}

impl Passes {
    fn check(
        visit: &Visit<'_>,
        context: &RequestContext,
        keys: &impl KeyStore,
        room_cookie: Option<&str>,
    ) -> Passes {
        let settings = &context.settings;
        let link = pass::from_link(visit.path_and_query);
        let pass_cookie = cookie_names::pass(&context.room);
        let presented = [
            link.as_ref().map(|(value, _)| value.as_str()),
            visit.pass_header,
            visit
                .cookie_header
                .and_then(|header| cookie::find(header, &pass_cookie)),
        ];
        let mut passes = Passes {
            accepted: None,
            first_refusal: None,
            unread: false,
        };
        // The keys of the visitor's token and of new tokens are read first: passes
        // spend only the reads left ([`KeyStore::spare`]).
        if presented.iter().any(Option::is_some) {
            let token = room_cookie.and_then(|value| token::decode(value).ok());
            if let Some(token) = token.filter(|token| token.claims.uid == visit.uid) {
                let _ = keys.key(&token.claims.kid);
            }
            let _ = keys.key(&settings.active_key);
        }
        let mut accepted = None;
        for (i, value) in presented.into_iter().enumerate() {
            let Some(value) = value else { continue };
            match pass::check(
                value,
                &context.room,
                keys,
                visit.now,
                settings.passes_not_before,
            ) {
                Ok((claims, id)) => {
                    accepted = Some((i == 0, claims, id));
                    break;
                }
                Err(why) => {
                    passes.unread |= why == PassRefusal::UnreadableKey;
                    passes.first_refusal.get_or_insert(why);
                }
            }
        }
        passes.accepted = accepted.map(|(from_link, claims, id)| Accepted {
            link: link.filter(|_| from_link),
            claims,
            id,
        });
        passes
    }
}

/// What every plan of a request shares, whatever settles it: its cookies, its
/// language, and its login's refusal for the line.
struct Ground {
    origin_cookie: OriginCookie,
    cookie_name: String,
    language: Language,
    login_refused: Option<&'static str>,
}

impl Ground {
    fn of(visit: &Visit<'_>, context: &RequestContext) -> Ground {
        Ground {
            origin_cookie: OriginCookie::for_header(
                visit.cookie_header,
                &cookie_names::of_named_rooms(&context.named_rooms),
            ),
            cookie_name: cookie_names::token(&context.room),
            language: Language::choose(visit.accept_language, context.settings.page_language),
            login_refused: match visit.login {
                Some(Login::Refused(why)) => Some(why.word()),
                _ => None,
            },
        }
    }

    /// A plan with this action and line, and no cookie written.
    fn plan(self, action: Action, mut log: LogLine) -> Plan {
        log.login_refused = self.login_refused;
        Plan {
            action,
            origin_cookie: self.origin_cookie,
            set_cookie: None,
            log,
            refresh_after: None,
            estimate: None,
            place: None,
            verdict: None,
            cookie_name: self.cookie_name,
            location: None,
            language: self.language,
        }
    }

    /// The request goes to the origin without the room deciding (`scope`: why).
    fn bypassed(self, scope: &'static str, visit: &Visit<'_>, context: &RequestContext) -> Plan {
        let log = LogLine::undecided(
            visit.now,
            visit.uid,
            visit.path,
            LineKind::Bypass(scope),
            context,
        );
        self.plan(Action::Forward, log)
    }

    /// The room refuses the request. One refused for a failed read gets the room's
    /// "try again" page, which no store read renders; one asked to sign in goes to
    /// `sign_in_url` when there is one (browsers only).
    fn refused(self, refusal: Refusal, visit: &Visit<'_>, context: &RequestContext) -> Plan {
        let sign_in = context
            .settings
            .sign_in_url
            .as_deref()
            .filter(|_| refusal == Refusal::LoginRequired && !view::wants_json(visit.accept));
        let action = match refusal {
            Refusal::Unreadable => Action::Serve(Page::OriginUnavailable),
            _ if sign_in.is_some() => Action::Redirect,
            _ => Action::Refuse(refusal.status()),
        };
        let kind = LineKind::Refused(refusal.word());
        let log = LogLine::undecided(visit.now, visit.uid, visit.path, kind, context);
        Plan {
            location: sign_in.map(|url| identity::sign_in_location(url, visit.path_and_query)),
            ..self.plan(action, log)
        }
    }

    /// A pass lets the visitor through; one from a link is set as a cookie, and the
    /// visitor sent on to the link without it.
    fn passed(
        self,
        Accepted { link, claims, id }: Accepted,
        visit: &Visit<'_>,
        context: &RequestContext,
    ) -> Plan {
        let pass_cookie = cookie_names::pass(&context.room);
        let mut plan = self.bypassed("pass", visit, context);
        plan.log.pass = Some(id);
        if let Some((value, location)) = link {
            let mut attributes = cookie::Attributes::new(&context.settings, visit.tls);
            attributes.max_age = claims.exp.saturating_sub(visit.now);
            plan.set_cookie = Some(cookie::set_cookie(&pass_cookie, &value, &attributes));
            plan.action = Action::Redirect;
            plan.location = Some(location);
        }
        plan
    }

    /// The room decided: its page or the origin, its cookie, its outlook.
    fn decided(
        self,
        verdict: Verdict,
        pass_refused: Option<PassRefusal>,
        visit: &Visit<'_>,
        context: &RequestContext,
    ) -> Plan {
        let settings = &context.settings;
        let action = match verdict.decision {
            // After an event that says so the room is closed (`room_settings`): its page
            // is the ended page.
            Decision::Deny if context.event_ended.is_some() => Action::Serve(Page::Ended),
            Decision::Allow => Action::Forward,
            Decision::Anon => Action::Serve(Page::StartWaiting),
            Decision::Wait | Decision::ReWait => Action::Serve(Page::KeepWaiting),
            Decision::Deny => Action::Serve(Page::Deny),
        };
        let set_cookie = match &verdict.cookie {
            CookieAction::Keep => None,
            CookieAction::Set(token) => {
                let attributes = cookie::Attributes::new(settings, visit.tls);
                Some(cookie::set_cookie(&self.cookie_name, token, &attributes))
            }
            CookieAction::Delete => Some(cookie::delete_cookie(&self.cookie_name)),
        };
        let outlook = verdict
            .wait_exp
            .map(|exp| outlook(visit.now, exp, verdict.arr, visit.uid, settings));
        let mut log = LogLine::decided(visit.now, visit.uid, visit.path, &verdict, context);
        log.pass_refused = pass_refused;
        Plan {
            set_cookie,
            refresh_after: outlook.map(|o| o.refresh_after),
            estimate: outlook.and_then(|o| o.estimate),
            place: outlook.and_then(|o| o.place),
            verdict: Some(verdict),
            ..self.plan(action, log)
        }
    }
}

/// What lies ahead for a waiting visitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outlook {
    /// Seconds until their page comes back by itself.
    pub refresh_after: u64,
    /// Random mode: when they can expect to be admitted; `None` when nobody is.
    pub estimate: Option<Estimate>,
    /// FIFO mode: their place and when they can expect to enter.
    pub place: Option<Place>,
}

/// The outlook at `now` of visitor `uid` holding a wait token that expires at
/// `wait_exp`, with the FIFO place `arr` if they hold one.
///
/// In random mode the first draw comes when the visitor returns: when the page
/// comes back in the default refresh mode; in `fixed` refresh mode, from the
/// moment the token is eligible. In FIFO mode the page comes back at the
/// visitor's steady pace, and the estimate is the cutoff's distance over its speed.
pub fn outlook(
    now: u64,
    wait_exp: u64,
    arr: Option<u64>,
    uid: &str,
    settings: &Settings,
) -> Outlook {
    let d = settings.wait_period_duration;
    if let Some(arr) = arr.filter(|_| settings.queueing_method == config::QueueingMethod::Fifo) {
        return Outlook {
            refresh_after: refresh::fifo_refresh_after(now, uid, d, settings.fifo_hold),
            estimate: None,
            place: Some(estimate::place(
                arr,
                settings.fifo_cutoff,
                settings.fifo_rate,
            )),
        };
    }
    let refresh_after = refresh::refresh_after(
        settings.refresh_mode,
        settings.draw_grid,
        now,
        wait_exp,
        uid,
        d,
    );
    let first_draw_in = match settings.refresh_mode {
        RefreshMode::Eligible => refresh_after,
        RefreshMode::Fixed => wait_exp.saturating_add(1).saturating_sub(now),
    };
    Outlook {
        refresh_after,
        estimate: estimate::estimate(first_draw_in, settings.percentage_at(now), d),
        place: None,
    }
}
