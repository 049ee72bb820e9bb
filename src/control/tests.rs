use super::*;

const T0: u64 = 1_700_000_000;

/// A log record as the room writes it, read back through the parser.
fn line(text: &str) -> Record {
    text.parse().unwrap()
}

fn waiting(t: u64, uid: u32, exp: u64, p: &str) -> Record {
    line(&format!(
        "waitingroom t={t} decision=anon uid=10.0.{}.{} p={p} exp={exp} path=/events",
        uid / 256,
        uid % 256
    ))
}

fn draw(t: u64, uid: u32, won: bool, p: &str) -> Record {
    let uid = format!("10.0.{}.{}", uid / 256, uid % 256);
    line(&if won {
        format!(
            "waitingroom t={t} decision=allow uid={uid} p={p} session=new transition=lottery-won exp={} path=/events",
            t + 3600
        )
    } else {
        format!(
            "waitingroom t={t} decision=re-wait uid={uid} p={p} transition=lottery-lost exp={} path=/events",
            t + 60
        )
    })
}

/// The options most tests run with: no propagation delay expected before one is
/// measured (the tests that need one say so).
fn options(target_per_minute: f64) -> Options {
    Options {
        target_per_minute,
        expected_propagation: None,
        ..Options::default()
    }
}

/// `crowd` addresses waiting, each drawing once every 60 s (d = 30) at its own
/// second, none ever winning (so the crowd holds still), for `seconds` of log time
/// from `from`; every `tick` seconds the controller ticks. Returns the last write.
fn steady_crowd(
    c: &mut Controller,
    crowd: u32,
    from: u64,
    seconds: u64,
    shows_up: impl Fn(u32) -> bool,
) -> Option<Write> {
    let mut last = None;
    for t in from..from + seconds {
        for uid in 0..crowd {
            if u64::from(uid) % 60 == t % 60 {
                let record = if shows_up(uid) {
                    draw(t, uid, false, "1")
                } else {
                    waiting(t, uid, t + 60, "1")
                };
                c.observe(&record, t);
            }
        }
        if t % c.options().tick == 0
            && let Some(write) = c.tick(t)
        {
            c.written(&write, t);
            last = Some(write);
        }
    }
    last
}

#[test]
fn options_that_make_no_sense_are_refused() {
    for bad in [
        Options {
            target_per_minute: 0.0,
            ..Options::default()
        },
        Options {
            target_per_minute: f64::NAN,
            ..Options::default()
        },
        Options {
            min: Percentage::whole(50),
            max: Percentage::whole(10),
            ..Options::default()
        },
        Options {
            tick: 0,
            ..Options::default()
        },
        Options {
            wait_period: 0,
            ..Options::default()
        },
        Options {
            start: Some(Percentage::whole(90)),
            max: Percentage::whole(50),
            ..Options::default()
        },
        Options {
            min: Percentage::ZERO,
            ..Options::default()
        },
        Options {
            log_silence: Some(0),
            ..Options::default()
        },
    ] {
        assert!(Controller::new(bad.clone()).is_err(), "{bad:?}");
    }
}

#[test]
fn before_a_whole_draw_period_it_writes_only_the_heartbeat_or_its_start() {
    let mut c = Controller::new(options(600.0)).unwrap();
    c.observe(&waiting(T0, 1, T0 + 60, "50"), T0);
    let write = c.tick(T0 + 1).unwrap();
    assert_eq!(write.items(), vec![(HEARTBEAT_KEY, (T0 + 1).to_string())]);

    let start = Options {
        start: Some(Percentage::whole(2)),
        ..options(600.0)
    };
    let mut c = Controller::new(start).unwrap();
    let write = c.tick(T0).unwrap();
    assert_eq!(
        write.items(),
        vec![
            (PERCENTAGE_KEY, "2".to_string()),
            (HEARTBEAT_KEY, T0.to_string())
        ]
    );
}

