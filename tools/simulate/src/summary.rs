//! From a run's record to the figures an operator reads.

use serde::Serialize;
use waiting_room::admission::estimate::{draw_interval, draws_for_quantile};
use waiting_room::settings::refresh_mode::RefreshMode;

use crate::attacker::AttackTally;
use crate::bots::Bot;
use crate::engine;
use crate::identity::Uids;
use crate::population::{Kind, Population};
use crate::run_record::{RunRecord, SlotDraws};
use crate::scenario::Scenario;
use crate::stats::{self, SeriesStats};
use crate::toll_payment::TollTally;

/// Seconds skipped before the per-second admission figures (the first minute).
pub const WARM_UP: usize = 60;
/// Slots with fewer distinct draws than this are not checked against the band.
pub const MIN_DRAWS_PER_SLOT: u64 = 30;

/// Seconds skipped before the dispersion index (the first two minutes).
pub const DISPERSION_WARM_UP: usize = 120;
/// Draw periods (`2d`) within which admissions are counted from a person's first arrival.
pub const PERIODS: [u64; 4] = [1, 2, 4, 8];

/// Every figure of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The named room run beside the service room (`None`: the service room).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// `address` (the room's default) or `global` (the VCL's slots).
    pub draw_grid: String,
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
    /// The bot toll paid, and draws held unpaid, by kind of visitor.
    pub toll: TollTally,
    /// The controller's run against its target, when one ran.
    pub closed_loop: Option<ClosedLoopReport>,
}

/// How closely the controller held its target.
///
/// A minute is checked when at least a minute of the target was waiting at its
/// start and people were still waiting at its end (the crowd is not drained yet:
/// the minute that admits the last of them admits what is left), except the first
/// two minutes of a crowd (a minute that starts with nobody waiting, and the
/// next), which depend on the percentage in effect before the controller's writes
/// reach the edge: those are reported in `first_minutes`.
#[derive(Debug, Clone, Serialize)]
pub struct ClosedLoopReport {
    /// New sessions a minute the controller holds.
    pub target_per_minute: f64,
    /// Minutes checked against the target.
    pub minutes_checked: u64,
    /// Of those, within ±10 % of the target.
    pub minutes_within_10_percent: u64,
    /// Of those, above 1.15 × the target.
    pub minutes_above_115_percent: u64,
    /// Whether every checked minute is within ±10 % (and there was one).
    pub all_within_10_percent: bool,
    /// Highest checked minute against the target.
    pub highest_ratio: Option<f64>,
    /// Lowest checked minute against the target.
    pub lowest_ratio: Option<f64>,
    /// The first two minutes of each crowd (minute index, new sessions in it and the next).
    pub first_minutes: Vec<FirstMinutes>,
    /// Minutes from the start until the last person who came was admitted
    /// (`None`: people still waiting at the end).
    pub minutes_to_admit_everyone: Option<f64>,
    /// New sessions of the whole run over the target: the minutes the target implies.
    pub implied_minutes: f64,
    /// `minutes_to_admit_everyone / implied_minutes`.
    pub admit_time_ratio: Option<f64>,
    /// Writes to the config store (heartbeats included).
    pub writes: u64,
    /// Of those, writes that changed the percentage.
    pub percentage_writes: u64,
    /// Writes per hour of simulated time.
    pub writes_per_hour: f64,
    /// Log lines the controller read.
    pub log_lines: u64,
    /// Nanoseconds per request spent writing and parsing its log line.
    pub ns_per_log_line: f64,
    /// Seconds of wall-clock time inside the controller.
    pub controller_seconds: f64,
    /// The percentage in effect at the edge, mean of each minute.
    pub percentage_per_minute: Vec<f64>,
    /// People waiting (arrived, not admitted) at the end of each minute.
    pub waiting_per_minute: Vec<u64>,
    /// Addresses the controller counted as waiting at the last tick of each minute.
    pub controller_waiting_per_minute: Vec<u64>,
    /// New sessions per minute: distinct allow tokens (the minutes checked).
    pub new_sessions_per_minute: Vec<u64>,
    /// People admitted per minute (a person's first admission, on any device).
    pub people_admitted_per_minute: Vec<u64>,
    /// People who gave up waiting (`--abandon`).
    pub people_gave_up: u64,
    /// Times the written percentage turned (up after down, or down after up),
    /// per draw period of the run: oscillation shows as one or more.
    pub direction_changes_per_draw_period: f64,
    /// The largest write over the lowest written in the draw period before it.
    pub largest_rise_per_draw_period: Option<f64>,
    /// The origin behind the room, when one answered (`--origin-capacity`).
    pub origin: Option<crate::origin_model::OriginReport>,
}

