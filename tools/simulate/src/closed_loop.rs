//! The closed loop: a controller of the room's own (any [`Rule`]:
//! [`control::Controller`] in random mode, [`control::fifo::FifoController`] in
//! FIFO mode) on the simulator's virtual clock. Every request's log line is
//! written by the room's own [`waiting_room::log::decision_line`] and read back
//! by the room's own [`control::record::Record`] parser, `log_delay` seconds
//! after the request, so the controller reads exactly the contract the live
//! controller reads. It ticks every `tick` seconds; each write reaches the
//! room's settings `propagation_delay` seconds later.

use std::collections::VecDeque;
use std::time::Instant;

use control::record::Record;
use control::rule::Write as _;
use control::{Counters, Rule};
use waiting_room::config::Settings;
use waiting_room::decision::Verdict;
use waiting_room::log;

use crate::engine::START;
use crate::scenario::Control;

/// The path every simulated request asks for.
const PATH: &str = "/events";

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
}

/// The controller, its inbox of log records and the writes on their way to the edge.
pub struct ClosedLoop<R: Rule> {
    spec: Control,
    rule: R,
    /// Log records in the order written, with the second they reach the controller.
    inbox: VecDeque<(u64, Record)>,
    /// Writes on their way, with the second they reach the edge.
    in_flight: VecDeque<(u64, R::Write)>,
    trace: Trace,
}

impl<R: Rule> ClosedLoop<R> {
    /// `rule` in the loop, with the delays and tick of `spec`.
    pub fn new(spec: Control, rule: R) -> ClosedLoop<R> {
        ClosedLoop {
            spec,
            rule,
            inbox: VecDeque::new(),
            in_flight: VecDeque::new(),
            trace: Trace::default(),
        }
    }

    /// The request at Unix second `now` from `uid` got `verdict`: its log line
    /// goes to the controller's inbox.
    pub fn logged(&mut self, now: u64, uid: &str, verdict: &Verdict, settings: &Settings) {
        let started = Instant::now();
        let line = log::decision_line(now, uid, PATH, verdict, settings);
        match line.parse::<Record>() {
            Ok(record) => self.inbox.push_back((now + self.spec.log_delay, record)),
            Err(_) => self.rule.bad_line(),
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
    pub fn finish(mut self) -> (Trace, R) {
        self.trace.counters = self.rule.snapshot(0).counters;
        (self.trace, self.rule)
    }
}
