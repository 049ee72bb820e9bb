//! The command line as scripts and people type it: every option read, defaults
//! per command, `--mix` taken whole before its parts wherever they stand, and
//! every refusal (bad values, options of another command or mode).

use std::path::PathBuf;

use simulate::cli::{Command, parse};
use simulate::scenario::{Arrivals, Mix, PopCountsModel, Room, Scenario};
use waiting_room::settings::config::{KEYS, SessionMode};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::identity::Identity;
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::refresh_mode::RefreshMode;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// The scenario of `line`, which must parse as a run of one room.
fn run_scenario(line: &str) -> Scenario {
    let Command::Run { scenario, .. } = parse(args(line)).unwrap() else {
        panic!("{line}: not a run");
    };
    scenario
}

#[test]
fn run_defaults_to_both_modes() {
    let Command::Run {
        scenario,
        grids,
        modes,
        out,
        no_plots,
        quiet,
    } = parse(args("run")).unwrap()
    else {
        panic!("not a run");
    };
    assert_eq!(scenario, Scenario::default());
    assert_eq!(grids, [DrawGrid::Address]);
    assert_eq!(modes, [RefreshMode::Eligible, RefreshMode::Fixed]);
    assert_eq!(
        (out, no_plots, quiet),
        (PathBuf::from("simulation"), false, false)
    );
}

#[test]
fn run_reads_every_scenario_option() {
    let line = "run --visitors 1_000 --arrivals flash:5 --duration 600 --allow-percentage 30 \
                --wait-period-duration 20 --allow-period-timeout 900 --session 2:30 --multi-device 0.2:4:5 \
                --nat 0.1:50 --attackers 0.01 --seed 9 --refresh fixed --out x --quiet \
                --draw-grid global --no-plots --tabs 0.4:2 --app-poll 0.2:5:9 --early 0.3 \
                --abandon 0.5:300";
    let Command::Run {
        scenario: s,
        grids,
        modes,
        no_plots,
        quiet,
        ..
    } = parse(args(line)).unwrap()
    else {
        panic!("not a run");
    };
    assert_eq!(s.visitors, 1000);
    assert_eq!(s.arrivals, Arrivals::Flash { seconds: 5 });
    assert_eq!((s.duration, s.seed), (600, 9));
    assert_eq!(
        (
            s.room.settings().allow_percentage,
            s.room.settings().wait_period_duration,
            s.room.settings().allow_period_timeout
        ),
        (Percentage::whole(30), 20, 900)
    );
    assert_eq!((s.session.requests, s.session.interval), (2, 30));
    assert_eq!(
        (s.mix.multi_device_share, s.mix.devices, s.mix.device_spread),
        (0.2, 4, 5)
    );
    assert_eq!(
        (s.mix.nat_share, s.mix.nat_size, s.mix.attacker_share),
        (0.1, 50, 0.01)
    );
    assert_eq!((s.mix.tabs_share, s.mix.tabs), (0.4, 2));
    assert_eq!((s.mix.poller_share, s.mix.poll_every), (0.2, (5, 9)));
    assert_eq!(s.mix.early_share, 0.3);
    assert_eq!((s.mix.abandon_share, s.mix.patience), (0.5, 300));
    assert_eq!(modes, [RefreshMode::Fixed]);
    assert_eq!(
        (grids, s.room.settings().draw_grid),
        (vec![DrawGrid::Global], DrawGrid::Global)
    );
    assert!(quiet && no_plots);
}

#[test]
fn run_reads_the_pops_counts() {
    let counts = |line: &str| match parse(args(line)).unwrap() {
        Command::Run { scenario, .. } => (
            scenario.room.settings().pop_new_sessions_per_minute,
            scenario.room.pop_counts,
        ),
        other => panic!("{line}: not a run but {other:?}"),
    };
    // The edge's counts as documented, on 16 nodes, unless told otherwise.
    assert_eq!(counts("run"), (None, PopCountsModel::Edge { nodes: 16 }));
    assert_eq!(
        counts("run --pop-new-sessions-per-minute 190 --pop-nodes 4"),
        (Some(190), PopCountsModel::Edge { nodes: 4 })
    );
    assert_eq!(
        counts("run --pop-counts exact --pop-new-sessions-per-minute 210"),
        (Some(210), PopCountsModel::Exact)
    );
    assert_eq!(
        counts("run --pop-counts edge").1,
        PopCountsModel::Edge { nodes: 16 }
    );
}

