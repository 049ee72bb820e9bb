//! The project's Viceroy (tools/viceroy-faults), black-box: a request's
//! `viceroy-fail-lookup` / `viceroy-fail-secret` header fails the reads it names, and
//! only those, Viceroy names each one's store and key, the headers never reach the room
//! or the origin, and past a limit a read is refused. `fail_safe` sweeps the room's
//! worst paths with it.

use demo_origin::ORIGIN_MARKER;
use support::faults::{self, FAIL_LOOKUP, FAIL_SECRET, LOOKUP_LIMIT, Read};
use support::mint;
use support::viceroy_room::{Room, RoomSpec, now};

use crate::unreadable;

const SECRET_KEY1: &str = "secret-store-key-one-0123456789abcdef";

#[test]
fn a_failed_lookup_is_named_by_viceroy_and_by_the_room() {
    if !faults::required("faults::a_failed_lookup_is_named_by_viceroy_and_by_the_room") {
        return;
    }
    let room = Room::start(&[("allow_percentage", "100")]);
    let mark = room.output_mark();
    room.get(2, "/events", &[(FAIL_LOOKUP, "1")]);
    let output = room.output_since(mark);
    let failed = faults::lines(&output);
    assert_eq!(failed.len(), 1, "{output}");
    let fault = &failed[0];
    assert_eq!(
        (fault.read, fault.position, fault.refused),
        (Read::Lookup, 1, false)
    );
    assert_eq!(fault.store, "waitingroom_config", "{output}");
    let line = room.log_line_since(mark);
    assert!(
        unreadable(&line).contains(&fault.key),
        "the room does not name {}: {line}",
        fault.key
    );

    // The same request without the header: no fault, no alert, admitted.
    let mark = room.output_mark();
    let r = room.get(2, "/events", &[]);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    let output = room.output_since(mark);
    assert_eq!(faults::lines(&output), [], "{output}");
    assert!(!room.log_line_since(mark).contains("ALERT="), "{output}");

    // A later position: the first lookups succeed, the named one fails.
    let mark = room.output_mark();
    room.get(3, "/events", &[(FAIL_LOOKUP, "2")]);
    let output = room.output_since(mark);
    let failed = faults::lines(&output);
    assert_eq!(failed.len(), 1, "{output}");
    assert_eq!(failed[0].position, 2, "{output}");
    assert!(unreadable(&room.log_line_since(mark)).contains(&failed[0].key));
}

#[test]
fn a_failed_secret_read_is_the_signing_key() {
    if !faults::required("faults::a_failed_secret_read_is_the_signing_key") {
        return;
    }
    let room = Room::launch(RoomSpec {
        secret_keys: Some(&[("key1", SECRET_KEY1)]),
        ..RoomSpec::default()
    });
    let token = mint::mint(SECRET_KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let cookie = format!("waiting_room={token}");
    let mark = room.output_mark();
    room.get(2, "/events", &[("Cookie", &cookie), (FAIL_SECRET, "1")]);
    let output = room.output_since(mark);
    let failed = faults::lines(&output);
    assert_eq!(failed.len(), 1, "{output}");
    let fault = &failed[0];
    assert_eq!((fault.read, fault.position), (Read::Secret, 1));
    assert_eq!(
        (fault.store.as_str(), fault.key.as_str()),
        ("waitingroom_signingkeys", "key1")
    );
    assert_eq!(unreadable(&room.log_line_since(mark)), ["signing-key"]);
}

#[test]
fn the_headers_never_reach_the_room_or_the_origin() {
    if !faults::required("faults::the_headers_never_reach_the_room_or_the_origin") {
        return;
    }
    let room = Room::start(&[]);
    // Positions past every read: nothing fails, and `/` is forwarded as it came.
    let mark = room.output_mark();
    let r = room.get(2, "/", &[(FAIL_LOOKUP, "90,91"), (FAIL_SECRET, "90")]);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    assert!(
        !r.body.to_ascii_lowercase().contains("viceroy-fail"),
        "the origin saw the headers:\n{}",
        r.body
    );
    assert_eq!(faults::lines(&room.output_since(mark)), []);
}

#[test]
fn past_the_limit_a_lookup_is_refused() {
    if !faults::required("faults::past_the_limit_a_lookup_is_refused") {
        return;
    }
    let room = Room::launch(RoomSpec {
        viceroy_env: &[(LOOKUP_LIMIT, "1")],
        ..RoomSpec::default()
    });
    let mark = room.output_mark();
    room.get(2, "/events", &[]);
    let output = room.output_since(mark);
    let refused = faults::lines(&output);
    assert!(!refused.is_empty(), "{output}");
    assert!(
        refused.iter().all(|l| l.refused && l.read == Read::Lookup),
        "{output}"
    );
    assert_eq!(refused[0].position, 2, "{output}");
    assert!(output.contains("(limit 1)"), "{output}");
    let line = room.log_line_since(mark);
    assert!(unreadable(&line).contains(&refused[0].key), "{line}");
}
