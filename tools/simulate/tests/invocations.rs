//! Every distinct `simulate` line of scripts/*.sh (their shell variables set as the
//! scripts set them), and the lines BENCHMARKS.md, docs/research/closed-loop.md and
//! docs/research/figures/README.md show, still parse, into the command they meant; and every
//! `simulate` command any doc shows is one the binary knows.

use std::path::Path;

use simulate::cli::{Command, parse};
use simulate::scenario::PopCountsModel;
use test_support::docs::{self, Cli};
use waiting_room::settings::draw_grid::DrawGrid;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

fn parsed(line: &str) -> Command {
    parse(args(line)).unwrap_or_else(|e| panic!("{line}\n{e}"))
}

const FLASH: &str = "--visitors 200000 --arrivals flash:10";
const STEADY: &str = "--visitors 200000 --arrivals steady:3000";
const WAVES: &str = "--visitors 300000 --arrivals waves:3:1200:60";

/// scripts/closed-loop.sh, on either grid.
#[test]
fn closed_loop_script() {
    for grid in ["address", "global"] {
        let out = "docs/research/figures/closed-loop";
        let common = format!("--refresh eligible --draw-grid {grid} --quiet");
        for delay in [0, 30, 60] {
            let run = |name: &str, rest: &str| {
                let line = format!(
                    "run {common} --propagation-delay {delay} --out {out}/{name}-delay-{delay} {rest}"
                );
                let Command::Run {
                    scenario, grids, ..
                } = parsed(&line)
                else {
                    panic!("{line}: not a run");
                };
                assert_eq!(grids.len(), 1, "{line}");
                assert_eq!(scenario.control.unwrap().propagation_delay, delay);
                scenario
            };
            for mix in ["plain", "default", "heavy"] {
                let people = format!("--mix {mix}");
                run(
                    "flash",
                    &format!("{people} {FLASH} --duration 7200 --target-per-minute 2000"),
                );
                run(
                    "steady",
                    &format!("{people} {STEADY} --duration 7200 --target-per-minute 2000"),
                );
                run(
                    "waves",
                    &format!("{people} {WAVES} --duration 7200 --target-per-minute 3000"),
                );
                // The POP's ceiling at 0.95x, the edge's counts as documented.
                for (crowd, target, ceiling) in [
                    (FLASH, 2000, 1900),
                    (STEADY, 2000, 1900),
                    (WAVES, 3000, 2850),
                ] {
                    let scenario = run(
                        "ceiling",
                        &format!(
                            "{people} --pop-counts edge {crowd} --duration 7200 \
                             --target-per-minute {target} --pop-new-sessions-per-minute {ceiling}"
                        ),
                    );
                    assert_eq!(
                        scenario.room.settings().pop_new_sessions_per_minute,
                        Some(ceiling)
                    );
                    assert_eq!(scenario.room.pop_counts, PopCountsModel::default());
                }
            }
            run(
                "mix-flash-start-1",
                &format!(
                    "{FLASH} --duration 7200 --target-per-minute 2000 --allow-percentage 1 --start 1"
                ),
            );
        }
        for (name, crowd, percentages) in [
            ("flash", FLASH, "0.5,1,1.15,2,5"),
            ("steady", STEADY, "1,2,3,5,10"),
            ("waves", WAVES, "1,2,3,5,10"),
        ] {
            let line = format!(
                "plan --sample 20000 --draw-grid {grid} --mix plain --out {out}/{name}-fixed.json \
                 {crowd} --duration 7200 --allow-percentage {percentages}"
            );
            let Command::Plan {
                candidates,
                scenario,
                ..
            } = parsed(&line)
            else {
                panic!("{line}: not a plan");
            };
            assert_eq!(candidates.len(), 5);
            assert_eq!(scenario.room.settings().draw_grid.to_string(), grid);
        }
    }
}

/// scripts/device-spread.sh.
#[test]
fn device_spread_script() {
    for spread in [10, 40, 120] {
        let common = format!(
            "--mix devices --device-spread {spread} --draw-grid both --refresh eligible --no-plots --quiet"
        );
        for (crowd, name) in [
            (FLASH, "flash"),
            ("--visitors 1000000 --arrivals steady:3000", "steady"),
            (WAVES, "waves"),
        ] {
            let line = format!(
                "run {common} {crowd} --duration 3600 --out docs/research/figures/devices/{name}-spread-{spread}"
            );
            let Command::Run {
                scenario, grids, ..
            } = parsed(&line)
            else {
                panic!("{line}: not a run");
            };
            assert_eq!(scenario.mix.device_spread, spread);
            assert_eq!(grids, [DrawGrid::Address, DrawGrid::Global]);
        }
    }
}

