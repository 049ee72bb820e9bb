//! The external challenge, black-box: the built wasm in Viceroy, its challenge
//! backends pointing at the local stand-in of the providers' `siteverify`
//! (test-support's challenge_server, which checks each request against the
//! providers' documented API), the secret in a Secret Store, real HTTP from
//! 127.0.0.x visitors (docs/reference/bot-toll.md, "An external challenge instead").

use std::time::{Duration, Instant};

use crate::{KEEP_PAGE, assert_logged, assert_logged_but_not, due_token};
use demo_origin::ORIGIN_MARKER;
use support::challenge_server::{ChallengeServer, Mode, StandIn};
use support::http::Response;
use support::mint;
use support::viceroy_room::{Room, RoomSpec};

const TURNSTILE: &str = r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#;
const TURNSTILE_OPEN: &str =
    r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA","when_down":"open"}"#;
const HCAPTCHA: &str =
    r#"{"provider":"hcaptcha","site_key":"10000000-ffff-ffff-ffff-000000000001"}"#;
const TURNSTILE_TOKEN: &str = "XXXX.DUMMY.TOKEN.XXXX";
const HCAPTCHA_TOKEN: &str = "10000000-aaaa-bbbb-cccc-000000000001";

/// A room with `challenge`, its backends at `server`, and the stand-in's
/// secret in the Secret Store (or none).
fn launch(
    challenge: &str,
    server: &ChallengeServer,
    secrets: Option<&[(&str, &str)]>,
    timeout_ms: Option<u64>,
) -> Room {
    let config = [("bot_challenge", challenge)];
    Room::launch(RoomSpec {
        config: &config,
        challenge_server: Some(server),
        challenge_secrets: secrets,
        challenge_timeout_ms: timeout_ms,
        ..RoomSpec::default()
    })
}

/// The Secret Store entry of the Turnstile stand-in's site key (Cloudflare's
/// public test secret, [`StandIn::turnstile`]).
fn turnstile_secrets() -> [(&'static str, &'static str); 1] {
    [(
        "1x00000000000000000000AA",
        "1x0000000000000000000000000000000AA",
    )]
}

/// Presents a winning due token for `visitor`, owing the challenge (a toll of 32), with
/// `provider_token` in the toll cookie.
fn draw(room: &Room, visitor: u8, provider_token: &str) -> Response {
    let (winner, _) = due_token(visitor, 32, true);
    let cookies = format!("waiting_room={winner}; waiting_toll={provider_token}");
    room.get_with_cookie(visitor, "/events", &cookies)
}

fn assert_no_violations(server: &ChallengeServer) {
    assert_eq!(server.violations(), [], "{:#?}", server.requests());
}

#[test]
fn a_newcomer_gets_the_widget_and_apps_get_the_challenge() {
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    let secrets = turnstile_secrets();
    let room = launch(TURNSTILE, &server, Some(&secrets), None);
    let r = room.get(2, "/events", &[]);
    assert_eq!(r.status, 200);
    assert!(mint::open(&r.room_cookie().unwrap()).contains("&toll=32&"));
    assert!(
        r.body
            .contains("<div class=\"cf-turnstile\" data-sitekey=\"1x00000000000000000000AA\""),
        "{}",
        r.body
    );
    assert!(r.body.contains("data-cookie=\"waiting_toll\""));
    assert!(r.body.contains("window.wrChallengeDone"));
    // The proof of work is not asked as well.
    assert!(!r.body.contains("id=\"toll\""), "{}", r.body);
    assert_logged_but_not(&room, &[" toll=32 "], &["challenge="]);

    let r = room.get(3, "/events", &[("Accept", "application/json")]);
    let json: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        json["challenge"],
        serde_json::json!({
            "cookie": "waiting_toll",
            "provider": "turnstile",
            "site_key": "1x00000000000000000000AA",
        })
    );
    assert!(json.get("toll").is_none(), "{json}");
    assert!(
        server.requests().is_empty(),
        "nobody is asked before a draw"
    );
}

