//! The fuzz targets' invariants (`test-support/src/invariants.rs`), run natively over
//! pseudo-random and mutated inputs from a fixed seed, so every test run checks
//! them without a fuzzer. `cargo fuzz` (see `fuzz/`) explores further.
//!
//! `FUZZ_INVARIANT_CASES` overrides the number of inputs per target.

use test_support as support;

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use support::invariants;

/// Inputs per target by default: enough to reach signed, tampered and expired
/// tokens under every setting, small enough for a few seconds in a debug build.
const DEFAULT_CASES: usize = 60_000;

/// The longest input generated, in bytes.
const MAX_INPUT: usize = 400;

/// The inputs' generator: seeded, so a failing case is reproducible from the seed.
struct Seeded(ChaCha8Rng);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Half fresh random inputs, half mutations of the previous input (a byte
/// changed, inserted or removed, or a random stretch overwritten), as a
/// fuzzer would try.
fn inputs(seed: u64, count: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut rng = Seeded(ChaCha8Rng::seed_from_u64(seed));
    let mut previous: Vec<u8> = Vec::new();
    (0..count).map(move |_| {
        let mut data = previous.clone();
        if data.is_empty() || rng.below(2) == 0 {
            data = (0..rng.below(MAX_INPUT))
                .map(|_| rng.next() as u8)
                .collect();
        } else {
            let at = rng.below(data.len());
            match rng.below(4) {
                0 => data[at] = rng.next() as u8,
                1 => data.insert(at, rng.next() as u8),
                2 => {
                    data.remove(at);
                }
                _ => {
                    let end = (at + 1 + rng.below(16)).min(data.len());
                    data[at..end].iter_mut().for_each(|b| *b = rng.next() as u8);
                }
            }
        }
        previous.clone_from(&data);
        data
    })
}

fn cases() -> usize {
    std::env::var("FUZZ_INVARIANT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// Runs `check` over the fixed-seed inputs, handing each result to `seen`; on a
/// failure, says which input.
fn run<R>(name: &str, seed: u64, check: fn(&[u8]) -> R, seen: impl FnMut(R)) {
    run_cases(name, seed, cases(), check, seen);
}

/// [`run`] over `count` inputs.
fn run_cases<R>(
    name: &str,
    seed: u64,
    count: usize,
    check: fn(&[u8]) -> R,
    mut seen: impl FnMut(R),
) {
    for (i, data) in inputs(seed, count).enumerate() {
        match std::panic::catch_unwind(|| check(&data)) {
            Ok(result) => seen(result),
            Err(_) => panic!("{name}: input #{i} (seed {seed:#x}) breaks an invariant: {data:?}"),
        }
    }
}

#[test]
fn token_decoding_is_canonical_and_round_trips() {
    run("token", 1, invariants::token, drop);
}

#[test]
fn cookie_header_parsing_finds_the_first_room_cookie_and_strips_all() {
    run("cookie_header", 2, invariants::cookie_header, drop);
}

#[test]
fn log_lines_and_percentages_read_as_documented() {
    run("log_line", 5, invariants::log_line, drop);
}

#[test]
fn the_bot_toll_draws_only_paid_tokens_and_parses_only_canonical_numbers() {
    let mut reached: BTreeMap<String, usize> = BTreeMap::new();
    run("toll", 9, invariants::toll, |(transition, paid)| {
        let state = format!("{transition:?} paid={paid}");
        *reached.entry(state).or_default() += 1;
    });
    // Held, drawn after paying, and drawn owing nothing: each reached.
    for state in [
        "Some(TollUnpaid) paid=false",
        "Some(LotteryWon) paid=true",
        "Some(LotteryLost) paid=true",
        "Some(LotteryWon) paid=false",
    ] {
        assert!(
            reached.contains_key(state),
            "never reached {state}: {reached:#?}"
        );
    }
}

#[test]
fn a_login_is_a_person_only_on_a_minted_token() {
    let mut reached: BTreeMap<&str, usize> = BTreeMap::new();
    run("login", 10, invariants::login, |word| {
        *reached.entry(word.unwrap_or("none")).or_default() += 1;
    });
    // Valid, expired, tampered and garbled logins were all tried.
    for word in ["person", "expired", "signature", "malformed"] {
        assert!(
            reached.contains_key(word),
            "never reached {word}: {reached:#?}"
        );
    }
}

#[test]
fn settings_stay_in_range_and_follow_the_documented_fallbacks() {
    run("settings", 3, invariants::settings, drop);
}

#[test]
fn plan_admits_only_on_valid_tokens_and_never_logs_the_cookie() {
    let mut reached: BTreeMap<String, usize> = BTreeMap::new();
    run("plan", 4, invariants::plan, |plan| {
        for state in states(&plan.log_line()) {
            *reached.entry(state).or_default() += 1;
        }
    });
    println!("states reached: {reached:#?}");
    // The inputs must reach every row of the decision table, or the
    // invariants above were checked on too little.
    for state in [
        "decision=bypass",
        "decision=deny",
        "decision=anon",
        "decision=anon rejected=malformed",
        "decision=anon rejected=uid-mismatch",
        "decision=anon rejected=unknown-key",
        "decision=anon rejected=bad-signature",
        "decision=anon transition=session-expired",
        "decision=wait",
        "decision=allow session=kept",
        "decision=allow session=renewed",
        "decision=allow session=new transition=lottery-won",
        "decision=re-wait transition=lottery-lost",
        "decision=allow session=new transition=cutoff-reached",
        "decision=anon transition=hold-expired",
        "decision=wait transition=joined-line",
        "ALERT=active-key-unusable",
        "ALERT=fifo-no-cutoff",
    ] {
        assert!(reached.contains_key(state), "never reached {state}");
    }
}

/// The states a log line shows: its decision with the rejection or transition
/// (`decision=anon rejected=bad-signature`), and the alert, if any.
fn states(line: &str) -> Vec<String> {
    let field = |name: &str| {
        let value = line.split(&format!(" {name}=")).nth(1)?;
        let end = value.find([' ', ':']).unwrap_or(value.len());
        Some(format!("{name}={}", &value[..end]))
    };
    let decision: Vec<String> = ["decision", "session", "rejected", "transition"]
        .into_iter()
        .filter_map(field)
        .collect();
    let mut states = vec![decision.join(" ")];
    states.extend(field("ALERT"));
    states
}

#[test]
fn room_indexes_schedules_blocks_and_passes_parse_as_documented() {
    run("rooms", 6, invariants::rooms, drop);
}

#[test]
fn no_path_reaches_a_room_or_bypass_that_an_origin_reads_otherwise() {
    let mut routed = std::collections::BTreeSet::new();
    // Each input walks up to 24 readings through the room's whole routing: a
    // sixth of the other targets' inputs keeps it to seconds.
    run_cases("path", 10, cases() / 6, invariants::path, |r| {
        routed.insert(format!("{r:?}"));
    });
    // The inputs reach every outcome, so the invariant is tried on each.
    for outcome in [
        "Refused",
        "Bypassed",
        "Outside",
        "Room(\"service\")",
        "Room(\"drops\")",
    ] {
        assert!(
            routed.contains(outcome),
            "{outcome} never reached: {routed:?}"
        );
    }
}
