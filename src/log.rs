//! The one log line each request gets: [`LogLine`], a typed record the request's
//! steps fill in and the edge writes once, its fields in the order of [`FIELDS`]
//! (docs/reference/log.md is generated from it). The line never contains a key or
//! a cookie.
//!
//! ```text
//! waitingroom t=1700000023 decision=allow uid=192.0.2.10 p=12.5 session=new transition=lottery-won exp=1700003623 path=/events origin_ms=42 origin_status=200
//! waitingroom t=1700000023 decision=bypass scope=unprotected-path uid=192.0.2.10 path=/about
//! ```
//!
//! Fields are `key=value` pairs separated by single spaces; no value contains a
//! space (the path's spaces are written `%20`), so a reader splits on spaces and
//! takes the first occurrence of each key. The fields a reader counts on (`t`,
//! `decision`, `uid`, `p`, `session`, `transition`, `exp`, `arr`, `cutoff`) come
//! before anything a visitor can influence (the path, a rejected token's key id);
//! the path and every field a visitor shapes are one word each behind their own
//! key, so no visitor can write one of them.

use std::fmt::{self, Write as _};
use std::time::Duration;

use crate::admission::decision::{Decision, Rejection, Session, Transition, Verdict};
use crate::bots::challenge::Outcome;
use crate::credentials::pass::PassRefusal;
use crate::settings::config::QueueingMethod;
use crate::settings::context::RequestContext;
use crate::settings::percentage::Percentage;

/// The first word of every line.
pub const PREFIX: &str = "waitingroom";
/// Longest request path copied into a log line, in bytes.
const MAX_LOGGED_PATH: usize = 200;

/// Every field a line can carry, in the order written: how it begins, and what
/// it says. A field appears only when it applies.
pub const FIELDS: &[(&str, &str)] = &[
    ("t=", "Unix seconds of the request."),
    (
        "decision=",
        "`allow`, `deny`, `anon`, `wait`, `re-wait` (the room decided); `bypass` (the room did not apply); `refused` (it answered without deciding).",
    ),
    (
        "scope=",
        "Why a `bypass`: `unprotected-path`, `disabled`, `bypass-path`, `bypass-address`, `pass` (a signed pass), `live-session` (a live session let on while a read failed).",
    ),
    (
        "reason=",
        "Why `refused`: `ambiguous-path`, `unreadable`, `login-required`, `not-in-audience`.",
    ),
    (
        "uid=",
        "The visitor's identity: the client address (an IPv6 network by `uid_ipv6_prefix`), or a login's hash.",
    ),
    ("room=", "The named room the path is in."),
    ("event=", "The room's event in its pre-queue or running."),
    ("p=", "The allow percentage in effect (decided lines)."),
    ("session=", "For an admission: `new`, `renewed` or `kept`."),
    (
        "transition=",
        "How a valid, expired token changed state: `session-expired`, `lottery-won`, `lottery-lost`, `ceiling-reached`, `queue-all`, `redeem-window-passed`; in FIFO mode `cutoff-reached`, `hold-expired`, `joined-line`; `left-line` (a FIFO place in random mode); `toll-unpaid` (a draw or admission held for an unpaid toll).",
    ),
    (
        "exp=",
        "Expiry of the token the visitor holds after the response, Unix seconds.",
    ),
    (
        "arr=",
        "FIFO: the visitor's place, Unix ms (the one held after the response, or the one admitted).",
    ),
    ("cutoff=", "FIFO: the cutoff in effect, Unix ms, or `none`."),
    (
        "toll=",
        "The bot toll: bits owed after the response, or `paid` on the request that paid it.",
    ),
    (
        "path=",
        "The request's path, clipped to 200 bytes, as one word.",
    ),
    (
        "rejected=",
        "Why a presented cookie was not honoured (`malformed:...`, `uid-mismatch token_uid=...`, `unknown-key kid=...`, `unreadable-key kid=...`, `bad-signature`).",
    ),
    (
        "challenge=",
        "The external challenge's verification: `passed`, `failed` or `down`.",
    ),
    ("challenge_reason=", "Its codes."),
    (
        "ALERT=challenge-operator:",
        "The codes blame the service's setup.",
    ),
    (
        "ALERT=active-key-unusable:no-token-issued",
        "A token was due but `active_key` names no usable key (`kid=` follows).",
    ),
    ("kid=", "The active key's id."),
    (
        "ALERT=controller-stale",
        "The controller's heartbeat is stale.",
    ),
    (
        "ALERT=fifo-no-cutoff",
        "FIFO mode without a `fifo_cutoff`: nobody is admitted by FIFO.",
    ),
    (
        "WARN=weak-key",
        "A signing key shorter than 32 bytes was used (`kid=` follows).",
    ),
    ("kid=", "The weak key's id."),
    (
        "config_fallback=",
        "Settings whose values were unusable, each taking its fallback.",
    ),
    ("ALERT=old-layout", "The store is in the earlier layout."),
    (
        "ALERT=unreadable:",
        "Settings whose reads failed, each taking its outcome on a failed read.",
    ),
    (
        "pass=",
        "The id of the signed pass that let the visitor through.",
    ),
    ("event_ended=", "The event whose end closed the room."),
    ("pass_refused=", "Why a presented pass was refused."),
    (
        "login_refused=",
        "Why the request's login was refused (identity `login`).",
    ),
    (
        "origin_ms=",
        "Milliseconds from the send to the origin's response headers, rounded.",
    ),
    (
        "origin=cache",
        "Fastly's cache answered (the last `X-Cache` entry is `HIT`): no time.",
    ),
    (
        "origin_status=",
        "The status of the answer, the origin's or the cache's.",
    ),
    (
        "origin_error=",
        "The origin could not be reached: why (no time).",
    ),
    (
        "release=origin",
        "The origin ended the admitted visitor's session (`Waiting-Room-Release: 1`).",
    ),
    (
        "page_fallback=",
        "The built-in page stood in for the configured one: why.",
    ),
    (
        "ALERT=unreadable:",
        "Reads that failed outside the settings (a page, a signing key, a secret).",
    ),
];