/// The first two minutes of a crowd.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FirstMinutes {
    /// Index of the first minute (0: the first minute of the run).
    pub minute: u64,
    /// New sessions in it and in the next.
    pub new_sessions: [u64; 2],
    /// Those against the target.
    pub ratio: [f64; 2],
}

/// What the decisions cost.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Cost {
    /// Requests decided.
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
    /// People admitted (a person's first admission, on any device).
    pub people: u64,
    /// New sessions as the origin and the controller count them: distinct allow
    /// tokens (the address and the token's `exp`) handed out with `session=new`.
    pub allow_tokens: u64,
    /// `allow_tokens / people` (1 when each person admitted is one session).
    pub tokens_per_person: f64,
    /// Per second, after the first minute.
    pub per_second: SeriesStats,
    /// Per clock minute.
    pub per_minute: Vec<u64>,
    /// How far each second strays from its neighbourhood: the index of dispersion
    /// around a centred moving average of one draw period.
    pub dispersion: Dispersion,
}

/// The index of dispersion of admissions per second around their centred moving
/// average over one draw period: for each second `t` after the first two minutes
/// that carries load (admissions or draws), `r_t = a_t - mean(a[t-d ..= t+d])`
/// (the window cut at the run's ends); the index is `variance(r) / mean(a)` over
/// those seconds. About 1 for admissions as even as independent arrivals (a
/// Poisson stream), whatever its slow trend; far above 1 when draws come in
/// bursts. Seconds with neither draws nor admissions are left out (a room with
/// nobody waiting is not uneven), so seconds left empty between bursts count
/// only through their neighbours' averages.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Dispersion {
    /// `variance(r) / mean(a)`.
    pub index: f64,
    /// Seconds counted.
    pub seconds: u64,
    /// Mean admissions per second over them.
    pub mean: f64,
    /// Half the window, seconds (`d`: the window is `2d + 1` seconds).
    pub half_window: u64,
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
    /// The percentage in effect at the draws, as a fraction (the mean over all
    /// draws; each slot is checked against its own draws' mean).
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

/// How soon each kind of visitor gets in, counted from their first arrival (their
/// first device's first request), for people who arrived before
/// `arrivals_before` (99 % of them are admitted within the run; those who are not
/// count as waiting until its end).
///
/// A multi-device person's later devices draw with the tokens their address holds,
/// so their first draw is no fresh chance: what counts is how soon the person got
/// in against one person on one device, not each device's first draw.
#[derive(Debug, Clone, Serialize)]
pub struct Groups {
    /// Only people arriving before this second count.
    pub arrivals_before: u64,
    /// The horizons `k`, in draw periods (`2d`).
    pub periods: [u64; 4],
    /// One person, one device, own address.
    pub single: GroupWaits,
    /// One person with several devices behind their address.
    pub multi_device: GroupWaits,
    /// People behind a shared address.
    pub nat: GroupWaits,
    /// One person with devices on several addresses of their own.
    pub multi_address: GroupWaits,
    /// For each `k`: the share of multi-device people admitted within `k` draw
    /// periods of their first arrival over the share of single-device people.
    pub multi_device_within: [Ratio; 4],
    /// The multi-device advantage: the mean wait of single-device people over
    /// that of multi-device people (1: extra devices get nobody in sooner; 1.2:
    /// they cut the mean wait by a sixth).
    pub multi_device_advantage: Ratio,
    /// The same for people behind a shared address.
    pub nat_ratio: Ratio,
    /// Multi-device people against their own first device alone (static
    /// percentage only: `None` with a controller).
    pub multi_device_alone: Option<Alone>,
}

/// Waits of one kind of visitor from first arrival to admission.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct GroupWaits {
    /// People counted.
    pub people: u64,
    /// Share admitted within each horizon of [`Groups::periods`].
    pub admitted_within: [f64; 4],
    /// Mean wait, seconds.
    pub mean_wait: f64,
    /// Standard deviation of the wait, seconds.
    pub sd_wait: f64,
}

