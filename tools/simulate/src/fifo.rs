//! FIFO mode (`simulate run --queueing fifo`): the room with
//! `queueing_method = fifo`, and the FIFO rule ([`waiting_room::control::fifo`])
//! in the loop.
//!
//! Every request is decided by the room's own [`waiting_room::decision::decide_at`]
//! to the millisecond: a person's first request comes at their own millisecond
//! (the people arriving within one second are spread evenly over it, in a random
//! order, so they hold distinct places whenever a second has at most a thousand
//! of them; beyond that, people sharing a millisecond share a place, as they
//! would at the edge). Every waiting page comes back when the room's own
//! [`waiting_room::outlook`] says. Every log line is written by
//! [`waiting_room::log::decision_line`], read back by [`waiting_room::log::Record`]
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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use waiting_room::config::{Heartbeat, QueueingMethod, Settings};
use waiting_room::control::fifo::{FifoController, FifoOptions};
use waiting_room::decision::{self, CookieAction, Decision, Session};
use waiting_room::log::{self, Record};
use waiting_room::outlook;
use waiting_room::refresh::RefreshMode;

use crate::engine::{START, address_key};
use crate::population::{Population, address_text};
use crate::progress::Progress;
use crate::rng::Rng;
use crate::scenario::{Control, Scenario};
use crate::stats::percentile;

const KID: &str = "key1";
const SECRET: &str = "simulated-signing-key-0123456789abcdef";
const PATH: &str = "/events";
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
            fifo_hold: waiting_room::config::DEFAULT_FIFO_HOLD,
        }
    }
}

