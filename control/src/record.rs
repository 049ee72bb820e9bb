//! [`Record`]: what the controller reads from one room log line, as
//! `waiting_room::log` writes it (see that module for the line's fields).

use std::fmt;
use std::str::FromStr;

use waiting_room::admission::decision::{Decision, Session, Transition};
use waiting_room::log::PREFIX;
use waiting_room::settings::percentage::Percentage;

use crate::origin_rule::OriginAnswer;

/// What the controller reads from one log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Unix seconds of the request.
    pub t: u64,
    /// The room's decision; `None` when the room did not apply (`decision=bypass`).
    pub decision: Option<Decision>,
    /// The visitor's address.
    pub uid: String,
    /// The named room the request was in (`room=`); `None`: the service room.
    pub room: Option<String>,
    /// The room's event in its pre-queue or running (`event=`).
    pub event: Option<String>,
    /// The percentage in effect for the request (absent on bypass lines).
    pub percentage: Option<Percentage>,
    /// For an admitted request: new, renewed or kept session.
    pub session: Option<Session>,
    /// How a valid expired token changed state (a draw, when the lottery ran).
    pub transition: Option<Transition>,
    /// Expiry of the token the visitor holds after the response.
    pub exp: Option<u64>,
    /// FIFO: the visitor's place (Unix ms): held after the response, or admitted.
    pub arr: Option<u64>,
    /// FIFO: the cutoff in effect (Unix ms); `None` outside FIFO mode or when unset.
    pub cutoff: Option<u64>,
    /// Whether the line was written in FIFO mode (it carries `cutoff`).
    pub fifo: bool,
    /// The origin ended the visitor's session on this response.
    pub released: bool,
    /// The edge saw the controller's heartbeat as stale.
    pub controller_stale: bool,
    /// A store read of the request failed (`ALERT=unreadable:<keys>`): the room
    /// took each key's unreadable outcome.
    pub unreadable: bool,
    /// What the origin answered, when the request went to it (`origin_ms=` and
    /// `origin_status=`, or `origin_error=`); `None` for a request the room
    /// answered, or one Fastly's cache answered (`origin=cache`).
    pub origin: Option<OriginAnswer>,
}

impl Record {
    /// Whether this request was a lottery draw (won, lost, or won and held by
    /// the POP's ceiling).
    pub fn is_draw(&self) -> bool {
        matches!(
            self.transition,
            Some(Transition::LotteryWon | Transition::LotteryLost | Transition::CeilingReached)
        )
    }

    /// Whether this request started waiting: a visitor new to the room, or back
    /// after their session or token ran out.
    pub fn is_arrival(&self) -> bool {
        self.decision == Some(Decision::Anon)
    }
}

/// Why a line is not a room log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadLine {
    /// No `waitingroom` word: another program's line.
    NotRoomLine,
    /// A field the reader needs is missing.
    Missing(&'static str),
    /// A field's value does not parse.
    Unreadable(&'static str),
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadLine::NotRoomLine => f.write_str("not a waiting-room log line"),
            BadLine::Missing(field) => write!(f, "field {field} is missing"),
            BadLine::Unreadable(field) => write!(f, "field {field} is unreadable"),
        }
    }
}

impl std::error::Error for BadLine {}

impl FromStr for Record {
    type Err = BadLine;