/// A ratio of two groups' figures and the half-width of its 95 % interval
/// (sampling error of both groups, by the delta method).
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
pub struct Ratio {
    /// The ratio (NaN when a group is empty).
    pub value: f64,
    /// Half-width of its 95 % interval.
    pub interval: f64,
}

/// Multi-device people against the same person on their first device alone (that
/// device's requests replayed through the room without the others): a paired
/// comparison, free of the sampling error between people.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Alone {
    /// People counted (those of [`Groups::multi_device`]).
    pub people: u64,
    /// Of those, admitted sooner than their first device alone would have been.
    pub sooner: u64,
    /// Mean seconds gained over everyone counted.
    pub mean_seconds_gained: f64,
    /// Mean wait alone over the mean wait with every device.
    pub advantage: f64,
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
    record: &RunRecord,
) -> RunReport {
    let waiting_peak = waiting_peak(scenario, population, record);
    let cutoff = observed_cutoff(scenario, record);
    let people_admitted = (0..population.people.len())
        .filter(|&i| record.is_admitted(i))
        .count() as u64;
    let allow_tokens: u64 = record.new_tokens.iter().sum();
    RunReport {
        room: None,
        draw_grid: scenario.room.settings().draw_grid.to_string(),
        refresh_mode: mode_name(mode),
        cost: Cost {
            decisions: record.decisions,
            decisions_per_person: record.decisions as f64 / population.people.len().max(1) as f64,
            ns_per_decision: record.decide_nanos as f64 / record.decide_calls.max(1) as f64,
            waiting_peak,
            wall_seconds: record.wall_seconds,
        },
        admissions: Admissions {
            total: record.new_sessions.iter().sum(),
            people: people_admitted,
            allow_tokens,
            tokens_per_person: allow_tokens as f64 / people_admitted.max(1) as f64,
            per_second: stats::series_stats(&record.new_sessions, WARM_UP),
            per_minute: stats::per_minute(&record.new_sessions),
            dispersion: dispersion(
                &record.new_sessions,
                &record.draws,
                DISPERSION_WARM_UP,
                scenario.room.settings().wait_period_duration,
            ),
        },
        origin_requests: stats::series_stats(&record.origin_requests, WARM_UP),
        concurrency: concurrency(record),
        fairness: fairness(record),
        groups: groups(scenario, population, mode, record, cutoff),
        waits: waits(population, record, cutoff),
        attack: record.attack,
        toll: record.toll,
        closed_loop: closed_loop(scenario, population, record),
    }
}

/// Of the percentages written (second, millionths), the times the direction
/// turned, and the largest write over the lowest written within `period`
/// seconds before it (`None` before a second write).
fn turns_and_rises(writes: &[(u64, Option<u64>)], period: u64) -> (u64, Option<f64>) {
    let written: Vec<(u64, f64)> = writes
        .iter()
        .filter_map(|&(t, p)| Some((t, p? as f64)))
        .collect();
    let mut turns = 0;
    let mut last_step: Option<bool> = None;
    for pair in written.windows(2) {
        let up = pair[1].1 > pair[0].1;
        if last_step.is_some_and(|was_up| was_up != up) {
            turns += 1;
        }
        last_step = Some(up);
    }
    let largest = control::percentage_rule::largest_rise(&written, period);
    (turns, largest)
}

/// Ratio of a minute's new sessions to the target, within which it is on target.
pub const BAND: f64 = 0.10;
/// Ratio above which a minute is an overshoot, wherever it is.
pub const CEILING: f64 = 1.15;

/// The first minute the origin rule's minutes are judged from: the rule has
/// had four minutes to find the origin's limit.
pub const ORIGIN_FROM_MINUTE: u64 = 5;

