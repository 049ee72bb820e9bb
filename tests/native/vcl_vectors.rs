//! Known answers: cookies minted by Fastly's VCL solution (tests/vectors/vcl-cookies.json)
//! are exactly the cookies this program mints, decodes, verifies and seeds the lottery from.

use std::collections::HashMap;

use serde_json::Value;
use test_support::decisions::decide;
use waiting_room::admission::decision::Decision;
use waiting_room::credentials::keys::SigningKey;
use waiting_room::credentials::token::{self, Claims, TokenKind};
use waiting_room::settings::config::Settings;
use waiting_room::settings::percentage::Percentage;

fn cases() -> Vec<Value> {
    let text = include_str!("../vectors/vcl-cookies.json");
    let doc: Value = serde_json::from_str(text).unwrap();
    let cases = doc["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 2, "vector file lost its cases");
    cases
}

fn claims(case: &Value) -> Claims {
    Claims {
        dec: match case["dec"].as_str().unwrap() {
            "wait" => TokenKind::Wait,
            "allow" => TokenKind::Allow,
            other => panic!("unknown dec {other}"),
        },
        exp: case["exp"].as_u64().unwrap(),
        uid: case["uid"].as_str().unwrap().to_string(),
        kid: case["key_id"].as_str().unwrap().to_string(),
        adm: None,
        arr: None,
        toll: None,
    }
}

fn key(case: &Value) -> SigningKey {
    SigningKey::new(case["key"].as_str().unwrap()).unwrap()
}

#[test]
fn string_to_sign_matches_the_vcl() {
    for case in cases() {
        assert_eq!(claims(&case).string_to_sign(), case["string_to_sign"]);
    }
}

#[test]
fn minted_cookie_is_byte_identical_to_the_vcl() {
    for case in cases() {
        assert_eq!(
            claims(&case).mint(&key(&case)),
            case["cookie_value"],
            "{}",
            case["name"]
        );
    }
}

#[test]
fn vcl_cookie_decodes_verifies_and_seeds_like_the_vcl() {
    for case in cases() {
        let presented = token::decode(case["cookie_value"].as_str().unwrap()).unwrap();
        assert_eq!(presented.claims, claims(&case));
        assert!(presented.verify(&key(&case)));
        assert_eq!(
            u64::from(presented.lottery_seed()),
            case["lottery_seed"].as_u64().unwrap()
        );
    }
}

#[test]
fn vcl_cookie_keeps_its_state_before_expiry() {
    for case in cases() {
        let keys = HashMap::from([(
            case["key_id"].as_str().unwrap().to_string(),
            case["key"].as_str().unwrap().to_string(),
        )]);
        let settings = Settings {
            allow_percentage: Percentage::whole(50),
            active_key: case["key_id"].as_str().unwrap().to_string(),
            ..Settings::default()
        };
        let exp = case["exp"].as_u64().unwrap();
        let verdict = decide(
            exp - 1,
            case["uid"].as_str().unwrap(),
            case["cookie_value"].as_str(),
            &settings,
            &keys,
        );
        let want = match case["dec"].as_str().unwrap() {
            "wait" => Decision::Wait,
            _ => Decision::Allow,
        };
        assert_eq!(verdict.decision, want, "{}", case["name"]);
        assert_eq!(verdict.rejection, None);
    }
}

#[test]
fn slot_aligned_wait_expiry_matches_the_vector() {
    // The first vector's exp is floor(1700000023 / 30) * 30 + 2 * 30.
    assert_eq!(
        waiting_room::admission::grid::global_expiry(1_700_000_023, 30),
        1_700_000_070
    );
}
