//! Exact wait estimates. Each draw admits with probability `p = allow_percentage / 100`,
//! independently (the draw is seeded by a fresh signature), so the number of draws a
//! visitor needs is geometric: `P(N ≤ k) = 1 − (1 − p)^k`.
//!
//! A visitor's first draw comes when they return after their token becomes eligible
//! (`now > exp`): with the default refresh, exactly when their page comes back
//! (`exp + 1` plus their phase). A visitor who loses and comes back the same way gets a
//! wait token for the slot after next, so every further draw comes [`draw_interval`]
//! = `2d` later (`d = wait_period_duration`). The time to admission after `k` draws is
//! therefore `first + (k − 1) · 2d`.

use crate::settings::config::FifoRate;
use crate::settings::percentage::Percentage;

/// Wait estimates for one waiting visitor, in seconds from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Until the visitor's next draw.
    pub next_draw_in: u64,
    /// Seconds between two draws for a visitor who keeps losing.
    pub draw_interval: u64,
    /// A quarter of visitors in this position are admitted within this time.
    pub p25: u64,
    /// Half of them are admitted within this time.
    pub p50: u64,
    /// Three quarters of them are admitted within this time.
    pub p75: u64,
    /// The expected time to admission.
    pub mean: u64,
}

/// FIFO: a waiting visitor's place in the line and when they can expect to enter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Unix milliseconds of their arrival: their place.
    pub arrived_at: u64,
    /// Seconds until the cutoff passes their place, `(arr - cutoff) / fifo_rate`
    /// (0 when it has); `None` when unknown: no cutoff yet, or no rate.
    pub entry_in: Option<u64>,
}

/// The place of a visitor who arrived at `arr` (Unix ms), with the cutoff and
/// rate in effect.
pub fn place(arr: u64, cutoff: Option<u64>, rate: Option<FifoRate>) -> Place {
    let entry_in = match cutoff {
        None => None,
        Some(cutoff) if arr <= cutoff => Some(0),
        Some(cutoff) => rate.and_then(|rate| rate.seconds_for(arr - cutoff)),
    };
    Place {
        arrived_at: arr,
        entry_in,
    }
}

/// Seconds between two draws of a visitor who loses and refreshes promptly.
pub fn draw_interval(wait_period_duration: u64) -> u64 {
    wait_period_duration.max(1).saturating_mul(2)
}

/// Smallest number of draws `k` with `P(N ≤ k) ≥ q`, for admission probability
/// `p` in (0, 1] and `q` in (0, 1). `None` when `p` is 0: the visitor is never admitted.
pub fn draws_for_quantile(p: f64, q: f64) -> Option<u64> {
    draws_for_quantiles(p, [q]).map(|[k]| k)
}

/// [`draws_for_quantile`] for several quantiles of one `p` at once, with the same
/// answers: `ln(1 − p)` is taken once, and each `P(N ≤ k)` computed once however
/// many quantiles check it.
pub fn draws_for_quantiles<const N: usize>(p: f64, quantiles: [f64; N]) -> Option<[u64; N]> {
    if p <= 0.0 {
        return None;
    }
    if p >= 1.0 {
        return Some([1; N]);
    }
    let ln_miss = (1.0 - p).ln();
    let mut cdf = Cdf::new(p);
    Some(quantiles.map(|q| {
        // 1 − (1 − p)^k ≥ q  ⇔  k ≥ ln(1 − q) / ln(1 − p); guard the float edge by re-checking.
        let mut k = ((1.0 - q).ln() / ln_miss).ceil().max(1.0) as u64;
        while k > 1 && cdf.at(k - 1) >= q {
            k -= 1;
        }
        while cdf.at(k) < q {
            k += 1;
        }
        k
    }))
}

/// `P(N ≤ k) = 1 − (1 − p)^k`, remembering the last few values computed.
struct Cdf {
    miss: f64,
    known: [(u64, f64); 4],
    next: usize,
}

impl Cdf {
    fn new(p: f64) -> Cdf {
        Cdf {
            miss: 1.0 - p,
            // k = 0 is never asked for: it marks an empty entry.
            known: [(0, 0.0); 4],
            next: 0,
        }
    }

    fn at(&mut self, k: u64) -> f64 {
        if let Some(&(_, value)) = self.known.iter().find(|(known, _)| *known == k) {
            return value;
        }
        let value = 1.0 - self.miss.powf(k as f64);
        self.known[self.next] = (k, value);
        self.next = (self.next + 1) % self.known.len();
        value
    }
}

