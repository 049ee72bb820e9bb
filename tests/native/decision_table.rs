//! Every row of the decision table (docs/reference/how-it-works.md), natively, with a fixed
//! clock. Tokens in a given state come from the tests' own minter.

use test_support::decisions::decide;
use test_support::mint;

use std::collections::HashMap;

use waiting_room::admission::decision::{
    CookieAction, Decision, Rejection, Session, Transition, Verdict,
};
use waiting_room::admission::lottery;
use waiting_room::credentials::token::Malformed;
use waiting_room::settings::config::Settings;
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::percentage::Percentage;

const NOW: u64 = 1_700_000_023;
const UID: &str = "192.0.2.10";
const K1: &str = "secret-one";
const K2: &str = "secret-two";

fn keys() -> HashMap<String, String> {
    HashMap::from([
        ("key1".to_string(), K1.to_string()),
        ("key2".to_string(), K2.to_string()),
    ])
}

fn settings(percentage: u8) -> Settings {
    Settings {
        enabled: true,
        allow_percentage: Percentage::whole(percentage),
        ..Settings::default()
    }
}

fn run(percentage: u8, cookie: Option<&str>) -> Verdict {
    decide(NOW, UID, cookie, &settings(percentage), &keys())
}

/// The wait token the room must issue at `now` (on the address's draw grid, 30 s
/// periods, key1).
fn expected_wait_token(now: u64, uid: &str) -> String {
    let exp = mint::address_exp(now, uid, 30);
    mint::mint(K1, "wait", exp, uid, "key1")
}

fn expected_allow_token(now: u64) -> String {
    mint::mint(K1, "allow", now + 3600, UID, "key1")
}

/// At 100 % everyone is admitted whatever the cookie says; the cookie is read only
/// to tell a new session from a renewed one (and a bad one is logged as such).
#[test]
fn full_percentage_admits_everyone_and_tells_new_sessions_from_renewals() {
    let live = mint::mint(K1, "allow", NOW + 100, UID, "key1");
    let expired = mint::mint(K1, "allow", NOW - 1, UID, "key1");
    let waiting = mint::mint(K1, "wait", NOW + 30, UID, "key1");
    for (cookie, session, rejected) in [
        (None, Session::New, false),
        (Some("garbage"), Session::New, true),
        (Some(waiting.as_str()), Session::New, false),
        (Some(expired.as_str()), Session::New, false),
        (Some(live.as_str()), Session::Renewed, false),
    ] {
        let v = run(100, cookie);
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.session, Some(session), "{cookie:?}");
        assert_eq!(v.rejection.is_some(), rejected, "{cookie:?}");
        assert_eq!(v.transition, None);
        assert_eq!(v.cookie, CookieAction::Set(expected_allow_token(NOW)));
        assert_eq!(v.exp, Some(NOW + 3600));
    }
}

#[test]
fn a_won_draw_is_a_new_session_and_a_live_allow_token_a_renewal() {
    let live = mint::mint(K1, "allow", NOW + 100, UID, "key1");
    let v = run(50, Some(&live));
    assert_eq!(
        (v.decision, v.session),
        (Decision::Allow, Some(Session::Renewed))
    );
    let winner = (NOW - 30..NOW)
        .find(|&exp| wins(exp, UID, 50))
        .expect("a winning expiry in 30 tries");
    let v = run(50, Some(&mint::mint(K1, "wait", winner, UID, "key1")));
    assert_eq!(
        (v.decision, v.session),
        (Decision::Allow, Some(Session::New))
    );
    // The session runs from the draw's first second, whenever it was redeemed.
    assert_eq!(v.exp, Some(winner + 1 + 3600));
    // Waiting visitors have no session; their exp is their wait token's.
    let v = run(50, None);
    assert_eq!((v.session, v.exp), (None, v.wait_exp));
    let v = run(0, Some(&live));
    assert_eq!((v.session, v.exp), (None, None));
}

#[test]
fn zero_percentage_denies_everyone_and_deletes_the_cookie() {
    let allow = mint::mint(K1, "allow", NOW + 100, UID, "key1");
    for cookie in [None, Some(allow.as_str())] {
        let v = run(0, cookie);
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.cookie, CookieAction::Delete);
    }
}

