use super::*;

const T0: u64 = 1_700_000_000;

fn options() -> OriginOptions {
    OriginOptions {
        healthy: "p95<800ms,errors<1%".parse().unwrap(),
        floor: 10.0,
        ceiling: 10_000.0,
        session: 600,
    }
}

/// `per_second` answers in each second of `[from, to)`, one in ten at `slow`
/// milliseconds and the rest at `fast`: the p95 is `slow`.
fn answers(g: &mut Governor, from: u64, to: u64, per_second: u64, fast: u64, slow: u64) {
    for t in from..to {
        for i in 0..per_second {
            let ms = if i % 20 < 2 { slow } else { fast };
            g.observe(t, OriginAnswer::Answered { ms, status: 200 }, true);
        }
    }
}

/// A governor that has taken its first reading at `T0 + 59`, unloaded at
/// `base` ms, with a target of 100.
fn read_once(base: u64) -> (Governor, f64) {
    let mut g = Governor::new(options()).unwrap();
    answers(&mut g, T0, T0 + 60, 10, base / 2, base);
    let target = g.tick(T0 + 59, 600, 1000, 100.0).unwrap();
    (g, target)
}

#[test]
fn reads_what_healthy_means() {
    let h: Healthy = "p95<800ms,errors<1%".parse().unwrap();
    assert_eq!((h.p95_ms, h.error_share, h.window), (800, 0.01, 60));
    let h: Healthy = " p95<1.5s , errors<0.5% , window=30s ".parse().unwrap();
    assert_eq!((h.p95_ms, h.error_share, h.window), (1500, 0.005, 30));
    assert_eq!(h.to_string(), "p95<1500ms,errors<0.5%,window=30s");
    assert_eq!(h.to_string().parse::<Healthy>().unwrap(), h);
    let h: Healthy = "p95<2s".parse().unwrap();
    assert_eq!((h.p95_ms, h.error_share), (2000, DEFAULT_ERROR_SHARE));
    for bad in [
        "",
        "errors<1%",
        "p95<800",
        "p95<fast",
        "p95<0ms",
        "p95<-5ms",
        "p95<0.5ms",
        "p95<800ms,errors<1",
        "p95<800ms,errors<101%",
        "p95<800ms,window=5s",
        "p95<800ms,window=1500ms",
        "p95<800ms,p99<2s",
        "p95>800ms",
    ] {
        assert!(bad.parse::<Healthy>().is_err(), "{bad:?} parsed");
    }
}

#[test]
fn options_out_of_bounds_are_refused() {
    for broken in [
        OriginOptions {
            floor: 0.0,
            ..options()
        },
        OriginOptions {
            floor: f64::NAN,
            ..options()
        },
        OriginOptions {
            ceiling: 5.0,
            ..options()
        },
        OriginOptions {
            session: 30,
            ..options()
        },
        OriginOptions {
            session: 7200,
            ..options()
        },
    ] {
        assert!(Governor::new(broken).is_err(), "{broken:?}");
    }
}

#[test]
fn too_few_answers_hold_the_target() {
    let mut g = Governor::new(options()).unwrap();
    answers(&mut g, T0, T0 + 60, 0, 0, 0);
    for t in T0..T0 + 29 {
        let slow = OriginAnswer::Answered {
            ms: 5000,
            status: 503,
        };
        g.observe(t, slow, true);
    }
    assert_eq!(g.tick(T0 + 59, 600, 1000, 100.0), None);
    assert_eq!(g.status(0).state, State::NoOriginData);
    // The next reading comes half a window later.
    g.observe(T0 + 60, OriginAnswer::Answered { ms: 5, status: 200 }, true);
    assert_eq!(g.tick(T0 + 88, 600, 1000, 100.0), None);
    assert_eq!(g.status(0).reading.answers, 29);
    assert_eq!(g.status(0).reading.answers, 29);
}

