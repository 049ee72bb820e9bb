//! From a run's record to the figures an operator reads.

use serde::Serialize;
use waiting_room::estimate::{draw_interval, draws_for_quantile};
use waiting_room::refresh::RefreshMode;

use crate::attacker::AttackTally;
use crate::population::{Kind, Population};
use crate::record::Record;
use crate::scenario::Scenario;
use crate::stats::{self, SeriesStats};

/// Seconds skipped before the per-second admission figures (the first minute).
pub const WARM_UP: usize = 60;
/// Slots with fewer distinct draws than this are not checked against the band.
pub const MIN_DRAWS_PER_SLOT: u64 = 30;

/// Every figure of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `eligible` (this program) or `fixed` (the VCL).
    pub refresh_mode: &'static str,
    /// What the decisions cost.
    pub cost: Cost,
    /// New sessions at the origin.
    pub admissions: Admissions,
    /// All requests forwarded to the origin, per second after the first minute.
    pub origin_requests: SeriesStats,
    /// Sessions at once.
    pub concurrency: Concurrency,
    /// The lottery's admission fraction slot by slot.
    pub fairness: Fairness,
    /// Admission chances by kind of visitor.
    pub groups: Groups,
    /// Realised waits against the displayed estimate.
    pub waits: Waits,
    /// What replaying tokens achieved.
    pub attack: AttackTally,
}

/// What the decisions cost.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Cost {
    /// Calls of `decide`.
    pub decisions: u64,
    /// Per person.
    pub decisions_per_person: f64,
    /// Mean nanoseconds inside one `decide` call.
    pub ns_per_decision: f64,
    /// Most people waiting at once (arrived, not yet admitted).
    pub waiting_peak: u64,
    /// Wall-clock seconds of the whole run.
    pub wall_seconds: f64,
}

/// New sessions at the origin.
#[derive(Debug, Clone, Serialize)]
pub struct Admissions {
    /// In the whole run.
    pub total: u64,
    /// Per second, after the first minute.
    pub per_second: SeriesStats,
    /// Per clock minute.
    pub per_minute: Vec<u64>,
}

/// Sessions at once.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Concurrency {
    /// Most visitors browsing at once (between admission and their last request).
    pub browsing_peak: i64,
    /// Mean of that, after the first minute.
    pub browsing_mean: f64,
    /// Most valid sessions at once (until `allow_period_timeout` after the last request).
    pub holding_peak: i64,
}

/// The lottery's admission fraction per slot against its 99 % binomial band.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Fairness {
    /// `allow_percentage / 100`.
    pub expected: f64,
    /// Slots with at least [`MIN_DRAWS_PER_SLOT`] distinct draws.
    pub slots_checked: u64,
    /// Of those, inside the band.
    pub slots_inside_band: u64,
    /// `slots_inside_band / slots_checked` (about 0.99 when the draw is fair).
    pub share_inside_band: f64,
    /// Largest |z| of a slot's fraction.
    pub worst_z: f64,
    /// All draws.
    pub draws: u64,
    /// All wins.
    pub wins: u64,
}

/// Probability of admission in a person's first round of draws (the first draw of
/// each of their devices), by kind of visitor.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Groups {
    /// One person, one device, own address.
    pub single: Share,
    /// One person with several devices behind their address.
    pub multi_device: Share,
    /// `multi_device / single`: what extra devices buy.
    pub multi_device_advantage: f64,
    /// People behind a shared address.
    pub nat: Share,
    /// `nat / single`.
    pub nat_ratio: f64,
}

/// A probability and what it was measured on.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Share {
    /// People counted.
    pub people: u64,
    /// Of those, admitted in their first round.
    pub admitted: u64,
    /// `admitted / people`.
    pub probability: f64,
}

/// Realised waits of single visitors against the estimate their first page showed.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Waits {
    /// Only people arriving before this second count (later ones may not be admitted by the end).
    pub arrivals_before: u64,
    /// People counted.
    pub people: u64,
    /// Of those, not admitted by the end of the run.
    pub not_admitted: u64,
    /// Realised wait percentiles, seconds (`None`: beyond the run); the mean is of
    /// those admitted.
    pub realised: Percentiles,
    /// Mean of the estimates shown, seconds.
    pub displayed: Percentiles,
    /// Share of people admitted within their own displayed p25, p50, p75
    /// (0.25, 0.50, 0.75 when the estimate is calibrated).
    pub within_own_estimate: [f64; 3],
}

