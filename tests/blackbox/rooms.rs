//! Black-box tests of several rooms on one service: the built wasm in Viceroy, a
//! real demo origin, real HTTP from several 127.0.0.x visitors.

use demo_origin::ORIGIN_MARKER;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::http::Response;
use support::mint;

use crate::{START_PAGE, assert_logged, assert_logged_but_not, origin_saw_cookie};
use support::controller::Controller;
use support::viceroy_room::{KEY1, Room, RoomSpec, now};

const ROOMS: &str = r#"{"drops": {"paths": ["/drops/"]}, "vip": {"paths": ["/drops/vip/"]}}"#;
const DROPS: &str = r#"{"enabled": true, "allow_percentage": 50, "waiting_status": 503}"#;
const VIP: &str = r#"{"enabled": true, "allow_percentage": "12.5"}"#;

/// The service room on `/events` and `/drops/`, the rooms `drops` and `vip` inside.
fn service_with_rooms(drops_page: &str) -> Room {
    Room::launch(RoomSpec {
        config: &[
            ("protected_paths", "/events,/drops/"),
            ("allow_percentage", "40"),
            ("rooms", ROOMS),
            ("room.drops", DROPS),
            ("room.vip", VIP),
        ],
        pages: &[("room.drops.startwaiting", drops_page)],
        ..RoomSpec::default()
    })
}

/// The value of the cookie `name` the response sets, if it sets one.
fn cookie_set(r: &Response, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    r.all("set-cookie").into_iter().find_map(|v| {
        v.strip_prefix(&prefix)
            .map(|rest| rest.split(';').next().unwrap().to_string())
    })
}

#[test]
fn two_rooms_on_one_service_have_their_own_settings_pages_and_cookies() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));

    // `/drops/` is the service room's prefix too: the named room wins the tie.
    let drops = room.get(11, "/drops/1", &[]);
    assert_eq!(drops.status, 503, "drops' own waiting_status");
    assert!(drops.body.contains("Drops start here"), "{}", drops.body);
    assert!(cookie_set(&drops, "waiting_room_drops").is_some());
    assert!(cookie_set(&drops, "waiting_room").is_none());
    assert_logged(&room, &[" uid=127.0.0.11 room=drops p=50 "]);

    // The most specific prefix wins: `/drops/vip/` is vip's.
    let vip = room.get(12, "/drops/vip/1", &[]);
    assert!(vip.body.contains(START_PAGE), "vip has no page of its own");
    assert!(cookie_set(&vip, "waiting_room_vip").is_some());
    assert_logged(&room, &[" room=vip p=12.5 "]);

    // The service room keeps its own keys, cookie and log line.
    let events = room.get(13, "/events/1", &[]);
    assert!(cookie_set(&events, "waiting_room").is_some());
    assert_logged_but_not(&room, &[" uid=127.0.0.13 p=40 "], &["room="]);

    // Outside every room: a bypass, as before.
    let about = room.get(14, "/about", &[]);
    assert!(about.body.contains(ORIGIN_MARKER));
    assert_logged(
        &room,
        &["decision=bypass scope=unprotected-path uid=127.0.0.14 path=/about"],
    );
}

#[test]
fn a_cookie_of_one_room_is_no_cookie_in_another() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));
    let exp = now() + 600;
    let uid = "127.0.0.21";
    let drops_allow = mint::mint_in_room(KEY1, "drops", "allow", exp, uid, "key1");

    // In its own room the token admits, and the origin never sees it.
    let admitted =
        room.get_with_cookie(21, "/drops/1", &format!("waiting_room_drops={drops_allow}"));
    assert_eq!(origin_saw_cookie(&admitted.body), None);
    assert_logged(&room, &["decision=allow uid=127.0.0.21 room=drops"]);

    // Presented to another room, or to the service room, it is no token of theirs.
    for (path, cookie) in [
        ("/drops/vip/1", format!("waiting_room_vip={drops_allow}")),
        ("/events/1", format!("waiting_room={drops_allow}")),
    ] {
        let r = room.get_with_cookie(21, path, &cookie);
        assert!(r.body.contains(START_PAGE), "{path}: {}", r.body);
        assert_logged(&room, &["decision=anon", "rejected=bad-signature"]);
    }
    // And a service room token is none of drops'.
    let service_allow = mint::mint(KEY1, "allow", exp, uid, "key1");
    let r = room.get_with_cookie(
        21,
        "/drops/2",
        &format!("waiting_room_drops={service_allow}"),
    );
    assert!(r.body.contains("Drops start here"));
    assert_logged(&room, &["rejected=bad-signature"]);

    // The origin sees none of the service's room cookies, and every other cookie.
    let r = room.get_with_cookie(
        22,
        "/about",
        "a=1; waiting_room_drops=x; waiting_room=y; waiting_room_vip=z; waiting_room_other=o",
    );
    assert_eq!(
        origin_saw_cookie(&r.body).as_deref(),
        Some("a=1; waiting_room_other=o")
    );
}