#[test]
fn run_takes_both_grids_and_a_device_spread() {
    let line = "run --draw-grid both --multi-device 0.2:4:5 --device-spread 120";
    let Command::Run {
        scenario, grids, ..
    } = parse(args(line)).unwrap()
    else {
        panic!("not a run");
    };
    assert_eq!(grids, [DrawGrid::Address, DrawGrid::Global]);
    assert_eq!((scenario.mix.devices, scenario.mix.device_spread), (4, 120));
    let Command::Plan { scenario, .. } =
        parse(args("plan --draw-grid global --device-spread 40")).unwrap()
    else {
        panic!("not a plan");
    };
    assert_eq!(
        (
            scenario.room.settings().draw_grid,
            scenario.mix.device_spread
        ),
        (DrawGrid::Global, 40)
    );
}

#[test]
fn run_reads_the_closed_loop() {
    let line = "run --target-per-minute 2000 --propagation-delay 60 --start 0.5 --max 20 --allow-percentage 1.25";
    let scenario = run_scenario(line);
    let control = scenario.control.unwrap();
    assert_eq!(
        (
            control.target_per_minute,
            control.propagation_delay,
            control.log_delay,
            control.tick
        ),
        (2000.0, 60, 5, 10)
    );
    assert_eq!(control.start, Some("0.5".parse().unwrap()));
    assert_eq!(control.expected_propagation, Some(30));
    let line = "run --target-per-minute 2000 --propagation-delay 60 --expected-propagation 45";
    let s = run_scenario(line);
    assert_eq!(s.control.unwrap().expected_propagation, Some(45));
    assert_eq!(
        (control.min, control.max),
        (Percentage::STEP, Percentage::whole(20))
    );
    assert_eq!(
        scenario.room.settings().allow_percentage,
        "1.25".parse().unwrap()
    );
    let scenario = run_scenario("run");
    assert_eq!(scenario.control, None);
}

#[test]
fn run_reads_a_second_room_and_gives_it_the_first_rooms_options() {
    let line = "run --visitors 10000 --arrivals flash:10 --mix plain --seed 7 --target-per-minute 1200 \
                --propagation-delay 30 --refresh eligible --second-room drops --second-room-target 300 \
                --second-room-visitors 2500 --second-room-arrivals steady:600";
    let Command::Rooms {
        scenario,
        second,
        modes,
        ..
    } = parse(args(line)).unwrap()
    else {
        panic!("not a run of two rooms");
    };
    assert_eq!(second.name.as_str(), "drops");
    let s = second.scenario;
    assert_eq!(
        (s.visitors, s.arrivals, s.seed),
        (2500, Arrivals::Steady { seconds: 600 }, 8)
    );
    let (first, other) = (scenario.control.unwrap(), s.control.unwrap());
    assert_eq!(
        (first.target_per_minute, other.target_per_minute),
        (1200.0, 300.0)
    );
    assert_eq!(other.propagation_delay, first.propagation_delay);
    assert_eq!(
        (s.mix, s.room, s.duration),
        (Mix::plain(), scenario.room, scenario.duration)
    );
    assert_eq!(modes, [RefreshMode::Eligible]);
    // Its crowd and arrivals default to the first room's.
    let line =
        "run --target-per-minute 600 --propagation-delay 0 --second-room b --second-room-target 60";
    let Command::Rooms {
        scenario, second, ..
    } = parse(args(line)).unwrap()
    else {
        panic!("not a run of two rooms");
    };
    let s = second.scenario;
    assert_eq!(
        (s.visitors, s.arrivals),
        (scenario.visitors, scenario.arrivals)
    );
    for bad in [
        "run --second-room drops --second-room-target 300",
        "run --target-per-minute 600 --propagation-delay 0 --second-room drops",
        "run --target-per-minute 600 --propagation-delay 0 --second-room-target 300",
        "run --target-per-minute 600 --propagation-delay 0 --second-room Drops --second-room-target 3",
        "run --target-per-minute 600 --propagation-delay 0 --second-room drops --second-room-target 3 \
         --queueing fifo",
        "run --target-per-minute 600 --propagation-delay 0 --second-room drops --second-room-target 3 \
         --second-room-visitors 0",
    ] {
        assert!(parse(args(bad)).is_err(), "{bad}");
    }
}

