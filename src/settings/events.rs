//! Scheduled events of a room (the `events` setting): a JSON array of
//!
//! ```json
//! {"name": "drop-1", "prequeue_start": "2026-12-01T09:30:00Z",
//!  "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
//!  "after_end": "ended", "settings": {"queueing_method": "fifo", "cookie_lifetime": 1800}}
//! ```
//!
//! Times are RFC 3339 or Unix seconds, on the edge's clock. From `prequeue_start`
//! (default: `start`) to `start` the room holds everyone who comes (queue-all;
//! in FIFO mode their places are shuffled into the line's first period at the
//! start, as with `queue_opens_at`); from `start` to `end` the event's `settings`
//! apply over the room's (except `allow_percentage` and `fifo_cutoff` while a
//! controller holds the room: its writes govern); after `end` the room is itself
//! again, or, with `"after_end": "ended"`, shows the ended page until the next
//! event's pre-queue.
//!
//! An event that does not parse, ends before it starts, opens its pre-queue after
//! its start, or overlaps another (from pre-queue to end) is ignored, with the
//! others that overlap it, and the line says `config_fallback=events`.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::settings::room::RoomName;
use crate::settings::unix_time;

/// Most events a schedule holds.
pub const MAX_EVENTS: usize = 50;

/// One event, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its name (a word, as room names are).
    pub name: RoomName,
    /// Unix seconds the pre-queue opens.
    pub prequeue_start: u64,
    /// Unix seconds the event starts.
    pub start: u64,
    /// Unix seconds it ends.
    pub end: u64,
    /// Whether the ended page shows after the end.
    pub ended_page: bool,
    /// Its settings, as the text each key's parser reads.
    pub settings: BTreeMap<String, String>,
}

