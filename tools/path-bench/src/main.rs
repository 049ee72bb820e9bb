//! Prints each decision path's cost beside its HMAC floor, as a Markdown table, then
//! the lower bounds of `least.rs` beside their cases.
//!
//! Natively: `cargo run --release -p path-bench`. In wasm, under Viceroy:
//! `cargo build --release --target wasm32-wasip1 -p path-bench` then
//! `viceroy run -C fastly.toml target/wasm32-wasip1/release/path-bench.wasm`
//! (BENCHMARKS.md has the exact commands). Options: `--rounds N`, `--iterations N`.

use std::process::ExitCode;

use path_bench::cases;
use path_bench::timing::{self, Effort};

/// Every path should cost at most this many times its floor.
const TARGET: f64 = 1.5;

fn main() -> ExitCode {
    let effort = match parse(std::env::args().skip(1)) {
        Ok(effort) => effort,
        Err(message) => {
            eprintln!("path-bench: {message}\nusage: path-bench [--rounds N] [--iterations N]");
            return ExitCode::from(2);
        }
    };
    let cases = match cases::all() {
        Ok(cases) => cases,
        Err(message) => {
            eprintln!("path-bench: {message}");
            return ExitCode::FAILURE;
        }
    };
    let figures = timing::measure(&cases, effort);
    println!(
        "{} rounds x {} calls, medians, target: plan() within {TARGET}x its floor ({})",
        effort.rounds,
        effort.iterations,
        std::env::consts::ARCH
    );
    print!("{}", timing::table(&figures, TARGET));
    println!("\nLower bounds: the least work written flat (tools/path-bench/src/least.rs)");
    for name in timing::LEAST_CASES {
        let case = cases.iter().find(|case| case.name == name);
        let Some(bound) = case.and_then(|case| timing::measure_least(case, effort)) else {
            eprintln!("path-bench: the lower bound does not do the room's work on {name}");
            return ExitCode::FAILURE;
        };
        println!(
            "- {name}: {:.0} ns, {:.2}x its floor of {:.0} ns; plan() {:.0} ns, {:.2}x the bound",
            bound.least_ns,
            bound.least_ratio(),
            bound.floor_ns,
            bound.plan_ns,
            bound.plan_over_least(),
        );
    }
    ExitCode::SUCCESS
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Effort, String> {
    let mut effort = Effort::default();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number: u32 = value
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or(format!("{flag}: {value:?} is not a positive whole number"))?;
        match flag.as_str() {
            "--rounds" => effort.rounds = number,
            "--iterations" => effort.iterations = number,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(effort)
}
