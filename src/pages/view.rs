//! What a waiting visitor is told: page templates with variables, and the same
//! facts as JSON for apps.
//!
//! Template variables are written `{{name}}`. Their values come only from the
//! room's own numbers (never from the request), and are HTML-escaped all the same;
//! an unknown `{{name}}` is left as it is.

use serde::{Serialize, Serializer};

use crate::admission::decision::Decision;
use crate::admission::estimate::{Estimate, Place};
use crate::bots::challenge::ChallengeSettings;
use crate::bots::toll;
use crate::pages::page::{Page, TOLL_END, TOLL_START};
use crate::settings::config::QueueingMethod;
use crate::settings::language::Language;
use crate::settings::percentage::{MICROS_PER_PERCENT, Percentage};

/// The facts about one waiting visitor, for a page or for JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The page the visitor gets.
    pub page: Page,
    /// The room's decision; `None` for the origin-unavailable page.
    pub decision: Option<Decision>,
    /// Unix seconds now.
    pub now: u64,
    /// The percentage in effect.
    pub allow_percentage: Percentage,
    /// `wait_period_duration`, seconds.
    pub wait_period_duration: u64,
    /// Seconds until the page comes back by itself.
    pub refresh_after: Option<u64>,
    /// Wait estimates; `None` when nobody is being admitted or the visitor is not waiting.
    pub estimate: Option<Estimate>,
    /// Lottery or FIFO.
    pub queueing_method: QueueingMethod,
    /// FIFO: the waiting visitor's place and expected time of entry.
    pub place: Option<Place>,
    /// The bot toll the visitor owes, if any.
    pub toll: Option<TollChallenge>,
    /// The external challenge the visitor must pass instead, if any.
    pub challenge: Option<ChallengeDue>,
}

/// An external challenge to pass (it replaces the proof of work), as the page
/// and the JSON status give it ([`crate::bots::challenge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeDue {
    /// The room's challenge: its provider and site key.
    pub settings: ChallengeSettings,
    /// The cookie the provider's token goes in.
    pub cookie: String,
    /// The language of the page's words about it.
    pub language: Language,
}

/// A bot toll to pay, as the page and the JSON status give it ([`crate::bots::toll`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TollChallenge {
    /// The challenge: the wait token's signature in lowercase hex.
    pub challenge: String,
    /// Leading zero bits the hash needs.
    pub bits: u8,
    /// The cookie the nonce goes in.
    pub cookie: String,
}

impl TollChallenge {
    /// The text a nonce's decimal digits are appended to before hashing.
    pub fn prefix(&self) -> String {
        format!("{}{}:", toll::DOMAIN, self.challenge)
    }
}

/// The template variables, in the order docs/operate/pages.md lists them.
pub const VARIABLES: [&str; 18] = [
    "wait_p25",
    "wait_p50",
    "wait_p75",
    "wait_mean",
    "wait_p25_seconds",
    "wait_p50_seconds",
    "wait_p75_seconds",
    "wait_mean_seconds",
    "next_draw_in",
    "refresh_after",
    "allow_percentage",
    "wait_period_duration",
    "entry_in",
    "entry_in_seconds",
    "toll_challenge",
    "toll_bits",
    "toll_cookie",
    "toll_solver",
];

/// Shown for a number the room does not have (e.g. estimates while closed).
const UNKNOWN: &str = "—";

