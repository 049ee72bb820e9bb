//! Black-box tests of FIFO mode, the pre-queue and the IPv6 prefix binding: the
//! built wasm in Viceroy, the demo origin, real HTTP from several 127.0.0.x
//! visitors (and `::1`). The cutoff is moved by hand, as an operator would.

use crate::{KEEP_PAGE, START_PAGE, assert_logged, assert_logged_but_not};
use demo_origin::ORIGIN_MARKER;
use support::http::Response;
use support::mint;
use support::viceroy_room::{KEY1, Room, RoomSpec, now};

/// The `arr` (Unix ms) and `exp` of a FIFO wait token set on `r`, checked to be
/// signed by key1 for `uid`.
fn fifo_token(r: &Response, uid: &str) -> (String, u64, u64) {
    let value = r.room_cookie().expect("a FIFO wait token");
    let text = mint::open(&value);
    let (signed, sig) = text.split_once("&sig=").unwrap();
    assert_eq!(sig, mint::vcl_sig(KEY1, signed), "{text}");
    let field = |name: &str| mint::number(signed, name);
    assert!(
        signed.starts_with("dec=wait&exp=")
            && signed.contains(&format!("&uid={uid}&kid=key1&arr=")),
        "{signed}"
    );
    (value, field("arr"), field("exp"))
}

fn json(room: &Room, from: u8, cookie: &str) -> serde_json::Value {
    let r = room.get(
        from,
        "/events",
        &[("Accept", "application/json"), ("Cookie", cookie)],
    );
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body))
}

#[test]
fn fifo_admits_in_order_of_arrival_as_the_cutoff_moves_by_hand() {
    let room = Room::start(&[("queueing_method", "fifo")]);
    // Five visitors arrive one after another; each gets a place, signed.
    let before_ms = now() * 1000;
    let mut line = Vec::new();
    for visitor in 2..=6u8 {
        let uid = format!("127.0.0.{visitor}");
        let r = room.get(visitor, "/events", &[]);
        assert!(r.body.contains(START_PAGE), "{}", r.body);
        let (value, arr, exp) = fifo_token(&r, &uid);
        assert!(arr >= before_ms && arr <= now() * 1000 + 999, "arr {arr}");
        // Held five minutes (the default `fifo_hold`) after the request.
        assert!((now() + 295..=now() + 300).contains(&exp), "exp {exp}");
        // The page comes back well inside the hold, never at its end.
        let refresh: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=30).contains(&refresh), "{refresh}");
        line.push((visitor, format!("waiting_room={value}"), arr));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        line.windows(2).all(|w| w[0].2 < w[1].2),
        "places in order: {line:?}"
    );
    assert_logged(&room, &[" cutoff=none path=/events ALERT=fifo-no-cutoff"]);

    // No cutoff yet: everyone keeps waiting, their place held without a new cookie.
    for (visitor, cookie, _) in &line {
        let r = room.get_with_cookie(*visitor, "/events", cookie);
        assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
        assert!(r.all("set-cookie").is_empty());
    }
    let v = json(&room, line[4].0, &line[4].1);
    assert_eq!(v["queueing_method"], "fifo");
    assert_eq!(v["arrived_at"], line[4].2);
    assert_eq!(
        (v["entry_in"].clone(), v["entry_in_known"].clone()),
        (serde_json::Value::Null, false.into())
    );

    // The operator lets the first three in: the cutoff at the third's place.
    room.set_config("fifo_cutoff", &line[2].2.to_string());
    room.set_config("fifo_rate", "1");
    for (i, (visitor, cookie, arr)) in line.iter().enumerate() {
        let r = room.get_with_cookie(*visitor, "/events", cookie);
        let log = room.last_log_line();
        assert!(
            log.contains(&format!(" arr={arr} cutoff={}", line[2].2)),
            "{log}"
        );
        if i < 3 {
            assert!(r.body.contains(ORIGIN_MARKER), "visitor {i}: {}", r.body);
            assert!(
                log.contains("decision=allow")
                    && log.contains("session=new transition=cutoff-reached"),
                "{log}"
            );
            assert!(r.room_cookie().unwrap().len() > 20, "an allow token");
        } else {
            assert!(r.body.contains(KEEP_PAGE), "visitor {i}");
        }
    }
    // The fourth's expected entry: its distance to the cutoff at 1 ms a second.
    let v = json(&room, line[3].0, &line[3].1);
    let ahead = line[3].2 - line[2].2;
    assert_eq!(v["entry_in"], ahead);
    assert_eq!(v["entry_in_known"], true);

    // The line moves on: everyone is in.
    room.set_config("fifo_cutoff", &line[4].2.to_string());
    for (visitor, cookie, _) in &line[3..] {
        assert!(
            room.get_with_cookie(*visitor, "/events", cookie)
                .body
                .contains(ORIGIN_MARKER)
        );
    }
}

