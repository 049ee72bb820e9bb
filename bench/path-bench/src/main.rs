//! Prints each decision path's cost beside its HMAC floor, as a Markdown table.
//!
//! From bench/, natively: `cargo run --release -p path-bench`. In wasm, under
//! Viceroy: `cargo build --release --target wasm32-wasip1 -p path-bench` then
//! `viceroy run ../target/wasm32-wasip1/release/path-bench.wasm`
//! (BENCHMARKS.md has the exact commands); `--help` lists the options.

use std::process::ExitCode;

use clap::Parser;
use path_bench::cases;
use path_bench::timing::{self, Effort};

/// Each decision path's cost beside its HMAC floor, medians over rounds.
#[derive(Parser)]
#[command(name = "path-bench")]
struct Args {
    #[command(flatten)]
    effort: Effort,
}

fn main() -> ExitCode {
    let effort = Args::parse().effort;
    let cases = match cases::all() {
        Ok(cases) => cases,
        Err(message) => {
            eprintln!("path-bench: {message}");
            return ExitCode::FAILURE;
        }
    };
    let figures = timing::measure(&cases, effort);
    println!(
        "{} rounds x {} calls, medians ({})",
        effort.rounds,
        effort.iterations,
        std::env::consts::ARCH
    );
    print!("{}", timing::table(&figures));
    ExitCode::SUCCESS
}