#[test]
fn readings_come_every_half_window_of_log_time() {
    let (mut g, _) = read_once(100);
    answers(&mut g, T0 + 60, T0 + 120, 10, 50, 100);
    assert_eq!(g.tick(T0 + 88, 600, 1000, 100.0), None);
    assert!(g.tick(T0 + 89, 600, 1000, 100.0).is_some());
    assert_eq!(g.tick(T0 + 90, 600, 1000, 100.0), None);
}

#[test]
fn without_queueing_the_target_rises_twice_a_minute_while_people_wait() {
    let (mut g, target) = read_once(100);
    assert_eq!(g.status(0).state, State::Rising);
    assert!((target - 100.0 * STEP_UP).abs() < 1e-9);
    answers(&mut g, T0 + 60, T0 + 90, 10, 50, 104);
    // Nobody waits: nothing to test a rise on.
    assert_eq!(g.tick(T0 + 89, 600, 0, target), Some(target));
}

#[test]
fn the_ceiling_and_the_floor_bound_the_target() {
    let (mut g, _) = read_once(100);
    answers(&mut g, T0 + 60, T0 + 90, 10, 50, 100);
    assert_eq!(g.tick(T0 + 89, 600, 1000, 9_000.0), Some(10_000.0));
    assert_eq!(g.status(0).state, State::CeilingLimited);
    assert_eq!(g.status(0).target, 10_000.0);
    assert_eq!(g.hold(1.0), 10.0);
    assert_eq!(g.hold(50.0), 50.0);
    assert_eq!(
        g.set_ceiling(5.0),
        10.0,
        "a ceiling below the floor is the floor"
    );
    assert_eq!(g.hold(1e9), 10.0);
}

#[test]
fn with_queueing_the_target_is_the_load_that_holds_the_p95_at_the_aim() {
    let (mut g, _) = read_once(100);
    // Twice the base: the origin is half busy. 100 answers a second from the 600
    // sessions let in over the session length: 100 requests a session.
    answers(&mut g, T0 + 60, T0 + 90, 100, 50, 200);
    let target = g.tick(T0 + 89, 600, 1000, 1000.0).unwrap();
    assert_eq!(g.status(0).state, State::OriginLimited);
    // The window holds 60 s: 30 s at 10 a second, 30 s at 100: 55 a second.
    let per_second = 55.0;
    let capacity = per_second / (1.0 - 100.0 / 200.0);
    let aim_load = capacity * (1.0 - 100.0 / (AIM * 800.0));
    let per_session = per_second * 600.0 / 600.0;
    assert!(
        (target - 60.0 * aim_load / per_session).abs() < 1e-6,
        "{target}"
    );
    // The next estimate is averaged with this one.
    // (Two thirds of the window's answers at 400 ms or more: the p95 is 400.)
    answers(&mut g, T0 + 90, T0 + 120, 200, 50, 400);
    let next = g.tick(T0 + 119, 600, 1000, target).unwrap();
    let estimate = 150.0 / (1.0 - 100.0 / 400.0) * (1.0 - 100.0 / 640.0);
    let smoothed = aim_load + SMOOTHING * (estimate - aim_load);
    assert!((next - 60.0 * smoothed / 150.0).abs() < 1e-6, "{next}");
}

#[test]
fn an_estimate_never_raises_the_target_faster_than_a_rise() {
    let (mut g, _) = read_once(100);
    answers(&mut g, T0 + 60, T0 + 90, 1000, 50, 150);
    assert_eq!(g.tick(T0 + 89, 600, 1000, 20.0), Some(20.0 * STEP_UP));
}

#[test]
fn an_unhealthy_origin_cuts_to_the_floor_and_a_lasting_one_raises_the_alert() {
    let (mut g, _) = read_once(100);
    // Slow: p95 over the bound.
    answers(&mut g, T0 + 60, T0 + 120, 100, 50, 900);
    assert_eq!(g.tick(T0 + 89, 600, 1000, 500.0), Some(10.0));
    assert_eq!(g.status(0).state, State::OriginLimited);
    // At the floor and still slow: the alert after two session lengths (1,200 s).
    let mut t = T0 + 119;
    let mut at = None;
    while t < T0 + 1600 {
        answers(&mut g, t - 29, t + 1, 100, 50, 900);
        assert_eq!(g.tick(t, 600, 1000, 10.0), Some(10.0));
        if g.status(0).state == State::OriginSlow {
            at.get_or_insert(t);
        }
        t += 30;
    }
    assert_eq!(at, Some(T0 + 119 + 2 * 600));
    // Healthy again: the alert ends, and the target rises from the floor.
    answers(&mut g, t - 89, t + 1, 100, 50, 100);
    let next = g.tick(t, 600, 1000, 10.0).unwrap();
    assert!(next > 10.0);
    assert_ne!(g.status(0).state, State::OriginSlow);
}