fn closed_loop(
    scenario: &Scenario,
    population: &Population,
    record: &RunRecord,
) -> Option<ClosedLoopReport> {
    let spec = scenario.control?;
    let trace = record.control.as_ref()?;
    let target = spec.target_per_minute;
    // Minutes are checked on new sessions as the origin and the controller see
    // them: distinct allow tokens.
    let per_minute = stats::per_minute(&record.new_tokens);
    let minutes = per_minute.len();
    // People waiting at the end of each minute: arrived and not yet admitted.
    let mut change = vec![0i64; minutes + 1];
    let minute_of = |t: u64| ((t / 60) as usize).min(minutes);
    let mut last_admission = 0;
    let mut everyone_admitted = true;
    let mut gave_up = 0;
    for (i, person) in population.people.iter().enumerate() {
        // A bot that never pays the toll is nobody the room can admit.
        if person.kind == Kind::Bot(Bot::Skipping) && scenario.room.settings().bot_toll_bits > 0 {
            continue;
        }
        change[minute_of(person.arrival)] += 1;
        match (record.admitted_at(i), person.gives_up_after) {
            (Some(t), _) => {
                change[minute_of(t)] -= 1;
                last_admission = last_admission.max(t);
            }
            // Gave up: no longer waiting, and nobody to admit.
            (None, Some(after)) => {
                change[minute_of(person.arrival + after)] -= 1;
                gave_up += 1;
            }
            (None, None) => everyone_admitted = false,
        }
    }
    let waiting: Vec<u64> = change[..minutes]
        .iter()
        .scan(0i64, |level, d| {
            *level += d;
            Some((*level).max(0) as u64)
        })
        .collect();
    let waiting_at_start = |m: usize| if m == 0 { 0 } else { waiting[m - 1] };
    let starts: Vec<usize> = (0..minutes)
        .filter(|&m| waiting_at_start(m) == 0 && waiting[m] > 0)
        .collect();
    let ratio = |n: u64| n as f64 / target;
    let checked: Vec<f64> = (0..minutes)
        .filter(|&m| waiting_at_start(m) as f64 >= target && waiting[m] > 0)
        .filter(|&m| !starts.iter().any(|&s| m == s + 1))
        .map(|m| ratio(per_minute[m]))
        .collect();
    let within = checked
        .iter()
        .filter(|r| (1.0 - BAND..=1.0 + BAND).contains(*r))
        .count() as u64;
    let total: u64 = record.new_tokens.iter().sum();
    let implied_minutes = total as f64 / target;
    let to_admit = everyone_admitted.then_some((last_admission + 1) as f64 / 60.0);
    let hours = scenario.duration as f64 / 3600.0;
    let mut people_per_minute = vec![0u64; minutes];
    for i in 0..population.people.len() {
        if let Some(slot) = record
            .admitted_at(i)
            .and_then(|t| people_per_minute.get_mut(t as usize / 60))
        {
            *slot += 1;
        }
    }
    let wait_period = scenario.room.settings().wait_period_duration;
    let (turns, largest_rise) = turns_and_rises(&trace.writes, 2 * wait_period);
    let draw_periods = scenario.duration as f64 / (2 * wait_period.max(1)) as f64;
    let mut controller_waiting = vec![0; minutes];
    for &(t, count) in &trace.waiting {
        if let Some(slot) = controller_waiting.get_mut(t as usize / 60) {
            *slot = count;
        }
    }
    Some(ClosedLoopReport {
        target_per_minute: target,
        minutes_checked: checked.len() as u64,
        minutes_within_10_percent: within,
        minutes_above_115_percent: checked.iter().filter(|&&r| r > CEILING).count() as u64,
        all_within_10_percent: !checked.is_empty() && within == checked.len() as u64,
        highest_ratio: checked.iter().copied().reduce(f64::max),
        lowest_ratio: checked.iter().copied().reduce(f64::min),
        first_minutes: starts
            .iter()
            .map(|&m| {
                let new_sessions = [0, 1].map(|k| per_minute.get(m + k).copied().unwrap_or(0));
                FirstMinutes {
                    minute: m as u64,
                    new_sessions,
                    ratio: new_sessions.map(ratio),
                }
            })
            .collect(),
        minutes_to_admit_everyone: to_admit,
        implied_minutes,
        admit_time_ratio: to_admit.map(|m| m / implied_minutes),
        writes: trace.counters.writes,
        percentage_writes: trace.writes.iter().filter(|w| w.1.is_some()).count() as u64,
        writes_per_hour: trace.counters.writes as f64 / hours,
        log_lines: trace.counters.lines,
        ns_per_log_line: trace.log_nanos as f64 / record.decisions.max(1) as f64,
        controller_seconds: trace.controller_nanos as f64 / 1e9,
        percentage_per_minute: record
            .percentage
            .chunks(60)
            .map(|m| {
                let sum: f64 = m.iter().map(|&p| f64::from(p)).sum();
                // Millionths to percent, rounded to the four decimals a percentage has.
                (sum / m.len() as f64 / 100.0).round() / 100.0
            })
            .collect(),
        controller_waiting_per_minute: controller_waiting,
        new_sessions_per_minute: per_minute.clone(),
        people_gave_up: gave_up,
        people_admitted_per_minute: people_per_minute,
        direction_changes_per_draw_period: turns as f64 / draw_periods,
        largest_rise_per_draw_period: largest_rise,
        origin: trace.origin.as_ref().map(|minutes| {
            let bound = spec
                .origin
                .map_or(f64::INFINITY, |r| r.healthy.p95_ms as f64);
            crate::origin_model::OriginReport::judge(
                minutes,
                bound,
                ORIGIN_FROM_MINUTE,
                &waiting,
                trace.origin_direction_changes,
            )
        }),
        waiting_per_minute: waiting,
    })
}