/// scripts/fifo-simulations.sh.
#[test]
fn fifo_simulations_script() {
    let common = "--queueing fifo --target-per-minute 2000 --duration 7200 --no-plots --quiet";
    let run = |name: &str, delay: u64, rest: &str| {
        let line = format!(
            "run {common} --propagation-delay {delay} --out docs/research/figures/fifo/{name}-delay-{delay} {rest}"
        );
        let Command::Fifo { scenario, .. } = parsed(&line) else {
            panic!("{line}: not a FIFO run");
        };
        scenario
    };
    for delay in [0, 30, 60] {
        for mix in ["plain", "default", "heavy"] {
            run(
                &format!("{mix}-flash"),
                delay,
                &format!("--mix {mix} {FLASH}"),
            );
            run(
                &format!("{mix}-steady"),
                delay,
                &format!("--mix {mix} {STEADY}"),
            );
        }
    }
    let s = run(
        "plain-flash-abandon-30pct",
        30,
        &format!("--mix plain {FLASH} --abandon 0.3:1200"),
    );
    assert_eq!((s.mix.abandon_share, s.mix.patience), (0.3, 1200));
}

/// scripts/simulations.sh, and the same lines in BENCHMARKS.md.
#[test]
fn simulations_script() {
    for (crowd, name) in [
        ("--visitors 1000000 --arrivals steady:3000", "steady"),
        (FLASH, "flash"),
        (WAVES, "waves"),
    ] {
        let line = format!(
            "run --mix devices {crowd} --duration 3600 --draw-grid both --out docs/research/figures/{name}"
        );
        assert!(matches!(parsed(&line), Command::Run { .. }), "{line}");
    }
    let Command::Cost { sizes, .. } = parsed("cost --visitors 1000,10000,100000,1000000") else {
        panic!("not a cost");
    };
    assert_eq!(sizes, [1_000, 10_000, 100_000, 1_000_000]);
    let line = "plan --visitors 200000 --arrivals flash:60 --duration 3600 \
                --allow-percentage 5,10,20 --wait-period-duration 30,60 --allow-period-timeout 900,3600 \
                --sample 20000";
    let Command::Plan {
        candidates, sample, ..
    } = parsed(line)
    else {
        panic!("not a plan");
    };
    assert_eq!((candidates.len(), sample), (12, 20_000));
}

/// The lines BENCHMARKS.md, docs/research/closed-loop.md and docs/research/figures/README.md show beyond the
/// scripts'.
#[test]
fn documented_lines() {
    for line in [
        "run --mix devices --visitors 200000 --arrivals flash:10 --duration 3600 --device-spread 120 \
         --draw-grid both --refresh eligible --no-plots --out docs/research/figures/devices/flash-spread-120",
        "run --visitors 200000 --arrivals flash:10 --duration 7200 --refresh eligible \
         --allow-percentage 1 --start 1 --target-per-minute 2000 --propagation-delay 60 \
         --out docs/research/figures/closed-loop/mix-flash-start-1-delay-60",
    ] {
        assert!(matches!(parsed(line), Command::Run { .. }), "{line}");
    }
    let line = "run --queueing fifo --visitors 200000 --arrivals flash:10 --mix plain \
                --target-per-minute 2000 --propagation-delay 30 --duration 7200 --quiet \
                --out docs/research/figures/fifo/plain-flash-delay-30";
    assert!(matches!(parsed(line), Command::Fifo { .. }), "{line}");
}

/// Every `simulate` command the docs show (README.md, BENCHMARKS.md, SECURITY.md and
/// docs/: `cargo run -p simulate -- …` in `sh` blocks, `simulate …` in inline code, read
/// by `test_support::docs`): its subcommand and options are ones the real binary's
/// `--help` lists, and a whole line (no placeholder such as `N` or `…`) parses.
#[test]
fn every_documented_command_is_one_simulate_knows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = docs::invocations(&docs::all_snippets(&root), "simulate");
    let cli = Cli::new(env!("CARGO_BIN_EXE_simulate"), "simulate");
    let mut wrong = Vec::new();
    let mut parsed = 0;
    for (place, args) in &found {
        if let Err(e) = cli.check(args) {
            wrong.push(format!("{place}: {e}"));
            continue;
        }
        let placeholder = |a: &String| {
            a.contains('…')
                || !a
                    .chars()
                    .any(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        };
        if args.is_empty() || args.iter().any(placeholder) || args.iter().any(|a| a == "--help") {
            continue;
        }
        match parse(args.clone()) {
            Ok(_) => parsed += 1,
            Err(e) => wrong.push(format!("{place}: simulate {}: {e}", args.join(" "))),
        }
    }
    assert!(
        wrong.is_empty(),
        "commands the docs show that simulate does not take:\n{}",
        wrong.join("\n")
    );
    // The docs show about twenty, a dozen of them whole: finding fewer means the reading broke.
    assert!(
        found.len() >= 15,
        "only {} simulate commands found",
        found.len()
    );
    assert!(parsed >= 8, "only {parsed} whole simulate lines parsed");
}
