//! The bot toll, black-box: the built wasm in Viceroy, the demo origin, real HTTP
//! from several 127.0.0.x visitors. Tokens come from the tests' own minter, and
//! solutions from the tests' own solver (docs/reference/bot-toll.md).

use crate::{KEEP_PAGE, assert_logged, due_token};
use demo_origin::ORIGIN_MARKER;
use support::http::Response;
use support::mint;
use support::viceroy_room::{KEY1, Room, now};

const BITS: u32 = 8;

/// The challenge of the wait token a response sets: its signature's hex.
fn challenge_of(r: &Response) -> String {
    let text = mint::open(&r.room_cookie().expect("a token"));
    text.rsplit("&sig=0x").next().unwrap().to_string()
}

fn log_has(room: &Room, needle: &str) -> bool {
    room.log_lines().iter().any(|l| l.contains(needle))
}

#[test]
fn a_newcomer_gets_a_page_that_pays_and_apps_get_the_challenge() {
    let room = Room::start(&[("bot_toll_bits", "8")]);
    let r = room.get(2, "/events", &[]);
    assert_eq!(r.status, 200);
    let challenge = challenge_of(&r);
    assert!(mint::open(&r.room_cookie().unwrap()).contains("&toll=8&sig="));
    assert!(
        r.body.contains(&format!("data-challenge=\"{challenge}\"")),
        "{}",
        r.body
    );
    assert!(r.body.contains("data-bits=\"8\"") && r.body.contains("data-cookie=\"waiting_toll\""));
    assert!(r.body.contains("<noscript>"));
    assert_logged(&room, &[" toll=8 "]);

    let r = room.get(3, "/events", &[("Accept", "application/json")]);
    let json: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let challenge = challenge_of(&r);
    assert_eq!(json["toll"]["bits"], 8);
    assert_eq!(json["toll"]["challenge"], challenge.as_str());
    assert_eq!(json["toll"]["cookie"], "waiting_toll");
    assert_eq!(
        json["toll"]["prefix"],
        format!("waiting-room-toll:{challenge}:").as_str()
    );
}

#[test]
fn with_the_toll_off_nothing_of_it_shows() {
    let room = Room::start(&[]);
    let r = room.get(2, "/events", &[]);
    assert!(
        !r.body.contains("toll") && !r.body.contains("<!--"),
        "{}",
        r.body
    );
    assert!(!mint::open(&r.room_cookie().unwrap()).contains("toll"));
    let json = room
        .get(3, "/events", &[("Accept", "application/json")])
        .body;
    assert!(!json.contains("toll"), "{json}");
    assert!(!room.last_log_line().contains("toll"));
}

#[test]
fn an_unpaid_draw_is_held_and_a_paid_one_is_drawn() {
    let room = Room::start(&[("bot_toll_bits", "8")]);
    let (winner, challenge) = due_token(4, 8, true);
    // Unpaid: the waiting page again, a new token that owes, logged as held.
    let r = room.get_with_cookie(4, "/events", &format!("waiting_room={winner}"));
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert!(mint::open(&r.room_cookie().unwrap()).contains("&toll=8&"));
    assert_logged(&room, &["decision=re-wait", "transition=toll-unpaid"]);
    // Paid: drawn and admitted; the origin sees none of the room's cookies.
    let nonce = mint::toll_nonce(&challenge, BITS);
    let cookies = format!("waiting_room={winner}; site=1; waiting_toll={nonce}");
    let r = room.get_with_cookie(4, "/events", &cookies);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    assert!(r.body.contains("site=1"), "{}", r.body);
    assert!(
        !r.body.contains("waiting_toll") && !r.body.contains("waiting_room="),
        "{}",
        r.body
    );
    assert_logged(&room, &["transition=lottery-won", " toll=paid "]);
    // A paid loser's next token owes nothing.
    let (loser, challenge) = due_token(5, 8, false);
    let nonce = mint::toll_nonce(&challenge, BITS);
    let r = room.get_with_cookie(
        5,
        "/events",
        &format!("waiting_room={loser}; waiting_toll={nonce}"),
    );
    assert!(mint::open(&r.room_cookie().unwrap()).contains("&toll=0&"));
    assert!(
        !r.body.contains("id=\"toll\""),
        "a paid place shows no check"
    );
}