    /// Reads a line as the room writes it, after any prefix a log pipeline adds
    /// (`waitingroom_log :: ` from Viceroy, a syslog header, …).
    fn from_str(line: &str) -> Result<Record, BadLine> {
        let mut words = line.split_ascii_whitespace();
        words
            .by_ref()
            .find(|w| *w == PREFIX)
            .ok_or(BadLine::NotRoomLine)?;
        let mut fields = Fields::default();
        for word in words {
            if let Some((key, value)) = word.split_once('=') {
                fields.take(key, value);
            }
        }
        let decision = match fields.decision.ok_or(BadLine::Missing("decision"))? {
            "bypass" | "refused" => None,
            word => Some(word.parse().map_err(|_| BadLine::Unreadable("decision"))?),
        };
        Ok(Record {
            t: parse_field("t", fields.t)?.ok_or(BadLine::Missing("t"))?,
            decision,
            uid: fields.uid.ok_or(BadLine::Missing("uid"))?.to_string(),
            room: fields.room.map(str::to_string),
            event: fields.event.map(str::to_string),
            percentage: parse_field("p", fields.p)?,
            session: parse_field("session", fields.session)?,
            transition: parse_field("transition", fields.transition)?,
            exp: parse_field("exp", fields.exp)?,
            arr: parse_field("arr", fields.arr)?,
            cutoff: parse_field("cutoff", fields.cutoff.filter(|c| *c != "none"))?,
            fifo: fields.cutoff.is_some(),
            released: fields.release == Some("origin"),
            controller_stale: fields.alerts.contains(&"controller-stale"),
            unreadable: fields.alerts.iter().any(|a| a.starts_with("unreadable:")),
            origin: origin(&fields)?,
        })
    }
}

impl Record {
    /// The room a room line names, read even when the rest of the line is bad:
    /// `Some(None)` for the service room (no `room=`), `None` for another
    /// program's line (no `waitingroom` word).
    pub fn room_of(line: &str) -> Option<Option<&str>> {
        let mut words = line.split_ascii_whitespace();
        words.by_ref().find(|w| *w == PREFIX)?;
        Some(words.find_map(|w| w.strip_prefix("room=")))
    }
}

/// The origin's answer a line records: a time and a status, or an error. A
/// status without a time (a line of a room from before the time was logged)
/// is no measurement.
fn origin(fields: &Fields<'_>) -> Result<Option<OriginAnswer>, BadLine> {
    if fields.origin_error.is_some() {
        return Ok(Some(OriginAnswer::Failed));
    }
    let ms = parse_field("origin_ms", fields.origin_ms)?;
    let status = parse_field("origin_status", fields.origin_status)?;
    Ok(match (ms, status) {
        (Some(ms), Some(status)) => Some(OriginAnswer::Answered { ms, status }),
        (Some(_), None) => return Err(BadLine::Missing("origin_status")),
        (None, _) => None,
    })
}

/// The first value of each key a reader needs.
#[derive(Default)]
struct Fields<'a> {
    t: Option<&'a str>,
    decision: Option<&'a str>,
    uid: Option<&'a str>,
    room: Option<&'a str>,
    event: Option<&'a str>,
    p: Option<&'a str>,
    session: Option<&'a str>,
    transition: Option<&'a str>,
    exp: Option<&'a str>,
    arr: Option<&'a str>,
    cutoff: Option<&'a str>,
    release: Option<&'a str>,
    origin_ms: Option<&'a str>,
    origin_status: Option<&'a str>,
    origin_error: Option<&'a str>,
    alerts: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn take(&mut self, key: &str, value: &'a str) {
        let slot = match key {
            "t" => &mut self.t,
            "decision" => &mut self.decision,
            "uid" => &mut self.uid,
            "room" => &mut self.room,
            "event" => &mut self.event,
            "p" => &mut self.p,
            "session" => &mut self.session,
            "transition" => &mut self.transition,
            "exp" => &mut self.exp,
            "arr" => &mut self.arr,
            "cutoff" => &mut self.cutoff,
            "release" => &mut self.release,
            "origin_ms" => &mut self.origin_ms,
            "origin_status" => &mut self.origin_status,
            "origin_error" => &mut self.origin_error,
            "ALERT" => return self.alerts.push(value),
            _ => return,
        };
        slot.get_or_insert(value);
    }
}

