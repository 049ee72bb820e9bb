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

fn options(target_per_minute: f64) -> Options {
    Options {
        target_per_minute,
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
    let mut c = Controller::new(options(120.0)).unwrap();
    let start = T0 + 1_000;
    let first = c.tick(start).unwrap();
    c.failed(start);
    // One tick (10 s), then 20, 40, … up to 300.
    assert_eq!(c.tick(start + 9), None);
    let retry = c.tick(start + 10).unwrap();
    assert_eq!(retry.allow_percentage, first.allow_percentage);
    c.failed(start + 10);
    assert_eq!(c.tick(start + 29), None);
    assert!(c.tick(start + 30).is_some());
    for _ in 0..10 {
        c.failed(start + 30);
    }
    assert_eq!(c.tick(start + 30 + MAX_BACKOFF - 1), None);
    let write = c.tick(start + 30 + MAX_BACKOFF).unwrap();
    c.written(&write, start + 30 + MAX_BACKOFF);
    assert_eq!(c.counters.write_failures, 12);
    assert_eq!(c.counters.writes, 1);
}

#[test]
fn records_from_the_future_or_beyond_the_window_are_counted_apart() {
    let mut c = Controller::new(options(120.0)).unwrap();
    c.observe(&waiting(T0 + 10_000, 1, T0 + 10_060, "1"), T0);
    assert_eq!(c.counters.future_lines, 1);
    assert_eq!(c.snapshot(10).now, None);
    c.observe(&waiting(T0, 1, T0 + 60, "1"), T0);
    c.observe(&waiting(T0 - WINDOW, 2, T0 + 60, "1"), T0);
    assert_eq!((c.counters.lines, c.counters.late_lines), (1, 1));
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
