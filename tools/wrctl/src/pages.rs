//! `wrctl pages`: check, encode and preview waiting-room pages before they go into
//! the `waitingroom_pages` config store.
//!
//! The checks are what the room needs of a page: its base64 value fits in one
//! config-store value (or, served from the origin, the page fits the room's cap on
//! what it reads of one), it loads nothing from outside (the page is served to everyone
//! held back, so anything it loads would either leak them to another site or send
//! them to the origin the room protects), and it uses only the template variables
//! the room fills ([`waiting_room::pages::view::VARIABLES`]). The HTML is read by
//! html5gum's WHATWG tokenizer, as a browser reads it (character references decoded,
//! comments skipped): the checks look at tags, `<style>` blocks, `style` attributes
//! and inline scripts, and never panic on any input.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use html5gum::{DefaultEmitter, State, Token, Tokenizer};
use waiting_room::pages::page::MAX_ORIGIN_PAGE_BYTES;
use waiting_room::pages::view::VARIABLES;

/// The longest value a Fastly config store holds, in characters.
pub const MAX_VALUE_LEN: usize = 8_000;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The page must not be stored as it is.
    Error,
    /// Works, but probably not as meant.
    Warning,
}

/// One thing found in a page, at a line (1-based; 0: the page as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// Line in the file, from 1; 0 for the whole page.
    pub line: usize,
    /// What is wrong, for a person.
    pub message: String,
}

impl Finding {
    /// `FILE:LINE: error: message`, as compilers print it.
    pub fn display(&self, file: &str) -> String {
        let word = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        if self.line == 0 {
            format!("{file}: {word}: {}", self.message)
        } else {
            format!("{file}:{}: {word}: {}", self.line, self.message)
        }
    }
}

/// The page's value in the page store: standard base64 of the bytes.
pub fn encode(html: &[u8]) -> String {
    STANDARD.encode(html)
}

/// Length of the base64 of `n` bytes.
pub fn encoded_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

/// `12345` → `12,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every finding about the page `bytes`, in order of line; `Err` when it is not UTF-8.
pub fn check(bytes: &[u8]) -> Result<Vec<Finding>, String> {
    let html = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        format!(
            "not UTF-8: invalid byte 0x{:02x} at line {line} (byte {at}); save the page as UTF-8",
            bytes[at]
        )
    })?;
    let mut scan = Scan {
        html,
        findings: Vec::new(),
        viewport: false,
        lang: false,
        title: false,
    };
    let encoded = encoded_len(bytes.len());
    let over_origin_cap = bytes.len() > MAX_ORIGIN_PAGE_BYTES;
    if encoded > MAX_VALUE_LEN {
        scan.findings.push(Finding {
            severity: Severity::Error,
            line: 0,
            message: format!(
                "the encoded page is {} characters ({} bytes of HTML), {} over the config \
                 store's limit of {} characters a value; make it smaller (inline images \
                 cost 4/3 of their size){}",
                thousands(encoded),
                thousands(bytes.len()),
                thousands(encoded - MAX_VALUE_LEN),
                thousands(MAX_VALUE_LEN),
                if over_origin_cap {
                    ""
                } else {
                    " or serve it from the origin as a /path"
                }
            ),
        });
    }
    if over_origin_cap {
        scan.findings.push(Finding {
            severity: Severity::Error,
            line: 0,
            message: format!(
                "the page is {} bytes, over the {} bytes the room reads of a page it \
                 fetches from the origin: served from there, it is the built-in page \
                 (page_fallback=origin:too-large)",
                thousands(bytes.len()),
                thousands(MAX_ORIGIN_PAGE_BYTES)
            ),
        });
    }
    scan.variables();
    scan.tags();
    if !scan.viewport {
        scan.warn(
            0,
            "no <meta name=\"viewport\">: phones show the page zoomed out".into(),
        );
    }
    if !scan.lang {
        scan.warn(
            0,
            "no lang on <html>: screen readers and translators guess the language".into(),
        );
    }
    if !scan.title {
        scan.warn(0, "no <title>: the tab shows the address".into());
    }
    scan.findings.sort_by_key(|f| f.line);
    Ok(scan.findings)
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

struct Scan<'a> {
    html: &'a str,
    findings: Vec<Finding>,
    viewport: bool,
    /// Whether an `<html>` has a non-empty `lang`.
    lang: bool,
    title: bool,
}