#[test]
fn a_bad_index_or_room_value_fails_safe_and_says_so() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));
    // An index that does not parse: the service room alone, as without rooms.
    room.set_config("rooms", "{oops");
    let r = room.get(31, "/drops/1", &[]);
    assert!(cookie_set(&r, "waiting_room").is_some());
    assert_logged_but_not(&room, &["config_fallback=rooms"], &["room="]);

    // A room whose value does not parse holds everyone: nobody new gets in.
    room.set_config("rooms", ROOMS);
    room.set_config("room.drops", "{\"enabled\": tru");
    let r = room.get(32, "/drops/1", &[]);
    assert!(!r.body.contains(ORIGIN_MARKER));
    assert_logged(
        &room,
        &[
            "decision=anon uid=127.0.0.32 room=drops",
            "config_fallback=room",
        ],
    );
}

#[test]
fn the_controllers_keys_for_a_room_win_over_its_value_live() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));
    room.get(41, "/drops/1", &[]);
    assert_logged(&room, &[" room=drops p=50 "]);
    room.set_config("room.drops.allow_percentage", "7.5");
    room.get(42, "/drops/1", &[]);
    assert_logged(&room, &[" room=drops p=7.5 "]);
    // The service room's percentage is its own.
    room.get(43, "/events/1", &[]);
    assert_logged(&room, &[" p=40 "]);
}

#[test]
fn bypass_rules_send_staff_and_assets_to_the_origin_and_bad_rules_are_ignored() {
    let room = Room::launch(RoomSpec {
        config: &[
            ("protected_paths", "/events"),
            ("bypass_addresses", "127.0.0.54"),
            ("rooms", ROOMS),
            (
                "room.drops",
                r#"{"enabled": true, "allow_percentage": 50,
                    "bypass_addresses": ["127.0.0.51", "10.0.0.0/8", "127.0.0.300", "0.0.0.0/0"],
                    "bypass_paths": ["/drops/static/", "/"]}"#,
            ),
            ("room.vip", VIP),
        ],
        ..RoomSpec::default()
    });
    // By address: forwarded, without the room's cookie.
    let r = room.get_with_cookie(51, "/drops/1", "waiting_room_drops=x; a=1");
    assert_eq!(origin_saw_cookie(&r.body).as_deref(), Some("a=1"));
    let line = room.last_log_line();
    assert!(
        line.contains(
            "decision=bypass scope=bypass-address uid=127.0.0.51 room=drops path=/drops/1"
        ),
        "{line}"
    );
    // By path inside the room.
    let r = room.get(52, "/drops/static/app.css", &[]);
    assert!(r.body.contains(ORIGIN_MARKER));
    assert_logged(&room, &["scope=bypass-path uid=127.0.0.52 room=drops"]);
    // Nobody else: the bad rules (an address that is none, a block of everyone, a
    // path over the whole room) are ignored and named.
    let r = room.get(53, "/drops/1", &[]);
    assert!(r.body.contains(START_PAGE));
    assert_logged(
        &room,
        &[
            "decision=anon uid=127.0.0.53 room=drops",
            "config_fallback=bypass_addresses,bypass_paths",
        ],
    );
    // Rules are per room: vip has none, the service room its own.
    room.get(51, "/drops/vip/1", &[]);
    assert_logged(&room, &["decision=anon uid=127.0.0.51 room=vip"]);
    room.get(54, "/events/1", &[]);
    assert_logged(
        &room,
        &["decision=bypass scope=bypass-address uid=127.0.0.54 path=/events/1"],
    );
}

