//! A progress line on standard error for long runs.

use std::time::{Duration, Instant};

/// Prints where a run is, at most once every few seconds.
pub struct Progress {
    label: String,
    enabled: bool,
    started: Instant,
    last: Instant,
    calls: u64,
}

impl Progress {
    /// How often the line is refreshed.
    const EVERY: Duration = Duration::from_secs(5);

    /// Progress of a run called `label`; silent unless `enabled`.
    pub fn new(label: impl Into<String>, enabled: bool) -> Progress {
        let now = Instant::now();
        Progress {
            label: label.into(),
            enabled,
            started: now,
            last: now,
            calls: 0,
        }
    }

    /// Called once per event: virtual second `t` of `duration`, `decisions` so far.
    pub fn tick(&mut self, t: u64, duration: u64, decisions: u64) {
        self.calls += 1;
        if !self.enabled || !self.calls.is_multiple_of(65_536) || self.last.elapsed() < Self::EVERY
        {
            return;
        }
        self.last = Instant::now();
        eprintln!(
            "[{}] virtual {} of {}, {decisions} decisions, {:.0} s",
            self.label,
            clock(t),
            clock(duration),
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// `mm:ss` (or `h:mm:ss`) of virtual seconds.
pub fn clock(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_text() {
        assert_eq!(clock(59), "00:59");
        assert_eq!(clock(3600), "1:00:00");
        assert_eq!(clock(3725), "1:02:05");
    }
}
