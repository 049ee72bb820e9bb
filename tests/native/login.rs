//! Logins (`identity = login`), natively with fixed keys: every token a site or an
//! attacker may present gets its documented outcome ([`Login`]), a person's uid is
//! the documented hash, and a room for members lets only them wait.

use std::cell::Cell;
use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use test_support::logins::{self, AUDIENCE, ISSUER, KIDS};
use waiting_room::credentials::keys::Unread;
use waiting_room::credentials::login::{self, LEEWAY, Login, LoginRefused};
use waiting_room::credentials::login_mint::{MintKey, mint, mint_with_header};
use waiting_room::settings::config::Settings;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::identity::{LoginKey, WhoMayWait, parse_login_keys, sign_in_location};
use waiting_room::{Action, Visit, plan};

const NOW: u64 = 1_700_000_023;
const ADDRESS: &str = "192.0.2.10";

fn settings(extra: &[(&str, &str)]) -> Settings {
    let mut map: HashMap<String, String> = logins::settings_members()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    map.insert("enabled".into(), "true".into());
    map.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Settings::read(&|k| map.get(k).cloned()).0
}

/// The login of `token` under `settings`, the HS256 secret read from a store that
/// holds it; also how many secrets were read.
fn verify_counting(token: &str, settings: &Settings) -> (Login, u32) {
    let reads = Cell::new(0);
    let login = login::verify(Some(token), settings, ADDRESS, NOW, &mut |kid| {
        reads.set(reads.get() + 1);
        Ok((kid == KIDS[2]).then(|| logins::HS256_SECRET.as_bytes().to_vec()))
    });
    (login, reads.get())
}

fn verify(token: &str) -> Login {
    verify_counting(token, &settings(&[])).0
}

fn refused(token: &str) -> LoginRefused {
    match verify(token) {
        Login::Refused(why) => why,
        other => panic!("{token}: {other:?}"),
    }
}

#[test]
fn each_key_type_names_the_person_by_the_documented_hash() {
    for (key, kid) in logins::keys().iter().zip(KIDS) {
        let token = mint(&logins::claims("alice", NOW), key, kid);
        match verify(&token) {
            Login::Person { uid, claims } => {
                assert_eq!(uid, logins::person_uid("alice", None), "{kid}");
                assert_eq!(claims["sub"], "alice");
            }
            other => panic!("{kid}: {other:?}"),
        }
    }
    // Another person, another uid; the uid never holds the claim.
    let bob = mint(&logins::claims("bob", NOW), &logins::keys()[0], KIDS[0]);
    assert_eq!(verify(&bob).uid(ADDRESS), logins::person_uid("bob", None));
    assert_ne!(
        logins::person_uid("bob", None),
        logins::person_uid("alice", None)
    );
}

#[test]
fn bound_to_the_address_the_uid_changes_with_it() {
    let bound = settings(&[("login_binds_address", "true")]);
    let token = mint(&logins::claims("alice", NOW), &logins::keys()[1], KIDS[1]);
    for address in [ADDRESS, "198.51.100.7"] {
        let login = login::verify(Some(&token), &bound, address, NOW, &mut |_| Ok(None));
        assert_eq!(
            login.uid(address),
            logins::person_uid("alice", Some(address))
        );
    }
}

#[test]
fn every_bad_token_gets_its_outcome() {
    let bad = logins::bad_tokens(NOW);
    assert!(bad.len() >= 30);
    for (what, token, word) in bad {
        assert_eq!(refused(&token).word(), word, "{what}");
    }
    // The raw signature verifies: the DER and zero cases fail on their form alone.
    let [_, es, _] = logins::keys();
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": KIDS[1]}).to_string());
    let message = format!(
        "{header}.{}",
        URL_SAFE_NO_PAD.encode(logins::claims("alice", NOW).to_string())
    );
    let signed = format!(
        "{message}.{}",
        URL_SAFE_NO_PAD.encode(es.sign(message.as_bytes()))
    );
    assert!(matches!(verify(&signed), Login::Person { .. }));
}

#[test]
fn foreign_key_headers_are_ignored_and_the_leeway_holds() {
    let [rs, ..] = logins::keys();
    let claims = logins::claims("alice", NOW);
    // A token naming its own key (jwk, jku, x5u, x5c) is still verified with ours.
    let attacker = MintKey::from_pem(logins::RS256_1024_PEM).unwrap();
    for header in [
        json!({"alg": "RS256", "kid": KIDS[0], "jwk": attacker.public_jwk(KIDS[0])}),
        json!({"alg": "RS256", "kid": KIDS[0], "jku": "https://evil.example/jwks"}),
        json!({"alg": "RS256", "kid": KIDS[0], "x5u": "https://evil.example/cert"}),
        json!({"alg": "RS256", "kid": KIDS[0], "x5c": ["MIIB"]}),
    ] {
        assert!(
            matches!(
                verify(&mint_with_header(&header, &claims, &attacker)),
                Login::Refused(_)
            ),
            "{header}"
        );
        assert!(
            matches!(
                verify(&mint_with_header(&header, &claims, &rs)),
                Login::Person { .. }
            ),
            "{header}"
        );
    }
    let mut late = claims.clone();
    late["exp"] = json!(NOW - LEEWAY);
    late["nbf"] = json!(NOW + LEEWAY);
    assert!(matches!(
        verify(&mint(&late, &rs, KIDS[0])),
        Login::Person { .. }
    ));
}

