//! The closed loop: the room's own controller ([`waiting_room::control::Controller`])
//! on the simulator's virtual clock. Every request's log line is written by the
//! room's own [`waiting_room::log::decision_line`] and read back by the room's own
//! [`waiting_room::log::Record`] parser, `log_delay` seconds after the request, so
//! the controller reads exactly the contract the live controller reads. It ticks
//! every `tick` seconds; each write reaches the room's settings
//! `propagation_delay` seconds later.

use std::collections::VecDeque;
use std::time::Instant;

use waiting_room::config::{Heartbeat, Settings};
use waiting_room::control::{Controller, Counters, Write};
use waiting_room::decision::Verdict;
use waiting_room::log::{self, Record};

use crate::engine::START;
use crate::scenario::{Control, Room};

/// The path every simulated request asks for.
const PATH: &str = "/events";

/// What the controller did over a run.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Seconds (from the start) of each write, and the percentage it carried
    /// (millionths), if it changed it.
    pub writes: Vec<(u64, Option<u32>)>,
    /// Addresses the controller counted as waiting, at each tick: (second, count).
    pub waiting: Vec<(u64, u64)>,
    /// The controller's counters at the end.
    pub counters: Counters,
    /// Nanoseconds spent writing and parsing log lines.
    pub log_nanos: u128,
    /// Nanoseconds spent inside the controller.
    pub controller_nanos: u128,
}

/// The controller, its inbox of log records and the writes on their way to the edge.
pub struct ClosedLoop {
    spec: Control,
    controller: Controller,
    /// Log records in the order written, with the second they reach the controller.
    inbox: VecDeque<(u64, Record)>,
    /// Writes on their way, with the second they reach the edge.
    in_flight: VecDeque<(u64, Write)>,
    trace: Trace,
}

impl ClosedLoop {
    /// The loop of `spec` for `room`; `Err` when the controller refuses the options.
    pub fn new(spec: Control, room: &Room) -> Result<ClosedLoop, String> {
        let controller = Controller::new(spec.options(room)).map_err(|e| e.to_string())?;
        Ok(ClosedLoop {
            spec,
            controller,
            inbox: VecDeque::new(),
            in_flight: VecDeque::new(),
            trace: Trace::default(),
        })
    }

    /// The request at Unix second `now` from `uid` got `verdict`: its log line
    /// goes to the controller's inbox.
    pub fn logged(&mut self, now: u64, uid: &str, verdict: &Verdict, settings: &Settings) {
        let started = Instant::now();
        let line = log::decision_line(now, uid, PATH, verdict, settings);
        match line.parse::<Record>() {
            Ok(record) => self.inbox.push_back((now + self.spec.log_delay, record)),
            Err(_) => self.controller.bad_line(),
        }
        self.trace.log_nanos += started.elapsed().as_nanos();
    }

    /// Second `t` from the start begins: the log lines due reach the controller,
    /// it ticks when a tick is due, and the writes due reach `settings`.
    pub fn second(&mut self, t: u64, settings: &mut Settings) {
        let now = START + t;
        let started = Instant::now();
        while self.inbox.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, record)) = self.inbox.pop_front() {
                self.controller.observe(&record, now);
            }
        }
        if t.is_multiple_of(self.spec.tick) {
            if let Some(write) = self.controller.tick(now) {
                // The config store takes the write at once; the edge sees it later.
                self.controller.written(&write, now);
                self.trace
                    .writes
                    .push((t, write.allow_percentage.map(|p| p.micros())));
                self.in_flight
                    .push_back((now + self.spec.propagation_delay, write));
            }
            self.trace
                .waiting
                .push((t, self.controller.snapshot(0).waiting));
        }
        self.trace.controller_nanos += started.elapsed().as_nanos();
        while self.in_flight.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, write)) = self.in_flight.pop_front() {
                if let Some(p) = write.allow_percentage {
                    settings.allow_percentage = p;
                }
                settings.controller_heartbeat = Heartbeat::At(write.heartbeat);
            }
        }
    }

    /// What the controller did.
    pub fn finish(mut self) -> Trace {
        self.trace.counters = self.controller.counters();
        self.trace
    }
}