#[test]
fn no_cookie_is_anon_with_a_wait_token_on_its_address_grid() {
    let v = run(50, None);
    assert_eq!(v.decision, Decision::Anon);
    assert_eq!(v.rejection, None);
    assert_eq!(v.cookie, CookieAction::Set(expected_wait_token(NOW, UID)));
    // 192.0.2.10 draws at second 56 of every minute (FNV-1a-64 mod 60): the first
    // such second at least 30 s after 1700000023 (second 43 of its minute).
    assert!(mint::open(&expected_wait_token(NOW, UID)).contains("exp=1700000096&"));
    assert_eq!(v.wait_exp, Some(1_700_000_096));
}

#[test]
fn no_cookie_is_anon_with_a_slot_aligned_wait_token_on_the_global_grid() {
    let s = Settings {
        draw_grid: DrawGrid::Global,
        ..settings(50)
    };
    let v = decide(NOW, UID, None, &s, &keys());
    assert_eq!(v.decision, Decision::Anon);
    let token = mint::mint(K1, "wait", 1_700_000_070, UID, "key1");
    assert_eq!(v.cookie, CookieAction::Set(token));
    assert_eq!(v.wait_exp, Some(1_700_000_070));
}

#[test]
fn unexpired_wait_token_keeps_waiting_without_a_new_cookie() {
    for exp in [NOW + 1, NOW + 60, NOW] {
        let token = mint::mint(K1, "wait", exp, UID, "key1");
        let v = run(50, Some(&token));
        assert_eq!(v.decision, Decision::Wait, "exp={exp}");
        assert_eq!(v.cookie, CookieAction::Keep);
        assert_eq!(v.wait_exp, Some(exp));
        assert_eq!(v.transition, None);
    }
}

/// Whether the VCL-format wait token for (`exp`, `uid`) wins at `p`.
fn wins(exp: u64, uid: &str, p: u8) -> bool {
    let text = format!("dec=wait&exp={exp}&uid={uid}&kid=key1");
    lottery::wins(mint::seed(&mint::vcl_sig(K1, &text)), Percentage::whole(p))
}

#[test]
fn expired_wait_token_enters_the_lottery_seeded_by_its_signature() {
    let (mut admitted, mut rewaited) = (0, 0);
    for i in 0..200u64 {
        let uid = format!("198.51.100.{i}");
        // Expired by 1..=30 s: inside the default redeem window (one wait period).
        let exp = NOW - 1 - i % 30;
        let token = mint::mint(K1, "wait", exp, &uid, "key1");
        let v = decide(NOW, &uid, Some(&token), &settings(30), &keys());
        if wins(exp, &uid, 30) {
            admitted += 1;
            assert_eq!(v.decision, Decision::Allow);
            assert_eq!(v.transition, Some(Transition::LotteryWon));
            // From the draw's first second: the same token whenever it is redeemed.
            let allow = mint::mint(K1, "allow", exp + 1 + 3600, &uid, "key1");
            assert_eq!(v.cookie, CookieAction::Set(allow));
            assert_eq!(v.exp, Some(exp + 1 + 3600));
            assert_eq!(v.wait_exp, None);
        } else {
            rewaited += 1;
            assert_eq!(v.decision, Decision::ReWait);
            assert_eq!(v.transition, Some(Transition::LotteryLost));
            assert_eq!(v.cookie, CookieAction::Set(expected_wait_token(NOW, &uid)));
            assert_eq!(v.wait_exp, Some(mint::address_exp(NOW, &uid, 30)));
        }
        // Presenting the same token again never re-rolls it.
        let again = decide(NOW, &uid, Some(&token), &settings(30), &keys());
        assert_eq!(again.decision, v.decision);
    }
    assert!(admitted > 20 && rewaited > 80, "{admitted} / {rewaited}");
}

