//! The rest of a request after its [`Plan`]: what the origin's answer means, and
//! the room's page for the visitor — status, headers and body — so that the edge
//! only reads stores, sends requests and writes responses.

use std::io::{self, Read};

use crate::admission::decision::Decision;
use crate::credentials::{cookie, cookie_names, pass};
use crate::log::{Answered, OriginReply};
use crate::pages::page::{MAX_ORIGIN_PAGE_BYTES, Page, PageBody};
use crate::pages::view::{self, Status};
use crate::settings::context::RequestContext;
use crate::{Plan, Visit};

/// The response header by which the origin ends an admitted visitor's session
/// (for example after checkout). It is honoured only on the origin's response to
/// a request the room admitted, never read from a request, and never passed on to
/// the visitor.
pub const RELEASE_HEADER: &str = "waiting-room-release";

/// Reads `body` to its end, but no further than one byte past `max`: enough to tell a
/// body over `max` from one at it, never the whole of a body that could fill the heap.
/// The edge reads the bodies it keeps this way: an origin-hosted page
/// ([`origin_page`]), the challenge provider's verdict.
pub fn read_capped(body: impl Read, max: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    body.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An origin-hosted page from the body of the origin's 2xx answer, read with
/// [`read_capped`]: the template, or why the built-in page stands in, for
/// [`Plan::fetched`]: `too-large` past [`MAX_ORIGIN_PAGE_BYTES`], `read-error` when
/// the read failed.
pub fn origin_page(body: impl Read) -> Result<Vec<u8>, String> {
    match read_capped(body, MAX_ORIGIN_PAGE_BYTES) {
        Ok(page) if page.len() > MAX_ORIGIN_PAGE_BYTES => Err("too-large".into()),
        Ok(page) => Ok(page),
        Err(_) => Err("read-error".into()),
    }
}

/// What the edge does with the origin's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginOutcome {
    /// Send it to the visitor (without [`RELEASE_HEADER`]).
    PassOn,
    /// Answer with [`Page::OriginUnavailable`] instead.
    Unavailable,
}

/// A room page, ready but for its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAnswer {
    /// The page.
    pub page: Page,
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(&'static str, String)>,
    /// Where the body comes from.
    pub body: BodySource,
}

/// Where a page's body comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodySource {
    /// This body (JSON for apps).
    Ready(Vec<u8>),
    /// An HTML template: the value of this page-store key (the first of the page's
    /// keys that `custom_pages` lists), or with none the built-in page. Hand the
    /// value to [`Plan::template`].
    Store(Option<String>),
}

impl Plan {
    /// The request's log line, as the edge writes it.
    pub fn log_line(&self) -> String {
        self.log.line()
    }

    /// The origin answered with `status`, carrying `release` as its
    /// [`RELEASE_HEADER`]; `answered` says whether it was the origin itself (logged
    /// `origin_ms=… origin_status=…`) or Fastly's cache (`origin=cache
    /// origin_status=…`), for every forwarded request, in the room or outside it.
    /// Inside the room an origin 5xx becomes the room's clean page; outside it the
    /// origin's answer goes back as it is. A release is applied (see
    /// [`Plan::apply_release`]).
    pub fn origin_answered(
        &mut self,
        status: u16,
        release: Option<&str>,
        answered: Answered,
    ) -> OriginOutcome {
        self.log.origin = Some(OriginReply::Answered(answered, status));
        if self.verdict.is_some() && (500..600).contains(&status) {
            return OriginOutcome::Unavailable;
        }
        self.apply_release(release);
        OriginOutcome::PassOn
    }

    /// The origin could not be reached (`why`, logged as `origin_error=…`, with
    /// no time: a timeout or a connection error is no answer): the visitor gets
    /// [`Page::OriginUnavailable`].
    pub fn origin_unreachable(&mut self, why: &str) {
        self.log.origin = Some(OriginReply::Error(why.to_string()));
    }

    /// Applies the origin's `Waiting-Room-Release` header value, if the response
    /// had one: for an admitted visitor, `1` ends the session (the cookie is deleted
    /// on this response and the release logged, so a controller counts the place
    /// free at once). Any other value, or a visitor the room did not admit on this
    /// request, changes nothing. Returns whether the session was released.
    pub fn apply_release(&mut self, header: Option<&str>) -> bool {
        let admitted = self
            .verdict
            .as_ref()
            .is_some_and(|v| v.decision == Decision::Allow);
        if !admitted || header.map(str::trim) != Some("1") {
            return false;
        }
        self.set_cookie = Some(cookie::delete_cookie(&self.cookie_name));
        self.log.release = true;
        true
    }