#[test]
fn plan_takes_lists() {
    let line = "plan --visitors 200000 --arrivals flash:60 --allow-percentage 10,2.5 \
                --allow-period-timeout 600,3600 --set session_mode=fixed";
    let Command::Plan {
        candidates,
        scenario,
        ..
    } = parse(args(line)).unwrap()
    else {
        panic!("not a plan");
    };
    // Every combination, the first list outermost, each on the room of --set.
    let rooms: Vec<_> = candidates
        .iter()
        .map(|room| {
            (
                room.stored("allow_percentage"),
                room.stored("allow_period_timeout"),
            )
        })
        .collect();
    assert_eq!(
        rooms,
        [
            (Some("10"), Some("600")),
            (Some("10"), Some("3600")),
            (Some("2.5"), Some("600")),
            (Some("2.5"), Some("3600")),
        ]
    );
    let fixed = |room: &Room| room.settings().session_mode == SessionMode::Fixed;
    assert!(candidates.iter().all(fixed));
    assert_eq!(scenario.mix, Mix::plain());
    // A list's default is the room's value, set or not; the old names are aliases.
    let line = "plan --set wait_period_duration=45 --wait-period 10,20 --allow-timeout 600";
    let Command::Plan { candidates, .. } = parse(args(line)).unwrap() else {
        panic!("not a plan");
    };
    let rooms: Vec<_> = candidates
        .iter()
        .map(|room| {
            (
                room.stored("wait_period_duration"),
                room.settings().allow_period_timeout,
            )
        })
        .collect();
    assert_eq!(rooms, [(Some("10"), 600), (Some("20"), 600)]);
    let Command::Plan { candidates, .. } =
        parse(args("plan --set wait_period_duration=45")).unwrap()
    else {
        panic!("not a plan");
    };
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0].settings().wait_period_duration, 45);
}