#[test]
fn a_winning_wait_token_cannot_be_replayed_after_its_redeem_window() {
    // Find a token that wins at 50 %.
    let exp = (0..)
        .map(|i| NOW - 1 - i)
        .find(|&exp| wins(exp, UID, 50))
        .unwrap();
    let token = mint::mint(K1, "wait", exp, UID, "key1");
    let at = |now: u64| decide(now, UID, Some(&token), &settings(50), &keys());
    // Honest visitor, on schedule: from eligibility to the end of the window, it wins.
    for now in [exp + 1, exp + 15, exp + 30] {
        assert_eq!(
            at(now).decision,
            Decision::Allow,
            "now = exp + {}",
            now - exp
        );
    }
    // A kept copy, presented later: re-waits with a fresh token, no draw.
    for now in [exp + 31, exp + 3600, exp + 86_400 * 30] {
        let v = at(now);
        assert_eq!(v.decision, Decision::ReWait);
        assert_eq!(v.transition, Some(Transition::RedeemWindowPassed));
        assert_eq!(v.cookie, CookieAction::Set(expected_wait_token(now, UID)));
    }
    // The window is configurable.
    let mut s = settings(50);
    s.redeem_window = Some(5);
    let v = decide(exp + 6, UID, Some(&token), &s, &keys());
    assert_eq!(v.transition, Some(Transition::RedeemWindowPassed));
    assert_eq!(
        decide(exp + 5, UID, Some(&token), &s, &keys()).decision,
        Decision::Allow
    );
}

#[test]
fn an_honest_visitor_refreshing_on_schedule_always_gets_a_draw() {
    use waiting_room::admission::refresh::refresh_after;
    use waiting_room::settings::draw_grid::DrawGrid;
    use waiting_room::settings::refresh_mode::RefreshMode;
    // However the page schedules the visit, it lands inside the redeem window.
    for arrival in NOW..NOW + 30 {
        for uid in ["192.0.2.1", "192.0.2.77", "2001:db8::5"] {
            let first = decide(arrival, uid, None, &settings(50), &keys());
            let exp = first.wait_exp.unwrap();
            let CookieAction::Set(token) = first.cookie else {
                panic!("no token")
            };
            for (mode, grid) in [
                (RefreshMode::Eligible, DrawGrid::Address),
                (RefreshMode::Eligible, DrawGrid::Global),
                (RefreshMode::Fixed, DrawGrid::Address),
                (RefreshMode::Fixed, DrawGrid::Global),
            ] {
                // Follow the page's refreshes until the token is eligible.
                let mut now = arrival;
                loop {
                    now += refresh_after(mode, grid, now, exp, uid, 30);
                    let v = decide(now, uid, Some(&token), &settings(50), &keys());
                    if v.decision != Decision::Wait {
                        assert_ne!(v.transition, Some(Transition::RedeemWindowPassed));
                        break;
                    }
                }
            }
        }
    }
}

#[test]
fn unexpired_allow_token_is_allowed_and_renewed() {
    for exp in [NOW + 1, NOW] {
        let token = mint::mint(K1, "allow", exp, UID, "key1");
        let v = run(50, Some(&token));
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.transition, None);
        assert_eq!(v.cookie, CookieAction::Set(expected_allow_token(NOW)));
    }
}

#[test]
fn expired_allow_token_starts_waiting_again() {
    let token = mint::mint(K1, "allow", NOW - 1, UID, "key1");
    let v = run(50, Some(&token));
    assert_eq!(v.decision, Decision::Anon);
    assert_eq!(v.transition, Some(Transition::SessionExpired));
    assert_eq!(v.rejection, None);
    assert_eq!(v.cookie, CookieAction::Set(expected_wait_token(NOW, UID)));
}

#[test]
fn one_address_holds_one_token_per_point_of_its_grid_whenever_its_devices_arrive() {
    let exp = mint::address_exp(NOW, UID, 30);
    // Every arrival up to `d` before the point gets the token for that point.
    let first = decide(exp - 89, UID, None, &settings(50), &keys()).cookie;
    for arrival in exp - 89..=exp - 30 {
        assert_eq!(
            decide(arrival, UID, None, &settings(50), &keys()).cookie,
            first
        );
    }
    // A later device gets the next point's token, which the first device gets by
    // losing at this point: the same token, the same draw.
    let later = decide(exp - 29, UID, None, &settings(50), &keys());
    assert_eq!(later.wait_exp, Some(exp + 60));
    let token = mint::mint(K1, "wait", exp, UID, "key1");
    assert!(!wins(exp, UID, 1), "pick a token that loses at 1 %");
    for back in 1..=30 {
        let loser = decide(exp + back, UID, Some(&token), &settings(1), &keys());
        assert_eq!(loser.transition, Some(Transition::LotteryLost));
        assert_eq!(loser.cookie, later.cookie);
    }
    let other = decide(exp - 89, "192.0.2.11", None, &settings(50), &keys()).cookie;
    assert_ne!(first, other);
}

