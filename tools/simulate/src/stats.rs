//! Small statistics: percentiles, the binomial band, a summary of a per-second series.

use serde::Serialize;

/// z for a two-sided 99 % normal band.
pub const Z99: f64 = 2.575_829_303_548_901;

/// Nearest-rank percentile `q` (0..=1) of sorted `values`; `None` when empty.
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

/// The 99 % normal band around `p` for the fraction of `n` Bernoulli(`p`) draws.
pub fn binomial_band(p: f64, n: u64) -> (f64, f64) {
    let half = Z99 * (p * (1.0 - p) / n.max(1) as f64).sqrt();
    (p - half, p + half)
}

/// The sums of each minute of a per-second count series (the last minute may be short).
pub fn per_minute(seconds: &[u64]) -> Vec<u64> {
    seconds.chunks(60).map(|m| m.iter().sum()).collect()
}

/// Mean, peak and burstiness of a per-second count series.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct SeriesStats {
    /// Mean per second.
    pub mean: f64,
    /// Highest second.
    pub peak: u64,
    /// `peak / mean`.
    pub peak_to_mean: f64,
    /// The highest second against the mean of its own clock minute, over the
    /// minutes that carry at least a tenth of the busiest minute's count:
    /// burstiness that a slow trend (a crowd draining) does not inflate.
    pub peak_to_minute_mean: f64,
}

/// Summarises `per_second`, skipping its first `skip` seconds.
pub fn series_stats(per_second: &[u64], skip: usize) -> SeriesStats {
    let tail = per_second.get(skip..).unwrap_or(&[]);
    let total: u64 = tail.iter().sum();
    let mean = total as f64 / tail.len().max(1) as f64;
    let peak = tail.iter().copied().max().unwrap_or(0);
    let busiest = tail
        .chunks(60)
        .map(|m| m.iter().sum::<u64>())
        .max()
        .unwrap_or(0);
    let peak_to_minute_mean = tail
        .chunks(60)
        .filter_map(|minute| {
            let count = minute.iter().sum::<u64>();
            let minute_mean = count as f64 / minute.len() as f64;
            let minute_peak = minute.iter().copied().max()? as f64;
            (count > 0 && count * 10 >= busiest).then_some(minute_peak / minute_mean)
        })
        .fold(0.0, f64::max);
    SeriesStats {
        mean,
        peak,
        peak_to_mean: if mean > 0.0 { peak as f64 / mean } else { 0.0 },
        peak_to_minute_mean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v = [10, 20, 30, 40];
        assert_eq!(percentile(&v, 0.25), Some(10));
        assert_eq!(percentile(&v, 0.5), Some(20));
        assert_eq!(percentile(&v, 0.51), Some(30));
        assert_eq!(percentile(&v, 1.0), Some(40));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn band_narrows_with_more_draws() {
        let (lo, hi) = binomial_band(0.5, 100);
        assert!((hi - lo - 2.0 * Z99 * 0.05).abs() < 1e-12);
        let (lo2, hi2) = binomial_band(0.5, 10_000);
        assert!(hi2 - lo2 < (hi - lo) / 9.0);
    }

    #[test]
    fn flat_series_has_no_burst_and_a_spike_shows() {
        let flat = vec![5; 180];
        let s = series_stats(&flat, 60);
        assert_eq!(
            (s.mean, s.peak, s.peak_to_mean, s.peak_to_minute_mean),
            (5.0, 5, 1.0, 1.0)
        );
        let mut spiky = vec![1; 120];
        spiky[90] = 60;
        let s = series_stats(&spiky, 60);
        assert_eq!(s.peak, 60);
        assert!((s.peak_to_minute_mean - 60.0 / (119.0 / 60.0)).abs() < 1e-9);
        // A sparse minute beside a busy one says nothing about bursts.
        let mut sparse = vec![10; 180];
        sparse[120..].fill(0);
        sparse[170] = 5;
        assert_eq!(series_stats(&sparse, 60).peak_to_minute_mean, 1.0);
    }
}
