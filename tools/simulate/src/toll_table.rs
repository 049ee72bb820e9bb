//! `simulate toll`: bots with many addresses against people, with the room's
//! bot toll off and at a few numbers of bits.
//!
//! Each number of bits is one run of the same crowd (people, skipping bots and
//! paying bots, [`crate::bots`]) through the simulator's one event loop, with
//! the same room and controller; the runs go at once, one thread each (and a
//! large toll is searched on every core: [`crate::toll_payment`]). A row
//! says the places (new sessions: a visitor's first admission) each kind took,
//! and what a paying bot spent per place won: hashes, and CPU seconds at the
//! hash rate measured on one core of this machine in the same process
//! ([`toll_payment::hash_rate`]: native Rust, not a browser).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;
use waiting_room::settings::config::BOT_TOLL_BITS;
use waiting_room::settings::refresh_mode::RefreshMode;

use crate::bots::Bot;
use crate::engine;
use crate::population::{Kind, Population};
use crate::progress::Progress;
use crate::run_record::RunRecord;
use crate::scenario::Scenario;
use crate::toll_payment::{self, Payments};

/// One kind of visitor in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Side {
    /// Visitors of the kind (a bot: one address each).
    pub visitors: u64,
    /// Of those, admitted: a place (a new session) each.
    pub places: u64,
    /// The tolls they paid, and their draws held unpaid.
    pub payments: Payments,
}

impl Side {
    /// Hashes spent per place won (`None` without a place).
    pub fn hashes_per_place(&self) -> Option<f64> {
        (self.places > 0).then(|| self.payments.hashes as f64 / self.places as f64)
    }
}

/// One run: the toll's bits, and what each kind of visitor got and paid.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Row {
    /// `bot_toll_bits`.
    pub bits: u8,
    /// People (every visitor but the bots).
    pub people: Side,
    /// Bots that never pay.
    pub skipping_bots: Side,
    /// Bots that pay as a browser does.
    pub paying_bots: Side,
    /// Wall-clock seconds of the run.
    pub wall_seconds: f64,
}

impl Row {
    /// The figures of `record`, a run of `population` with a toll of `bits`.
    pub fn new(bits: u8, population: &Population, record: &RunRecord) -> Row {
        let mut row = Row {
            bits,
            people: Side::default(),
            skipping_bots: Side::default(),
            paying_bots: Side::default(),
            wall_seconds: record.wall_seconds,
        };
        for (i, person) in population.people.iter().enumerate() {
            let side = row.side_mut(person.kind);
            side.visitors += 1;
            side.places += u64::from(record.is_admitted(i));
        }
        for kind in [
            Kind::Single,
            Kind::Bot(Bot::Skipping),
            Kind::Bot(Bot::Paying),
        ] {
            row.side_mut(kind).payments = *record.toll.of(kind);
        }
        row
    }

    fn side_mut(&mut self, kind: Kind) -> &mut Side {
        match kind {
            Kind::Bot(Bot::Skipping) => &mut self.skipping_bots,
            Kind::Bot(Bot::Paying) => &mut self.paying_bots,
            _ => &mut self.people,
        }
    }

    /// Places taken by everyone.
    pub fn places(&self) -> u64 {
        self.people.places + self.skipping_bots.places + self.paying_bots.places
    }

    /// The share of the places `side` took.
    pub fn share(&self, side: &Side) -> f64 {
        side.places as f64 / self.places().max(1) as f64
    }
}

/// Runs `scenario` over `population` once for each of `bits` (its room's
/// `bot_toll_bits` replaced), all at once, in random mode refreshing as the
/// room does by default (`eligible`).
pub fn run(scenario: &Scenario, population: &Population, bits: &[u8], verbose: bool) -> Vec<Row> {
    std::thread::scope(|scope| {
        let runs: Vec<_> = bits
            .iter()
            .map(|&bits| scope.spawn(move || run_one(scenario, population, bits, verbose)))
            .collect();
        runs.into_iter()
            .map(|run| run.join().expect("a run of the toll table panicked"))
            .collect()
    })
}

/// One run of `scenario` over `population` with a toll of `bits`.
pub fn run_one(scenario: &Scenario, population: &Population, bits: u8, verbose: bool) -> Row {
    let scenario = Scenario {
        room: scenario.room.clone().with(BOT_TOLL_BITS, bits),
        ..scenario.clone()
    };
    let mut progress = Progress::new(format!("toll {bits} bits"), verbose);
    let record = engine::run(&scenario, population, RefreshMode::Eligible, &mut progress);
    Row::new(bits, population, &record)
}

