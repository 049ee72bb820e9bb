//! Per-second counts of what the room did, over a sliding window of log time.

/// What the room did in one second, as its log lines say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Second {
    /// Addresses that started waiting (counted per address).
    pub arrivals: u64,
    /// Wait tokens drawn, won or lost (counted per token).
    pub draws: u64,
    /// The draws' chances: the sum of the percentage each draw saw, in millionths.
    pub chances_micros: u64,
    /// The draws' lags: the sum of the seconds from each drawn token's end to its draw.
    pub draw_lag_seconds: u64,
    /// New sessions: allow tokens handed out with `session=new` (counted per token).
    pub admissions: u64,
    /// Of those, the ones a draw handed out.
    pub drawn_admissions: u64,
    /// New sessions the POP's ceiling held (wins, and visitors of a room open at 100 %) (`transition=ceiling-reached`).
    pub held_wins: u64,
    /// Draws and FIFO admissions held because the bot toll was unpaid
    /// (`transition=toll-unpaid`, counted per line).
    pub toll_held: u64,
    /// Sessions renewed or kept.
    pub renewals: u64,
    /// Sessions the origin ended.
    pub releases: u64,
    /// Requests counted (every line, bypass included).
    pub requests: u64,
    /// The percentage in effect at the edge that second, as last logged, in
    /// millionths; `None` when no line said.
    pub percentage_micros: Option<u32>,
    /// Live allow tokens at the end of the second (filled in when it closes).
    pub active: Option<u64>,
    /// Visitors waiting at the end of the second (filled in when it closes).
    pub waiting: Option<u64>,
}

/// A ring of [`Second`]s covering the last `len` seconds of log time.
#[derive(Debug, Clone)]
pub struct Series {
    seconds: Vec<Second>,
    /// The newest second held; `None` before the first record.
    newest: Option<u64>,
}

impl Series {
    /// An empty window of `len` seconds (at least 1).
    pub fn new(len: usize) -> Series {
        Series {
            seconds: vec![Second::default(); len.max(1)],
            newest: None,
        }
    }

    /// Seconds the window holds.
    pub fn len(&self) -> u64 {
        self.seconds.len() as u64
    }

    /// Whether no record has been counted yet.
    pub fn is_empty(&self) -> bool {
        self.newest.is_none()
    }

    /// The newest second seen.
    pub fn newest(&self) -> Option<u64> {
        self.newest
    }

    /// The counts of second `t`, moving the window forward when `t` is newer than
    /// anything seen (the seconds skipped over are cleared). `None` when `t` is
    /// older than the window.
    pub fn at_mut(&mut self, t: u64) -> Option<&mut Second> {
        let len = self.len();
        match self.newest {
            Some(newest) if t + len <= newest => return None,
            Some(newest) if t > newest => {
                let from = (newest + 1).max(t.saturating_sub(len - 1));
                for s in from..=t {
                    self.seconds[(s % len) as usize] = Second::default();
                }
                self.newest = Some(t);
            }
            Some(_) => {}
            None => {
                self.seconds[(t % len) as usize] = Second::default();
                self.newest = Some(t);
            }
        }
        Some(&mut self.seconds[(t % len) as usize])
    }

    /// The counts of second `t`, if it is inside the window.
    pub fn get(&self, t: u64) -> Option<&Second> {
        let newest = self.newest?;
        (t <= newest && t + self.len() > newest).then(|| &self.seconds[(t % self.len()) as usize])
    }

    /// The sum of `field` over the seconds `from..to` that the window holds.
    pub fn sum(&self, from: u64, to: u64, field: impl Fn(&Second) -> u64) -> u64 {
        (from..to).filter_map(|t| self.get(t)).map(field).sum()
    }

    /// The seconds `from..=to` in the window, oldest first, with their times.
    pub fn range(&self, from: u64, to: u64) -> impl DoubleEndedIterator<Item = (u64, &Second)> {
        (from..=to).filter_map(move |t| self.get(t).map(|s| (t, s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_second_and_old_ones_fall_out() {
        let mut s = Series::new(10);
        s.at_mut(100).unwrap().draws += 2;
        s.at_mut(105).unwrap().draws += 3;
        s.at_mut(101).unwrap().draws += 1;
        assert_eq!(s.sum(100, 106, |x| x.draws), 6);
        // 112 pushes 100..=102 out of a 10-second window.
        s.at_mut(112).unwrap().draws += 7;
        assert_eq!(s.sum(100, 113, |x| x.draws), 10);
        assert!(s.at_mut(102).is_none());
        assert_eq!(s.get(103).map(|x| x.draws), Some(0));
    }

    #[test]
    fn a_jump_longer_than_the_window_clears_everything() {
        let mut s = Series::new(5);
        for t in 0..5 {
            s.at_mut(t).unwrap().arrivals = 1;
        }
        s.at_mut(1_000).unwrap();
        assert_eq!(s.sum(996, 1_001, |x| x.arrivals), 0);
        assert_eq!(s.range(990, 1_000).count(), 5);
    }
}
