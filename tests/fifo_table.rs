//! Every row of the FIFO decision table (README, "FIFO"), natively, with a fixed
//! clock. Tokens in a given state come from the tests' own minter.

#[path = "support/mint.rs"]
mod mint;

use std::collections::HashMap;

use waiting_room::config::Settings;
use waiting_room::decision::{
    CookieAction, Decision, Session, Transition, Verdict, decide, decide_at,
};

const NOW: u64 = 1_700_000_023;
/// Milliseconds past `NOW` of the requests.
const MILLIS: u16 = 456;
const UID: &str = "192.0.2.10";
const K1: &str = "secret-one";
/// The default hold, seconds.
const HOLD: u64 = 300;

fn keys() -> HashMap<String, String> {
    HashMap::from([("key1".to_string(), K1.to_string())])
}

/// A FIFO room at 50 % with `extra` settings.
fn settings(extra: &[(&str, String)]) -> Settings {
    let mut store: HashMap<&str, String> = HashMap::from([
        ("enabled", "true".to_string()),
        ("allow_percentage", "50".to_string()),
        ("queueing_method", "fifo".to_string()),
    ]);
    store.extend(extra.iter().cloned());
    Settings::from_lookup(|key| store.get(key).cloned())
}

fn cutoff(ms: u64) -> Settings {
    settings(&[("fifo_cutoff", ms.to_string())])
}

fn run(settings: &Settings, cookie: Option<&str>) -> Verdict {
    decide_at(NOW, MILLIS, UID, cookie, settings, &keys())
}

/// A FIFO token for `UID` holding place `arr` until `exp`.
fn place(exp: u64, arr: u64) -> String {
    mint::mint_fifo(K1, exp, UID, "key1", arr)
}

const NOW_MS: u64 = NOW * 1000 + MILLIS as u64;

#[test]
fn known_answer_a_newcomer_gets_a_fifo_token_with_their_arrival() {
    let v = run(&cutoff(NOW_MS - 60_000), None);
    assert_eq!((v.decision, v.transition), (Decision::Anon, None));
    // Minted independently (Python's hmac over the documented text).
    let known = "ZGVjPXdhaXQmZXhwPTE3MDAwMDAzMjMmdWlkPTE5Mi4wLjIuMTAma2lkPWtleTEmYXJyPTE3MDAwMDAwMjM0NTYmc2lnPTB4NDNkNTk1Nzg4OWRiNWZmZDY4MzdiZTM5M2Q1MmY3ZTg4ZjRkMmVhYzNmZjRiY2UyM2JiOTY2ZjU4NzE1NGJjZA==";
    assert_eq!(v.cookie, CookieAction::Set(known.to_string()));
    assert_eq!(known, place(NOW + HOLD, NOW_MS));
    assert_eq!(
        (v.arr, v.wait_exp, v.exp),
        (Some(NOW_MS), Some(NOW + HOLD), Some(NOW + HOLD))
    );
}

#[test]
fn a_place_at_or_before_the_cutoff_is_admitted_and_after_it_waits() {
    let arr = NOW_MS - 10_000;
    for (cut, want) in [
        (arr, Decision::Allow),
        (arr + 1, Decision::Allow),
        (arr - 1, Decision::Wait),
    ] {
        let v = run(&cutoff(cut), Some(&place(NOW + 200, arr)));
        assert_eq!(v.decision, want, "cutoff {cut}");
        assert_eq!(v.arr, Some(arr));
        if want == Decision::Allow {
            assert_eq!(v.transition, Some(Transition::CutoffReached));
            assert_eq!(v.session, Some(Session::New));
            let allow = mint::mint(K1, "allow", NOW + 3600, UID, "key1");
            assert_eq!(v.cookie, CookieAction::Set(allow));
        } else {
            // More than half the hold left: no cookie, the place is kept as it is.
            assert_eq!((v.transition, v.cookie.clone()), (None, CookieAction::Keep));
            assert_eq!(v.wait_exp, Some(NOW + 200));
        }
    }
}

#[test]
fn a_held_place_is_reissued_with_the_same_arrival_only_past_half_its_hold() {
    let arr = NOW_MS - 100_000;
    let s = cutoff(arr - 1);
    // Exactly half left: kept. Less than half: re-issued, same place, new hold.
    let kept = run(&s, Some(&place(NOW + HOLD / 2, arr)));
    assert_eq!(kept.cookie, CookieAction::Keep);
    let renewed = run(&s, Some(&place(NOW + HOLD / 2 - 1, arr)));
    assert_eq!(renewed.decision, Decision::Wait);
    assert_eq!(renewed.cookie, CookieAction::Set(place(NOW + HOLD, arr)));
    assert_eq!(renewed.arr, Some(arr));
}

#[test]
fn a_place_whose_hold_ended_arrives_anew() {
    let s = cutoff(NOW_MS);
    let v = run(&s, Some(&place(NOW - 1, NOW_MS - 500_000)));
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Anon, Some(Transition::HoldExpired))
    );
    assert_eq!(v.cookie, CookieAction::Set(place(NOW + HOLD, NOW_MS)));
    // The last second of the hold still counts.
    let v = run(&s, Some(&place(NOW, NOW_MS - 500_000)));
    assert_eq!(v.decision, Decision::Allow);
}