/// The name of a refresh mode, as the config store spells it.
pub fn mode_name(mode: RefreshMode) -> &'static str {
    match mode {
        RefreshMode::Eligible => "eligible",
        RefreshMode::Fixed => "fixed",
    }
}

/// Arrival and wait (seconds) of every admitted visitor but attackers, for the heatmap.
pub fn arrival_and_wait(population: &Population, record: &RunRecord) -> Vec<(u64, u64)> {
    population
        .people
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind != Kind::Attacker)
        .filter_map(|(i, p)| Some((p.arrival, record.admitted_at(i)?.saturating_sub(p.arrival))))
        .collect()
}

fn concurrency(record: &RunRecord) -> Concurrency {
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

fn fairness(record: &RunRecord) -> Fairness {
    let expected = mean_draw_fraction(record);
    let checked: Vec<_> = record
        .slots
        .iter()
        .filter(|s| s.draws >= MIN_DRAWS_PER_SLOT)
        .collect();
    let z = |slot: &SlotDraws| {
        let (draws, wins) = (slot.draws, slot.wins);
        let expected = slot.expected_wins / draws as f64;
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
            let (low, high) = stats::binomial_band(s.expected_wins / s.draws as f64, s.draws);
            let fraction = s.wins as f64 / s.draws as f64;
            (low..=high).contains(&fraction)
        })
        .count() as u64;
    Fairness {
        expected,
        slots_checked: checked.len() as u64,
        slots_inside_band: inside,
        share_inside_band: inside as f64 / checked.len().max(1) as f64,
        worst_z: checked.iter().map(|s| z(s).abs()).fold(0.0, f64::max),
        draws: record.slots.iter().map(|s| s.draws).sum(),
        wins: record.slots.iter().map(|s| s.wins).sum(),
    }
}

/// The index of dispersion of `admissions` per second (see [`Dispersion`]), over
/// the seconds from `skip` on that carry admissions or `draws`, around a centred
/// moving average of `2 * half + 1` seconds.
pub fn dispersion(admissions: &[u64], draws: &[u64], skip: usize, half: u64) -> Dispersion {
    let n = admissions.len();
    let half = half as usize;
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u64);
    for &a in admissions {
        prefix.push(prefix[prefix.len() - 1] + a);
    }
    let loaded: Vec<usize> = (skip..n)
        .filter(|&t| admissions[t] > 0 || draws.get(t).is_some_and(|&d| d > 0))
        .collect();
    let residuals: Vec<f64> = loaded
        .iter()
        .map(|&t| {
            let (lo, hi) = (t.saturating_sub(half), (t + half).min(n - 1));
            let mean = (prefix[hi + 1] - prefix[lo]) as f64 / (hi + 1 - lo) as f64;
            admissions[t] as f64 - mean
        })
        .collect();
    let count = loaded.len().max(1) as f64;
    let mean = loaded.iter().map(|&t| admissions[t]).sum::<u64>() as f64 / count;
    let centre = residuals.iter().sum::<f64>() / count;
    let variance = residuals.iter().map(|r| (r - centre).powi(2)).sum::<f64>() / count;
    Dispersion {
        index: if mean > 0.0 { variance / mean } else { 0.0 },
        seconds: loaded.len() as u64,
        mean,
        half_window: half as u64,
    }
}