#[test]
fn bad_or_foreign_solutions_never_admit_and_never_fail() {
    let room = Room::start(&[("bot_toll_bits", "8")]);
    let (winner, challenge) = due_token(6, 8, true);
    let own = mint::toll_nonce(&challenge, BITS);
    // Another period's, another address's solution.
    let (_, other_period) = mint::mint_toll(KEY1, now() + 40, "127.0.0.6", "key1", 8);
    let (_, other_address) = mint::mint_toll(KEY1, now() - 5, "127.0.0.7", "key1", 8);
    let foreign: Vec<String> = [other_period, other_address]
        .iter()
        .map(|c| mint::toll_nonce(c, BITS))
        .filter(|n| !mint::toll_pays(&challenge, *n, BITS))
        .map(|n| n.to_string())
        .collect();
    // A quoted value is read without its quotes (RFC 6265), so the quoted nonce is
    // one that does not pay: a fixed "1" would pay one challenge in 2^8.
    let unpaid = (1..)
        .find(|n| !mint::toll_pays(&challenge, *n, BITS))
        .unwrap();
    let long = "9".repeat(5000);
    let mut bad: Vec<String> = vec![
        String::new(),
        format!("0{own}"),
        format!("{own}x"),
        format!("+{own}"),
        format!("{own}.0"),
        "18446744073709551616".to_string(),
        long,
        "%00".to_string(),
        format!("\"{unpaid}\""),
        "ünïcode".to_string(),
    ];
    bad.extend(foreign);
    for nonce in &bad {
        let r = room.get_with_cookie(
            6,
            "/events",
            &format!("waiting_room={winner}; waiting_toll={nonce}"),
        );
        assert_eq!(r.status, 200, "{nonce:?}: {}", r.body);
        assert!(r.body.contains(KEEP_PAGE), "{nonce:?} was admitted");
        assert!(
            room.last_log_line().contains("transition=toll-unpaid"),
            "{nonce:?}"
        );
    }
    // Not one line of the room's internals on any page.
    assert!(!room.viceroy_output().contains("panicked"));
}

/// Turned on in the middle of a crowd: the tokens already handed out are drawn as
/// they stand; the tokens that follow owe, and their holders get in once they pay.
/// Up to sixteen rounds, each a draw for every visitor still waiting.
#[test]
fn the_toll_turned_on_mid_crowd_strands_nobody() {
    let room = Room::start(&[("wait_period_duration", "2"), ("redeem_window", "30")]);
    let visitors: Vec<u8> = (10..22).collect();
    let mut tokens: Vec<String> = visitors
        .iter()
        .map(|v| room.get(*v, "/events", &[]).room_cookie().unwrap())
        .collect();
    room.set_config("bot_toll_bits", "8");
    let mut admitted = vec![false; visitors.len()];
    for round in 0..16 {
        // Every round a draw for each: it begins once every token still waiting
        // has expired (a fixed pause can come early on a busy machine, and a
        // round in which a token is not due is not a draw).
        let due = (0..visitors.len())
            .filter(|&i| !admitted[i])
            .map(|i| mint::number(&mint::open(&tokens[i]), "exp"))
            .max()
            .unwrap_or(0);
        while now() <= due {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        for (i, visitor) in visitors.iter().enumerate() {
            if admitted[i] {
                continue;
            }
            let text = mint::open(&tokens[i]);
            let challenge = text.rsplit("&sig=0x").next().unwrap();
            let owes = text.contains("&toll=8&");
            let cookie = match owes {
                true => format!(
                    "waiting_room={}; waiting_toll={}",
                    tokens[i],
                    mint::toll_nonce(challenge, BITS)
                ),
                false => format!("waiting_room={}", tokens[i]),
            };
            let r = room.get_with_cookie(*visitor, "/events", &cookie);
            let line = room.last_log_line();
            assert!(!line.contains("toll-unpaid"), "round {round}: {line}");
            if r.body.contains(ORIGIN_MARKER) {
                admitted[i] = true;
            } else if let Some(next) = r.room_cookie() {
                // Re-waited after a lost draw: a token issued before the toll
                // is followed by one that owes; a paid one by one that does not.
                let expected = if text.contains("&toll=") {
                    "&toll=0&"
                } else {
                    "&toll=8&"
                };
                assert!(
                    mint::open(&next).contains(expected),
                    "{}",
                    mint::open(&next)
                );
                tokens[i] = next;
            }
        }
        if admitted.iter().all(|a| *a) {
            break;
        }
    }
    let stranded = admitted.iter().filter(|a| !**a).count();
    // At 50 % a visitor loses sixteen draws in a row one time in 65,536: one of
    // twelve stranded by chance once in 5,000 runs, two never.
    assert!(
        stranded <= 1,
        "{stranded} of {} never got in",
        visitors.len()
    );
    assert!(log_has(&room, "toll=paid"), "nobody paid");
}