/// Wait percentiles and mean, seconds.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Percentiles {
    /// 25th percentile.
    pub p25: Option<u64>,
    /// Median.
    pub p50: Option<u64>,
    /// 75th percentile.
    pub p75: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// Mean.
    pub mean: Option<f64>,
}

/// Summarises `record`, a run of `scenario` in `mode` over `population`.
pub fn summarise(
    scenario: &Scenario,
    population: &Population,
    mode: RefreshMode,
    record: &Record,
) -> RunReport {
    let waiting_peak = waiting_peak(scenario, population, record);
    RunReport {
        refresh_mode: mode_name(mode),
        cost: Cost {
            decisions: record.decisions,
            decisions_per_person: record.decisions as f64 / population.people.len().max(1) as f64,
            ns_per_decision: record.decide_nanos as f64 / record.decisions.max(1) as f64,
            waiting_peak,
            wall_seconds: record.wall_seconds,
        },
        admissions: Admissions {
            total: record.new_sessions.iter().sum(),
            per_second: stats::series_stats(&record.new_sessions, WARM_UP),
            per_minute: record
                .new_sessions
                .chunks(60)
                .map(|m| m.iter().sum())
                .collect(),
        },
        origin_requests: stats::series_stats(&record.origin_requests, WARM_UP),
        concurrency: concurrency(record),
        fairness: fairness(scenario, record),
        groups: groups(scenario, population, record),
        waits: waits(population, record, observed_cutoff(scenario)),
        attack: record.attack,
    }
}

/// The name of a refresh mode, as the config store spells it.
pub fn mode_name(mode: RefreshMode) -> &'static str {
    match mode {
        RefreshMode::Eligible => "eligible",
        RefreshMode::Fixed => "fixed",
    }
}

/// Arrival and wait (seconds) of every admitted visitor but attackers, for the heatmap.
pub fn arrival_and_wait(population: &Population, record: &Record) -> Vec<(u64, u64)> {
    population
        .people
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind != Kind::Attacker)
        .filter_map(|(i, p)| Some((p.arrival, record.admitted_at(i)?.saturating_sub(p.arrival))))
        .collect()
}

fn concurrency(record: &Record) -> Concurrency {
    let running = |delta: &[i64]| -> Vec<i64> {
        delta
            .iter()
            .scan(0i64, |level, d| {
                *level += d;
                Some(*level)
            })
            .collect()
    };
    let browsing = running(&record.browsing_delta);
    let holding = running(&record.holding_delta);
    let tail = browsing.get(WARM_UP..).unwrap_or(&[]);
    Concurrency {
        browsing_peak: browsing.iter().copied().max().unwrap_or(0),
        browsing_mean: tail.iter().sum::<i64>() as f64 / tail.len().max(1) as f64,
        holding_peak: holding.iter().copied().max().unwrap_or(0),
    }
}

fn fairness(scenario: &Scenario, record: &Record) -> Fairness {
    let expected = scenario.room.allow_percentage.fraction();
    let checked: Vec<_> = record
        .slots
        .iter()
        .filter(|s| s.draws >= MIN_DRAWS_PER_SLOT)
        .collect();
    let z = |draws: u64, wins: u64| {
        let sigma = (expected * (1.0 - expected) / draws as f64).sqrt();
        let fraction = wins as f64 / draws as f64;
        if sigma > 0.0 {
            (fraction - expected) / sigma
        } else if fraction == expected {
            0.0
        } else {
            f64::INFINITY
        }
    };
    let inside = checked
        .iter()
        .filter(|s| {
            let (low, high) = stats::binomial_band(expected, s.draws);
            let fraction = s.wins as f64 / s.draws as f64;
            (low..=high).contains(&fraction)
        })
        .count() as u64;
    Fairness {
        expected,
        slots_checked: checked.len() as u64,
        slots_inside_band: inside,
        share_inside_band: inside as f64 / checked.len().max(1) as f64,
        worst_z: checked
            .iter()
            .map(|s| z(s.draws, s.wins).abs())
            .fold(0.0, f64::max),
        draws: record.slots.iter().map(|s| s.draws).sum(),
        wins: record.slots.iter().map(|s| s.wins).sum(),
    }
}

/// Each device's first draw comes within `3d` of its arrival; a person counts
/// when every device of theirs has had time for it.
fn admission_window(scenario: &Scenario) -> u64 {
    3 * scenario.room.wait_period + scenario.mix.device_spread
}

