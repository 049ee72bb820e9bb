//! The external challenge's rows of the decision table (docs/reference/bot-toll.md, "An
//! external challenge instead"), natively, with a fixed clock and a fake
//! verifier that records each call: the provider is asked only at a due draw,
//! only for a token of its shape, and its outcome is the toll's payment.

use test_support::mint;

use std::cell::RefCell;
use std::collections::HashMap;

use waiting_room::admission::decision::{
    Context, CookieAction, Decision, Request, Transition, Verdict, decide,
};
use waiting_room::admission::lottery;
use waiting_room::bots::challenge::{BotChallenge, Outcome, Reason, Verifier};
use waiting_room::bots::toll::MAX_BITS;
use waiting_room::settings::config::Settings;
use waiting_room::settings::percentage::Percentage;

const NOW: u64 = 1_700_000_023;
const UID: &str = "192.0.2.10";
const K1: &str = "secret-one";
const TOKEN: &str = "XXXX.DUMMY.TOKEN.XXXX";
const TURNSTILE: &str = r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#;
const OPEN: &str =
    r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA","when_down":"open"}"#;

/// Answers `outcome` and records each call: the token and the wait token's signature.
#[derive(Debug)]
struct Fake {
    outcome: Outcome,
    calls: RefCell<Vec<(String, [u8; 32])>>,
}

impl Fake {
    fn new(outcome: Outcome) -> Fake {
        Fake {
            outcome,
            calls: RefCell::default(),
        }
    }

    fn calls(&self) -> usize {
        self.calls.borrow().len()
    }
}

impl Verifier for Fake {
    fn verify(&self, token: &str, signature: &[u8; 32]) -> Outcome {
        self.calls
            .borrow_mut()
            .push((token.to_string(), *signature));
        self.outcome.clone()
    }
}

fn failed(code: &str) -> Outcome {
    Outcome::Failed(Reason::from_codes([code]))
}

fn down() -> Outcome {
    Outcome::ProviderDown(Reason::sanitize("status 500"))
}

fn keys() -> HashMap<String, String> {
    HashMap::from([("key1".to_string(), K1.to_string())])
}

/// A random-mode room at 50 % with the challenge `challenge`, and `extra` settings.
fn room(challenge: &str, extra: &[(&str, &str)]) -> Settings {
    let mut store: HashMap<&str, String> = HashMap::from([
        ("enabled", "true".to_string()),
        ("allow_percentage", "50".to_string()),
        ("bot_challenge", challenge.to_string()),
    ]);
    store.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    Settings::from_lookup(|key| store.get(key).cloned())
}

fn run_at(
    now: u64,
    settings: &Settings,
    cookie: Option<&str>,
    toll_cookie: Option<&str>,
    verifier: &Fake,
) -> Verdict {
    let context = Context {
        toll_nonce: toll_cookie,
        challenge: Some(verifier),
        ..Context::new(settings)
    };
    decide(&Request::new(now, UID, cookie), &context, &keys())
}

fn run(settings: &Settings, cookie: &str, toll_cookie: Option<&str>, verifier: &Fake) -> Verdict {
    run_at(NOW, settings, Some(cookie), toll_cookie, verifier)
}

/// The plain text of the token a verdict sets.
fn set_text(v: &Verdict) -> String {
    match &v.cookie {
        CookieAction::Set(value) => mint::open(value),
        other => panic!("no token set: {other:?}"),
    }
}

/// A wait token owing `toll`, due for its draw now, that wins (or loses) at 50 %;
/// with its signature.
fn due_token(toll: u8, win: bool) -> (String, [u8; 32]) {
    let (token, sig) = (1..30)
        .map(|ago| mint::mint_toll(K1, NOW - ago, UID, "key1", toll))
        .find(|(_, sig)| {
            let seed = mint::seed(&format!("0x{sig}"));
            lottery::wins(seed, Percentage::whole(50)) == win
        })
        .expect("one of 29 tokens");
    (token, hex::decode(sig).unwrap().try_into().unwrap())
}

#[test]
fn a_newcomer_owes_the_most_and_nobody_is_asked() {
    let fake = Fake::new(Outcome::Passed);
    let v = run_at(NOW, &room(TURNSTILE, &[]), None, Some(TOKEN), &fake);
    assert_eq!(v.decision, Decision::Anon);
    assert!(set_text(&v).contains("&toll=32&"), "{}", set_text(&v));
    assert_eq!(v.toll.map(|t| t.bits), Some(MAX_BITS));
    assert_eq!((fake.calls(), v.challenge), (0, None));
}