/// The line before the field table in docs/reference/how-it-works.md.
pub const BEGIN: &str = "<!-- BEGIN the log fields generated from waiting_room::log::FIELDS -->";
/// The line after it.
pub const END: &str = "<!-- END of the generated log fields -->";

/// [`FIELDS`] as a Markdown table, for the docs.
pub fn reference() -> String {
    let mut table = String::from("| field | what it says |\n|---|---|\n");
    for (field, meaning) in FIELDS {
        let _ = writeln!(table, "| `{field}` | {meaning} |");
    }
    table
}

/// One request's log line, field by field ([`FIELDS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Unix seconds.
    pub t: u64,
    /// What the room did.
    pub kind: LineKind,
    /// The visitor's identity.
    pub uid: String,
    /// The named room, if any.
    pub room: Option<String>,
    /// The room's event in its pre-queue or running.
    pub event: Option<String>,
    /// The request's path, clipped.
    pub path: String,
    /// Why a presented cookie was not honoured.
    pub rejected: Option<Rejection>,
    /// The external challenge's verification, if one was made.
    pub challenge: Option<Outcome>,
    /// The active key id, when a token was due and it named no usable key.
    pub key_unusable: Option<String>,
    /// The controller's heartbeat is stale.
    pub controller_stale: bool,
    /// The id of a weak key this request used.
    pub weak_key: Option<String>,
    /// Settings whose values were unusable.
    pub config_fallback: Vec<&'static str>,
    /// The store is in the earlier layout.
    pub old_layout: bool,
    /// Settings whose reads failed.
    pub unreadable: Vec<String>,
    /// The id of the pass that let the visitor through.
    pub pass: Option<String>,
    /// The event whose end closed the room.
    pub event_ended: Option<String>,
    /// Why a presented pass was refused.
    pub pass_refused: Option<PassRefusal>,
    /// Why the request's login was refused.
    pub login_refused: Option<&'static str>,
    /// What came back from the origin, for a forwarded request.
    pub origin: Option<OriginReply>,
    /// The origin ended the session.
    pub release: bool,
    /// Why the built-in page stood in for the configured one.
    pub page_fallback: Option<String>,
    /// Reads that failed outside the settings.
    pub reads_failed: Vec<String>,
}

