//! The control thread: owns the rule (any [`Rule`]: the percentage
//! [`control::Controller`], or in FIFO mode the [`control::fifo::FifoController`]),
//! observes every batch of records, ticks on the wall clock, writes through the
//! sink, and answers state requests.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use control::Rule;
use control::record::Record;
use control::rule::Write as _;
use waiting_room::settings::config::QueueingMethod;
use waiting_room::settings::room::RoomName;

use crate::clock::{rfc3339, unix_now};
use crate::ingest::{BadCounts, Msg};
use crate::sink::Sink;
use crate::state::{Info, SERIES_SECONDS, View};

/// The control thread's state.
pub struct Control<R: Rule> {
    controller: R,
    sink: Box<dyn Sink>,
    info: Arc<Info>,
    bad: BadCounts,
    quiet: bool,
    /// Whether the controller had stopped writing for want of log lines at the last tick.
    deaf: bool,
    /// Whether the lines were said not to match the mode (said once).
    warned_mode: bool,
    /// The named room held; `None`: the service room.
    room: Option<String>,
    /// `--event-target`: the target during each event.
    event_targets: Vec<(String, f64)>,
    /// `--target-per-minute`.
    base_target: f64,
    /// The newest line's time and event.
    newest: Option<(u64, Option<String>)>,
}

impl<R: Rule> Control<R> {
    /// A control thread's state for `controller` (either rule), writing to `sink`.
    pub fn new(controller: R, sink: Box<dyn Sink>, info: Info, quiet: bool) -> Control<R> {
        Control {
            base_target: info.target_per_minute,
            event_targets: Vec::new(),
            newest: None,
            controller,
            sink,
            info: Arc::new(info),
            bad: BadCounts::default(),
            quiet,
            deaf: false,
            warned_mode: false,
            room: None,
        }
    }

    /// Holds `per_minute` during each named event instead of the base target.
    pub fn with_event_targets(mut self, targets: &[(String, f64)]) -> Control<R> {
        self.event_targets = targets.to_vec();
        self
    }

    /// Holds the named room `room` (`None`: the service room): only its lines count.
    pub fn in_room(mut self, room: Option<&RoomName>) -> Control<R> {
        self.room = room.map(RoomName::to_string);
        self
    }

    /// Runs until every sender of `rx` is gone (stdin ended and no listener), then
    /// ticks a last time and returns.
    pub fn run(mut self, rx: Receiver<Msg>) {
        let every = Duration::from_secs(self.controller.tick_seconds());
        let mut next_tick = Instant::now() + every;
        loop {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.tick(unix_now());
                    return;
                }
            }
            let now = Instant::now();
            if now >= next_tick {
                self.tick(unix_now());
                next_tick += every;
                if next_tick <= now {
                    // Fell behind (a slow write): the next tick is one interval away.
                    next_tick = now + every;
                }
            }
        }
    }

    /// Takes in one message.
    pub fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Batch(batch) => {
                let now = unix_now();
                for record in &batch.records {
                    // Another room's line is none of this controller's business.
                    if record.room != self.room {
                        continue;
                    }
                    self.controller.observe(record, now);
                    self.check_mode(record);
                    if self.newest.as_ref().is_none_or(|(t, _)| record.t >= *t) {
                        self.newest = Some((record.t, record.event.clone()));
                    }
                }
                self.follow_schedule();
                for _ in 0..batch.bad.total() {
                    self.controller.bad_line();
                }
                self.bad.merge(&batch.bad);
            }
            Msg::View(reply) => {
                let _ = reply.try_send(self.view());
            }
        }
    }

    /// Holds the target of the event the newest line names (`--event-target`), or
    /// the base target: the edge's clock decides when an event runs.
    fn follow_schedule(&mut self) {
        let event = self.newest.as_ref().and_then(|(_, e)| e.as_deref());
        let target = event
            .and_then(|e| self.event_targets.iter().find(|(name, _)| name == e))
            .map_or(self.base_target, |(_, n)| *n);
        if target != self.info.target_per_minute {
            self.controller.set_target(target);
            self.info = Arc::new(Info {
                target_per_minute: target,
                ..Info::clone(&self.info)
            });
            eprintln!(
                "wrctl: {}: holding {target} new sessions a minute",
                event.map_or("no event".to_string(), |e| format!("event {e}"))
            );
        }
    }

    /// Says once, even with --quiet, when a decided line was written in the
    /// other queueing mode than the controller runs (it carries `cutoff=` only in
    /// FIFO mode): the room's `queueing_method` and `--queueing` disagree, and the
    /// controller's writes change nothing at the edge.
    fn check_mode(&mut self, record: &Record) {
        if self.warned_mode || record.decision.is_none() {
            return;
        }
        let fifo = R::QUEUEING == QueueingMethod::Fifo;
        if record.fifo != fifo {
            self.warned_mode = true;
            let (lines, flag) = if record.fifo {
                ("FIFO lines (cutoff=)", "--queueing fifo")
            } else {
                ("lottery lines (no cutoff=)", "--queueing random")
            };
            eprintln!(
                "wrctl: warning: the room logs {lines}: is its queueing_method what                  the controller holds? Run with {flag} to hold the target in that mode"
            );
        }
    }

    /// The state as the listener shows it.
    pub fn view(&self) -> View {
        View {
            snapshot: self.controller.snapshot(SERIES_SECONDS),
            bad: self.bad,
            info: Arc::clone(&self.info),
            fifo: self.controller.fifo_status(SERIES_SECONDS),
        }
    }

    /// One tick at clock time `now`: decides, writes if there is something to write,
    /// and reports the outcome to the controller.
    pub fn tick(&mut self, now: u64) {
        let was_deaf = self.deaf;
        let write = self.controller.tick(now);
        self.deaf = self.controller.deaf(now);
        if self.deaf && !was_deaf {
            // Said even with --quiet: the edge will fall back.
            eprintln!(
                "{} no log line for {} s: writing nothing (heartbeat included) until lines come",
                rfc3339(now),
                self.controller.log_silence().unwrap_or(0)
            );
        }
        let Some(write) = write else {
            return;
        };
        let result = self.sink.write(&write);
        match &result {
            Ok(()) => self.controller.written(&write, now),
            Err(_) => self.controller.failed(now),
        }
        self.say(now, &write, result.err());
    }

    /// One line on stderr for the write: what, and the crowd it was decided on.
    fn say(&self, now: u64, write: &R::Write, error: Option<String>) {
        if let Some(error) = &error {
            // Failures are reported even with --quiet.
            eprintln!("{} write failed: {error}", rfc3339(now));
            if self.quiet {
                return;
            }
        } else if self.quiet {
            return;
        }
        let view = self.view();
        let minute = view.last_minute();
        let s = &view.snapshot;
        let what = self.controller.describe(write);
        let verb = match (&error, self.sink.is_dry_run()) {
            (Some(_), _) => "not written",
            (None, true) => "would write",
            (None, false) => "wrote",
        };
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{} {verb} {what} heartbeat={} | waiting {}, active {}, new sessions last minute {} / target {}",
            rfc3339(now),
            write.heartbeat(),
            s.waiting,
            s.active,
            minute.admissions,
            self.info.target_per_minute,
        );
    }
}