#[test]
fn a_loser_draws_again_exactly_two_periods_later() {
    for i in 0..100u64 {
        let uid = format!("198.51.100.{i}");
        let exp = mint::address_exp(NOW, &uid, 30);
        let token = mint::mint(K1, "wait", exp, &uid, "key1");
        let v = decide(exp + 1, &uid, Some(&token), &settings(10), &keys());
        if v.decision == Decision::ReWait {
            assert_eq!(v.wait_exp, Some(exp + 60), "{uid}");
        }
    }
}

#[test]
fn same_client_in_one_slot_gets_one_token_and_other_clients_differ_on_the_global_grid() {
    let settings = |p| Settings {
        draw_grid: DrawGrid::Global,
        ..settings(p)
    };
    let slot_start = NOW / 30 * 30;
    let a = decide(slot_start, UID, None, &settings(50), &keys()).cookie;
    let b = decide(slot_start + 29, UID, None, &settings(50), &keys()).cookie;
    let next_slot = decide(slot_start + 30, UID, None, &settings(50), &keys()).cookie;
    let other = decide(slot_start, "192.0.2.11", None, &settings(50), &keys()).cookie;
    assert_eq!(a, b);
    assert_ne!(a, next_slot);
    assert_ne!(a, other);
}

#[test]
fn slot_alignment_examples() {
    use waiting_room::admission::grid::global_expiry as wait_expiry;
    // The VCL's own example: 60 s slots, arrivals at 16:05:23 and 16:05:45 both
    // expire at 16:07:00. 1700000040 is a whole minute.
    let minute = 1_700_000_040;
    assert_eq!(wait_expiry(minute + 23, 60), minute + 120);
    assert_eq!(wait_expiry(minute + 45, 60), minute + 120);
    assert_eq!(wait_expiry(minute, 60), minute + 120);
    assert_eq!(wait_expiry(minute + 59, 60), minute + 120);
    assert_eq!(wait_expiry(minute + 60, 60), minute + 180);
    // Every arrival waits at least one whole period, at most two.
    for now in minute..minute + 90 {
        let wait = wait_expiry(now, 30) - now;
        assert!((31..=60).contains(&wait), "now={now} wait={wait}");
    }
    // A zero duration never divides by zero.
    assert_eq!(wait_expiry(minute, 0), minute + 2);
}

fn rejection(cookie: &str) -> Option<Rejection> {
    let v = run(50, Some(cookie));
    assert_eq!(v.decision, Decision::Anon, "{}", mint::open(cookie));
    assert_eq!(v.cookie, CookieAction::Set(expected_wait_token(NOW, UID)));
    v.rejection
}

#[test]
fn tampered_tokens_are_anon_with_the_right_reason() {
    let exp = NOW + 1000;
    let good = format!("dec=wait&exp={exp}&uid={UID}&kid=key1");
    let sig = mint::vcl_sig(K1, &good);
    let with = |text: &str, sig: &str| mint::encode(&format!("{text}&sig={sig}"));

    // Each signed field changed, signature left as it was.
    let cases = [
        good.replace("dec=wait", "dec=allow"),
        good.replace(&format!("exp={exp}"), &format!("exp={}", exp + 1)),
        good.replace("kid=key1", "kid=key2"),
    ];
    for text in cases {
        assert_eq!(
            rejection(&with(&text, &sig)),
            Some(Rejection::BadSignature),
            "{text}"
        );
    }
    // Another client's address: refused before the key is even looked up.
    let other_uid = good.replace(UID, "192.0.2.99");
    assert_eq!(
        rejection(&with(&other_uid, &sig)),
        Some(Rejection::UidMismatch {
            token_uid: "192.0.2.99".into()
        })
    );
    // A key id the store does not hold: an attacker cannot pick an unknown kid and write dec=allow.
    let unknown = good.replace("kid=key1", "kid=nokey");
    let forged = format!("dec=allow&exp={exp}&uid={UID}&kid=nokey");
    for text in [unknown, forged] {
        assert_eq!(
            rejection(&with(&text, &sig)),
            Some(Rejection::UnknownKey {
                kid: "nokey".into()
            })
        );
    }
    // One byte of the signature changed, at every position.
    for i in 2..sig.len() {
        let mut bytes = sig.clone().into_bytes();
        bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(bytes).unwrap();
        assert_eq!(
            rejection(&with(&good, &flipped)),
            Some(Rejection::BadSignature)
        );
    }
    // Signed with a key the room does not know under that id.
    let wrong_key = mint::mint("not-the-key", "allow", exp, UID, "key1");
    assert_eq!(rejection(&wrong_key), Some(Rejection::BadSignature));
    // Not a token at all.
    assert_eq!(
        rejection("%%%"),
        Some(Rejection::Malformed(Malformed::NotBase64))
    );
    assert_eq!(
        rejection(&with(&good, &sig.to_uppercase().replace("0X", "0x"))),
        Some(Rejection::Malformed(Malformed::Sig))
    );
}