/// The rule's options for `control` in `scenario`'s room.
pub fn options(control: &Control, scenario: &Scenario, spec: &FifoSpec) -> FifoOptions {
    FifoOptions {
        target_per_minute: control.target_per_minute,
        max_active: control.max_active,
        tick: control.tick,
        wait_period: scenario.room.wait_period,
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

struct Device {
    person: u32,
    uid: u32,
    cookie: Option<String>,
    session_left: u32,
}

/// Runs `scenario` in FIFO mode; `Err` when it has no controller or the rule
/// refuses its options.
pub fn run(
    scenario: &Scenario,
    spec: &FifoSpec,
    population: &Population,
    verbose: bool,
) -> Result<(FifoReport, Vec<(u64, u64)>), String> {
    let control = scenario
        .control
        .ok_or("--queueing fifo needs --target-per-minute (the FIFO rule in the loop)")?;
    let mut rule = FifoController::new(options(&control, scenario, spec))
        .map_err(|e| format!("the FIFO rule refuses its options: {e}"))?;
    let mut settings = Settings {
        queueing_method: QueueingMethod::Fifo,
        fifo_hold: spec.fifo_hold,
        ..scenario.room.settings(RefreshMode::Eligible)
    };
    let keys = HashMap::from([(KID.to_string(), SECRET.to_string())]);
    let mut rng = Rng::new(scenario.seed ^ 0x5f1f_0f1f_0000_0001);
    let people = population.people.len();

    // Each device's first millisecond: a second's arrivals spread evenly over it.
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
            first_ms[d] = (START + second) * 1000 + j as u64 * 1000 / k;
        }
    }
    let mut devices: Vec<Device> = population
        .devices
        .iter()
        .map(|d| Device {
            person: d.person,
            uid: d.address,
            cookie: None,
            session_left: scenario.session.requests,
        })
        .collect();
    let uids: Vec<String> = (0..population.addresses).map(address_text).collect();
    let mut place = vec![u64::MAX; people];
    let mut admitted_ms: Vec<Option<u64>> = vec![None; people];
    // New sessions as the origin and the controller see them: distinct allow
    // tokens (the address and the token's `exp`) handed out with `session=new`.
    let mut tokens: HashSet<(u64, u64)> = HashSet::new();
    let mut new_sessions = vec![0u64; scenario.duration.div_ceil(60) as usize];
    let mut gave_up = vec![false; people];
    let mut queue: BinaryHeap<Reverse<(u64, u32)>> = first_ms
        .iter()
        .enumerate()
        .map(|(i, &ms)| Reverse((ms, i as u32)))
        .collect();
    let mut inbox: VecDeque<(u64, Record)> = VecDeque::new();
    let mut in_flight: VecDeque<(u64, waiting_room::control::fifo::Write)> = VecDeque::new();
    let (mut writes, mut cutoff_writes, mut decisions) = (0u64, 0u64, 0u64);
    let mut next_second = 0u64;
    let end_ms = (START + scenario.duration) * 1000;
    let mut progress = Progress::new("fifo", verbose);
    let started = Instant::now();

    // Second `t` begins: lines due reach the rule, it ticks, writes due land.
    let mut second = |t: u64,
                      settings: &mut Settings,
                      rule: &mut FifoController,
                      inbox: &mut VecDeque<(u64, Record)>| {
        let now = START + t;
        while inbox.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, record)) = inbox.pop_front() {
                rule.observe(&record, now);
            }
        }
        if t.is_multiple_of(control.tick)
            && let Some(write) = rule.tick(now)
        {
            rule.written(&write, now);
            writes += 1;
            cutoff_writes += u64::from(write.fifo_cutoff.is_some());
            in_flight.push_back((now + control.propagation_delay, write));
        }
        while in_flight.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, write)) = in_flight.pop_front() {
                if let Some(cutoff) = write.fifo_cutoff {
                    settings.fifo_cutoff = Some(cutoff);
                }
                if let Some(rate) = write.fifo_rate {
                    settings.fifo_rate = Some(rate);
                }
                settings.controller_heartbeat = Heartbeat::At(write.heartbeat);
            }
        }
    };

    while let Some(Reverse((ms, device))) = queue.pop() {
        if ms >= end_ms {
            break;
        }
        let t = ms / 1000 - START;
        while next_second <= t {
            second(next_second, &mut settings, &mut rule, &mut inbox);
            next_second += 1;
        }
        let d = &mut devices[device as usize];
        let person = d.person as usize;
        let admitted_before = admitted_ms[person].is_some();
        if !admitted_before && population.people[person].gave_up_by(ms / 1000 - START) {
            gave_up[person] = true;
            continue;
        }
        let seen = population.devices[device as usize];
        let uid = uids[d.uid as usize].as_str();
        let verdict = decision::decide_at(
            ms / 1000,
            (ms % 1000) as u16,
            uid,
            d.cookie.as_deref(),
            &settings,
            &keys,
        );
        decisions += 1;
        let now = ms / 1000;
        // The device's other tabs send the same request with the same cookie:
        // the same verdict, a line each.
        for _ in 0..seen.tabs {
            let line = log::decision_line(now, uid, PATH, &verdict, &settings);
            match line.parse::<Record>() {
                Ok(record) => inbox.push_back((now + control.log_delay, record)),
                Err(_) => rule.bad_line(),
            }
        }
        decisions += u64::from(seen.tabs - 1);
        match &verdict.cookie {
            CookieAction::Set(value) => d.cookie = Some(value.clone()),
            CookieAction::Delete => d.cookie = None,
            CookieAction::Keep => {}
        }
        if let Some(arr) = verdict.arr
            && place[person] == u64::MAX
        {
            place[person] = arr;
        }
        if verdict.session == Some(Session::New)
            && let Some(exp) = verdict.exp
            && tokens.insert((address_key(uid), exp))
            && let Some(slot) = new_sessions.get_mut((ms / 1000 - START) as usize / 60)
        {
            *slot += 1;
        }
        let next = match verdict.decision {
            Decision::Allow => {
                if verdict.session == Some(Session::New) && !admitted_before {
                    admitted_ms[person] = Some(ms);
                }
                if d.session_left == 0 {
                    None
                } else {
                    d.session_left -= 1;
                    Some(ms + scenario.session.interval * 1000)
                }
            }
            Decision::Anon | Decision::Wait | Decision::ReWait if admitted_before => None,
            Decision::Anon | Decision::Wait | Decision::ReWait => verdict.wait_exp.map(|exp| {
                let o = outlook(now, exp, verdict.arr, uid, &settings);
                ms + seen.habit.next_after(o.refresh_after) * 1000
            }),
            Decision::Deny => None,
        };
        if let Some(next) = next {
            queue.push(Reverse((next, device)));
        }
        progress.tick(t, scenario.duration, decisions);
    }
    while next_second < scenario.duration {
        second(next_second, &mut settings, &mut rule, &mut inbox);
        next_second += 1;
    }
    let wall_seconds = started.elapsed().as_secs_f64();

    let status = rule.status(0);
    let report = summarise(Summary {
        scenario,
        control: &control,
        spec,
        population,
        place: &place,
        admitted_ms: &admitted_ms,
        new_sessions: &new_sessions,
        gave_up: &gave_up,
    });
    let points: Vec<(u64, u64)> = (0..people)
        .filter_map(|i| {
            let adm = admitted_ms[i]?;
            let arrival = population.people[i].arrival;
            Some((arrival, (adm / 1000).saturating_sub(START + arrival)))
        })
        .collect();
    Ok((
        FifoReport {
            writes,
            cutoff_writes,
            show_up: [status.show_up, status.show_up_stale],
            measured_propagation: status.propagation,
            decisions,
            wall_seconds,
            ..report
        },
        points,
    ))
}