#[test]
fn queue_all_holds_newcomers_and_draws_but_not_sessions() {
    let room = Room::launch(RoomSpec {
        config: &[
            ("rooms", ROOMS),
            (
                "room.drops",
                r#"{"enabled": true, "allow_percentage": 100, "queue_all": true}"#,
            ),
        ],
        ..RoomSpec::default()
    });
    let t = now();
    // A newcomer waits, though the room is open at 100 %.
    let r = room.get(61, "/drops/1", &[]);
    assert!(r.body.contains(START_PAGE));
    assert!(cookie_set(&r, "waiting_room_drops").is_some());
    assert_logged(&room, &["decision=anon uid=127.0.0.61 room=drops p=100"]);
    // A live session goes on.
    let session = mint::mint_in_room(KEY1, "drops", "allow", t + 600, "127.0.0.62", "key1");
    let r = room.get_with_cookie(62, "/drops/1", &format!("waiting_room_drops={session}"));
    assert!(r.body.contains(ORIGIN_MARKER));
    // A wait token due for its draw is not drawn: it waits on with a new token.
    let due = mint::mint_in_room(KEY1, "drops", "wait", t - 2, "127.0.0.63", "key1");
    let cookie = format!("waiting_room_drops={due}");
    let r = room.get_with_cookie(63, "/drops/1", &cookie);
    assert!(!r.body.contains(ORIGIN_MARKER));
    let renewed = cookie_set(&r, "waiting_room_drops").expect("a new wait token");
    assert!(mint::open(&renewed).starts_with("dec=wait&"));
    assert_logged(
        &room,
        &["decision=re-wait uid=127.0.0.63 room=drops p=100 transition=queue-all"],
    );
    // Lifted live: the same token is admitted.
    room.set_config(
        "room.drops",
        r#"{"enabled": true, "allow_percentage": 100}"#,
    );
    let r = room.get_with_cookie(63, "/drops/1", &cookie);
    assert!(r.body.contains(ORIGIN_MARKER));
}

#[test]
fn signed_passes_let_staff_and_probes_through_their_room_only() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));
    let t = now();
    let pass = mint::mint_pass(KEY1, "drops", t - 10, t + 3600, "key1");

    // A link sets the pass cookie and sends the visitor to the URL without it.
    let r = room.get(71, &format!("/drops/1?a=1&waiting_pass={pass}"), &[]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/drops/1?a=1"));
    let set = cookie_set(&r, "waiting_pass_drops").expect("the pass cookie");
    assert_eq!(set, pass);
    assert_logged(
        &room,
        &["decision=bypass scope=pass uid=127.0.0.71 room=drops path=/drops/1 pass="],
    );
    // The cookie, then the header, let the holder through; the origin sees neither.
    let r = room.get_with_cookie(71, "/drops/1", &format!("waiting_pass_drops={pass}; a=1"));
    assert_eq!(origin_saw_cookie(&r.body).as_deref(), Some("a=1"));
    let r = room.get(72, "/drops/2", &[("waiting-room-pass", &pass)]);
    assert!(r.body.contains(ORIGIN_MARKER));
    assert_logged(&room, &["scope=pass uid=127.0.0.72 room=drops"]);

    // Refused: another room's, expired, forged, and (below) revoked; each waits as
    // without a pass and the log says why.
    let expired = mint::mint_pass(KEY1, "drops", t - 100, t - 1, "key1");
    let service = mint::mint_pass(KEY1, "", t - 10, t + 3600, "key1");
    let forged = mint::mint_pass(
        "not-the-key-0123456789abcdef0123456789",
        "drops",
        t - 10,
        t + 3600,
        "key1",
    );
    for (path, value, why) in [
        ("/drops/vip/1", pass.as_str(), "other-room"),
        ("/drops/1", expired.as_str(), "expired"),
        ("/drops/1", service.as_str(), "other-room"),
        ("/drops/1", forged.as_str(), "bad-signature"),
        ("/drops/1", "garbage", "malformed"),
    ] {
        let r = room.get(73, path, &[("waiting-room-pass", value)]);
        assert!(!r.body.contains(ORIGIN_MARKER), "{why}");
        let line = room.last_log_line();
        assert!(
            line.contains("decision=anon") && line.ends_with(&format!("pass_refused={why}")),
            "{line}"
        );
    }
    // The service room's own pass works there.
    let r = room.get(74, "/events/1", &[("waiting-room-pass", &service)]);
    assert!(r.body.contains(ORIGIN_MARKER));

    // Revoked all at once: passes issued before `passes_not_before`.
    room.set_config(
        "room.drops",
        &DROPS.replace('}', &format!(", \"passes_not_before\": {}}}", t)),
    );
    let r = room.get(75, "/drops/1", &[("waiting-room-pass", &pass)]);
    assert!(!r.body.contains(ORIGIN_MARKER));
    assert!(room.last_log_line().ends_with("pass_refused=revoked"));
    let fresh = mint::mint_pass(KEY1, "drops", t, t + 60, "key1");
    let r = room.get(75, "/drops/1", &[("waiting-room-pass", &fresh)]);
    assert!(r.body.contains(ORIGIN_MARKER));
}