fn parse_field<T: FromStr>(name: &'static str, raw: Option<&str>) -> Result<Option<T>, BadLine> {
    raw.map(|text| text.parse().map_err(|_| BadLine::Unreadable(name)))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_field_a_controller_needs() {
        let line = "waitingroom_log :: waitingroom t=1700000023 decision=allow uid=2001:db8::1 \
                    p=12.5 session=new transition=lottery-won exp=1700003623 path=/events \
                    ALERT=controller-stale release=origin ALERT=unreadable:page.fr";
        let record: Record = line.parse().unwrap();
        assert_eq!(
            record,
            Record {
                t: 1_700_000_023,
                decision: Some(Decision::Allow),
                uid: "2001:db8::1".into(),
                room: None,
                event: None,
                percentage: Some("12.5".parse().unwrap()),
                session: Some(Session::New),
                transition: Some(Transition::LotteryWon),
                exp: Some(1_700_003_623),
                arr: None,
                cutoff: None,
                fifo: false,
                released: true,
                controller_stale: true,
                unreadable: true,
                origin: None,
            }
        );
        assert!(record.is_draw() && !record.is_arrival());
    }

    #[test]
    fn reads_what_the_origin_answered() {
        let read = |tail: &str| {
            format!("waitingroom t=5 decision=allow uid=192.0.2.1 p=5 session=kept path=/a {tail}")
                .parse::<Record>()
                .map(|r| r.origin)
        };
        assert_eq!(
            read("origin_ms=42 origin_status=200"),
            Ok(Some(OriginAnswer::Answered {
                ms: 42,
                status: 200
            }))
        );
        assert_eq!(
            read("origin_ms=3100 origin_status=503"),
            Ok(Some(OriginAnswer::Answered {
                ms: 3100,
                status: 503
            }))
        );
        assert_eq!(
            read("origin_error=connection-refused"),
            Ok(Some(OriginAnswer::Failed))
        );
        // Fastly's cache answered, the room answered, or a room that logged no time.
        assert_eq!(read("origin=cache"), Ok(None));
        assert_eq!(read(""), Ok(None));
        assert_eq!(read("origin_status=502"), Ok(None));
        assert_eq!(
            read("origin_ms=soon origin_status=200"),
            Err(BadLine::Unreadable("origin_ms"))
        );
        assert_eq!(read("origin_ms=5"), Err(BadLine::Missing("origin_status")));
        assert_eq!(
            read("origin_ms=5 origin_status=2000000"),
            Err(BadLine::Unreadable("origin_status"))
        );
    }

    #[test]
    fn reads_a_fifo_place_and_cutoff() {
        let line = "waitingroom t=1700000023 decision=wait uid=192.0.2.10 p=50 \
                    exp=1700000300 arr=1700000000123 cutoff=1699999990000 path=/events";
        let record: Record = line.parse().unwrap();
        assert_eq!(record.arr, Some(1_700_000_000_123));
        assert_eq!(record.cutoff, Some(1_699_999_990_000));
        assert!(record.fifo);
        let unset: Record = "waitingroom t=1 decision=anon uid=192.0.2.10 p=50 arr=1000 \
                             cutoff=none path=/events ALERT=fifo-no-cutoff"
            .parse()
            .unwrap();
        assert_eq!((unset.cutoff, unset.fifo), (None, true));
        assert_eq!(
            "waitingroom t=1 decision=wait uid=a p=5 arr=soon".parse::<Record>(),
            Err(BadLine::Unreadable("arr"))
        );
        assert_eq!(
            "waitingroom t=1 decision=wait uid=a p=5 cutoff=-3".parse::<Record>(),
            Err(BadLine::Unreadable("cutoff"))
        );
    }

    #[test]
    fn reads_the_room_of_a_named_rooms_line() {
        let r: Record =
            "waitingroom t=5 decision=wait uid=192.0.2.1 room=drops p=5 exp=9 path=/drops/room=x"
                .parse()
                .unwrap();
        assert_eq!(r.room.as_deref(), Some("drops"));
        let r: Record =
            "waitingroom t=5 decision=anon uid=192.0.2.1 room=drops event=drop-1 p=5 path=/"
                .parse()
                .unwrap();
        assert_eq!(r.event.as_deref(), Some("drop-1"));
        let r: Record =
            "waitingroom t=5 decision=bypass scope=disabled uid=192.0.2.1 room=drops path=/"
                .parse()
                .unwrap();
        assert_eq!((r.decision, r.room.as_deref()), (None, Some("drops")));
    }

    #[test]
    fn bypass_lines_have_no_decision() {
        let r: Record = "waitingroom t=5 decision=bypass scope=disabled uid=192.0.2.1 path=/"
            .parse()
            .unwrap();
        assert_eq!((r.t, r.decision, r.percentage), (5, None, None));
        let r: Record =
            "waitingroom t=6 decision=refused reason=ambiguous-path uid=192.0.2.1 path=//x"
                .parse()
                .unwrap();
        assert_eq!((r.t, r.decision), (6, None));
    }

    #[test]
    fn visitor_controlled_text_cannot_add_fields() {
        // A path and a key id are one word each (no spaces), so text that looks
        // like a field stays inside its own field.
        let r: Record = "waitingroom t=9 decision=anon uid=192.0.2.1 p=50 exp=99 \
                         path=/events/%20session=new rejected=unknown-key kid=release=origin"
            .parse()
            .unwrap();
        assert_eq!((r.t, r.session, r.released), (9, None, false));
        // And the counted fields come first: a repeated key keeps its first value.
        let r: Record = "waitingroom t=9 decision=anon uid=192.0.2.1 t=1 decision=allow"
            .parse()
            .unwrap();
        assert_eq!((r.t, r.decision), (9, Some(Decision::Anon)));
    }

    #[test]
    fn a_bad_room_line_still_names_its_room() {
        assert_eq!(Record::room_of("GET /events 200"), None);
        assert_eq!(Record::room_of("waitingroom t=x uid=a"), Some(None));
        assert_eq!(
            Record::room_of("waitingroom_log :: waitingroom t=x room=shop uid=a"),
            Some(Some("shop"))
        );
        // The first `room=` after the word, as the parser reads it.
        assert_eq!(
            Record::room_of("room=x waitingroom room=a room=b"),
            Some(Some("a"))
        );
    }

    #[test]
    fn lines_that_are_not_room_lines_or_lack_fields_are_refused() {
        for (line, why) in [
            ("", BadLine::NotRoomLine),
            ("GET /events 200", BadLine::NotRoomLine),
            ("waitingroom_log :: hello", BadLine::NotRoomLine),
            ("waitingroom decision=anon uid=a", BadLine::Missing("t")),
            ("waitingroom t=1 uid=a", BadLine::Missing("decision")),
            ("waitingroom t=1 decision=anon", BadLine::Missing("uid")),
            (
                "waitingroom t=x decision=anon uid=a",
                BadLine::Unreadable("t"),
            ),
            (
                "waitingroom t=-1 decision=anon uid=a",
                BadLine::Unreadable("t"),
            ),
            (
                "waitingroom t=1 decision=maybe uid=a",
                BadLine::Unreadable("decision"),
            ),
            (
                "waitingroom t=1 decision=anon uid=a p=lots",
                BadLine::Unreadable("p"),
            ),
            (
                "waitingroom t=1 decision=allow uid=a session=old",
                BadLine::Unreadable("session"),
            ),
            (
                "waitingroom t=1 decision=anon uid=a exp=soon",
                BadLine::Unreadable("exp"),
            ),
            (
                "waitingroom t=1 decision=anon uid=a transition=x",
                BadLine::Unreadable("transition"),
            ),
        ] {
            assert_eq!(line.parse::<Record>(), Err(why), "{line:?}");
        }
    }
}