/// What the room did with the request, as the line's first fields say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// The room decided.
    Decided(Decided),
    /// The room did not apply (`scope=`).
    Bypass(&'static str),
    /// The room answered without deciding (`reason=`).
    Refused(&'static str),
}

/// The fields of a decided line before its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// The decision.
    pub decision: Decision,
    /// The percentage in effect.
    pub p: Percentage,
    /// For an admission: the session.
    pub session: Option<Session>,
    /// How a valid, expired token changed state.
    pub transition: Option<Transition>,
    /// The expiry of the token held after the response.
    pub exp: Option<u64>,
    /// FIFO: the place.
    pub arr: Option<u64>,
    /// FIFO mode: the cutoff in effect (`Some(None)`: none set).
    pub cutoff: Option<Option<u64>>,
    /// The bot toll.
    pub toll: Option<TollField>,
}

/// The line's `toll=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TollField {
    /// This request paid it.
    Paid,
    /// Bits owed after the response.
    Owed(u8),
}

/// What came back for a forwarded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginReply {
    /// An answer, with its status.
    Answered(Answered, u16),
    /// No answer: why.
    Error(String),
}

/// The response header by which Fastly says whether its cache answered a request
/// it forwarded (`HIT`) or the origin did (`MISS`); see [`Answered::of`].
pub const CACHE_HEADER: &str = "x-cache";

/// Who answered a forwarded request, as the log line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The origin: `ms` milliseconds from the send to the response's headers
    /// (logged `origin_ms=`).
    Origin {
        /// Milliseconds to the response's headers, rounded.
        ms: u64,
    },
    /// Fastly's cache (logged `origin=cache`, with no time): not an answer of
    /// the origin's, so not a measure of it.
    Cache,
}

impl Answered {
    /// Who answered a send that took `elapsed` to the response's headers, given the
    /// last value of its [`CACHE_HEADER`] (`None`: no such header).
    ///
    /// Fastly writes `X-Cache` into the responses its cache hands back, `HIT` when
    /// the cache answered (fresh, stale or revalidated) and `MISS` when the request
    /// went to the backend (a pass too), appended after any `X-Cache` the origin
    /// sent itself (the Rust SDK does it on its own cache path, as the host does on
    /// its): the last entry is the POP's. So the answer is the cache's when that
    /// entry is `HIT`, and the origin's otherwise, when the header is missing too
    /// (locally: Viceroy has no cache and writes none). `Response::get_backend_addr`
    /// (`None` when cached) is not the sign: Viceroy gives it for a pass only, which
    /// its source says Compute does too, so every answer would read as cached.
    pub fn of(x_cache: Option<&str>, elapsed: Duration) -> Answered {
        let pop = x_cache
            .and_then(|value| value.rsplit(',').next())
            .map(str::trim);
        if pop.is_some_and(|entry| entry.eq_ignore_ascii_case("HIT")) {
            return Answered::Cache;
        }
        let rounded = (elapsed.as_nanos() + 500_000) / 1_000_000;
        Answered::Origin {
            ms: u64::try_from(rounded).unwrap_or(u64::MAX),
        }
    }
}

impl LogLine {
    /// The line of a request the room did not decide on (`kind`: bypass or refused).
    pub fn undecided(
        now: u64,
        uid: &str,
        path: &str,
        kind: LineKind,
        context: &RequestContext,
    ) -> LogLine {
        LogLine {
            t: now,
            kind,
            uid: uid.to_string(),
            room: context.room.name().map(|name| name.to_string()),
            event: context.event.clone(),
            path: clip(path).to_string(),
            rejected: None,
            challenge: None,
            key_unusable: None,
            controller_stale: context.settings.controller_stale(now),
            weak_key: None,
            config_fallback: Vec::new(),
            old_layout: context.old_layout,
            unreadable: context.unreadable.clone(),
            pass: None,
            event_ended: None,
            pass_refused: None,
            login_refused: None,
            origin: None,
            release: false,
            page_fallback: None,
            reads_failed: Vec::new(),
        }
    }