    /// The room's `page` for the visitor of `visit`: JSON for apps that ask for it,
    /// else an HTML template to fill in.
    pub fn page(&self, page: Page, visit: &Visit<'_>, context: &RequestContext) -> PageAnswer {
        let settings = &context.settings;
        let json = view::wants_json(visit.accept);
        let status = self.status(page, context, visit.now);
        let refresh = status
            .refresh_after
            .unwrap_or(settings.wait_period_duration);
        // A page is never the answer to a pass the room took from a link (that is a
        // redirect): a refused one is not presented again at every refresh.
        let again = pass::from_link(visit.path_and_query).map(|(_, without)| without);
        PageAnswer {
            page,
            status: page.status(settings.waiting_status),
            headers: page.headers(
                refresh,
                again.as_deref().unwrap_or(visit.path_and_query),
                json,
            ),
            body: if json {
                BodySource::Ready(status.json().into_bytes())
            } else {
                BodySource::Store(
                    context
                        .room
                        .page_keys(
                            page.store_keys(visit.accept_language),
                            context.event.as_deref().or(context.event_ended.as_deref()),
                        )
                        .into_iter()
                        .find(|key| settings.custom_pages.contains(key)),
                )
            },
        }
    }

    /// The template for `page` given the page store's value (`stored`): base64 HTML,
    /// an origin `/path` to fetch (then hand the result to [`Plan::fetched`]), or the
    /// built-in page when the value is missing or unusable (logged `page_fallback=…`).
    pub fn template(&mut self, page: Page, stored: Option<&str>) -> PageBody {
        let (body, problem) = page.body(stored, self.language);
        if let Some(problem) = problem {
            self.log.page_fallback = Some(format!("{problem:?}"));
        }
        body
    }

    /// The template fetched from the origin for `page`, or the built-in page when the
    /// fetch failed (`why`, logged as `page_fallback=origin:…`: the origin's status,
    /// its error, or [`origin_page`]'s word).
    pub fn fetched(&mut self, page: Page, fetched: Result<Vec<u8>, String>) -> Vec<u8> {
        fetched.unwrap_or_else(|why| {
            self.log.page_fallback = Some(format!("origin:{why}"));
            page.default_html_in(self.language).into_bytes()
        })
    }

    /// `template` filled in with the visitor's figures.
    pub fn render(
        &self,
        page: Page,
        visit: &Visit<'_>,
        context: &RequestContext,
        template: &[u8],
    ) -> Vec<u8> {
        self.status(page, context, visit.now).render(template)
    }

    /// What to tell the visitor on `page`: the plan's own page, or the
    /// origin-unavailable page (which comes back after one wait period).
    pub fn status(&self, page: Page, context: &RequestContext, now: u64) -> Status {
        let settings = &context.settings;
        let unavailable = page == Page::OriginUnavailable;
        let owed = self
            .verdict
            .as_ref()
            .and_then(|v| v.toll)
            .filter(|_| !unavailable);
        Status {
            page,
            decision: self
                .verdict
                .as_ref()
                .map(|v| v.decision)
                .filter(|_| !unavailable),
            now,
            allow_percentage: settings.percentage_at(now),
            wait_period_duration: settings.wait_period_duration,
            refresh_after: if unavailable {
                Some(settings.wait_period_duration)
            } else {
                self.refresh_after
            },
            estimate: self.estimate.filter(|_| !unavailable),
            queueing_method: settings.queueing_method,
            place: self.place.filter(|_| !unavailable),
            // Under a challenge, its widget instead of the proof of work (none
            // while the setting is unreadable: the log says why).
            toll: owed
                .filter(|_| !settings.bot_challenge.is_on())
                .map(|due| view::TollChallenge {
                    challenge: crate::bots::toll::challenge(&due.signature),
                    bits: due.bits,
                    cookie: cookie_names::toll(&context.room),
                }),
            challenge: owed
                .and(settings.bot_challenge.settings())
                .map(|challenge| view::ChallengeDue {
                    settings: challenge.clone(),
                    cookie: cookie_names::toll(&context.room),
                    language: self.language,
                }),
        }
    }
}