impl Status {
    /// The value of template variable `name`; `None` for an unknown name.
    pub fn variable(&self, name: &str) -> Option<String> {
        let e = self.estimate;
        let human =
            |f: fn(&Estimate) -> u64| e.map_or(UNKNOWN.to_string(), |e| human_duration(f(&e)));
        let seconds =
            |f: fn(&Estimate) -> u64| e.map_or(UNKNOWN.to_string(), |e| f(&e).to_string());
        Some(match name {
            "wait_p25" => human(|e| e.p25),
            "wait_p50" => human(|e| e.p50),
            "wait_p75" => human(|e| e.p75),
            "wait_mean" => human(|e| e.mean),
            "wait_p25_seconds" => seconds(|e| e.p25),
            "wait_p50_seconds" => seconds(|e| e.p50),
            "wait_p75_seconds" => seconds(|e| e.p75),
            "wait_mean_seconds" => seconds(|e| e.mean),
            "next_draw_in" => seconds(|e| e.next_draw_in),
            "refresh_after" => self
                .refresh_after
                .map_or(UNKNOWN.to_string(), |s| s.to_string()),
            "allow_percentage" => self.allow_percentage.to_string(),
            "wait_period_duration" => self.wait_period_duration.to_string(),
            "entry_in" => self.entry_in().map_or(UNKNOWN.to_string(), human_duration),
            "entry_in_seconds" => self
                .entry_in()
                .map_or(UNKNOWN.to_string(), |s| s.to_string()),
            "toll_challenge" => self
                .toll
                .as_ref()
                .map_or(String::new(), |t| t.challenge.clone()),
            "toll_bits" => self.toll.as_ref().map_or(0, |t| t.bits).to_string(),
            "toll_cookie" => match (&self.toll, &self.challenge) {
                (Some(toll), _) => toll.cookie.clone(),
                (None, Some(challenge)) => challenge.cookie.clone(),
                (None, None) => String::new(),
            },
            "toll_solver" => self
                .toll
                .as_ref()
                .map_or("", |_| toll::SOLVER_WASM_BASE64)
                .to_string(),
            _ => return None,
        })
    }

    /// FIFO: seconds until the visitor's expected entry, when known.
    fn entry_in(&self) -> Option<u64> {
        self.place.and_then(|p| p.entry_in)
    }

    /// `template` with every known `{{variable}}` replaced by its HTML-escaped value.
    /// Works on bytes, so a page in any ASCII-compatible encoding passes unchanged.
    /// Without a toll to pay, every `<!--toll-->…<!--/toll-->` block is left out;
    /// under an external challenge, each is the challenge block instead (the only
    /// page that loads a script from elsewhere: the provider's widget).
    pub fn render(&self, template: &[u8]) -> Vec<u8> {
        let template = match (&self.challenge, &self.toll) {
            (Some(due), _) => {
                let block = crate::pages::page::challenge_block(due.language, &due.settings);
                replace_toll_blocks(template, block.as_bytes())
            }
            (None, Some(_)) => std::borrow::Cow::Borrowed(template),
            (None, None) => replace_toll_blocks(template, b""),
        };
        let mut out = Vec::with_capacity(template.len() + 64);
        let mut rest = &template[..];
        while let Some(open) = find(rest, b"{{") {
            out.extend_from_slice(&rest[..open]);
            let after = &rest[open + 2..];
            let known = find(after, b"}}").and_then(|close| {
                let name = std::str::from_utf8(&after[..close]).ok()?.trim();
                Some((close, self.variable(name)?))
            });
            match known {
                Some((close, value)) => {
                    out.extend_from_slice(escape_html(&value).as_bytes());
                    rest = &after[close + 2..];
                }
                None => {
                    out.extend_from_slice(b"{{");
                    rest = after;
                }
            }
        }
        out.extend_from_slice(rest);
        out
    }

    /// The JSON status for apps (schema in docs/operate/pages.md). Keys are written in
    /// alphabetical order, as the room always has.
    pub fn json(&self) -> String {
        let status = match self.page {
            Page::StartWaiting | Page::KeepWaiting => "waiting",
            Page::Deny => "closed",
            Page::Ended => "ended",
            Page::OriginUnavailable => "unavailable",
        };
        let fifo = self.queueing_method == QueueingMethod::Fifo;
        let body = JsonStatus {
            allow_percentage: self.allow_percentage,
            arrived_at: fifo.then(|| self.place.map(|p| p.arrived_at)),
            challenge: self.challenge.as_ref().map(|c| JsonChallenge {
                cookie: &c.cookie,
                provider: c.settings.provider.name(),
                site_key: &c.settings.site_key,
            }),
            decision: self.decision.map(Decision::name),
            entry_in: fifo.then(|| self.entry_in()),
            entry_in_known: fifo.then(|| self.entry_in().is_some()),
            estimate: self.estimate.map(|e| JsonEstimate {
                mean: e.mean,
                p25: e.p25,
                p50: e.p50,
                p75: e.p75,
            }),
            next_draw_in: self.estimate.map(|e| e.next_draw_in),
            queueing_method: if fifo { "fifo" } else { "random" },
            refresh_after: self.refresh_after,
            status,
            timestamp: self.now,
            toll: self.toll.as_ref().map(|t| JsonToll {
                bits: t.bits,
                challenge: &t.challenge,
                cookie: &t.cookie,
                prefix: t.prefix(),
            }),
            wait_period_duration: self.wait_period_duration,
        };
        // Cannot fail: every key is a string and every value serializes.
        serde_json::to_string(&body).unwrap_or_default()
    }
}

