//! The control thread: owns the rule (the percentage [`Controller`], or in FIFO
//! mode the [`FifoController`]), observes every batch of records, ticks on the
//! wall clock, writes through the sink, and answers state requests.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use control::fifo::{self, FifoController};
use control::record::Record;
use control::{Controller, Snapshot, Write};

use crate::clock::{rfc3339, unix_now};
use crate::ingest::{BadCounts, Msg};
use crate::sink::{Items, Sink};
use crate::state::{Info, SERIES_SECONDS, View};

/// The rule the controller runs: which key it holds the target with.
#[derive(Debug, Clone)]
pub enum Rule {
    /// `allow_percentage` (the lottery; `--queueing random`, the default).
    Percentage(Box<Controller>),
    /// `fifo_cutoff` and `fifo_rate` (`--queueing fifo`).
    Fifo(Box<FifoController>),
}

impl From<Controller> for Rule {
    fn from(controller: Controller) -> Rule {
        Rule::Percentage(Box::new(controller))
    }
}

impl From<FifoController> for Rule {
    fn from(controller: FifoController) -> Rule {
        Rule::Fifo(Box::new(controller))
    }
}

/// One write of either rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// The percentage and the heartbeat.
    Percentage(Write),
    /// The cutoff, its rate and the heartbeat.
    Fifo(fifo::Write),
}

impl Items for Batch {
    fn items(&self) -> Vec<(&'static str, String)> {
        match self {
            Batch::Percentage(w) => w.items(),
            Batch::Fifo(w) => w.items(),
        }
    }
}

impl Rule {
    fn observe(&mut self, record: &Record, now: u64) {
        match self {
            Rule::Percentage(c) => c.observe(record, now),
            Rule::Fifo(c) => c.observe(record, now),
        }
    }

    fn bad_line(&mut self) {
        match self {
            Rule::Percentage(c) => c.bad_line(),
            Rule::Fifo(c) => c.bad_line(),
        }
    }

    fn tick(&mut self, now: u64) -> Option<Batch> {
        match self {
            Rule::Percentage(c) => c.tick(now).map(Batch::Percentage),
            Rule::Fifo(c) => c.tick(now).map(Batch::Fifo),
        }
    }

    fn written(&mut self, write: &Batch, now: u64) {
        match (self, write) {
            (Rule::Percentage(c), Batch::Percentage(w)) => c.written(w, now),
            (Rule::Fifo(c), Batch::Fifo(w)) => c.written(w, now),
            _ => {}
        }
    }

    fn failed(&mut self, now: u64) {
        match self {
            Rule::Percentage(c) => c.failed(now),
            Rule::Fifo(c) => c.failed(now),
        }
    }

    fn deaf(&self, now: u64) -> bool {
        match self {
            Rule::Percentage(c) => c.deaf(now),
            Rule::Fifo(c) => c.deaf(now),
        }
    }

    /// Seconds between two ticks.
    pub fn tick_seconds(&self) -> u64 {
        match self {
            Rule::Percentage(c) => c.options().tick,
            Rule::Fifo(c) => c.options().tick,
        }
    }

    fn log_silence(&self) -> Option<u64> {
        match self {
            Rule::Percentage(c) => c.options().log_silence,
            Rule::Fifo(c) => c.options().log_silence,
        }
    }

    fn snapshot(&self) -> Snapshot {
        match self {
            Rule::Percentage(c) => c.snapshot(SERIES_SECONDS),
            Rule::Fifo(c) => c.snapshot(SERIES_SECONDS),
        }
    }
}

/// The control thread's state.
pub struct Control {
    controller: Rule,
    sink: Box<dyn Sink>,
    info: Arc<Info>,
    bad: BadCounts,
    quiet: bool,
    /// Whether the controller had stopped writing for want of log lines at the last tick.
    deaf: bool,
    /// Whether the lines were said not to match the mode (said once).
    warned_mode: bool,
}

impl Control {
    /// A control thread's state for `controller` (either rule), writing to `sink`.
    pub fn new(
        controller: impl Into<Rule>,
        sink: Box<dyn Sink>,
        info: Info,
        quiet: bool,
    ) -> Control {
        Control {
            controller: controller.into(),
            sink,
            info: Arc::new(info),
            bad: BadCounts::default(),
            quiet,
            deaf: false,
            warned_mode: false,
        }
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
                    self.controller.observe(record, now);
                    self.check_mode(record);
                }
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

    /// Says once, even with --quiet, when a decided line was written in the
    /// other queueing mode than the controller runs (it carries `cutoff=` only in
    /// FIFO mode): the room's `queueing_method` and `--queueing` disagree, and the
    /// controller's writes change nothing at the edge.
    fn check_mode(&mut self, record: &Record) {
        if self.warned_mode || record.decision.is_none() {
            return;
        }
        let fifo = matches!(self.controller, Rule::Fifo(_));
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
            snapshot: self.controller.snapshot(),
            bad: self.bad,
            info: Arc::clone(&self.info),
            fifo: match &self.controller {
                Rule::Fifo(c) => Some(c.status(SERIES_SECONDS)),
                Rule::Percentage(_) => None,
            },
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
    fn say(&self, now: u64, write: &Batch, error: Option<String>) {
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
        let heartbeat = match write {
            Batch::Percentage(w) => w.heartbeat,
            Batch::Fifo(w) => w.heartbeat,
        };
        let what = match (write, &view.fifo) {
            (Batch::Percentage(w), _) => match w.allow_percentage {
                Some(p) => format!("allow_percentage={p}"),
                None => format!(
                    "allow_percentage unchanged ({})",
                    s.written.map_or("none".into(), |p| p.to_string())
                ),
            },
            (Batch::Fifo(w), status) => {
                let cutoff = match w.fifo_cutoff {
                    Some(c) => format!("fifo_cutoff={c}"),
                    None => format!(
                        "fifo_cutoff unchanged ({})",
                        status
                            .as_ref()
                            .and_then(|f| f.cutoff)
                            .map_or("none".into(), |c| c.to_string())
                    ),
                };
                let rate = w
                    .fifo_rate
                    .map_or(String::new(), |r| format!(" fifo_rate={r}"));
                let shown = status.as_ref().map_or(String::new(), |f| {
                    format!(
                        " (in effect {}, show-up {:.2})",
                        f.cutoff_in_effect.map_or("none".into(), |c| c.to_string()),
                        f.show_up
                    )
                });
                format!("{cutoff}{rate}{shown}")
            }
        };
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
            heartbeat,
            s.waiting,
            s.active,
            minute.admissions,
            self.info.target_per_minute,
        );
    }
}
