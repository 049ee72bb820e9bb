//! The bot toll's rows of the decision table (docs/reference/bot-toll.md), natively, with a
//! fixed clock. Tokens and solutions come from the tests' own minter and solver.

use test_support::mint;

use std::collections::HashMap;

use waiting_room::admission::decision::{
    Context, CookieAction, Decision, Rejection, Request, Transition, Verdict, decide,
};
use waiting_room::admission::lottery;
use waiting_room::credentials::token::Malformed;
use waiting_room::settings::config::Settings;
use waiting_room::settings::percentage::Percentage;

const NOW: u64 = 1_700_000_023;
const UID: &str = "192.0.2.10";
const K1: &str = "secret-one";
const BITS: u8 = 8;

fn keys() -> HashMap<String, String> {
    HashMap::from([("key1".to_string(), K1.to_string())])
}

/// A random-mode room at `percentage` asking `bits` of toll, with `extra` settings.
fn room(percentage: u8, bits: u8, extra: &[(&str, &str)]) -> Settings {
    let mut store: HashMap<&str, String> = HashMap::from([
        ("enabled", "true".to_string()),
        ("allow_percentage", percentage.to_string()),
        ("bot_toll_bits", bits.to_string()),
    ]);
    store.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    Settings::from_lookup(|key| store.get(key).cloned())
}

fn run(settings: &Settings, cookie: Option<&str>, nonce: Option<&str>) -> Verdict {
    let context = Context {
        toll_nonce: nonce,
        ..Context::new(settings)
    };
    decide(&Request::new(NOW, UID, cookie), &context, &keys())
}

/// The plain text of the token a verdict sets.
fn set_text(v: &Verdict) -> String {
    match &v.cookie {
        CookieAction::Set(value) => mint::open(value),
        other => panic!("no token set: {other:?}"),
    }
}

/// A wait token owing `toll`, due for its draw now, that wins (or loses) at `p` %.
fn due_token(toll: u8, p: u8, win: bool) -> (String, String) {
    (1..30)
        .map(|ago| mint::mint_toll(K1, NOW - ago, UID, "key1", toll))
        .find(|(_, sig)| {
            let seed = mint::seed(&format!("0x{sig}"));
            lottery::wins(seed, Percentage::whole(p)) == win
        })
        .expect("one of 29 tokens")
}

#[test]
fn with_the_toll_off_tokens_are_as_before_and_a_field_owes_nothing() {
    let off = room(50, 0, &[]);
    let v = run(&off, None, None);
    assert!(!set_text(&v).contains("toll"), "{}", set_text(&v));
    assert_eq!(v.toll, None);
    // A token from while the toll was on is drawn as it stands.
    let (winner, _) = due_token(BITS, 50, true);
    let v = run(&off, Some(&winner), None);
    assert_eq!(v.transition, Some(Transition::LotteryWon));
}

#[test]
fn a_newcomer_owes_the_toll_on_its_wait_token() {
    let v = run(&room(50, BITS, &[]), None, None);
    assert_eq!(v.decision, Decision::Anon);
    let text = set_text(&v);
    assert!(text.contains("&toll=8&sig=0x"), "{text}");
    let due = v.toll.expect("a toll to pay");
    assert_eq!(due.bits, BITS);
    // The challenge is the new token's own signature.
    let sig = text.rsplit("sig=0x").next().unwrap();
    assert_eq!(hex::encode(due.signature), sig);
}

#[test]
fn an_unpaid_draw_is_held_and_owes_again_on_a_new_token() {
    let settings = room(50, BITS, &[]);
    for win in [true, false] {
        let (token, _) = due_token(BITS, 50, win);
        for nonce in [None, Some("garbage"), Some(""), Some("007"), Some("-1")] {
            let v = run(&settings, Some(&token), nonce);
            assert_eq!(
                (v.decision, v.transition),
                (Decision::ReWait, Some(Transition::TollUnpaid)),
                "{nonce:?}"
            );
            assert_eq!(v.session, None);
            assert!(set_text(&v).contains("&toll=8&"));
            assert!(!v.toll_paid);
            assert_eq!(v.toll.map(|t| t.bits), Some(BITS));
        }
    }
}