fn groups(
    scenario: &Scenario,
    population: &Population,
    mode: RefreshMode,
    record: &RunRecord,
    before: u64,
) -> Groups {
    let period = 2 * scenario.room.settings().wait_period_duration;
    let counted = |i: usize| population.people[i].arrival < before;
    let wait = |i: usize, admitted: Option<u64>| {
        let arrival = population.people[i].arrival;
        admitted
            .unwrap_or(scenario.duration)
            .saturating_sub(arrival)
    };
    let of_kind = |kind: Kind| -> Vec<u64> {
        (0..population.people.len())
            .filter(|&i| population.people[i].kind == kind && counted(i))
            .map(|i| wait(i, record.admitted_at(i)))
            .collect()
    };
    let [s, m, n, a] = [
        Kind::Single,
        Kind::MultiDevice,
        Kind::Nat,
        Kind::MultiAddress,
    ]
    .map(|kind| group_waits(&of_kind(kind), period));
    let within = std::array::from_fn(|k| {
        share_ratio(
            m.admitted_within[k],
            m.people,
            s.admitted_within[k],
            s.people,
        )
    });
    let alone = scenario.control.is_none().then(|| {
        let room = engine::Room::new(scenario, mode);
        let uids = Uids::new(scenario.room.settings(), population, None);
        let mut first_device = vec![usize::MAX; population.people.len()];
        for (index, device) in population.devices.iter().enumerate().rev() {
            first_device[device.person as usize] = index;
        }
        let mut alone = Alone::default();
        let (mut with_all, mut by_itself) = (0u64, 0u64);
        for (i, person) in population.people.iter().enumerate() {
            if person.kind != Kind::MultiDevice || !counted(i) {
                continue;
            }
            let actual = wait(i, record.admitted_at(i));
            let solo = wait(
                i,
                engine::alone(&room, population, &uids, first_device[i], scenario.duration),
            );
            alone.people += 1;
            alone.sooner += u64::from(actual < solo);
            with_all += actual;
            by_itself += solo;
        }
        let people = alone.people.max(1) as f64;
        alone.mean_seconds_gained = by_itself.saturating_sub(with_all) as f64 / people;
        alone.advantage = by_itself as f64 / with_all.max(1) as f64;
        alone
    });
    Groups {
        arrivals_before: before,
        periods: PERIODS,
        multi_device_within: within,
        multi_device_advantage: mean_ratio(&s, &m),
        nat_ratio: mean_ratio(&s, &n),
        single: s,
        multi_device: m,
        nat: n,
        multi_address: a,
        multi_device_alone: alone,
    }
}

/// Shares admitted within each of [`PERIODS`] draw periods (`period` seconds),
/// and the mean and spread of `waits`.
fn group_waits(waits: &[u64], period: u64) -> GroupWaits {
    let people = waits.len() as u64;
    let count = people.max(1) as f64;
    let mean = waits.iter().sum::<u64>() as f64 / count;
    let variance = waits
        .iter()
        .map(|&w| (w as f64 - mean).powi(2))
        .sum::<f64>()
        / count;
    GroupWaits {
        people,
        admitted_within: PERIODS
            .map(|k| waits.iter().filter(|&&w| w <= k * period).count() as f64 / count),
        mean_wait: mean,
        sd_wait: variance.sqrt(),
    }
}

/// z of a two-sided 95 % normal interval.
const Z95: f64 = 1.959_963_985;

/// `p1 / p2` for shares of `n1` and `n2` people, with its 95 % interval.
fn share_ratio(p1: f64, n1: u64, p2: f64, n2: u64) -> Ratio {
    if n1 == 0 || n2 == 0 || p2 <= 0.0 {
        return Ratio {
            value: f64::NAN,
            interval: f64::NAN,
        };
    }
    let value = p1 / p2;
    let relative = |p: f64, n: u64| {
        if p > 0.0 {
            (1.0 - p) / (p * n as f64)
        } else {
            0.0
        }
    };
    Ratio {
        value,
        interval: Z95 * value * (relative(p1, n1) + relative(p2, n2)).sqrt(),
    }
}

