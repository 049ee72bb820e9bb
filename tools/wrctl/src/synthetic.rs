//! A synthetic crowd's log lines, as the room writes them: visitors arrive and
//! wait, draw once a draw period, win or lose, browse while admitted, and some
//! give up or are released by the origin. For the controller's throughput
//! benchmark (bench/controller) and the tests; the lines go through the same
//! parser as real ones.

use std::collections::BTreeMap;

use waiting_room::settings::percentage::Percentage;

/// What happens to one visitor next.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// Back on the waiting page before the token expires (`decision=wait`).
    Refresh { uid: u32, exp: u64 },
    /// Back after the token expired: the lottery runs.
    Draw { uid: u32 },
    /// An admitted visitor's next page (`session=kept`).
    Browse { uid: u32, exp: u64, left: u8 },
}

/// A crowd at a waiting room with a fixed percentage.
#[derive(Debug, Clone)]
pub struct Crowd {
    /// The next second to generate.
    pub t: u64,
    /// The room's `wait_period_duration`.
    pub wait_period: u64,
    /// The room's `allow_period_timeout`.
    pub allow_period: u64,
    /// The percentage the lines carry, and the share of draws won.
    pub percentage: Percentage,
    /// New visitors a second.
    pub arrivals_per_second: u32,
    /// Distinct addresses the visitors come from (reused round robin).
    pub addresses: u32,
    /// Share of lines Viceroy prefixes with `waitingroom_log :: ` (0–1).
    pub prefixed: f64,
    next_address: u32,
    rng: u64,
    schedule: BTreeMap<u64, Vec<Event>>,
}

impl Crowd {
    /// A crowd starting at `t`, with 100,000 addresses, 50 arrivals a second, a 30 s
    /// wait period and 10 %.
    pub fn new(t: u64, seed: u64) -> Crowd {
        Crowd {
            t,
            wait_period: 30,
            allow_period: 3600,
            percentage: Percentage::whole(10),
            arrivals_per_second: 50,
            addresses: 100_000,
            prefixed: 0.0,
            next_address: 0,
            rng: seed | 1,
            schedule: BTreeMap::new(),
        }
    }

    fn random(&mut self) -> f64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        (self.random() * n as f64) as u64
    }

    fn at(&mut self, t: u64, event: Event) {
        self.schedule.entry(t).or_default().push(event);
    }

    /// Adds `waitingroom t=… decision=… uid=… rest`.
    fn line(&mut self, out: &mut Vec<String>, decision: &str, uid: u32, rest: &str) {
        let prefix = if self.prefixed > 0.0 && self.random() < self.prefixed {
            "waitingroom_log :: "
        } else {
            ""
        };
        let [_, a, b, c] = uid.to_be_bytes();
        out.push(format!(
            "{prefix}waitingroom t={} decision={decision} uid=10.{a}.{b}.{c} {rest}",
            self.t
        ));
    }

    /// The lines of the next second (in no particular order within it).
    pub fn next_second(&mut self) -> Vec<String> {
        let t = self.t;
        let d = self.wait_period;
        let p = self.percentage;
        let mut out = Vec::new();
        for _ in 0..self.arrivals_per_second {
            let uid = self.next_address % self.addresses.max(1);
            self.next_address = self.next_address.wrapping_add(1);
            let exp = t + d;
            self.line(
                &mut out,
                "anon",
                uid,
                &format!("p={p} exp={exp} path=/events"),
            );
            let refresh = t + d / 2 + self.below(3);
            self.at(refresh, Event::Refresh { uid, exp });
            let back = exp + 1 + self.below(d / 3 + 1);
            self.at(back, Event::Draw { uid });
            if self.random() < 0.05 {
                self.line(
                    &mut out,
                    "bypass",
                    uid,
                    "scope=unprotected-path path=/static/app.css",
                );
            }
        }
        for event in self.schedule.remove(&t).unwrap_or_default() {
            match event {
                Event::Refresh { uid, exp } => {
                    self.line(
                        &mut out,
                        "wait",
                        uid,
                        &format!("p={p} exp={exp} path=/events"),
                    );
                }
                Event::Draw { uid } => {
                    if self.random() < p.fraction() {
                        let exp = t + self.allow_period;
                        self.line(
                            &mut out,
                            "allow",
                            uid,
                            &format!(
                                "p={p} session=new transition=lottery-won exp={exp} path=/events"
                            ),
                        );
                        let left = self.below(6) as u8;
                        let next = t + 5 + self.below(40);
                        self.at(next, Event::Browse { uid, exp, left });
                    } else {
                        // One in twenty gives up: the lost draw is the last line.
                        let gave_up = self.random() < 0.05;
                        let exp = t + d;
                        self.line(
                            &mut out,
                            "re-wait",
                            uid,
                            &format!("p={p} transition=lottery-lost exp={exp} path=/events"),
                        );
                        if !gave_up {
                            let back = exp + 1 + self.below(d / 3 + 1);
                            self.at(back, Event::Draw { uid });
                        }
                    }
                }
                Event::Browse { uid, exp, left } => {
                    let release = if left == 0 && self.random() < 0.3 {
                        " release=origin"
                    } else {
                        ""
                    };
                    self.line(
                        &mut out,
                        "allow",
                        uid,
                        &format!("p={p} session=kept exp={exp} path=/events/42{release}"),
                    );
                    if left > 0 {
                        let next = t + 5 + self.below(40);
                        self.at(
                            next,
                            Event::Browse {
                                uid,
                                exp,
                                left: left - 1,
                            },
                        );
                    }
                }
            }
        }
        self.t += 1;
        out
    }

    /// The lines of the next `seconds` seconds, in time order.
    pub fn lines(&mut self, seconds: u64) -> Vec<String> {
        (0..seconds).flat_map(|_| self.next_second()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control::record::Record;

    #[test]
    fn every_line_is_a_room_line_of_its_second() {
        let mut crowd = Crowd::new(1_700_000_000, 7);
        crowd.prefixed = 0.5;
        let lines = crowd.lines(200);
        assert!(lines.len() > 200 * 50);
        let mut draws = 0;
        for line in &lines {
            let record: Record = line.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!((1_700_000_000..1_700_000_200).contains(&record.t));
            draws += usize::from(record.is_draw());
        }
        assert!(draws > 1000, "{draws} draws");
    }
}