#[test]
fn a_passed_challenge_is_drawn_once_and_the_place_owes_nothing_more() {
    let settings = room(TURNSTILE, &[]);
    for win in [true, false] {
        let fake = Fake::new(Outcome::Passed);
        let (token, signature) = due_token(MAX_BITS, win);
        let v = run(&settings, &token, Some(TOKEN), &fake);
        let drawn = if win {
            Transition::LotteryWon
        } else {
            Transition::LotteryLost
        };
        assert_eq!(v.transition, Some(drawn));
        assert!(v.toll_paid);
        assert_eq!(v.challenge, Some(Outcome::Passed));
        // Asked once, with the cookie's token, for this wait token.
        assert_eq!(*fake.calls.borrow(), [(TOKEN.to_string(), signature)]);
        if win {
            continue;
        }
        // The loser's next token is paid: its draw asks nobody.
        let next = set_text(&v);
        assert!(next.contains("&toll=0&"), "{next}");
        assert_eq!(v.toll, None);
        let CookieAction::Set(next_cookie) = &v.cookie else {
            unreachable!()
        };
        let exp = mint::number(&next, "exp");
        let v = run_at(exp + 1, &settings, Some(next_cookie), None, &fake);
        assert!(
            matches!(
                v.transition,
                Some(Transition::LotteryWon | Transition::LotteryLost)
            ),
            "{v:?}"
        );
        assert_eq!((fake.calls(), v.challenge), (1, None));
    }
}

#[test]
fn a_failed_challenge_is_held_and_owes_again() {
    let settings = room(TURNSTILE, &[]);
    for win in [true, false] {
        let fake = Fake::new(failed("invalid-input-response"));
        let (token, _) = due_token(MAX_BITS, win);
        let v = run(&settings, &token, Some(TOKEN), &fake);
        assert_eq!(
            (v.decision, v.transition),
            (Decision::ReWait, Some(Transition::TollUnpaid))
        );
        assert_eq!(v.session, None);
        assert!(!v.toll_paid);
        assert!(set_text(&v).contains("&toll=32&"));
        assert_eq!(v.toll.map(|t| t.bits), Some(MAX_BITS));
        assert_eq!(v.challenge, Some(failed("invalid-input-response")));
        assert_eq!(fake.calls(), 1);
    }
}

#[test]
fn a_provider_down_holds_a_closed_room_and_draws_an_open_one() {
    let (token, _) = due_token(MAX_BITS, true);
    let fake = Fake::new(down());
    let v = run(&room(TURNSTILE, &[]), &token, Some(TOKEN), &fake);
    assert_eq!(
        v.transition,
        Some(Transition::TollUnpaid),
        "closed by default"
    );
    assert_eq!(v.challenge, Some(down()));
    let v = run(&room(OPEN, &[]), &token, Some(TOKEN), &fake);
    assert_eq!(v.transition, Some(Transition::LotteryWon));
    assert_eq!(v.challenge, Some(down()));
    // An operator's mistake is a failure, never "down": an open room holds too.
    let fake = Fake::new(failed("missing-input-secret"));
    let v = run(&room(OPEN, &[]), &token, Some(TOKEN), &fake);
    assert_eq!(v.transition, Some(Transition::TollUnpaid));
}

#[test]
fn nobody_is_asked_before_the_draw_is_due() {
    let settings = room(TURNSTILE, &[]);
    let fake = Fake::new(Outcome::Passed);
    let (token, sig) = mint::mint_toll(K1, NOW + 20, UID, "key1", MAX_BITS);
    let v = run(&settings, &token, Some(TOKEN), &fake);
    assert_eq!(
        (v.decision, v.cookie.clone()),
        (Decision::Wait, CookieAction::Keep)
    );
    // Still owed: the page shows the widget again.
    assert_eq!(v.toll.map(|t| hex::encode(t.signature)), Some(sig));
    assert_eq!((fake.calls(), v.challenge, v.toll_paid), (0, None, false));
    // Past the redeem window, or while everyone is held, there is no draw either.
    let (late, _) = mint::mint_toll(K1, NOW - 100, UID, "key1", MAX_BITS);
    let v = run(&settings, &late, Some(TOKEN), &fake);
    assert_eq!(v.transition, Some(Transition::RedeemWindowPassed));
    let (due, _) = due_token(MAX_BITS, true);
    let v = run(
        &room(TURNSTILE, &[("queue_all", "true")]),
        &due,
        Some(TOKEN),
        &fake,
    );
    assert_eq!(v.transition, Some(Transition::QueueAll));
    assert_eq!(fake.calls(), 0);
}

