//! The request plan, natively: scope, which page, which Set-Cookie, what is logged.

use test_support::mint;

use std::collections::HashMap;
use std::time::Duration;

use control::origin_rule::OriginAnswer;
use control::record::Record;
use waiting_room::admission::decision::{Decision, Session};
use waiting_room::answer::{BodySource, OriginOutcome, origin_page};
use waiting_room::credentials::cookie::DELETE_COOKIE;
use waiting_room::log::Answered;
use waiting_room::pages::page::{MAX_ORIGIN_PAGE_BYTES, Page, PageBody};
use waiting_room::settings::config::Settings;
use waiting_room::settings::context::RequestContext;
use waiting_room::{Action, OriginCookie, Visit, plan};

const NOW: u64 = 1_700_000_023;
const K1: &str = "a-strong-test-key-of-at-least-32-bytes";

fn keys() -> HashMap<String, String> {
    HashMap::from([("key1".to_string(), K1.to_string())])
}

fn settings(pairs: &[(&str, &str)]) -> RequestContext {
    let mut map: HashMap<String, String> = [("enabled", "true"), ("allow_percentage", "50")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    map.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    RequestContext::of(Settings::read(&|k| map.get(k).cloned()))
}

fn visit<'a>(path: &'a str, cookie_header: Option<&'a str>) -> Visit<'a> {
    Visit {
        now: NOW,
        millis: 0,
        uid: "192.0.2.10",
        path,
        path_and_query: path,
        cookie_header,
        ..Visit::default()
    }
}

#[test]
fn outside_scope_forwards_untouched_and_logs_why() {
    let p = plan(&visit("/about", None), &settings(&[]), &keys());
    assert_eq!(
        (p.action, &p.set_cookie, &p.verdict),
        (Action::Forward, &None, &None)
    );
    assert_eq!(
        p.log_line(),
        "waitingroom t=1700000023 decision=bypass scope=unprotected-path uid=192.0.2.10 path=/about"
    );
    let p = plan(
        &visit("/events", None),
        &settings(&[("enabled", "no")]),
        &keys(),
    );
    assert_eq!(p.action, Action::Forward);
    assert!(p.log_line().contains("scope=disabled"));
}

#[test]
fn each_decision_maps_to_its_page() {
    let s = settings(&[]);
    let wait = mint::mint(K1, "wait", NOW + 10, "192.0.2.10", "key1");
    let wait_header = format!("x=1; waiting_room={wait}");
    let cases = [
        (None, "50", Action::Serve(Page::StartWaiting)),
        (
            Some(wait_header.as_str()),
            "50",
            Action::Serve(Page::KeepWaiting),
        ),
        (None, "0", Action::Serve(Page::Deny)),
        (None, "100", Action::Forward),
    ];
    for (cookie, p, want) in cases {
        let s = Settings {
            allow_percentage: p.parse().unwrap(),
            ..s.settings.clone()
        }
        .into();
        assert_eq!(plan(&visit("/events", cookie), &s, &keys()).action, want);
    }
}

#[test]
fn set_cookie_carries_the_token_path_and_lifetime() {
    let p = plan(
        &visit("/events", None),
        &settings(&[("cookie_lifetime", "99")]),
        &keys(),
    );
    let expected = mint::mint(
        K1,
        "wait",
        mint::address_exp(NOW, "192.0.2.10", 30),
        "192.0.2.10",
        "key1",
    );
    assert_eq!(
        p.set_cookie.as_deref(),
        Some(
            format!("waiting_room={expected}; path=/; max-age=99; HttpOnly; SameSite=Lax").as_str()
        )
    );
    assert_eq!(
        p.log_line(),
        "waitingroom t=1700000023 decision=anon uid=192.0.2.10 p=50 exp=1700000096 path=/events"
    );
    let record: Record = p.log_line().parse().unwrap();
    assert_eq!(
        (record.t, record.decision, record.exp),
        (NOW, Some(Decision::Anon), Some(1_700_000_096))
    );
}

#[test]
fn the_origin_releases_an_admitted_session() {
    let allow = mint::mint(K1, "allow", NOW + 10, "192.0.2.10", "key1");
    let header = format!("waiting_room={allow}");
    let mut p = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    assert!(
        p.set_cookie
            .as_deref()
            .unwrap()
            .starts_with("waiting_room=ZGVj")
    );
    assert!(p.apply_release(Some(" 1 ")));
    assert_eq!(p.set_cookie.as_deref(), Some(DELETE_COOKIE));
    let record: Record = p.log_line().parse().unwrap();
    assert!(record.released, "{}", p.log_line());
    assert_eq!(record.session, Some(Session::Renewed));
}

#[test]
fn a_release_is_ignored_unless_the_room_admitted_the_request_and_the_value_is_1() {
    let allow = mint::mint(K1, "allow", NOW + 10, "192.0.2.10", "key1");
    let header = format!("waiting_room={allow}");
    let admitted = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    for value in [None, Some("0"), Some("yes"), Some(""), Some("11")] {
        let mut p = admitted.clone();
        assert!(!p.apply_release(value), "{value:?}");
        assert_eq!(p, admitted);
    }
    for mut p in [
        plan(&visit("/about", Some(&header)), &settings(&[]), &keys()),
        plan(&visit("/events", None), &settings(&[]), &keys()),
        plan(
            &visit("/events", None),
            &settings(&[("allow_percentage", "0")]),
            &keys(),
        ),
    ] {
        let before = p.clone();
        assert!(!p.apply_release(Some("1")));
        assert_eq!(p, before);
    }
}

#[test]
fn a_stale_controller_is_flagged_on_every_line_and_its_fallback_applies() {
    let stale = [
        ("allow_percentage", "50"),
        ("allow_percentage_fallback", "0"),
        ("controller_heartbeat", "1699990000"),
    ];
    let p = plan(&visit("/events", None), &settings(&stale), &keys());
    assert_eq!(p.action, Action::Serve(Page::Deny));
    assert!(p.log_line().contains(" p=0 "), "{}", p.log_line());
    let bypass = plan(&visit("/about", None), &settings(&stale), &keys());
    for line in [&p.log_line(), &bypass.log_line()] {
        assert!(line.parse::<Record>().unwrap().controller_stale, "{line}");
    }
    let fresh = [stale[0], stale[1], ("controller_heartbeat", "1700000000")];
    let p = plan(&visit("/events", None), &settings(&fresh), &keys());
    assert_eq!(p.action, Action::Serve(Page::StartWaiting));
    assert!(!p.log_line().contains("ALERT"), "{}", p.log_line());
}

#[test]
fn a_fractional_percentage_is_logged_and_shown_exactly() {
    let s = settings(&[("allow_percentage", "0.25")]);
    let p = plan(&visit("/events", None), &s, &keys());
    assert!(p.log_line().contains(" p=0.25 "), "{}", p.log_line());
    let status = p.status(Page::StartWaiting, &s, NOW);
    assert_eq!(status.render(b"{{allow_percentage}}"), b"0.25");
}

#[test]
fn the_room_cookie_is_found_among_others_and_the_first_one_counts() {
    let allow = mint::mint(K1, "allow", NOW + 10, "192.0.2.10", "key1");
    let header = format!("a=1; waiting_room={allow}; waiting_room=junk");
    let p = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    assert_eq!(p.action, Action::Forward);
}

#[test]
fn config_fallbacks_and_signing_alerts_reach_the_log() {
    let p = plan(
        &visit("/events", None),
        &settings(&[("wait_period_duration", "0"), ("active_key", "gone")]),
        &keys(),
    );
    assert_eq!(p.set_cookie, None);
    assert!(
        p.log_line()
            .ends_with(" ALERT=active-key-unusable:no-token-issued kid=gone config_fallback=wait_period_duration"),
        "{}",
        p.log_line()
    );
}

#[test]
fn a_weak_key_is_logged_once_per_request() {
    let weak = HashMap::from([("key1".to_string(), "short".to_string())]);
    let allow = mint::mint("short", "allow", NOW + 10, "192.0.2.10", "key1");
    let header = format!("waiting_room={allow}");
    // Used twice (to verify, then to sign the renewal), reported once.
    let p = plan(&visit("/events", Some(&header)), &settings(&[]), &weak);
    assert_eq!(p.action, Action::Forward);
    assert_eq!(
        p.log_line().matches("WARN=weak-key kid=key1").count(),
        1,
        "{}",
        p.log_line()
    );
    let strong = plan(&visit("/events", None), &settings(&[]), &keys());
    assert!(!strong.log_line().contains("WARN"), "{}", strong.log_line());
}

#[test]
fn log_line_escapes_and_clips_the_path() {
    let long = format!("/events/{}", "é".repeat(300));
    let p = plan(&visit(&long, None), &settings(&[]), &keys());
    assert!(p.log_line().len() < 500, "{}", p.log_line());
    assert!(!p.log_line().contains('\n'));
    let p = plan(&visit("/events/a\nb", None), &settings(&[]), &keys());
    assert!(
        p.log_line().contains("path=/events/a\\nb"),
        "{}",
        p.log_line()
    );
}

#[test]
fn the_origin_never_gets_the_room_cookie_and_other_cookies_stay_byte_for_byte() {
    let allow = mint::mint(K1, "allow", NOW + 10, "192.0.2.10", "key1");
    for (header, want) in [
        (None, OriginCookie::AsSent),
        (Some("a=1;b=2"), OriginCookie::AsSent),
        (Some("waiting_room=x"), OriginCookie::Remove),
        (
            Some(format!("a=1; waiting_room={allow}; b=2").as_str()),
            OriginCookie::Replace("a=1; b=2".into()),
        ),
    ] {
        for path in ["/events", "/about"] {
            let p = plan(&visit(path, header), &settings(&[]), &keys());
            assert_eq!(p.origin_cookie, want, "{header:?} {path}");
        }
    }
}

#[test]
fn an_origin_5xx_is_the_rooms_page_inside_the_room_only() {
    let allow = mint::mint(K1, "allow", NOW + 10, "192.0.2.10", "key1");
    let header = format!("waiting_room={allow}");
    let mut inside = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    assert_eq!(
        inside.origin_answered(502, None, Answered::Origin { ms: 3100 }),
        OriginOutcome::Unavailable
    );
    assert!(
        inside
            .log_line()
            .ends_with(" path=/events origin_ms=3100 origin_status=502"),
        "{}",
        inside.log_line()
    );
    let mut outside = plan(&visit("/about", None), &settings(&[]), &keys());
    assert_eq!(
        outside.origin_answered(502, Some("1"), Answered::Origin { ms: 9 }),
        OriginOutcome::PassOn
    );
    assert!(
        outside
            .log_line()
            .ends_with(" path=/about origin_ms=9 origin_status=502"),
        "{}",
        outside.log_line()
    );
    // A 5xx from Fastly's cache is no measure of the origin, and still the room's page.
    let mut cached = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    assert_eq!(
        cached.origin_answered(503, None, Answered::Cache),
        OriginOutcome::Unavailable
    );
    assert!(
        cached
            .log_line()
            .ends_with(" path=/events origin=cache origin_status=503")
    );
    let mut down = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    down.origin_unreachable("connection refused");
    assert!(
        down.log_line()
            .ends_with(" path=/events origin_error=connection%20refused")
    );
    for (p, origin) in [
        (
            &inside,
            Some(OriginAnswer::Answered {
                ms: 3100,
                status: 502,
            }),
        ),
        (
            &outside,
            Some(OriginAnswer::Answered { ms: 9, status: 502 }),
        ),
        (&cached, None),
        (&down, Some(OriginAnswer::Failed)),
    ] {
        let record: Record = p.log_line().parse().unwrap();
        assert_eq!(record.origin, origin, "{}", p.log_line());
    }
}

#[test]
fn every_answer_of_the_origins_logs_its_time_and_status_admitted_or_bypassed() {
    let allow = mint::mint(K1, "allow", NOW + 3000, "192.0.2.10", "key1");
    let header = format!("waiting_room={allow}");
    for (path, cookie, line) in [
        (
            "/events",
            Some(header.as_str()),
            "waitingroom t=1700000023 decision=allow uid=192.0.2.10 p=50 session=kept \
             exp=1700003023 path=/events origin_ms=42 origin_status=200",
        ),
        (
            "/about",
            None,
            "waitingroom t=1700000023 decision=bypass scope=unprotected-path \
             uid=192.0.2.10 path=/about origin_ms=42 origin_status=200",
        ),
    ] {
        let mut p = plan(&visit(path, cookie), &settings(&[]), &keys());
        assert_eq!(p.action, Action::Forward);
        assert_eq!(
            p.origin_answered(200, None, Answered::Origin { ms: 42 }),
            OriginOutcome::PassOn
        );
        assert_eq!(p.log_line(), line);
        let record: Record = p.log_line().parse().unwrap();
        assert_eq!(
            record.origin,
            Some(OriginAnswer::Answered {
                ms: 42,
                status: 200
            })
        );

        let mut p = plan(&visit(path, cookie), &settings(&[]), &keys());
        assert_eq!(
            p.origin_answered(200, None, Answered::Cache),
            OriginOutcome::PassOn
        );
        let cached = line.replace("origin_ms=42", "origin=cache");
        assert_eq!(p.log_line(), cached);
        assert_eq!(p.log_line().parse::<Record>().unwrap().origin, None);
    }
    // The origin's release follows its answer.
    let mut p = plan(&visit("/events", Some(&header)), &settings(&[]), &keys());
    p.origin_answered(200, Some("1"), Answered::Origin { ms: 0 });
    assert!(
        p.log_line()
            .ends_with(" origin_ms=0 origin_status=200 release=origin"),
        "{}",
        p.log_line()
    );
}

#[test]
fn the_cache_is_told_apart_by_the_pops_x_cache_entry_and_the_time_is_rounded() {
    let ms = Duration::from_millis;
    for (x_cache, cached) in [
        // Viceroy writes none: every local answer is the origin's.
        (None, false),
        (Some("MISS"), false),
        (Some("HIT"), true),
        (Some("hit"), true),
        // The origin's own X-Cache comes first, the POP's last.
        (Some("MISS, HIT"), true),
        (Some("HIT, MISS"), false),
        (Some("HIT,MISS"), false),
        (Some("MISS,  HIT "), true),
        (Some(""), false),
        (Some("HIT-STALE"), false),
    ] {
        let want = if cached {
            Answered::Cache
        } else {
            Answered::Origin { ms: 7 }
        };
        assert_eq!(Answered::of(x_cache, ms(7)), want, "{x_cache:?}");
    }
    for (elapsed, want) in [
        (Duration::ZERO, 0),
        (Duration::from_micros(499), 0),
        (Duration::from_micros(500), 1),
        (Duration::from_micros(41_499), 41),
        (Duration::from_micros(41_500), 42),
        (Duration::from_secs(30), 30_000),
        (Duration::MAX, u64::MAX),
    ] {
        assert_eq!(
            Answered::of(Some("MISS"), elapsed),
            Answered::Origin { ms: want },
            "{elapsed:?}"
        );
    }
}

#[test]
fn a_page_is_json_for_apps_and_a_store_template_for_browsers() {
    let s = settings(&[]);
    let p = plan(&visit("/events", None), &s, &keys());
    let app = Visit {
        accept: Some("application/json"),
        ..visit("/events", None)
    };
    let answer = p.page(Page::StartWaiting, &app, &s);
    assert_eq!(answer.status, 200);
    assert!(
        answer
            .headers
            .contains(&("Content-Type", "application/json".into()))
    );
    let BodySource::Ready(json) = answer.body else {
        panic!("no JSON body");
    };
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["decision"], "anon");
    let browser = Visit {
        accept: Some("text/html"),
        accept_language: Some("de-CH, fr;q=0.5"),
        pop: None,
        ..visit("/events", None)
    };
    let answer = p.page(Page::StartWaiting, &browser, &s);
    // No custom page listed: no page-store lookup.
    assert_eq!(answer.body, BodySource::Store(None));
    // The first of the visitor's languages the store holds, one lookup.
    for (listed, looked_up) in [
        (
            "startwaiting.fr,startwaiting.de,startwaiting",
            "startwaiting.de",
        ),
        ("startwaiting.fr,startwaiting", "startwaiting.fr"),
        ("startwaiting,keepwaiting.de", "startwaiting"),
    ] {
        let s = settings(&[("custom_pages", listed)]);
        let answer = p.page(Page::StartWaiting, &browser, &s);
        assert_eq!(
            answer.body,
            BodySource::Store(Some(looked_up.into())),
            "{listed}"
        );
    }
    // The refresh is the plan's, for every page that refreshes.
    let refresh = format!("{}; url=/events", p.refresh_after.unwrap());
    assert!(answer.headers.contains(&("Refresh", refresh)));
    let unavailable = p.page(Page::OriginUnavailable, &browser, &s);
    assert_eq!(unavailable.status, 503);
    assert!(unavailable.headers.contains(&("Retry-After", "30".into())));
}