/// Elements whose attributes load something, and those attributes.
const LOADS: &[(&str, &[&str])] = &[
    ("script", &["src"]),
    ("link", &["href", "imagesrcset"]),
    ("img", &["src", "srcset"]),
    ("image", &["href", "xlink:href"]),
    ("use", &["href", "xlink:href"]),
    ("iframe", &["src"]),
    ("frame", &["src"]),
    ("embed", &["src"]),
    ("object", &["data"]),
    ("video", &["src", "poster"]),
    ("audio", &["src"]),
    ("source", &["src", "srcset"]),
    ("track", &["src"]),
    ("input", &["src"]),
    ("body", &["background"]),
    ("table", &["background"]),
    ("td", &["background"]),
];

impl Scan<'_> {
    fn line(&self, at: usize) -> usize {
        1 + lines_before(self.html, at.min(self.html.len()))
    }

    fn error(&mut self, line: usize, message: String) {
        self.findings.push(Finding {
            severity: Severity::Error,
            line,
            message,
        });
    }

    fn warn(&mut self, line: usize, message: String) {
        self.findings.push(Finding {
            severity: Severity::Warning,
            line,
            message,
        });
    }

    /// Unknown `{{name}}`s, read as [`waiting_room::pages::view::Status::render`] reads them.
    fn variables(&mut self) {
        let bytes = self.html.as_bytes();
        let mut at = 0;
        while let Some(open) = find(&bytes[at..], b"{{").map(|i| at + i) {
            let after = open + 2;
            let Some(close) = find(&bytes[after..], b"}}").map(|i| after + i) else {
                break;
            };
            let name = self.html.get(after..close).unwrap_or("").trim();
            if VARIABLES.contains(&name) {
                at = close + 2;
                continue;
            }
            let shown: String = name.chars().take(40).collect();
            let line = self.line(open);
            self.error(
                line,
                format!(
                    "unknown template variable {{{{{}}}}}: the room leaves it as it is; \
                     known: {}",
                    shown.escape_debug(),
                    VARIABLES.join(", ")
                ),
            );
            at = after;
        }
    }

    /// Tags, attributes, `<style>` and `<script>` contents. The switch to raw text
    /// after `<style>` and `<script>` is a tree builder's, left to the tokenizer's
    /// user: made here for those two only (html5gum's naive switch would also take
    /// a `<noscript>`'s markup for text, and miss what it loads).
    fn tags(&mut self) {
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let mut tokens =
            Tokenizer::new_with_emitter(self.html, DefaultEmitter::<usize>::new_with_span());
        // The raw text of a `<style>` or `<script>` that comes next, and its first byte.
        let mut raw = None;
        while let Some(Ok(token)) = tokens.next() {
            match token {
                Token::StartTag(tag) => {
                    let name = text(&tag.name);
                    let mut attributes: Vec<Attribute> = tag
                        .attributes
                        .iter()
                        .map(|(name, value)| Attribute {
                            name: text(name),
                            value: text(value),
                            at: value.span.start,
                        })
                        .collect();
                    attributes.sort_by_key(|a| a.at);
                    self.tag(&name, &attributes);
                    raw = match name.as_str() {
                        "style" => Some((State::RawText, tag.span.end)),
                        "script" => Some((State::ScriptData, tag.span.end)),
                        _ => None,
                    };
                    if let Some((state, _)) = raw {
                        tokens.set_state(state);
                    }
                }
                Token::String(string) => match raw {
                    Some((State::RawText, at)) => {
                        self.css(self.line(at), &text(&string), "a <style> block");
                    }
                    Some((_, at)) => self.script(self.line(at), &text(&string)),
                    None => {}
                },
                Token::Error(_) => {}
                _ => raw = None,
            }
        }
    }

    fn tag(&mut self, name: &str, attributes: &[Attribute]) {
        let get = |wanted: &str| attributes.iter().find(|a| a.name == wanted);
        let has_lang = || get("lang").is_some_and(|a| !a.value.trim().is_empty());
        let is_viewport =
            || get("name").is_some_and(|a| a.value.trim().eq_ignore_ascii_case("viewport"));
        self.lang |= name == "html" && has_lang();
        self.viewport |= name == "meta" && is_viewport();
        self.title |= name == "title";
        if let Some((_, loading)) = LOADS.iter().find(|(element, _)| *element == name) {
            for attribute in attributes
                .iter()
                .filter(|a| loading.contains(&a.name.as_str()))
            {
                let urls: Vec<&str> = if attribute.name.ends_with("srcset") {
                    attribute
                        .value
                        .split(',')
                        .filter_map(|c| c.split_whitespace().next())
                        .collect()
                } else {
                    vec![attribute.value.as_str()]
                };
                for url in urls {
                    if let Some(why) = outside(url) {
                        let what = if name == "link" {
                            let rel = get("rel").map_or("", |a| a.value.trim());
                            format!("<link rel=\"{}\" {}=…>", rel.escape_debug(), attribute.name)
                        } else {
                            format!("<{name} {}=…>", attribute.name)
                        };
                        let line = self.line(attribute.at);
                        self.error(
                            line,
                            format!(
                                "{what} loads {:?}, {why}; inline it (a data: URL) or drop it",
                                shorten(url)
                            ),
                        );
                    }
                }
            }
        }
        for attribute in attributes.iter().filter(|a| a.name == "style") {
            let place = format!("the style of <{name}>");
            self.css(self.line(attribute.at), &attribute.value, &place);
        }
    }

    /// `url(…)` and `@import` in CSS starting on line `first` of the page.
    fn css(&mut self, first: usize, css: &str, place: &str) {
        let css = strip_css_comments(css);
        let lower = css.to_ascii_lowercase();
        let bytes = lower.as_bytes();
        let mut at = 0;
        while let Some(i) = find(&bytes[at..], b"url(").map(|i| at + i) {
            let start = i + 4;
            let rest = &css[start..];
            let end = rest.find(')').unwrap_or(rest.len());
            let url = rest[..end].trim().trim_matches(['"', '\'']).trim();
            if let Some(why) = outside(url) {
                let line = first + lines_before(&css, i);
                self.error(
                    line,
                    format!(
                        "CSS url({:?}) in {place} loads {why}; inline it (a data: URL) or drop it",
                        shorten(url)
                    ),
                );
            }
            at = start;
        }
        let mut at = 0;
        while let Some(i) = find(&bytes[at..], b"@import").map(|i| at + i) {
            let rest = css[i + 7..].trim_start();
            let target = if rest.to_ascii_lowercase().starts_with("url(") {
                None // reported as a url() above
            } else {
                let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
                Some(match quote {
                    Some(q) => rest[1..].split(q).next().unwrap_or(""),
                    None => rest.split([';', ' ', '\n']).next().unwrap_or(""),
                })
            };
            if let Some(url) = target {
                let line = first + lines_before(&css, i);
                let why = outside(url).unwrap_or("a stylesheet from outside the page");
                self.error(
                    line,
                    format!(
                        "CSS @import {:?} in {place} loads {why}; inline the rules",
                        shorten(url)
                    ),
                );
            }
            at = i + 7;
        }
    }

    /// Inline scripts run in the page: an absolute address in one is probably a fetch.
    fn script(&mut self, first: usize, script: &str) {
        for scheme in ["https://", "http://"] {
            if let Some(i) = script.to_ascii_lowercase().find(scheme) {
                let line = first + lines_before(script, i);
                self.warn(
                    line,
                    format!(
                        "an inline script names an {} address: make sure it loads nothing \
                         from outside the page",
                        scheme.trim_end_matches("://")
                    ),
                );
                return;
            }
        }
    }
}

