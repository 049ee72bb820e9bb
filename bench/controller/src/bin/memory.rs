//! The controller's memory with a crowd of 10 million waiting addresses: each
//! arrives once (a `decision=anon` line through the library's parser) over a
//! minute of log time, and draws once, the controller ticking every 10 s. Prints
//! the addresses it counts waiting (against those that came: the difference is
//! what 32-bit address keys merge) and the process's peak resident memory.
//!
//! ```text
//! cd bench
//! cargo run --release -p controller-bench --bin memory [-- ADDRESSES]
//! ```

use clap::Parser;
use control::options::Options;
use control::percentage_rule::Controller;
use control::record::Record;

/// The controller's memory with a crowd of waiting addresses.
#[derive(Parser)]
struct Args {
    /// How many addresses.
    #[arg(default_value_t = 10_000_000)]
    addresses: u32,
}

fn main() {
    let addresses = Args::parse().addresses;
    let start = 1_700_000_000u64;
    let mut controller = Controller::new(Options {
        target_per_minute: 3000.0,
        ..Options::default()
    })
    .expect("default options are valid");
    let per_second = u64::from(addresses).div_ceil(60).max(1);
    let uid = |i: u32| {
        let [a, b, c, d] = (0x0a00_0000u32.wrapping_add(i)).to_be_bytes();
        format!("{a}.{b}.{c}.{d}")
    };
    // Arrivals over a minute, then each address's first draw (lost) a minute on.
    for round in 0..2u64 {
        for i in 0..addresses {
            let t = start + round * 60 + u64::from(i) / per_second;
            let (decision, transition) = match round {
                0 => ("anon", ""),
                _ => ("re-wait", " transition=lottery-lost"),
            };
            let line = format!(
                "waitingroom t={t} decision={decision} uid={} p=1{transition} exp={} path=/events",
                uid(i),
                t + 60
            );
            match line.parse::<Record>() {
                Ok(record) => controller.observe(&record, t),
                Err(_) => controller.bad_line(),
            }
            if i % 1_000_000 == 0 {
                let _ = controller.tick(t);
            }
        }
    }
    let _ = controller.tick(start + 120);
    let snapshot = controller.snapshot(120);
    let counted = snapshot.waiting;
    let draws: u64 = snapshot.series.iter().map(|(_, s)| s.draws).sum();
    let peak_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        });
    println!("addresses that came:      {addresses}");
    println!(
        "counted waiting:          {counted} ({:.3} % merged by their keys)",
        100.0 * (1.0 - counted as f64 / f64::from(addresses))
    );
    println!("draws counted:            {draws}");
    match peak_kib {
        Some(kib) => println!("peak resident memory:     {} MB", kib / 1024),
        None => println!("peak resident memory:     unknown (no /proc/self/status)"),
    }
}