#[test]
fn rotation_accepts_every_key_still_in_the_store_and_signs_with_the_active_one() {
    let old = mint::mint(K2, "allow", NOW + 100, UID, "key2");
    let v = run(50, Some(&old));
    assert_eq!(v.decision, Decision::Allow);
    // Renewed under the active key (key1), not the key it came with.
    assert_eq!(v.cookie, CookieAction::Set(expected_allow_token(NOW)));

    let mut s = settings(50);
    s.active_key = "key2".into();
    let v = decide(NOW, UID, None, &s, &keys());
    let exp = mint::address_exp(NOW, UID, 30);
    assert_eq!(
        v.cookie,
        CookieAction::Set(mint::mint(K2, "wait", exp, UID, "key2"))
    );
}

#[test]
fn removing_a_key_revokes_every_token_it_signed() {
    let token = mint::mint(K2, "allow", NOW + 100, UID, "key2");
    let mut store = keys();
    store.remove("key2");
    let v = decide(NOW, UID, Some(&token), &settings(50), &store);
    assert_eq!(v.decision, Decision::Anon);
    assert_eq!(
        v.rejection,
        Some(Rejection::UnknownKey { kid: "key2".into() })
    );
    // An emptied key is as good as removed: the empty key never verifies.
    store.insert("key2".into(), String::new());
    let forged = mint::mint("", "allow", NOW + 100, UID, "key2");
    let v = decide(NOW, UID, Some(&forged), &settings(50), &store);
    assert_eq!(
        v.rejection,
        Some(Rejection::UnknownKey { kid: "key2".into() })
    );
}

#[test]
fn unusable_active_key_never_signs_and_says_so() {
    let allow = mint::mint(K1, "allow", NOW + 100, UID, "key1");
    for active in ["", "missing", "empty"] {
        let mut store = keys();
        store.insert("empty".into(), String::new());
        let mut s = settings(50);
        s.active_key = active.into();

        let v = decide(NOW, UID, None, &s, &store);
        assert_eq!(v.decision, Decision::Anon);
        assert_eq!(v.cookie, CookieAction::Keep, "active_key={active:?}");
        assert!(v.signing_key_missing);

        // An admitted visitor stays admitted until their token runs out.
        let v = decide(NOW, UID, Some(&allow), &s, &store);
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.cookie, CookieAction::Keep);
        assert!(v.signing_key_missing);
    }
}

/// Regression, found by the fuzzed round trip `decode(mint(claims))`: an
/// `active_key` whose id no token can carry (a `&`, a space, over 255 characters)
/// signed tokens that never decoded, so every visitor started waiting again on
/// every request, forever. Such a key now counts as unusable.
#[test]
fn regression_active_key_id_no_token_can_carry_minted_unreadable_tokens() {
    let too_long = "k".repeat(256);
    for active in ["k&1", "k 1", too_long.as_str()] {
        let unreadable = mint::mint("a real secret", "wait", NOW + 60, UID, active);
        assert!(
            waiting_room::credentials::token::decode(&unreadable).is_err(),
            "{active}"
        );

        let mut store = keys();
        store.insert(active.to_string(), "a real secret".into());
        let mut s = settings(50);
        s.active_key = active.to_string();
        let v = decide(NOW, UID, None, &s, &store);
        assert_eq!(
            (v.decision, v.cookie, v.signing_key_missing),
            (Decision::Anon, CookieAction::Keep, true),
            "active_key={active:?}"
        );
    }
}