/// Why a URL in a page would be fetched from outside it; `None` when it stays inside
/// (empty, a fragment, `data:`, `blob:`, `about:`, or a template variable).
pub fn outside(url: &str) -> Option<&'static str> {
    let url = url.trim_matches(|c: char| c.is_ascii_whitespace() || c.is_ascii_control());
    let lower = url.to_ascii_lowercase();
    if url.is_empty()
        || url.starts_with('#')
        || url.starts_with("{{")
        || ["data:", "blob:", "about:"]
            .iter()
            .any(|s| lower.starts_with(s))
    {
        return None;
    }
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Some("an absolute URL, from another server");
    }
    if url.starts_with("//") || url.starts_with("\\\\") || url.starts_with("/\\") {
        return Some("a protocol-relative URL, from another server");
    }
    let scheme_end = lower.find(':');
    let path_start = lower.find(['/', '?', '#']);
    if scheme_end.is_some_and(|c| path_start.is_none_or(|p| c < p))
        && lower[..scheme_end.unwrap_or(0)]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return Some("a URL from outside the page");
    }
    Some("a relative URL, fetched from the origin the room protects")
}

fn shorten(url: &str) -> String {
    let short: String = url.chars().take(80).collect();
    if short.len() < url.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// One attribute of a tag: its lower-case name, its value with character references
/// decoded, and the byte offset of its name in the page.
struct Attribute {
    name: String,
    value: String,
    at: usize,
}

/// CSS with its `/* … */` comments blanked (newlines kept, so offsets still hold).
fn strip_css_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(open) = rest.find("/*") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("*/").map_or(after.len(), |i| i + 2);
        let comment = &rest[open..open + 2 + close];
        // One ASCII byte for each byte: offsets and lines still hold.
        out.extend(comment.bytes().map(|b| if b == b'\n' { '\n' } else { ' ' }));
        rest = &rest[open + 2 + close..];
    }
    out.push_str(rest);
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The newlines in `text` before byte `at`.
fn lines_before(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// A page-store key: `startwaiting`, `keepwaiting` or `deny`, optionally with
/// `.LANG` (2 to 8 letters, as the room reads `Accept-Language`).
pub fn page_key(text: &str) -> Result<String, String> {
    let (page, lang) = match text.split_once('.') {
        Some((page, lang)) => (page, Some(lang)),
        None => (text, None),
    };
    if !["startwaiting", "keepwaiting", "deny"].contains(&page) {
        return Err(
            "expected startwaiting, keepwaiting or deny, optionally .LANG (e.g. deny.de)".into(),
        );
    }
    if let Some(lang) = lang
        && !((2..=8).contains(&lang.len()) && lang.bytes().all(|b| b.is_ascii_lowercase()))
    {
        return Err(
            "the language is 2 to 8 lower-case letters, the primary subtag the room tries (e.g. de)"
                .into(),
        );
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any bytes: an answer, never a panic (a cheap stand-in for a fuzzer).
    #[test]
    fn any_bytes_get_an_answer() {
        let alphabet: &[&[u8]] = &[
            b"<",
            b">",
            b"\"",
            b"'",
            b"=",
            b" ",
            b"\n",
            b"/",
            b"{{",
            b"}}",
            b"url(",
            b")",
            b"<!--",
            b"-->",
            b"<style>",
            b"</style>",
            b"<script>",
            b"<img src=",
            b"&#47;",
            b"&",
            b";",
            b"/*",
            b"*/",
            b"@import",
            b"//x",
            "\u{e9}".as_bytes(),
            b"\xff",
            b"a",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut page = Vec::new();
            for _ in 0..(state % 24) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                page.extend_from_slice(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            let _ = check(&page);
        }
    }

    /// `<noscript>` markup is read as markup, and a finding inside a `<style>` or a
    /// `style` attribute is on its own line, CRLF or not.
    #[test]
    fn findings_in_raw_text_and_noscript_keep_their_lines() {
        let page = "<style>\r\n\r\na{b:url(x.png)}</style>\n<noscript>\n<img src=y.png>\n\
                    </noscript><p\nstyle='\nc:url(&#47;&#47;z)'>";
        let lines: Vec<usize> = check(page.as_bytes())
            .unwrap()
            .iter()
            .map(|f| f.line)
            .collect();
        assert_eq!(lines, [0, 0, 0, 3, 5, 8]);
    }

    #[test]
    fn urls_inside_the_page_stay_inside() {
        for url in [
            "",
            "#top",
            "data:image/png;base64,AA",
            " DATA:x",
            "blob:x",
            "{{x}}",
        ] {
            assert_eq!(outside(url), None, "{url}");
        }
        for url in [
            "https://a.example/x",
            "HTTP://a",
            "//a.example",
            "\\\\a.example",
            "ftp://a",
            "x.css",
            "/x.png",
            "?q",
        ] {
            assert!(outside(url).is_some(), "{url}");
        }
    }

    #[test]
    fn numbers_read_with_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(8_000), "8,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(encoded_len(6_000), 8_000);
        assert_eq!(encoded_len(6_001), 8_004);
    }
}