#[test]
fn a_named_mix_is_taken_whole_and_changed_part_by_part() {
    for (name, mix) in [
        ("plain", Mix::plain()),
        ("devices", Mix::devices()),
        ("default", Mix::default()),
        ("heavy", Mix::heavy()),
    ] {
        let scenario = run_scenario(&format!("run --mix {name}"));
        assert_eq!(scenario.mix, mix);
    }
    let scenario = run_scenario("run --mix heavy --early 0");
    assert_eq!(
        scenario.mix,
        Mix {
            early_share: 0.0,
            ..Mix::heavy()
        }
    );
    assert!(parse(args("run --mix crowded")).is_err());
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    for line in [
        "",
        "fly",
        "run --visitors",
        "run --visitors -3",
        "run --visitors 0",
        "run --arrivals flood:3",
        "run --allow-percentage 300",
        "run --nat 2:5",
        "run --multi-device 0.1:3",
        "run --multi-address 0.1",
        "run --multi-address 0.1:0",
        "run --multi-address 0.6:3 --nat 0.5:20",
        "run --identity person",
        "identity --identity address,person",
        "identity --seeds 0",
        "run --tabs 0.5:0",
        "run --tabs 0.5:65",
        "run --tabs 1.5:2",
        "run --app-poll 0.1:0:5",
        "run --app-poll 0.1:9:5",
        "run --app-poll 0.6:3:6 --early 0.6",
        "run --early 2",
        "run --abandon 0.1:0",
        "run --abandon 0.1",
        "run --wait-period 0",
        "run --wait-period 31536001",
        "plan --allow-timeout 600,0",
        "run --set",
        "run --set queue_all",
        "run --set bogus=1",
        "run --set session_mode=sometimes",
        "plan --set queue_all=maybe",
        "cost --set fifo_hold=0",
        "toll --set cookie_lifetime=-1",
        "run --bogus 1",
        "run --refresh sometimes",
        "run --seed 1 --seed 2",
        "run stray",
        "plan --allow-percentage 10,x",
        "plan --allow-percentage 10,101",
        "run --allow-percentage 0.00001",
        "run --allow-percentage -1",
        "run --allow-percentage 1e1",
        "run --propagation-delay 30",
        "run --target-per-minute 100",
        "run --target-per-minute 0 --propagation-delay 0",
        "run --target-per-minute 100 --propagation-delay 0 --min 20 --max 10",
        "run --target-per-minute 100 --propagation-delay 0 --start 50 --max 10",
        "run --target-per-minute 100 --propagation-delay 0 --tick 0",
        "plan --target-per-minute 100 --propagation-delay 0",
        "cost --visitors 10,,20",
        "run --multi-device 0.6:2:1 --nat 0.6:2",
        "run --draw-grid vcl",
        "run --pop-counts fuzzy",
        "run --pop-nodes 0",
        "run --pop-nodes 1001",
        "plan --pop-counts exact",
        "plan --draw-grid both",
        "run --device-spread -1",
        "run --device-spread 100000",
        "run --duration 0",
        "run --session 5",
        "run --session 5:x",
        "run --visitors 1,2",
        "run --allow-percentage 1,2",
        "cost --allow-percentage 1,2",
        "run --mix",
        "plan --allow-percentage 1 --allow-percentage 2",
        "cost --visitors 1000 --visitors 2000",
        // Options of the closed loop need its target, and the target its delay.
        "run --log-delay 5",
        "run --tick 5",
        "run --max-active 10",
        "run --start 1",
        "run --expected-propagation 10",
        "run --min 1",
        "run --max 50",
        "run --target-per-minute 100 --propagation-delay 86401",
        "run --target-per-minute 100 --propagation-delay 0 --log-delay 86401",
        // Options of another command.
        "plan --quiet",
        "plan --no-plots",
        "plan --refresh both",
        "plan --queueing fifo",
        "cost --out x",
        "cost --refresh eligible",
        "cost --sample 5",
        "cost --draw-grid both",
        "run --sample 5",
        // Options of FIFO mode without it, and of random mode with it.
        "run --fifo-hold 100",
        "run --fifo-hold 100 --target-per-minute 600 --propagation-delay 0",
        "run --queueing random --target-per-minute 600 --propagation-delay 0",
        "run --queueing fifo --target-per-minute 600 --propagation-delay 0 --refresh eligible",
        "run --queueing fifo --target-per-minute 600 --propagation-delay 0 --draw-grid both",
        "run --queueing fifo --target-per-minute 600",
        // A crowd of nobody (cost once took `--visitors 0` for its default sizes).
        "cost --visitors 0",
        "cost --visitors 1000,0",
    ] {
        assert!(parse(args(line)).is_err(), "{line:?}");
    }
}

#[test]
fn the_mix_is_taken_whole_before_its_parts_wherever_they_stand() {
    for line in [
        "run --early 0 --device-spread 120 --mix heavy --multi-device 0.2:4:5",
        "run --multi-device 0.2:4:5 --mix heavy --device-spread 120 --early 0",
    ] {
        let scenario = run_scenario(line);
        let expected = Mix {
            early_share: 0.0,
            multi_device_share: 0.2,
            devices: 4,
            device_spread: 120,
            ..Mix::heavy()
        };
        assert_eq!(scenario.mix, expected, "{line}");
    }
}

#[test]
fn plan_and_cost_have_their_own_defaults() {
    let Command::Plan {
        scenario,
        candidates,
        mode,
        sample,
        out,
        ..
    } = parse(args("plan --refresh fixed")).unwrap()
    else {
        panic!("not a plan");
    };
    assert_eq!(
        scenario,
        Scenario {
            mix: Mix::plain(),
            ..Scenario::default()
        }
    );
    assert_eq!(candidates, [Room::default()]);
    assert_eq!(
        candidates[0].settings().allow_percentage,
        Percentage::whole(20)
    );
    assert_eq!((mode, sample, out), (RefreshMode::Fixed, 20_000, None));
    let Command::Cost { scenario, sizes } = parse(args("cost")).unwrap() else {
        panic!("not a cost");
    };
    assert_eq!(sizes, [1_000, 10_000, 100_000, 1_000_000]);
    assert_eq!(
        (scenario.arrivals, scenario.duration, scenario.mix),
        (Arrivals::Flash { seconds: 60 }, 600, Mix::plain())
    );
    let Command::Cost { scenario, sizes } = parse(args(
        "cost --visitors 1_000,20000 --draw-grid global --seed 4",
    ))
    .unwrap() else {
        panic!("not a cost");
    };
    assert_eq!(sizes, [1_000, 20_000]);
    assert_eq!(
        (scenario.room.settings().draw_grid, scenario.seed),
        (DrawGrid::Global, 4)
    );
}

