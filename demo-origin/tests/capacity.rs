//! The demo origin's capacity over real HTTP: the queue and the time to the answer
//! grow when requests come faster than the capacity serves them, a full queue answers
//! 503 at once, the capacity changes while the origin runs (through its handle and
//! its admin path), and the stats tell what it did. All the waiting is the origin's
//! sleeping, so the lower bounds on times are exact; the upper ones are loose, for a
//! busy machine.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use demo_origin::{CAPACITY_PATH, Capacity, ORIGIN_MARKER, Origin, SLOW_PREFIX, STATS_PATH};

/// One answer: its status, head and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// Sends `method path` and reads the whole answer (the origin closes every connection).
fn send(to: SocketAddr, method: &str, path: &str) -> Answer {
    let mut stream = TcpStream::connect(to).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {to}\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Answer {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

/// `n` GETs of `path` sent at once; their answers with when each came (from just
/// before they were sent, so that a late thread cannot hide a wait), first first.
fn at_once(to: SocketAddr, n: usize, path: &str) -> Vec<(Duration, Answer)> {
    let barrier = Arc::new(Barrier::new(n));
    let began = Instant::now();
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let barrier = barrier.clone();
            let path = path.to_string();
            thread::spawn(move || {
                barrier.wait();
                let answer = send(to, "GET", &path);
                (began.elapsed(), answer)
            })
        })
        .collect();
    let mut answers: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    answers.sort_by_key(|(took, _)| *took);
    answers
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Waits until `ready` holds of the origin's stats (at most 5 s).
fn until(origin: &Origin, ready: impl Fn(&demo_origin::Stats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ready(&origin.stats()) {
        assert!(Instant::now() < deadline, "stats: {:?}", origin.stats());
        thread::sleep(ms(2));
    }
}

#[test]
fn six_requests_at_a_capacity_of_two_are_served_in_three_rounds() {
    let capacity = Capacity::new(2).with_service(ms(100));
    let origin = Origin::start_with("127.0.0.1:0", Some(capacity)).unwrap();
    let watcher = {
        let origin = origin.clone();
        thread::spawn(move || {
            // The most waiting and served at once the stats showed.
            let (mut queued, mut in_flight) = (0, 0);
            let deadline = Instant::now() + Duration::from_secs(5);
            while origin.stats().served < 6 && Instant::now() < deadline {
                let stats = origin.stats();
                queued = queued.max(stats.queued);
                in_flight = in_flight.max(stats.in_flight);
                thread::sleep(ms(2));
            }
            (queued, in_flight)
        })
    };
    let answers = at_once(origin.addr(), 6, "/x");
    for (took, answer) in &answers {
        assert_eq!(answer.status, 200);
        assert!(answer.body.contains(ORIGIN_MARKER));
        assert!(*took >= ms(100), "{took:?}");
    }
    let took: Vec<Duration> = answers.iter().map(|(took, _)| *took).collect();
    // Two a round: the third pair waited for two rounds before its own.
    assert!(took[2] >= ms(200) && took[4] >= ms(300), "{took:?}");
    assert!(took[5] < ms(2000), "{took:?}");
    let (queued, in_flight) = watcher.join().unwrap();
    assert_eq!(in_flight, 2, "never more than two served at once");
    assert!(queued >= 2, "the queue grew: {queued}");
    let stats = origin.stats();
    assert_eq!(
        (stats.served, stats.refused, stats.in_flight, stats.queued),
        (6, 0, 0, 0)
    );
    assert_eq!(stats.capacity, Some(capacity));
}

#[test]
fn a_full_queue_answers_503_at_once() {
    let capacity = Capacity::new(1).with_service(ms(400)).with_queue(1);
    let origin = Origin::start_with("127.0.0.1:0", Some(capacity)).unwrap();
    let to = origin.addr();
    let held: Vec<_> = (0..2)
        .map(|_| thread::spawn(move || send(to, "GET", "/held").status))
        .collect();
    until(&origin, |s| s.in_flight == 1 && s.queued == 1);
    let began = Instant::now();
    let refused = send(to, "GET", "/more");
    assert!(began.elapsed() < ms(300), "{:?}", began.elapsed());
    assert_eq!(refused.status, 503);
    assert!(refused.head.contains("cache-control: no-store"));
    assert!(!refused.head.contains("set-cookie"), "{}", refused.head);
    assert!(refused.body.contains("at capacity"), "{}", refused.body);
    // The waiting pages stay outside the capacity: what the room shows meanwhile.
    let page = send(to, "GET", "/__origin/page/busy");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Origin-hosted waiting page: busy"));
    let statuses: Vec<u16> = held.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(statuses, [200, 200]);
    let stats = send(to, "GET", STATS_PATH);
    assert!(stats.head.contains("content-type: application/json"));
    assert_eq!(
        stats.body.trim(),
        r#"{"served":2,"refused":1,"in_flight":0,"queued":0,"capacity":{"n":1,"service_ms":400,"queue":1}}"#
    );
}

#[test]
fn changing_the_capacity_while_it_runs_changes_the_time() {
    let origin =
        Origin::start_with("127.0.0.1:0", Some(Capacity::new(4).with_service(ms(100)))).unwrap();
    let to = origin.addr();
    let last = |answers: Vec<(Duration, Answer)>| {
        assert!(answers.iter().all(|(_, a)| a.status == 200));
        answers.last().unwrap().0
    };
    let wide = last(at_once(to, 4, "/x"));
    assert!(wide >= ms(100) && wide < ms(350), "{wide:?}");
    // One at a time, through the admin path: four rounds.
    let set = send(to, "POST", &format!("{CAPACITY_PATH}?n=1&service_ms=100"));
    assert_eq!(set.status, 200);
    assert_eq!(set.body.trim(), r#"{"n":1,"service_ms":100,"queue":10}"#);
    let narrow = last(at_once(to, 4, "/x"));
    assert!(narrow >= ms(400), "{narrow:?}");
    // Shrunk while all four places are held: those come back one place.
    origin
        .set_capacity(Some(Capacity::new(4).with_service(ms(300))))
        .unwrap();
    let slow = {
        let threads: Vec<_> = (0..4)
            .map(|_| thread::spawn(move || send(to, "GET", "/x").status))
            .collect();
        until(&origin, |s| s.in_flight == 4);
        origin
            .set_capacity(Some(Capacity::new(1).with_service(ms(100))))
            .unwrap();
        threads
    };
    let after = at_once(to, 2, "/y");
    assert!(slow.into_iter().all(|t| t.join().unwrap() == 200));
    let (first, second) = (after[0].0, after[1].0);
    // One at a time once the four are done: the second waited for the first.
    assert!(first >= ms(100), "{first:?}");
    assert!(second >= first + ms(50), "{first:?}, then {second:?}");
    // Unlimited again: at once, as without a capacity.
    let set = send(to, "POST", &format!("{CAPACITY_PATH}?n=unlimited"));
    assert_eq!(set.body.trim(), "null");
    assert_eq!(origin.capacity(), None);
    let free = last(at_once(to, 4, "/x"));
    assert!(free < ms(250), "{free:?}");
}

#[test]
fn a_slow_answer_holds_its_place_for_its_delay_too() {
    let origin =
        Origin::start_with("127.0.0.1:0", Some(Capacity::new(1).with_service(ms(50)))).unwrap();
    let answers = at_once(origin.addr(), 2, &format!("{SLOW_PREFIX}100/x"));
    assert!(answers[0].0 >= ms(150), "{:?}", answers[0].0);
    assert!(answers[1].0 >= ms(300), "{:?}", answers[1].0);
}

#[test]
fn the_admin_path_reads_checks_and_refuses_other_methods() {
    let origin = Origin::start("127.0.0.1:0").unwrap();
    let to = origin.addr();
    let read = send(to, "GET", CAPACITY_PATH);
    assert_eq!((read.status, read.body.trim()), (200, "null"));
    for wrong in ["n=0", "n=two", "service_ms=5", "n=3&speed=1", ""] {
        let r = send(to, "POST", &format!("{CAPACITY_PATH}?{wrong}"));
        assert_eq!(r.status, 400, "{wrong}: {}", r.body);
    }
    assert_eq!(send(to, "DELETE", CAPACITY_PATH).status, 405);
    assert_eq!(origin.capacity(), None);
    let set = send(to, "POST", &format!("{CAPACITY_PATH}?n=3&queue=0"));
    assert_eq!(set.body.trim(), r#"{"n":3,"service_ms":50,"queue":0}"#);
    assert_eq!(
        send(to, "GET", CAPACITY_PATH).body.trim(),
        r#"{"n":3,"service_ms":50,"queue":0}"#
    );
    assert!(origin.set_capacity(Some(Capacity::new(0))).is_err());
    assert!(Origin::start_with("127.0.0.1:0", Some(Capacity::new(0))).is_err());
}

#[test]
fn without_a_capacity_requests_are_answered_at_once_and_counted() {
    let origin = Origin::start("127.0.0.1:0").unwrap();
    let answers = at_once(origin.addr(), 8, "/x");
    assert!(answers.iter().all(|(_, a)| a.status == 200));
    assert!(answers[7].0 < ms(500), "{:?}", answers[7].0);
    let stats = origin.stats();
    assert_eq!((stats.served, stats.refused, stats.capacity), (8, 0, None));
    // The stats and the waiting pages are not counted.
    send(origin.addr(), "GET", "/__origin/page/p");
    let body = send(origin.addr(), "GET", STATS_PATH).body;
    assert_eq!(
        body.trim(),
        r#"{"served":8,"refused":0,"in_flight":0,"queued":0,"capacity":null}"#
    );
}