/// The JSON status. serde writes the fields in the order declared here: keep them
/// alphabetical. A FIFO-only field (`Option<…>`, skipped when `None`) is left out
/// in random mode, and `null` in FIFO mode when unknown.
#[derive(Serialize)]
struct JsonStatus<'a> {
    #[serde(serialize_with = "percentage_number")]
    allow_percentage: Percentage,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrived_at: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    challenge: Option<JsonChallenge<'a>>,
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry_in: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry_in_known: Option<bool>,
    estimate: Option<JsonEstimate>,
    next_draw_in: Option<u64>,
    queueing_method: &'static str,
    refresh_after: Option<u64>,
    status: &'static str,
    timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    toll: Option<JsonToll<'a>>,
    wait_period_duration: u64,
}

/// The status's `toll`: find a decimal nonce whose SHA-256 of `prefix + nonce`
/// starts with `bits` zero bits, and send it in the cookie `cookie`.
#[derive(Serialize)]
struct JsonToll<'a> {
    bits: u8,
    challenge: &'a str,
    cookie: &'a str,
    prefix: String,
}

/// The status's `challenge`: show the provider's widget for `site_key` and send
/// the token it gives in the cookie `cookie`.
#[derive(Serialize)]
struct JsonChallenge<'a> {
    cookie: &'a str,
    provider: &'static str,
    site_key: &'a str,
}

/// The status's `estimate`, its fields alphabetical too.
#[derive(Serialize)]
struct JsonEstimate {
    mean: u64,
    p25: u64,
    p50: u64,
    p75: u64,
}

/// A percentage as the number its text form shows (`50`, `12.5`): a whole one as
/// an integer, any other as the float nearest its four decimals, which serde_json
/// writes as its shortest text that reads back the same, the text form itself.
fn percentage_number<S: Serializer>(
    percentage: &Percentage,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let micros = percentage.micros();
    if micros.is_multiple_of(MICROS_PER_PERCENT) {
        serializer.serialize_u32(micros / MICROS_PER_PERCENT)
    } else {
        serializer.serialize_f64(f64::from(micros) / f64::from(MICROS_PER_PERCENT))
    }
}