    /// The line of a request the room decided.
    pub fn decided(
        now: u64,
        uid: &str,
        path: &str,
        verdict: &Verdict,
        context: &RequestContext,
    ) -> LogLine {
        let settings = &context.settings;
        let fifo = settings.queueing_method == QueueingMethod::Fifo;
        let toll = match (verdict.toll_paid, verdict.toll) {
            (true, _) => Some(TollField::Paid),
            (false, Some(due)) => Some(TollField::Owed(due.bits)),
            (false, None) => None,
        };
        let decided = Decided {
            decision: verdict.decision,
            p: settings.percentage_at(now),
            session: verdict.session,
            transition: verdict.transition,
            exp: verdict.exp,
            arr: verdict.arr,
            cutoff: fifo.then_some(settings.fifo_cutoff),
            toll,
        };
        LogLine {
            rejected: verdict.rejection.clone(),
            challenge: verdict.challenge.clone(),
            key_unusable: verdict
                .signing_key_missing
                .then(|| settings.active_key.clone()),
            weak_key: verdict.weak_key.clone(),
            config_fallback: context.fallbacks.clone(),
            event_ended: context.event_ended.clone(),
            ..LogLine::undecided(now, uid, path, LineKind::Decided(decided), context)
        }
    }
}

/// The line for a request the room decided, as text (the simulator's and the tools').
pub fn decision_line(
    now: u64,
    uid: &str,
    path: &str,
    verdict: &Verdict,
    context: &RequestContext,
) -> String {
    LogLine::decided(now, uid, path, verdict, context).line()
}

/// Room for a whole line without growing: the fixed fields (208 bytes hold the
/// longest a one-room admission writes before its path), the longest path and the
/// origin's answer after it (` origin_ms=<ms> origin_status=<status>`: 40 bytes
/// hold a time of up to eleven digits).
const LINE_CAPACITY: usize = 208 + MAX_LOGGED_PATH + 40;

impl LogLine {
    /// The line as written, in one buffer sized for it.
    pub fn line(&self) -> String {
        let mut line = String::with_capacity(LINE_CAPACITY);
        self.write_head(&mut line);
        line.push_str(" path=");
        push_word(&mut line, &self.path);
        self.write_alerts(&mut line);
        self.write_after(&mut line);
        line
    }

    /// The fields before the path.
    fn write_head(&self, line: &mut String) {
        let _ = write!(line, "{PREFIX} t={} decision=", self.t);
        let decided = match &self.kind {
            LineKind::Decided(decided) => {
                let _ = write!(line, "{}", decided.decision);
                Some(decided)
            }
            LineKind::Bypass(scope) => {
                let _ = write!(line, "bypass scope={scope}");
                None
            }
            LineKind::Refused(reason) => {
                let _ = write!(line, "refused reason={reason}");
                None
            }
        };
        let _ = write!(line, " uid={}", self.uid);
        if let Some(room) = &self.room {
            let _ = write!(line, " room={room}");
        }
        if let Some(event) = &self.event {
            let _ = write!(line, " event={event}");
        }
        if let Some(decided) = decided {
            decided.write(line);
        }
    }

    /// The fields from the rejection to the store's alerts.
    fn write_alerts(&self, line: &mut String) {
        if let Some(rejection) = &self.rejected {
            let _ = write!(line, " rejected={rejection}");
        }
        push_challenge(line, self.challenge.as_ref());
        if let Some(kid) = &self.key_unusable {
            let _ = write!(
                line,
                " ALERT=active-key-unusable:no-token-issued kid={}",
                kid.escape_debug()
            );
        }
        if self.controller_stale {
            line.push_str(" ALERT=controller-stale");
        }
        if let LineKind::Decided(Decided {
            cutoff: Some(None), ..
        }) = self.kind
        {
            line.push_str(" ALERT=fifo-no-cutoff");
        }
        if let Some(kid) = &self.weak_key {
            let _ = write!(line, " WARN=weak-key kid={}", kid.escape_debug());
        }
        if !self.config_fallback.is_empty() {
            line.push_str(" config_fallback=");
            line.push_str(&self.config_fallback.join(","));
        }
        if self.old_layout {
            line.push_str(" ALERT=old-layout");
        }
        push_unreadable(line, &self.unreadable);
    }

