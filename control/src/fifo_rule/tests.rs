use super::*;
use crate::options::HEARTBEAT_KEY;

const T0: u64 = 1_700_000_000;
const HOLD: u64 = 300;

fn line(text: &str) -> Record {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn uid(n: u32) -> String {
    format!("10.0.{}.{}", n / 256, n % 256)
}

fn cutoff_field(cutoff: Option<u64>) -> String {
    cutoff.map_or("none ALERT=fifo-no-cutoff".to_string(), |c| c.to_string())
}

/// A waiting line: `decision` anon or wait, the place `arr` held until `exp`.
fn waiting(t: u64, n: u32, decision: &str, arr: u64, exp: u64, cutoff: Option<u64>) -> Record {
    line(&format!(
        "waitingroom t={t} decision={decision} uid={} p=50 exp={exp} arr={arr} path=/events cutoff={}",
        uid(n),
        cutoff_field(cutoff)
    ))
}

fn admitted(t: u64, n: u32, arr: u64, cutoff: u64) -> Record {
    line(&format!(
        "waitingroom t={t} decision=allow uid={} p=50 session=new transition=cutoff-reached \
         exp={} arr={arr} cutoff={cutoff} path=/events",
        uid(n),
        t + 3600
    ))
}

fn options(target_per_minute: f64) -> FifoOptions {
    FifoOptions {
        target_per_minute,
        expected_propagation: None,
        ..FifoOptions::default()
    }
}

/// One visitor of the test room.
#[derive(Debug, Clone)]
struct Visitor {
    arr: u64,
    /// Their second within the polling period (as the room's hash of the uid).
    offset: u64,
    /// Second of their first request.
    comes: u64,
    /// Second they stop polling, if they do.
    leaves: Option<u64>,
    admitted: Option<u64>,
}

/// A FIFO room as the tests need it: visitors poll every 30 s at their own
/// phase, are admitted when the cutoff in effect reaches their place, and the
/// controller's writes reach the room `delay` seconds after they are made.
struct Room {
    visitors: Vec<Visitor>,
    cutoff: Option<u64>,
    in_flight: VecDeque<(u64, u64)>,
    delay: u64,
    /// Cutoffs written, in order.
    writes: Vec<u64>,
}

const POLL: u64 = 30;

impl Room {
    /// `n` visitors arriving `spacing_ms` apart from `T0`, each polling from then on.
    fn crowd(n: u32, spacing_ms: u64, delay: u64) -> Room {
        let visitors = (0..n)
            .map(|i| {
                let arr = T0 * 1000 + u64::from(i) * spacing_ms;
                Visitor {
                    arr,
                    offset: u64::from(i).wrapping_mul(2_654_435_761) % POLL,
                    comes: arr / 1000,
                    leaves: None,
                    admitted: None,
                }
            })
            .collect();
        Room {
            visitors,
            cutoff: None,
            in_flight: VecDeque::new(),
            delay,
            writes: Vec::new(),
        }
    }

    /// Second `t`: the writes due land, every visitor due polls and is logged,
    /// and the controller ticks when a tick is due.
    fn second(&mut self, c: &mut FifoController, t: u64) {
        while self.in_flight.front().is_some_and(|(at, _)| *at <= t) {
            let (_, cutoff) = self.in_flight.pop_front().unwrap();
            self.cutoff = Some(cutoff);
        }
        for (i, v) in self.visitors.iter_mut().enumerate() {
            let n = i as u32;
            if v.admitted.is_some() || t < v.comes || v.leaves.is_some_and(|l| t >= l) {
                continue;
            }
            let record = if t == v.comes {
                waiting(t, n, "anon", v.arr, t + HOLD, self.cutoff)
            } else if t % POLL == v.offset {
                if self.cutoff.is_some_and(|cut| v.arr <= cut) {
                    v.admitted = Some(t);
                    admitted(t, n, v.arr, self.cutoff.unwrap())
                } else {
                    waiting(t, n, "wait", v.arr, t + HOLD, self.cutoff)
                }
            } else {
                continue;
            };
            c.observe(&record, t);
        }
        if t.is_multiple_of(c.options().tick)
            && let Some(write) = c.tick(t)
        {
            c.written(&write, t);
            if let Some(cutoff) = write.fifo_cutoff {
                self.writes.push(cutoff);
                self.in_flight.push_back((t + self.delay, cutoff));
            }
        }
    }

    fn run(&mut self, c: &mut FifoController, from: u64, seconds: u64) {
        for t in from..from + seconds {
            self.second(c, t);
        }
    }

    /// Admissions in each whole minute from `T0`.
    fn per_minute(&self, minutes: usize) -> Vec<u64> {
        let mut counts = vec![0; minutes];
        for v in &self.visitors {
            if let Some(t) = v.admitted
                && let Some(slot) = counts.get_mut(((t - T0) / 60) as usize)
            {
                *slot += 1;
            }
        }
        counts
    }

    /// Whether everyone admitted came in no later than anyone who arrived after
    /// them, but for the spread of one polling period (the cutoff passes places
    /// in order; a visitor sees it at their next poll).
    fn in_order(&self) -> bool {
        let mut last_admitted_before: Option<u64> = None;
        for v in &self.visitors {
            if let Some(t) = v.admitted {
                if last_admitted_before.is_some_and(|before| t + POLL < before) {
                    return false;
                }
                last_admitted_before = Some(last_admitted_before.map_or(t, |b| b.max(t)));
            }
        }
        true
    }
}

#[test]
fn options_that_make_no_sense_are_refused() {
    for bad in [
        FifoOptions {
            target_per_minute: 0.0,
            ..FifoOptions::default()
        },
        FifoOptions {
            target_per_minute: f64::INFINITY,
            ..FifoOptions::default()
        },
        FifoOptions {
            tick: 0,
            ..FifoOptions::default()
        },
        FifoOptions {
            fifo_hold: 0,
            ..FifoOptions::default()
        },
        FifoOptions {
            wait_period: 0,
            ..FifoOptions::default()
        },
        FifoOptions {
            log_silence: Some(0),
            ..FifoOptions::default()
        },
    ] {
        assert!(FifoController::new(bad.clone()).is_err(), "{bad:?}");
    }
    assert_eq!(FifoOptions::default().poll_period(), 30);
}

#[test]
fn with_nobody_waiting_only_the_heartbeat_is_written() {
    let mut c = FifoController::new(options(60.0)).unwrap();
    assert_eq!(
        c.tick(T0),
        Some(CutoffWrite {
            fifo_cutoff: None,
            fifo_rate: None,
            heartbeat: T0
        })
    );
    let write = c.tick(T0).unwrap();
    c.written(&write, T0);
    // Bypass lines and a session renewed: no place to pass.
    c.observe(
        &line(
            "waitingroom t=1700000005 decision=bypass scope=unprotected-path uid=10.0.0.1 path=/",
        ),
        T0 + 5,
    );
    c.observe(
        &line("waitingroom t=1700000006 decision=allow uid=10.0.0.2 p=50 session=kept exp=1700003000 cutoff=none path=/events"),
        T0 + 6,
    );
    assert_eq!(c.tick(T0 + 10), None);
    let beat = c.tick(T0 + 30).unwrap();
    assert_eq!(beat.items(), [(HEARTBEAT_KEY, (T0 + 30).to_string())]);
    assert_eq!(c.status(60).cutoff, None);
}

#[test]
fn the_first_tick_passes_the_targets_places_in_order() {
    let mut c = FifoController::new(options(60.0)).unwrap();
    // A thousand arrivals in one second, a millisecond apart, logged out of order.
    for i in (0..1000u32).rev() {
        let arr = T0 * 1000 + u64::from(i);
        c.observe(&waiting(T0, i, "anon", arr, T0 + HOLD, None), T0);
    }
    let write = c.tick(T0 + 1).unwrap();
    // 60 a minute, a tick of 10 s: ten places, the first ten.
    assert_eq!(write.fifo_cutoff, Some(T0 * 1000 + 9));
    // Ten milliseconds of arrivals in one tick: 1 ms a second.
    assert_eq!(write.fifo_rate, Some("1".parse().unwrap()));
    assert_eq!(
        write.items(),
        [
            (CUTOFF_KEY, (T0 * 1000 + 9).to_string()),
            (RATE_KEY, "1".to_string()),
            (HEARTBEAT_KEY, (T0 + 1).to_string()),
        ]
    );
    c.written(&write, T0 + 1);
    let next = c.tick(T0 + 11).unwrap();
    assert_eq!(next.fifo_cutoff, Some(T0 * 1000 + 19));
    assert_eq!(next.fifo_rate, None, "the same speed is not written again");
}

#[test]
fn each_device_behind_an_address_holds_a_place_of_its_own() {
    // Address 0 holds two places (a phone at +0, a laptop that joined later
    // at +500), address 1 one between them. Six a minute, a tick of 10 s: one
    // place a tick, and the first is the phone's. Each place's hold ends on
    // its own: the phone's and address 1's end first, the laptop's stays.
    let mut c = FifoController::new(options(6.0)).unwrap();
    c.observe(&waiting(T0, 0, "anon", T0 * 1000, T0 + HOLD, None), T0);
    c.observe(
        &waiting(T0, 1, "anon", T0 * 1000 + 200, T0 + HOLD, None),
        T0,
    );
    c.observe(
        &waiting(T0 + 5, 0, "anon", T0 * 1000 + 500, T0 + 5 + HOLD, None),
        T0 + 5,
    );
    assert_eq!(c.snapshot(0).waiting, 3);
    let write = c.tick(T0 + 6).unwrap();
    assert_eq!(write.fifo_cutoff, Some(T0 * 1000));
    c.observe(
        &line("waitingroom t=1700000302 decision=bypass scope=x uid=10.0.9.9 path=/"),
        T0 + HOLD + 2,
    );
    c.tick(T0 + HOLD + 2);
    assert_eq!(c.snapshot(0).waiting, 1, "the laptop's hold goes on");
    // A deny ends every place of its address.
    c.observe(
        &line("waitingroom t=1700000303 decision=deny uid=10.0.0.0 p=0 cutoff=none path=/events"),
        T0 + HOLD + 3,
    );
    assert_eq!(c.snapshot(0).waiting, 0);
}

/// A line at T0 + 1 (address 999, waiting at +900 ms) shows the cutoff in
/// effect at the place of the `people`th (places at +0 ms on), and they are
/// let in at T0 + 2; the cutoff.
fn let_in(c: &mut FifoController, people: u32) -> u64 {
    let ms = |offset: u64| T0 * 1000 + offset;
    let cutoff = ms(u64::from(people) - 1);
    c.observe(
        &waiting(T0 + 1, 999, "anon", ms(900), T0 + HOLD, Some(cutoff)),
        T0 + 1,
    );
    for n in 0..people {
        c.observe(&admitted(T0 + 2, n, ms(u64::from(n)), cutoff), T0 + 2);
    }
    cutoff
}

/// Ten people (addresses 0 to 9, places at +0 to +9 ms), each with another
/// device behind their address (its place 100 ms after theirs), and twenty
/// people behind them (+200 to +219 ms), all first seen at T0; ten places a
/// tick, and `propagation` taken until measured.
fn people_with_another_device(propagation: Option<u64>) -> FifoController {
    let ms = |offset: u64| T0 * 1000 + offset;
    let mut c = FifoController::new(FifoOptions {
        expected_propagation: propagation,
        ..options(60.0)
    })
    .unwrap();
    for n in 0..10u32 {
        let n64 = u64::from(n);
        c.observe(&waiting(T0, n, "anon", ms(n64), T0 + HOLD, None), T0);
        c.observe(&waiting(T0, n, "anon", ms(100 + n64), T0 + HOLD, None), T0);
    }
    for i in 0..20u32 {
        let place = ms(200 + u64::from(i));
        c.observe(&waiting(T0, 100 + i, "anon", place, T0 + HOLD, None), T0);
    }
    c
}

#[test]
fn another_device_of_a_person_let_in_counts_only_if_passed_before_it_is_back() {
    // Ten people are let in at T0 + 2. Each has another device, its place
    // 100 ms after theirs, last loaded at T0 and due back every 30 s; twenty
    // people wait behind. Ten places a tick: the tick at T0 + 6 passes the
    // devices as ten admissions only when they will come in, that is when
    // the cutoff is in effect before they are back (a device back once its
    // person is in sees a waiting page and is closed).
    let ms = |offset: u64| T0 * 1000 + offset;
    let tick = |propagation: Option<u64>, back: bool| {
        let mut c = people_with_another_device(propagation);
        let first = let_in(&mut c, 10);
        if back {
            for n in 0..10u32 {
                let place = ms(100 + u64::from(n));
                let record = waiting(T0 + 4, n, "wait", place, T0 + 4 + HOLD, Some(first));
                c.observe(&record, T0 + 4);
            }
        }
        c.tick(T0 + 6).unwrap().fifo_cutoff
    };
    assert_eq!(
        tick(None, false),
        Some(ms(109)),
        "in effect at once, before they are back at T0 + 30: they come in"
    );
    assert_eq!(
        tick(None, true),
        Some(ms(209)),
        "back since their person got in: gone, passed freely"
    );
    assert_eq!(
        tick(Some(30), false),
        Some(ms(209)),
        "in effect at T0 + 36, after they are back: passed freely"
    );
}

#[test]
fn another_device_of_a_person_passed_but_not_yet_in_counts_by_when_each_is_back() {
    // A write at T0 + 6 passes ten people; it is in effect at T0 + 36 (the
    // propagation delay), and each gets in at their first request from
    // then. Each has another device 100 ms behind: five last loaded at T0,
    // five at T0 + 8, all due back every 30 s. The next tick's cutoff,
    // passing the devices, is in effect at T0 + 46: a device counts if its
    // first request after its person got in comes from then (before, it is
    // shown a waiting page and closed).
    let ms = |offset: u64| T0 * 1000 + offset;
    let second_cutoff = |person_seen: u64| {
        let mut c = people_with_another_device(Some(30));
        for n in 0..10u32 {
            let exp = person_seen + HOLD;
            let record = waiting(person_seen, n, "wait", ms(u64::from(n)), exp, None);
            c.observe(&record, person_seen);
        }
        let write = c.tick(T0 + 6).unwrap();
        assert_eq!(write.fifo_cutoff, Some(ms(9)));
        c.written(&write, T0 + 6);
        for n in 5..10u32 {
            let place = ms(100 + u64::from(n));
            c.observe(
                &waiting(T0 + 8, n, "wait", place, T0 + 8 + HOLD, None),
                T0 + 8,
            );
        }
        c.tick(T0 + 16).unwrap().fifo_cutoff
    };
    assert_eq!(
        second_cutoff(T0 + 6),
        Some(ms(204)),
        "people in at T0 + 36: the devices back at T0 + 38 are closed, those back at T0 + 60 count"
    );
    assert_eq!(
        second_cutoff(T0 + 2),
        Some(ms(109)),
        "people in at T0 + 62: every device is back after T0 + 46 and counts"
    );
}

#[test]
fn ties_and_fractions_carry_over_instead_of_adding_up() {
    // 90 a minute: 15 places a tick; visitors four to a millisecond.
    let mut c = FifoController::new(options(90.0)).unwrap();
    for i in 0..400u32 {
        let arr = T0 * 1000 + u64::from(i / 4);
        c.observe(&waiting(T0, i, "anon", arr, T0 + HOLD, None), T0);
    }
    let mut passed = Vec::new();
    for k in 1..=10 {
        let write = c.tick(T0 + 10 * k).unwrap();
        c.written(&write, T0 + 10 * k);
        let cutoff = write.fifo_cutoff.unwrap();
        passed.push(4 * (cutoff + 1 - T0 * 1000));
    }
    // 16, 16, 16, 12, …: never more than a tie past the allowance, 150 in ten ticks.
    assert_eq!(passed.last(), Some(&152));
    for (k, &n) in passed.iter().enumerate() {
        let allowed = 15 * (k as u64 + 1);
        assert!(n + 4 > allowed && n < allowed + 4, "{passed:?}");
    }
}

#[test]
fn a_crowd_is_admitted_at_the_target_in_order_and_the_cutoff_never_moves_back() {
    // 3,000 people in 10 s, 120 a minute: 25 minutes of line.
    let mut room = Room::crowd(3000, 3, 0);
    let mut c = FifoController::new(options(120.0)).unwrap();
    room.run(&mut c, T0, 30 * 60);
    let minutes = room.per_minute(30);
    for (m, &n) in minutes.iter().enumerate().take(24).skip(1) {
        assert!((108..=132).contains(&n), "minute {m}: {minutes:?}");
    }
    assert!(
        room.writes.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        room.writes
    );
    assert!(room.in_order());
    assert!(
        room.visitors.iter().all(|v| v.admitted.is_some()),
        "{minutes:?}"
    );
    // Nobody abandoned: every passed place showed.
    assert!(c.show_up()[0] > 0.99, "{:?}", c.show_up());
}

#[test]
fn a_crowd_that_abandons_still_gets_the_target() {
    // Half the crowd gives up a minute after arriving.
    let mut room = Room::crowd(4000, 2, 0);
    for v in room.visitors.iter_mut().skip(1).step_by(2) {
        v.leaves = Some(v.comes + 60);
    }
    let mut c = FifoController::new(options(120.0)).unwrap();
    room.run(&mut c, T0, 5 * 60);
    // Their places lapse 300 s after their last request: until then the cutoff
    // passes them. They stopped polling, and those that are passed do not show:
    // they are passed for a tenth of a place each.
    let status = c.status(0);
    assert!(status.show_up > 0.8, "{status:?}");
    assert!(status.show_up_stale < 0.3, "{status:?}");
    room.run(&mut c, T0 + 5 * 60, 15 * 60);
    let minutes = room.per_minute(20);
    // Minutes 1 and 2 fall short: the places of those who just left are passed
    // before they have missed a poll, and the live share takes them in slowly.
    // From the third minute, the target; counting every passed place as an
    // admission would have given about 60 a minute until their places lapse.
    for (m, &n) in minutes.iter().enumerate().take(17).skip(3) {
        assert!((102..=138).contains(&n), "minute {m}: {minutes:?}");
    }
}

#[test]
fn propagation_is_measured_and_does_not_read_as_abandonment() {
    let mut room = Room::crowd(3000, 3, 30);
    let mut c = FifoController::new(options(120.0)).unwrap();
    room.run(&mut c, T0, 20 * 60);
    let status = c.status(0);
    assert_eq!(status.propagation, Some(30));
    assert!(status.show_up > 0.99, "{status:?}");
    let minutes = room.per_minute(20);
    // The first write lands at 30 s and its places come back within a poll.
    for (m, &n) in minutes.iter().enumerate().skip(2) {
        assert!((108..=132).contains(&n), "minute {m}: {minutes:?}");
    }
    // The cutoff in effect trails the written one by the delay: places in flight
    // are not passed twice.
    let (written, in_effect) = (status.cutoff.unwrap(), status.cutoff_in_effect.unwrap());
    assert!(written > in_effect);
    let between = room
        .visitors
        .iter()
        .filter(|v| v.arr > in_effect && v.arr <= written)
        .count();
    assert!(between <= 3 * 20 + 5, "{between} places in flight");
}

#[test]
fn a_store_that_does_not_take_the_writes_stops_the_cutoff() {
    // The room never sees a write: the lines keep saying cutoff=none.
    let mut room = Room::crowd(3000, 3, u64::MAX / 2);
    let mut c = FifoController::new(FifoOptions {
        expected_propagation: Some(30),
        ..options(120.0)
    })
    .unwrap();
    room.run(&mut c, T0, 10 * 60);
    let cutoff = c.status(0).cutoff.unwrap();
    let passed = room.visitors.iter().filter(|v| v.arr <= cutoff).count();
    // The propagation assumed (30 s), two ticks and the tick's own: 20 a tick,
    // 140 or so, not the 1,200 ten minutes of target would be.
    assert!((100..=200).contains(&passed), "{passed} places passed");
    assert!(room.visitors.iter().all(|v| v.admitted.is_none()));
}

#[test]
fn a_restart_never_moves_the_cutoff_back_and_samples_the_crowd() {
    let mut room = Room::crowd(6000, 2, 0);
    let mut first = FifoController::new(options(120.0)).unwrap();
    room.run(&mut first, T0, 5 * 60);
    let before = first.status(0).cutoff.unwrap();
    // A new controller: it has seen nothing of the crowd.
    let mut second = FifoController::new(options(120.0)).unwrap();
    let from = T0 + 5 * 60;
    // Two seconds of lines: a fifteenth of the crowd polls in them.
    room.run(&mut second, from, 2);
    let write = second.tick(from + 2).unwrap();
    let cutoff = write.fifo_cutoff.unwrap();
    assert!(cutoff >= before, "{cutoff} < {before}");
    let passed = room
        .visitors
        .iter()
        .filter(|v| v.arr > before && v.arr <= cutoff)
        .count();
    // Twenty places a tick, counted from a sample: about twenty, not three hundred.
    assert!((5..=60).contains(&passed), "{passed} places passed");
    second.written(&write, from + 2);
    room.writes.push(cutoff);
    room.in_flight.push_back((from + 2, cutoff));
    room.run(&mut second, from + 3, 10 * 60);
    let minutes = room.per_minute(16);
    for (m, &n) in minutes.iter().enumerate().take(15).skip(7) {
        assert!((102..=138).contains(&n), "minute {m}: {minutes:?}");
    }
    assert!(room.writes.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn bad_late_and_future_lines_change_nothing_but_their_counters() {
    let mut c = FifoController::new(options(60.0)).unwrap();
    c.observe(&waiting(T0, 1, "anon", T0 * 1000 + 5, T0 + HOLD, None), T0);
    // A line stamped ten minutes ahead of the clock: refused.
    c.observe(
        &waiting(T0 + 600, 2, "anon", T0 * 1000 + 1, T0 + 900, None),
        T0,
    );
    assert_eq!(c.counters().future_lines, 1);
    // Unreadable lines are counted by whoever parses them.
    for bad in [
        "waitingroom t=1700000000 decision=wait uid=10.0.0.3 p=50 arr=soon cutoff=none",
        "waitingroom t=1700000000 decision=wait uid=10.0.0.3 p=50 arr=1 cutoff=-5",
        "no room line",
    ] {
        assert!(bad.parse::<Record>().is_err(), "{bad}");
        c.bad_line();
    }
    assert_eq!(c.counters().bad_lines, 3);
    // An older line for an address than the one its place came from: ignored.
    c.observe(&waiting(T0, 1, "wait", T0 * 1000 + 5, T0 + HOLD, None), T0);
    c.observe(
        &waiting(T0 - 5, 1, "anon", T0 * 1000 - 9_000, T0 + 200, None),
        T0,
    );
    // A line older than the window: not counted.
    c.observe(
        &waiting(T0 + 4000, 4, "anon", (T0 + 4000) * 1000, T0 + 4300, None),
        T0 + 4000,
    );
    c.observe(
        &waiting(T0 - 10, 5, "anon", T0 * 1000 - 10_000, T0 + 290, None),
        T0 + 4000,
    );
    assert_eq!(c.counters().late_lines, 1);
    assert_eq!(c.counters().lines, 4);
    // Only the readable, timely arrivals held places, and the first one's hold
    // ended: the one left is passed (and held until it shows or its hold ends).
    let write = c.tick(T0 + 4000).unwrap();
    assert_eq!(write.fifo_cutoff, Some((T0 + 4000) * 1000));
    assert_eq!(c.snapshot(0).waiting, 1);
}

#[test]
fn a_place_is_dropped_when_its_hold_ends_and_when_it_is_admitted() {
    let mut c = FifoController::new(options(600.0)).unwrap();
    for i in 0..3 {
        c.observe(
            &waiting(T0, i, "anon", T0 * 1000 + u64::from(i), T0 + 60, None),
            T0,
        );
    }
    assert_eq!(c.snapshot(0).waiting, 3);
    c.observe(&admitted(T0 + 1, 0, T0 * 1000, T0 * 1000), T0 + 1);
    c.observe(
        &line("waitingroom t=1700000002 decision=deny uid=10.0.0.1 p=0 cutoff=none path=/events"),
        T0 + 2,
    );
    assert_eq!(c.snapshot(0).waiting, 1);
    // The last one stops polling: its hold ends at T0 + 60.
    c.observe(
        &line("waitingroom t=1700000061 decision=bypass scope=x uid=10.0.0.9 path=/"),
        T0 + 61,
    );
    c.tick(T0 + 61);
    assert_eq!(c.snapshot(0).waiting, 0);
    // The admitted one counts as active.
    assert_eq!(c.snapshot(0).active, 1);
}

#[test]
fn a_live_sessions_lines_leave_the_place_of_a_device_still_waiting() {
    // Behind address 0 a phone is in (its session's requests go on) while a
    // laptop waits at +100; the cutoff passes the laptop's place. The phone's
    // lines must neither drop the place nor its watch: when the laptop comes
    // back admitted, that is a show, and the sessions per show stay at what
    // the passed places brought.
    let mut c = FifoController::new(options(60.0)).unwrap();
    let arr = T0 * 1000 + 100;
    c.observe(&waiting(T0, 0, "anon", arr, T0 + HOLD, None), T0);
    let cutoff = arr + 1;
    c.observe(
        &waiting(T0 + 1, 1, "anon", cutoff + 1, T0 + HOLD, Some(cutoff)),
        T0 + 1,
    );
    for (t, session) in [(T0 + 2, "kept"), (T0 + 3, "renewed")] {
        c.observe(
            &line(&format!(
                "waitingroom t={t} decision=allow uid={} p=50 session={session} exp={} path=/events cutoff={cutoff}",
                uid(0),
                T0 + 3000
            )),
            t,
        );
        assert_eq!(c.snapshot(0).waiting, 2, "the laptop still holds its place");
    }
    c.observe(&admitted(T0 + 4, 0, arr, cutoff), T0 + 4);
    assert_eq!(c.snapshot(0).waiting, 1);
    c.tick(T0 + 4);
    // One show of one passed place, one session (the prior aside): 6/6.
    assert_eq!(c.show_up(), [1.0, 1.0]);
    let per_show = c.sessions_per_expected_show(T0 + 4);
    assert!((per_show - 1.0).abs() < 1e-9, "{per_show}");
}

#[test]
fn stale_places_that_bring_nobody_are_made_up_for_by_the_sessions_per_expected_show() {
    // 100 places stop polling at once; 10 others keep polling. A line a minute
    // later shows a cutoff past all of them: the 100 were stale when passed
    // and never come back, the 10 are admitted. A stale place is weighed at
    // least MIN_SHOW_UP, so the shows expected were 10 + 100 × 0.1; the
    // sessions per expected show fall below one, and places are passed
    // faster by as much.
    let mut c = FifoController::new(options(60.0)).unwrap();
    for n in 0..110u32 {
        let arr = T0 * 1000 + u64::from(n);
        c.observe(&waiting(T0, n, "anon", arr, T0 + HOLD, None), T0);
    }
    let later = T0 + 60;
    for n in 100..110u32 {
        let arr = T0 * 1000 + u64::from(n);
        c.observe(&waiting(later, n, "wait", arr, later + HOLD, None), later);
    }
    let cutoff = T0 * 1000 + 109;
    c.observe(
        &waiting(
            later + 1,
            200,
            "anon",
            later * 1000,
            later + HOLD,
            Some(cutoff),
        ),
        later + 1,
    );
    for n in 100..110u32 {
        c.observe(
            &admitted(later + 2, n, T0 * 1000 + u64::from(n), cutoff),
            later + 2,
        );
    }
    // The stale places' deadline passes (a polling period and a tick).
    let after = later + 1 + POLL + 10 + 2;
    c.observe(
        &waiting(after, 200, "wait", later * 1000, after + HOLD, Some(cutoff)),
        after,
    );
    c.tick(after);
    let [live, stale] = c.show_up();
    assert_eq!(live, 1.0);
    assert_eq!(stale, MIN_SHOW_UP, "5 / 105 shows, held at the floor");
    // (10 sessions + 5) over (10 + 100 × 0.1 expected + 5).
    let per_show = c.sessions_per_expected_show(after);
    assert!((per_show - 15.0 / 25.0).abs() < 1e-9, "{per_show}");
}

#[test]
fn pre_queue_places_wait_for_the_opening() {
    // The line opens at T0 + 100: everyone before gets a place in its first second.
    let opens = (T0 + 100) * 1000;
    let mut c = FifoController::new(options(600.0)).unwrap();
    for i in 0..50u32 {
        let arr = opens + u64::from(i * 7 % 1000);
        c.observe(&waiting(T0, i, "anon", arr, T0 + 100 + HOLD, None), T0);
    }
    let write = c.tick(T0 + 1).unwrap();
    assert_eq!(
        write.fifo_cutoff, None,
        "nobody is passed before the opening"
    );
    c.written(&write, T0 + 1);
    c.observe(
        &line("waitingroom t=1700000100 decision=bypass scope=x uid=10.0.9.9 path=/"),
        T0 + 100,
    );
    let write = c.tick(T0 + 100).unwrap();
    // A hundred a tick: all fifty, in the order their offsets give them.
    assert_eq!(write.fifo_cutoff, Some(opens + 343));
}

#[test]
fn max_active_caps_the_places_passed() {
    let mut c = FifoController::new(FifoOptions {
        max_active: Some(12),
        ..options(600.0)
    })
    .unwrap();
    for i in 0..10u32 {
        c.observe(
            &line(&format!(
                "waitingroom t={T0} decision=allow uid=10.1.0.{i} p=50 session=kept exp={} cutoff=none path=/e",
                T0 + 600
            )),
            T0,
        );
    }
    for i in 0..100u32 {
        let arr = T0 * 1000 + u64::from(i);
        c.observe(&waiting(T0, i, "anon", arr, T0 + HOLD, None), T0);
    }
    // Two free places, of a hundred the target would allow.
    let write = c.tick(T0 + 1).unwrap();
    assert_eq!(write.fifo_cutoff, Some(T0 * 1000 + 1));
    c.written(&write, T0 + 1);
    // Those two are counted as taken until they show or lapse.
    let write = c.tick(T0 + 11).unwrap();
    assert_eq!(write.fifo_cutoff, None);
}

#[test]
fn failed_writes_back_off_and_the_cutoff_does_not_run_ahead() {
    let mut c = FifoController::new(options(60.0)).unwrap();
    for i in 0..100u32 {
        c.observe(
            &waiting(T0, i, "anon", T0 * 1000 + u64::from(i), T0 + HOLD, None),
            T0,
        );
    }
    let write = c.tick(T0 + 1).unwrap();
    assert_eq!(write.fifo_cutoff, Some(T0 * 1000 + 9));
    c.failed(T0 + 1);
    assert_eq!(c.tick(T0 + 5), None, "backing off");
    // A tick later: still the first ten, not twenty.
    let write = c.tick(T0 + 11).unwrap();
    assert_eq!(write.fifo_cutoff, Some(T0 * 1000 + 9));
    c.written(&write, T0 + 11);
    assert_eq!(c.counters().write_failures, 1);
    // Log silence: nothing written, heartbeat included; a record brings it back.
    assert_eq!(c.tick(T0 + 1000), None);
    assert!(c.deaf(T0 + 1000));
    c.observe(
        &line("waitingroom t=1700001000 decision=bypass scope=x uid=10.0.9.9 path=/"),
        T0 + 1000,
    );
    assert!(!c.deaf(T0 + 1001));
    assert!(c.tick(T0 + 1001).is_some());
}

#[test]
fn lines_of_a_room_not_in_fifo_mode_are_counted() {
    let mut c = FifoController::new(options(60.0)).unwrap();
    c.observe(
        &line("waitingroom t=1700000000 decision=anon uid=10.0.0.1 p=50 exp=1700000060 path=/"),
        T0,
    );
    assert_eq!(c.status(0).not_fifo_lines, 1);
    assert_eq!(c.snapshot(0).waiting, 0);
}

#[test]
fn places_whose_passing_admits_several_tokens_are_passed_at_the_sessions_pace() {
    let mut c = FifoController::new(options(60.0)).unwrap();
    // Twenty places, each an address behind which three devices are admitted
    // a second apart: three allow tokens a place.
    for n in 0..20u32 {
        let arr = T0 * 1000 + u64::from(n);
        c.observe(
            &waiting(T0, n, "anon", arr, T0 + HOLD, Some(T0 * 1000 - 1)),
            T0,
        );
    }
    let cutoff = T0 * 1000 + 19;
    c.observe(
        &waiting(T0 + 1, 99, "anon", T0 * 1000 + 500, T0 + HOLD, Some(cutoff)),
        T0 + 1,
    );
    assert_eq!(
        c.sessions_per_expected_show(T0 + 1),
        1.0,
        "no show seen yet"
    );
    for n in 0..20u32 {
        for k in 0..3 {
            c.observe(
                &admitted(T0 + 2 + k, n, T0 * 1000 + u64::from(n), cutoff),
                T0 + 5,
            );
        }
    }
    // (60 sessions + 5) over (20 shows + 5).
    let per_show = c.sessions_per_expected_show(T0 + 4);
    assert!((per_show - 65.0 / 25.0).abs() < 1e-9, "{per_show}");
    // A tab repeating a token adds nothing.
    c.observe(&admitted(T0 + 4, 0, T0 * 1000, cutoff), T0 + 5);
    assert_eq!(c.sessions_per_expected_show(T0 + 4), per_show);
}

#[test]
fn a_fifo_write_lands_what_it_carries_and_describes_a_heartbeat_by_what_it_keeps() {
    let mut settings = Settings::default();
    let cutoff = CutoffWrite {
        fifo_cutoff: Some(1_700_000_000_123),
        fifo_rate: None,
        heartbeat: 30,
    };
    cutoff.land(&mut settings);
    assert_eq!(cutoff.moved(), Some(1_700_000_000_123));
    assert_eq!(settings.fifo_cutoff, Some(1_700_000_000_123));
    assert_eq!(settings.fifo_rate, None);
    assert_eq!(settings.controller_heartbeat, Heartbeat::At(30));

    let f = FifoController::new(FifoOptions::default()).unwrap();
    let beat = CutoffWrite {
        fifo_cutoff: None,
        fifo_rate: Some("1.625".parse().unwrap()),
        heartbeat: 10,
    };
    assert_eq!(
        f.describe(&beat),
        "fifo_cutoff unchanged (none) fifo_rate=1.625 (in effect none, show-up 1.00)"
    );
    assert_eq!(FifoController::QUEUEING, QueueingMethod::Fifo);
    assert!(f.fifo_status(60).is_some());
}

#[test]
fn places_put_back_by_the_other_devices_of_people_let_in_are_passed_freely() {
    // Forty people are let in; then each one's other device loads a waiting
    // page once more and closes, putting a place back in the line behind
    // the address's live session, ahead of ten people waiting. Ten a tick
    // wanted: the tick crosses the forty places (worth nothing) and passes
    // ten people. Weighed as live places, it stopped inside them.
    let mut c = FifoController::new(options(60.0)).unwrap();
    let ms = |offset: u64| T0 * 1000 + offset;
    for n in 0..40u32 {
        c.observe(
            &waiting(T0, n, "anon", ms(u64::from(n)), T0 + HOLD, None),
            T0,
        );
    }
    let first = let_in(&mut c, 40);
    let device = |n: u32| ms(100 + u64::from(n));
    let people = |i: u32| ms(200 + u64::from(i));
    for n in 0..40u32 {
        c.observe(
            &waiting(T0 + 5, n, "anon", device(n), T0 + 5 + HOLD, Some(first)),
            T0 + 5,
        );
    }
    for i in 0..20u32 {
        c.observe(
            &waiting(
                T0 + 5,
                2000 + i,
                "anon",
                people(i),
                T0 + 5 + HOLD,
                Some(first),
            ),
            T0 + 5,
        );
    }
    assert_eq!(c.snapshot(0).waiting, 61, "the devices, the people and 999");
    let write = c.tick(T0 + 6).unwrap();
    assert_eq!(write.fifo_cutoff, Some(people(9)));
    // Passed, the devices' places are not watched: never coming back is no
    // no-show.
    c.written(&write, T0 + 6);
    let passed = people(9);
    c.observe(
        &waiting(T0 + 7, 999, "wait", ms(900), T0 + 7 + HOLD, Some(passed)),
        T0 + 7,
    );
    for i in 0..10u32 {
        c.observe(&admitted(T0 + 8, 2000 + i, people(i), passed), T0 + 8);
    }
    let after = T0 + 7 + POLL + 10 + 2;
    c.observe(
        &waiting(after, 999, "wait", ms(900), after + HOLD, Some(passed)),
        after,
    );
    c.tick(after);
    assert_eq!(c.show_up(), [1.0, 1.0]);
}
