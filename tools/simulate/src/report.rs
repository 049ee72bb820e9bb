//! Runs a scenario in each refresh mode and writes the JSON report and the plots.

use std::fs;
use std::path::Path;

use serde::Serialize;
use waiting_room::settings::config::DRAW_GRID;
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::refresh_mode::RefreshMode;

use crate::engine;
use crate::plot;
use crate::population::Population;
use crate::progress::Progress;
use crate::run_record::RunRecord;
use crate::scenario::{Scenario, SecondRoom};
use crate::summary::{self, RunReport};

/// One mode's run: its figures and its raw record.
pub struct Run {
    /// The figures.
    pub report: RunReport,
    /// The raw record (for the plots).
    pub record: RunRecord,
}

/// The JSON report.
#[derive(Serialize)]
pub struct Report<'a> {
    /// What was simulated.
    pub scenario: &'a Scenario,
    /// The named room run at once, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_room: Option<&'a SecondRoom>,
    /// People and devices drawn.
    pub devices: usize,
    /// Distinct addresses.
    pub addresses: u32,
    /// One entry per draw grid and refresh mode.
    pub runs: Vec<&'a RunReport>,
}

/// Runs `scenario` over the same population on each of `grids` (its room's own
/// grid replaced), in each of `modes`.
pub fn run_grids(
    scenario: &Scenario,
    population: &Population,
    grids: &[DrawGrid],
    modes: &[RefreshMode],
    verbose: bool,
) -> Vec<Run> {
    grids
        .iter()
        .flat_map(|&draw_grid| {
            let scenario = Scenario {
                room: scenario.room.clone().with(DRAW_GRID, draw_grid),
                ..scenario.clone()
            };
            run_modes(&scenario, population, modes, verbose)
        })
        .collect()
}

/// Runs `scenario` over the same population in each of `modes`.
pub fn run_modes(
    scenario: &Scenario,
    population: &Population,
    modes: &[RefreshMode],
    verbose: bool,
) -> Vec<Run> {
    modes
        .iter()
        .map(|&mode| {
            let grid = scenario.room.settings().draw_grid;
            let name = format!("{grid}/{}", summary::mode_name(mode));
            let mut progress = Progress::new(&name, verbose);
            let record = engine::run(scenario, population, mode, &mut progress);
            let report = summary::summarise(scenario, population, mode, &record);
            Run { report, record }
        })
        .collect()
}

/// Runs `scenario`'s room (the service room) and `second` together, on one
/// log stream, over their own populations on each of `grids`, in each of
/// `modes`: for each, the service room's run and then the named room's.
pub fn run_rooms(
    scenario: &Scenario,
    population: &Population,
    second: &SecondRoom,
    second_population: &Population,
    grids: &[DrawGrid],
    modes: &[RefreshMode],
    verbose: bool,
) -> Vec<Run> {
    let mut runs = Vec::new();
    for &draw_grid in grids {
        for &mode in modes {
            let on_grid = |s: &Scenario| Scenario {
                room: s.room.clone().with(DRAW_GRID, draw_grid),
                ..s.clone()
            };
            let (first, other) = (on_grid(scenario), on_grid(&second.scenario));
            let name = format!(
                "{}/{} and {}",
                draw_grid,
                summary::mode_name(mode),
                second.name
            );
            let mut progress = Progress::new(&name, verbose);
            let ((a, _), (b, _)) = engine::run_rooms(
                engine::Lane {
                    scenario: &first,
                    population,
                    method: engine::Method::random(&first, population, mode),
                },
                engine::Lane {
                    scenario: &other,
                    population: second_population,
                    method: engine::Method::random(&other, second_population, mode)
                        .in_room(second.name.clone()),
                },
                &mut progress,
            );
            let report = summary::summarise(&first, population, mode, &a);
            runs.push(Run { report, record: a });
            let mut report = summary::summarise(&other, second_population, mode, &b);
            report.room = Some(second.name.to_string());
            runs.push(Run { report, record: b });
        }
    }
    runs
}