#[test]
fn a_steady_crowd_gets_the_target_over_its_size() {
    // 6,000 addresses waiting, each drawing once a minute; 120 a minute wanted:
    // 2 % of draws must win.
    let mut c = Controller::new(options(120.0)).unwrap();
    let write = steady_crowd(&mut c, 6_000, T0, 300, |_| true);
    assert_eq!(c.percentage(), Some(Percentage::whole(2)));
    assert!(write.is_some());
    let snapshot = c.snapshot(60);
    assert_eq!(snapshot.waiting, 6_000);
    assert_eq!(snapshot.series.len(), 60);
    assert_eq!(
        snapshot.series.iter().map(|(_, s)| s.draws).sum::<u64>(),
        6_000
    );
}

#[test]
fn visitors_who_gave_up_do_not_count_as_draws_to_come() {
    // Half the crowd stopped coming back (their tokens still live): twice the
    // percentage gives the same admissions.
    let mut c = Controller::new(options(120.0)).unwrap();
    steady_crowd(&mut c, 6_000, T0, 300, |uid| uid % 2 == 0);
    assert_eq!(c.percentage(), Some(Percentage::whole(4)));
}

#[test]
fn bounds_hold_and_an_empty_room_opens_to_the_maximum() {
    let bounded = Options {
        min: Percentage::whole(5),
        max: Percentage::whole(80),
        ..options(120.0)
    };
    let mut c = Controller::new(bounded.clone()).unwrap();
    steady_crowd(&mut c, 6_000, T0, 300, |_| true);
    assert_eq!(c.percentage(), Some(Percentage::whole(5)));

    let mut c = Controller::new(bounded).unwrap();
    // Only bypass traffic for a while: nobody waits.
    for t in T0..T0 + 200 {
        c.observe(
            &line(&format!(
                "waitingroom t={t} decision=bypass scope=unprotected-path uid=1.2.3.4 path=/"
            )),
            t,
        );
    }
    c.tick(T0 + 200);
    assert_eq!(c.percentage(), Some(Percentage::whole(80)));
}

#[test]
fn max_active_caps_admissions_at_the_free_places() {
    let capped = Options {
        max_active: Some(1_000),
        ..options(6_000.0)
    };
    let mut c = Controller::new(capped).unwrap();
    // 940 live sessions: 60 free places, against 6,000 addresses drawing.
    for uid in 0..940u32 {
        c.observe(&draw(T0, 100_000 + uid, true, "1"), T0);
    }
    steady_crowd(&mut c, 6_000, T0, 300, |_| true);
    assert_eq!(c.snapshot(1).active, 940);
    assert_eq!(c.percentage(), Some(Percentage::whole(1)));
    // A release frees its place at once.
    let release = line(&format!(
        "waitingroom t={} decision=allow uid=10.0.390.160 p=1 session=renewed exp={} path=/x release=origin",
        T0 + 300,
        T0 + 4000
    ));
    c.observe(&release, T0 + 300);
    c.tick(T0 + 300);
    assert_eq!(c.snapshot(1).active, 939);
}

#[test]
fn an_open_room_closes_down_when_new_sessions_exceed_the_target() {
    let mut c = Controller::new(options(60.0)).unwrap();
    // At 100 % nobody waits: 10 new sessions a second, 600 a minute, for 2 minutes.
    for t in T0..T0 + 120 {
        for i in 0..10u32 {
            let uid = (t - T0) as u32 * 10 + i;
            let r = line(&format!(
                "waitingroom t={t} decision=allow uid=10.2.{}.{} p=100 session=new exp={} path=/events",
                uid / 256,
                uid % 256,
                t + 3600
            ));
            c.observe(&r, t);
        }
    }
    c.tick(T0 + 120);
    assert_eq!(c.percentage(), Some(Percentage::whole(10)));
}

#[test]
fn it_writes_on_change_or_when_the_heartbeat_is_due_and_never_more_than_once_a_tick() {
    let mut c = Controller::new(options(120.0)).unwrap();
    steady_crowd(&mut c, 6_000, T0, 300, |_| true);
    let now = T0 + 300;
    // Just written: nothing changed, heartbeat not due.
    let write = c.tick(now).unwrap();
    c.written(&write, now);
    assert_eq!(c.tick(now + 1), None);
    assert_eq!(c.tick(now + 29), None);
    let beat = c.tick(now + 30).unwrap();
    assert_eq!(beat.allow_percentage, None);
    assert_eq!(beat.heartbeat, now + 30);
}

