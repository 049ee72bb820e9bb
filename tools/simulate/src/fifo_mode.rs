//! FIFO mode (`simulate run --queueing fifo`): the room with
//! `queueing_method = fifo`, and the FIFO rule ([`control::fifo_rule`])
//! in the loop.
//!
//! It runs the simulator's one event loop ([`crate::engine`]) with FIFO mode's
//! [`Method`]. Every request is decided by the room's own
//! [`waiting_room::admission::decision::decide`] to the millisecond: a person's first request comes at their own millisecond
//! (the people arriving within one second are spread evenly over it, in a random
//! order, so they hold distinct places whenever a second has at most a thousand
//! of them; beyond that, people sharing a millisecond share a place, as they
//! would at the edge). Every waiting page comes back when the room's own
//! [`waiting_room::outlook`] says. Every log line is written by
//! [`waiting_room::log::decision_line`], read back by [`control::record::Record`]
//! and reaches the rule `--log-delay` seconds later; the rule ticks every
//! `--tick` seconds and its writes (`fifo_cutoff`, `fifo_rate`, the heartbeat)
//! reach the room `--propagation-delay` seconds later. Until the first write
//! lands the room has no cutoff and admits nobody.
//!
//! Some people give up (`--abandon SHARE:SECONDS`: that share of people leave
//! after a wait drawn evenly up to SECONDS, and stop polling; their places lapse
//! `fifo_hold` later).
//!
//! It reports Kendall's tau-b between arrival order (the place the room gave)
//! and admission order for the people admitted, the waits by arrival decile, and
//! the admissions per minute against the target, checked as the closed loop
//! checks them.

use std::collections::HashMap;
use std::path::Path;

use control::fifo_rule::{FifoController, FifoOptions, FifoPolicy};
use serde::Serialize;
use waiting_room::settings::config::{QueueingMethod, Settings};
use waiting_room::settings::refresh_mode::RefreshMode;

use crate::closed_loop::ClosedLoop;
use crate::engine::{self, Method, OnceIn, Room};
use crate::population::Population;
use crate::progress::Progress;
use crate::rng::Rng;
use crate::run_record::RunRecord;
use crate::scenario::{Control, Scenario};
use crate::stats::{self, percentile};

/// A checked minute within ±10 % of the target.
const BAND: f64 = 0.10;

/// What FIFO mode adds to a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FifoSpec {
    /// The room's `fifo_hold`, seconds.
    pub fifo_hold: u64,
}

impl Default for FifoSpec {
    fn default() -> FifoSpec {
        FifoSpec {
            fifo_hold: waiting_room::settings::config::Settings::default().fifo_hold,
        }
    }
}

/// The rule's options for `control` in `scenario`'s room.
pub fn options(control: &Control, scenario: &Scenario, spec: &FifoSpec) -> FifoOptions {
    FifoOptions {
        target_per_minute: control.target_per_minute,
        max_active: control.max_active,
        tick: control.tick,
        wait_period: scenario.room.settings().wait_period_duration,
        fifo_hold: spec.fifo_hold,
        expected_propagation: control.expected_propagation,
        ..FifoOptions::default()
    }
}

/// Waits of the people who arrived in one tenth of the arrival order.
#[derive(Debug, Clone, Serialize)]
pub struct Decile {
    /// 1 (the first tenth to arrive) to 10.
    pub decile: u32,
    /// Arrival of its first and last person, seconds from the start.
    pub arrived: (u64, u64),
    /// People in it who stayed (did not give up before admission).
    pub stayed: u64,
    /// Of those, admitted by the end.
    pub admitted: u64,
    /// Wait to admission, seconds: median, 90th percentile, longest.
    pub wait_p50: Option<u64>,
    /// 90th percentile.
    pub wait_p90: Option<u64>,
    /// Longest.
    pub wait_max: Option<u64>,
}

/// The first two minutes of a crowd (the rule's first writes land in them).
#[derive(Debug, Clone, Serialize)]
pub struct FirstMinutes {
    /// Minute index.
    pub minute: u64,
    /// Admissions in it and the next.
    pub admitted: [u64; 2],
}