/// Writes `report.json` into `dir`, and with `plots`: `admissions.svg` (one panel
/// per run) and one `waits-<mode>.svg` per run (`waits-global-<mode>.svg` on the
/// global grid); with both grids, one `grids-<mode>.svg` per mode (admissions on
/// the address grid over those on the global grid); with a controller, one
/// `closed-loop-<mode>.svg` per run (`closed-loop-global-<mode>.svg`; a
/// `second` room's `closed-loop-<room>-<mode>.svg`).
pub fn write(
    dir: &Path,
    scenario: &Scenario,
    second: Option<&SecondRoom>,
    population: &Population,
    runs: &[Run],
    plots: bool,
) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let report = Report {
        scenario,
        second_room: second,
        devices: population.devices.len(),
        addresses: population.addresses,
        runs: runs.iter().map(|r| &r.report).collect(),
    };
    write_json(&dir.join("report.json"), &report)?;
    if !plots {
        return Ok(());
    }
    if scenario.control.is_some() {
        for run in runs {
            let Some(report) = &run.report.closed_loop else {
                continue;
            };
            // A named room's run is of the second room's scenario.
            let (scenario, room) = match (second, &run.report.room) {
                (Some(second), Some(room)) => (&second.scenario, format!("room {room}, ")),
                _ => (scenario, String::new()),
            };
            let Some(control) = &scenario.control else {
                continue;
            };
            let title = format!(
                "{room}{} visitors, {}, d = {} s, {} grid: controller, propagation {} s, log {} s",
                scenario.visitors,
                describe(scenario),
                scenario.room.settings().wait_period_duration,
                run.report.draw_grid,
                control.propagation_delay,
                control.log_delay,
            );
            let path = dir.join(format!("closed-loop-{}.svg", file_stem(&run.report)));
            plot::closed_loop(
                &path,
                &title,
                control.target_per_minute,
                &run.report.admissions.per_minute,
                &run.record.percentage,
                &report.waiting_per_minute,
            )?;
        }
        return Ok(());
    }

    let room = scenario.room.settings();
    let title = format!(
        "{} visitors, {}, allow_percentage {}, wait_period_duration {} s: new sessions per second",
        scenario.visitors,
        describe(scenario),
        room.allow_percentage,
        room.wait_period_duration
    );
    let names: Vec<String> = runs.iter().map(|r| label(&r.report)).collect();
    let series: Vec<(&str, &[u64])> = runs
        .iter()
        .zip(&names)
        .map(|(r, name)| (name.as_str(), r.record.new_sessions.as_slice()))
        .collect();
    plot::admissions(&dir.join("admissions.svg"), &title, &series)?;
    for mode in ["eligible", "fixed"] {
        let pair: Vec<(&str, &[u64])> = ["address", "global"]
            .iter()
            .filter_map(|grid| {
                let i = runs
                    .iter()
                    .position(|r| r.report.draw_grid == *grid && r.report.refresh_mode == mode)?;
                Some((names[i].as_str(), runs[i].record.new_sessions.as_slice()))
            })
            .collect();
        if pair.len() == 2 {
            plot::admissions(&dir.join(format!("grids-{mode}.svg")), &title, &pair)?;
        }
    }
    for run in runs {
        let points = summary::arrival_and_wait(population, &run.record);
        let path = dir.join(format!("waits-{}.svg", file_stem(&run.report)));
        let title = format!("Wait against arrival: {}", label(&run.report));
        let subtitle = format!(
            "{} visitors, {}, allow_percentage {}, wait_period_duration {} s",
            scenario.visitors,
            describe(scenario),
            room.allow_percentage,
            room.wait_period_duration
        );
        plot::wait_heatmap(&path, &title, &subtitle, &points, room.wait_period_duration)?;
    }
    Ok(())
}

/// Writes `value` to `path` as indented JSON, with a final newline.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    let json = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

/// `<mode>` on the address grid (the room's default), `global-<mode>` on the
/// global one; a named room's name first (`<room>-<mode>`).
fn file_stem(report: &RunReport) -> String {
    let stem = match report.draw_grid.as_str() {
        "address" => report.refresh_mode.to_string(),
        grid => format!("{grid}-{}", report.refresh_mode),
    };
    match &report.room {
        Some(room) => format!("{room}-{stem}"),
        None => stem,
    }
}

fn label(report: &RunReport) -> String {
    let grid = match report.draw_grid.as_str() {
        "global" => "global grid (VCL)",
        _ => "address grid (this program)",
    };
    let refresh = match (report.refresh_mode, report.draw_grid.as_str()) {
        ("fixed", _) => "fixed Refresh (VCL)",
        (_, "global") => "eligible refresh + phase",
        _ => "eligible refresh (this program)",
    };
    format!("{grid}, {refresh}")
}

/// How `scenario`'s people arrive, in words.
pub fn describe(scenario: &Scenario) -> String {
    match scenario.arrivals {
        crate::scenario::Arrivals::Steady { seconds } => format!("steady over {seconds} s"),
        crate::scenario::Arrivals::Flash { seconds } => format!("flash crowd in {seconds} s"),
        crate::scenario::Arrivals::Waves {
            count,
            every,
            width,
        } => format!("{count} waves of {width} s every {every} s"),
    }
}
