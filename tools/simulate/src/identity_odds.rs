//! `simulate identity`: each kind of person's odds of admission with the room's
//! identity by address and by login ([`crate::identity`]), side by side.
//!
//! One crowd (people alone on their address, people behind shared addresses,
//! people with a device on each of several addresses) runs through the one event
//! loop once per identity and seed, at a static percentage, for a run too short
//! to admit everyone: a person's odds are whether they got in within the run, and
//! how soon. The runs of one seed share one crowd; the spread over seeds is the
//! noise. Crowds of every seed are numbered alike (addresses from 10.0.0.0,
//! people from 0), so each seed runs in a room named after it: a room signs with
//! a key of its own, and a token's draw is its signature's, so each seed's draws
//! are its own.

use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;
use waiting_room::settings::config::{ALLOW_PERCENTAGE, IDENTITY};
use waiting_room::settings::identity::Identity;
use waiting_room::settings::refresh_mode::RefreshMode;
use waiting_room::settings::room::RoomName;
use waiting_room::settings::row::Words as _;

use crate::engine;
use crate::identity::Uids;
use crate::population::{Kind, Population};
use crate::progress::Progress;
use crate::run_record::RunRecord;
use crate::scenario::{Arrivals, Mix, Room, Scenario, Session};

/// The crowd `simulate identity` runs unless told otherwise: 6,000 people, a
/// third alone on their address, a third behind addresses shared by 20 (about
/// 100 addresses), a third on 3 addresses each (their devices joining within
/// 10 s), all arriving in the sale's first second; a room letting 5 % through at
/// each draw, every 60 s (`wait_period_duration` 30 s), for 10 minutes: 9 or 10
/// draws a uid, too few to admit everyone. Admitted people make one more
/// request.
pub fn crowd() -> Scenario {
    Scenario {
        visitors: 6_000,
        arrivals: Arrivals::Flash { seconds: 1 },
        mix: Mix {
            nat_share: 1.0 / 3.0,
            nat_size: 20,
            multi_address_share: 1.0 / 3.0,
            addresses_each: 3,
            ..Mix::plain()
        },
        room: Room::default().with(ALLOW_PERCENTAGE, 5),
        session: Session {
            requests: 1,
            interval: 60,
        },
        duration: 600,
        ..Scenario::default()
    }
}

/// The kinds of people compared, and how the table names them.
pub const GROUPS: [(Kind, &str); 3] = [
    (Kind::Single, "alone on their address"),
    (Kind::Nat, "behind a shared address"),
    (Kind::MultiAddress, "on several addresses"),
];

/// One kind of person in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Odds {
    /// People of the kind.
    pub people: u64,
    /// Distinct uids among their devices, per person: the people the room and
    /// its controller count them as.
    pub uids_per_person: f64,
    /// Share admitted within the run.
    pub admitted: f64,
    /// Mean seconds from arrival to admission, of those admitted.
    pub mean_wait: Option<f64>,
    /// Of the addresses two or more of them share, the share whose people were
    /// all admitted or none (`None`: no address shared).
    pub together: Option<f64>,
}

/// One run: its identity and seed, each group's odds, and the new sessions the
/// controller counts (distinct allow tokens) per person admitted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// The room's `identity` (`login bound to the address` with `login_binds_address`).
    pub identity: &'static str,
    /// The crowd's seed.
    pub seed: u64,
    /// The odds of each of [`GROUPS`], in order.
    pub groups: [Odds; 3],
    /// Distinct allow tokens handed out per person admitted.
    pub sessions_per_person: f64,
}