/// A FIFO run's figures.
#[derive(Debug, Clone, Serialize)]
pub struct FifoReport {
    /// The FIFO settings of the run.
    pub spec: FifoSpec,
    /// The controller's target.
    pub target_per_minute: f64,
    /// Propagation and log delays, seconds.
    pub propagation_delay: u64,
    /// Seconds from a request to the rule reading its line.
    pub log_delay: u64,
    /// People.
    pub people: u64,
    /// Who gave up before admission.
    pub abandoned: u64,
    /// Admitted by the end.
    pub admitted: u64,
    /// New sessions as the origin and the controller count them: distinct allow
    /// tokens handed out with `session=new`, in the whole run.
    pub allow_tokens: u64,
    /// `allow_tokens / admitted` (1 when each person admitted is one session).
    pub tokens_per_person: f64,
    /// Who stayed and were still waiting at the end.
    pub still_waiting: u64,
    /// Kendall's tau-b between place and admission time, over the admitted.
    pub kendall_tau: Option<f64>,
    /// Pairs of admitted people sharing a place (tied arrivals).
    pub tied_places: u64,
    /// People admitted per minute.
    pub per_minute: Vec<u64>,
    /// New sessions per minute: distinct allow tokens handed out with
    /// `session=new` (what the origin and the controller see; the checked minutes
    /// count these).
    pub new_sessions_per_minute: Vec<u64>,
    /// Minutes checked (at least a minute of target waiting at the start, people
    /// still waiting at the end, not the first two of a crowd).
    pub minutes_checked: u64,
    /// Of those, within ±10 % of the target.
    pub minutes_within_10_percent: u64,
    /// Lowest and highest checked minute over the target.
    pub lowest_ratio: Option<f64>,
    /// Highest.
    pub highest_ratio: Option<f64>,
    /// Mean of the checked minutes over the target.
    pub mean_ratio: Option<f64>,
    /// The first two minutes of each crowd.
    pub first_minutes: Vec<FirstMinutes>,
    /// Minutes from the start until the last admission, when everyone who stayed got in.
    pub minutes_to_admit_everyone: Option<f64>,
    /// Admissions over the target: the minutes the target implies.
    pub implied_minutes: f64,
    /// Waits by arrival decile.
    pub deciles: Vec<Decile>,
    /// Writes, and writes that moved the cutoff.
    pub writes: u64,
    /// Writes that moved the cutoff.
    pub cutoff_writes: u64,
    /// The rule's show-up shares at the end (live, stale).
    pub show_up: [f64; 2],
    /// The propagation delay the rule measured.
    pub measured_propagation: Option<u64>,
    /// Decisions taken.
    pub decisions: u64,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}

/// Runs `scenario` in FIFO mode; `Err` when it has no controller or the rule
/// refuses its options.
pub fn run(
    scenario: &Scenario,
    spec: &FifoSpec,
    population: &Population,
    verbose: bool,
) -> Result<(FifoReport, Vec<(u64, u64)>), String> {
    let method = method(scenario, spec, population)?;
    let mut progress = Progress::new("fifo", verbose);
    let (record, rule) = engine::run_method(scenario, population, method, &mut progress);
    report(scenario, spec, population, &record, rule)
}

/// FIFO mode's [`Method`] for `scenario` over `population`: the room in FIFO
/// mode and the FIFO rule in the loop; `Err` when it has no controller or the
/// rule refuses its options.
pub fn method(
    scenario: &Scenario,
    spec: &FifoSpec,
    population: &Population,
) -> Result<Method<FifoPolicy>, String> {
    let control = scenario
        .control
        .ok_or("--queueing fifo needs --target-per-minute (the FIFO rule in the loop)")?;
    let rule = FifoController::new(options(&control, scenario, spec))
        .map_err(|e| format!("the FIFO rule refuses its options: {e}"))?;
    Ok(Method {
        room: Room::with_settings(Settings {
            queueing_method: QueueingMethod::Fifo,
            fifo_hold: spec.fifo_hold,
            ..scenario.room.refreshing(RefreshMode::Eligible)
        }),
        first_request: first_requests(scenario, population),
        closed_loop: Some(ClosedLoop::new(control, rule)),
        once_in: OnceIn::LeaveAtWaitingPage,
    })
}

/// The figures of `record`, a FIFO run of `scenario` over `population` with
/// the rule as it ended, and each admitted person's arrival and wait.
pub fn report(
    scenario: &Scenario,
    spec: &FifoSpec,
    population: &Population,
    record: &RunRecord,
    rule: Option<FifoController>,
) -> Result<(FifoReport, Vec<(u64, u64)>), String> {
    let (Some(control), Some(trace), Some(rule)) = (&scenario.control, &record.control, rule)
    else {
        return Err("the FIFO rule did not run in the loop".into());
    };
    let status = rule.status(0);
    let report = summarise(Summary {
        scenario,
        control,
        spec,
        population,
        record,
    });
    let points: Vec<(u64, u64)> = (0..population.people.len())
        .filter_map(|i| {
            let admitted = record.admitted_at(i)?;
            let arrival = population.people[i].arrival;
            Some((arrival, admitted.saturating_sub(arrival)))
        })
        .collect();
    Ok((
        FifoReport {
            writes: trace.writes.len() as u64,
            cutoff_writes: trace.writes.iter().filter(|w| w.1.is_some()).count() as u64,
            show_up: [status.show_up, status.show_up_stale],
            measured_propagation: status.propagation,
            decisions: record.decisions,
            wall_seconds: record.wall_seconds,
            ..report
        },
        points,
    ))
}