#[test]
fn only_a_configured_hs256_key_is_read_and_a_failed_read_is_no_login() {
    let s = settings(&[]);
    let [rs, _, hs] = logins::keys();
    // An unknown kid names no store entry: nothing is read.
    let (login, reads) = verify_counting(&mint(&logins::claims("a", NOW), &hs, "waitingroom"), &s);
    assert_eq!(
        (login, reads),
        (Login::Refused(LoginRefused::UnknownKid), 0)
    );
    let (_, reads) = verify_counting(&mint(&logins::claims("a", NOW), &rs, KIDS[0]), &s);
    assert_eq!(reads, 0);
    let token = mint(&logins::claims("a", NOW), &hs, KIDS[2]);
    let (login, reads) = verify_counting(&token, &s);
    assert!(matches!(login, Login::Person { .. }));
    assert_eq!(reads, 1);
    // Failed: no login at all, never the address.
    let login = login::verify(Some(&token), &s, ADDRESS, NOW, &mut |_| Err(Unread::Failed));
    assert_eq!(login, Login::Unread);
    // Missing: the key is not there, as if unknown.
    let login = login::verify(Some(&token), &s, ADDRESS, NOW, &mut |_| Ok(None));
    assert_eq!(login, Login::Refused(LoginRefused::UnknownKid));
}

#[test]
fn incomplete_settings_accept_no_login() {
    let token = mint(&logins::claims("alice", NOW), &logins::keys()[0], KIDS[0]);
    for missing in ["login_issuer", "login_audience", "login_hash_key"] {
        let s = settings(&[(missing, "")]);
        let login = login::verify(Some(&token), &s, ADDRESS, NOW, &mut |_| Ok(None));
        assert_eq!(
            login,
            Login::Refused(LoginRefused::Unconfigured),
            "{missing}"
        );
    }
    let s = settings(&[("login_keys", "[]")]);
    let login = login::verify(Some(&token), &s, ADDRESS, NOW, &mut |_| Ok(None));
    assert_eq!(login, Login::Refused(LoginRefused::UnknownKid));
    assert_eq!(
        login::verify(None, &s, ADDRESS, NOW, &mut |_| Ok(None)),
        Login::Absent
    );
}

#[test]
fn login_keys_keep_only_what_verifies_and_refuse_weak_keys() {
    let [rs, es, _] = logins::keys();
    let weak = MintKey::from_pem(logins::RS256_1024_PEM)
        .unwrap()
        .public_jwk("weak");
    let mut with_chain = rs.public_jwk("rs");
    with_chain["x5c"] = json!(["MIIC..."]);
    with_chain["use"] = json!("sig");
    let mut encryption = rs.public_jwk("enc");
    encryption["use"] = json!("enc");
    let mut wrong_alg = es.public_jwk("es2");
    wrong_alg["alg"] = json!("ES384");
    let jwks = json!({"keys": [
        with_chain, weak, encryption, wrong_alg, es.public_jwk("es"),
        {"kty": "oct", "kid": "hs", "k": "c2VjcmV0"}, {"kty": "oct", "kid": "hs2"},
        {"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": "AAAA"},
        {"kty": "EC", "kid": "off", "crv": "P-256", "x": URL_SAFE_NO_PAD.encode([1u8; 32]), "y": URL_SAFE_NO_PAD.encode([2u8; 32])},
        es.public_jwk("es"),
    ]});
    let keys = parse_login_keys(&jwks.to_string()).unwrap();
    let kids: Vec<&str> = keys.iter().map(|k| k.kid.as_str()).collect();
    assert_eq!(kids, ["rs", "es", "hs2"]);
    assert_eq!(LoginKey::from_jwk(&weak), Err("rsa-bits"));
    assert_eq!(LoginKey::from_jwk(&encryption), Err("use"));
    assert_eq!(
        keys[0].to_jwk().as_object().unwrap().len(),
        5,
        "x5c and use stripped"
    );
    assert_eq!(parse_login_keys("[]"), None);
    assert_eq!(parse_login_keys("not json"), None);
}

#[test]
fn the_token_comes_from_bearer_then_the_cookie() {
    let cookies = Some("a=1; session=from-cookie; b=2");
    assert_eq!(
        login::presented(Some("Bearer from-header"), cookies, Some("session")),
        Some("from-header")
    );
    assert_eq!(
        login::presented(Some("bearer  spaced "), None, None),
        Some("spaced")
    );
    assert_eq!(
        login::presented(Some("Basic dXNlcg=="), cookies, Some("session")),
        Some("from-cookie")
    );
    assert_eq!(login::presented(None, cookies, None), None);
    assert_eq!(login::presented(None, cookies, Some("other")), None);
}

