//! Prints each decision path's cost beside its HMAC floor, as a Markdown table.
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