/// Where a room stands in its schedule at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase<'a> {
    /// No event is near: the room's own settings.
    Idle,
    /// Before the event's start: everyone who comes waits.
    Prequeue(&'a Event),
    /// The event runs: its settings apply.
    Running(&'a Event),
    /// After an event that shows the ended page.
    Ended(&'a Event),
}

/// A room's events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The usable events, by start.
    pub events: Vec<Event>,
    /// Why events were ignored.
    pub problems: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventText {
    name: String,
    #[serde(default)]
    prequeue_start: Option<serde_json::Value>,
    start: serde_json::Value,
    end: serde_json::Value,
    #[serde(default)]
    after_end: Option<String>,
    #[serde(default)]
    settings: BTreeMap<String, serde_json::Value>,
}

/// A time as written: Unix seconds (a number), or text (RFC 3339 or Unix seconds).
fn seconds(time: &serde_json::Value) -> Option<u64> {
    match time {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(text) => unix_time::parse_seconds(text),
        _ => None,
    }
}

impl Schedule {
    /// Reads a schedule (see the module's documentation).
    pub fn parse(raw: &str) -> Schedule {
        let Ok(entries) = serde_json::from_str::<Vec<serde_json::Value>>(raw) else {
            return Schedule {
                events: Vec::new(),
                problems: vec!["events: not a JSON array of events".to_string()],
            };
        };
        let mut schedule = Schedule::default();
        for (i, entry) in entries.into_iter().enumerate() {
            if i == MAX_EVENTS {
                schedule
                    .problems
                    .push(format!("events: more than {MAX_EVENTS}"));
                break;
            }
            match Event::read(entry) {
                Ok(event) => schedule.events.push(event),
                Err(why) => schedule.problems.push(format!("event {}: {why}", i + 1)),
            }
        }
        schedule.events.sort_by_key(|e| e.prequeue_start);
        let overlapping: Vec<bool> = (0..schedule.events.len())
            .map(|i| {
                let e = &schedule.events[i];
                schedule.events.iter().enumerate().any(|(j, other)| {
                    j != i && e.prequeue_start < other.end && other.prequeue_start < e.end
                })
            })
            .collect();
        let mut kept = Vec::new();
        for (event, overlaps) in schedule.events.drain(..).zip(overlapping) {
            if overlaps {
                schedule
                    .problems
                    .push(format!("event {}: overlaps another", event.name));
            } else {
                kept.push(event);
            }
        }
        schedule.events = kept;
        schedule
    }

    /// Where the room stands at `now`.
    pub fn phase(&self, now: u64) -> Phase<'_> {
        if let Some(event) = self
            .events
            .iter()
            .find(|e| e.prequeue_start <= now && now < e.end)
        {
            return if now < event.start {
                Phase::Prequeue(event)
            } else {
                Phase::Running(event)
            };
        }
        match self.events.iter().rev().find(|e| e.end <= now) {
            Some(event) if event.ended_page => Phase::Ended(event),
            _ => Phase::Idle,
        }
    }
}

impl Event {
    fn read(value: serde_json::Value) -> Result<Event, String> {
        let text: EventText = serde_json::from_value(value).map_err(|e| e.to_string())?;
        let name = RoomName::new(&text.name).ok_or("a name is a word of a-z, 0-9, _ and -")?;
        let start = seconds(&text.start).ok_or("start is not a time")?;
        let end = seconds(&text.end).ok_or("end is not a time")?;
        let prequeue_start = match &text.prequeue_start {
            Some(time) => seconds(time).ok_or("prequeue_start is not a time")?,
            None => start,
        };
        if end <= start {
            return Err("it ends before it starts".to_string());
        }
        if prequeue_start > start {
            return Err("its pre-queue opens after its start".to_string());
        }
        let ended_page = match text.after_end.as_deref() {
            None | Some("resume") => false,
            Some("ended") => true,
            Some(other) => return Err(format!("after_end is resume or ended, not {other:?}")),
        };
        let settings = text
            .settings
            .iter()
            .filter_map(|(key, value)| {
                Some((key.clone(), crate::settings::config::text_of(value)?))
            })
            .collect();
        Ok(Event {
            name,
            prequeue_start,
            start,
            end,
            ended_page,
            settings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DROP: &str = r#"{"name": "drop", "prequeue_start": 1000, "start": "1970-01-01T00:20:00Z",
        "end": 2000, "after_end": "ended", "settings": {"queueing_method": "fifo", "cookie_lifetime": 60}}"#;

    #[test]
    fn an_event_runs_through_its_phases() {
        let s = Schedule::parse(&format!("[{DROP}]"));
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        let e = &s.events[0];
        assert_eq!((e.prequeue_start, e.start, e.end), (1000, 1200, 2000));
        assert_eq!(e.settings["queueing_method"], "fifo");
        assert_eq!(e.settings["cookie_lifetime"], "60");
        assert_eq!(s.phase(999), Phase::Idle);
        assert_eq!(s.phase(1000), Phase::Prequeue(e));
        assert_eq!(s.phase(1199), Phase::Prequeue(e));
        assert_eq!(s.phase(1200), Phase::Running(e));
        assert_eq!(s.phase(1999), Phase::Running(e));
        assert_eq!(s.phase(2000), Phase::Ended(e));
        let resume = Schedule::parse(&format!("[{}]", DROP.replace("\"ended\"", "\"resume\"")));
        assert_eq!(resume.phase(2000), Phase::Idle);
    }

    #[test]
    fn the_pre_queue_defaults_to_the_start_and_a_later_event_follows() {
        let s = Schedule::parse(
            r#"[{"name": "b", "start": 3000, "end": 4000},
                {"name": "a", "start": 1000, "end": 2000, "after_end": "ended"}]"#,
        );
        assert_eq!(s.events.len(), 2);
        assert_eq!(s.phase(999), Phase::Idle);
        assert!(matches!(s.phase(1000), Phase::Running(e) if e.name.as_str() == "a"));
        assert!(matches!(s.phase(2500), Phase::Ended(e) if e.name.as_str() == "a"));
        assert!(matches!(s.phase(3000), Phase::Running(e) if e.name.as_str() == "b"));
        assert_eq!(s.phase(4000), Phase::Idle);
    }

    #[test]
    fn bad_and_overlapping_events_are_ignored_and_named() {
        for (raw, kept, problems) in [
            ("not json", 0, 1),
            ("{}", 0, 1),
            (r#"[{"name": "a", "start": 2000, "end": 1000}]"#, 0, 1),
            (r#"[{"name": "a", "start": 2000, "end": 2000}]"#, 0, 1),
            (
                r#"[{"name": "a", "prequeue_start": 3000, "start": 2000, "end": 4000}]"#,
                0,
                1,
            ),
            (r#"[{"name": "a", "start": "tomorrow", "end": 4000}]"#, 0, 1),
            (r#"[{"name": "A b", "start": 1, "end": 4000}]"#, 0, 1),
            (
                r#"[{"name": "a", "start": 1, "end": 4, "after_end": "party"}]"#,
                0,
                1,
            ),
            (r#"[{"name": "a", "start": 1, "end": 4, "typo": 1}]"#, 0, 1),
            (
                r#"[{"name": "a", "start": 1000, "end": 2000},
                    {"name": "b", "prequeue_start": 1500, "start": 2500, "end": 3000},
                    {"name": "c", "start": 5000, "end": 6000}]"#,
                1,
                2,
            ),
        ] {
            let s = Schedule::parse(raw);
            assert_eq!(
                (s.events.len(), s.problems.len()),
                (kept, problems),
                "{raw}: {:?}",
                s.problems
            );
        }
    }
}
