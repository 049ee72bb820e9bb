//! Identity from the site's login, on the built wasm in Viceroy: people behind one
//! address each get their own draw, one person on several addresses holds one place,
//! every bad token gets its documented outcome, rooms for members send the others to
//! sign in, and an audience's room refuses the rest.

use demo_origin::ORIGIN_MARKER;
use support::http::Response;
use support::logins::{self, KIDS};
use support::mint;
use support::viceroy_room::{KEY1, Room, RoomSpec, now};
use waiting_room::credentials::login_mint::mint as mint_login;

use crate::{START_PAGE, wait_token_wins};

const SIGN_IN: &str = "https://shop.example/login";
/// A percentage that admits nobody a test can wait for (once in 100,000 draws).
const NOBODY: &str = "0.001";

/// A room whose identity is the login of [`logins`], with `extra` settings.
fn login_room(extra: &[(&str, &str)]) -> Room {
    let members = logins::settings_members();
    let mut config: Vec<(&str, &str)> = members.iter().map(|(k, v)| (*k, v.as_str())).collect();
    config.extend_from_slice(extra);
    Room::launch(RoomSpec {
        config: &config,
        login_secrets: Some(&[(KIDS[2], logins::HS256_SECRET)]),
        ..RoomSpec::default()
    })
}

/// Person `sub`'s login token, under the `i % 3`-th key.
fn login_of(sub: &str, i: usize) -> String {
    let keys = logins::keys();
    mint_login(&logins::claims(sub, now()), &keys[i % 3], KIDS[i % 3])
}

/// The room token a response sets, opened: `dec=…&exp=…&uid=…`.
fn room_token(r: &Response) -> Option<String> {
    r.all("set-cookie").into_iter().find_map(|header| {
        let value = header.strip_prefix("waiting_room=")?.split(';').next()?;
        mint::try_open(value)
    })
}

/// The room token a response sets, as the cookie holds it.
fn cookie_value(r: &Response) -> String {
    r.all("set-cookie")
        .into_iter()
        .find_map(|h| {
            Some(
                h.strip_prefix("waiting_room=")?
                    .split(';')
                    .next()?
                    .to_string(),
            )
        })
        .expect("a room token")
}

/// A field of an opened token.
fn field<'t>(token: &'t str, name: &str) -> &'t str {
    token
        .split('&')
        .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {token}"))
}

#[test]
fn fifty_people_behind_one_address_each_get_their_own_draw() {
    let room = login_room(&[("allow_percentage", "50")]);
    let t = now();
    let mut wins = 0;
    for i in 0..50 {
        let sub = format!("person-{i}");
        let uid = logins::person_uid(&sub, None);
        let session = format!("session={}", login_of(&sub, i));
        // A newcomer behind the shared address gets a token of their own.
        let r = room.get(5, "/events", &[("Cookie", &session)]);
        let token = room_token(&r)
            .unwrap_or_else(|| panic!("no token for {sub}: {}", room.last_log_line()));
        assert_eq!(field(&token, "uid"), uid, "{sub}");
        assert!(r.body.contains(START_PAGE));
        // Due, their own draw: as computed here from their own token.
        let exp = t - 2;
        let wait = mint::mint(KEY1, "wait", exp, &uid, "key1");
        let predicted = wait_token_wins(exp, &uid, 50);
        let r = room.get(
            5,
            "/events",
            &[("Cookie", &format!("{session}; waiting_room={wait}"))],
        );
        let line = room.last_log_line();
        assert_eq!(r.body.contains(ORIGIN_MARKER), predicted, "{sub}: {line}");
        assert!(line.contains(&format!(" uid={uid} ")), "{line}");
        wins += u32::from(predicted);
    }
    // Independent draws: at 50 %, all 50 alike happens once in 2^49.
    assert!((1..50).contains(&wins), "{wins} of 50 won");
}

#[test]
fn one_person_on_three_addresses_holds_one_place() {
    let room = login_room(&[("allow_percentage", NOBODY), ("wait_period_duration", "30")]);
    let session = format!("session={}", login_of("alice", 0));
    let uid = logins::person_uid("alice", None);
    // Wi-Fi: a place.
    let wifi = room.get(11, "/events", &[("Cookie", &session)]);
    let first = room_token(&wifi).expect("a wait token");
    assert_eq!(field(&first, "uid"), uid);
    // Mobile data: the same place, its token accepted from another address.
    let r = room.get(
        12,
        "/events",
        &[(
            "Cookie",
            &format!("{session}; waiting_room={}", cookie_value(&wifi)),
        )],
    );
    let line = room.last_log_line();
    assert!(
        line.contains(&format!(" uid={uid} ")) && !line.contains("rejected="),
        "{line}"
    );
    assert!(!r.body.contains(ORIGIN_MARKER));
    // A third device on the office network: a token on the same grid of draws.
    let third =
        room_token(&room.get(13, "/events", &[("Cookie", &session)])).expect("a wait token");
    assert_eq!(field(&third, "uid"), uid);
    let (a, b): (u64, u64) = (
        field(&first, "exp").parse().unwrap(),
        field(&third, "exp").parse().unwrap(),
    );
    assert_eq!(
        a.abs_diff(b) % 60,
        0,
        "{first} / {third}: not on one grid of 2d = 60 s"
    );
    // Bound to the address, the Wi-Fi's token is not the mobile network's.
    room.set_config("login_binds_address", "true");
    let bound = room.get(11, "/events", &[("Cookie", &session)]);
    room.get(
        12,
        "/events",
        &[(
            "Cookie",
            &format!("{session}; waiting_room={}", cookie_value(&bound)),
        )],
    );
    assert!(
        room.last_log_line().contains("rejected=uid-mismatch"),
        "{}",
        room.last_log_line()
    );
}

