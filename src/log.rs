//! The one log line each request gets, and [`Record`], what a reader of the log
//! (the controller) takes from it. The line never contains a key or a cookie.
//!
//! ```text
//! waitingroom t=1700000023 decision=allow uid=192.0.2.10 p=12.5 session=new transition=lottery-won exp=1700003623 path=/events
//! waitingroom t=1700000023 decision=bypass scope=unprotected-path uid=192.0.2.10 path=/about
//! waitingroom t=1700000023 decision=wait uid=192.0.2.10 p=50 exp=1700000300 arr=1700000000123 cutoff=1699999990000 path=/events
//! waitingroom t=1700000023 decision=anon uid=192.0.2.10 room=drops event=drop-1 p=100 exp=1700000096 path=/drops/1
//! ```
//!
//! A named room's lines carry `room=` after `uid=`, and `event=` while one of its
//! events is in its pre-queue or runs ([`crate::settings::room`], [`crate::settings::events`]).
//!
//! While the room asks a bot toll, a waiting visitor's line carries `toll=<bits>`
//! they owe, and the line of the request that paid it `toll=paid`; a draw or an
//! admission that came unpaid is `transition=toll-unpaid` ([`crate::bots::toll`]).
//! Under an external challenge ([`crate::bots::challenge`]) the request that verified
//! the provider's token says how, after the path (the token is the visitor's):
//! `challenge=passed|failed|down challenge_reason=<codes>`, with
//! `ALERT=challenge-operator:<codes>` when the codes blame the service's setup.
//!
//! In FIFO mode (`queueing_method = fifo`) a decided line also carries the visitor's
//! place (`arr`, Unix ms: the one held after the response, or the one admitted)
//! and the cutoff in effect (`cutoff`, Unix ms, or `none` with
//! `ALERT=fifo-no-cutoff`: nobody is admitted by FIFO).
//!
//! A request the room forwards says, after the path, what came back
//! ([`crate::answer::Answered`]), admitted and bypassed alike:
//!
//! ```text
//! waitingroom t=1700000023 decision=allow uid=192.0.2.10 p=12.5 session=kept path=/events origin_ms=42 origin_status=200
//! waitingroom t=1700000023 decision=bypass scope=unprotected-path uid=192.0.2.10 path=/logo.png origin=cache origin_status=200
//! waitingroom t=1700000023 decision=allow uid=192.0.2.10 p=12.5 session=kept path=/events origin_error=connection%20refused
//! ```
//!
//! `origin_ms` is the time from the send to the response's headers (milliseconds,
//! rounded) and `origin_status` its status, for every answer of the origin's; an
//! answer of Fastly's cache is `origin=cache` with its status and no time (the last
//! entry of the response's `X-Cache` is `HIT`: the POP's own). A timeout or a
//! connection error is `origin_error=<why>` and no time. A reader measures the origin
//! on `origin_ms` with `origin_status` and on `origin_error`, never on a cached
//! answer. Inside the room an origin 5xx is the room's origin-unavailable page, the
//! line keeping the origin's status.
//!
//! A request whose store reads failed ends its line with `ALERT=unreadable:<keys>`
//! ([`crate::settings::row::Unreadable`]); one the room refuses says
//! `decision=refused reason=ambiguous-path|unreadable`, and a live session let on
//! while a read failed `decision=bypass scope=live-session`.
//!
//! Fields are `key=value` pairs separated by single spaces; no value contains a
//! space (the path's spaces are written `%20`), so a reader splits on spaces and
//! takes the first occurrence of each key. The fields a reader counts on (`t`,
//! `decision`, `uid`, `p`, `session`, `transition`, `exp`, `arr`, `cutoff`) come
//! before anything a visitor can influence (the path, a rejected token's key id).
//! The origin's (`origin_ms`, `origin_status`, `origin_error`, `origin`) come after
//! the path, as the room learns them after the line is begun: the path and every
//! field a visitor shapes are one word each behind their own key, so no visitor can
//! write one of them.