/// An `active_key` a token can carry but no Fastly store can hold (a `!`, a `/`):
/// its read would fail on Fastly as an invalid name, so it is unusable, known
/// without asking the store, whatever a file store holds under it.
#[test]
fn an_active_key_no_store_can_hold_is_unusable_and_never_read() {
    for active in ["k!1", "k/1", "k:1"] {
        let asked = std::cell::RefCell::new(Vec::new());
        let store = |kid: &str| {
            asked.borrow_mut().push(kid.to_string());
            Some("a real secret of thirty-two bytes or more".to_string())
        };
        let mut s = settings(50);
        s.active_key = active.to_string();
        let v = decide(NOW, UID, None, &s, &store);
        assert_eq!(
            (v.decision, v.cookie, v.signing_key_missing),
            (Decision::Anon, CookieAction::Keep, true),
            "active_key={active:?}"
        );
        assert!(asked.borrow().is_empty(), "{active:?}: {asked:?}");
    }
}

#[test]
fn wait_and_deny_need_no_key() {
    let mut s = settings(0);
    s.active_key = "missing".into();
    let v = decide(NOW, UID, None, &s, &keys());
    assert_eq!(
        (v.cookie, v.signing_key_missing),
        (CookieAction::Delete, false)
    );
}

fn fixed(percentage: u8) -> Settings {
    Settings {
        session_mode: waiting_room::settings::config::SessionMode::Fixed,
        ..settings(percentage)
    }
}

#[test]
fn fixed_sessions_start_at_first_admission_and_do_not_slide() {
    // A lottery winner starts a session at its draw's first second (`exp + 1`),
    // carrying that admission time.
    let exp = (0..)
        .map(|i| NOW - 1 - i)
        .find(|&e| wins(e, UID, 50))
        .unwrap();
    let adm = exp + 1;
    let winner = mint::mint(K1, "wait", exp, UID, "key1");
    let v = decide(NOW, UID, Some(&winner), &fixed(50), &keys());
    assert_eq!(v.decision, Decision::Allow);
    let started = mint::mint_fixed(K1, adm + 3600, UID, "key1", adm);
    assert_eq!(v.cookie, CookieAction::Set(started.clone()));

    // Later requests keep the token as it is: the expiry does not move.
    for later in [NOW + 1, adm + 1800, adm + 3599] {
        let v = decide(later, UID, Some(&started), &fixed(50), &keys());
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(
            (v.cookie, v.session),
            (CookieAction::Keep, Some(Session::Kept))
        );
        assert_eq!(v.exp, Some(adm + 3600));
    }

    // One second past admission + timeout, the session is over.
    let v = decide(adm + 3601, UID, Some(&started), &fixed(50), &keys());
    assert_eq!(v.decision, Decision::Anon);
    assert_eq!(v.transition, Some(Transition::SessionExpired));
}

#[test]
fn fixed_sessions_follow_a_live_change_of_the_timeout() {
    let running = mint::mint_fixed(K1, NOW + 3600, UID, "key1", NOW - 100);
    let mut s = fixed(50);
    s.allow_period_timeout = 60;
    let v = decide(NOW, UID, Some(&running), &s, &keys());
    assert_eq!(v.transition, Some(Transition::SessionExpired));
    s.allow_period_timeout = 7200;
    // Past the token's own expiry, the longer timeout still holds it.
    let v = decide(NOW + 3700, UID, Some(&running), &s, &keys());
    assert_eq!(
        (v.decision, v.cookie),
        (Decision::Allow, CookieAction::Keep)
    );
    assert_eq!(v.exp, Some(NOW - 100 + 7200));
}

#[test]
fn fixed_sessions_do_not_renew_vcl_allow_tokens() {
    let vcl = mint::mint(K1, "allow", NOW + 10, UID, "key1");
    let v = decide(NOW, UID, Some(&vcl), &fixed(50), &keys());
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.cookie, CookieAction::Keep);
    let v = decide(NOW + 11, UID, Some(&vcl), &fixed(50), &keys());
    assert_eq!(v.decision, Decision::Anon);
}

#[test]
fn fixed_sessions_keep_their_start_when_everyone_is_admitted() {
    let running = mint::mint_fixed(K1, NOW + 3000, UID, "key1", NOW - 600);
    let v = decide(NOW, UID, Some(&running), &fixed(100), &keys());
    assert_eq!(
        (v.cookie, v.session),
        (CookieAction::Keep, Some(Session::Kept))
    );
    let v = decide(NOW, UID, None, &fixed(100), &keys());
    let fresh = mint::mint_fixed(K1, NOW + 3600, UID, "key1", NOW);
    assert_eq!(v.cookie, CookieAction::Set(fresh));
}