#[test]
fn failed_writes_back_off_and_are_retried() {
    // (No log comes in this test: the silence rule is not what it checks.)
    let deaf_never = Options {
        log_silence: None,
        ..options(120.0)
    };
    let mut c = Controller::new(deaf_never).unwrap();
    let start = T0 + 1_000;
    let first = c.tick(start).unwrap();
    c.failed(start);
    // One tick (10 s), then 20, 40, … up to 300.
    assert_eq!(c.tick(start + 9), None);
    let retry = c.tick(start + 10).unwrap();
    assert_eq!(retry.allow_percentage, first.allow_percentage);
    c.failed(start + 10);
    assert_eq!(c.tick(start + 29), None);
    let write = c.tick(start + 30).unwrap();
    c.written(&write, start + 30);
    assert_eq!(c.counters().write_failures, 2);
    assert_eq!(c.counters().writes, 1);
}

#[test]
fn records_from_the_future_or_beyond_the_window_are_counted_apart() {
    let mut c = Controller::new(options(120.0)).unwrap();
    c.observe(&waiting(T0 + 10_000, 1, T0 + 10_060, "1"), T0);
    assert_eq!(c.counters().future_lines, 1);
    assert_eq!(c.snapshot(10).now, None);
    c.observe(&waiting(T0, 1, T0 + 60, "1"), T0);
    c.observe(&waiting(T0 - WINDOW, 2, T0 + 60, "1"), T0);
    assert_eq!((c.counters().lines, c.counters().late_lines), (1, 1));
}

#[test]
fn a_restarted_controller_rebuilds_the_same_percentage_from_the_stream() {
    let mut first = Controller::new(options(120.0)).unwrap();
    steady_crowd(&mut first, 6_000, T0, 300, |_| true);
    let mut restarted = Controller::new(options(120.0)).unwrap();
    // One draw period to see the crowd, one to see how often it draws.
    steady_crowd(&mut restarted, 6_000, T0 + 300, 119, |_| true);
    assert_eq!(restarted.percentage(), None);
    steady_crowd(&mut restarted, 6_000, T0 + 419, 1, |_| true);
    assert_eq!(restarted.percentage(), first.percentage());
}

/// A whole minute, so that slots (d = 30) start on multiples of 30 from here.
const ALIGNED: u64 = 1_700_000_040;

#[test]
fn a_flash_crowd_gets_a_provisional_percentage_before_its_first_draw_but_only_a_lower_one() {
    // 6,000 addresses arrive at once with the static 20 % in effect; 120 a minute
    // wanted. Their first draw comes a wait period later: the controller writes
    // 2 % at once instead of waiting two draw periods.
    let mut c = Controller::new(options(120.0)).unwrap();
    for uid in 0..6_000 {
        c.observe(&waiting(ALIGNED, uid, ALIGNED + 60, "20"), ALIGNED + 5);
    }
    let write = c.tick(ALIGNED + 10).unwrap();
    assert_eq!(write.allow_percentage, Some(Percentage::whole(2)));

    // The same crowd under 1 % already: 2 % would raise it, and the crowd seen so
    // far may be only part of it (a restart), so nothing but the heartbeat.
    let mut c = Controller::new(options(120.0)).unwrap();
    for uid in 0..6_000 {
        c.observe(&waiting(ALIGNED, uid, ALIGNED + 60, "1"), ALIGNED + 5);
    }
    assert_eq!(c.tick(ALIGNED + 10).unwrap().allow_percentage, None);
}

#[test]
fn the_propagation_delay_is_measured_from_a_write_to_the_first_line_showing_it() {
    let mut c = Controller::new(options(120.0)).unwrap();
    for uid in 0..6_000 {
        c.observe(&waiting(ALIGNED, uid, ALIGNED + 60, "20"), ALIGNED);
    }
    let write = c.tick(ALIGNED + 10).unwrap();
    c.written(&write, ALIGNED + 10);
    // Lines still at 20 %, then the first at 2 %, 40 s after the write.
    c.observe(
        &waiting(ALIGNED + 30, 7_000, ALIGNED + 90, "20"),
        ALIGNED + 35,
    );
    assert_eq!(c.schedule.propagation(), None);
    c.observe(
        &waiting(ALIGNED + 50, 7_001, ALIGNED + 120, "2"),
        ALIGNED + 55,
    );
    assert_eq!(c.schedule.propagation(), Some(40));
    assert_eq!(
        c.schedule.landed_by(u64::MAX),
        None,
        "no write left pending"
    );
}