/// Each device's first request, milliseconds from the start: a second's
/// arrivals spread evenly over it, in a random order.
fn first_requests(scenario: &Scenario, population: &Population) -> Vec<u64> {
    let mut rng = Rng::new(scenario.seed ^ 0x5f1f_0f1f_0000_0001);
    let mut by_second: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, d) in population.devices.iter().enumerate() {
        by_second.entry(d.arrival).or_default().push(i);
    }
    let mut first_ms = vec![0u64; population.devices.len()];
    let mut seconds: Vec<_> = by_second.into_iter().collect();
    seconds.sort_unstable_by_key(|(s, _)| *s);
    for (second, mut devices) in seconds {
        for i in (1..devices.len()).rev() {
            devices.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let k = devices.len() as u64;
        for (j, &d) in devices.iter().enumerate() {
            first_ms[d] = second * 1000 + j as u64 * 1000 / k;
        }
    }
    first_ms
}

struct Summary<'a> {
    scenario: &'a Scenario,
    control: &'a Control,
    spec: &'a FifoSpec,
    population: &'a Population,
    /// The run: places, admissions (milliseconds from the start), who gave up,
    /// and new sessions (distinct allow tokens handed out with `session=new`).
    record: &'a RunRecord,
}

impl Summary<'_> {
    /// `person`'s place (`u64::MAX`: none).
    fn place(&self, person: usize) -> u64 {
        self.record.place(person).unwrap_or(u64::MAX)
    }
}

fn summarise(s: Summary<'_>) -> FifoReport {
    let target = s.control.target_per_minute;
    let people = s.population.people.len();
    let minutes = s.scenario.duration.div_ceil(60) as usize;
    let new_sessions = stats::per_minute(&s.record.new_tokens);
    let mut per_minute = vec![0u64; minutes];
    // People waiting at the end of each minute: arrived, not admitted, not gone.
    let mut change = vec![0i64; minutes + 1];
    let minute_of = |ms: u64| ((ms / 1000) as usize / 60).min(minutes);
    let mut last_admission = 0;
    let mut everyone = true;
    for i in 0..people {
        change[(s.population.people[i].arrival as usize / 60).min(minutes)] += 1;
        match s.record.admitted_ms(i) {
            Some(ms) => {
                if let Some(slot) = per_minute.get_mut(minute_of(ms)) {
                    *slot += 1;
                }
                change[minute_of(ms)] -= 1;
                last_admission = last_admission.max(ms / 1000);
            }
            None if s.record.gave_up(i) => {
                let person = &s.population.people[i];
                if let Some(after) = person.gives_up_after {
                    change[minute_of((person.arrival + after) * 1000)] -= 1;
                }
            }
            None => everyone = false,
        }
    }
    let waiting: Vec<u64> = change[..minutes]
        .iter()
        .scan(0i64, |level, d| {
            *level += d;
            Some((*level).max(0) as u64)
        })
        .collect();
    let at_start = |m: usize| if m == 0 { 0 } else { waiting[m - 1] };
    let starts: Vec<usize> = (0..minutes)
        .filter(|&m| at_start(m) == 0 && waiting[m] > 0)
        .collect();
    let still = |m: usize| {
        // Someone who stayed is still waiting at the end of minute m.
        let end_ms = (m as u64 + 1) * 60 * 1000;
        (0..people).any(|i| {
            !s.record.gave_up(i)
                && s.population.people[i].arrival * 1000 < end_ms
                && s.record.admitted_ms(i).is_none_or(|a| a >= end_ms)
        })
    };
    let checked: Vec<f64> = (0..minutes)
        .filter(|&m| at_start(m) as f64 >= target && !starts.iter().any(|&s| m == s + 1))
        .filter(|&m| still(m))
        .map(|m| new_sessions.get(m).copied().unwrap_or(0) as f64 / target)
        .collect();
    let within = checked
        .iter()
        .filter(|r| (1.0 - BAND..=1.0 + BAND).contains(*r))
        .count() as u64;
    let admitted: Vec<(u64, u64)> = (0..people)
        .filter_map(|i| Some((s.place(i), s.record.admitted_ms(i)?)))
        .collect();
    let (tau, tied) = kendall_tau_b(&admitted);
    let total: u64 = per_minute.iter().sum();
    let abandoned = (0..people).filter(|&i| s.record.gave_up(i)).count() as u64;
    FifoReport {
        spec: *s.spec,
        target_per_minute: target,
        propagation_delay: s.control.propagation_delay,
        log_delay: s.control.log_delay,
        people: people as u64,
        abandoned,
        admitted: admitted.len() as u64,
        allow_tokens: new_sessions.iter().sum(),
        tokens_per_person: new_sessions.iter().sum::<u64>() as f64 / admitted.len().max(1) as f64,
        still_waiting: people as u64 - abandoned - admitted.len() as u64,
        kendall_tau: tau,
        tied_places: tied,
        minutes_checked: checked.len() as u64,
        minutes_within_10_percent: within,
        lowest_ratio: checked.iter().copied().reduce(f64::min),
        highest_ratio: checked.iter().copied().reduce(f64::max),
        mean_ratio: (!checked.is_empty())
            .then(|| checked.iter().sum::<f64>() / checked.len() as f64),
        first_minutes: starts
            .iter()
            .map(|&m| FirstMinutes {
                minute: m as u64,
                admitted: [0, 1].map(|k| per_minute.get(m + k).copied().unwrap_or(0)),
            })
            .collect(),
        minutes_to_admit_everyone: everyone.then_some((last_admission + 1) as f64 / 60.0),
        implied_minutes: total as f64 / target,
        deciles: deciles(&s),
        per_minute,
        new_sessions_per_minute: new_sessions,
        writes: 0,
        cutoff_writes: 0,
        show_up: [1.0, 1.0],
        measured_propagation: None,
        decisions: 0,
        wall_seconds: 0.0,
    }
}