#[test]
fn a_paid_draw_is_drawn_and_the_place_owes_nothing_more() {
    let settings = room(50, BITS, &[]);
    let (winner, sig) = due_token(BITS, 50, true);
    let nonce = mint::toll_nonce(&sig, 8).to_string();
    let v = run(&settings, Some(&winner), Some(&nonce));
    assert_eq!(v.transition, Some(Transition::LotteryWon));
    assert!(v.toll_paid);
    let (loser, sig) = due_token(BITS, 50, false);
    let nonce = mint::toll_nonce(&sig, 8).to_string();
    let v = run(&settings, Some(&loser), Some(&nonce));
    assert_eq!(v.transition, Some(Transition::LotteryLost));
    assert!(set_text(&v).contains("&toll=0&"), "{}", set_text(&v));
    assert_eq!(v.toll, None);
    // The paid place's next draw needs no solution.
    let (paid, _) = due_token(0, 50, true);
    let v = run(&settings, Some(&paid), None);
    assert_eq!(v.transition, Some(Transition::LotteryWon));
}

#[test]
fn a_solution_is_good_for_its_own_token_only() {
    let settings = room(50, BITS, &[]);
    let (winner, own) = due_token(BITS, 50, true);
    let exp = mint::number(&mint::open(&winner), "exp");
    // Solutions of other tokens: another period, another address, another key.
    let (_, other_period) = mint::mint_toll(K1, exp - 2, UID, "key1", BITS);
    let (_, other_address) = mint::mint_toll(K1, exp, "192.0.2.11", "key1", BITS);
    let (_, other_key) = mint::mint_toll("secret-two", exp, UID, "key1", BITS);
    for challenge in [other_period, other_address, other_key] {
        let nonce = mint::toll_nonce(&challenge, 8);
        // (Fixed inputs: this nonce does not happen to pay the winner's toll too.)
        assert!(!mint::toll_pays(&own, nonce, 8));
        let v = run(&settings, Some(&winner), Some(&nonce.to_string()));
        assert_eq!(v.transition, Some(Transition::TollUnpaid), "{challenge}");
    }
}

#[test]
fn a_token_issued_before_the_toll_is_drawn_once_then_owes() {
    let settings = room(50, BITS, &[]);
    let exp = (1..30)
        .map(|ago| NOW - ago)
        .find(|exp| {
            let text = format!("dec=wait&exp={exp}&uid={UID}&kid=key1");
            !lottery::wins(mint::seed(&mint::vcl_sig(K1, &text)), Percentage::whole(50))
        })
        .unwrap();
    let old = mint::mint(K1, "wait", exp, UID, "key1");
    let v = run(&settings, Some(&old), None);
    assert_eq!(v.transition, Some(Transition::LotteryLost));
    assert!(set_text(&v).contains("&toll=8&"));
}

#[test]
fn a_rise_strands_nobody_and_a_fall_applies_at_once() {
    // Owed 8 when issued; the room now asks 12: 8 bits still pay.
    let (token, sig) = due_token(BITS, 50, true);
    let nonce = mint::toll_nonce(&sig, 8).to_string();
    let v = run(&room(50, 12, &[]), Some(&token), Some(&nonce));
    assert_eq!(v.transition, Some(Transition::LotteryWon));
    // Owed 12 when issued; the room now asks 4: 4 bits pay.
    let (token, sig) = due_token(12, 50, true);
    let nonce = mint::toll_nonce(&sig, 4);
    assert!(
        mint::toll_nonce(&sig, 12) != nonce,
        "a 4-bit solution that is also a 12-bit one proves nothing"
    );
    let v = run(&room(50, 4, &[]), Some(&token), Some(&nonce.to_string()));
    assert_eq!(v.transition, Some(Transition::LotteryWon));
    let v = run(&room(50, 12, &[]), Some(&token), Some(&nonce.to_string()));
    assert_eq!(v.transition, Some(Transition::TollUnpaid));
}