struct Summary<'a> {
    scenario: &'a Scenario,
    control: &'a Control,
    spec: &'a FifoSpec,
    population: &'a Population,
    place: &'a [u64],
    admitted_ms: &'a [Option<u64>],
    /// Distinct allow tokens handed out with `session=new`, per minute.
    new_sessions: &'a [u64],
    gave_up: &'a [bool],
}

fn summarise(s: Summary<'_>) -> FifoReport {
    let target = s.control.target_per_minute;
    let people = s.population.people.len();
    let minutes = s.scenario.duration.div_ceil(60) as usize;
    let mut per_minute = vec![0u64; minutes];
    // People waiting at the end of each minute: arrived, not admitted, not gone.
    let mut change = vec![0i64; minutes + 1];
    let minute_of = |ms: u64| ((ms / 1000 - START) as usize / 60).min(minutes);
    let mut last_admission = 0;
    let mut everyone = true;
    for i in 0..people {
        change[(s.population.people[i].arrival as usize / 60).min(minutes)] += 1;
        match s.admitted_ms[i] {
            Some(ms) => {
                if let Some(slot) = per_minute.get_mut(minute_of(ms)) {
                    *slot += 1;
                }
                change[minute_of(ms)] -= 1;
                last_admission = last_admission.max(ms / 1000 - START);
            }
            None if s.gave_up[i] => {
                let person = &s.population.people[i];
                if let Some(after) = person.gives_up_after {
                    change[minute_of((START + person.arrival + after) * 1000)] -= 1;
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
        let end_ms = (START + (m as u64 + 1) * 60) * 1000;
        (0..people).any(|i| {
            !s.gave_up[i]
                && (START + s.population.people[i].arrival) * 1000 < end_ms
                && s.admitted_ms[i].is_none_or(|a| a >= end_ms)
        })
    };
    let checked: Vec<f64> = (0..minutes)
        .filter(|&m| at_start(m) as f64 >= target && !starts.iter().any(|&s| m == s + 1))
        .filter(|&m| still(m))
        .map(|m| s.new_sessions.get(m).copied().unwrap_or(0) as f64 / target)
        .collect();
    let within = checked
        .iter()
        .filter(|r| (1.0 - BAND..=1.0 + BAND).contains(*r))
        .count() as u64;
    let admitted: Vec<(u64, u64)> = (0..people)
        .filter_map(|i| Some((s.place[i], s.admitted_ms[i]?)))
        .collect();
    let (tau, tied) = kendall_tau_b(&admitted);
    let total: u64 = per_minute.iter().sum();
    let abandoned = s.gave_up.iter().filter(|&&g| g).count() as u64;
    FifoReport {
        spec: *s.spec,
        target_per_minute: target,
        propagation_delay: s.control.propagation_delay,
        log_delay: s.control.log_delay,
        people: people as u64,
        abandoned,
        admitted: admitted.len() as u64,
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
        new_sessions_per_minute: s.new_sessions.to_vec(),
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
        .filter(|&i| !s.gave_up[i])
        .collect();
    stayed.sort_by_key(|&i| (s.place[i], i));
    let n = stayed.len();
    (0..10)
        .filter_map(|k| {
            let part = &stayed[k * n / 10..(k + 1) * n / 10];
            let first = *part.first()?;
            let last = *part.last()?;
            let mut waits: Vec<u64> = part
                .iter()
                .filter_map(|&i| {
                    let arrived = (START + s.population.people[i].arrival) * 1000;
                    Some(s.admitted_ms[i]?.saturating_sub(arrived) / 1000)
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
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "scenario": scenario,
        "fifo": report,
    }))
    .map_err(|e| e.to_string())?;
    let path = out.join("report.json");
    std::fs::write(&path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
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
         Kendall tau-b {} ({} tied pairs of places); minutes within ±10 %: {}/{} (lowest {}, highest {}, mean {}); \
         first minutes {:?}; everyone admitted in {} min (target implies {:.1}); {} writes ({} moved the cutoff); \
         show-up live {:.3} stale {:.3}; propagation measured {}; {} decisions in {:.1} s\n",
        r.target_per_minute,
        r.propagation_delay,
        r.people,
        r.admitted,
        r.abandoned,
        r.still_waiting,
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
