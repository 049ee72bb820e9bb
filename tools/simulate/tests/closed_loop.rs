//! The closed loop on a small flash crowd, fast enough for every test run: the
//! room's own controller, reading the room's own log lines 5 s late and writing
//! settings that reach the edge 30 s late, holds the target from the third
//! minute until the crowd is drained, where the static percentage alone does not.

use control::percentage_rule::MAX_RISE_PER_DRAW_PERIOD;
use simulate::closed_loop::ClosedLoop;
use simulate::engine::{Lane, Method, run_rooms};
use simulate::fifo_mode::{self, FifoReport, FifoSpec};
use simulate::population::Population;
use simulate::progress::Progress;
use simulate::report::run_modes;
use simulate::scenario::{Arrivals, Control, Mix, PopCountsModel, Room, Scenario, Session};
use simulate::summary::{RunReport, summarise};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::refresh_mode::RefreshMode;
use waiting_room::settings::room::RoomName;

const TARGET: f64 = 1_200.0;

fn flash(control: Option<Control>, draw_grid: DrawGrid) -> Scenario {
    Scenario {
        visitors: 24_000,
        arrivals: Arrivals::Flash { seconds: 10 },
        mix: Mix::plain(),
        room: Room::default()
            .with("allow_percentage", Percentage::whole(20))
            .with("wait_period_duration", 30)
            .with("allow_period_timeout", 3600)
            .with("draw_grid", draw_grid),
        session: Session {
            requests: 1,
            interval: 60,
        },
        duration: 1800,
        seed: 3,
        control,
        ..Scenario::default()
    }
}

fn run(scenario: &Scenario) -> RunReport {
    let population = Population::draw(scenario);
    let mut runs = run_modes(scenario, &population, &[RefreshMode::Eligible], false);
    runs.pop().expect("one mode, one run").report
}

#[test]
fn the_controller_holds_the_target_from_the_third_minute_until_the_crowd_is_drained() {
    for grid in [DrawGrid::Address, DrawGrid::Global] {
        holds_the_target(grid);
    }
}

fn holds_the_target(grid: DrawGrid) {
    let control = Control {
        propagation_delay: 30,
        ..Control::new(TARGET)
    };
    let report = run(&flash(Some(control), grid));
    let c = report.closed_loop.expect("a closed-loop report");
    let minutes = &c.new_sessions_per_minute;
    assert!(c.minutes_checked >= 15, "{grid}: {minutes:?}");
    match grid {
        DrawGrid::Address => {
            assert!(c.all_within_10_percent, "{grid}: {minutes:?} {c:?}");
            assert_eq!(c.minutes_above_115_percent, 0, "{minutes:?}");
        }
        // On the VCL's global grid the forecast is the draw period's average,
        // and it admits above the target (up to 1.5× in the last minutes of
        // the crowd; BENCHMARKS.md gives the figures): checked here is that it
        // stays within 1.5×, and that the run is no quicker than 5/6 of the
        // time the target implies.
        DrawGrid::Global => {
            let highest = c.highest_ratio.expect("minutes checked");
            assert!(highest <= 1.5, "{grid}: {minutes:?} {c:?}");
        }
    }
    // Bounded steps, and no tick-to-tick swings: at most one turn of the
    // written percentage per draw period on average, no rise above twice the
    // lowest written in the draw period before it.
    assert!(c.direction_changes_per_draw_period <= 1.0, "{grid}: {c:?}");
    let rise = c.largest_rise_per_draw_period.expect("writes");
    assert!(rise <= MAX_RISE_PER_DRAW_PERIOD + 1e-6, "{grid}: {c:?}");
    // Everyone in within 10 % of the 20 minutes the target implies (on the
    // global grid, no quicker than 5/6 of it).
    let ratio = c.admit_time_ratio.expect("everyone admitted");
    let least = if grid == DrawGrid::Global { 0.83 } else { 0.9 };
    assert!((least..=1.1).contains(&ratio), "{c:?}");
    // The controller did the work: it wrote percentages, and read every line.
    assert!(c.percentage_writes >= 10, "{c:?}");
    assert_eq!(c.log_lines, report.cost.decisions);

    // The static 20 % alone admits far above the target in the same minutes.
    let alone = run(&flash(None, grid)).admissions.per_minute;
    assert!(
        alone[2..5].iter().all(|&n| n as f64 > 1.5 * TARGET),
        "{alone:?}"
    );
}