/// An origin-hosted page is read no further than its cap: a page at the cap is used,
/// one over it (even an endless one) or one whose read fails is the built-in page,
/// and the line says why.
#[test]
fn an_origin_page_over_its_cap_or_unread_is_the_built_in_page_and_says_why() {
    // Lengths, not bytes: a failure prints a line, not a quarter of a megabyte.
    let read = |body: &[u8]| origin_page(body).map(|page| page.len());
    assert_eq!(
        read(&vec![b'a'; MAX_ORIGIN_PAGE_BYTES]),
        Ok(MAX_ORIGIN_PAGE_BYTES)
    );
    let too_large = Err("too-large".to_string());
    assert_eq!(read(&vec![b'a'; MAX_ORIGIN_PAGE_BYTES + 1]), too_large);
    let endless = origin_page(std::io::repeat(b'a')).map(|page| page.len());
    assert_eq!(endless, too_large);
    /// A body that breaks off after a few bytes.
    struct BrokenOff(usize);
    impl std::io::Read for BrokenOff {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::ErrorKind::ConnectionReset.into());
            }
            let n = self.0.min(buf.len());
            buf[..n].fill(b'a');
            self.0 -= n;
            Ok(n)
        }
    }
    assert_eq!(origin_page(BrokenOff(10)), Err("read-error".to_string()));

    let s = settings(&[]);
    let mut p = plan(&visit("/events", None), &s, &keys());
    for (body, why) in [
        (origin_page(std::io::repeat(b'a')), "too-large"),
        (origin_page(BrokenOff(10)), "read-error"),
    ] {
        let fetched = p.fetched(Page::Deny, body);
        assert_eq!(fetched, Page::Deny.default_html().into_bytes());
        let line = p.log_line();
        assert!(
            line.ends_with(&format!(" page_fallback=origin:{why}")),
            "{line}"
        );
    }
}

#[test]
fn unusable_templates_fall_back_to_the_built_in_page_and_say_so() {
    let s = settings(&[]);
    let mut p = plan(&visit("/events", None), &s, &keys());
    assert_eq!(
        p.template(Page::Deny, Some("/__origin/page/deny")),
        PageBody::FromOrigin("/__origin/page/deny".into())
    );
    let PageBody::Html(html) = p.template(Page::Deny, Some("not base64!")) else {
        panic!("not the built-in page");
    };
    assert_eq!(html, Page::Deny.default_html().into_bytes());
    let line = p.log_line();
    assert!(line.ends_with(" page_fallback=NotBase64"), "{line}");
    let fetched = p.fetched(Page::Deny, Err("503".into()));
    assert_eq!(fetched, Page::Deny.default_html().into_bytes());
    let line = p.log_line();
    assert!(line.ends_with(" page_fallback=origin:503"), "{line}");
    let page = p.render(
        Page::StartWaiting,
        &visit("/events", None),
        &s,
        b"{{allow_percentage}}",
    );
    assert_eq!(page, b"50");
}
