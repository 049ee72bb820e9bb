//! `simulate`: the waiting room under a virtual crowd. See `simulate --help` and
//! BENCHMARKS.md.

use std::process::ExitCode;

use simulate::cli::{self, Command};
use simulate::planning::{self, Question};
use simulate::population::Population;
use simulate::report;
use simulate::scenario::{Scenario, SecondRoom};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::refresh_mode::RefreshMode;

fn main() -> ExitCode {
    let command = cli::parse(std::env::args().skip(1)).unwrap_or_else(|e| e.exit());
    let outcome = match command {
        Command::Run {
            scenario,
            grids,
            modes,
            out,
            no_plots,
            quiet,
        } => run(&scenario, None, &grids, &modes, &out, !no_plots, !quiet),
        Command::Rooms {
            scenario,
            second,
            grids,
            modes,
            out,
            no_plots,
            quiet,
        } => run(
            &scenario,
            Some(&second),
            &grids,
            &modes,
            &out,
            !no_plots,
            !quiet,
        ),
        Command::Fifo {
            scenario,
            spec,
            out,
            no_plots,
            quiet,
        } => simulate::fifo_mode::run_and_report(&scenario, &spec, &out, !no_plots, !quiet),
        Command::Plan {
            scenario,
            candidates,
            mode,
            sample,
            out,
        } => {
            let question = Question {
                scenario,
                candidates,
                mode,
                sample,
            };
            let answers = planning::answer(&question, true);
            print!("{}", planning::table(&answers));
            match out {
                Some(path) => report::write_json(&path, &answers),
                None => Ok(()),
            }
        }
        Command::Cost { scenario, sizes } => {
            cost(&scenario, &sizes);
            Ok(())
        }
        Command::Toll {
            scenario,
            bits,
            quiet,
        } => simulate::toll_table::run_and_print(&scenario, &bits, !quiet),
        Command::Identity {
            scenario,
            identities,
            seeds,
            quiet,
        } => simulate::identity_odds::run_and_print(&scenario, &identities, seeds, !quiet),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("simulate: {message}");
            ExitCode::from(2)
        }
    }
}

/// The room of `scenario` alone, or with `second` at once on one log stream.
fn run(
    scenario: &Scenario,
    second: Option<&SecondRoom>,
    grids: &[DrawGrid],
    modes: &[RefreshMode],
    out: &std::path::Path,
    plots: bool,
    verbose: bool,
) -> Result<(), String> {
    let population = Population::draw(scenario);
    let runs = match second {
        None => report::run_grids(scenario, &population, grids, modes, verbose),
        Some(second) => report::run_rooms(
            scenario,
            &population,
            second,
            &Population::draw(&second.scenario),
            grids,
            modes,
            verbose,
        ),
    };
    report::write(out, scenario, second, &population, &runs, plots)?;
    print_runs(&runs, second.is_some());
    println!("report and plots in {}", out.display());
    Ok(())
}

