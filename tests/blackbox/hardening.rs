//! Black-box tests of the hardening: keys from a Secret Store, weak keys, and an
//! origin that is slow or failing. The built wasm in Viceroy, real HTTP.

use crate::{START_PAGE, UNAVAILABLE_PAGE, assert_logged};
use demo_origin::ORIGIN_MARKER;
use support::mint;
use support::viceroy_room::{KEY1, Room, RoomSpec, now};

const SECRET_KEY1: &str = "secret-store-key-one-0123456789abcdef";

fn allow_cookie(key: &str) -> String {
    let token = mint::mint(key, "allow", now() + 600, "127.0.0.2", "key1");
    format!("waiting_room={token}")
}

#[test]
fn keys_come_from_the_secret_store_when_there_is_one() {
    let room = Room::launch(RoomSpec {
        secret_keys: Some(&[("key1", SECRET_KEY1)]),
        ..RoomSpec::default()
    });
    // Signed with the Secret Store's key1: admitted, renewed with it.
    let r = room.get_with_cookie(2, "/events", &allow_cookie(SECRET_KEY1));
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    let renewed = mint::open(&r.room_cookie().unwrap());
    let (signed, sig) = renewed.split_once("&sig=").unwrap();
    assert_eq!(sig, mint::vcl_sig(SECRET_KEY1, signed));
    // The config store of the same name is not consulted: its key1 signs nothing.
    let r = room.get_with_cookie(2, "/events", &allow_cookie(KEY1));
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_logged(&room, &["rejected=bad-signature"]);
}

#[test]
fn a_weak_key_is_accepted_and_logged() {
    let room = Room::launch(RoomSpec {
        secret_keys: Some(&[("key1", "short")]),
        ..RoomSpec::default()
    });
    let r = room.get_with_cookie(2, "/events", &allow_cookie("short"));
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    let line = room.last_log_line();
    assert_eq!(line.matches("WARN=weak-key kid=key1").count(), 1, "{line}");
    assert!(
        !line.contains("short"),
        "the key leaked into the log: {line}"
    );
}

#[test]
fn an_origin_slower_than_its_timeout_gives_the_clean_503() {
    let room = Room::launch(RoomSpec {
        config: &[("protected_paths", "/__origin/")],
        first_byte_timeout_ms: Some(300),
        ..RoomSpec::default()
    });
    // Admitted, but the origin takes 3 s to answer and the backend allows 0.3 s.
    let r = room.get_with_cookie(2, "/__origin/slow/3000/x", &allow_cookie(KEY1));
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains(UNAVAILABLE_PAGE));
    assert_eq!(r.header("retry-after"), Some("30"));
    assert!(mint::open(&r.room_cookie().unwrap()).starts_with("dec=allow&"));
    let line = room.last_log_line();
    assert!(line.contains(" origin_error="), "{line}");
    assert!(!line.contains("origin_ms="), "a timeout is no time: {line}");
}

#[test]
fn an_origin_5xx_becomes_the_clean_503_inside_the_room_only() {
    let room = Room::start(&[("protected_paths", "/__origin/status/")]);
    let r = room.get_with_cookie(2, "/__origin/status/502/x", &allow_cookie(KEY1));
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains(UNAVAILABLE_PAGE), "{}", r.body);
    assert!(!r.body.contains(ORIGIN_MARKER));
    assert!(mint::open(&r.room_cookie().unwrap()).starts_with("dec=allow&"));
    assert_eq!(r.header("cache-control"), Some("no-store, private"));
    // The origin's status and its time, though the visitor got the room's page.
    assert_logged(&room, &[" origin_ms=", " origin_status=502"]);
    // A 4xx is the origin's business.
    let r = room.get_with_cookie(2, "/__origin/status/404/x", &allow_cookie(KEY1));
    assert_eq!(r.status, 404);
    assert!(r.body.contains(ORIGIN_MARKER));
    // Outside the room the origin's answer goes back untouched.
    room.set_config("enabled", "false");
    let r = room.get(2, "/__origin/status/500/x", &[]);
    assert_eq!(r.status, 500);
    assert!(r.body.contains(ORIGIN_MARKER));
}