    /// The fields the room learns after its decision.
    fn write_after(&self, line: &mut String) {
        push_field(line, "pass", self.pass.as_ref());
        push_field(line, "event_ended", self.event_ended.as_ref());
        push_field(line, "pass_refused", self.pass_refused.as_ref());
        push_field(line, "login_refused", self.login_refused.as_ref());
        match &self.origin {
            Some(OriginReply::Answered(Answered::Origin { ms }, status)) => {
                let _ = write!(line, " origin_ms={ms} origin_status={status}");
            }
            Some(OriginReply::Answered(Answered::Cache, status)) => {
                let _ = write!(line, " origin=cache origin_status={status}");
            }
            Some(OriginReply::Error(why)) => push_field(line, "origin_error", Some(why)),
            None => {}
        }
        if self.release {
            line.push_str(" release=origin");
        }
        push_field(line, "page_fallback", self.page_fallback.as_ref());
        push_unreadable(line, &self.reads_failed);
    }
}

impl Decided {
    /// `p=` to `toll=`.
    fn write(&self, line: &mut String) {
        let _ = write!(line, " p={}", self.p);
        if let Some(session) = self.session {
            let _ = write!(line, " session={session}");
        }
        if let Some(transition) = self.transition {
            let _ = write!(line, " transition={transition}");
        }
        if let Some(exp) = self.exp {
            let _ = write!(line, " exp={exp}");
        }
        if let Some(arr) = self.arr {
            let _ = write!(line, " arr={arr}");
        }
        match self.cutoff {
            Some(Some(cutoff)) => drop(write!(line, " cutoff={cutoff}")),
            Some(None) => line.push_str(" cutoff=none"),
            None => {}
        }
        match self.toll {
            Some(TollField::Paid) => line.push_str(" toll=paid"),
            Some(TollField::Owed(bits)) => drop(write!(line, " toll={bits}")),
            None => {}
        }
    }
}

/// Appends the external challenge's verification, if one was made. A reason is
/// `[a-z0-9,-]` only ([`crate::bots::challenge::Reason`]): one word as it is.
fn push_challenge(line: &mut String, outcome: Option<&Outcome>) {
    let Some(outcome) = outcome else {
        return;
    };
    let _ = write!(line, " challenge={}", outcome.word());
    if let Some(reason) = outcome.reason() {
        let _ = write!(line, " challenge_reason={reason}");
        if reason.blames_operator() {
            let _ = write!(line, " ALERT=challenge-operator:{reason}");
        }
    }
}

/// Appends ` ALERT=unreadable:<keys>` when some store reads failed.
fn push_unreadable(line: &mut String, keys: &[String]) {
    if keys.is_empty() {
        return;
    }
    line.push_str(" ALERT=unreadable:");
    push_word(line, &keys.join(","));
}

/// Appends ` key=value` when there is a value, the value escaped as one word.
fn push_field(line: &mut String, key: &str, value: Option<&impl fmt::Display>) {
    if let Some(value) = value {
        let _ = write!(line, " {key}=");
        push_word(line, &value.to_string());
    }
}

/// The path, cut to [`MAX_LOGGED_PATH`] bytes on a character boundary.
fn clip(path: &str) -> &str {
    let mut end = path.len().min(MAX_LOGGED_PATH);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    &path[..end]
}