/// Waits by tenth of the arrival order, over the people who stayed.
fn deciles(s: &Summary<'_>) -> Vec<Decile> {
    let mut stayed: Vec<usize> = (0..s.population.people.len())
        .filter(|&i| !s.record.gave_up(i))
        .collect();
    stayed.sort_by_key(|&i| (s.place(i), i));
    let n = stayed.len();
    (0..10)
        .filter_map(|k| {
            let part = &stayed[k * n / 10..(k + 1) * n / 10];
            let first = *part.first()?;
            let last = *part.last()?;
            let mut waits: Vec<u64> = part
                .iter()
                .filter_map(|&i| {
                    let arrived = s.population.people[i].arrival * 1000;
                    Some(s.record.admitted_ms(i)?.saturating_sub(arrived) / 1000)
                })
                .collect();
            waits.sort_unstable();
            Some(Decile {
                decile: k as u32 + 1,
                arrived: (
                    s.population.people[first].arrival,
                    s.population.people[last].arrival,
                ),
                stayed: part.len() as u64,
                admitted: waits.len() as u64,
                wait_p50: percentile(&waits, 0.5),
                wait_p90: percentile(&waits, 0.9),
                wait_max: waits.last().copied(),
            })
        })
        .collect()
}

/// Kendall's tau-b of the pairs `(x, y)` (Knight's O(n log n) algorithm), and
/// the pairs tied in `x`; `None` with fewer than two pairs or no order in one of
/// them.
pub fn kendall_tau_b(pairs: &[(u64, u64)]) -> (Option<f64>, u64) {
    let n = pairs.len() as u64;
    if n < 2 {
        return (None, 0);
    }
    let mut sorted = pairs.to_vec();
    sorted.sort_unstable();
    let ties = |keys: &mut dyn Iterator<Item = (u64, u64)>| -> u64 {
        let mut total = 0;
        let mut run = 0u64;
        let mut last = None;
        for key in keys {
            if Some(key) == last {
                run += 1;
            } else {
                total += run * (run + 1) / 2;
                run = 0;
                last = Some(key);
            }
        }
        total + run * (run + 1) / 2
    };
    let n1 = ties(&mut sorted.iter().map(|&(x, _)| (x, 0)));
    let n3 = ties(&mut sorted.iter().copied());
    let mut ys: Vec<u64> = sorted.iter().map(|&(_, y)| y).collect();
    let swaps = merge_count(&mut ys);
    let n2 = ties(&mut ys.iter().map(|&y| (y, 0)));
    let n0 = n * (n - 1) / 2;
    let numerator = n0 as f64 - n1 as f64 - n2 as f64 + n3 as f64 - 2.0 * swaps as f64;
    let denominator = ((n0 - n1) as f64 * (n0 - n2) as f64).sqrt();
    ((denominator > 0.0).then(|| numerator / denominator), n1)
}