use std::fmt::{self, Write as _};

use crate::admission::decision::Verdict;
use crate::bots::challenge::Outcome;
use crate::settings::config::QueueingMethod;
use crate::settings::context::RequestContext;

/// The first word of every line.
pub const PREFIX: &str = "waitingroom";
/// Longest request path copied into a log line, in bytes.
const MAX_LOGGED_PATH: usize = 200;
/// Appended when the origin ended the visitor's session.
pub const RELEASE_FIELD: &str = " release=origin";
/// Appended to every line while the controller's heartbeat is stale.
pub const STALE_FIELD: &str = " ALERT=controller-stale";
/// Appended to decided lines in FIFO mode while no `fifo_cutoff` is set.
pub const NO_CUTOFF_FIELD: &str = " ALERT=fifo-no-cutoff";
/// Appended to every line while the store is in the earlier layout.
pub const OLD_LAYOUT_FIELD: &str = " ALERT=old-layout";

/// The line for a request the room did not apply to (`scope`: why).
pub fn bypass_line(
    now: u64,
    uid: &str,
    path: &str,
    scope: &str,
    context: &RequestContext,
) -> String {
    undecided_line(
        now,
        uid,
        path,
        format_args!("bypass scope={scope}"),
        context,
    )
}

/// The line for a request the room refuses (`reason`: why).
pub fn refused_line(
    now: u64,
    uid: &str,
    path: &str,
    reason: &str,
    context: &RequestContext,
) -> String {
    undecided_line(
        now,
        uid,
        path,
        format_args!("refused reason={reason}"),
        context,
    )
}

/// A line without a decision of the room's: `decision=` then `what`, the uid, the
/// room, the path and the controller's staleness.
fn undecided_line(
    now: u64,
    uid: &str,
    path: &str,
    what: std::fmt::Arguments<'_>,
    context: &RequestContext,
) -> String {
    let settings = &context.settings;
    let mut line = String::with_capacity(LINE_CAPACITY);
    let _ = write!(line, "{PREFIX} t={now} decision={what} uid={uid}");
    push_room(&mut line, context);
    line.push_str(" path=");
    push_clipped(&mut line, path);
    if settings.controller_stale(now) {
        line.push_str(STALE_FIELD);
    }
    push_store_alerts(&mut line, context);
    line
}

/// Appends what the store's reads found: ` ALERT=old-layout`, ` ALERT=unreadable:<keys>`.
fn push_store_alerts(line: &mut String, context: &RequestContext) {
    if context.old_layout {
        line.push_str(OLD_LAYOUT_FIELD);
    }
    push_unreadable(line, &context.unreadable);
}

/// Appends ` ALERT=unreadable:<keys>` when some store reads failed (config keys,
/// a page, a signing key, a secret): each took its unreadable outcome.
pub fn push_unreadable(line: &mut String, keys: &[String]) {
    if keys.is_empty() {
        return;
    }
    line.push_str(" ALERT=unreadable:");
    push_word(line, &keys.join(","));
}

/// Room for a whole line without growing: the fixed fields (208 bytes hold the
/// longest a one-room admission writes before its path), the longest path and the
/// origin's answer after it (` origin_ms=<ms> origin_status=<status>`: 40 bytes
/// hold a time of up to eleven digits).
const LINE_CAPACITY: usize = 208 + MAX_LOGGED_PATH + 40;

