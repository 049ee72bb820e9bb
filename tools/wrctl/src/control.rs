//! The control thread: owns the [`Controller`], observes every batch of records,
//! ticks on the wall clock, writes through the sink, and answers state requests.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use waiting_room::control::{Controller, Write};

use crate::ingest::{BadCounts, Msg};
use crate::sink::Sink;
use crate::state::{Info, SERIES_SECONDS, View};

/// Unix seconds of the wall clock.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The control thread's state.
pub struct Control {
    controller: Controller,
    sink: Box<dyn Sink>,
    info: Arc<Info>,
    bad: BadCounts,
    quiet: bool,
    /// Whether the controller had stopped writing for want of log lines at the last tick.
    deaf: bool,
}

impl Control {
    /// A control thread's state for `controller`, writing to `sink`.
    pub fn new(controller: Controller, sink: Box<dyn Sink>, info: Info, quiet: bool) -> Control {
        Control {
            controller,
            sink,
            info: Arc::new(info),
            bad: BadCounts::default(),
            quiet,
            deaf: false,
        }
    }

    /// Runs until every sender of `rx` is gone (stdin ended and no listener), then
    /// ticks a last time and returns.
    pub fn run(mut self, rx: Receiver<Msg>) {
        let every = Duration::from_secs(self.controller.options().tick);
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

    /// The state as the listener shows it.
    pub fn view(&self) -> View {
        View {
            snapshot: self.controller.snapshot(SERIES_SECONDS),
            bad: self.bad,
            info: Arc::clone(&self.info),
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
                clock(now),
                self.controller.options().log_silence.unwrap_or(0)
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
    fn say(&self, now: u64, write: &Write, error: Option<String>) {
        if let Some(error) = &error {
            // Failures are reported even with --quiet.
            eprintln!("{} write failed: {error}", clock(now));
            if self.quiet {
                return;
            }
        } else if self.quiet {
            return;
        }
        let view = self.view();
        let minute = view.last_minute();
        let s = &view.snapshot;
        let what = match write.allow_percentage {
            Some(p) => format!("allow_percentage={p}"),
            None => format!(
                "allow_percentage unchanged ({})",
                s.written.map_or("none".into(), |p| p.to_string())
            ),
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
            clock(now),
            write.heartbeat,
            s.waiting,
            s.active,
            minute.admissions,
            self.info.target_per_minute,
        );
    }
}

/// `2023-11-14T22:13:20Z` for Unix seconds.
pub fn clock(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_reads_utc() {
        assert_eq!(clock(0), "1970-01-01T00:00:00Z");
        assert_eq!(clock(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(clock(951_782_400), "2000-02-29T00:00:00Z");
    }
}