fn groups(scenario: &Scenario, population: &Population, record: &Record) -> Groups {
    let window = admission_window(scenario);
    let share = |kind: Kind| {
        let mut share = Share::default();
        for (i, person) in population.people.iter().enumerate() {
            if person.kind != kind || person.arrival + window >= scenario.duration {
                continue;
            }
            if let Some(won) = record.won_first_round(i) {
                share.people += 1;
                share.admitted += u64::from(won);
            }
        }
        share.probability = share.admitted as f64 / share.people.max(1) as f64;
        share
    };
    let single = share(Kind::Single);
    let multi_device = share(Kind::MultiDevice);
    let nat = share(Kind::Nat);
    let ratio = |share: Share| {
        if single.probability > 0.0 && share.people > 0 {
            share.probability / single.probability
        } else {
            f64::NAN
        }
    };
    Groups {
        single,
        multi_device,
        multi_device_advantage: ratio(multi_device),
        nat,
        nat_ratio: ratio(nat),
    }
}

/// Waiting visitors arriving later than this many seconds before the end may
/// still be waiting when it comes: 99 % are admitted within the cutoff.
fn observed_cutoff(scenario: &Scenario) -> u64 {
    let p = scenario.room.allow_percentage.fraction();
    let draws = draws_for_quantile(p, 0.99).unwrap_or(u64::MAX / 4);
    let tail = draws
        .saturating_mul(draw_interval(scenario.room.wait_period))
        .saturating_add(3 * scenario.room.wait_period);
    scenario.duration.saturating_sub(tail)
}

/// Waits of single visitors who arrived `before` that second, against their
/// displayed estimates; those still waiting at the end count as waiting longer
/// than any admitted one.
pub fn waits(population: &Population, record: &Record, before: u64) -> Waits {
    let mut realised = Vec::new();
    let mut shown = [Vec::new(), Vec::new(), Vec::new()];
    let mut shown_mean = 0.0;
    let mut within = [0u64; 3];
    for (i, person) in population.people.iter().enumerate() {
        if person.kind != Kind::Single || person.arrival >= before {
            continue;
        }
        let Some((page_at, estimate)) = record.first_estimate[i] else {
            continue;
        };
        // The estimate counts from the page; the wait from the arrival (the same second here).
        let offset = page_at - person.arrival;
        let wait = record
            .admitted_at(i)
            .map_or(u64::MAX, |t| t - person.arrival);
        let own = [estimate.p25, estimate.p50, estimate.p75].map(|e| e + offset);
        for (k, e) in own.iter().enumerate() {
            shown[k].push(*e);
            within[k] += u64::from(wait <= *e);
        }
        shown_mean += (estimate.mean + offset) as f64;
        realised.push(wait);
    }
    realised.sort_unstable();
    let people = realised.len() as u64;
    let admitted: Vec<u64> = realised
        .iter()
        .copied()
        .filter(|&w| w != u64::MAX)
        .collect();
    let known = |q: f64| stats::percentile(&realised, q).filter(|&w| w != u64::MAX);
    let mean_of =
        |v: &[u64]| (!v.is_empty()).then(|| v.iter().sum::<u64>() as f64 / v.len() as f64);
    let round = |m: Option<f64>| m.map(|m| m.round() as u64);
    Waits {
        arrivals_before: before,
        people,
        not_admitted: people - admitted.len() as u64,
        realised: Percentiles {
            p25: known(0.25),
            p50: known(0.50),
            p75: known(0.75),
            p90: known(0.90),
            mean: mean_of(&admitted),
        },
        displayed: Percentiles {
            p25: round(mean_of(&shown[0])),
            p50: round(mean_of(&shown[1])),
            p75: round(mean_of(&shown[2])),
            p90: None,
            mean: (people > 0).then(|| shown_mean / people as f64),
        },
        within_own_estimate: within.map(|w| w as f64 / people.max(1) as f64),
    }
}

fn waiting_peak(scenario: &Scenario, population: &Population, record: &Record) -> u64 {
    let mut delta = vec![0i64; scenario.duration as usize + 1];
    for (i, person) in population.people.iter().enumerate() {
        if let Some(slot) = delta.get_mut(person.arrival as usize) {
            *slot += 1;
        }
        if let Some(slot) = record
            .admitted_at(i)
            .and_then(|t| delta.get_mut(t as usize))
        {
            *slot -= 1;
        }
    }
    let mut level = 0i64;
    let mut peak = 0i64;
    for d in delta {
        level += d;
        peak = peak.max(level);
    }
    peak.max(0) as u64
}