/// Estimates for a visitor whose first draw comes in `next_draw_in` seconds;
/// `None` when the room admits nobody (`percentage` 0).
pub fn estimate(
    next_draw_in: u64,
    percentage: Percentage,
    wait_period_duration: u64,
) -> Option<Estimate> {
    let p = percentage.fraction();
    let interval = draw_interval(wait_period_duration);
    let after =
        |draws: u64| next_draw_in.saturating_add(draws.saturating_sub(1).saturating_mul(interval));
    let [p25, p50, p75] = draws_for_quantiles(p, [0.25, 0.50, 0.75])?.map(after);
    // E[N] = 1/p, so E[T] = first + (1/p − 1) · interval.
    let mean = next_draw_in as f64 + (1.0 / p - 1.0) * interval as f64;
    Some(Estimate {
        next_draw_in,
        draw_interval: interval,
        p25,
        p50,
        p75,
        mean: mean.round() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_entry_is_the_distance_to_the_cutoff_over_its_speed() {
        let rate = |text: &str| Some(text.parse::<FifoRate>().unwrap());
        // 60 s of arrivals ahead, the cutoff moving 2 s of arrivals a second: 30 s.
        assert_eq!(
            place(1_060_000, Some(1_000_000), rate("2000")).entry_in,
            Some(30)
        );
        // Fractional rates: 1.5 ms a second over 3 ms is 2 s; rounded up.
        assert_eq!(place(1_003, Some(1_000), rate("1.5")).entry_in, Some(2));
        assert_eq!(place(1_004, Some(1_000), rate("1.5")).entry_in, Some(3));
        // Passed: 0. Unknown without a cutoff, or a rate, or with a zero rate.
        assert_eq!(place(999, Some(1_000), None).entry_in, Some(0));
        assert_eq!(place(1_001, None, rate("5")).entry_in, None);
        assert_eq!(place(1_001, Some(1_000), None).entry_in, None);
        assert_eq!(place(1_001, Some(1_000), rate("0")).entry_in, None);
        // Beyond a year: unknown, never a number no client can read.
        assert_eq!(place(u64::MAX, Some(0), rate("0.001")).entry_in, None);
        let year = 31_536_000;
        assert_eq!(
            place(year * 1000, Some(0), rate("1000")).entry_in,
            Some(year)
        );
        assert_eq!(
            place((year + 1) * 1000, Some(0), rate("1000")).entry_in,
            None
        );
        assert_eq!(place(7, None, None).arrived_at, 7);
    }

    #[test]
    fn quantiles_of_the_geometric_distribution() {
        assert_eq!(draws_for_quantile(0.5, 0.5), Some(1));
        assert_eq!(draws_for_quantile(0.5, 0.75), Some(2));
        assert_eq!(draws_for_quantile(0.5, 0.76), Some(3));
        assert_eq!(draws_for_quantile(0.1, 0.5), Some(7)); // 1 - 0.9^7 = 0.522
        assert_eq!(draws_for_quantile(0.1, 0.25), Some(3)); // 1 - 0.9^3 = 0.271
        assert_eq!(draws_for_quantile(1.0, 0.75), Some(1));
        assert_eq!(draws_for_quantile(0.0, 0.5), None);
        for p in [0.01, 0.1, 0.33, 0.5, 0.9] {
            for q in [0.25, 0.5, 0.75] {
                let k = draws_for_quantile(p, q).unwrap();
                let cdf = |k: u64| 1.0 - (1.0f64 - p).powf(k as f64);
                assert!(
                    cdf(k) >= q && (k == 1 || cdf(k - 1) < q),
                    "p={p} q={q} k={k}"
                );
            }
        }
    }

    /// The quantile as it was computed before the shared form: each on its own.
    fn reference_draws(p: f64, q: f64) -> Option<u64> {
        if p <= 0.0 {
            return None;
        }
        if p >= 1.0 {
            return Some(1);
        }
        let mut k = ((1.0 - q).ln() / (1.0 - p).ln()).ceil().max(1.0) as u64;
        while k > 1 && 1.0 - (1.0 - p).powf((k - 1) as f64) >= q {
            k -= 1;
        }
        while 1.0 - (1.0 - p).powf(k as f64) < q {
            k += 1;
        }
        Some(k)
    }

    #[test]
    fn shared_quantiles_answer_as_each_alone() {
        let qs = [0.25, 0.5, 0.75];
        for micros in (0..=1_000_000)
            .step_by(1_250)
            .chain([1, 7, 100, 333_333, 999_999])
        {
            let p = Percentage::from_micros(micros).fraction();
            let alone = qs.map(|q| reference_draws(p, q));
            let shared = draws_for_quantiles(p, qs);
            assert_eq!(
                shared,
                alone
                    .iter()
                    .copied()
                    .collect::<Option<Vec<_>>>()
                    .map(|v| [v[0], v[1], v[2]]),
                "p={p}"
            );
            for q in [0.01, 0.5, 0.76, 0.99] {
                assert_eq!(
                    draws_for_quantile(p, q),
                    reference_draws(p, q),
                    "p={p} q={q}"
                );
            }
        }
    }

    #[test]
    fn estimate_counts_from_the_token_and_adds_two_slots_per_lost_draw() {
        // First draw in 21 s; 30 s slots: one draw per 60 s.
        let e = estimate(21, Percentage::whole(50), 30).unwrap();
        assert_eq!(e.next_draw_in, 21);
        assert_eq!(e.draw_interval, 60);
        assert_eq!((e.p25, e.p50, e.p75), (21, 21, 81));
        assert_eq!(e.mean, 81); // 21 + (2 - 1) * 60
        let e = estimate(21, Percentage::whole(10), 30).unwrap();
        assert_eq!(
            (e.p25, e.p50, e.p75),
            (21 + 2 * 60, 21 + 6 * 60, 21 + 13 * 60)
        );
        assert_eq!(e.mean, 21 + 9 * 60);
    }

    #[test]
    fn closed_room_has_no_estimate_and_an_open_one_admits_at_the_first_draw() {
        assert_eq!(estimate(21, Percentage::whole(0), 30), None);
        assert_eq!(estimate(21, Percentage::whole(100), 30).unwrap().p75, 21);
    }
}