#[test]
fn sign_in_returns_to_the_own_path_only() {
    let read = |raw: &str| settings(&[("sign_in_url", raw)]).sign_in_url;
    assert_eq!(read("/account/login").as_deref(), Some("/account/login"));
    for other_site in [
        "//evil.example/login",
        "/\\evil.example",
        "http://shop.example/login",
    ] {
        assert_eq!(read(other_site), None, "{other_site}");
    }
    assert_eq!(
        sign_in_location("/login", "/events"),
        "/login?return_to=%2Fevents"
    );
    assert_eq!(
        sign_in_location("https://shop.example/login", "/events/a?b=1"),
        "https://shop.example/login?return_to=%2Fevents%2Fa%3Fb%3D1"
    );
    assert_eq!(
        sign_in_location(
            "https://id.example/in?app=1&next={return}",
            "//evil.example/x"
        ),
        "https://id.example/in?app=1&next=%2Fevil.example%2Fx"
    );
    assert_eq!(
        sign_in_location("https://shop.example/login?x=1", "/\\evil.example"),
        "https://shop.example/login?x=1&return_to=%2Fevil.example"
    );
}

fn planned(login: Option<&Login>, who: &str, accept: Option<&str>) -> waiting_room::Plan {
    let mut s = settings(&[
        ("who_may_wait", who),
        ("sign_in_url", "https://shop.example/login"),
        ("allow_percentage", "100"),
    ]);
    s.enabled = true;
    let context = RequestContext::from(s);
    let uid = login.map_or(ADDRESS, |l| l.uid(ADDRESS));
    let visit = Visit {
        now: NOW,
        uid,
        path: "/events",
        path_and_query: "/events?x=1",
        accept,
        login,
        ..Visit::default()
    };
    let keys = HashMap::from([(
        "key1".to_string(),
        "a-strong-test-key-of-at-least-32-bytes".to_string(),
    )]);
    plan(&visit, &context, &keys)
}

#[test]
fn rooms_for_members_send_the_others_to_sign_in() {
    let alice = verify(&mint(
        &logins::claims("alice", NOW),
        &logins::keys()[0],
        KIDS[0],
    ));
    let mut presale = logins::claims("pat", NOW);
    presale["tier"] = json!(["presale", "vip"]);
    let pat = verify(&mint(&presale, &logins::keys()[0], KIDS[0]));
    let expired = verify(&mint(
        &json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": 1}),
        &logins::keys()[0],
        KIDS[0],
    ));
    // An open room: everyone waits or enters, a refused token by address.
    for login in [&Login::Absent, &alice, &expired] {
        assert_eq!(planned(Some(login), "anyone", None).action, Action::Forward);
    }
    let p = planned(Some(&expired), "anyone", None);
    assert!(
        p.log_line().contains(&format!("uid={ADDRESS}"))
            && p.log_line().ends_with("login_refused=expired"),
        "{}",
        p.log_line()
    );
    // Members only: the others to sign in (browsers) or 401 (apps).
    for login in [Some(&Login::Absent), Some(&expired), None] {
        let p = planned(login, "signed-in", None);
        assert_eq!(p.action, Action::Redirect);
        assert_eq!(
            p.location.as_deref(),
            Some("https://shop.example/login?return_to=%2Fevents%3Fx%3D1")
        );
        assert!(
            p.log_line()
                .contains("decision=refused reason=login-required"),
            "{}",
            p.log_line()
        );
        assert_eq!(p.set_cookie, None);
        assert_eq!(
            planned(login, "signed-in", Some("application/json")).action,
            Action::Refuse(401)
        );
    }
    let p = planned(Some(&alice), "signed-in", None);
    assert_eq!(p.action, Action::Forward);
    assert!(
        p.log_line()
            .contains(&format!("uid={}", logins::person_uid("alice", None)))
    );
    // One audience: its members wait, other logins are refused.
    assert_eq!(
        planned(Some(&pat), "tier=presale", None).action,
        Action::Forward
    );
    let p = planned(Some(&alice), "tier=presale", None);
    assert_eq!(p.action, Action::Refuse(403));
    assert!(p.log_line().contains("reason=not-in-audience"));
    assert_eq!(
        planned(Some(&Login::Absent), "tier=presale", None).action,
        Action::Redirect
    );
    // A login whose key could not be read: try again, never as the address.
    for who in ["anyone", "signed-in"] {
        let p = planned(Some(&Login::Unread), who, None);
        assert_eq!(
            p.action,
            Action::Serve(waiting_room::pages::page::Page::OriginUnavailable)
        );
        assert!(p.log_line().contains("reason=unreadable"));
    }
}

#[test]
fn who_may_wait_reads_fail_closed() {
    let read = |raw: &str| settings(&[("who_may_wait", raw)]).who_may_wait;
    assert_eq!(read("anyone"), WhoMayWait::Anyone);
    assert_eq!(read(" signed-in "), WhoMayWait::SignedIn);
    assert_eq!(
        read("tier=presale"),
        WhoMayWait::Audience {
            claim: "tier".into(),
            value: "presale".into()
        }
    );
    for bad in ["members", "=x", "tier=", "a b=c"] {
        assert_eq!(read(bad), WhoMayWait::SignedIn, "{bad}");
    }
}