/// Appends `text` as one field value: control characters escaped (as
/// `str::escape_debug` does), spaces written `%20`.
fn push_word(line: &mut String, text: &str) {
    // Visible ASCII other than the quotes and the backslash is its own escape, and
    // holds no space: the common case, copied as it is.
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'\\' | b'\'' | b'"'));
    if plain {
        line.push_str(text);
    } else {
        line.push_str(&text.escape_debug().to_string().replace(' ', "%20"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::config::Settings;

    #[test]
    fn every_word_the_line_writes_reads_back() {
        for d in Decision::ALL {
            assert_eq!(d.to_string().parse(), Ok(d));
        }
        for t in Transition::ALL {
            assert_eq!(t.to_string().parse(), Ok(t));
        }
        for s in Session::ALL {
            assert_eq!(s.to_string().parse(), Ok(s));
        }
        assert!("bypass".parse::<Decision>().is_err());
        assert!("Allow".parse::<Decision>().is_err());
        assert!("".parse::<Session>().is_err());
    }

    #[test]
    fn the_percentage_is_written_as_its_shortest_exact_text() {
        use crate::admission::decision::CookieAction;
        let verdict = Verdict {
            decision: Decision::Wait,
            cookie: CookieAction::Keep,
            rejection: None,
            transition: None,
            signing_key_missing: false,
            unread: false,
            wait_exp: Some(60),
            arr: None,
            session: None,
            exp: Some(60),
            weak_key: None,
            pop_count: None,
            toll: None,
            toll_paid: false,
            challenge: None,
        };
        for text in ["0", "1", "50", "100", "12.5", "0.0001", "33.3333", "99.99"] {
            let settings = Settings {
                allow_percentage: text.parse().unwrap(),
                ..Settings::default()
            };
            assert_eq!(
                decision_line(5, "192.0.2.1", "/e", &verdict, &settings.into()),
                format!("waitingroom t=5 decision=wait uid=192.0.2.1 p={text} exp=60 path=/e")
            );
        }
    }

    #[test]
    fn a_long_admission_and_its_origin_answer_fit_the_lines_capacity() {
        use crate::admission::decision::CookieAction;
        let verdict = Verdict {
            decision: Decision::Allow,
            cookie: CookieAction::Keep,
            rejection: None,
            transition: Some(Transition::LotteryWon),
            signing_key_missing: false,
            unread: false,
            wait_exp: None,
            arr: Some(1_700_000_000_123),
            session: Some(Session::Renewed),
            exp: Some(1_700_003_623),
            weak_key: None,
            pop_count: None,
            toll: None,
            toll_paid: true,
            challenge: None,
        };
        let settings = Settings {
            allow_percentage: "12.3456".parse().unwrap(),
            queueing_method: QueueingMethod::Fifo,
            fifo_cutoff: Some(1_699_999_990_000),
            ..Settings::default()
        };
        let uid = "2001:db8:85a3:1234:5678:8a2e:370:7334";
        let path = format!("/{}", "e".repeat(MAX_LOGGED_PATH));
        let mut record = LogLine::decided(1_700_000_023, uid, &path, &verdict, &settings.into());
        let answered = Answered::Origin { ms: 12_345_678_901 };
        record.origin = Some(OriginReply::Answered(answered, 503));
        let line = record.line();
        assert!(line.len() <= LINE_CAPACITY, "{} bytes: {line}", line.len());
    }

    #[test]
    fn a_verification_goes_after_the_path_and_an_operators_mistake_alerts() {
        use crate::bots::challenge::Reason;
        let mut line = String::from("x path=/e");
        push_challenge(&mut line, None);
        assert_eq!(line, "x path=/e");
        for (outcome, fields) in [
            (Outcome::Passed, " challenge=passed"),
            (
                Outcome::Failed(Reason::from_codes(["invalid-input-response"])),
                " challenge=failed challenge_reason=invalid-input-response",
            ),
            (
                Outcome::unreachable("HTTP response timeout"),
                " challenge=down challenge_reason=send-http-response-timeout",
            ),
            (
                Outcome::Failed(Reason::from_codes(["missing-input-secret"])),
                " challenge=failed challenge_reason=missing-input-secret \
                 ALERT=challenge-operator:missing-input-secret",
            ),
        ] {
            let mut line = String::from("x path=/e");
            push_challenge(&mut line, Some(&outcome));
            assert_eq!(line, format!("x path=/e{fields}"));
        }
    }

    /// The path, clipped and written as one word.
    fn clipped(path: &str) -> String {
        let mut line = String::new();
        push_word(&mut line, clip(path));
        line
    }

    #[test]
    fn a_path_with_spaces_stays_one_field() {
        assert_eq!(
            clipped("/events x=1 decision=allow"),
            "/events%20x=1%20decision=allow"
        );
        assert_eq!(clipped("/\u{7}\n"), "/\\u{7}\\n");
        let long = "/é".repeat(300);
        assert!(clipped(&long).len() <= MAX_LOGGED_PATH);
    }

    /// The escape of one word, as the room always wrote it.
    fn reference_word(text: &str) -> String {
        text.escape_debug().to_string().replace(' ', "%20")
    }

    #[test]
    fn plain_words_are_copied_and_the_rest_escaped_as_before() {
        let mut texts: Vec<String> = (0..=0x7f_u8).map(|b| format!("/a{}b", b as char)).collect();
        texts.extend(
            [
                "/events",
                "",
                "/é",
                "/\u{301}x",
                "\u{301}x",
                "/\u{200b}",
                "/a'b\"c\\d",
                "/\t\r\n",
            ]
            .map(String::from),
        );
        for text in texts {
            let mut line = String::from("x");
            push_word(&mut line, &text);
            assert_eq!(line, format!("x{}", reference_word(&text)), "{text:?}");
        }
    }

    /// A line with every field its kind can carry.
    fn full_line(kind: LineKind, origin: OriginReply) -> String {
        use crate::bots::challenge::Reason;
        let settings = Settings::default();
        let mut line = LogLine::undecided(7, "192.0.2.1", "/e", kind, &settings.into());
        line.room = Some("drops".into());
        line.event = Some("drop-1".into());
        line.rejected = Some(Rejection::BadSignature);
        line.challenge = Some(Outcome::Failed(Reason::from_codes([
            "missing-input-secret",
        ])));
        line.key_unusable = Some("k".into());
        line.controller_stale = true;
        line.weak_key = Some("w".into());
        line.config_fallback = vec!["rooms"];
        line.old_layout = true;
        line.unreadable = vec!["settings".into()];
        line.pass = Some("p1".into());
        line.event_ended = Some("drop-0".into());
        line.pass_refused = Some(PassRefusal::Expired);
        line.login_refused = Some("expired");
        line.origin = Some(origin);
        line.release = true;
        line.page_fallback = Some("origin:503".into());
        line.reads_failed = vec!["signing-key".into()];
        line.line()
    }

    #[test]
    fn every_field_is_listed_once_in_the_order_written() {
        let decided = LineKind::Decided(Decided {
            decision: Decision::Wait,
            p: Percentage::whole(50),
            session: Some(Session::Kept),
            transition: Some(Transition::JoinedLine),
            exp: Some(9),
            arr: Some(8),
            cutoff: Some(Some(7)),
            toll: Some(TollField::Paid),
        });
        let no_cutoff = LineKind::Decided(Decided {
            cutoff: Some(None),
            toll: Some(TollField::Owed(3)),
            ..match &decided {
                LineKind::Decided(d) => d.clone(),
                _ => unreachable!(),
            }
        });
        let cache = OriginReply::Answered(Answered::Cache, 200);
        let lines = [
            full_line(
                decided,
                OriginReply::Answered(Answered::Origin { ms: 5 }, 200),
            ),
            full_line(no_cutoff, cache.clone()),
            full_line(LineKind::Bypass("pass"), OriginReply::Error("down".into())),
            full_line(LineKind::Refused("unreadable"), cache),
        ];
        let mut listed = vec![false; FIELDS.len()];
        for line in &lines {
            let mut words = line.split(' ');
            assert_eq!(words.next(), Some(PREFIX));
            let mut at = 0;
            for word in words {
                // The first field at or after the previous one that begins the word.
                let found = (at..FIELDS.len()).find(|&i| word.starts_with(FIELDS[i].0));
                let i =
                    found.unwrap_or_else(|| panic!("{word:?} unlisted or out of order: {line}"));
                listed[i] = true;
                at = i + 1;
            }
        }
        let unwritten: Vec<_> = FIELDS.iter().zip(&listed).filter(|(_, l)| !**l).collect();
        assert!(unwritten.is_empty(), "listed, never written: {unwritten:?}");
    }

    #[test]
    fn every_transition_is_named_in_the_fields_table() {
        let (_, meaning) = FIELDS.iter().find(|(f, _)| *f == "transition=").unwrap();
        for t in Transition::ALL {
            assert!(meaning.contains(&format!("`{t}`")), "{t} missing");
        }
    }
}
