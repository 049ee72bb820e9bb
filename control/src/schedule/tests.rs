use super::*;

const T0: u64 = 1_700_000_000;

/// A schedule of cutoffs ticking every 10 s, the heartbeat every 30 s, deaf
/// after 120 s of silence, no propagation expected.
fn schedule() -> Schedule<u64> {
    Schedule::new(Timing {
        tick: 10,
        heartbeat_every: 30,
        log_silence: Some(120),
        expected_propagation: None,
    })
}

#[test]
fn the_heartbeat_is_due_at_first_and_then_every_interval_after_a_write() {
    let mut s = schedule();
    assert!(s.heartbeat_due(T0));
    s.succeeded(None, T0);
    assert!(!s.heartbeat_due(T0 + 29));
    assert!(s.heartbeat_due(T0 + 30));
    // A failed write is no heartbeat: still due.
    s.failed(T0 + 30);
    assert!(s.heartbeat_due(T0 + 40));
}

#[test]
fn only_a_value_other_than_the_one_written_is_a_change() {
    let mut s = schedule();
    assert_eq!(s.changed(Some(5)), Some(5));
    assert_eq!(s.changed(None), None);
    s.succeeded(Some(5), T0);
    assert_eq!(s.written(), Some(5));
    assert_eq!(s.changed(Some(5)), None);
    assert_eq!(s.changed(Some(6)), Some(6));
    // A write without a value (the heartbeat alone) keeps the one written.
    s.succeeded(None, T0 + 30);
    assert_eq!(s.written(), Some(5));
    assert_eq!(s.last_write(), Some(T0 + 30));
}

#[test]
fn failed_writes_back_off_doubling_up_to_the_maximum_and_a_success_resets() {
    // (No log comes in this test: the silence rule is not what it checks.)
    let mut s = Schedule::<u64>::new(Timing {
        log_silence: None,
        ..schedule().timing
    });
    let mut at = T0;
    // One tick (10 s), then 20, 40, … up to MAX_BACKOFF.
    for wait in [10, 20, 40, 80, 160, MAX_BACKOFF, MAX_BACKOFF] {
        s.failed(at);
        assert!(!s.may_write(at + wait - 1), "{wait}");
        assert!(s.may_write(at + wait), "{wait}");
        at += wait;
    }
    s.succeeded(None, at);
    s.failed(at);
    assert!(s.may_write(at + 10), "one tick again after a success");
}

#[test]
fn after_the_log_silence_it_stops_writing_until_a_record_comes() {
    let mut s = schedule();
    // Nothing heard: the silence counts from the first tick.
    assert!(!s.deaf(T0 + 1_000));
    assert!(s.may_write(T0));
    assert!(s.may_write(T0 + 120));
    assert!(!s.may_write(T0 + 121));
    assert!(s.deaf(T0 + 121));
    s.heard(T0 + 600);
    assert!(!s.deaf(T0 + 601));
    assert!(s.may_write(T0 + 601));
    // A record read with an older clock does not move it back.
    s.heard(T0 + 500);
    assert!(s.deaf(T0 + 721));
    // Never, when asked so.
    let mut never = Schedule::<u64>::new(Timing {
        log_silence: None,
        ..schedule().timing
    });
    assert!(never.may_write(T0));
    assert!(never.may_write(T0 + 100_000));
    assert!(!never.deaf(T0 + 100_000));
}

#[test]
fn the_propagation_delay_is_measured_from_the_newest_write_a_line_shows() {
    let mut s = schedule();
    assert_eq!(s.propagation_delay(), 0);
    let expecting = Schedule::<u64>::new(Timing {
        expected_propagation: Some(30),
        ..schedule().timing
    });
    assert_eq!(expecting.propagation_delay(), 30);
    for (value, at) in [(1, T0), (2, T0 + 10), (3, T0 + 20)] {
        s.succeeded(Some(value), at);
    }
    // A line at T0 + 25 showing 2 in effect: from the write of 2, and the write
    // of 1 before it is no longer pending.
    s.measure_propagation(T0 + 25, |v| v == 2);
    assert_eq!(s.propagation(), Some(15));
    assert_eq!(s.propagation_delay(), 15);
    // A line older than a write does not show it.
    s.measure_propagation(T0 + 15, |v| v == 3);
    assert_eq!(s.propagation(), Some(15));
    // The log quiet from T0 + 25 to T0 + 60: the write of 3 (at T0 + 20)
    // landed by T0 + 60, 0 to 40 s on, and 15 s stays the estimate.
    s.measure_propagation(T0 + 60, |v| v <= 3);
    assert_eq!(s.propagation(), Some(15));
    // A line a second after one that did not show the write of 4 (at T0 + 70):
    // it landed in that second, 30 s on.
    s.succeeded(Some(4), T0 + 70);
    s.measure_propagation(T0 + 99, |v| v == 3);
    s.measure_propagation(T0 + 100, |v| v == 4);
    assert_eq!(s.propagation(), Some(30));
    // Quiet from T0 + 100 to T0 + 150, the write of 5 at T0 + 110: 15 s is
    // out of the bounds (1 to 40), 30 within.
    s.succeeded(Some(5), T0 + 110);
    s.measure_propagation(T0 + 150, |v| v == 5);
    assert_eq!(s.propagation(), Some(30));
    // Lines showing the write of 6 (at T0 + 160) not before T0 + 200: at least 40.
    s.succeeded(Some(6), T0 + 160);
    s.measure_propagation(T0 + 199, |v| v == 5);
    s.measure_propagation(T0 + 205, |v| v == 6);
    assert_eq!(s.propagation(), Some(40));
}

#[test]
fn only_the_newest_writes_are_kept_pending() {
    let mut s = schedule();
    for k in 0..PENDING_WRITES as u64 + 1 {
        s.succeeded(Some(k), T0 + k);
    }
    // The first write was let go: a line showing it measures nothing.
    s.measure_propagation(T0 + 1_000, |v| v == 0);
    assert_eq!(s.propagation(), None);
    s.measure_propagation(T0 + 1_000, |v| v == 1);
    assert_eq!(s.propagation(), Some(999));
}