/// `reference.mean_wait / other.mean_wait`, with its 95 % interval.
fn mean_ratio(reference: &GroupWaits, other: &GroupWaits) -> Ratio {
    if reference.people == 0 || other.people == 0 || other.mean_wait <= 0.0 {
        return Ratio {
            value: f64::NAN,
            interval: f64::NAN,
        };
    }
    let value = reference.mean_wait / other.mean_wait;
    let cv2 = |g: &GroupWaits| (g.sd_wait / g.mean_wait.max(1e-9)).powi(2) / g.people as f64;
    Ratio {
        value,
        interval: Z95 * value * (cv2(reference) + cv2(other)).sqrt(),
    }
}

/// The percentage in effect at the draws, as a fraction: the mean over all draws
/// (`allow_percentage` when nothing changed it); with no draw, `allow_percentage`.
fn mean_draw_fraction(record: &RunRecord) -> f64 {
    let draws: u64 = record.slots.iter().map(|s| s.draws).sum();
    let expected: f64 = record.slots.iter().map(|s| s.expected_wins).sum();
    if draws == 0 {
        f64::from(record.percentage.first().copied().unwrap_or(0)) / 1e6
    } else {
        expected / draws as f64
    }
}

/// Waiting visitors arriving later than this many seconds before the end may
/// still be waiting when it comes: 99 % are admitted within the cutoff (at the
/// mean percentage of the draws).
fn observed_cutoff(scenario: &Scenario, record: &RunRecord) -> u64 {
    let p = mean_draw_fraction(record);
    let draws = draws_for_quantile(p, 0.99).unwrap_or(u64::MAX / 4);
    let wait_period = scenario.room.settings().wait_period_duration;
    let tail = draws
        .saturating_mul(draw_interval(wait_period))
        .saturating_add(3 * wait_period);
    scenario.duration.saturating_sub(tail)
}

/// Waits of single visitors who arrived `before` that second, against their
/// displayed estimates; those still waiting at the end count as waiting longer
/// than any admitted one.
pub fn waits(population: &Population, record: &RunRecord, before: u64) -> Waits {
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

fn waiting_peak(scenario: &Scenario, population: &Population, record: &RunRecord) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_even_stream_has_no_dispersion_and_bursts_or_gaps_show() {
        // Flat: every second at its moving average.
        let flat = vec![10u64; 600];
        let d = dispersion(&flat, &[], 120, 30);
        assert_eq!((d.index, d.seconds, d.mean), (0.0, 480, 10.0));
        // A steady decline is no dispersion either (the average is centred).
        let falling: Vec<u64> = (0..600).map(|t| 1000 - t).collect();
        assert!(dispersion(&falling, &[], 120, 30).index < 0.01);
        // Draws every second, admissions bunched in one second of every ten:
        // residuals of about 90 and -10, variance about 900, index about 90.
        let bunched: Vec<u64> = (0..600)
            .map(|t| if t % 10 == 0 { 100 } else { 0 })
            .collect();
        let d = dispersion(&bunched, &[1; 600], 120, 30);
        assert_eq!((d.seconds, d.mean), (480, 10.0));
        assert!((d.index - 90.0).abs() < 5.0, "{d:?}");
        // Seconds with neither draws nor admissions are not counted.
        let d = dispersion(&bunched, &bunched, 120, 30);
        assert_eq!((d.seconds, d.mean), (48, 100.0));
    }

    #[test]
    fn ratios_carry_their_sampling_error() {
        let r = share_ratio(0.2, 10_000, 0.2, 100_000);
        assert_eq!(r.value, 1.0);
        // sqrt(0.8 / 2000 + 0.8 / 20000) = 0.0210 relative: 95 % at 1.96 x that.
        assert!((r.interval - 1.96 * 0.0210).abs() < 0.001, "{r:?}");
        assert!(share_ratio(0.2, 0, 0.2, 10).value.is_nan());
        let a = GroupWaits {
            people: 100,
            mean_wait: 300.0,
            sd_wait: 300.0,
            ..GroupWaits::default()
        };
        let b = GroupWaits {
            mean_wait: 250.0,
            ..a
        };
        let r = mean_ratio(&a, &b);
        assert!((r.value - 1.2).abs() < 1e-12, "{r:?}");
        assert!(r.interval > 0.2 && r.interval < 0.4, "{r:?}");
    }
}
