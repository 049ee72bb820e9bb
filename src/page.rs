//! Waiting-room pages: where each body comes from, and the headers they carry.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A page the room answers with instead of the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// For a new visitor (`anon`).
    StartWaiting,
    /// For a visitor who is waiting (`wait`, `re-wait`).
    KeepWaiting,
    /// The room is closed (`deny`).
    Deny,
    /// The origin could not answer an admitted visitor.
    OriginUnavailable,
}

/// Where a page's body comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageBody {
    /// This HTML.
    Html(Vec<u8>),
    /// A GET of this path on the origin.
    FromOrigin(String),
}

/// Why a stored page was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageProblem {
    /// The stored value is neither a `/path` nor base64.
    NotBase64,
}

impl Page {
    /// The page's key in the `waitingroom_pages` store; `None` for built-in-only pages.
    pub fn store_key(self) -> Option<&'static str> {
        match self {
            Page::StartWaiting => Some("startwaiting"),
            Page::KeepWaiting => Some("keepwaiting"),
            Page::Deny => Some("deny"),
            Page::OriginUnavailable => None,
        }
    }

    /// The built-in page compiled in from `static/`.
    pub fn default_html(self) -> &'static str {
        match self {
            Page::StartWaiting => include_str!("../static/startwaiting.html"),
            Page::KeepWaiting => include_str!("../static/keepwaiting.html"),
            Page::Deny => include_str!("../static/deny.html"),
            Page::OriginUnavailable => include_str!("../static/origin_unavailable.html"),
        }
    }

    /// HTTP status of the page.
    pub fn status(self) -> u16 {
        match self {
            Page::OriginUnavailable => 503,
            _ => 200,
        }
    }

    /// Whether the page tells the browser to come back by itself.
    pub fn refreshes(self) -> bool {
        matches!(self, Page::StartWaiting | Page::KeepWaiting)
    }

    /// The body to serve given the page store's value for this page: a `/path` is
    /// fetched from the origin, anything else is base64 HTML; a missing or empty
    /// value, or one that does not decode, falls back to the built-in page.
    pub fn body(self, stored: Option<&str>) -> (PageBody, Option<PageProblem>) {
        let builtin = || PageBody::Html(self.default_html().as_bytes().to_vec());
        let Some(stored) = stored.map(str::trim).filter(|v| !v.is_empty()) else {
            return (builtin(), None);
        };
        if stored.starts_with('/') {
            return (PageBody::FromOrigin(stored.to_string()), None);
        }
        match STANDARD.decode(stored) {
            Ok(html) => (PageBody::Html(html), None),
            Err(_) => (builtin(), Some(PageProblem::NotBase64)),
        }
    }

    /// Response headers of the page. `refresh_after` is the `Refresh` and
    /// `Retry-After` delay in seconds and `url` the request's path and query, to come back to.
    pub fn headers(self, refresh_after: u64, url: &str) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("Cache-Control", NO_STORE.to_string()),
            ("Content-Type", "text/html; charset=utf-8".to_string()),
        ];
        if self.refreshes() {
            headers.push(("Refresh", format!("{refresh_after}; url={url}")));
        }
        if self.refreshes() || self == Page::OriginUnavailable {
            headers.push(("Retry-After", refresh_after.to_string()));
        }
        headers
    }
}

/// `Cache-Control` for every waiting-room page and every response that sets the cookie.
pub const NO_STORE: &str = "no-store, private";

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Page; 4] = [
        Page::StartWaiting,
        Page::KeepWaiting,
        Page::Deny,
        Page::OriginUnavailable,
    ];

    #[test]
    fn stored_base64_page_is_served() {
        let (body, problem) = Page::StartWaiting.body(Some("U29ycnksIHlvdSBoYXZlIHRvIHdhaXQu"));
        assert_eq!(body, PageBody::Html(b"Sorry, you have to wait.".to_vec()));
        assert_eq!(problem, None);
    }

    #[test]
    fn stored_path_is_fetched_from_the_origin() {
        assert_eq!(
            Page::Deny.body(Some("/static/closed.html")).0,
            PageBody::FromOrigin("/static/closed.html".into())
        );
    }

    #[test]
    fn missing_empty_or_garbage_pages_fall_back_to_the_builtin() {
        for page in ALL {
            let builtin = PageBody::Html(page.default_html().as_bytes().to_vec());
            assert_eq!(page.body(None), (builtin.clone(), None));
            assert_eq!(page.body(Some("  ")), (builtin.clone(), None));
            assert_eq!(
                page.body(Some("not base64 !")),
                (builtin, Some(PageProblem::NotBase64))
            );
        }
    }

    #[test]
    fn waiting_pages_refresh_to_the_request_url() {
        for page in [Page::StartWaiting, Page::KeepWaiting] {
            let headers = page.headers(30, "/events/a?b=1");
            assert!(headers.contains(&("Refresh", "30; url=/events/a?b=1".into())));
            assert!(headers.contains(&("Retry-After", "30".into())));
            assert!(headers.contains(&("Cache-Control", "no-store, private".into())));
        }
        assert!(
            Page::Deny
                .headers(30, "/x")
                .iter()
                .all(|(n, _)| *n != "Refresh")
        );
    }

    #[test]
    fn origin_unavailable_is_a_503_with_retry_after() {
        assert_eq!(Page::OriginUnavailable.status(), 503);
        assert!(
            Page::OriginUnavailable
                .headers(30, "/x")
                .contains(&("Retry-After", "30".into()))
        );
    }

    #[test]
    fn builtin_pages_are_self_contained_html() {
        for page in ALL {
            let html = page.default_html();
            assert!(html.starts_with("<!doctype html>"), "{page:?}");
            for external in ["src=", "href=\"http", "@import", "url("] {
                assert!(!html.contains(external), "{page:?} loads {external}");
            }
        }
    }
}