#[test]
fn a_lottery_ticket_joins_the_fifo_line_where_it_was_handed_out() {
    let room = Room::start(&[("queueing_method", "fifo"), ("fifo_cutoff", "1")]);
    let exp = now() + 20;
    let vcl = mint::mint(KEY1, "wait", exp, "127.0.0.2", "key1");
    let r = room.get_with_cookie(2, "/events", &format!("waiting_room={vcl}"));
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    let (_, arr, _) = fifo_token(&r, "127.0.0.2");
    assert_eq!(arr, (exp - 60) * 1000);
    assert_logged(&room, &["transition=joined-line"]);
}

#[test]
fn the_pre_queue_gives_an_address_one_place_however_often_it_clears_its_cookies() {
    // An opening at which the two addresses' offsets differ (two share one in 1,000).
    let offset = |uid: &str, opens: u64| mint::prequeue_offset(KEY1, uid, opens);
    let opens = (now() + 3600..)
        .find(|&opens| offset("127.0.0.2", opens) != offset("127.0.0.3", opens))
        .unwrap();
    let room = Room::start(&[
        ("queueing_method", "fifo"),
        ("queue_opens_at", &opens.to_string()),
    ]);
    let first = fifo_token(&room.get(2, "/events", &[]), "127.0.0.2");
    let again = fifo_token(&room.get(2, "/events", &[]), "127.0.0.2");
    let other = fifo_token(&room.get(3, "/events", &[]), "127.0.0.3");
    assert_eq!(first.1, again.1);
    for (uid, (_, arr, exp)) in [("127.0.0.2", &first), ("127.0.0.3", &other)] {
        assert_eq!(*arr, opens * 1000 + offset(uid, opens), "{uid}");
        assert_eq!(*exp, opens + 300);
    }
    assert_ne!(first.1, other.1);
}

#[test]
fn an_ipv6_visitor_is_bound_to_their_network_when_told() {
    for (prefix, uid) in [("64", "::/64"), ("128", "::1")] {
        let room = Room::launch(RoomSpec {
            config: &[("uid_ipv6_prefix", prefix)],
            ipv6: true,
            ..RoomSpec::default()
        });
        let r = room.get_v6("/events", &[]);
        let text = mint::open(&r.room_cookie().unwrap());
        assert!(
            text.contains(&format!("&uid={uid}&kid=key1&")),
            "{prefix}: {text}"
        );
        assert_logged(&room, &[&format!(" uid={uid} ")]);
        // The token reads back from the same network.
        let cookie = format!("waiting_room={}", r.room_cookie().unwrap());
        room.get_v6("/events", &[("Cookie", &cookie)]);
        assert_logged_but_not(&room, &["decision=wait"], &["rejected="]);
        // Outside the room as well: the bypass line names the same uid.
        room.get_v6("/about", &[]);
        let bypass = format!("decision=bypass scope=unprotected-path uid={uid} ");
        assert_logged(&room, &[&bypass]);
    }
}