/// The odds of the people of `kind` in `record`, a run of `population` whose
/// devices the room took for `uids`.
pub fn odds(population: &Population, uids: &Uids, record: &RunRecord, kind: Kind) -> Odds {
    let people: Vec<usize> = (0..population.people.len())
        .filter(|&i| population.people[i].kind == kind)
        .collect();
    let count = people.len().max(1) as f64;
    let mut distinct = std::collections::HashSet::new();
    // Each person's first address (the one of their first device): who shares it.
    let mut first_address = vec![None; population.people.len()];
    for (i, device) in population.devices.iter().enumerate() {
        let person = device.person as usize;
        if population.people[person].kind == kind {
            distinct.insert(uids.of(i));
            first_address[person].get_or_insert(device.address);
        }
    }
    let waits: Vec<u64> = people
        .iter()
        .filter_map(|&i| Some(record.admitted_at(i)? - population.people[i].arrival))
        .collect();
    let mut by_address = std::collections::BTreeMap::<u32, (u32, u32)>::new();
    for &i in &people {
        let address = first_address[i].expect("every person has a device");
        let (all, admitted) = by_address.entry(address).or_default();
        *all += 1;
        *admitted += u32::from(record.is_admitted(i));
    }
    let shared: Vec<_> = by_address.values().filter(|(all, _)| *all > 1).collect();
    let together = shared
        .iter()
        .filter(|&&&(all, admitted)| admitted == 0 || admitted == all)
        .count();
    Odds {
        people: people.len() as u64,
        uids_per_person: distinct.len() as f64 / count,
        admitted: waits.len() as f64 / count,
        mean_wait: (!waits.is_empty())
            .then(|| waits.iter().sum::<u64>() as f64 / waits.len() as f64),
        together: (!shared.is_empty()).then(|| together as f64 / shared.len() as f64),
    }
}

/// One run of `scenario` over `population` (drawn from it) with the room's
/// identity `identity`, in random mode refreshing as the room does by default,
/// in the room named `seed-SEED`.
pub fn run_one(
    scenario: &Scenario,
    population: &Population,
    identity: Identity,
    verbose: bool,
) -> Run {
    let scenario = Scenario {
        room: scenario.room.clone().with(IDENTITY, identity.word()),
        ..scenario.clone()
    };
    let label = format!("identity {} seed {}", identity.word(), scenario.seed);
    let mut progress = Progress::new(label, verbose);
    let name = RoomName::new(&format!("seed-{}", scenario.seed)).expect("a room's name");
    let method = engine::Method::random(&scenario, population, RefreshMode::Eligible).in_room(name);
    let (record, _) = engine::run_method(&scenario, population, method, &mut progress);
    let uids = Uids::new(scenario.room.settings(), population, None);
    let admitted = (0..population.people.len())
        .filter(|&i| record.is_admitted(i))
        .count();
    // Bound to the address, a login is a person on one address: say so.
    let identity = match (identity, scenario.room.settings().login_binds_address) {
        (Identity::Login, true) => "login bound to the address",
        _ => identity.word(),
    };
    Run {
        identity,
        seed: scenario.seed,
        groups: GROUPS.map(|(kind, _)| odds(population, &uids, &record, kind)),
        sessions_per_person: record.new_tokens.iter().sum::<u64>() as f64 / admitted.max(1) as f64,
    }
}