/// Drops' value with one event, `times` its pre-queue, start and end.
fn drops_with_event(times: (u64, u64, u64), after_end: &str) -> String {
    format!(
        r#"{{"enabled": true, "allow_percentage": 50, "events": [{{"name": "drop-1",
            "prequeue_start": {}, "start": {}, "end": {}, "after_end": "{after_end}",
            "settings": {{"allow_percentage": 100}}}}]}}"#,
        times.0, times.1, times.2
    )
}

#[test]
fn an_event_holds_its_pre_queue_then_opens_then_ends_while_visitors_wait() {
    let t = now();
    let event_page = mint::encode("<p>Drop one is coming</p>");
    let room = Room::launch(RoomSpec {
        config: &[
            ("rooms", ROOMS),
            (
                "room.drops",
                &drops_with_event((t - 60, t + 3600, t + 7200), "ended"),
            ),
        ],
        // The event's own page, over the room's built-in one.
        pages: &[("room.drops.event.drop-1.startwaiting", &event_page)],
        ..RoomSpec::default()
    });
    let due = mint::mint_in_room(KEY1, "drops", "wait", t - 2, "127.0.0.81", "key1");
    let waiting = format!("waiting_room_drops={due}");

    // Pre-queue: a newcomer waits (on the event's page), a token due for its draw
    // is not drawn.
    let r = room.get(82, "/drops/1", &[]);
    assert!(r.body.contains("Drop one is coming"), "{}", r.body);
    assert_logged(
        &room,
        &["decision=anon uid=127.0.0.82 room=drops event=drop-1 p=100"],
    );
    let r = room.get_with_cookie(81, "/drops/1", &waiting);
    assert!(!r.body.contains(ORIGIN_MARKER));
    assert_logged(
        &room,
        &["room=drops event=drop-1 p=100 transition=queue-all"],
    );

    // The start moves into the past: the event's settings apply, the same visitor is let in.
    room.set_config(
        "room.drops",
        &drops_with_event((t - 60, t - 5, t + 7200), "ended"),
    );
    let r = room.get_with_cookie(81, "/drops/1", &waiting);
    assert!(r.body.contains(ORIGIN_MARKER));
    let session = cookie_set(&r, "waiting_room_drops").expect("an allow token");
    assert!(mint::open(&session).starts_with("dec=allow&"));
    assert_logged(
        &room,
        &["decision=allow uid=127.0.0.81 room=drops event=drop-1"],
    );

    // The end moves into the past: the ended page, the session over.
    room.set_config(
        "room.drops",
        &drops_with_event((t - 60, t - 5, t - 1), "ended"),
    );
    let r = room.get_with_cookie(81, "/drops/1", &format!("waiting_room_drops={session}"));
    assert!(r.body.contains("This event has ended"), "{}", r.body);
    assert!(cookie_set(&r, "waiting_room_drops").is_some_and(|v| v == "deleted"));
    let line = room.last_log_line();
    assert!(
        line.contains("decision=deny uid=127.0.0.81 room=drops p=0")
            && line.ends_with("event_ended=drop-1"),
        "{line}"
    );

    // Or the room returns to its own settings.
    room.set_config(
        "room.drops",
        &drops_with_event((t - 60, t - 5, t - 1), "resume"),
    );
    room.get(83, "/drops/1", &[]);
    assert_logged_but_not(
        &room,
        &["decision=anon uid=127.0.0.83 room=drops p=50 "],
        &["event"],
    );

    // A schedule that does not hold together is ignored, and the line says so.
    room.set_config(
        "room.drops",
        &drops_with_event((t - 60, t + 10, t - 1), "resume"),
    );
    room.get(84, "/drops/1", &[]);
    assert_logged(&room, &[" p=50 ", "config_fallback=events"]);
}