/// Each run's figures in a few lines (`rooms`: each headed by its room).
fn print_runs(runs: &[report::Run], rooms: bool) {
    for run in runs {
        let r = &run.report;
        if rooms {
            match &r.room {
                Some(room) => println!("room {room}:"),
                None => println!("service room:"),
            }
        }
        let g = &r.groups;
        let within: Vec<String> = g
            .periods
            .iter()
            .zip(&g.multi_device_within)
            .map(|(k, w)| format!("{k}: {:.3}±{:.3}", w.value, w.interval))
            .collect();
        let alone = g.multi_device_alone.map_or("-".to_string(), |a| {
            format!("{}/{} sooner, {:.4}", a.sooner, a.people, a.advantage)
        });
        println!(
            "{:7} {:8}  new sessions (allow tokens) {}, people admitted {}, tokens per person {:.3}; \
             new sessions/s after 1 min: mean {:.1}, peak {} (peak/mean {:.2}, peak/minute-mean {:.2}); \
             dispersion index {:.2}; slots in 99% band {:.3}; multi-device advantage {:.3}±{:.3} \
             (within k draw periods {}; against their first device alone: {}); \
             wait p50 {:?} s (shown {:?} s); \
             re-rolls won {}/{}; {:.0} ns/decision, {} decisions in {:.1} s",
            r.draw_grid,
            r.refresh_mode,
            r.admissions.allow_tokens,
            r.admissions.people,
            r.admissions.tokens_per_person,
            r.admissions.per_second.mean,
            r.admissions.per_second.peak,
            r.admissions.per_second.peak_to_mean,
            r.admissions.per_second.peak_to_minute_mean,
            r.admissions.dispersion.index,
            r.fairness.share_inside_band,
            g.multi_device_advantage.value,
            g.multi_device_advantage.interval,
            within.join(", "),
            alone,
            r.waits.realised.p50,
            r.waits.displayed.p50,
            r.attack.reroll_successes,
            r.attack.reroll_attempts,
            r.cost.ns_per_decision,
            r.cost.decisions,
            r.cost.wall_seconds,
        );
        if let Some(c) = &r.closed_loop {
            println!("{}", closed_loop_summary(c));
            if let Some(o) = &c.origin {
                print!("{}", o.table());
                println!(
                    "          origin: from minute {}, {} minutes judged, {} over the {} ms bound; \
                     new sessions at {} of the admissions at the bound (lowest {}); \
                     the target turned {} times",
                    o.from_minute,
                    o.minutes_judged,
                    o.minutes_over_bound,
                    o.bound_ms,
                    o.mean_share_of_bound_admissions
                        .map_or("-".into(), |s| format!("{s:.3}")),
                    o.lowest_share_of_bound_admissions
                        .map_or("-".into(), |s| format!("{s:.3}")),
                    o.direction_changes,
                );
            }
        }
        let t = &r.toll;
        if *t != simulate::toll_payment::TollTally::default() {
            println!(
                "          bot toll: people paid {} ({} hashes), {} draws held; skipping bots \
                 {} draws held; paying bots paid {} ({} hashes), {} draws held",
                t.people.solves,
                t.people.hashes,
                t.people.held,
                t.skipping_bots.held,
                t.paying_bots.solves,
                t.paying_bots.hashes,
                t.paying_bots.held,
            );
        }
    }
}

/// The closed loop's figures in a few lines.
fn closed_loop_summary(c: &simulate::summary::ClosedLoopReport) -> String {
    let ratio = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.3}"));
    let first: Vec<String> = c
        .first_minutes
        .iter()
        .map(|f| {
            format!(
                "minute {}: {} and {} ({:.2}x, {:.2}x)",
                f.minute, f.new_sessions[0], f.new_sessions[1], f.ratio[0], f.ratio[1]
            )
        })
        .collect();
    format!(
        "          target {:.0}/min: {}/{} checked minutes within ±10 % ({} above 1.15x), \
         lowest {} highest {}; first two minutes: {}; everyone admitted in {} min \
         (target implies {:.1}, ratio {}); {} writes ({} changed the percentage, {:.0}/h); \
         log line {:.0} ns/request",
        c.target_per_minute,
        c.minutes_within_10_percent,
        c.minutes_checked,
        c.minutes_above_115_percent,
        ratio(c.lowest_ratio),
        ratio(c.highest_ratio),
        first.join("; "),
        c.minutes_to_admit_everyone
            .map_or("-".to_string(), |m| format!("{m:.1}")),
        c.implied_minutes,
        ratio(c.admit_time_ratio),
        c.writes,
        c.percentage_writes,
        c.writes_per_hour,
        c.ns_per_log_line,
    )
}

fn cost(scenario: &Scenario, sizes: &[u64]) {
    println!("| visitors | most waiting at once | decisions | ns per decision | wall s |");
    println!("|---:|---:|---:|---:|---:|");
    for &visitors in sizes {
        let scenario = Scenario {
            visitors,
            ..scenario.clone()
        };
        let population = Population::draw(&scenario);
        let runs = report::run_modes(&scenario, &population, &[RefreshMode::Eligible], true);
        for run in runs {
            let c = run.report.cost;
            println!(
                "| {visitors} | {} | {} | {:.0} | {:.1} |",
                c.waiting_peak, c.decisions, c.ns_per_decision, c.wall_seconds
            );
        }
    }
}
