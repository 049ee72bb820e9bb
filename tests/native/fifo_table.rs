//! Every row of the FIFO decision table (docs/reference/fifo.md), natively, with a fixed
//! clock. Tokens in a given state come from the tests' own minter.

use test_support::decisions::{decide, decide_at};
use test_support::mint;

use std::collections::HashMap;

use waiting_room::admission::decision::{CookieAction, Decision, Session, Transition, Verdict};
use waiting_room::settings::config::Settings;

const NOW: u64 = 1_700_000_023;
/// Milliseconds past `NOW` of the requests.
const MILLIS: u16 = 456;
const UID: &str = "192.0.2.10";
const K1: &str = "secret-one";
/// The default hold, seconds.
const HOLD: u64 = 300;

const K2: &str = "secret-two";

fn keys() -> HashMap<String, String> {
    HashMap::from([
        ("key1".to_string(), K1.to_string()),
        ("key2".to_string(), K2.to_string()),
    ])
}

/// A FIFO room at 50 % with `extra` settings.
fn settings(extra: &[(&str, String)]) -> Settings {
    read(extra).0
}

/// The settings of [`settings`], and the keys that fell back.
fn read(extra: &[(&str, String)]) -> (Settings, Vec<&'static str>) {
    let mut store: HashMap<&str, String> = HashMap::from([
        ("enabled", "true".to_string()),
        ("allow_percentage", "50".to_string()),
        ("queueing_method", "fifo".to_string()),
    ]);
    store.extend(extra.iter().cloned());
    Settings::read(&|key| store.get(key).cloned())
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
            // The session runs from the start of the place's hold (`exp - fifo_hold`).
            let allow = mint::mint(K1, "allow", NOW + 200 - HOLD + 3600, UID, "key1");
            assert_eq!(v.cookie, CookieAction::Set(allow));
            assert_eq!(v.exp, Some(NOW + 200 - HOLD + 3600));
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
fn a_rotation_moves_held_places_onto_the_new_key() {
    let arr = NOW_MS - 100_000;
    let old = mint::mint_fifo(K2, NOW + 250, UID, "key2", arr);
    let v = run(&cutoff(arr - 1), Some(&old));
    assert_eq!(v.decision, Decision::Wait);
    assert_eq!(v.cookie, CookieAction::Set(place(NOW + HOLD, arr)));
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
    let line = waiting_room::log::decision_line(NOW, UID, "/events", &v, &s.into());
    assert!(
        line.contains(" cutoff=none path=") && line.contains(" ALERT=fifo-no-cutoff"),
        "{line}"
    );
    // A garbage cutoff is no cutoff, and says so.
    let (s, fallbacks) = read(&[("fifo_cutoff", "soon".to_string())]);
    assert_eq!(run(&s, Some(&place(NOW + 200, 0))).decision, Decision::Wait);
    assert!(fallbacks.contains(&"fifo_cutoff"));
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
    // Admitted at once, the session runs from its place, `exp - 2d`.
    let allow = mint::mint(K1, "allow", exp - 60 + 3600, UID, "key1");
    assert_eq!(v.cookie, CookieAction::Set(allow));
    // Past its redeem window (one wait period after exp) it arrives anew.
    let stale = mint::mint(K1, "wait", NOW - 31, UID, "key1");
    let v = run(&cutoff(NOW_MS), Some(&stale));
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Anon, Some(Transition::RedeemWindowPassed))
    );
    assert_eq!(v.arr, Some(NOW_MS));
}

/// A FIFO place is minted per arrival, to the millisecond: in random mode each
/// would otherwise be a lottery ticket of its own. It moves onto the address's
/// grid instead, without a draw: however many an address collected, it holds one
/// ticket per draw.
#[test]
fn a_fifo_token_in_random_mode_waits_for_its_address_next_draw_without_one_of_its_own() {
    let s = Settings {
        queueing_method: waiting_room::settings::config::QueueingMethod::Random,
        ..cutoff(u64::MAX)
    };
    let grid_token = mint::mint(K1, "wait", mint::address_exp(NOW, UID, 30), UID, "key1");
    for (exp, arr) in [
        (NOW + 10, 0),
        (NOW - 1, 0),
        (NOW - 1, 5),
        (NOW + 3600, NOW_MS),
    ] {
        let v = run(&s, Some(&place(exp, arr)));
        assert_eq!(
            (v.decision, v.transition),
            (Decision::ReWait, Some(Transition::LeftLine))
        );
        assert_eq!(
            v.cookie,
            CookieAction::Set(grid_token.clone()),
            "{exp} {arr}"
        );
        assert_eq!(v.arr, None);
    }
}