#[test]
fn without_a_cutoff_nobody_is_admitted_by_fifo() {
    let s = settings(&[]);
    let v = run(&s, Some(&place(NOW + 200, 0)));
    assert_eq!(
        (v.decision, &v.cookie),
        (Decision::Wait, &CookieAction::Keep)
    );
    let line = waiting_room::log::decision_line(NOW, UID, "/events", &v, &s);
    assert!(
        line.contains(" cutoff=none path=") && line.contains(" ALERT=fifo-no-cutoff"),
        "{line}"
    );
    // A garbage cutoff is no cutoff, and says so.
    let s = settings(&[("fifo_cutoff", "soon".to_string())]);
    assert_eq!(run(&s, Some(&place(NOW + 200, 0))).decision, Decision::Wait);
    assert!(s.fallbacks.contains(&"fifo_cutoff"));
}

#[test]
fn a_lottery_wait_token_joins_the_line_when_it_was_handed_out() {
    // A VCL token handed out at NOW - 50 (exp two 30 s slots later).
    let exp = (NOW - 50) / 30 * 30 + 60;
    let vcl = mint::mint(K1, "wait", exp, UID, "key1");
    let joined_at = (exp - 60) * 1000;
    let v = run(&cutoff(joined_at - 1), Some(&vcl));
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Wait, Some(Transition::JoinedLine))
    );
    assert_eq!(v.cookie, CookieAction::Set(place(NOW + HOLD, joined_at)));
    assert_eq!(v.arr, Some(joined_at));
    let v = run(&cutoff(joined_at), Some(&vcl));
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Allow, Some(Transition::CutoffReached))
    );
    // Past its redeem window (one wait period after exp) it arrives anew.
    let stale = mint::mint(K1, "wait", NOW - 31, UID, "key1");
    let v = run(&cutoff(NOW_MS), Some(&stale));
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Anon, Some(Transition::RedeemWindowPassed))
    );
    assert_eq!(v.arr, Some(NOW_MS));
}

#[test]
fn a_fifo_token_in_random_mode_is_a_wait_token_like_any_other() {
    let s = Settings {
        queueing_method: waiting_room::config::QueueingMethod::Random,
        ..cutoff(u64::MAX)
    };
    let waiting = place(NOW + 10, 0);
    let v = run(&s, Some(&waiting));
    assert_eq!(
        (v.decision, v.cookie, v.arr),
        (Decision::Wait, CookieAction::Keep, None)
    );
    let expired = place(NOW - 1, 0);
    let v = run(&s, Some(&expired));
    assert!(matches!(
        v.transition,
        Some(Transition::LotteryWon | Transition::LotteryLost)
    ));
    // Its draw is seeded by its own signature, as every wait token's.
    let text = format!("dec=wait&exp={}&uid={UID}&kid=key1&arr=0", NOW - 1);
    let seed = mint::seed(&mint::vcl_sig(K1, &text));
    let wins = waiting_room::lottery::wins(seed, s.allow_percentage);
    assert_eq!(v.decision == Decision::Allow, wins);
}

#[test]
fn the_percentage_keeps_only_its_ends() {
    let held = place(NOW + 200, NOW_MS);
    for (p, want) in [
        ("0", Decision::Deny),
        ("100", Decision::Allow),
        ("1", Decision::Wait),
        ("99.9", Decision::Wait),
    ] {
        let s = settings(&[
            ("allow_percentage", p.to_string()),
            ("fifo_cutoff", "0".to_string()),
        ]);
        assert_eq!(run(&s, Some(&held)).decision, want, "{p}");
    }
}

#[test]
fn known_answers_the_pre_queue_shuffles_early_arrivals_by_address_for_good() {
    let opens = 1_700_003_600;
    let s = settings(&[("queue_opens_at", opens.to_string())]);
    // Offsets computed independently: HMAC-SHA256(key, "prequeue&uid=…&opens=…"),
    // first four bytes big-endian, mod 1000.
    for (uid, offset) in [
        ("192.0.2.10", 571),
        ("192.0.2.11", 122),
        ("2001:db8:1:2::/64", 648),
    ] {
        for (now, millis) in [(NOW, 0), (NOW + 1000, 999), (opens - 1, 5)] {
            let v = decide_at(now, millis, uid, None, &s, &keys());
            assert_eq!(v.arr, Some(opens * 1000 + offset), "{uid} at {now}");
            // Held until the line opens plus a whole hold: nobody polls all night.
            assert_eq!(v.wait_exp, Some(opens + HOLD));
        }
        // From the opening second on, arrival is the clock.
        let v = decide_at(opens, 7, uid, None, &s, &keys());
        assert_eq!(v.arr, Some(opens * 1000 + 7));
    }
    // A pre-queue token is kept (no cookie) while the line has not opened.
    let early = mint::mint_fifo(K1, opens + HOLD, UID, "key1", opens * 1000 + 571);
    let v = decide(NOW, UID, Some(&early), &s, &keys());
    assert_eq!((v.decision, v.cookie), (Decision::Wait, CookieAction::Keep));
}

#[test]
fn the_pre_queue_spreads_addresses_over_its_first_second() {
    let opens = 1_700_003_600;
    let s = settings(&[("queue_opens_at", opens.to_string())]);
    let offsets: std::collections::HashSet<u64> = (0..500)
        .map(|i| {
            let uid = format!("10.0.{}.{}", i / 256, i % 256);
            decide(NOW, &uid, None, &s, &keys()).arr.unwrap() - opens * 1000
        })
        .collect();
    // 500 addresses over 1000 ms: about 390 distinct places expected.
    assert!(
        offsets.len() > 330 && offsets.iter().all(|&o| o < 1000),
        "{}",
        offsets.len()
    );
}