/// `crowd` addresses that arrived together at `ALIGNED` and draw together in the
/// first `spread` seconds of every other slot (d = 30), each winning when
/// `wins(uid, draw)`; every `tick` seconds of `seconds` the controller ticks and
/// its writes land at once. Returns the percentages written (second, value),
/// and the addresses still waiting as each period began.
fn bursty_crowd(
    c: &mut Controller,
    crowd: u32,
    seconds: u64,
    wins: impl Fn(u32, u64) -> bool,
) -> (Vec<(u64, Percentage)>, Vec<usize>) {
    let mut admitted = vec![false; crowd as usize];
    let mut writes = Vec::new();
    let mut left = Vec::new();
    for uid in 0..crowd {
        c.observe(&waiting(ALIGNED, uid, ALIGNED + 60, "50"), ALIGNED);
    }
    for t in ALIGNED + 1..ALIGNED + seconds {
        let into_period = (t - ALIGNED) % 60;
        if into_period == 1 {
            left.push(admitted.iter().filter(|a| !**a).count());
        }
        for uid in 0..crowd {
            // Each address draws at its own second of the first 20 of the period.
            if (1..=20).contains(&into_period)
                && u64::from(uid) % 20 + 1 == into_period
                && !admitted[uid as usize]
            {
                let draw_number = (t - ALIGNED) / 60;
                let won = wins(uid, draw_number);
                admitted[uid as usize] = won;
                c.observe(&draw(t, uid, won, "1"), t);
            }
        }
        if (t - ALIGNED).is_multiple_of(10)
            && let Some(write) = c.tick(t)
        {
            c.written(&write, t);
            if let Some(p) = write.allow_percentage {
                writes.push((t - ALIGNED, p));
            }
        }
    }
    (writes, left)
}

#[test]
fn a_crowd_drawing_in_bursts_is_counted_as_it_stood_when_the_slot_began() {
    // 600 addresses, 300 a minute wanted; about a quarter of each burst wins.
    // Inside a burst the crowd shrinks as winners leave, but the rest of the
    // burst draws out of the crowd that began it: the percentage written in a
    // burst is the target over that crowd, and does not climb as it empties.
    let mut c = Controller::new(options(300.0)).unwrap();
    let wins = |uid: u32, draw: u64| (u64::from(uid) * 7 + draw * 13).is_multiple_of(4);
    let (writes, left) = bursty_crowd(&mut c, 600, 250, wins);
    // The fourth burst (t = 181..200), after two draw periods of log.
    let in_burst: Vec<_> = writes
        .iter()
        .filter(|(t, _)| (181..=200).contains(t))
        .collect();
    let expected = Percentage::from_fraction(300.0 / left[3] as f64);
    assert!(
        in_burst
            .iter()
            .all(|(_, p)| p.micros().abs_diff(expected.micros()) <= 2_000),
        "{writes:?}, expected {expected} throughout (crowd {left:?})"
    );
    // It changes at most once in the burst, and the burst is drawn at the target
    // over its crowd.
    assert!(in_burst.len() <= 1, "{writes:?}");
    let in_effect = writes.iter().rev().find(|(t, _)| *t <= 190).map(|w| w.1);
    assert!(
        in_effect.is_some_and(|p| p.micros().abs_diff(expected.micros()) <= 2_000),
        "{writes:?}, expected {expected} (crowd {left:?})"
    );
}

#[test]
fn what_a_period_admitted_before_a_write_lands_counts_against_its_allowance() {
    // 600 addresses drawing once a period, nobody winning: 300 a period wanted
    // makes 50 %.
    let mut c = Controller::new(options(300.0)).unwrap();
    bursty_crowd(&mut c, 600, 240, |_, _| false);
    c.tick(ALIGNED + 240);
    assert_eq!(c.percentage(), Some(Percentage::whole(50)));
    // (The lines say 1 %: this crowd never shows the 50 % in effect, so no
    // propagation delay is measured.) Then the period's first seconds admit 200
    // (a percentage left over from a smaller crowd): a write landing now gives the rest of the period only what
    // is left of its 300.
    for uid in 0..200 {
        c.observe(&draw(ALIGNED + 241, uid, true, "1"), ALIGNED + 241);
    }
    for t in ALIGNED + 242..=ALIGNED + 250 {
        c.observe(&draw(t, 300 + (t - ALIGNED) as u32, false, "1"), t);
    }
    c.tick(ALIGNED + 250);
    let p = c.percentage().unwrap();
    assert!(p < Percentage::whole(30), "{p}");
}

