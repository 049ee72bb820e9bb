//! Waiting-room pages: where each body comes from, and the headers they carry.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::bots::challenge::ChallengeSettings;
use crate::settings::language::Language;

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
    /// The room's event is over (`"after_end": "ended"`).
    Ended,
}

/// Where a page's body comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageBody {
    /// This HTML.
    Html(Vec<u8>),
    /// A GET of this path on the origin.
    FromOrigin(String),
}

/// Most bytes of a page the room fetches from the origin (a `/path` in the page
/// store): ample for a self-contained page (a stored one is at most 8,000 base64
/// characters, about 6 KB), and a bound on what it costs the execution's 128 MB heap,
/// which holds it again once filled in. A page any larger is the built-in one.
pub const MAX_ORIGIN_PAGE_BYTES: usize = 256 * 1024;

/// Why a stored page was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageProblem {
    /// The stored value is neither a `/path` nor base64.
    NotBase64,
}

/// Marks where a page's bot-toll block begins; it ends at [`TOLL_END`]. The
/// block is removed from pages of visitors who owe no toll, and replaced by the
/// challenge block ([`challenge_block`]) for a visitor who must pass an external
/// challenge ([`crate::pages::view::Status::render`]).
pub const TOLL_START: &str = "<!--toll-->";
/// Marks where a page's bot-toll block ends.
pub const TOLL_END: &str = "<!--/toll-->";

/// Where a waiting page carries the bot toll's solver for its script: a data block
/// (not run), filled with [`crate::bots::toll::SOLVER_WASM_BASE64`].
pub const TOLL_SOLVER_BLOCK: &str =
    "<script type=\"application/wasm-base64\" id=\"toll-solver\">{{toll_solver}}</script>\n";

/// A script of `static/` as the pages carry it: without its comment lines, its
/// indentation, the line breaks after `;`, `{`, `}` and `,`, and the spaces in
/// `function (` and `) {`, which are for the reader of `static/` (the scripts hold
/// neither pattern in a string). Every built-in page must fit a config-store value
/// (8,000 characters) once encoded, so an operator can start from it.
fn compact_script(script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    for line in script.lines().map(str::trim_start) {
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        out.push_str(&line.replace("function (", "function(").replace(") {", "){"));
        if !line.ends_with([';', '{', '}', ',']) {
            out.push('\n');
        }
    }
    out
}