#[test]
fn errors_over_their_share_are_unhealthy_whatever_the_time() {
    let (mut g, _) = read_once(100);
    for t in T0 + 60..T0 + 90 {
        for i in 0..100 {
            let answer = match i {
                0 => OriginAnswer::Failed,
                1 => OriginAnswer::Answered { ms: 5, status: 502 },
                _ => OriginAnswer::Answered { ms: 5, status: 200 },
            };
            g.observe(t, answer, true);
        }
    }
    assert_eq!(g.tick(T0 + 89, 600, 1000, 500.0), Some(10.0));
    // Every request failing: no time at all, and unhealthy.
    let mut g = Governor::new(options()).unwrap();
    for t in T0..T0 + 60 {
        g.observe(t, OriginAnswer::Failed, true);
    }
    assert_eq!(g.tick(T0 + 59, 600, 1000, 500.0), Some(10.0));
}

#[test]
fn rooms_behind_one_origin_share_its_load_and_scale_by_their_own() {
    let (mut g, _) = read_once(100);
    g.set_share(0.25);
    // 100 answers a second at p95 200 ms, a fifth of them the room's own.
    for t in T0 + 60..T0 + 120 {
        for i in 0..100 {
            let ms = if i % 20 < 2 { 200 } else { 50 };
            g.observe(t, OriginAnswer::Answered { ms, status: 200 }, i % 5 == 0);
        }
    }
    let target = g.tick(T0 + 119, 600, 1000, 1000.0).unwrap();
    let aim_load = 100.0 / (1.0 - 100.0 / 200.0) * (1.0 - 100.0 / 640.0);
    let per_session = 20.0 * 600.0 / 600.0;
    assert!(
        (target - 60.0 * aim_load * 0.25 / per_session).abs() < 1e-6,
        "{target}"
    );
    // A share out of bounds is refused; above 1 is 1.
    g.set_share(0.0);
    g.set_share(f64::NAN);
    g.set_share(3.0);
    assert_eq!(g.share, 1.0);
}

#[test]
fn counts_each_turn_of_the_target() {
    let (mut g, target) = read_once(100);
    assert_eq!(g.status(0).direction_changes, 0);
    answers(&mut g, T0 + 60, T0 + 120, 100, 50, 900);
    let cut = g.tick(T0 + 89, 600, 1000, target).unwrap();
    assert!(cut < target);
    answers(&mut g, T0 + 120, T0 + 180, 100, 50, 100);
    let up = g.tick(T0 + 179, 600, 1000, cut).unwrap();
    assert!(up > cut);
    assert_eq!(g.status(0).direction_changes, 2);
}

#[test]
fn a_change_under_five_percent_holds_the_target() {
    let (mut g, _) = read_once(100);
    answers(&mut g, T0 + 60, T0 + 120, 100, 50, 200);
    let target = g.tick(T0 + 119, 600, 1000, 1000.0).unwrap();
    // A p95 of 198 ms: an estimate about 2 % higher, averaged with the last: 1 %.
    answers(&mut g, T0 + 120, T0 + 180, 100, 50, 198);
    assert_eq!(g.tick(T0 + 179, 600, 1000, target), Some(target));
    // 150 ms, the origin less busy: moved.
    answers(&mut g, T0 + 180, T0 + 240, 100, 50, 150);
    assert!(g.tick(T0 + 239, 600, 1000, target).unwrap() > target * 1.05);
}