#[test]
fn a_controller_that_hears_no_log_stops_writing_so_the_edge_falls_back() {
    let quiet = Options {
        log_silence: Some(120),
        start: Some(Percentage::whole(5)),
        ..options(120.0)
    };
    let mut c = Controller::new(quiet).unwrap();
    // Started, nothing heard yet: it writes its start and heartbeats for 120 s.
    let first = c.tick(T0).unwrap();
    c.written(&first, T0);
    let beat = c.tick(T0 + 120).unwrap();
    c.written(&beat, T0 + 120);
    assert!(!c.deaf(T0 + 120));
    // Then silence: no heartbeat, whatever is due.
    assert_eq!(c.tick(T0 + 121), None);
    assert_eq!(c.tick(T0 + 600), None);
    assert!(c.deaf(T0 + 600));
    // A record brings it back at once.
    c.observe(&waiting(T0 + 600, 1, T0 + 660, "5"), T0 + 600);
    assert!(!c.deaf(T0 + 601));
    assert!(c.tick(T0 + 601).is_some());
}

#[test]
fn until_it_is_measured_the_propagation_delay_is_the_one_expected() {
    let expecting = |expected_propagation| Options {
        expected_propagation,
        ..options(120.0)
    };
    for (expected, delay) in [(None, 0), (Some(30), 30), (Some(60), 60)] {
        let mut c = Controller::new(expecting(expected)).unwrap();
        c.observe(&waiting(ALIGNED, 1, ALIGNED + 60, "20"), ALIGNED);
        c.tick(ALIGNED + 5);
        // The log's lag (5 s), the delay, half a tick.
        assert_eq!(c.landing(ALIGNED, 1.0).lands, ALIGNED + 5 + delay + 5);
    }
    assert_eq!(
        Options::default().expected_propagation,
        Some(DEFAULT_EXPECTED_PROPAGATION)
    );
    // Measured (a write of 20 % shows 50 s later), the measure stands.
    let mut c = Controller::new(expecting(Some(30))).unwrap();
    let write = Write {
        allow_percentage: Some(Percentage::whole(20)),
        heartbeat: ALIGNED - 60,
    };
    c.written(&write, ALIGNED - 60);
    c.observe(&waiting(ALIGNED - 10, 2, ALIGNED + 50, "20"), ALIGNED - 10);
    c.observe(&waiting(ALIGNED, 1, ALIGNED + 60, "20"), ALIGNED);
    c.tick(ALIGNED + 5);
    assert_eq!(c.landing(ALIGNED, 1.0).lands, ALIGNED + 5 + 50 + 5);
}

/// The address draw grid: `crowd` addresses waiting from the start, address `u`
/// drawing at the seconds `u mod 60` (its own point every `2d`, d = 30); from
/// `wave_at`, `wave` more addresses arrive over 10 s, each given a token ending
/// on its own point `30..90` s ahead, then drawing there and every `2d` after.
/// Nobody wins. The controller reads every line at once and ticks every 10 s;
/// returns the percentage it computed at each tick from `wave_at` on.
fn address_grid_wave(
    c: &mut Controller,
    crowd: u32,
    wave: u32,
    wave_at: u64,
    until: u64,
) -> Vec<(u64, Percentage)> {
    let point = |uid: u32| u64::from(uid) % 60;
    // Newcomer `i` arrives at `wave_at + i % 10`; its first point is `exp`.
    let first_exp = |i: u32| {
        let arrival = wave_at + u64::from(i % 10);
        let earliest = arrival + 30;
        earliest + (point(i) + 60 - earliest % 60) % 60
    };
    let mut computed = Vec::new();
    for t in ALIGNED..until {
        for uid in 0..crowd {
            if point(uid) == t % 60 {
                c.observe(&draw(t, uid, false, "1"), t);
            }
        }
        for i in 0..wave {
            let uid = crowd + i;
            if t == wave_at + u64::from(i % 10) {
                c.observe(&waiting(t, uid, first_exp(i), "1"), t);
            } else if t > first_exp(i) && (t - first_exp(i)) % 60 == 1 {
                c.observe(&draw(t, uid, false, "1"), t);
            }
        }
        if t % 10 == 0 {
            if let Some(write) = c.tick(t) {
                c.written(&write, t);
            }
            if t >= wave_at
                && let Some(p) = c.percentage()
            {
                computed.push((t, p));
            }
        }
    }
    computed
}