#[test]
fn sliding_sessions_renew_fixed_tokens_without_their_start() {
    let running = mint::mint_fixed(K1, NOW + 1000, UID, "key1", NOW - 600);
    let v = run(50, Some(&running));
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.cookie, CookieAction::Set(expected_allow_token(NOW)));
}

/// Lazy renewal: a live allow token is re-issued only when less than half of the
/// timeout remains, when more than the whole timeout remains (it was lowered), or
/// when another key than `active_key` signed it; otherwise it is kept (no cookie,
/// the origin's headers untouched).
#[test]
fn a_live_allow_token_is_renewed_only_when_due() {
    let timeout = 3600;
    for (exp, kid, renewed) in [
        (NOW + timeout, "key1", false),
        (NOW + timeout / 2, "key1", false),
        (NOW + timeout / 2 - 1, "key1", true),
        (NOW + 1, "key1", true),
        (NOW, "key1", true),
        (NOW + timeout + 1, "key1", true),
        (NOW + timeout, "key2", true),
    ] {
        let key = if kid == "key1" { K1 } else { K2 };
        let token = mint::mint(key, "allow", exp, UID, kid);
        for percentage in [50, 100] {
            let v = run(percentage, Some(&token));
            assert_eq!(v.decision, Decision::Allow);
            let (cookie, session, held_exp) = if renewed {
                let renewed = CookieAction::Set(expected_allow_token(NOW));
                (renewed, Session::Renewed, NOW + timeout)
            } else {
                (CookieAction::Keep, Session::Kept, exp)
            };
            assert_eq!(
                v.cookie,
                cookie,
                "exp=now+{} {kid} p={percentage}",
                exp - NOW
            );
            assert_eq!((v.session, v.exp), (Some(session), Some(held_exp)));
        }
    }
}

#[test]
fn a_fixed_session_is_re_signed_only_when_the_key_rotates() {
    let running = mint::mint_fixed(K2, NOW + 100, UID, "key2", NOW - 3500);
    let v = decide(NOW, UID, Some(&running), &fixed(50), &keys());
    let moved = mint::mint_fixed(K1, NOW + 100, UID, "key1", NOW - 3500);
    assert_eq!(
        (v.cookie, v.session),
        (CookieAction::Set(moved), Some(Session::Renewed))
    );
}

/// `pop_new_sessions_per_minute`: once the POP has admitted its ceiling's worth of
/// won draws in the last minute, a winning token waits on as after a loss; a
/// token counted already (another tab) is admitted without being counted again.
#[test]
fn a_won_draw_over_the_pops_ceiling_waits_on_as_after_a_loss() {
    use waiting_room::admission::ceiling::{ExactCounts, PopCounts, draw_key};
    let ceiling = Settings {
        pop_new_sessions_per_minute: Some(2),
        ..settings(50)
    };
    let winners: Vec<(String, u64)> = (0..)
        .map(|i| (format!("198.51.100.{i}"), NOW - 1 - i % 20))
        .filter(|(uid, exp)| wins(*exp, uid, 50))
        .take(3)
        .collect();
    let mut counts = ExactCounts::default();
    let draw = |counts: &ExactCounts, (uid, exp): &(String, u64), settings: &Settings| {
        let token = mint::mint(K1, "wait", *exp, uid, "key1");
        decide_in_pop(NOW, 0, uid, Some(&token), settings, &keys(), Some(counts))
    };
    for winner in &winners[..2] {
        let v = draw(&counts, winner, &ceiling);
        assert_eq!(v.transition, Some(Transition::LotteryWon));
        assert_eq!(v.pop_count, Some(draw_key(&winner.0, winner.1)));
        counts.count(NOW, v.pop_count.unwrap());
    }
    // Another tab of the first winner: admitted, not counted again.
    let tab = draw(&counts, &winners[0], &ceiling);
    assert_eq!((tab.decision, tab.pop_count), (Decision::Allow, None));
    // The third winner is held: a new wait token on its address's grid.
    let (uid, _) = &winners[2];
    let held = draw(&counts, &winners[2], &ceiling);
    assert_eq!(held.decision, Decision::ReWait);
    assert_eq!(held.transition, Some(Transition::CeilingReached));
    assert_eq!(
        held.cookie,
        CookieAction::Set(expected_wait_token(NOW, uid))
    );
    assert_eq!(held.wait_exp, Some(mint::address_exp(NOW, uid, 30)));
    assert_eq!((held.session, held.pop_count), (None, None));
    // Without the setting, the same counts hold nobody.
    assert_eq!(
        draw(&counts, &winners[2], &settings(50)).decision,
        Decision::Allow
    );
    // A minute on, the POP's count has room again.
    assert_eq!(counts.last_minute(NOW + 60), Some(0));
}