#[test]
fn a_cookie_that_is_no_provider_token_asks_nobody_and_is_held() {
    let settings = room(TURNSTILE, &[]);
    let fake = Fake::new(Outcome::Passed);
    let (token, _) = due_token(MAX_BITS, true);
    let long = "a".repeat(2049);
    for cookie in [
        None,
        Some(""),
        Some("a;b"),
        Some("a b"),
        Some("%41"),
        Some(&long[..]),
    ] {
        let v = run(&settings, &token, cookie, &fake);
        assert_eq!(v.transition, Some(Transition::TollUnpaid), "{cookie:?}");
        assert_eq!(v.challenge, None);
    }
    assert_eq!(fake.calls(), 0);
}

#[test]
fn without_a_verifier_or_with_an_unreadable_setting_every_due_draw_is_held() {
    let (token, _) = due_token(MAX_BITS, true);
    let settings = room(TURNSTILE, &[]);
    let context = Context {
        toll_nonce: Some(TOKEN),
        ..Context::new(&settings)
    };
    let v = decide(&Request::new(NOW, UID, Some(&token)), &context, &keys());
    assert_eq!(v.transition, Some(Transition::TollUnpaid));
    // A typo holds (and the log says config_fallback=bot_challenge), the verifier unasked.
    let typo = room(r#"{"provider":"turnstyle","site_key":"k"}"#, &[]);
    assert_eq!(typo.bot_challenge, BotChallenge::Unreadable);
    let fake = Fake::new(Outcome::Passed);
    let v = run(&typo, &token, Some(TOKEN), &fake);
    assert_eq!(v.transition, Some(Transition::TollUnpaid));
    assert_eq!(fake.calls(), 0);
    assert!(set_text(&v).contains("&toll=32&"));
}

#[test]
fn the_challenge_replaces_the_proof_of_work_and_switching_strands_nobody() {
    // Both set: a nonce pays nothing, the provider's word does.
    let both = room(TURNSTILE, &[("bot_toll_bits", "8")]);
    let (token, sig) = due_token(MAX_BITS, true);
    let nonce = mint::toll_nonce(&hex::encode(sig), 8).to_string();
    let fake = Fake::new(failed("invalid-input-response"));
    let v = run(&both, &token, Some(&nonce), &fake);
    assert_eq!(v.transition, Some(Transition::TollUnpaid));
    // Switched to a proof of work: a challenge's token owes the new difficulty.
    let pow = Settings::from_lookup(|key| match key {
        "enabled" => Some("true".into()),
        "allow_percentage" => Some("50".into()),
        "bot_toll_bits" => Some("8".into()),
        _ => None,
    });
    let v = run(&pow, &token, Some(&nonce), &fake);
    assert_eq!(v.transition, Some(Transition::LotteryWon));
    // Switched to a challenge: a proof of work's token owes the challenge.
    let (small, _) = due_token(8, true);
    let v = run(
        &room(TURNSTILE, &[]),
        &small,
        Some(TOKEN),
        &Fake::new(Outcome::Passed),
    );
    assert_eq!(v.transition, Some(Transition::LotteryWon));
    let v = run(&room(TURNSTILE, &[]), &small, None, &fake);
    assert_eq!(v.transition, Some(Transition::TollUnpaid));
}

/// FIFO: a place at the cutoff is admitted only once its challenge passes; a
/// failure keeps its place.
#[test]
fn fifo_admits_a_place_at_the_cutoff_only_once_passed() {
    let cutoff = (NOW - 60) * 1000;
    let cutoff_text = cutoff.to_string();
    let settings = room(
        TURNSTILE,
        &[("queueing_method", "fifo"), ("fifo_cutoff", &cutoff_text)],
    );
    let arr = cutoff - 5;
    let text = format!(
        "dec=wait&exp={}&uid={UID}&kid=key1&arr={arr}&toll=32",
        NOW + 200
    );
    let sig = mint::vcl_sig(K1, &text);
    let token = mint::encode(&format!("{text}&sig={sig}"));
    let fake = Fake::new(failed("timeout-or-duplicate"));
    let v = run(&settings, &token, Some(TOKEN), &fake);
    assert_eq!(
        (v.decision, v.transition, v.arr),
        (Decision::Wait, Some(Transition::TollUnpaid), Some(arr))
    );
    let fake = Fake::new(Outcome::Passed);
    let v = run(&settings, &token, Some(TOKEN), &fake);
    assert_eq!(
        (v.decision, v.transition),
        (Decision::Allow, Some(Transition::CutoffReached))
    );
    assert_eq!(fake.calls(), 1);
    // Behind the cutoff: nobody is asked.
    let text = format!(
        "dec=wait&exp={}&uid={UID}&kid=key1&arr={}&toll=32",
        NOW + 200,
        cutoff + 5
    );
    let sig = mint::vcl_sig(K1, &text);
    let behind = mint::encode(&format!("{text}&sig={sig}"));
    let v = run(&settings, &behind, Some(TOKEN), &fake);
    assert_eq!(v.decision, Decision::Wait);
    assert_eq!(fake.calls(), 1);
}