#[test]
fn every_bad_token_gets_its_documented_outcome() {
    let room = login_room(&[("who_may_wait", "signed-in"), ("sign_in_url", SIGN_IN)]);
    for (what, token, word) in logins::bad_tokens(now()) {
        // A browser, the token in the login cookie: to sign in, back to its own path.
        let r = room.get(
            20,
            "/events/x?y=1",
            &[("Cookie", &format!("session={token}"))],
        );
        let line = room.last_log_line();
        assert_eq!(r.status, 302, "{what}: {line}");
        assert_eq!(
            r.header("location"),
            Some(&*format!("{SIGN_IN}?return_to=%2Fevents%2Fx%3Fy%3D1")),
            "{what}"
        );
        assert!(room_token(&r).is_none(), "{what}");
        assert!(
            line.contains(" decision=refused reason=login-required ")
                && line.ends_with(&format!(" login_refused={word}")),
            "{what}: {line}"
        );
        assert!(
            !line.contains(&token[..token.len().min(20)]) || token.len() < 20,
            "{what}: the token logged"
        );
        // An app, the token as a bearer: 401, and how to sign in.
        let r = room.get(
            20,
            "/events/x",
            &[
                ("Authorization", &format!("Bearer {token}")),
                ("Accept", "application/json"),
            ],
        );
        assert_eq!(r.status, 401, "{what}");
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer realm=\"waiting room\""),
            "{what}"
        );
        assert!(r.body.contains("\"login-required\""), "{what}: {}", r.body);
    }
    // In an open room a refused token waits by its address, never admitted for it.
    room.set_config("who_may_wait", "anyone");
    room.set_config("allow_percentage", NOBODY);
    let (_, expired, _) = logins::bad_tokens(now())
        .into_iter()
        .find(|(_, _, w)| *w == "expired")
        .unwrap();
    let r = room.get(22, "/events", &[("Cookie", &format!("session={expired}"))]);
    assert!(r.body.contains(START_PAGE));
    assert_eq!(field(&room_token(&r).unwrap(), "uid"), "127.0.0.22");
}

#[test]
fn a_room_for_members_signs_in_and_then_lets_them_wait() {
    let room = login_room(&[
        ("who_may_wait", "signed-in"),
        ("sign_in_url", SIGN_IN),
        ("allow_percentage", NOBODY),
    ]);
    // Not signed in: to sign in, nothing set.
    let r = room.get(30, "/events/launch", &[]);
    assert_eq!(
        (r.status, r.header("location")),
        (
            302,
            Some(&*format!("{SIGN_IN}?return_to=%2Fevents%2Flaunch"))
        )
    );
    assert!(r.all("set-cookie").is_empty());
    // Back from sign-in with the site's cookie: waiting, as themself.
    let session = format!("session={}", login_of("carol", 1));
    let r = room.get(30, "/events/launch", &[("Cookie", &session)]);
    assert!(r.body.contains(START_PAGE), "{}", room.last_log_line());
    assert_eq!(
        field(&room_token(&r).unwrap(), "uid"),
        logins::person_uid("carol", None)
    );
    // The room's other path, outside it, asks nobody to sign in.
    assert!(room.get(30, "/about", &[]).body.contains(ORIGIN_MARKER));
}

#[test]
fn an_audience_room_refuses_the_others() {
    let room = login_room(&[
        ("who_may_wait", "tier=presale"),
        ("sign_in_url", SIGN_IN),
        ("allow_percentage", "100"),
    ]);
    let keys = logins::keys();
    let mut presale = logins::claims("pat", now());
    presale["tier"] = serde_json::json!("presale");
    let pat = mint_login(&presale, &keys[1], KIDS[1]);
    let r = room.get(
        40,
        "/events",
        &[("Authorization", &format!("Bearer {pat}"))],
    );
    assert!(r.body.contains(ORIGIN_MARKER), "{}", room.last_log_line());
    let alice = login_of("alice", 1);
    let r = room.get(
        41,
        "/events",
        &[("Authorization", &format!("Bearer {alice}"))],
    );
    assert_eq!(r.status, 403);
    assert!(
        room.last_log_line()
            .contains(" decision=refused reason=not-in-audience ")
    );
    assert_eq!(room.get(42, "/events", &[]).status, 302);
}
