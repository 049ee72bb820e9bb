//! The closed loop: a controller of the room's own (a [`Frame`] of either
//! policy: [`control::percentage_rule::Controller`] in random mode,
//! [`control::fifo_rule::FifoController`] in FIFO mode) on the simulator's virtual clock. Every request's log line is
//! written by the room's own [`waiting_room::log::decision_line`] and read back
//! by the room's own [`control::record::Record`] parser, `log_delay` seconds
//! after the request, so the controller reads exactly the contract the live
//! controller reads. It ticks every `tick` seconds; each write reaches the
//! room's settings `propagation_delay` seconds later.
//!
//! Several rooms of one service write one log stream: each controller is fed
//! every line of it (as `wrctl control` is fed a `tee` of the stream) and counts
//! only the lines of its own room, as `wrctl control --room` does.

use std::collections::VecDeque;
use std::time::Instant;

use control::frame::{Frame, Policy};
use control::record::{BadLine, Record};
use control::snapshot::Counters;
use control::store_write::StoreWrite as _;
use waiting_room::admission::decision::Verdict;
use waiting_room::log;
use waiting_room::settings::config::Settings;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::room::RoomName;

use crate::origin_model::Origin;
use crate::scenario::Control;
use crate::scenario::START;

/// The path every simulated request asks for.
const PATH: &str = "/events";

/// One line of the log stream, as a controller reads it back.
pub type Line = Result<Record, BadLine>;

/// The log line of the request at Unix second `now` from `uid` that got
/// `verdict` in the room of `context`, written by the room's own code and read
/// back by the controller's.
pub fn line(now: u64, uid: &str, verdict: &Verdict, context: &RequestContext) -> Line {
    log::decision_line(now, uid, PATH, verdict, context).parse::<Record>()
}

/// What the controller did over a run.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Seconds (from the start) of each write, and the setting it moved (the
    /// percentage in millionths, or the FIFO cutoff), if it moved it.
    pub writes: Vec<(u64, Option<u64>)>,
    /// Addresses the controller counted as waiting, at each tick: (second, count).
    pub waiting: Vec<(u64, u64)>,
    /// The controller's counters at the end.
    pub counters: Counters,
    /// Nanoseconds spent writing and parsing log lines.
    pub log_nanos: u128,
    /// Nanoseconds spent inside the controller.
    pub controller_nanos: u128,
    /// The origin's minutes, when an origin was behind the room.
    pub origin: Option<Vec<crate::origin_model::OriginMinute>>,
    /// Times the origin rule's target turned.
    pub origin_direction_changes: u64,
}

/// The controller, its inbox of log records and the writes on their way to the edge.
pub struct ClosedLoop<P: Policy> {
    spec: Control,
    rule: Frame<P>,
    /// The named room it holds (`None`: the service room): only its lines count.
    room: Option<String>,
    /// Every room's lines count as its own (no room filter).
    every_room: bool,
    /// Log records in the order written, with the second they reach the controller.
    inbox: VecDeque<(u64, Record)>,
    /// Writes on their way, with the second they reach the edge.
    in_flight: VecDeque<(u64, P::Write)>,
    /// The origin behind the room, when the scenario has one: the sessions
    /// let in make requests of it, and their lines join the stream.
    origin: Option<Origin>,
    trace: Trace,
}

impl<P: Policy> ClosedLoop<P> {
    /// `rule` in the loop, with the delays and tick of `spec`.
    pub fn new(spec: Control, rule: Frame<P>) -> ClosedLoop<P> {
        ClosedLoop {
            spec,
            rule,
            room: None,
            every_room: false,
            inbox: VecDeque::new(),
            in_flight: VecDeque::new(),
            origin: None,
            trace: Trace::default(),
        }
    }

    /// With `origin` behind the room.
    pub fn with_origin(mut self, origin: Option<Origin>) -> ClosedLoop<P> {
        self.origin = origin;
        self
    }

    /// Holds the named room `room` (`None`: the service room): only the lines
    /// with its `room=` count.
    pub fn in_room(mut self, room: Option<&RoomName>) -> ClosedLoop<P> {
        self.room = room.map(RoomName::to_string);
        self
    }

    /// Counts every room's lines as its own room's: a controller without the
    /// room filter, to show what the filter keeps out.
    pub fn unfiltered(mut self) -> ClosedLoop<P> {
        self.every_room = true;
        self
    }

    /// A line of the stream, written at Unix second `now`, goes to the
    /// controller's inbox (an unreadable one is counted at once).
    pub fn read(&mut self, now: u64, line: Line) {
        match line {
            Ok(mut record) => {
                if let Some(origin) = &mut self.origin {
                    record.origin = origin.answer(now - START, &record);
                }
                self.inbox.push_back((now + self.spec.log_delay, record));
            }
            Err(_) => self.rule.bad_line(),
        }
    }

    /// Nanoseconds spent writing and parsing the lines of the controller's room.
    pub fn add_log_nanos(&mut self, nanos: u128) {
        self.trace.log_nanos += nanos;
    }

    /// Second `t` from the start begins: the log lines due reach the controller,
    /// it ticks when a tick is due, and the writes due reach `settings`.
    pub fn second(&mut self, t: u64, settings: &mut Settings) {
        let now = START + t;
        if let Some(origin) = &mut self.origin
            && t > 0
            && t.is_multiple_of(60)
        {
            let status = self.rule.snapshot(0).origin;
            origin.close_minute(
                t / 60,
                t,
                status.as_ref().map_or(0.0, |s| s.target),
                status.as_ref().map_or("", |s| s.state.as_str()),
                status.as_ref().and_then(|s| s.live_limit),
            );
        }
        let started = Instant::now();
        while self.inbox.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, record)) = self.inbox.pop_front() {
                // Another room's line is none of this controller's business.
                if !self.every_room && record.room != self.room {
                    continue;
                }
                self.rule.observe(&record, now);
            }
        }
        if t.is_multiple_of(self.spec.tick) {
            if let Some(write) = self.rule.tick(now) {
                // The config store takes the write at once; the edge sees it later.
                self.rule.written(&write, now);
                self.trace.writes.push((t, write.moved()));
                self.in_flight
                    .push_back((now + self.spec.propagation_delay, write));
            }
            self.trace.waiting.push((t, self.rule.snapshot(0).waiting));
        }
        self.trace.controller_nanos += started.elapsed().as_nanos();
        while self.in_flight.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, write)) = self.in_flight.pop_front() {
                write.land(settings);
            }
        }
    }

    /// What the controller did, and the controller as it ended.
    pub fn finish(mut self) -> (Trace, Frame<P>) {
        self.trace.counters = self.rule.snapshot(0).counters;
        let end = self.trace.waiting.last().map_or(0, |w| w.0);
        self.trace.origin = self.origin.map(|o| o.minutes(end));
        let status = self.rule.snapshot(0).origin;
        self.trace.origin_direction_changes = status.map_or(0, |s| s.direction_changes);
        (self.trace, self.rule)
    }
}