/// In a room open at 100 % every new session counts against the POP's ceiling,
/// and once it is reached a newcomer starts waiting; a live session is kept.
#[test]
fn a_room_open_at_100_percent_holds_newcomers_over_the_pops_ceiling() {
    use waiting_room::admission::ceiling::{ExactCounts, draw_key};
    let open = Settings {
        pop_new_sessions_per_minute: Some(1),
        ..settings(100)
    };
    let mut counts = ExactCounts::default();
    let first = decide_in_pop(NOW, 0, "198.51.100.1", None, &open, &keys(), Some(&counts));
    assert_eq!(
        (first.decision, first.session),
        (Decision::Allow, Some(Session::New))
    );
    assert_eq!(first.pop_count, Some(draw_key("198.51.100.1", NOW)));
    counts.count(NOW, first.pop_count.unwrap());
    let held = decide_in_pop(NOW, 0, UID, None, &open, &keys(), Some(&counts));
    assert_eq!(held.decision, Decision::Anon);
    assert_eq!(held.transition, Some(Transition::CeilingReached));
    assert_eq!(
        held.cookie,
        CookieAction::Set(expected_wait_token(NOW, UID))
    );
    // A visitor holding a live session keeps it, uncounted.
    let live = mint::mint(K1, "allow", NOW + 3000, UID, "key1");
    let kept = decide_in_pop(NOW, 0, UID, Some(&live), &open, &keys(), Some(&counts));
    assert_eq!(
        (kept.decision, kept.session),
        (Decision::Allow, Some(Session::Kept))
    );
    assert_eq!(kept.pop_count, None);
    // A waiting visitor's wait token is what counts, and what is held.
    let waiting = mint::mint(K1, "wait", NOW + 30, UID, "key1");
    let rewait = decide_in_pop(NOW, 0, UID, Some(&waiting), &open, &keys(), Some(&counts));
    assert_eq!(
        (rewait.decision, rewait.transition),
        (Decision::ReWait, Some(Transition::CeilingReached))
    );
}

/// Queue-all holds everyone: newcomers wait, a draw that would run (won or lost)
/// waits on with a new wait token, live sessions go on; at 0 % it holds rather
/// than denies.
#[test]
fn queue_all_holds_newcomers_and_draws_and_keeps_sessions() {
    for percentage in [0, 50, 100] {
        let held = Settings {
            queue_all: true,
            ..settings(percentage)
        };
        let run_held = |cookie: Option<&str>| decide(NOW, UID, cookie, &held, &keys());
        let newcomer = run_held(None);
        assert_eq!(newcomer.decision, Decision::Anon, "{percentage} %");
        assert_eq!(
            newcomer.cookie,
            CookieAction::Set(expected_wait_token(NOW, UID))
        );
        // Due for a draw (expired a second ago, within its redeem window).
        let due = mint::mint(K1, "wait", NOW - 1, UID, "key1");
        let v = run_held(Some(&due));
        assert_eq!(
            (v.decision, v.transition),
            (Decision::ReWait, Some(Transition::QueueAll)),
            "{percentage} %"
        );
        assert_eq!(v.cookie, CookieAction::Set(expected_wait_token(NOW, UID)));
        assert_eq!(v.session, None);
        let session = expected_allow_token(NOW - 60);
        let v = run_held(Some(&session));
        assert_eq!(v.decision, Decision::Allow, "{percentage} %");
        assert_ne!(v.session, Some(Session::New));
    }
}

/// A decision in a POP whose counts are `pop`.
fn decide_in_pop(
    now: u64,
    millis: u16,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl waiting_room::credentials::keys::KeyStore,
    pop: Option<&dyn waiting_room::admission::ceiling::PopCounts>,
) -> Verdict {
    let request = waiting_room::admission::decision::Request {
        now,
        millis,
        uid,
        cookie,
    };
    let context = waiting_room::admission::decision::Context {
        pop,
        ..waiting_room::admission::decision::Context::new(settings)
    };
    waiting_room::admission::decision::decide(&request, &context, keys)
}
