//! Admission by capacity at the edge, black-box: the built wasm in Viceroy, the demo
//! origin, real HTTP from 127.0.0.x visitors. Fractional percentages, the
//! controller heartbeat and its fallback, and the origin's release of a session.

use crate::{DENY_PAGE, assert_logged};
use control::record::Record;
use demo_origin::{ORIGIN_MARKER, RELEASE_PREFIX};
use support::mint;
use support::viceroy_room::{KEY1, Room, now};
use waiting_room::admission::decision::{Decision, Session};
use waiting_room::credentials::cookie::DELETE_COOKIE;

fn last_record(room: &Room) -> Record {
    let line = room.last_log_line();
    line.parse()
        .unwrap_or_else(|e| panic!("unreadable log line ({e}): {line}"))
}

#[test]
fn a_fractional_percentage_is_read_logged_and_shown() {
    let room = Room::start(&[("allow_percentage", "0.5")]);
    let r = room.get(2, "/events", &[("Accept", "application/json")]);
    let json: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(json["allow_percentage"], 0.5, "{}", r.body);
    let record = last_record(&room);
    assert_eq!(record.percentage, Some("0.5".parse().unwrap()));
    assert_eq!(record.decision, Some(Decision::Anon));
    assert!(record.t.abs_diff(now()) <= 5, "{record:?}");
    // Text that is not a number still fails open, logged.
    room.set_config("allow_percentage", ".5");
    assert!(room.get(3, "/events", &[]).body.contains(ORIGIN_MARKER));
    assert_logged(&room, &["config_fallback=allow_percentage"]);
}

#[test]
fn a_stale_heartbeat_raises_the_alert_on_every_line_and_applies_the_fallback() {
    let stale = (now() - 1_000).to_string();
    let room = Room::start(&[
        ("allow_percentage", "100"),
        ("allow_percentage_fallback", "0"),
        ("controller_heartbeat", &stale),
    ]);
    // The fallback closes the room: the deny page, not the origin.
    assert!(room.get(2, "/events", &[]).body.contains(DENY_PAGE));
    assert!(last_record(&room).controller_stale);
    // Out of scope too.
    assert!(room.get(2, "/", &[]).body.contains(ORIGIN_MARKER));
    assert!(last_record(&room).controller_stale);

    // A fresh heartbeat: the controller's percentage again, no alert.
    room.set_config("controller_heartbeat", &now().to_string());
    assert!(room.get(2, "/events", &[]).body.contains(ORIGIN_MARKER));
    let record = last_record(&room);
    assert!(!record.controller_stale, "{}", room.last_log_line());

    // Without a fallback the room keeps its percentage (fail static).
    room.set_config("allow_percentage_fallback", "");
    room.set_config("controller_heartbeat", "not a time");
    assert!(room.get(2, "/events", &[]).body.contains(ORIGIN_MARKER));
    assert!(last_record(&room).controller_stale);
}

#[test]
fn the_origin_ends_an_admitted_session_and_the_header_stops_at_the_edge() {
    let protected = format!("/events,{RELEASE_PREFIX}");
    let room = Room::start(&[("allow_percentage", "50"), ("protected_paths", &protected)]);
    let allow = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let cookie = format!("waiting_room={allow}");

    let r = room.get_with_cookie(2, &format!("{RELEASE_PREFIX}done"), &cookie);
    assert!(r.body.contains(ORIGIN_MARKER));
    assert_eq!(
        r.header("waiting-room-release"),
        None,
        "the header reached the visitor"
    );
    assert!(
        r.all("set-cookie").contains(&DELETE_COOKIE),
        "{:?}",
        r.headers
    );
    assert!(r.all("set-cookie").contains(&"demo_origin=1; Path=/"));
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
    let record = last_record(&room);
    assert!(record.released && record.decision == Some(Decision::Allow));
    assert_eq!(record.session, Some(Session::Renewed));

    // An ordinary admitted request renews the session instead.
    let r = room.get_with_cookie(2, "/events", &cookie);
    assert!(r.room_cookie().is_some_and(|c| !c.is_empty()));
    assert!(!last_record(&room).released);
}

#[test]
fn a_release_header_is_ignored_from_visitors_and_outside_the_room() {
    let room = Room::start(&[("allow_percentage", "50")]);
    let allow = mint::mint(KEY1, "allow", now() + 600, "127.0.0.2", "key1");
    let cookie = format!("waiting_room={allow}");
    // A visitor cannot release anyone by sending the header.
    let r = room.get(
        2,
        "/events",
        &[("Cookie", &cookie), ("Waiting-Room-Release", "1")],
    );
    assert!(r.body.contains(ORIGIN_MARKER));
    assert!(!r.all("set-cookie").contains(&DELETE_COOKIE));
    assert!(!last_record(&room).released);
    // Outside the protected paths the origin's header is dropped, nothing else.
    let r = room.get_with_cookie(2, &format!("{RELEASE_PREFIX}x"), &cookie);
    assert!(r.body.contains(ORIGIN_MARKER));
    assert_eq!(r.header("waiting-room-release"), None);
    assert_eq!(r.all("set-cookie"), vec!["demo_origin=1; Path=/"]);
    assert!(!last_record(&room).released);
}