#[test]
fn on_the_address_grid_a_wave_s_first_draws_are_not_taken_for_draws_per_address() {
    // 6,000 addresses waiting, then 3,000 more arrive: each of the 9,000 draws once
    // in any 2d, so 120 a minute wanted makes 120 / 9,000 = 1.33 % once the
    // newcomers are all in the calendar. On the address grid their first draws
    // come from a wait period after they arrive, inside the period the
    // controller measures draws per address over: those are newcomers drawing,
    // not the waiting addresses drawing more often.
    let mut c = Controller::new(options(120.0)).unwrap();
    let wave_at = ALIGNED + 300;
    let computed = address_grid_wave(&mut c, 6_000, 3_000, wave_at, wave_at + 150);
    assert!(c.address_grid(wave_at + 149));
    let ideal = 120.0 / 9_000.0;
    // From the first period that all 9,000 draw in (a write computed at +60 s
    // lands in the period starting then).
    assert!(computed.len() > 8);
    for &(t, p) in computed.iter().filter(|(t, _)| *t >= wave_at + 60) {
        let off = p.fraction() / ideal - 1.0;
        assert!(
            off.abs() < 0.05,
            "at +{} s: {p} against {ideal:.4}",
            t - wave_at
        );
    }
}

#[test]
fn on_the_address_grid_arrivals_feed_the_slots_up_to_three_wait_periods_ahead() {
    let ahead = |address_grid| Ahead {
        newest: 10_000,
        d: 30,
        stay: 0.0,
        pace: 1.0,
        address_grid,
    };
    // Arrivals from now until the slot starting at `x` begins: on the global
    // grid those of the slot two before feed it (30 s worth); on the address
    // grid a growing share of everyone arriving within 3d before it, d = 30 s'
    // worth in all.
    let (global, address) = (ahead(false), ahead(true));
    assert_eq!(global.arrival_share(9_910, 10_000), 30.0);
    assert_eq!(global.arrival_share(9_950, 10_000), 20.0);
    assert_eq!(global.arrival_share(9_980, 10_000), 0.0);
    assert_eq!(address.arrival_share(9_800, 10_000), 30.0);
    assert_eq!(address.arrival_share(9_910, 10_000), 30.0);
    assert_eq!(address.arrival_share(9_940, 10_000), 22.5);
    assert_eq!(address.arrival_share(9_970, 10_000), 7.5);
    assert!((address.arrival_share(9_990, 10_000) - 100.0 / 120.0).abs() < 1e-12);
    assert_eq!(address.arrival_share(10_000, 10_000), 0.0);
}

#[test]
fn on_the_address_grid_the_provisional_percentage_leaves_out_whom_the_old_one_admits_first() {
    // 6,000 addresses arrive at once under the static 20 %, each given a token
    // ending on its own point 30..90 s ahead. A write made now lands 75 s on (10 s
    // of log lag, 60 s of propagation, half a tick): by then the 4,500 tokens
    // ending before it have drawn at 20 %, and 900 of their holders are in. The
    // first write aims at the 5,100 left.
    let slow = Options {
        expected_propagation: Some(60),
        ..options(120.0)
    };
    let mut c = Controller::new(slow).unwrap();
    for uid in 0..6_000 {
        let exp = ALIGNED + 30 + u64::from(uid % 60);
        c.observe(&waiting(ALIGNED, uid, exp, "20"), ALIGNED + 5);
    }
    let write = c.tick(ALIGNED + 10).unwrap();
    assert_eq!(
        write.allow_percentage,
        Some(Percentage::from_fraction(120.0 / 5_100.0))
    );
}
