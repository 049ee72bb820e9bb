//! The closed loop: a controller of the room's own ([`control::Controller`]
//! in random mode, [`control::fifo::FifoController`] in FIFO mode) on
//! the simulator's virtual clock. Every request's log line is written by the
//! room's own [`waiting_room::log::decision_line`] and read back by the room's own
//! [`control::record::Record`] parser, `log_delay` seconds after the request, so
//! the controller reads exactly the contract the live controller reads. It ticks
//! every `tick` seconds; each write reaches the room's settings
//! `propagation_delay` seconds later.

use std::collections::VecDeque;
use std::time::Instant;

use control::fifo::{self, FifoController};
use control::record::Record;
use control::{self, Controller, Counters};
use waiting_room::config::{Heartbeat, Settings};
use waiting_room::decision::Verdict;
use waiting_room::log;

use crate::engine::START;
use crate::scenario::Control;

/// The path every simulated request asks for.
const PATH: &str = "/events";

/// A controller's rule, as the loop drives it: what it reads, when it writes,
/// and what its writes change at the edge.
pub trait Rule {
    /// One write to the config store.
    type Write;
    /// A log record reaches the rule at Unix second `now`.
    fn observe(&mut self, record: &Record, now: u64);
    /// A log line that did not parse.
    fn bad_line(&mut self);
    /// The rule's tick at Unix second `now`: a write, if one is due.
    fn tick(&mut self, now: u64) -> Option<Self::Write>;
    /// The config store took `write` at Unix second `now`.
    fn written(&mut self, write: &Self::Write, now: u64);
    /// The setting `write` moves, for the trace (the percentage in millionths,
    /// or the FIFO cutoff), if it moves it.
    fn moved(write: &Self::Write) -> Option<u64>;
    /// `write` reaches the edge's `settings`.
    fn land(write: Self::Write, settings: &mut Settings);
    /// Addresses the rule counts as waiting.
    fn waiting(&self) -> u64;
    /// The rule's counters.
    fn counters(&self) -> Counters;
}

/// The percentage controller: it writes `allow_percentage`.
impl Rule for Controller {
    type Write = control::Write;

    fn observe(&mut self, record: &Record, now: u64) {
        Controller::observe(self, record, now);
    }

    fn bad_line(&mut self) {
        Controller::bad_line(self);
    }

    fn tick(&mut self, now: u64) -> Option<control::Write> {
        Controller::tick(self, now)
    }

    fn written(&mut self, write: &control::Write, now: u64) {
        Controller::written(self, write, now);
    }

    fn moved(write: &control::Write) -> Option<u64> {
        write.allow_percentage.map(|p| u64::from(p.micros()))
    }

    fn land(write: control::Write, settings: &mut Settings) {
        if let Some(p) = write.allow_percentage {
            settings.allow_percentage = p;
        }
        settings.controller_heartbeat = Heartbeat::At(write.heartbeat);
    }

    fn waiting(&self) -> u64 {
        self.snapshot(0).waiting
    }

    fn counters(&self) -> Counters {
        Controller::counters(self)
    }
}

/// The FIFO rule: it writes `fifo_cutoff` and `fifo_rate`.
impl Rule for FifoController {
    type Write = fifo::Write;

    fn observe(&mut self, record: &Record, now: u64) {
        FifoController::observe(self, record, now);
    }

    fn bad_line(&mut self) {
        FifoController::bad_line(self);
    }

    fn tick(&mut self, now: u64) -> Option<fifo::Write> {
        FifoController::tick(self, now)
    }

    fn written(&mut self, write: &fifo::Write, now: u64) {
        FifoController::written(self, write, now);
    }

    fn moved(write: &fifo::Write) -> Option<u64> {
        write.fifo_cutoff
    }

    fn land(write: fifo::Write, settings: &mut Settings) {
        if let Some(cutoff) = write.fifo_cutoff {
            settings.fifo_cutoff = Some(cutoff);
        }
        if let Some(rate) = write.fifo_rate {
            settings.fifo_rate = Some(rate);
        }
        settings.controller_heartbeat = Heartbeat::At(write.heartbeat);
    }

    fn waiting(&self) -> u64 {
        self.snapshot(0).waiting
    }

    fn counters(&self) -> Counters {
        FifoController::counters(self)
    }
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
                self.trace.writes.push((t, R::moved(&write)));
                self.in_flight
                    .push_back((now + self.spec.propagation_delay, write));
            }
            self.trace.waiting.push((t, self.rule.waiting()));
        }
        self.trace.controller_nanos += started.elapsed().as_nanos();
        while self.in_flight.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, write)) = self.in_flight.pop_front() {
                R::land(write, settings);
            }
        }
    }

    /// What the controller did, and the controller as it ended.
    pub fn finish(mut self) -> (Trace, R) {
        self.trace.counters = self.rule.counters();
        (self.trace, self.rule)
    }
}