#[test]
fn crowds_that_behave_like_people_are_held_at_the_target_counted_in_tokens() {
    // The default mix: tabs sharing a jar, apps polling on their own interval,
    // early reloaders, people on several devices and behind shared addresses,
    // replayers, and a tenth who give up. The minutes are checked in new
    // sessions as the origin sees them (distinct allow tokens), and the tabs'
    // repeated lines count once.
    let mut scenario = flash(
        Some(Control {
            propagation_delay: 30,
            ..Control::new(TARGET)
        }),
        DrawGrid::Address,
    );
    scenario.mix = Mix::default();
    let report = run(&scenario);
    let c = report.closed_loop.expect("a closed-loop report");
    let minutes = &c.new_sessions_per_minute;
    // Every checked minute within ±10 %, none above 1.15×.
    assert!(c.minutes_checked >= 12, "{minutes:?} {c:?}");
    assert!(c.all_within_10_percent, "{minutes:?} {c:?}");
    assert_eq!(c.minutes_above_115_percent, 0, "{minutes:?} {c:?}");
    assert!(c.direction_changes_per_draw_period <= 1.0, "{c:?}");
    assert!(c.people_gave_up > 300, "{c:?}");
    // People behind a shared address share one allow token from one win, and
    // a person on several devices may hold several: the tokens the origin
    // sees and the people admitted differ, by little.
    let people: u64 = c.people_admitted_per_minute.iter().sum();
    let tokens: u64 = minutes.iter().sum();
    assert!(
        (people as f64 / tokens as f64 - 1.0).abs() < 0.1,
        "{people} {tokens}"
    );
    assert_eq!(c.log_lines, report.cost.decisions, "{c:?}");
}

#[test]
fn where_writes_take_a_minute_the_pops_ceiling_holds_the_first_minutes_and_the_rest() {
    // On each grid: without the ceiling, with exact counts at 1.05x the target,
    // and with the edge's counts as documented at 0.95x.
    for grid in [DrawGrid::Address, DrawGrid::Global] {
        held_by_the_ceiling(grid);
    }
}

fn held_by_the_ceiling(grid: DrawGrid) {
    // Writes that land 60 s after they are made: the static 20 % admits a
    // flash crowd far above the target until the first write lands, and
    // the controller's forecast runs past what the log can show. The POP's
    // ceiling caps every minute, the first included (the second runs low: the
    // first write, made for the whole crowd, lands then).
    let control = Control {
        propagation_delay: 60,
        ..Control::new(TARGET)
    };
    let mut scenario = flash(Some(control), grid);
    let without = run(&scenario).closed_loop.expect("a closed-loop report");
    // Without it, the first minutes run far above.
    let first = &without.new_sessions_per_minute[..2];
    assert!(first.iter().any(|&n| n as f64 > 1.5 * TARGET), "{first:?}");

    // Exact counts, the ceiling at 1.05x the target. Plain people: one token a
    // new session, so no minute passes the ceiling, the first ones and the
    // crowd's last (the room opened to 100 %) included.
    let ceiling = (TARGET * 1.05) as u32;
    scenario.room = scenario.room.with("pop_new_sessions_per_minute", ceiling);
    scenario.room.pop_counts = PopCountsModel::Exact;
    let report = run(&scenario);
    let c = report.closed_loop.expect("a closed-loop report");
    let minutes = &c.new_sessions_per_minute;
    assert!(c.minutes_checked >= 15, "{grid}: {minutes:?}");
    assert!(
        minutes.iter().all(|&n| n <= u64::from(ceiling)),
        "{grid}: {minutes:?}"
    );
    assert!(c.all_within_10_percent, "{grid}: {minutes:?} {c:?}");
    // The controller counted the held wins as wins: it did not chase them
    // upward (no write at the maximum, bounded steps).
    assert!(c.direction_changes_per_draw_period <= 1.0, "{c:?}");
    assert_eq!(c.log_lines, report.cost.decisions, "{c:?}");

    // The edge's counts as documented (the default), the ceiling at 0.95x: the
    // counter reads 10 % low, so minutes pass the ceiling, up to 0.95 / 0.9 =
    // 1.056x; the first by a few dozen more (each of the POP's 16 nodes reads
    // zero at its first use and misses what was counted before it: about 54
    // reads go by before the last one's first).
    let ceiling = (TARGET * 0.95) as u32;
    scenario.room = scenario.room.with("pop_new_sessions_per_minute", ceiling);
    scenario.room.pop_counts = PopCountsModel::default();
    let report = run(&scenario);
    let c = report.closed_loop.expect("a closed-loop report");
    let minutes = &c.new_sessions_per_minute;
    let documented_cap = (f64::from(ceiling) / 0.9).ceil() as u64;
    assert!(
        minutes.iter().any(|&n| n > u64::from(ceiling)),
        "{grid}: the counter reads low: {minutes:?}"
    );
    // The counter's first minute: the first with new sessions (on the global
    // grid, the crowd's first draw comes at the next slot).
    let first = minutes.iter().position(|&n| n > 0).expect("new sessions");
    assert!(
        minutes[first + 1..].iter().all(|&n| n <= documented_cap),
        "{grid}: {minutes:?}"
    );
    assert!(
        minutes[first] <= documented_cap + 100,
        "{grid}: {minutes:?}"
    );
    assert!(c.all_within_10_percent, "{grid}: {minutes:?} {c:?}");
    assert!(c.direction_changes_per_draw_period <= 1.0, "{c:?}");
}