#[test]
fn identity_by_login_and_people_on_several_addresses() {
    let s = run_scenario("run --identity login --multi-address 0.25:4");
    assert_eq!(s.room.settings().identity, Identity::Login);
    assert_eq!(s.room.stored("identity"), Some("login"));
    assert_eq!((s.mix.multi_address_share, s.mix.addresses_each), (0.25, 4));
    // By address and with none on several addresses unless told.
    let s = run_scenario("run");
    assert_eq!(s.room.settings().identity, Identity::Address);
    assert_eq!((s.mix.multi_address_share, s.mix.addresses_each), (0.0, 3));

    let Command::Identity {
        scenario,
        identities,
        seeds,
        quiet,
    } = parse(args("identity")).unwrap()
    else {
        panic!("not an identity table");
    };
    assert_eq!(scenario, simulate::identity_odds::crowd());
    assert_eq!(identities, [Identity::Address, Identity::Login]);
    assert_eq!((seeds, quiet), (10, false));
    let line = "identity --identity login --seeds 3 --visitors 900 --allow-percentage 10 \
                --nat 0.5:10 --seed 4 --quiet";
    let Command::Identity {
        scenario,
        identities,
        seeds,
        quiet,
    } = parse(args(line)).unwrap()
    else {
        panic!("not an identity table");
    };
    assert_eq!(identities, [Identity::Login]);
    assert_eq!(
        (seeds, quiet, scenario.visitors, scenario.seed),
        (3, true, 900, 4)
    );
    assert_eq!(
        scenario.room.settings().allow_percentage,
        Percentage::whole(10)
    );
    assert_eq!((scenario.mix.nat_share, scenario.mix.nat_size), (0.5, 10));
    assert_eq!(
        scenario.mix.multi_address_share,
        simulate::identity_odds::crowd().mix.multi_address_share
    );
}

#[test]
fn fifo_mode_takes_one_grid_and_the_scenario_options() {
    let line = "run --queueing fifo --target-per-minute 600 --propagation-delay 30 \
                --draw-grid global --mix heavy --out x --quiet";
    let Command::Fifo {
        scenario,
        spec,
        out,
        quiet,
        no_plots,
    } = parse(args(line)).unwrap()
    else {
        panic!("not a FIFO run");
    };
    assert_eq!(
        (scenario.room.settings().draw_grid, scenario.mix),
        (DrawGrid::Global, Mix::heavy())
    );
    assert_eq!(spec.fifo_hold, 300);
    assert_eq!((out, quiet, no_plots), (PathBuf::from("x"), true, false));
}

#[test]
fn help_comes_from_clap_and_names_every_option() {
    let help = |line: &str| match parse(args(line)) {
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.to_string(),
        other => panic!("{line}: no help but {other:?}"),
    };
    let scenario = [
        "--visitors",
        "--arrivals",
        "--duration",
        "--allow-percentage",
        "--set",
        "--wait-period-duration",
        "--allow-period-timeout",
        "--session",
        "--mix",
        "--multi-device",
        "--device-spread",
        "--nat",
        "--multi-address",
        "--attackers",
        "--tabs",
        "--app-poll",
        "--early",
        "--abandon",
        "--seed",
        "--draw-grid",
    ];
    let run = [
        "--refresh",
        "--out",
        "--no-plots",
        "--quiet",
        "--target-per-minute",
        "--propagation-delay",
        "--log-delay",
        "--tick",
        "--max-active",
        "--start",
        "--expected-propagation",
        "--min",
        "--max",
        "--queueing",
        "--fifo-hold",
        "--pop-new-sessions-per-minute",
        "--pop-counts",
        "--pop-nodes",
        "--identity",
    ];
    let text = help("run --help");
    for option in scenario.iter().chain(&run) {
        assert!(text.contains(option), "run --help lacks {option}");
    }
    let text = help("plan --help");
    for option in scenario.iter().chain(&["--refresh", "--sample", "--out"]) {
        assert!(text.contains(option), "plan --help lacks {option}");
    }
    assert!(text.contains("[default: 20000]"));
    let text = help("cost --help");
    for option in scenario {
        assert!(text.contains(option), "cost --help lacks {option}");
    }
    assert!(help("--help").contains("plan and cost default to plain visitors"));
}