/// Whether the client asked for JSON: `Accept` names `application/json` and not
/// `text/html` (browsers always name `text/html`).
pub fn wants_json(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    let types: Vec<String> = accept
        .split(',')
        .map(|range| {
            range
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    types.iter().any(|t| t == "application/json") && !types.iter().any(|t| t == "text/html")
}

/// `95` → `1 min 35 s`; `3600` → `1 h`; `42` → `42 s`.
pub fn human_duration(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    let parts: Vec<String> = [(h, "h"), (m, "min"), (s, "s")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect();
    if parts.is_empty() {
        "0 s".to_string()
    } else {
        parts.join(" ")
    }
}

/// `template` with each of its `<!--toll-->…<!--/toll-->` blocks replaced by
/// `block` (an unclosed one is left as it is).
fn replace_toll_blocks<'t>(template: &'t [u8], block: &[u8]) -> std::borrow::Cow<'t, [u8]> {
    if find(template, TOLL_START.as_bytes()).is_none() {
        return std::borrow::Cow::Borrowed(template);
    }
    let mut out = Vec::with_capacity(template.len() + block.len());
    let mut rest = template;
    while let Some(start) = find(rest, TOLL_START.as_bytes()) {
        let Some(len) = find(&rest[start..], TOLL_END.as_bytes()) else {
            break;
        };
        out.extend_from_slice(&rest[..start]);
        out.extend_from_slice(block);
        rest = &rest[start + len + TOLL_END.len()..];
    }
    out.extend_from_slice(rest);
    std::borrow::Cow::Owned(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `text` escaped for HTML and XML: the pages' variables, and the tools' SVG figures
/// and report.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::estimate::estimate;

    fn waiting() -> Status {
        Status {
            page: Page::KeepWaiting,
            decision: Some(Decision::Wait),
            now: 1000,
            allow_percentage: Percentage::whole(50),
            wait_period_duration: 30,
            refresh_after: Some(33),
            estimate: estimate(21, Percentage::whole(50), 30),
            queueing_method: QueueingMethod::Random,
            place: None,
            toll: None,
            challenge: None,
        }
    }

    fn in_line() -> Status {
        Status {
            queueing_method: QueueingMethod::Fifo,
            estimate: None,
            place: Some(Place {
                arrived_at: 1_000_500,
                entry_in: Some(95),
            }),
            ..waiting()
        }
    }

    #[test]
    fn every_documented_variable_has_a_value() {
        let fifo_only = ["entry_in", "entry_in_seconds"];
        for name in VARIABLES {
            if name.starts_with("toll_") {
                let value = paying().variable(name).unwrap();
                assert!(!value.is_empty() && value != "0", "{name}");
                let none = waiting().variable(name).unwrap();
                assert!(none.is_empty() || none == "0", "{name}");
                continue;
            }
            let status = if fifo_only.contains(&name) {
                in_line()
            } else {
                waiting()
            };
            let value = status.variable(name).unwrap();
            assert!(!value.is_empty() && value != UNKNOWN, "{name}");
            // The other mode's numbers are unknown, never made up.
            let other = if fifo_only.contains(&name) {
                waiting()
            } else {
                in_line()
            };
            let per_mode = name != "wait_period_duration"
                && (name.starts_with("wait_")
                    || name.starts_with("entry")
                    || name == "next_draw_in");
            if per_mode {
                assert_eq!(other.variable(name).unwrap(), UNKNOWN, "{name}");
            }
        }
        assert_eq!(in_line().variable("entry_in").unwrap(), "1 min 35 s");
        assert_eq!(waiting().variable("nope"), None);
    }

    /// A waiting visitor who owes a bot toll of 16 bits.
    fn paying() -> Status {
        Status {
            toll: Some(TollChallenge {
                challenge: "0f".repeat(32),
                bits: 16,
                cookie: "waiting_toll".to_string(),
            }),
            ..waiting()
        }
    }

    #[test]
    fn the_toll_block_shows_only_to_a_visitor_who_owes() {
        let template = b"<p>a</p><!--toll--><div data-c=\"{{toll_challenge}}\" data-b=\"{{toll_bits}}\" data-k=\"{{toll_cookie}}\"></div><!--/toll--><p>b</p><!--toll-->x<!--/toll-->";
        let owes = String::from_utf8(paying().render(template)).unwrap();
        assert_eq!(
            owes,
            format!(
                "<p>a</p><!--toll--><div data-c=\"{}\" data-b=\"16\" data-k=\"waiting_toll\"></div><!--/toll--><p>b</p><!--toll-->x<!--/toll-->",
                "0f".repeat(32)
            )
        );
        let free = String::from_utf8(waiting().render(template)).unwrap();
        assert_eq!(free, "<p>a</p><p>b</p>");
        // An unclosed block is left as it is.
        assert_eq!(waiting().render(b"a<!--toll-->b"), b"a<!--toll-->b");
    }

    #[test]
    fn the_json_status_says_how_to_pay_the_toll() {
        let json: serde_json::Value = serde_json::from_str(&paying().json()).unwrap();
        let challenge = "0f".repeat(32);
        assert_eq!(
            json["toll"],
            serde_json::json!({
                "bits": 16,
                "challenge": challenge,
                "cookie": "waiting_toll",
                "prefix": format!("waiting-room-toll:{challenge}:"),
            })
        );
        assert!(!waiting().json().contains("toll"));
    }

    /// A waiting visitor who must pass a Turnstile challenge, in German.
    fn challenged() -> Status {
        let settings =
            ChallengeSettings::parse(r#"{"provider":"turnstile","site_key":"site-1"}"#).unwrap();
        Status {
            challenge: Some(ChallengeDue {
                settings,
                cookie: "waiting_toll_drops".to_string(),
                language: Language::De,
            }),
            ..waiting()
        }
    }

    #[test]
    fn a_challenged_visitor_gets_the_widget_in_each_toll_block_and_apps_its_key() {
        let template = b"<p>a</p><!--toll-->proof of work<!--/toll--><p>b</p>";
        let html = String::from_utf8(challenged().render(template)).unwrap();
        assert!(html.starts_with("<p>a</p><div id=\"challenge\""), "{html}");
        assert!(html.ends_with("</div>\n<p>b</p>"), "{html}");
        assert!(!html.contains("proof of work") && !html.contains("<!--"));
        assert!(
            html.contains("data-cookie=\"waiting_toll_drops\""),
            "{html}"
        );
        assert!(html.contains("Prüfung"), "in the page's language");
        assert!(html.contains("data-sitekey=\"site-1\""));
        assert_eq!(challenged().variable("toll_bits").unwrap(), "0");
        let json: serde_json::Value = serde_json::from_str(&challenged().json()).unwrap();
        assert_eq!(
            json["challenge"],
            serde_json::json!({
                "cookie": "waiting_toll_drops",
                "provider": "turnstile",
                "site_key": "site-1",
            })
        );
        assert!(json.get("toll").is_none());
        assert!(!waiting().json().contains("challenge"));
    }

    #[test]
    fn fifo_json_says_the_method_the_place_and_whether_entry_is_known() {
        assert_eq!(
            in_line().json(),
            r#"{"allow_percentage":50,"arrived_at":1000500,"decision":"wait","entry_in":95,"entry_in_known":true,"estimate":null,"next_draw_in":null,"queueing_method":"fifo","refresh_after":33,"status":"waiting","timestamp":1000,"wait_period_duration":30}"#
        );
        let unknown = Status {
            place: Some(Place {
                arrived_at: 7,
                entry_in: None,
            }),
            ..in_line()
        };
        let v: serde_json::Value = serde_json::from_str(&unknown.json()).unwrap();
        assert_eq!(v["entry_in"], serde_json::Value::Null);
        assert_eq!(v["entry_in_known"], false);
        assert_eq!(v["arrived_at"], 7);
    }

    #[test]
    fn renders_variables_and_leaves_everything_else() {
        let page =
            b"<p>{{wait_p50}} / {{ wait_p75_seconds }} / {{nope}} / {{ / {{allow_percentage}}%</p>";
        assert_eq!(
            String::from_utf8(waiting().render(page)).unwrap(),
            "<p>21 s / 81 / {{nope}} / {{ / 50%</p>"
        );
        // Bytes that are not UTF-8 pass through untouched.
        assert_eq!(
            waiting().render(b"\xff{{refresh_after}}\xfe"),
            b"\xff33\xfe"
        );
        assert_eq!(waiting().render(b"{{"), b"{{");
        assert_eq!(waiting().render(b"}}{{}}"), b"}}{{}}");
    }

    #[test]
    fn fractional_percentages_show_their_decimals() {
        let half = "0.5".parse().unwrap();
        let status = Status {
            allow_percentage: half,
            estimate: estimate(21, half, 30),
            ..waiting()
        };
        assert_eq!(status.render(b"{{allow_percentage}}%"), b"0.5%");
        let v: serde_json::Value = serde_json::from_str(&status.json()).unwrap();
        assert_eq!(v["allow_percentage"], 0.5);
        assert!(status.json().contains(r#""allow_percentage":0.5,"#));
        // One draw in 200 wins: half of visitors need 139 draws, 60 s apart.
        assert_eq!(status.estimate.unwrap().p50, 21 + 138 * 60);
    }

    #[test]
    fn a_closed_room_shows_unknown_estimates() {
        let closed = Status {
            page: Page::Deny,
            decision: Some(Decision::Deny),
            refresh_after: None,
            estimate: None,
            allow_percentage: Percentage::ZERO,
            ..waiting()
        };
        assert_eq!(
            closed.render(b"{{wait_p50}}|{{refresh_after}}"),
            "—|—".as_bytes()
        );
    }

    #[test]
    fn json_status_has_the_documented_schema() {
        let v: serde_json::Value = serde_json::from_str(&waiting().json()).unwrap();
        assert_eq!(v["status"], "waiting");
        assert_eq!(v["decision"], "wait");
        assert_eq!(v["queueing_method"], "random");
        assert_eq!(v["allow_percentage"], 50);
        assert_eq!(v["wait_period_duration"], 30);
        assert_eq!(v["next_draw_in"], 21);
        assert_eq!(v["refresh_after"], 33);
        assert_eq!(v["estimate"]["p50"], 21);
        assert_eq!(v["estimate"]["p75"], 81);
        assert_eq!(v["estimate"]["mean"], 81);
        assert_eq!(v["timestamp"], 1000);
        let closed = Status {
            page: Page::Deny,
            estimate: None,
            ..waiting()
        };
        let v: serde_json::Value = serde_json::from_str(&closed.json()).unwrap();
        assert_eq!(v["status"], "closed");
        assert!(v["estimate"].is_null() && v["next_draw_in"].is_null());
    }

    #[test]
    fn json_status_is_written_byte_for_byte_as_before() {
        assert_eq!(
            waiting().json(),
            r#"{"allow_percentage":50,"decision":"wait","estimate":{"mean":81,"p25":21,"p50":21,"p75":81},"next_draw_in":21,"queueing_method":"random","refresh_after":33,"status":"waiting","timestamp":1000,"wait_period_duration":30}"#
        );
        let unavailable = Status {
            page: Page::OriginUnavailable,
            decision: None,
            refresh_after: None,
            estimate: None,
            allow_percentage: "12.3456".parse().unwrap(),
            ..waiting()
        };
        assert_eq!(
            unavailable.json(),
            r#"{"allow_percentage":12.3456,"decision":null,"estimate":null,"next_draw_in":null,"queueing_method":"random","refresh_after":null,"status":"unavailable","timestamp":1000,"wait_period_duration":30}"#
        );
    }

    /// The status reads back as the same values, and is the same text, as
    /// serde_json's `json!` object of them wrote before.
    #[test]
    fn json_status_parses_to_the_same_values_as_serde_json_wrote() {
        let unavailable = Status {
            page: Page::OriginUnavailable,
            decision: None,
            refresh_after: None,
            estimate: None,
            ..waiting()
        };
        let closed = Status {
            page: Page::Deny,
            decision: Some(Decision::Deny),
            estimate: None,
            allow_percentage: Percentage::ZERO,
            ..waiting()
        };
        for status in [waiting(), closed, unavailable] {
            let estimate = status.estimate.map(
                |e| serde_json::json!({"p25": e.p25, "p50": e.p50, "p75": e.p75, "mean": e.mean}),
            );
            let word = match status.page {
                Page::StartWaiting | Page::KeepWaiting => "waiting",
                Page::Deny => "closed",
                Page::Ended => "ended",
                Page::OriginUnavailable => "unavailable",
            };
            let percentage: serde_json::Number =
                status.allow_percentage.to_string().parse().unwrap();
            let expected = serde_json::json!({
                "status": word,
                "decision": status.decision.map(|d| d.to_string()),
                "queueing_method": "random",
                "allow_percentage": percentage,
                "wait_period_duration": status.wait_period_duration,
                "next_draw_in": status.estimate.map(|e| e.next_draw_in),
                "refresh_after": status.refresh_after,
                "estimate": estimate,
                "timestamp": status.now,
            });
            let written: serde_json::Value = serde_json::from_str(&status.json()).unwrap();
            assert_eq!(written, expected);
            assert_eq!(status.json(), expected.to_string());
        }
    }

    /// Every percentage is written as its text form, the number serde_json wrote
    /// for it (parsed from that text) before.
    #[test]
    fn every_percentage_is_written_as_serde_json_wrote_it() {
        for percentage in (0..=Percentage::HUNDRED.micros()).map(Percentage::from_micros) {
            let text = percentage.to_string();
            let number: serde_json::Number = text.parse().unwrap();
            assert_eq!(serde_json::Value::Number(number).to_string(), text);
            let mut written = Vec::new();
            percentage_number(&percentage, &mut serde_json::Serializer::new(&mut written)).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), text);
        }
    }

    #[test]
    fn json_only_when_asked_for_and_not_html() {
        assert!(wants_json(Some("application/json")));
        assert!(wants_json(Some(
            "application/json; charset=utf-8, */*;q=0.1"
        )));
        assert!(wants_json(Some("Application/JSON")));
        assert!(!wants_json(Some(
            "text/html,application/xhtml+xml,application/json;q=0.9"
        )));
        assert!(!wants_json(Some("*/*")));
        assert!(!wants_json(None));
    }

    #[test]
    fn durations_read_like_people_speak() {
        assert_eq!(human_duration(0), "0 s");
        assert_eq!(human_duration(42), "42 s");
        assert_eq!(human_duration(95), "1 min 35 s");
        assert_eq!(human_duration(3600), "1 h");
        assert_eq!(human_duration(3725), "1 h 2 min 5 s");
    }

    #[test]
    fn values_are_html_escaped() {
        assert_eq!(
            escape_html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