/// Sorts `v` and returns the number of strict inversions.
fn merge_count(v: &mut [u64]) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut count = merge_count(&mut v[..mid]) + merge_count(&mut v[mid..]);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if v[j] < v[i] {
            count += (mid - i) as u64;
            merged.push(v[j]);
            j += 1;
        } else {
            merged.push(v[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&v[i..mid]);
    merged.extend_from_slice(&v[j..]);
    v.copy_from_slice(&merged);
    count
}

/// Runs the scenario in FIFO mode, prints its figures and writes `report.json`
/// and `waits-fifo.svg` into `out`.
pub fn run_and_report(
    scenario: &Scenario,
    spec: &FifoSpec,
    out: &Path,
    plots: bool,
    verbose: bool,
) -> Result<(), String> {
    let population = Population::draw(scenario);
    let (report, points) = run(scenario, spec, &population, verbose)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let json = serde_json::json!({
        "scenario": scenario,
        "fifo": report,
    });
    crate::report::write_json(&out.join("report.json"), &json)?;
    if !plots {
        print!("{}", text(&report));
        println!("report in {}", out.display());
        return Ok(());
    }
    crate::plot::wait_heatmap(
        &out.join("waits-fifo.svg"),
        "Wait against arrival: FIFO",
        &format!(
            "{} visitors, target {}/min, propagation {} s",
            scenario.visitors, report.target_per_minute, report.propagation_delay
        ),
        &points,
        60,
    )?;
    print!("{}", text(&report));
    println!("report and plot in {}", out.display());
    Ok(())
}

/// The figures in a few lines and a table.
pub fn text(r: &FifoReport) -> String {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    let s = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut out = format!(
        "fifo      target {:.0}/min, propagation {} s: {} people, {} admitted, {} gave up, {} still waiting; \
         new sessions (allow tokens) {}, tokens per person {:.3}; \
         Kendall tau-b {} ({} tied pairs of places); minutes within ±10 %: {}/{} (lowest {}, highest {}, mean {}); \
         first minutes {:?}; everyone admitted in {} min (target implies {:.1}); {} writes ({} moved the cutoff); \
         show-up live {:.3} stale {:.3}; propagation measured {}; {} decisions in {:.1} s\n",
        r.target_per_minute,
        r.propagation_delay,
        r.people,
        r.admitted,
        r.abandoned,
        r.still_waiting,
        r.allow_tokens,
        r.tokens_per_person,
        f(r.kendall_tau),
        r.tied_places,
        r.minutes_within_10_percent,
        r.minutes_checked,
        f(r.lowest_ratio),
        f(r.highest_ratio),
        f(r.mean_ratio),
        r.first_minutes
            .iter()
            .map(|m| (m.minute, m.admitted))
            .collect::<Vec<_>>(),
        r.minutes_to_admit_everyone
            .map_or("-".to_string(), |m| format!("{m:.1}")),
        r.implied_minutes,
        r.writes,
        r.cutoff_writes,
        r.show_up[0],
        r.show_up[1],
        s(r.measured_propagation),
        r.decisions,
        r.wall_seconds,
    );
    out.push_str(
        "| arrival decile | arrived (s) | stayed | admitted | wait p50 (s) | p90 | max |\n",
    );
    out.push_str("|---:|---|---:|---:|---:|---:|---:|\n");
    for d in &r.deciles {
        out.push_str(&format!(
            "| {} | {}–{} | {} | {} | {} | {} | {} |\n",
            d.decile,
            d.arrived.0,
            d.arrived.1,
            d.stayed,
            d.admitted,
            s(d.wait_p50),
            s(d.wait_p90),
            s(d.wait_max)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_b_matches_small_hand_counts() {
        assert_eq!(kendall_tau_b(&[(1, 1), (2, 2), (3, 3)]).0, Some(1.0));
        assert_eq!(kendall_tau_b(&[(1, 3), (2, 2), (3, 1)]).0, Some(-1.0));
        // One discordant pair of three: (3 - 2·1) / 3.
        let tau = kendall_tau_b(&[(1, 1), (2, 3), (3, 2)]).0.unwrap();
        assert!((tau - 1.0 / 3.0).abs() < 1e-12, "{tau}");
        // Ties: x = 1, 1, 2, 3 against y = 1, 2, 2, 3 (scipy: 0.8).
        let (tau, tied) = kendall_tau_b(&[(1, 1), (1, 2), (2, 2), (3, 3)]);
        assert!((tau.unwrap() - 0.8).abs() < 1e-12, "{tau:?}");
        assert_eq!(tied, 1);
        assert_eq!(kendall_tau_b(&[(1, 1)]).0, None);
    }
}
