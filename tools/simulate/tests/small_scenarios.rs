//! Small scenarios through the real decision code, fast enough for every test run:
//! the lottery stays inside its binomial band; on the address grid extra devices
//! get nobody in sooner, however far apart they join, while on the VCL's global
//! grid they do; the address grid spreads a flash crowd's admissions evenly where
//! the global grid bunches them; replayed tokens never re-roll; this program's
//! refresh flattens a flash crowd that the VCL's fixed refresh sends back all at
//! once, and realised waits follow the displayed estimate.

use simulate::population::Population;
use simulate::report::{Run, run_modes};
use simulate::scenario::{Arrivals, Mix, Room, Scenario, Session};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::refresh_mode::RefreshMode;

fn run(scenario: &Scenario, mode: RefreshMode) -> Run {
    let population = Population::draw(scenario);
    run_modes(scenario, &population, &[mode], false)
        .pop()
        .expect("one mode, one run")
}

fn small(arrivals: Arrivals, mix: Mix) -> Scenario {
    Scenario {
        visitors: 4_000,
        arrivals,
        mix,
        room: Room::default()
            .with("allow_percentage", Percentage::whole(50))
            .with("wait_period_duration", 10)
            .with("allow_period_timeout", 600)
            .with("draw_grid", DrawGrid::Address),
        session: Session {
            requests: 1,
            interval: 30,
        },
        duration: 900,
        seed: 7,
        ..Scenario::default()
    }
}

fn on(grid: DrawGrid, scenario: &Scenario) -> Scenario {
    Scenario {
        room: scenario.room.clone().with("draw_grid", grid),
        ..scenario.clone()
    }
}

#[test]
fn lottery_stays_in_its_band_and_extra_devices_get_nobody_in_sooner_on_the_address_grid() {
    // Devices joining up to two wait periods apart: on the global grid most of
    // these people hold two places (odd and even slots).
    let mix = Mix {
        multi_device_share: 0.3,
        devices: 3,
        device_spread: 20,
        nat_share: 0.05,
        nat_size: 10,
        ..Mix::plain()
    };
    let scenario = small(Arrivals::Steady { seconds: 600 }, mix);
    let address = run(&on(DrawGrid::Address, &scenario), RefreshMode::Eligible).report;
    let global = run(&on(DrawGrid::Global, &scenario), RefreshMode::Eligible).report;
    for r in [&address, &global] {
        assert!(r.fairness.slots_checked >= 50, "{:?}", r.fairness);
        assert!(r.fairness.share_inside_band >= 0.95, "{:?}", r.fairness);
    }

    // Address grid: every device of a person holds the person's one token at each
    // point, so not one person got in sooner than their first device alone would
    // have; against single-device people, only sampling error.
    let g = &address.groups;
    let alone = g.multi_device_alone.expect("a static percentage");
    assert!(alone.people > 1000, "{alone:?}");
    assert_eq!((alone.sooner, alone.advantage), (0, 1.0), "{alone:?}");
    let advantage = g.multi_device_advantage.value;
    assert!((0.9..=1.1).contains(&advantage), "{g:?}");
    for (k, within) in g.periods.iter().zip(&g.multi_device_within) {
        assert!(
            (within.value - 1.0).abs() <= within.interval.max(0.05) * 1.5,
            "k = {k}: {g:?}"
        );
    }
    assert!((0.75..=1.25).contains(&g.nat_ratio.value), "{g:?}");

    // Global grid: devices that join in different slots draw independently.
    let gg = &global.groups;
    let alone = gg.multi_device_alone.expect("a static percentage");
    assert!(alone.sooner * 10 > alone.people, "{alone:?}");
    assert!(alone.advantage > 1.1, "{alone:?}");
    assert!(
        gg.multi_device_advantage.value > advantage + 0.1,
        "global {gg:?} address {g:?}"
    );
}

#[test]
fn the_address_grid_spreads_a_flash_crowd_the_global_grid_bunches_it() {
    let crowd = small(Arrivals::Flash { seconds: 2 }, Mix::plain());
    // 20 %: the crowd drains over some 30 draw periods.
    let scenario = Scenario {
        visitors: 10_000,
        room: crowd
            .room
            .clone()
            .with("allow_percentage", Percentage::whole(20)),
        ..crowd
    };
    let address = run(&on(DrawGrid::Address, &scenario), RefreshMode::Eligible).report;
    let global = run(&on(DrawGrid::Global, &scenario), RefreshMode::Eligible).report;
    let (a, g) = (address.admissions.dispersion, global.admissions.dispersion);
    assert!(a.seconds > 300 && a.index <= 2.0, "{a:?}");
    assert!(g.index > 2.0 * a.index, "global {g:?} address {a:?}");
    assert!(
        address.admissions.per_second.peak * 3 < global.admissions.per_second.peak * 2,
        "address {:?} global {:?}",
        address.admissions.per_second,
        global.admissions.per_second
    );
}

#[test]
fn replayed_tokens_never_reroll_nor_travel() {
    let mix = Mix {
        attacker_share: 0.05,
        ..Mix::plain()
    };
    let r = run(
        &small(Arrivals::Steady { seconds: 300 }, mix),
        RefreshMode::Eligible,
    )
    .report;
    let a = r.attack;
    assert!(
        a.reroll_attempts > 50 && a.cross_address_attempts > 50,
        "{a:?}"
    );
    assert_eq!(
        (a.reroll_successes, a.cross_address_successes),
        (0, 0),
        "{a:?}"
    );
    // Bounded replay: a kept winning wait token admits again only within its
    // redeem window (one wait period after its expiry); later replays fail.
    assert!(a.winner_replay_attempts > 0);
    assert!(
        a.winner_replay_successes < a.winner_replay_attempts,
        "{a:?}"
    );
}

#[test]
fn eligible_refresh_flattens_a_flash_crowd_and_waits_follow_the_estimate() {
    let scenario = small(Arrivals::Flash { seconds: 2 }, Mix::plain());
    let eligible = run(&scenario, RefreshMode::Eligible).report;
    let fixed = run(&scenario, RefreshMode::Fixed).report;
    let (e, f) = (eligible.admissions.per_second, fixed.admissions.per_second);
    assert!(e.peak * 3 < f.peak, "eligible {e:?} fixed {f:?}");
    // The estimate counts to the draw; the visitor returns up to d - 2 s later (their phase).
    let w = eligible.waits;
    let late = w.realised.mean.unwrap_or(f64::NAN) - w.displayed.mean.unwrap_or(f64::NAN);
    assert!((0.0..=10.0).contains(&late), "{w:?}");
}