#[test]
fn a_waiting_visitor_who_paid_early_keeps_their_token_and_sees_no_toll() {
    let settings = room(50, BITS, &[]);
    let (token, sig) = mint::mint_toll(K1, NOW + 20, UID, "key1", BITS);
    let v = run(&settings, Some(&token), None);
    assert_eq!(
        (v.decision, v.cookie.clone()),
        (Decision::Wait, CookieAction::Keep)
    );
    assert_eq!(v.toll.map(|t| hex::encode(t.signature)), Some(sig.clone()));
    let nonce = mint::toll_nonce(&sig, 8).to_string();
    let v = run(&settings, Some(&token), Some(&nonce));
    assert_eq!((v.decision, v.cookie), (Decision::Wait, CookieAction::Keep));
    assert_eq!(v.toll, None);
    assert!(v.toll_paid);
}

#[test]
fn queue_all_holds_for_its_own_reason() {
    let (token, _) = due_token(BITS, 50, true);
    let v = run(
        &room(50, BITS, &[("queue_all", "true")]),
        Some(&token),
        None,
    );
    assert_eq!(v.transition, Some(Transition::QueueAll));
}

#[test]
fn the_toll_field_is_signed_canonical_and_on_wait_tokens_only() {
    let settings = room(50, BITS, &[]);
    let (token, _) = due_token(BITS, 50, true);
    // Claiming to have paid breaks the signature.
    let forged = mint::encode(&mint::open(&token).replace("&toll=8&", "&toll=0&"));
    assert_eq!(
        run(&settings, Some(&forged), None).rejection,
        Some(Rejection::BadSignature)
    );
    for text in [
        "dec=wait&exp=1&uid=192.0.2.10&kid=key1&toll=33&sig=0x00",
        "dec=wait&exp=1&uid=192.0.2.10&kid=key1&toll=08&sig=0x00",
        "dec=wait&exp=1&uid=192.0.2.10&kid=key1&toll=&sig=0x00",
        "dec=allow&exp=1&uid=192.0.2.10&kid=key1&toll=0&sig=0x00",
    ] {
        let v = run(&settings, Some(&mint::encode(text)), None);
        assert_eq!(
            v.rejection,
            Some(Rejection::Malformed(Malformed::Toll)),
            "{text}"
        );
    }
    for text in [
        "dec=wait&exp=1&uid=192.0.2.10&kid=key1&toll=8&arr=5&sig=0x00",
        "dec=wait&exp=1&uid=192.0.2.10&kid=key1&toll=8&toll=8&sig=0x00",
    ] {
        let v = run(&settings, Some(&mint::encode(text)), None);
        assert_eq!(
            v.rejection,
            Some(Rejection::Malformed(Malformed::Fields)),
            "{text}"
        );
    }
}

/// FIFO: a place at the cutoff that has not paid keeps its place and waits; once
/// paid it is admitted, and a place re-issued after paying owes nothing more.
#[test]
fn fifo_admits_a_place_at_the_cutoff_only_once_paid() {
    let cutoff = (NOW - 60) * 1000;
    let cutoff_text = cutoff.to_string();
    let settings = room(
        50,
        BITS,
        &[("queueing_method", "fifo"), ("fifo_cutoff", &cutoff_text)],
    );
    let arr = cutoff - 5;
    let text = format!(
        "dec=wait&exp={}&uid={UID}&kid=key1&arr={arr}&toll=8",
        NOW + 200
    );
    let sig = mint::vcl_sig(K1, &text);
    let token = mint::encode(&format!("{text}&sig={sig}"));
    let v = run(&settings, Some(&token), None);
    assert_eq!(
        (v.decision, v.transition, v.arr),
        (Decision::Wait, Some(Transition::TollUnpaid), Some(arr))
    );
    assert_eq!(v.toll.map(|t| t.bits), Some(BITS));
    let nonce = mint::toll_nonce(&sig[2..], 8).to_string();
    let v = run(&settings, Some(&token), Some(&nonce));
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Allow, Some(Transition::CutoffReached))
    );
    // Paid behind the cutoff, with less than half its hold left: re-issued paid.
    let text = format!(
        "dec=wait&exp={}&uid={UID}&kid=key1&arr={}&toll=8",
        NOW + 10,
        cutoff + 5
    );
    let sig = mint::vcl_sig(K1, &text);
    let token = mint::encode(&format!("{text}&sig={sig}"));
    let nonce = mint::toll_nonce(&sig[2..], 8).to_string();
    let v = run(&settings, Some(&token), Some(&nonce));
    assert_eq!(v.decision, Decision::Wait);
    assert!(set_text(&v).contains("&toll=0&"), "{}", set_text(&v));
}