#[test]
fn set_takes_any_key_the_room_reads() {
    // Keys the simulator never names reach the room's settings as its reader reads them.
    let s = run_scenario(
        "run --set session_mode=fixed --set queue_all=true --set cookie_samesite=strict",
    );
    let settings = s.room.settings();
    assert_eq!(settings.session_mode, SessionMode::Fixed);
    assert!(settings.queue_all);
    assert_eq!(s.room.stored("cookie_samesite"), Some("Strict"));
    // Every key of the room is one --set takes.
    for key in KEYS {
        let Some(text) = Room::default().settings().stored(key) else {
            continue;
        };
        let line = format!("cost --set {key}={text}");
        assert!(parse(args(&line)).is_ok(), "{line}");
    }
    // The last of a key's --set wins, and its flag over them.
    let s = run_scenario("run --set wait_period_duration=40 --set wait_period_duration=50");
    assert_eq!(s.room.settings().wait_period_duration, 50);
    let s = run_scenario("run --wait-period-duration 20 --set wait_period_duration=50");
    assert_eq!(s.room.settings().wait_period_duration, 20);
    // The keys that pick the runs.
    let Command::Run { grids, modes, .. } =
        parse(args("run --set draw_grid=global --set refresh_mode=fixed")).unwrap()
    else {
        panic!("not a run");
    };
    assert_eq!(
        (grids, modes),
        (vec![DrawGrid::Global], vec![RefreshMode::Fixed])
    );
    let line = "run --set queueing_method=fifo --set fifo_hold=600 --target-per-minute 600 \
                --propagation-delay 30";
    let Command::Fifo { spec, .. } = parse(args(line)).unwrap() else {
        panic!("not a FIFO run");
    };
    assert_eq!(spec.fifo_hold, 600);
}

#[test]
fn a_key_or_value_the_room_refuses_is_a_usage_error_naming_both() {
    for (line, named) in [
        ("run --set bogus=1", "bogus=1"),
        ("run --set session_mode=sometimes", "session_mode=sometimes"),
        ("plan --set queue_all=maybe", "queue_all=maybe"),
        ("run --wait-period 0", "wait_period_duration=0"),
        (
            "run --fifo-hold 0 --queueing fifo --target-per-minute 60 --propagation-delay 0",
            "fifo_hold=0",
        ),
    ] {
        let e = parse(args(line)).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{line}");
        assert!(e.to_string().contains(named), "{line}: {e}");
    }
}

#[test]
fn the_old_flags_are_aliases_of_the_keys() {
    let room = |line: &str| run_scenario(line).room;
    let keys = room(
        "run --set allow_percentage=5 --set wait_period_duration=20 --set allow_period_timeout=900 \
         --set draw_grid=global --set pop_new_sessions_per_minute=190 --set bot_toll_bits=8",
    );
    for line in [
        "run --allow-percentage 5 --wait-period-duration 20 --allow-period-timeout 900 \
         --draw-grid global --pop-new-sessions-per-minute 190 --bot-toll-bits 8",
        "run --allow-percentage 5 --wait-period 20 --allow-timeout 900 \
         --draw-grid global --pop-new-sessions-per-minute 190 --bot-toll-bits 8",
    ] {
        assert_eq!(room(line), keys, "{line}");
    }
    let s = keys.settings();
    assert_eq!(
        (
            s.wait_period_duration,
            s.allow_period_timeout,
            s.bot_toll_bits
        ),
        (20, 900, 8)
    );
}