/// The config store's string values.
fn stored(room: &Room) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(room.config_path()).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_rooms_controller_writes_its_own_keys_and_the_room_follows_them() {
    let mut room = Room::launch(RoomSpec {
        config: &[
            ("allow_percentage", "40"),
            ("rooms", ROOMS),
            (
                "room.drops",
                r#"{"enabled": true, "allow_percentage": 50, "wait_period_duration": 2}"#,
            ),
            ("room.vip", VIP),
        ],
        pipe_stdout: true,
        ..RoomSpec::default()
    });
    let controller = Controller::start(
        &mut room,
        &[
            "--room",
            "drops",
            "--target-per-minute",
            "30",
            "--wait-period",
            "2",
            "--tick",
            "1",
            "--start",
            "2",
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while stored(&room)
        .get("room.drops.allow_percentage")
        .map(String::as_str)
        != Some("2")
    {
        assert!(
            Instant::now() < deadline,
            "no write: {}\n{:?}",
            controller.output(),
            stored(&room)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let store = stored(&room);
    assert!(store.contains_key("room.drops.controller_heartbeat"));
    // The service room's keys and the room's own value are the operator's, untouched.
    assert_eq!(store["allow_percentage"], "40");
    assert!(!store.contains_key("controller_heartbeat"));
    assert!(store["room.drops"].contains("\"allow_percentage\": 50"));
    // The edge follows the controller's key for drops, and only for drops.
    let percentage = |from: u8, path: &str| {
        let r = room.get(from, path, &[("accept", "application/json")]);
        let status: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        status["allow_percentage"].to_string()
    };
    assert_eq!(percentage(91, "/drops/1"), "2");
    assert_eq!(percentage(92, "/events/1"), "40");
    assert_eq!(percentage(93, "/drops/vip/1"), "12.5");
    let out = controller.output();
    assert!(out.contains("room drops"), "{out}");
}

#[test]
fn wrctl_pass_mint_prints_a_link_the_room_honours() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));
    let keys = room.config_path().with_file_name("keys.json");
    let base = format!("http://{}/drops/1?a=1", room.addr);
    let out = std::process::Command::new(support::controller::wrctl_path())
        .args(["pass", "mint", "--keys"])
        .arg(&keys)
        .args([
            "--kid", "key1", "--room", "drops", "--until", "+600", "--url", &base, "--note", "test",
        ])
        .output()
        .unwrap();
    let link = String::from_utf8(out.stdout).unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let path = link
        .trim()
        .strip_prefix(&format!("http://{}", room.addr))
        .unwrap();
    let r = room.get(95, path, &[]);
    assert_eq!(
        (r.status, r.header("location")),
        (302, Some("/drops/1?a=1"))
    );
    let id = said.split_whitespace().nth(2).unwrap();
    assert!(
        room.last_log_line().ends_with(&format!(
            "scope=pass uid=127.0.0.95 room=drops path=/drops/1 pass={id}"
        )),
        "{said}"
    );
    // It is drops' only.
    let pass = path.split("waiting_pass=").nth(1).unwrap();
    room.get(95, "/drops/vip/1", &[("waiting-room-pass", pass)]);
    assert!(room.last_log_line().ends_with("pass_refused=other-room"));
}

#[test]
fn built_in_pages_speak_the_visitors_language_or_the_rooms() {
    let room = Room::launch(RoomSpec {
        config: &[
            ("rooms", ROOMS),
            (
                "room.drops",
                r#"{"enabled": true, "allow_percentage": 50, "page_language": "fr"}"#,
            ),
            ("room.vip", VIP),
        ],
        ..RoomSpec::default()
    });
    let r = room.get(
        96,
        "/drops/vip/1",
        &[("accept-language", "de-CH, fr;q=0.8")],
    );
    assert!(
        r.body.contains("<html lang=\"de\">") && r.body.contains("Sie sind im Warteraum"),
        "{}",
        r.body
    );
    let r = room.get(97, "/drops/vip/1", &[("accept-language", "ja, zh")]);
    assert!(r.body.contains("<html lang=\"en\">") && r.body.contains(START_PAGE));
    // Drops forces French, whatever the visitor asks for.
    let r = room.get(98, "/drops/1", &[("accept-language", "de")]);
    assert!(
        r.body.contains("<html lang=\"fr\">")
            && r.body.contains("Vous êtes dans la salle d’attente"),
        "{}",
        r.body
    );
}

#[test]
fn a_room_scoped_to_a_host_takes_that_hosts_requests_only() {
    let room = Room::launch(RoomSpec {
        config: &[
            ("protected_paths", "/checkout"),
            (
                "rooms",
                r#"{"shop": {"hosts": ["shop.example"], "paths": ["/checkout"]}}"#,
            ),
            ("room.shop", r#"{"enabled": true, "allow_percentage": 30}"#),
        ],
        ..RoomSpec::default()
    });
    room.get(101, "/checkout/pay", &[("host", "Shop.Example:443")]);
    assert_logged(&room, &["uid=127.0.0.101 room=shop p=30 "]);
    room.get(102, "/checkout/pay", &[("host", "www.example")]);
    assert_logged_but_not(&room, &["uid=127.0.0.102 p=50 "], &["room="]);
}

#[test]
fn the_origin_never_sees_a_pass_and_a_stale_link_does_not_hide_a_good_cookie() {
    let room = service_with_rooms(&mint::encode("<p>Drops start here</p>"));
    let t = now();
    let pass = mint::mint_pass(KEY1, "drops", t - 10, t + 600, "key1");
    // A probe's header is not forwarded.
    let r = room.get(111, "/drops/1", &[("waiting-room-pass", &pass)]);
    assert!(r.body.contains(ORIGIN_MARKER));
    assert!(
        !r.body.to_ascii_lowercase().contains("waiting-room-pass"),
        "{}",
        r.body
    );
    // Outside every room a link's parameter is not forwarded either; the rest is.
    let r = room.get(112, &format!("/about?a=1&waiting_pass={pass}&b=2"), &[]);
    assert!(
        r.body.contains("GET /about?a=1&amp;b=2 HTTP/1.1"),
        "{}",
        r.body
    );
    // An expired link with a good pass cookie: the cookie lets the holder through.
    let stale = mint::mint_pass(KEY1, "drops", t - 100, t - 1, "key1");
    let r = room.get_with_cookie(
        113,
        &format!("/drops/1?waiting_pass={stale}"),
        &format!("waiting_pass_drops={pass}"),
    );
    assert!(
        r.body.contains(ORIGIN_MARKER) && r.body.contains("GET /drops/1 HTTP/1.1"),
        "{}",
        r.body
    );
    assert_logged(&room, &["scope=pass uid=127.0.0.113 room=drops"]);
    // The expired link alone: refused, and its page does not present it again at
    // every refresh (the rest of the query stays).
    let r = room.get(114, &format!("/drops/1?a=1&waiting_pass={stale}"), &[]);
    assert!(r.body.contains("Drops start here"), "{}", r.body);
    let refresh = r.header("refresh").unwrap();
    assert!(refresh.ends_with("; url=/drops/1?a=1"), "{refresh}");
    assert_logged(&room, &["pass_refused="]);
}