#[test]
fn a_good_token_is_drawn_and_a_bad_one_held() {
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    let secrets = turnstile_secrets();
    let room = launch(TURNSTILE, &server, Some(&secrets), None);

    let r = draw(&room, 4, "forged.token");
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert!(mint::open(&r.room_cookie().unwrap()).contains("&toll=32&"));
    assert_logged_but_not(
        &room,
        &[
            "transition=toll-unpaid",
            " challenge=failed challenge_reason=invalid-input-response",
        ],
        &["ALERT"],
    );

    let r = draw(&room, 5, TURNSTILE_TOKEN);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", r.body);
    assert!(!r.body.contains("waiting_toll"), "the origin never sees it");
    assert_logged(&room, &["transition=lottery-won", " challenge=passed"]);
    // The documented request: the secret, the token, the visitor's address and
    // a key that lets this wait token's retry verify again.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let good = &requests[1];
    assert_eq!(
        (good.method.as_str(), good.path.as_str()),
        ("POST", "/turnstile/v0/siteverify")
    );
    assert_eq!(good.param("secret"), Some(secrets[0].1));
    assert_eq!(good.param("response"), Some(TURNSTILE_TOKEN));
    assert_eq!(good.param("remoteip"), Some("127.0.0.5"));
    assert!(good.param("idempotency_key").is_some());
    // A cookie of the wrong shape never reaches the provider.
    let r = draw(&room, 6, "a,b");
    assert!(r.body.contains(KEEP_PAGE));
    assert_eq!(server.requests().len(), 2);
    assert_no_violations(&server);
}

#[test]
fn hcaptcha_is_asked_its_own_way() {
    let stand_in = StandIn::hcaptcha();
    let secret = stand_in.secret.clone();
    let server = ChallengeServer::start(stand_in).unwrap();
    let secrets = [("10000000-ffff-ffff-ffff-000000000001", secret.as_str())];
    let room = launch(HCAPTCHA, &server, Some(&secrets), None);
    let r = room.get(2, "/events", &[]);
    assert!(r.body.contains("class=\"h-captcha\""), "{}", r.body);
    let r = draw(&room, 3, HCAPTCHA_TOKEN);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", room.last_log_line());
    let requests = server.requests();
    assert_eq!(requests[0].path, "/siteverify");
    assert_eq!(
        requests[0].param("sitekey"),
        Some("10000000-ffff-ffff-ffff-000000000001")
    );
    assert_no_violations(&server);
}

#[test]
fn a_provider_down_holds_a_closed_room_and_draws_an_open_one() {
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    server.set_mode(Mode::Status(500));
    let secrets = turnstile_secrets();
    let closed = launch(TURNSTILE, &server, Some(&secrets), None);
    let r = draw(&closed, 7, TURNSTILE_TOKEN);
    assert_eq!(r.status, 200);
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert_logged(
        &closed,
        &[
            "transition=toll-unpaid",
            " challenge=down challenge_reason=status-500",
        ],
    );
    let open = launch(TURNSTILE_OPEN, &server, Some(&secrets), None);
    let r = draw(&open, 8, TURNSTILE_TOKEN);
    assert!(r.body.contains(ORIGIN_MARKER), "{}", open.last_log_line());
    assert_logged(&open, &[" challenge=down"]);
    assert_no_violations(&server);
}

#[test]
fn a_provider_that_hangs_times_out_into_a_held_visitor_not_an_error() {
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    let secrets = turnstile_secrets();
    let room = launch(TURNSTILE, &server, Some(&secrets), Some(500));
    server.set_mode(Mode::Hang(Duration::from_secs(4)));
    let started = Instant::now();
    let r = draw(&room, 9, TURNSTILE_TOKEN);
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert!(took < Duration::from_secs(3), "waited {took:?}");
    assert_logged(
        &room,
        &[
            "transition=toll-unpaid",
            " challenge=down challenge_reason=send-",
        ],
    );
    assert!(!room.viceroy_output().contains("panicked"));
}

#[test]
fn a_missing_secret_holds_everyone_and_alerts() {
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    // No Secret Store at all, then one without this site key's entry.
    let other = [("another-site-key", "s")];
    for secrets in [None, Some(&other[..])] {
        let room = launch(TURNSTILE_OPEN, &server, secrets, None);
        let r = draw(&room, 10, TURNSTILE_TOKEN);
        assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
        assert_logged(
            &room,
            &[
                "transition=toll-unpaid",
                " challenge=failed challenge_reason=missing-input-secret",
                " ALERT=challenge-operator:missing-input-secret",
            ],
        );
    }
    assert!(server.requests().is_empty());
}

#[test]
fn an_unreadable_setting_holds_and_says_so() {
    let server = ChallengeServer::start(StandIn::turnstile()).unwrap();
    let secrets = turnstile_secrets();
    let room = launch(
        r#"{"provider":"turnstyle","site_key":"1x00000000000000000000AA"}"#,
        &server,
        Some(&secrets),
        None,
    );
    let r = draw(&room, 11, TURNSTILE_TOKEN);
    assert!(r.body.contains(KEEP_PAGE), "{}", r.body);
    assert_logged(
        &room,
        &["transition=toll-unpaid", "config_fallback=bot_challenge"],
    );
    // No widget it cannot name, and no proof of work either.
    assert!(!r.body.contains("wrChallengeDone") && !r.body.contains("id=\"toll\""));
    assert!(server.requests().is_empty());
}
