//! Times a path and its floor in the same run, round after round, and keeps the
//! median of each: the ratio of the two medians is the path's overhead.

use std::hint::black_box;
use std::time::Instant;

use crate::cases::Case;

/// How long to measure (also `path-bench`'s options).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Effort {
    /// Rounds; each times every case's path, decision and floor once, in turn.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), default_value_t = Effort::default().rounds)]
    pub rounds: u32,
    /// Calls per timed batch.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), default_value_t = Effort::default().iterations)]
    pub iterations: u32,
}

impl Default for Effort {
    fn default() -> Self {
        Effort {
            rounds: 31,
            iterations: 2_000,
        }
    }
}

/// Rounds timed first and not kept.
const WARM_UP_ROUNDS: u32 = 3;

/// Median nanoseconds per call of one case.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    /// The case's name.
    pub name: &'static str,
    /// HMAC-SHA256 computations in the floor.
    pub floor_macs: usize,
    /// `plan()`: the whole per-request core.
    pub plan_ns: f64,
    /// `decide()` alone.
    pub decide_ns: f64,
    /// The floor: the HMAC work the path cannot avoid.
    pub floor_ns: f64,
}

impl Figures {
    /// `plan()` ÷ floor.
    pub fn plan_ratio(&self) -> f64 {
        self.plan_ns / self.floor_ns
    }

    /// `decide()` ÷ floor.
    pub fn decide_ratio(&self) -> f64 {
        self.decide_ns / self.floor_ns
    }
}

/// Measures every case, round-robin: each round times every case's path, decision
/// and floor in turn, so a slow moment of the machine falls on all of them alike.
pub fn measure(cases: &[Case], effort: Effort) -> Vec<Figures> {
    let mut batches: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for case in cases {
        batches.push(Box::new(move || {
            per_call(effort.iterations, || drop(black_box(case.plan())))
        }));
        batches.push(Box::new(move || {
            per_call(effort.iterations, || drop(black_box(case.decide())))
        }));
        batches.push(Box::new(move || {
            per_call(effort.iterations, || {
                black_box(case.floor());
            })
        }));
    }
    let medians = round_robin(effort.rounds, &mut batches);
    cases
        .iter()
        .zip(medians.chunks_exact(3))
        .map(|(case, m)| Figures {
            name: case.name,
            floor_macs: case.floor_macs(),
            plan_ns: m[0],
            decide_ns: m[1],
            floor_ns: m[2],
        })
        .collect()
}

/// Runs every batch in turn, round after round (the first [`WARM_UP_ROUNDS`] not
/// kept), and returns the median time of each.
fn round_robin(rounds: u32, batches: &mut [Box<dyn FnMut() -> f64 + '_>]) -> Vec<f64> {
    let mut samples = vec![Vec::new(); batches.len()];
    for round in 0..WARM_UP_ROUNDS + rounds {
        for (batch, kept) in batches.iter_mut().zip(samples.iter_mut()) {
            let time = batch();
            if round >= WARM_UP_ROUNDS {
                kept.push(time);
            }
        }
    }
    samples.iter_mut().map(|s| median(s)).collect()
}

/// A Markdown table of the figures.
pub fn table(figures: &[Figures]) -> String {
    let mut out = String::from(
        "| path | HMACs | plan() ns | decide() ns | floor ns | plan/floor | decide/floor |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} |\n",
            f.name,
            f.floor_macs,
            f.plan_ns,
            f.decide_ns,
            f.floor_ns,
            f.plan_ratio(),
            f.decide_ratio(),
        ));
    }
    out
}

/// Nanoseconds per call of `f`, over `iterations` calls.
fn per_call(iterations: u32, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed().as_nanos() as f64 / f64::from(iterations.max(1))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn table_has_a_row_per_case() {
        let cases = crate::cases::all().unwrap();
        let effort = Effort {
            rounds: 1,
            iterations: 1,
        };
        let figures = measure(&cases, effort);
        let table = table(&figures);
        assert_eq!(table.lines().count(), 2 + crate::cases::NAMES.len());
        assert!(table.contains("| allow-renewal | 2 |"));
    }
}
