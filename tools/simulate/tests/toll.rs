//! The bot toll on a small crowd, fast enough for every test run: people and
//! bots on many addresses in one room at a static percentage. Without the toll
//! skipping bots win places like everyone; with it they win none, people are
//! never held, and paying bots win places at a price of real hashes (a nonce
//! the room's own code checks) of at least half of 2^bits per place on average.
//! And the `toll` run mode's command line, as docs/research/simulate-toll.md shows it.

use simulate::bots::Bots;
use simulate::cli::{Command, TOLL_BOTS, TOLL_PEOPLE, TOLL_TARGET, parse};
use simulate::population::Population;
use simulate::scenario::{Arrivals, Mix, Room, Scenario, Session};
use simulate::toll_table::{Row, run_one};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::percentage::Percentage;

const BITS: u8 = 5;

fn crowd() -> Scenario {
    Scenario {
        visitors: 300,
        arrivals: Arrivals::Flash { seconds: 20 },
        mix: Mix {
            bots: Bots {
                skipping: 150,
                paying: 150,
            },
            ..Mix::plain()
        },
        room: Room::default()
            .with("allow_percentage", Percentage::whole(10))
            .with("wait_period_duration", 10)
            .with("allow_period_timeout", 600)
            .with("draw_grid", DrawGrid::Address),
        session: Session {
            requests: 1,
            interval: 30,
        },
        duration: 600,
        seed: 11,
        ..Scenario::default()
    }
}

fn rows() -> [Row; 2] {
    let scenario = crowd();
    let population = Population::draw(&scenario);
    [0, BITS].map(|bits| run_one(&scenario, &population, bits, false))
}

#[test]
fn skipping_bots_win_no_place_under_the_toll_and_paying_bots_pay_for_theirs() {
    let [off, on] = rows();
    // Without the toll, every kind wins places, and nobody pays.
    assert_eq!(off.skipping_bots.visitors, 150);
    assert!(off.skipping_bots.places > 50, "{off:?}");
    assert!(
        off.paying_bots.places > 50 && off.people.places > 100,
        "{off:?}"
    );
    for side in [off.people, off.skipping_bots, off.paying_bots] {
        assert_eq!(
            (side.payments.solves, side.payments.held),
            (0, 0),
            "{off:?}"
        );
    }

    // With it, skipping bots are held at every draw and win nothing, ever.
    assert_eq!(on.skipping_bots.places, 0, "{on:?}");
    assert!(on.skipping_bots.payments.held > 150, "{on:?}");
    assert_eq!(on.skipping_bots.payments.solves, 0);
    // People's pages pay before their draw: none is held, and they win places.
    assert_eq!(on.people.payments.held, 0, "{on:?}");
    assert!(on.people.places > 100, "{on:?}");
    // Paying bots win places, each for real work.
    let paying = on.paying_bots;
    assert!(paying.places > 50, "{on:?}");
    assert_eq!(paying.payments.held, 0, "{on:?}");
    let per_place = paying.hashes_per_place().expect("places won");
    let expected = f64::from(1u32 << BITS);
    assert!(
        per_place >= expected / 2.0,
        "{per_place} hashes per place: {on:?}"
    );
    // One toll per address (then toll=0): about 2^bits hashes each.
    assert!(paying.payments.solves <= paying.visitors, "{on:?}");
    let per_toll = paying.payments.hashes as f64 / paying.payments.solves as f64;
    assert!(
        (expected / 2.0..=expected * 2.0).contains(&per_toll),
        "{per_toll}"
    );
}

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

#[test]
fn the_toll_mode_has_its_own_defaults_and_the_documented_line_parses() {
    let Command::Toll {
        scenario,
        bits,
        quiet,
    } = parse(args("toll")).unwrap()
    else {
        panic!("not a toll table");
    };
    assert_eq!(bits, [0, 8, 12, 16]);
    assert!(!quiet);
    assert_eq!(scenario.visitors, TOLL_PEOPLE);
    assert_eq!(
        scenario.mix,
        Mix {
            bots: TOLL_BOTS,
            ..Mix::plain()
        }
    );
    let control = scenario.control.expect("a controller by default");
    assert_eq!(
        (control.target_per_minute, control.propagation_delay),
        (TOLL_TARGET, 30)
    );
    // A named mix changes the people, not the bots.
    let Command::Toll { scenario, .. } =
        parse(args("toll --mix default --bots 5:7 --bot-toll-bits 4")).unwrap()
    else {
        panic!("not a toll table");
    };
    assert_eq!(
        scenario.mix.bots,
        Bots {
            skipping: 5,
            paying: 7
        }
    );
    assert_eq!(scenario.mix.tabs, Mix::default().tabs);
    for bad in [
        "toll --bot-toll-bits 33",
        "toll --bot-toll-bits 08",
        "toll --bots 5",
        "run --bot-toll-bits -1",
    ] {
        assert!(parse(args(bad)).is_err(), "{bad}");
    }
    let Command::Run { scenario, .. } = parse(args("run --bot-toll-bits 20 --bots 0:10")).unwrap()
    else {
        panic!("not a run");
    };
    assert_eq!(scenario.room.settings().bot_toll_bits, 20);
    assert_eq!(scenario.room.stored("bot_toll_bits"), Some("20"));

    let doc = include_str!("../../../docs/research/simulate-toll.md");
    let lines: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.trim().strip_prefix("cargo run --release -p simulate -- "))
        .collect();
    let tables = lines
        .iter()
        .filter(|line| matches!(parse(args(line)), Ok(Command::Toll { .. })))
        .count();
    assert!(
        tables > 0,
        "docs/research/simulate-toll.md shows no toll table"
    );
    for line in lines {
        assert!(parse(args(line)).is_ok(), "{line}");
    }
}
