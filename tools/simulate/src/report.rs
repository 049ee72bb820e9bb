//! Runs a scenario in each refresh mode and writes the JSON report and the plots.

use std::fs;
use std::path::Path;

use serde::Serialize;
use waiting_room::refresh::RefreshMode;

use crate::engine;
use crate::plot;
use crate::population::Population;
use crate::progress::Progress;
use crate::record::Record;
use crate::scenario::Scenario;
use crate::summary::{self, RunReport};

/// One mode's run: its figures and its raw record.
pub struct Run {
    /// The figures.
    pub report: RunReport,
    /// The raw record (for the plots).
    pub record: Record,
}

/// The JSON report.
#[derive(Serialize)]
pub struct Report<'a> {
    /// What was simulated.
    pub scenario: &'a Scenario,
    /// People and devices drawn.
    pub devices: usize,
    /// Distinct addresses.
    pub addresses: u32,
    /// One entry per refresh mode.
    pub runs: Vec<&'a RunReport>,
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
            let name = summary::mode_name(mode);
            let mut progress = Progress::new(name, verbose);
            let record = engine::run(scenario, population, mode, &mut progress);
            let report = summary::summarise(scenario, population, mode, &record);
            Run { report, record }
        })
        .collect()
}

/// Writes `report.json`, `admissions.svg` and one `waits-<mode>.svg` per mode into
/// `dir`; with a controller, `report.json` and one `closed-loop-<mode>.svg` per mode.
pub fn write(
    dir: &Path,
    scenario: &Scenario,
    population: &Population,
    runs: &[Run],
) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let report = Report {
        scenario,
        devices: population.devices.len(),
        addresses: population.addresses,
        runs: runs.iter().map(|r| &r.report).collect(),
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    let json_path = dir.join("report.json");
    fs::write(&json_path, json + "\n").map_err(|e| format!("{}: {e}", json_path.display()))?;
    if let Some(control) = &scenario.control {
        for run in runs {
            let Some(report) = &run.report.closed_loop else {
                continue;
            };
            let title = format!(
                "{} visitors, {}, d = {} s: controller, propagation {} s, log {} s",
                scenario.visitors,
                describe(scenario),
                scenario.room.wait_period,
                control.propagation_delay,
                control.log_delay,
            );
            let path = dir.join(format!("closed-loop-{}.svg", run.report.refresh_mode));
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

    let title = format!(
        "{} visitors, {}, allow_percentage {}, wait_period_duration {} s: new sessions per second",
        scenario.visitors,
        describe(scenario),
        scenario.room.allow_percentage,
        scenario.room.wait_period
    );
    let series: Vec<(&str, &[u64])> = runs
        .iter()
        .map(|r| {
            (
                label(r.report.refresh_mode),
                r.record.new_sessions.as_slice(),
            )
        })
        .collect();
    plot::admissions(&dir.join("admissions.svg"), &title, &series)?;
    for run in runs {
        let points = summary::arrival_and_wait(population, &run.record);
        let path = dir.join(format!("waits-{}.svg", run.report.refresh_mode));
        let title = format!("Wait against arrival: {}", label(run.report.refresh_mode));
        let subtitle = format!(
            "{} visitors, {}, allow_percentage {}, wait_period_duration {} s",
            scenario.visitors,
            describe(scenario),
            scenario.room.allow_percentage,
            scenario.room.wait_period
        );
        plot::wait_heatmap(&path, &title, &subtitle, &points, scenario.room.wait_period)?;
    }
    Ok(())
}

fn label(mode: &str) -> &'static str {
    match mode {
        "fixed" => "fixed Refresh (VCL)",
        _ => "eligible + phase (this program)",
    }
}

fn describe(scenario: &Scenario) -> String {
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