/// Runs `scenario` with each of `identities` for each of `seeds` seeds from its
/// own (one crowd a seed), each identity's runs on a thread of its own.
pub fn run(scenario: &Scenario, identities: &[Identity], seeds: u64, verbose: bool) -> Vec<Run> {
    let crowds: Vec<(Scenario, Population)> = (0..seeds)
        .map(|k| {
            let seeded = Scenario {
                seed: scenario.seed.wrapping_add(k),
                ..scenario.clone()
            };
            let population = Population::draw(&seeded);
            (seeded, population)
        })
        .collect();
    let crowds = &crowds;
    std::thread::scope(|scope| {
        let threads: Vec<_> = identities
            .iter()
            .map(|&identity| {
                scope.spawn(move || {
                    crowds
                        .iter()
                        .map(|(s, p)| run_one(s, p, identity, verbose))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("a run of the identity table panicked"))
            .collect()
    })
}

/// The mean of `values` and their spread: the sample standard deviation (0 for one value).
pub fn spread(values: &[f64]) -> (f64, f64) {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let squares = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
    let sd = if values.len() > 1 {
        (squares / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, sd)
}

/// `values`' mean ± spread with `decimals` decimals, `–` without values.
fn mean_sd(values: &[f64], decimals: usize) -> String {
    if values.is_empty() {
        return "–".to_string();
    }
    let (mean, sd) = spread(values);
    format!("{mean:.decimals$} ± {sd:.decimals$}")
}

/// The runs as a Markdown table: a row per group and identity, each figure the
/// mean ± the sample standard deviation over the runs of that identity (the
/// share admitted also against the people alone of the same run); then the new
/// sessions the controller counts per person admitted.
pub fn table(runs: &[Run]) -> String {
    let mut identities: Vec<&str> = runs.iter().map(|r| r.identity).collect();
    identities.dedup();
    let mut out = String::from(
        "| people | identity | people a run | uids per person | admitted within the run | \
         against those alone | seconds to admission (of those admitted) | \
         shared addresses all in or all out |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (g, (_, name)) in GROUPS.iter().enumerate() {
        for (k, identity) in identities.iter().enumerate() {
            let of: Vec<&Run> = runs.iter().filter(|r| r.identity == *identity).collect();
            let figure = |f: &dyn Fn(&Odds, &Odds) -> Option<f64>, decimals: usize| {
                let values: Vec<f64> = of
                    .iter()
                    .filter_map(|r| f(&r.groups[g], &r.groups[0]))
                    .collect();
                mean_sd(&values, decimals)
            };
            let _ = writeln!(
                out,
                "| {} | {identity} | {} | {} | {} | {} | {} | {} |",
                if k == 0 { name } else { "" },
                figure(&|o, _| Some(o.people as f64), 0),
                figure(&|o, _| Some(o.uids_per_person), 2),
                figure(&|o, _| Some(o.admitted), 3),
                figure(
                    &|o, alone| (g > 0).then_some(o.admitted - alone.admitted),
                    3
                ),
                figure(&|o, _| o.mean_wait, 0),
                figure(&|o, _| o.together, 3),
            );
        }
    }
    let sessions: Vec<String> = identities
        .iter()
        .map(|identity| {
            let of: Vec<f64> = runs
                .iter()
                .filter(|r| r.identity == *identity)
                .map(|r| r.sessions_per_person)
                .collect();
            format!("{identity} {}", mean_sd(&of, 3))
        })
        .collect();
    let _ = writeln!(
        out,
        "\nnew sessions the controller counts (distinct allow tokens) per person admitted: {}",
        sessions.join(", ")
    );
    out
}

/// Runs the table for `scenario` and prints it, with the crowd and the wall time.
pub fn run_and_print(
    scenario: &Scenario,
    identities: &[Identity],
    seeds: u64,
    verbose: bool,
) -> Result<(), String> {
    let started = Instant::now();
    let (m, room) = (&scenario.mix, scenario.room.settings());
    println!(
        "{} people ({:.0} % behind addresses shared by {}, {:.0} % on {} addresses each, \
         the rest alone on theirs), {}, {} s; allow_percentage {}, \
         wait_period_duration {} s, draw grid {}; seeds {} to {}: mean ± sample standard \
         deviation over the {seeds} runs of each identity",
        scenario.visitors,
        100.0 * m.nat_share,
        m.nat_size,
        100.0 * m.multi_address_share,
        m.addresses_each,
        crate::report::describe(scenario),
        scenario.duration,
        room.allow_percentage,
        room.wait_period_duration,
        room.draw_grid,
        scenario.seed,
        scenario.seed.wrapping_add(seeds.saturating_sub(1)),
    );
    let runs = run(scenario, identities, seeds, verbose);
    print!("\n{}", table(&runs));
    println!(
        "\n{} runs in {:.1} s",
        runs.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_sample_standard_deviation() {
        assert_eq!(spread(&[2.0]), (2.0, 0.0));
        let (mean, sd) = spread(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(mean, 2.5);
        assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[], 2), "–");
        assert_eq!(mean_sd(&[0.25, 0.75], 2), "0.50 ± 0.35");
    }

    #[test]
    fn the_table_has_a_row_per_group_and_identity() {
        let odds = Odds {
            people: 10,
            uids_per_person: 1.0,
            admitted: 0.5,
            mean_wait: Some(120.0),
            together: None,
        };
        let runs: Vec<Run> = ["address", "login"]
            .iter()
            .flat_map(|&identity| {
                (1..=2).map(move |seed| Run {
                    identity,
                    seed,
                    groups: [
                        odds,
                        Odds {
                            admitted: 0.75,
                            ..odds
                        },
                        odds,
                    ],
                    sessions_per_person: 1.0,
                })
            })
            .collect();
        let table = table(&runs);
        assert_eq!(table.lines().filter(|l| l.starts_with("| ")).count(), 7);
        assert!(
            table.contains(
                "| alone on their address | address | 10 ± 0 | 1.00 ± 0.00 | 0.500 ± 0.000 | – | 120 ± 0 | – |"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "| behind a shared address | address | 10 ± 0 | 1.00 ± 0.00 | 0.750 ± 0.000 | 0.250 ± 0.000 | 120 ± 0 | – |"
            ),
            "{table}"
        );
        assert!(table.contains("address 1.000 ± 0.000, login 1.000 ± 0.000"));
    }
}