/// Many FIFO places from one address, presented at once after a switch to random
/// mode: not one draw among them.
#[test]
fn a_pile_of_fifo_places_buys_no_lottery_tickets() {
    let fifo = cutoff(0);
    let random = Settings {
        queueing_method: waiting_room::settings::config::QueueingMethod::Random,
        allow_percentage: waiting_room::settings::percentage::Percentage::whole(99),
        ..cutoff(0)
    };
    let places: Vec<String> = (0..200)
        .map(
            |ms| match decide_at(NOW, ms, UID, None, &fifo, &keys()).cookie {
                CookieAction::Set(token) => token,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(
        places
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        200
    );
    for token in &places {
        let v = decide(NOW + HOLD + 1, UID, Some(token), &random, &keys());
        assert_ne!(v.decision, Decision::Allow);
        assert_eq!(v.transition, Some(Transition::LeftLine));
    }
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
        // Racing the opening gains nothing: the line's first second is the
        // pre-queue's, a later arrival's place is after it; then the clock.
        let v = decide_at(opens, 7, uid, None, &s, &keys());
        assert_eq!(v.arr, Some(opens * 1000 + 1000));
        let v = decide_at(opens + 1, 7, uid, None, &s, &keys());
        assert_eq!(v.arr, Some(opens * 1000 + 1007));
    }
    // A pre-queue token is kept (no cookie) while the line has not opened.
    let early = mint::mint_fifo(K1, opens + HOLD, UID, "key1", opens * 1000 + 571);
    let v = decide(NOW, UID, Some(&early), &s, &keys());
    assert_eq!((v.decision, v.cookie), (Decision::Wait, CookieAction::Keep));
}

#[test]
fn an_ipv6_network_gets_one_pre_queue_offset_whatever_its_addresses() {
    let opens = 1_700_003_600;
    let s = settings(&[("queue_opens_at", opens.to_string())]);
    // Whole addresses (the default prefix), each its own visitor, but one /64: the
    // /64's offset (648, the known answer above), so trying the network's many
    // addresses for an early place gains nothing.
    for uid in [
        "2001:db8:1:2::9",
        "2001:db8:1:2:aaaa::1",
        "2001:db8:1:2:ffff:ffff:ffff:ffff",
    ] {
        assert_eq!(
            decide(NOW, uid, None, &s, &keys()).arr,
            Some(opens * 1000 + 648),
            "{uid}"
        );
    }
}

#[test]
fn no_place_comes_before_the_line_opens() {
    let opens = 1_700_003_600;
    let s = settings(&[
        ("queue_opens_at", opens.to_string()),
        ("fifo_cutoff", (opens * 1000 + 570).to_string()),
    ]);
    // A place taken before the pre-queue was set, and a lottery ticket joining:
    // both are the address's pre-queue place (571 ms in: behind the cutoff).
    let early = place(NOW + 200, NOW_MS - 60_000);
    let ticket = mint::mint(K1, "wait", NOW + 10, UID, "key1");
    for token in [&early, &ticket] {
        let v = run(&s, Some(token));
        assert_eq!(
            (v.decision, v.arr),
            (Decision::Wait, Some(opens * 1000 + 571))
        );
        // Re-issued with that place (and held past the opening).
        assert_eq!(
            v.cookie,
            CookieAction::Set(place(opens + HOLD, opens * 1000 + 571))
        );
    }
}

#[test]
fn a_hold_longer_than_the_settings_give_is_cut_back() {
    // A hold minted under a mistyped setting (e.g. `queue_opens_at` in ms).
    let arr = NOW_MS - 1000;
    let v = run(&cutoff(0), Some(&place(NOW + 10 * HOLD, arr)));
    assert_eq!(v.decision, Decision::Wait);
    assert_eq!(v.cookie, CookieAction::Set(place(NOW + HOLD, arr)));
    let (s, fallbacks) = read(&[("queue_opens_at", "1795353010000".to_string())]);
    assert_eq!(s.queue_opens_at, None);
    assert!(fallbacks.contains(&"queue_opens_at"));
}

#[test]
fn a_missing_or_unreadable_percentage_leaves_fifo_to_the_cutoff() {
    let held = place(NOW + 200, NOW_MS);
    for store in [vec![], vec![("allow_percentage", "abc".to_string())]] {
        let mut pairs: HashMap<&str, String> = HashMap::from([
            ("enabled", "true".to_string()),
            ("queueing_method", "fifo".to_string()),
            ("fifo_cutoff", (NOW_MS - 1).to_string()),
        ]);
        pairs.extend(store.iter().cloned());
        let s = Settings::from_lookup(|key| pairs.get(key).cloned());
        assert_eq!(run(&s, Some(&held)).decision, Decision::Wait, "{store:?}");
    }
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

/// Queue-all in FIFO mode: nobody passes the cutoff; places are kept.
#[test]
fn queue_all_admits_nobody_past_the_cutoff_and_keeps_places() {
    let arr = NOW_MS - 10_000;
    let held = Settings {
        queue_all: true,
        ..cutoff(arr + 5_000)
    };
    let v = run(&held, Some(&place(NOW + 200, arr)));
    assert_eq!((v.decision, v.arr), (Decision::Wait, Some(arr)));
    assert_eq!(v.session, None);
    let v = run(&cutoff(arr + 5_000), Some(&place(NOW + 200, arr)));
    assert_eq!(v.decision, Decision::Allow, "without queue-all");
}
