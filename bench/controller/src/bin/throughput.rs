//! How many log lines a second one thread takes through the controller: the
//! library's parser (`Record::from_str`) and `Controller::observe`, with a tick
//! every 10 s of log time, as `wrctl control`'s control thread and readers do.
//!
//! ```text
//! cd bench
//! cargo run --release -p controller-bench --bin throughput [-- LINES]
//! cargo run --release -p controller-bench --bin throughput -- 2000000 --print > lines.txt
//! time ../target/release/wrctl control --target-per-minute 3000 --dry-run --quiet < lines.txt
//! ```
//!
//! With `--print`, the lines are written to stdout instead, to time the whole program
//! (`wrctl` built at the root: `cargo build --release -p wrctl`).
//!
//! The lines are a synthetic crowd from 100,000 addresses (arrivals, waiting-page
//! refreshes, lost and won draws, admitted visitors' pages, a few bypasses, half of
//! them with Viceroy's `waitingroom_log :: ` prefix), generated before the clock starts.

use std::time::Instant;

use clap::Parser;
use control::options::Options;
use control::percentage_rule::Controller;
use control::record::Record;
use waiting_room::settings::percentage::Percentage;
use wrctl::ingest::Batch;
use wrctl::synthetic::Crowd;

/// Log lines a second one thread takes through the controller.
#[derive(Parser)]
struct Args {
    /// How many lines.
    #[arg(default_value_t = 2_000_000)]
    lines: usize,
    /// Write the lines to stdout instead of timing them.
    #[arg(long)]
    print: bool,
}

fn main() {
    let args = Args::parse();
    let wanted = args.lines;
    let start = 1_700_000_000;
    let mut crowd = Crowd::new(start, 1);
    crowd.arrivals_per_second = 1_000;
    crowd.addresses = 100_000;
    crowd.percentage = Percentage::whole(5);
    crowd.prefixed = 0.5;
    let mut lines = Vec::with_capacity(wanted + 100_000);
    while lines.len() < wanted {
        lines.extend(crowd.next_second());
    }
    lines.truncate(wanted);
    if args.print {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for line in &lines {
            let _ = writeln!(out, "{line}");
        }
        return;
    }
    let seconds = lines
        .last()
        .and_then(|l| l.parse::<Record>().ok())
        .map_or(0, |r| r.t - start + 1);
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();

    let options = Options {
        target_per_minute: 3000.0,
        ..Options::default()
    };
    let mut controller = Controller::new(options).unwrap();
    let began = Instant::now();
    // Parse in batches as the readers do, observe as the control thread does.
    let mut next_tick = start + 10;
    let mut writes = 0;
    for chunk in lines.chunks(wrctl::ingest::BATCH) {
        let mut batch = Batch::default();
        for line in chunk {
            batch.push_line(line.as_bytes());
        }
        for record in &batch.records {
            let now = record.t;
            controller.observe(record, now);
            if now >= next_tick {
                if let Some(w) = controller.tick(now) {
                    controller.written(&w, now);
                    writes += 1;
                }
                next_tick = now + 10;
            }
        }
        for _ in 0..batch.bad.total() {
            controller.bad_line();
        }
    }
    let elapsed = began.elapsed().as_secs_f64();
    let snapshot = controller.snapshot(60);

    // The parser alone, for where the time goes.
    let began = Instant::now();
    let parsed = lines.iter().filter(|l| l.parse::<Record>().is_ok()).count();
    let parse_only = began.elapsed().as_secs_f64();

    println!(
        "machine: {} CPUs ({}), one thread used",
        nproc(),
        cpu_model()
    );
    println!(
        "lines: {} ({:.0} bytes on average), {seconds} s of log time, {} counted, {} bad",
        lines.len(),
        bytes as f64 / lines.len() as f64,
        snapshot.counters.lines,
        snapshot.counters.bad_lines
    );
    println!(
        "crowd at the end: {} waiting, {} active; {writes} writes; last percentage {}",
        snapshot.waiting,
        snapshot.active,
        snapshot.written.map_or("none".into(), |p| p.to_string())
    );
    println!(
        "parse + observe + tick: {:.0} lines/s ({:.2} s)",
        lines.len() as f64 / elapsed,
        elapsed
    );
    println!(
        "parse alone: {:.0} lines/s ({parsed} parsed)",
        lines.len() as f64 / parse_only
    );
}

fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}
