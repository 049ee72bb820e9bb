//! Divan benchmarks of each decision path beside its HMAC floor, then the ratio
//! table from the same run: `cargo bench -p path-bench`
//! (in bench/).

use path_bench::cases::{self, Case, NAMES};
use path_bench::timing::{self, Effort};

fn case(name: &str) -> Case {
    cases::build(name).unwrap_or_else(|message| panic!("{message}"))
}

/// The whole per-request core, `plan()`.
#[divan::bench(args = NAMES)]
fn plan(bencher: divan::Bencher, name: &str) {
    let case = case(name);
    bencher.bench_local(|| case.plan());
}

/// The decision alone, `decide()`.
#[divan::bench(args = NAMES)]
fn decide(bencher: divan::Bencher, name: &str) {
    let case = case(name);
    bencher.bench_local(|| case.decide());
}

/// The HMAC-SHA256 work the path cannot avoid.
#[divan::bench(args = NAMES)]
fn floor(bencher: divan::Bencher, name: &str) {
    let case = case(name);
    bencher.bench_local(|| case.floor());
}

fn main() {
    divan::main();
    let cases: Vec<Case> = NAMES.iter().map(|name| case(name)).collect();
    let figures = timing::measure(&cases, Effort::default());
    println!(
        "\nRatios from the same run (medians of {} rounds):",
        Effort::default().rounds
    );
    print!("{}", timing::table(&figures));
}