/// The line for a request the room decided.
pub fn decision_line(
    now: u64,
    uid: &str,
    path: &str,
    verdict: &Verdict,
    context: &RequestContext,
) -> String {
    let settings = &context.settings;
    // Writing to a String cannot fail: the results of `write!` are dropped.
    let mut line = String::with_capacity(LINE_CAPACITY);
    let _ = write!(
        line,
        "{PREFIX} t={now} decision={} uid={uid}",
        verdict.decision,
    );
    push_room(&mut line, context);
    let _ = write!(line, " p={}", settings.percentage_at(now));
    if let Some(session) = verdict.session {
        let _ = write!(line, " session={session}");
    }
    if let Some(transition) = verdict.transition {
        let _ = write!(line, " transition={transition}");
    }
    if let Some(exp) = verdict.exp {
        let _ = write!(line, " exp={exp}");
    }
    let fifo = settings.queueing_method == QueueingMethod::Fifo;
    if let Some(arr) = verdict.arr {
        let _ = write!(line, " arr={arr}");
    }
    if fifo {
        match settings.fifo_cutoff {
            Some(cutoff) => drop(write!(line, " cutoff={cutoff}")),
            None => line.push_str(" cutoff=none"),
        }
    }
    // The bot toll: `paid` on the request that paid it, else the bits the
    // visitor owes after the response.
    if verdict.toll_paid {
        line.push_str(" toll=paid");
    } else if let Some(due) = verdict.toll {
        let _ = write!(line, " toll={}", due.bits);
    }
    line.push_str(" path=");
    push_clipped(&mut line, path);
    if let Some(rejection) = &verdict.rejection {
        let _ = write!(line, " rejected={rejection}");
    }
    push_challenge(&mut line, verdict.challenge.as_ref());
    if verdict.signing_key_missing {
        let _ = write!(
            line,
            " ALERT=active-key-unusable:no-token-issued kid={}",
            settings.active_key.escape_debug()
        );
    }
    if settings.controller_stale(now) {
        line.push_str(STALE_FIELD);
    }
    if fifo && settings.fifo_cutoff.is_none() {
        line.push_str(NO_CUTOFF_FIELD);
    }
    if let Some(kid) = &verdict.weak_key {
        let _ = write!(line, " WARN=weak-key kid={}", kid.escape_debug());
    }
    if !context.fallbacks.is_empty() {
        line.push_str(" config_fallback=");
        line.push_str(&context.fallbacks.join(","));
    }
    push_store_alerts(&mut line, context);
    line
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

/// Appends ` room=<name>` for a named room, and ` event=<name>` while an event
/// is in its pre-queue or runs (names are plain words).
fn push_room(line: &mut String, context: &RequestContext) {
    if let Some(name) = context.room.name() {
        let _ = write!(line, " room={name}");
    }
    if let Some(event) = &context.event {
        let _ = write!(line, " event={event}");
    }
}

/// Appends ` key=value` to `line`, the value escaped as one word.
pub fn push_field(line: &mut String, key: &str, value: impl fmt::Display) {
    let _ = write!(line, " {key}=");
    push_word(line, &value.to_string());
}

/// The path, cut to [`MAX_LOGGED_PATH`] bytes on a character boundary, as one word.
#[cfg(test)]
fn clip(path: &str) -> String {
    let mut line = String::new();
    push_clipped(&mut line, path);
    line
}

/// Appends the path, cut to [`MAX_LOGGED_PATH`] bytes on a character boundary, as
/// one word.
fn push_clipped(line: &mut String, path: &str) {
    let mut end = path.len().min(MAX_LOGGED_PATH);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    push_word(line, &path[..end]);
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
    use crate::admission::decision::{Decision, Session, Transition};
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
        let mut line = decision_line(1_700_000_023, uid, &path, &verdict, &settings.into());
        push_field(&mut line, "origin_ms", 12_345_678_901_u64);
        push_field(&mut line, "origin_status", 503);
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

    #[test]
    fn a_path_with_spaces_stays_one_field() {
        assert_eq!(
            clip("/events x=1 decision=allow"),
            "/events%20x=1%20decision=allow"
        );
        assert_eq!(clip("/\u{7}\n"), "/\\u{7}\\n");
        let long = "/é".repeat(300);
        assert!(clip(&long).len() <= MAX_LOGGED_PATH);
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
}