/// Two rooms of one service at once, from one log stream: the service room
/// (the lottery, 12,000 plain people in 10 s, 1,200 new sessions a minute)
/// and the named room `drops` (FIFO, 3,000 people in 10 s, 300 a minute),
/// each with its own controller fed the whole stream, for `duration` seconds.
/// With `filtered`, each controller counts only its own room's lines, as
/// `wrctl control --room` does.
struct TwoRooms {
    service: RunReport,
    drops: FifoReport,
    /// Lines each controller counted.
    lines: [u64; 2],
    /// Requests each room decided.
    decisions: [u64; 2],
}

const SERVICE_TARGET: f64 = 1_200.0;
const DROPS_TARGET: f64 = 300.0;

fn two_rooms(filtered: bool, duration: u64) -> TwoRooms {
    let control = Control {
        propagation_delay: 30,
        ..Control::new(SERVICE_TARGET)
    };
    let service = Scenario {
        visitors: 12_000,
        duration,
        ..flash(Some(control), DrawGrid::Address)
    };
    // The FIFO test's room and rule (tools/simulate/tests/fifo.rs), at its own target.
    let drops = Scenario {
        visitors: 3_000,
        room: Room::default()
            .with("allow_percentage", Percentage::whole(50))
            .with("wait_period_duration", 10)
            .with("allow_period_timeout", 600),
        seed: 5,
        control: Some(Control {
            tick: 5,
            ..Control::new(DROPS_TARGET)
        }),
        ..service
    };
    let service_people = Population::draw(&service);
    let drops_people = Population::draw(&drops);
    let mode = RefreshMode::Eligible;
    let spec = FifoSpec::default();
    let mut lottery = Method::random(&service, &service_people, mode);
    let mut fifo = fifo_mode::method(&drops, &spec, &drops_people)
        .expect("the FIFO rule takes its options")
        .in_room(RoomName::new("drops").expect("a room name"));
    if !filtered {
        lottery.closed_loop = lottery.closed_loop.map(ClosedLoop::unfiltered);
        fifo.closed_loop = fifo.closed_loop.map(ClosedLoop::unfiltered);
    }
    let ((a, _), (b, rule)) = run_rooms(
        Lane {
            scenario: &service,
            population: &service_people,
            method: lottery,
        },
        Lane {
            scenario: &drops,
            population: &drops_people,
            method: fifo,
        },
        &mut Progress::new("two rooms", false),
    );
    let lines = [&a, &b].map(|r| r.control.as_ref().expect("a controller").counters.lines);
    let decisions = [a.decisions, b.decisions];
    let (drops, _) = fifo_mode::report(&drops, &spec, &drops_people, &b, rule).expect("a FIFO run");
    TwoRooms {
        service: summarise(&service, &service_people, mode, &a),
        drops,
        lines,
        decisions,
    }
}

#[test]
fn two_rooms_read_from_one_log_stream_each_hold_their_own_target() {
    let run = two_rooms(true, 780);
    // Each controller read the whole stream and counted its own room's lines,
    // every one of them (both crowds are drained before the end).
    assert_eq!(run.lines, run.decisions);
    // Every checked minute (from the third until the crowd is drained) within
    // ±10 % of the room's own target, as for a single room.
    let c = run.service.closed_loop.expect("a closed-loop report");
    let minutes = &c.new_sessions_per_minute;
    assert!(c.minutes_checked >= 7, "{minutes:?} {c:?}");
    assert!(c.all_within_10_percent, "{minutes:?} {c:?}");
    assert_eq!(c.minutes_above_115_percent, 0, "{minutes:?} {c:?}");
    let d = &run.drops;
    let minutes = &d.new_sessions_per_minute;
    assert!(d.minutes_checked >= 7, "{minutes:?} {d:?}");
    assert_eq!(
        d.minutes_within_10_percent, d.minutes_checked,
        "{minutes:?}"
    );
    assert_eq!(d.admitted, 3_000, "{d:?}");

    // Without the filter each controller counts the other room's lines as its
    // own: the FIFO rule takes the lottery's 1,200 new sessions a minute for
    // its room's and holds its line nearly still, and the percentage
    // controller, counting the FIFO room's admissions and waiting addresses,
    // swings its room off the target.
    let run = two_rooms(false, 420);
    assert!(run.lines[0] > run.decisions[0], "{:?}", run.decisions);
    assert!(run.lines[1] > run.decisions[1], "{:?}", run.decisions);
    let c = run.service.closed_loop.expect("a closed-loop report");
    let minutes = &c.new_sessions_per_minute;
    assert!(!c.all_within_10_percent, "{minutes:?} {c:?}");
    let d = &run.drops;
    let minutes = &d.new_sessions_per_minute;
    assert!(d.minutes_checked >= 3, "{minutes:?} {d:?}");
    assert!(
        d.highest_ratio.expect("minutes checked") < 0.5,
        "{minutes:?}"
    );
}