/// The rows as a Markdown table, with CPU seconds at `hash_rate` hashes a second.
pub fn table(rows: &[Row], hash_rate: f64) -> String {
    let mut out = String::from(
        "| bot_toll_bits | places (new sessions) | people's places | skipping bots' share | \
         paying bots' share | people's hashes per place | paying bots' hashes per place \
         (per toll paid) | paying bots' CPU per place |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let share = |side: &Side| format!("{:.1} % ({})", 100.0 * row.share(side), side.places);
        let hashes = |side: &Side| match side.hashes_per_place() {
            Some(h) if side.payments.solves > 0 => format!("{h:.0}"),
            _ => "–".to_string(),
        };
        let per_toll = |side: &Side| match side.payments.solves {
            0 => "–".to_string(),
            n => format!(
                "{} ({:.0})",
                hashes(side),
                side.payments.hashes as f64 / n as f64
            ),
        };
        let cpu = match row.paying_bots.hashes_per_place() {
            Some(h) if row.paying_bots.payments.solves > 0 => cpu_time(h / hash_rate),
            _ => "–".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.bits,
            row.places(),
            row.people.places,
            share(&row.skipping_bots),
            share(&row.paying_bots),
            hashes(&row.people),
            per_toll(&row.paying_bots),
            cpu,
        );
    }
    out
}

/// Seconds, in the unit that reads best.
fn cpu_time(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{:.1} µs", seconds * 1e6)
    } else if seconds < 1.0 {
        format!("{:.1} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// Runs the table for `scenario` at each of `bits` and prints it, with the
/// crowd, the hash rate and the wall time.
pub fn run_and_print(scenario: &Scenario, bits: &[u8], verbose: bool) -> Result<(), String> {
    let started = Instant::now();
    let population = Population::draw(scenario);
    let bots = scenario.mix.bots;
    println!(
        "{} people, bots on {} addresses ({} skipping, {} paying), arriving {:?}, {} s; \
         allow_percentage {} until the controller's first write, wait_period {} s, draw grid {}; \
         controller: {}",
        scenario.visitors,
        bots.addresses(),
        bots.skipping,
        bots.paying,
        scenario.arrivals,
        scenario.duration,
        scenario.room.settings().allow_percentage,
        scenario.room.settings().wait_period_duration,
        scenario.room.settings().draw_grid,
        scenario.control.map_or("none".to_string(), |c| format!(
            "{} new sessions/min, propagation {} s, log delay {} s",
            c.target_per_minute, c.propagation_delay, c.log_delay
        )),
    );
    let rows = run(scenario, &population, bits, verbose);
    let hash_rate = toll_payment::hash_rate(Duration::from_secs(2));
    println!(
        "hash rate: {:.2} M SHA-256 per CPU second on one core (native Rust: the room's own \
         toll::solve, measured in this run over 2 s of the thread's CPU time; not a browser)\n",
        hash_rate / 1e6
    );
    print!("{}", table(&rows, hash_rate));
    let walls: Vec<String> = rows
        .iter()
        .map(|r| format!("{} bits {:.1} s", r.bits, r.wall_seconds))
        .collect();
    println!(
        "\nruns (at once): {}; in all {:.1} s",
        walls.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_read_in_their_unit() {
        assert_eq!(cpu_time(0.000_012_34), "12.3 µs");
        assert_eq!(cpu_time(0.042), "42.0 ms");
        assert_eq!(cpu_time(3.5), "3.50 s");
    }

    #[test]
    fn a_row_counts_places_and_shares_by_kind() {
        let row = Row {
            bits: 4,
            people: Side {
                visitors: 10,
                places: 6,
                payments: Payments::default(),
            },
            skipping_bots: Side::default(),
            paying_bots: Side {
                visitors: 5,
                places: 2,
                payments: Payments {
                    solves: 4,
                    hashes: 80,
                    held: 0,
                },
            },
            wall_seconds: 0.0,
        };
        assert_eq!(row.places(), 8);
        assert_eq!(row.share(&row.paying_bots), 0.25);
        assert_eq!(row.paying_bots.hashes_per_place(), Some(40.0));
        assert_eq!(row.skipping_bots.hashes_per_place(), None);
        let table = table(&[row], 1e6);
        assert!(
            table.contains("| 4 | 8 | 6 | 0.0 % (0) | 25.0 % (2) | – | 40 (20) | 40.0 µs |"),
            "{table}"
        );
    }
}