/// Sends a request line with `target` exactly as written (no client library
/// rewrites it) and returns the whole response as text.
fn raw_get(room: &Room, target: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(room.addr).expect("connect to Viceroy");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        room.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn the_origin_receives_the_path_the_room_decided_on() {
    let room = Room::start(&[("bypass_paths", "/events/static/")]);
    // Dot segments and backslashes: decided on as resolved, and forwarded so.
    for (target, decided) in [
        ("/events/static//../checkout1", "/events/static/checkout1"),
        ("/events/static/a\\b", "/events/static/a/b"),
        (
            "/events/static/./x/%2e%2e/app.css",
            "/events/static/app.css",
        ),
    ] {
        let answer = raw_get(&room, target);
        assert!(answer.contains(ORIGIN_MARKER), "{target}: {answer}");
        assert!(
            answer.contains(&format!("GET {decided} HTTP/1.1")),
            "{target}: the origin saw another path: {answer}"
        );
        let line = room.last_log_line();
        assert!(
            line.contains(&format!(
                "decision=bypass scope=bypass-path uid=127.0.0.1 path={decided}"
            )),
            "{line}"
        );
    }
    // An encoded separator some origins decode out of the prefix: no bypass.
    let answer = raw_get(&room, "/events/static/..%2fcheckout1");
    assert!(!answer.contains(ORIGIN_MARKER), "{answer}");
    assert!(answer.contains(START_PAGE), "{answer}");
    assert_logged(&room, &["decision=anon"]);
    // Read into the room by some origins and outside it by others: refused.
    for target in ["//checkout", "/x/..%2fevents", "/%65vents"] {
        let answer = raw_get(&room, target);
        assert!(answer.starts_with("HTTP/1.1 400"), "{target}: {answer}");
        assert!(!answer.contains(ORIGIN_MARKER), "{target}: {answer}");
        assert_logged(
            &room,
            &["decision=refused reason=ambiguous-path uid=127.0.0.1 path="],
        );
    }
}

/// A store written in the earlier layout (every setting a key of its own, no
/// `settings`), as an upgrade finds it: the room keeps its protected paths and
/// holds them, never reads them as the defaults, and every line says so.
#[test]
fn an_upgraded_store_of_the_earlier_layout_never_opens_the_room() {
    let room = Room::start(&[("allow_percentage", "100")]);
    let path = room.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut store: std::collections::BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).unwrap();
    let members = store.remove("settings").unwrap_or_default();
    let members: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(members.as_str().unwrap_or("{}")).unwrap();
    store.extend(members);
    store.insert("protected_paths".into(), "/shop".into());
    std::fs::write(&path, serde_json::to_string(&store).unwrap()).unwrap();

    // A newcomer to the old room's path waits, and a due wait token is held
    // though the percentage admits all.
    let r = room.get(2, "/shop/launch", &[]);
    assert!(r.body.contains(START_PAGE), "{}", r.body);
    assert_logged(&room, &["decision=anon", "ALERT=old-layout"]);
    let due = mint::mint(KEY1, "wait", now() - 1, "127.0.0.5", "key1");
    let r = room.get_with_cookie(5, "/shop/launch", &format!("waiting_room={due}"));
    assert!(!r.body.contains(ORIGIN_MARKER), "{}", r.body);
    assert_logged(
        &room,
        &[
            "decision=re-wait",
            "transition=queue-all",
            "ALERT=old-layout",
        ],
    );
    // A live session goes on: nobody loses a place.
    let token = mint::mint(KEY1, "allow", now() + 600, "127.0.0.3", "key1");
    let r = room.get_with_cookie(3, "/shop/launch", &format!("waiting_room={token}"));
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    // The defaults' paths are not the operator's: outside the room, and said so.
    let r = room.get(4, "/events", &[]);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    assert_logged(&room, &["decision=bypass", "ALERT=old-layout"]);
}