impl Page {
    /// The page's key in the `waitingroom_pages` store; `None` for built-in-only pages.
    pub fn store_key(self) -> Option<&'static str> {
        match self {
            Page::StartWaiting => Some("startwaiting"),
            Page::KeepWaiting => Some("keepwaiting"),
            Page::Deny => Some("deny"),
            Page::Ended => Some("ended"),
            Page::OriginUnavailable => None,
        }
    }

    /// The built-in page in English.
    pub fn default_html(self) -> String {
        self.default_html_in(Language::En)
    }

    /// The built-in page in `language`, compiled in from `static/` (English at its
    /// top, the others in a directory each): `layout.html` filled with the page's
    /// `*.message.html` (first line the title, the rest the message) and, on the two
    /// waiting pages, the estimate block `estimate.part.html`, the countdown and the
    /// bot toll's block (its note, its solver's [`TOLL_SOLVER_BLOCK`] and its script).
    pub fn default_html_in(self, language: Language) -> String {
        let texts = language.texts();
        // The toll block shows only to visitors who owe it ([`crate::pages::view`]).
        // Its solver comes filled in (`{{toll_solver}}`), so the template stays small
        // enough to store.
        let estimate = format!(
            "{}{}{}{}{}{}{}",
            texts.estimate,
            compact_script(include_str!("../../static/countdown.part.html")),
            TOLL_START,
            texts.toll,
            TOLL_SOLVER_BLOCK,
            compact_script(include_str!("../../static/toll.script.html")),
            TOLL_END,
        );
        let (message, details) = match self {
            Page::StartWaiting => (texts.start_waiting, estimate.as_str()),
            Page::KeepWaiting => (texts.keep_waiting, estimate.as_str()),
            Page::Deny => (texts.deny, ""),
            Page::Ended => (texts.ended, ""),
            Page::OriginUnavailable => (texts.origin_unavailable, ""),
        };
        let (title, text) = message.split_once('\n').unwrap_or((message, ""));
        include_str!("../../static/layout.html")
            .replacen("lang=\"en\"", &format!("lang=\"{}\"", language.code()), 1)
            .replacen("<!--title-->", title.trim(), 1)
            .replacen("<!--message-->", text.trim_end(), 1)
            .replacen("<!--details-->", details.trim_end(), 1)
    }

    /// HTTP status of the page; the two waiting pages use `waiting_status`.
    pub fn status(self, waiting_status: u16) -> u16 {
        match self {
            Page::StartWaiting | Page::KeepWaiting => waiting_status,
            Page::Deny | Page::Ended => 200,
            Page::OriginUnavailable => 503,
        }
    }

    /// The page-store keys to try, in order: `<key>.<language>` for each language of
    /// `Accept-Language` in the order given (at most [`MAX_LANGUAGES`], `q=0` skipped,
    /// primary subtag only, e.g. `startwaiting.de` for `de-CH`), then `<key>`.
    pub fn store_keys(self, accept_language: Option<&str>) -> Vec<String> {
        let Some(key) = self.store_key() else {
            return Vec::new();
        };
        let mut keys: Vec<String> = accept_language
            .unwrap_or("")
            .split(',')
            .filter_map(primary_language)
            .take(MAX_LANGUAGES)
            .map(|lang| format!("{key}.{lang}"))
            .collect();
        keys.dedup();
        keys.push(key.to_string());
        keys
    }

    /// Whether the page tells the browser to come back by itself.
    pub fn refreshes(self) -> bool {
        matches!(self, Page::StartWaiting | Page::KeepWaiting)
    }

    /// The body to serve given the page store's value for this page: a `/path` is
    /// fetched from the origin, anything else is base64 HTML; a missing or empty
    /// value, or one that does not decode, falls back to the built-in page.
    pub fn body(self, stored: Option<&str>, language: Language) -> (PageBody, Option<PageProblem>) {
        let builtin = || PageBody::Html(self.default_html_in(language).into_bytes());
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

    /// Response headers of the page, as HTML or as `json`. `refresh_after` is the
    /// `Refresh` and `Retry-After` delay in seconds and `url` the request's path and
    /// query, to come back to.
    pub fn headers(self, refresh_after: u64, url: &str, json: bool) -> Vec<(&'static str, String)> {
        let content_type = if json {
            "application/json"
        } else {
            "text/html; charset=utf-8"
        };
        let mut headers = vec![
            ("Cache-Control", NO_STORE.to_string()),
            ("Content-Type", content_type.to_string()),
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

/// What a page's toll block becomes for a visitor who must pass the room's
/// external challenge ([`crate::pages::view::Status::render`]): the words in `language`
/// (`static/<lang>/challenge.part.html`), the callbacks that put the provider's
/// token in the toll cookie (`static/challenge.script.html`, before the widget so
/// that it finds them), and the provider's widget, whose script comes from the
/// provider: the one thing a page loads from elsewhere, and only in such a room.
pub fn challenge_block(language: Language, challenge: &ChallengeSettings) -> String {
    let widget = format!(
        "{}{}",
        include_str!("../../static/challenge.script.html"),
        challenge.widget_html()
    );
    language.texts().challenge.replacen(WIDGET_SLOT, &widget, 1)
}

/// Where [`challenge_block`] puts the callbacks and the widget.
const WIDGET_SLOT: &str = "<!--widget-->";

/// The texts of the built-in pages in one language.
struct Texts {
    start_waiting: &'static str,
    keep_waiting: &'static str,
    deny: &'static str,
    ended: &'static str,
    origin_unavailable: &'static str,
    estimate: &'static str,
    toll: &'static str,
    challenge: &'static str,
}

/// The texts of a language whose files are in `static/<dir>/`.
macro_rules! texts {
    ($dir:literal) => {
        Texts {
            start_waiting: include_str!(concat!(
                "../../static/",
                $dir,
                "startwaiting.message.html"
            )),
            keep_waiting: include_str!(concat!("../../static/", $dir, "keepwaiting.message.html")),
            deny: include_str!(concat!("../../static/", $dir, "deny.message.html")),
            ended: include_str!(concat!("../../static/", $dir, "ended.message.html")),
            origin_unavailable: include_str!(concat!(
                "../../static/",
                $dir,
                "origin_unavailable.message.html"
            )),
            estimate: include_str!(concat!("../../static/", $dir, "estimate.part.html")),
            toll: include_str!(concat!("../../static/", $dir, "toll.part.html")),
            challenge: include_str!(concat!("../../static/", $dir, "challenge.part.html")),
        }
    };
}

/// The pages' part of a [`Language`]: choosing one for a visitor, and its texts (the
/// values and their codes are the setting's, [`crate::settings::language`]).
impl Language {
    /// The built-in pages' language for a visitor: `forced` when set, else the first
    /// of `Accept-Language` the pages speak (in the order given, `q=0` skipped), else
    /// English.
    pub fn choose(accept_language: Option<&str>, forced: Option<Language>) -> Language {
        forced
            .or_else(|| {
                accept_language?
                    .split(',')
                    .filter_map(primary_language)
                    .find_map(|code| Language::from_code(&code))
            })
            .unwrap_or_default()
    }

    fn texts(self) -> Texts {
        match self {
            Language::En => texts!(""),
            Language::De => texts!("de/"),
            Language::Fr => texts!("fr/"),
            Language::Es => texts!("es/"),
            Language::It => texts!("it/"),
            Language::Pt => texts!("pt/"),
        }
    }
}

/// `Cache-Control` for every waiting-room page and every response that sets the cookie.
pub const NO_STORE: &str = "no-store, private";

/// Most languages of `Accept-Language` tried for a per-language page.
pub const MAX_LANGUAGES: usize = 4;

/// `de-CH;q=0.8` → `de`; `None` for `*`, `q=0`, or anything not 2–8 ASCII letters.
fn primary_language(range: &str) -> Option<String> {
    let mut parts = range.split(';');
    let tag = parts.next()?.trim();
    let refused = parts.any(|p| p.trim().strip_prefix("q=").is_some_and(is_zero_weight));
    let primary = tag.split('-').next()?;
    let ok = !refused
        && (2..=8).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic());
    ok.then(|| primary.to_ascii_lowercase())
}

/// Whether a `q` value is zero, read as text (RFC 9110's qvalue: `0`, `0.`, `0.0`,
/// `0.00`, `0.000`): parsing it as a float would pull about 18 KB of float parsing
/// into the wasm. Anything that is not a qvalue counts as not zero.
fn is_zero_weight(q: &str) -> bool {
    match q.trim().strip_prefix('0') {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('.')
            .is_some_and(|zeros| zeros.len() <= 3 && zeros.bytes().all(|b| b == b'0')),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fastly's limit on a config-store value, in characters.
    const CONFIG_STORE_VALUE: usize = 8_000;

    #[test]
    fn every_built_in_page_fits_a_config_store_value_once_encoded() {
        let mut largest = (0, String::new());
        for language in Language::ALL {
            for page in [
                Page::StartWaiting,
                Page::KeepWaiting,
                Page::Deny,
                Page::Ended,
            ] {
                let encoded = page.default_html_in(language).len().div_ceil(3) * 4;
                if encoded > largest.0 {
                    largest = (encoded, format!("{page:?} in {language:?}"));
                }
            }
        }
        assert!(
            largest.0 <= CONFIG_STORE_VALUE,
            "{} is {} characters encoded, over {CONFIG_STORE_VALUE}",
            largest.1,
            largest.0
        );
    }

    #[test]
    fn the_visitors_first_language_the_pages_speak_is_chosen_unless_one_is_forced() {
        let choose = |header, forced| Language::choose(header, forced);
        assert_eq!(choose(None, None), Language::En);
        assert_eq!(choose(Some("de-CH, fr;q=0.8"), None), Language::De);
        assert_eq!(
            choose(Some("x-klingon, ja, pt-BR;q=0.5"), None),
            Language::Pt
        );
        assert_eq!(choose(Some("de;q=0, es"), None), Language::Es);
        assert_eq!(choose(Some("ja, zh"), None), Language::En);
        assert_eq!(choose(Some("de"), Some(Language::It)), Language::It);
    }

    #[test]
    fn every_language_has_every_page_and_says_its_language() {
        for language in Language::ALL {
            for page in [
                Page::StartWaiting,
                Page::KeepWaiting,
                Page::Deny,
                Page::Ended,
                Page::OriginUnavailable,
            ] {
                let html = page.default_html_in(language);
                assert!(
                    html.contains(&format!("<html lang=\"{}\">", language.code())),
                    "{language:?}"
                );
                let toll_blocks = html.matches(TOLL_START).count();
                assert_eq!(toll_blocks, usize::from(page.refreshes()), "{page:?}");
                let unmarked = html.replace(TOLL_START, "").replace(TOLL_END, "");
                assert!(!unmarked.contains("<!--"), "{language:?} {page:?}");
                let english = page.default_html();
                if language != Language::En {
                    assert_ne!(html, english, "{language:?} {page:?} is not translated");
                }
                if page.refreshes() {
                    assert!(html.contains("{{wait_p50}}") && html.contains("id=\"countdown\""));
                }
            }
        }
    }

    #[test]
    fn the_challenge_block_loads_only_its_providers_script_in_every_language() {
        use crate::bots::challenge::Provider;
        for provider in Provider::ALL {
            let raw = format!(r#"{{"provider":"{provider}","site_key":"site-key_1"}}"#);
            let challenge = ChallengeSettings::parse(&raw).unwrap();
            let english = challenge_block(Language::En, &challenge);
            for language in Language::ALL {
                let block = challenge_block(language, &challenge);
                assert!(!block.contains("<!--"), "{language:?}: an unfilled slot");
                assert!(block.contains("data-cookie=\"{{toll_cookie}}\""));
                assert!(block.contains("data-sitekey=\"site-key_1\""));
                assert!(block.contains("<noscript>"));
                // The callbacks come before the widget's script.
                let callbacks = block.find("window.wrChallengeDone").unwrap();
                assert!(callbacks < block.find(provider.script_url()).unwrap());
                // One thing from elsewhere: the provider's script.
                assert_eq!(block.matches("src=").count(), 1, "{language:?}");
                assert!(block.contains(&format!("src=\"{}\"", provider.script_url())));
                for external in ["href=\"http", "@import", "url("] {
                    assert!(!block.contains(external), "{language:?} loads {external}");
                }
                if language != Language::En {
                    assert_ne!(block, english, "{language:?} is not translated");
                }
            }
        }
    }

    #[test]
    fn only_a_zero_qvalue_refuses_a_language() {
        for (q, zero) in [
            ("0", true),
            ("0.", true),
            ("0.0", true),
            ("0.000", true),
            (" 0.00 ", true),
            ("0.0000", false),
            ("0.001", false),
            ("0.5", false),
            ("1", false),
            ("1.000", false),
            ("", false),
            ("x", false),
            ("00", false),
            ("-0", false),
        ] {
            assert_eq!(is_zero_weight(q), zero, "{q:?}");
        }
    }

    const ALL: [Page; 4] = [
        Page::StartWaiting,
        Page::KeepWaiting,
        Page::Deny,
        Page::OriginUnavailable,
    ];

    #[test]
    fn stored_base64_page_is_served() {
        let (body, problem) =
            Page::StartWaiting.body(Some("U29ycnksIHlvdSBoYXZlIHRvIHdhaXQu"), Language::En);
        assert_eq!(body, PageBody::Html(b"Sorry, you have to wait.".to_vec()));
        assert_eq!(problem, None);
    }

    #[test]
    fn stored_path_is_fetched_from_the_origin() {
        assert_eq!(
            Page::Deny.body(Some("/static/closed.html"), Language::En).0,
            PageBody::FromOrigin("/static/closed.html".into())
        );
    }

    #[test]
    fn missing_empty_or_garbage_pages_fall_back_to_the_builtin() {
        for page in ALL {
            let builtin = PageBody::Html(page.default_html().into_bytes());
            assert_eq!(page.body(None, Language::En), (builtin.clone(), None));
            assert_eq!(page.body(Some("  "), Language::En), (builtin.clone(), None));
            assert_eq!(
                page.body(Some("not base64 !"), Language::En),
                (builtin, Some(PageProblem::NotBase64))
            );
        }
    }

    #[test]
    fn waiting_pages_share_one_layout_with_their_own_words() {
        let start = Page::StartWaiting.default_html();
        let keep = Page::KeepWaiting.default_html();
        assert!(start.contains("<title>You are in the waiting room</title>"));
        assert!(start.contains("<h1>You are in the waiting room</h1>"));
        assert!(keep.contains("<title>Still waiting</title>"));
        assert!(keep.contains("<h1>Thanks for waiting, not long now</h1>"));
        for html in [start, keep] {
            for variable in ["{{wait_p50}}", "{{wait_p75}}", "{{refresh_after}}"] {
                assert!(html.contains(variable), "{variable}");
            }
        }
    }

    #[test]
    fn languages_are_tried_in_order_then_the_default() {
        assert_eq!(Page::StartWaiting.store_keys(None), ["startwaiting"]);
        assert_eq!(
            Page::KeepWaiting.store_keys(Some("de-CH, fr;q=0.8, en-GB;q=0.5, *;q=0.1")),
            [
                "keepwaiting.de",
                "keepwaiting.fr",
                "keepwaiting.en",
                "keepwaiting"
            ]
        );
        assert_eq!(
            Page::Deny.store_keys(Some("x-klingon;q=1, fr;q=0, 12, de-AT, de-DE")),
            ["deny.de", "deny"]
        );
        let many = "a1,ab,cd,ef,gh,ij,kl";
        assert_eq!(Page::Deny.store_keys(Some(many)).len(), MAX_LANGUAGES + 1);
        assert!(Page::OriginUnavailable.store_keys(Some("de")).is_empty());
    }

    #[test]
    fn waiting_pages_use_the_configured_status() {
        assert_eq!(Page::StartWaiting.status(429), 429);
        assert_eq!(Page::KeepWaiting.status(202), 202);
        assert_eq!(Page::Deny.status(429), 200);
        assert_eq!(Page::OriginUnavailable.status(200), 503);
    }

    #[test]
    fn json_pages_say_so() {
        let headers = Page::KeepWaiting.headers(30, "/x", true);
        assert!(headers.contains(&("Content-Type", "application/json".into())));
    }

    #[test]
    fn waiting_pages_refresh_to_the_request_url() {
        for page in [Page::StartWaiting, Page::KeepWaiting] {
            let headers = page.headers(30, "/events/a?b=1", false);
            assert!(headers.contains(&("Refresh", "30; url=/events/a?b=1".into())));
            assert!(headers.contains(&("Retry-After", "30".into())));
            assert!(headers.contains(&("Cache-Control", "no-store, private".into())));
        }
        let deny = Page::Deny.headers(30, "/x", false);
        assert!(
            deny.iter()
                .all(|(n, _)| *n != "Refresh" && *n != "Retry-After")
        );
    }

    #[test]
    fn origin_unavailable_is_a_503_with_retry_after() {
        assert!(
            Page::OriginUnavailable
                .headers(30, "/x", false)
                .contains(&("Retry-After", "30".into()))
        );
    }

    #[test]
    fn the_waiting_pages_carry_the_toll_solver_inside_their_toll_block() {
        for page in ALL {
            let html = page.default_html();
            let block = html
                .split_once(TOLL_START)
                .and_then(|(_, rest)| rest.split_once(TOLL_END))
                .map(|(block, _)| block);
            assert_eq!(block.is_some(), page.refreshes(), "{page:?}");
            assert_eq!(
                html.matches(TOLL_SOLVER_BLOCK).count(),
                usize::from(page.refreshes())
            );
            if let Some(block) = block {
                assert!(block.contains(TOLL_SOLVER_BLOCK), "{page:?}");
            }
        }
    }

    #[test]
    fn builtin_pages_are_self_contained_html() {
        for page in ALL {
            let html = page.default_html();
            assert!(html.starts_with("<!doctype html>"), "{page:?}");
            let unmarked = html.replace(TOLL_START, "").replace(TOLL_END, "");
            assert!(!unmarked.contains("<!--"), "{page:?} has an unfilled slot");
            assert!(html.len() < 50 * 1024, "{page:?} is {} bytes", html.len());
            for external in ["src=", "href=\"http", "@import", "url("] {
                assert!(!html.contains(external), "{page:?} loads {external}");
            }
        }
    }
}
