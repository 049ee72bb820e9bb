//! `wrctl config check`, run as the real binary.

use crate::support;

use std::path::Path;

use serde_json::json;
use support::{unix_now, wrctl};

use waiting_room::settings::config;
use waiting_room::settings::config::Settings;
use waiting_room::settings::layout;
use wrctl::config_check::KEYS;

/// `wrctl config check FILE [extra]`: (exit code, stdout, stderr).
fn config_check(file: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let run = wrctl(&[&["config", "check", file], extra].concat(), &[]);
    (run.code, run.out, run.err)
}

/// Writes `json`, the settings one key each, as the store holds them (the keys of
/// their own, every other setting a member of `settings`).
fn write(dir: &Path, name: &str, json: &serde_json::Value) -> String {
    let path = dir.join(name);
    let Some(object) = json.as_object() else {
        std::fs::write(&path, json.to_string()).unwrap();
        return path.to_str().unwrap().to_string();
    };
    let texts: Vec<(String, String)> = object
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), str::to_string),
            )
        })
        .collect();
    let stored = layout::store_entries(texts.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    std::fs::write(&path, serde_json::to_string(&stored).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// A sound enabled room, with `changes` applied (a `null` removes the key).
fn store(changes: serde_json::Value) -> serde_json::Value {
    let mut base = json!({
        "enabled": "true",
        "allow_percentage": "50",
        "wait_period_duration": "30",
        "allow_period_timeout": "600",
        "cookie_lifetime": "7200",
    });
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    base
}

fn local_config() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../local/config.json").to_string()
}

#[test]
fn the_local_config_has_no_fallback_and_every_key_is_printed() {
    let (code, out, err) = config_check(&local_config(), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("config_fallback"), "{out}");
    assert!(err.contains("0 error(s), 0 warning(s)"), "{err}");
    for key in KEYS {
        assert!(out.contains(&format!("  {key} = ")), "{key}: {out}");
    }
    assert!(out.contains("allow_percentage = 50  (set)"), "{out}");
    assert!(
        out.contains("controller_timeout = 120 s  (default)"),
        "{out}"
    );
}

#[test]
fn garbage_values_are_named_as_the_room_logs_them() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = store(json!({
        "allow_percentage": "50%",
        "wait_period_duration": "0",
        "cookie_samesite": "sometimes",
        "waiting_status": "418",
        "protected_paths": "events",
    }));
    let file = write(dir.path(), "c.json", &garbage);
    let (code, out, err) = config_check(&file, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    // Exactly the room's own field, in the room's order.
    let map: std::collections::HashMap<String, String> = serde_json::from_value(garbage).unwrap();
    let (_, fallbacks) = Settings::read(&|k| map.get(k).cloned());
    let field = format!("config_fallback={}", fallbacks.join(","));
    assert_eq!(
        field,
        "config_fallback=protected_paths,allow_percentage,wait_period_duration,waiting_status,cookie_samesite"
    );
    assert!(out.contains(&field), "{out}");
    for key in &fallbacks {
        assert!(
            err.contains(&format!("error: {key} = "))
                && err.contains(&format!(
                    "config_fallback={key} on the requests that read it\n"
                )),
            "{key}: {err}"
        );
        assert!(out.contains(&format!("{key} = ")), "{out}");
    }
    assert!(
        out.contains("wait_period_duration = 30 s  (fallback"),
        "{out}"
    );
}

/// A challenge that does not read is an error that says why and what the room
/// does meanwhile: it holds, it never turns the filter off.
#[test]
fn an_unreadable_challenge_is_an_error_that_says_the_room_holds() {
    let dir = tempfile::tempdir().unwrap();
    let typo = store(json!({
        "bot_challenge": "{\"provider\":\"turnstyle\",\"site_key\":\"k\"}",
    }));
    let file = write(dir.path(), "c.json", &typo);
    let (code, out, err) = config_check(&file, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("config_fallback=bot_challenge"), "{out}");
    assert!(
        err.contains("error: bot_challenge = ")
            && err.contains("still on, every due draw is held")
            && err.contains("warning: bot_challenge does not read: unknown variant `turnstyle`"),
        "{err}"
    );
}

/// The warnings of a store with `changes`, asserting exit 0 and no fallback.
/// Times written as RFC 3339 are read as the room reads them, and printed as
/// Unix time with their UTC date; an unreadable one is named as a fallback.
#[test]
fn times_are_read_as_rfc3339_or_unix_and_shown_in_utc() {
    let dir = tempfile::tempdir().unwrap();
    for (opens, cutoff) in [
        ("1700000000", "1700000000123"),
        ("2023-11-14T22:13:20Z", "2023-11-14T22:13:20.123Z"),
        ("2023-11-15T00:13:20+02:00", "2023-11-14T17:13:20.123-05:00"),
    ] {
        let conf = store(json!({
            "queueing_method": "fifo",
            "queue_opens_at": opens,
            "fifo_cutoff": cutoff,
            "controller_heartbeat": opens,
        }));
        let file = write(dir.path(), "t.json", &conf);
        let (code, out, err) = config_check(&file, &[]);
        assert_eq!(code, Some(0), "{opens}: {out}{err}");
        for line in [
            "queue_opens_at = 1700000000 (2023-11-14 22:13:20 UTC)  (set)",
            "fifo_cutoff = 1700000000123 ms (2023-11-14 22:13:20.123 UTC)  (set)",
            "controller_heartbeat = 1700000000 (2023-11-14 22:13:20 UTC)  (set)",
        ] {
            assert!(out.contains(line), "{opens}: {line}\n{out}");
        }
    }
    let conf = store(json!({
        "queueing_method": "fifo",
        "queue_opens_at": "2023-11-14T22:13:20",
        "controller_heartbeat": "soon",
    }));
    let (code, out, err) = config_check(&write(dir.path(), "bad.json", &conf), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("config_fallback=queue_opens_at"), "{out}");
    assert!(
        err.contains("warning: controller_heartbeat is neither Unix seconds nor RFC 3339"),
        "{err}"
    );
}

fn warnings(changes: serde_json::Value, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "c.json", &store(changes));
    let (code, out, err) = config_check(&file, extra);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("config_fallback"), "{out}");
    err
}

#[test]
fn a_sound_store_has_no_warning() {
    let err = warnings(json!({}), &[]);
    assert!(err.contains("0 error(s), 0 warning(s)"), "{err}");
}

#[test]
fn each_surprising_combination_is_warned_about() {
    for (changes, expected) in [
        (
            json!({"draw_grid": "global", "redeem_window": "10"}),
            "redeem_window 10 s is shorter than the refresh",
        ),
        (
            json!({"refresh_mode": "fixed", "redeem_window": "29"}),
            "redeem_window 29 s is shorter than the refresh",
        ),
        (
            json!({"cookie_lifetime": "300"}),
            "cookie_lifetime 300 s is shorter than allow_period_timeout 600 s",
        ),
        (
            json!({"redeem_window": "302"}),
            "redeem_window 302 s is over half of allow_period_timeout 600 s: an admission \
             more than 300 s after its draw starts its session at the request",
        ),
        (
            json!({"queueing_method": "fifo", "fifo_cutoff": "0", "fifo_hold": "301"}),
            "fifo_hold 301 s is over half of allow_period_timeout 600 s: an admission more \
             than 300 s after its hold's start",
        ),
        (
            json!({"allow_percentage": "0"}),
            "allow_percentage is 0 with the room enabled",
        ),
        (
            json!({"enabled": null}),
            "enabled is missing: the room is off",
        ),
        (
            json!({"enabled": "True"}),
            "enabled = \"True\" is not exactly `true`",
        ),
        (
            json!({"controller_heartbeat": unix_now().to_string()}),
            "controller_heartbeat without allow_percentage_fallback",
        ),
        (
            json!({"wait_period_duration": "900"}),
            "wait_period_duration 900 s is long",
        ),
        (
            json!({"bot_toll_bits": "24"}),
            "bot_toll_bits 24 costs a phone about",
        ),
        (
            json!({"bot_toll_bits": "8", "allow_percentage": "100"}),
            "bot_toll_bits 8 with allow_percentage 100: an open room admits without draws",
        ),
        (
            json!({"bot_toll_bits": "8", "bot_challenge": "{\"provider\":\"turnstile\",\"site_key\":\"k\"}"}),
            "bot_challenge and bot_toll_bits 8 are both set: the challenge replaces the proof of work",
        ),
        (
            json!({"bot_challenge": "{\"provider\":\"hcaptcha\",\"site_key\":\"k\"}", "allow_percentage": "100"}),
            "bot_challenge with allow_percentage 100: an open room admits without draws",
        ),
        (
            json!({"queueing_method": "fifo"}),
            "queueing_method is fifo without a usable fifo_cutoff",
        ),
        (
            json!({"fifo_cutoff": "1700000000000"}),
            "fifo_cutoff is set but queueing_method is random: it has no effect",
        ),
        (
            json!({"queueing_method": "fifo", "fifo_cutoff": "1", "pop_new_sessions_per_minute": "100"}),
            "pop_new_sessions_per_minute is set but queueing_method is fifo",
        ),
        (
            json!({"pop_new_sessions_per_minute": "99"}),
            "pop_new_sessions_per_minute 99 is under 100: Fastly documents its edge counters \
             to 10 %",
        ),
        (
            json!({"uid_ipv6_prefix": "48"}),
            "uid_ipv6_prefix /48 is shorter than a /64",
        ),
        (
            json!({"alow_percentage": "5"}),
            "unknown key \"alow_percentage\" (did you mean allow_percentage?)",
        ),
        (
            json!({"startwaiting": "PGh0bWw+"}),
            "unknown key \"startwaiting\" (a page: it belongs in the waitingroom_pages store)",
        ),
    ] {
        let err = warnings(changes.clone(), &[]);
        assert!(
            err.contains(&format!("warning: {expected}")),
            "{changes}: {err}"
        );
    }
    // The unknown-key warning lists the keys the room reads.
    let err = warnings(json!({"cookie_life": "5"}), &[]);
    assert!(
        err.contains(config::COOKIE_LIFETIME) && err.contains(&KEYS.join(", ")),
        "{err}"
    );
    // The default redeem window (one wait period) covers the refresh in both modes.
    for mode in ["eligible", "fixed"] {
        let err = warnings(json!({"refresh_mode": mode}), &[]);
        assert!(!err.contains("redeem_window"), "{mode}: {err}");
    }
    // A ceiling of 100 a minute is not warned about, nor a low one FIFO ignores.
    let err = warnings(json!({"pop_new_sessions_per_minute": "100"}), &[]);
    assert!(err.contains("0 warning(s)"), "{err}");
    let err = warnings(
        json!({"queueing_method": "fifo", "fifo_cutoff": "1", "pop_new_sessions_per_minute": "5"}),
        &[],
    );
    assert!(!err.contains("is under 100"), "{err}");
    // A fresh heartbeat with a fallback percentage: nothing to say.
    let err = warnings(
        json!({"controller_heartbeat": unix_now().to_string(), "allow_percentage_fallback": "5"}),
        &[],
    );
    assert!(err.contains("0 warning(s)"), "{err}");
}

#[test]
fn signing_keys_are_checked_and_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let strong = "a-strong-secret-of-forty-bytes-or-so-123";
    let keys = write(
        dir.path(),
        "k.json",
        &json!({"key1": strong, "old": "short-secret"}),
    );
    let config = write(dir.path(), "c.json", &store(json!({})));
    let (code, out, err) = config_check(&config, &["--keys", &keys]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("warning: signing key \"old\" is 12 bytes"),
        "{err}"
    );
    let missing = write(dir.path(), "c2.json", &store(json!({"active_key": "key9"})));
    let (code, out, err) = config_check(&missing, &["--keys", &keys]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("active_key \"key9\" is not in the keys file"),
        "{err}"
    );
    for text in [&out, &err] {
        assert!(
            !text.contains(strong) && !text.contains("short-secret"),
            "{text}"
        );
    }
}

/// A key id outside what Fastly's Secret Store names hold (letters, digits, `-`,
/// `_`, `.`): the room never reads it, so a stored key under it, or an active_key
/// naming it, is an error, with or without the keys file.
#[test]
fn key_ids_the_room_never_reads_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let strong = "a-strong-secret-of-forty-bytes-or-so-123";
    let keys = write(
        dir.path(),
        "k.json",
        &json!({"key1": strong, "k!1": strong, "key.2_b-3": strong}),
    );
    let config = write(dir.path(), "c.json", &store(json!({})));
    let (code, out, err) = config_check(&config, &["--keys", &keys]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("error: signing key \"k!1\" is under an id the room never reads"),
        "{err}"
    );
    assert!(!err.contains("\"key.2_b-3\""), "{err}");
    for active in ["k!1", "k&1", "k/1"] {
        let odd = write(
            dir.path(),
            "c2.json",
            &store(json!({ "active_key": active })),
        );
        for extra in [&[][..], &["--keys", &keys][..]] {
            let (code, out, err) = config_check(&odd, extra);
            assert_eq!(code, Some(1), "{active} {extra:?}: {out}{err}");
            assert!(
                err.contains(&format!(
                    "active_key {active:?} is not a key id the room reads"
                )),
                "{err}"
            );
        }
    }
    assert!(!err.contains(strong), "{err}");
}

#[test]
fn a_fastly_export_is_read_like_a_store_file() {
    let dir = tempfile::tempdir().unwrap();
    let export = json!([
        {"store_id": "7Jx2abcDEF", "item_key": "enabled", "item_value": "true",
         "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"},
        {"store_id": "7Jx2abcDEF", "item_key": "allow_percentage", "item_value": "abc"},
        {"store_id": "7Jx2abcDEF", "item_key": "wait_period_duration", "item_value": "20"},
        {"store_id": "7Jx2abcDEF", "item_key": "cookie_lifetime", "item_value": "zz",
         "deleted_at": "2026-01-02T00:00:00Z"},
    ]);
    let file = write(dir.path(), "export.json", &export);
    let (code, out, err) = config_check(&file, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("enabled = true  (set)"), "{out}");
    assert!(out.contains("wait_period_duration = 20 s  (set)"), "{out}");
    assert!(out.contains("config_fallback=allow_percentage\n"), "{out}");
    assert!(out.contains("cookie_lifetime = 7200 s  (default)"), "{out}");
}

#[test]
fn a_store_key_over_255_bytes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (longest, over) = ("p".repeat(255), "q".repeat(256));
    let file = write(
        dir.path(),
        "c.json",
        &store(json!({ longest.as_str(): "x", over.as_str(): "y" })),
    );
    let (code, out, err) = config_check(&file, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("is 256 bytes: Fastly accepts at most 255"),
        "{err}"
    );
    assert!(!err.contains("is 255 bytes"), "{err}");
}

#[test]
fn unreadable_files_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("a.json", "not json"),
        ("b.json", "{\"allow_percentage\": 50}"),
        ("c.json", "[{\"key\": \"enabled\"}]"),
        ("d.json", "\"enabled\""),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let (code, _, err) = config_check(path.to_str().unwrap(), &[]);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains(name), "{err}");
    }
    let (code, _, _) = config_check("/nonexistent/config.json", &[]);
    assert_eq!(code, Some(2));
}

#[test]
fn each_room_is_checked_with_its_scope_rules_and_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let good_room = r#"{"enabled": true, "allow_percentage": 20, "bypass_addresses": ["198.51.100.0/24"],
        "bypass_paths": ["/drops/static/"],
        "events": [{"name": "drop-1", "start": "2030-01-01T10:00:00Z", "end": "2030-01-01T12:00:00Z",
            "settings": {"cookie_lifetime": 900, "protected_paths": "/", "cokie_lifetime": 1}}]}"#;
    let file = write(
        dir.path(),
        "rooms.json",
        &store(json!({
            "rooms": r#"{"drops": {"paths": ["/drops/"]}, "shop": {"hosts": ["shop.example"], "paths": ["/checkout"]}}"#,
            "room.drops": good_room,
            "room.drops.allow_percentage": "7.5",
            "room.shop": r#"{"enabled": true}"#,
        })),
    );
    let (code, out, err) = config_check(&file, &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("Effective settings of room drops (every host, paths /drops/)"),
        "{out}"
    );
    assert!(
        out.contains("Effective settings of room shop (shop.example, paths /checkout)"),
        "{out}"
    );
    // The controller's key wins, as at the edge.
    assert!(out.contains("  allow_percentage = 7.5  (set)"), "{out}");
    assert!(
        out.contains("  bypass_addresses = 198.51.100.0/24  (set)"),
        "{out}"
    );
    assert!(
        out.contains(
            "event drop-1: pre-queue 2030-01-01 10:00:00 UTC, start 2030-01-01 10:00:00 UTC"
        ),
        "{out}"
    );
    // The room's own keys are known; an event's odd ones are warned about.
    assert!(!err.contains("unknown key \"room."), "{err}");
    assert!(
        err.contains("event drop-1 sets protected_paths, which an event cannot change"),
        "{err}"
    );
    assert!(
        err.contains(
            "event drop-1 sets unknown key \"cokie_lifetime\" (did you mean cookie_lifetime?)"
        ),
        "{err}"
    );

    // Refused: a rule that does not parse, a rule over the whole room, a schedule
    // out of order, a room whose value is not JSON, an index entry without paths.
    let bad = write(
        dir.path(),
        "bad.json",
        &store(json!({
            "rooms": r#"{"drops": {"paths": ["/drops/"]}, "vip": {"paths": ["/vip/"]}, "none": {"paths": []}}"#,
            "room.drops": r#"{"enabled": true, "bypass_addresses": ["10.0.0.0/33", "0.0.0.0/0"], "bypass_paths": ["/"],
                "events": [{"name": "late", "start": 2000, "end": 1000}]}"#,
            "room.vip": "{\"enabled\": tru",
        })),
    );
    let (code, out, err) = config_check(&bad, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    for needle in [
        "bypass_addresses = \"10.0.0.0/33,0.0.0.0/0\" is unusable",
        "bypass_paths = \"/\" is unusable",
        "event 1: it ends before it starts",
        "room.vip is not a JSON object",
        "room \"none\": no paths",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn wrctl_rooms_lists_the_rooms_and_places_urls() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "rooms.json",
        &store(json!({
            "protected_paths": "/checkout",
            "rooms": r#"{"drops": {"paths": ["/drops/"]}}"#,
            "room.drops": r#"{"enabled": true}"#,
        })),
    );
    let urls = ["https://shop.example/drops/1", "/checkout", "/about"];
    let run = wrctl(&[&["rooms", &file][..], &urls].concat(), &[]);
    let text = run.out;
    assert_eq!(run.code, Some(0), "{text}");
    assert!(
        text.contains("room drops: every host, paths /drops/"),
        "{text}"
    );
    assert!(
        text.contains("https://shop.example/drops/1: room drops"),
        "{text}"
    );
    assert!(text.contains("/checkout: the service room"), "{text}");
    assert!(
        text.contains("/about: no room: straight to the origin"),
        "{text}"
    );
}

/// The difficulty a phone pays in about a second is not warned about; one that
/// costs it more than five seconds is, and the effective value says the cost.
#[test]
fn a_bot_toll_a_phone_pays_quickly_is_not_warned_about() {
    let phone_second = (0..=32u8)
        .rev()
        .find(|bits| waiting_room::bots::toll::phone_seconds(*bits) <= 1.0)
        .unwrap();
    let err = warnings(json!({"bot_toll_bits": phone_second.to_string()}), &[]);
    assert!(err.contains("0 error(s), 0 warning(s)"), "{err}");
    let slow = (0..=32u8)
        .find(|bits| waiting_room::bots::toll::phone_seconds(*bits) > 5.0)
        .unwrap();
    assert!(
        slow <= phone_second + 4,
        "five times a second is under four bits more"
    );
    let err = warnings(json!({"bot_toll_bits": slow.to_string()}), &[]);
    assert!(
        err.contains(&format!("bot_toll_bits {slow} costs a phone")),
        "{err}"
    );
}

/// A sound room whose identity is the login (test-support's service: RS256, ES256
/// and HS256 keys), with `changes` applied.
fn login_store(changes: serde_json::Value) -> serde_json::Value {
    let mut all = json!({});
    for (key, value) in test_support::logins::settings_members() {
        all[key] = value.into();
    }
    for (key, value) in changes.as_object().unwrap() {
        all[key] = value.clone();
    }
    store(all)
}

/// `wrctl config check` of `json` (as [`write`] stores it): (exit code, stdout, stderr).
fn check_json(json: &serde_json::Value, extra: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "c.json", json);
    config_check(&file, extra)
}

const CHALLENGE: &str = r#"{"provider":"turnstile","site_key":"k"}"#;

#[test]
fn a_login_identity_needs_its_issuer_audience_hash_key_and_a_usable_key() {
    let (code, out, err) = check_json(&store(json!({"identity": "login"})), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    for key in ["login_issuer", "login_audience", "login_hash_key"] {
        assert!(
            err.contains(&format!(
                "error: identity = login without {key}: every login is refused"
            )),
            "{key}: {err}"
        );
    }
    assert!(
        err.contains("error: identity = login without a usable key in login_keys"),
        "{err}"
    );

    // Complete: no error; the hash key is set, never shown; the keys are named.
    let (code, out, err) = check_json(&login_store(json!({})), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("0 error(s), 0 warning(s)"), "{err}");
    assert!(
        out.contains("login_hash_key = set (64 hex digits)  (set)"),
        "{out}"
    );
    assert!(
        out.contains(
            "login_keys = 3 key(s): site-rs RS256 (2048 bits), site-es ES256 (P-256), site-hs HS256"
        ),
        "{out}"
    );
    let hash_key = test_support::logins::HASH_KEY;
    assert!(!out.contains(hash_key) && !err.contains(hash_key));

    // A hash key the room cannot use: named, its value never shown.
    let (code, out, err) = check_json(&login_store(json!({"login_hash_key": "deadbeefcafe"})), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("login_hash_key = a value of 12 characters is unusable"),
        "{err}"
    );
    assert!(!out.contains("deadbeefcafe") && !err.contains("deadbeefcafe"));
}

#[test]
fn each_login_key_the_room_ignores_is_named_and_no_secret_shown() {
    use waiting_room::credentials::login_mint::MintKey;
    let jwk = |pem: &str, kid: &str| MintKey::from_pem(pem).unwrap().public_jwk(kid);
    let weak = jwk(test_support::logins::RS256_1024_PEM, "rs-old");
    let leak = json!({"kty": "oct", "kid": "leak", "k": "c2VjcmV0LW9mLXRoZS1zaXRl"});
    let keys = json!({"keys": [weak, jwk(test_support::logins::ES256_PEM, "es-1"), leak]});
    let (code, out, err) = check_json(&login_store(json!({"login_keys": keys.to_string()})), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains(
            "warning: login_keys: kid \"rs-old\" is ignored: an RSA key of 1024 bits: the room \
             takes 2048 to 4096 (rsa-bits)"
        ),
        "{err}"
    );
    assert!(
        err.contains("warning: login_keys: kid \"leak\" is ignored: an oct key holding its secret"),
        "{err}"
    );
    assert!(
        out.contains("login_keys = 1 key(s): es-1 ES256 (P-256)"),
        "{out}"
    );

    // None usable: the room falls back, and still no secret is shown.
    let keys = json!({"keys": [weak, leak]});
    let (code, out, err) = check_json(&login_store(json!({"login_keys": keys.to_string()})), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("error: login_keys = a value of "), "{err}");
    assert!(err.contains("kid \"rs-old\" is ignored"), "{err}");
    for text in [&out, &err] {
        assert!(!text.contains("c2VjcmV0LW9mLXRoZS1zaXRl"), "{text}");
    }
}

#[test]
fn a_room_for_members_needs_the_login_identity_and_else_gets_a_note_without_sign_in() {
    // The service room, identity by address: nobody can sign in.
    let (code, out, err) = check_json(&store(json!({"who_may_wait": "signed-in"})), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(
            "error: who_may_wait = signed-in asks for a login, but the service's identity is address"
        ),
        "{err}"
    );
    // A named room for one audience, the same.
    let rooms = json!({
        "rooms": r#"{"vip": {"paths": ["/vip/"]}}"#,
        "room.vip": r#"{"enabled": true, "who_may_wait": "tier=presale"}"#,
    });
    let (code, out, err) = check_json(&store(rooms.clone()), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("error: who_may_wait = tier=presale asks for a login"),
        "{err}"
    );
    // With the login identity: works; without sign_in_url, a note (not a warning).
    let (code, out, err) = check_json(&login_store(rooms), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("note: who_may_wait = tier=presale without sign_in_url: a visitor without the login gets a 401"),
        "{err}"
    );
    assert!(err.contains("0 error(s), 0 warning(s)"), "{err}");
    let with_sign_in = json!({
        "rooms": r#"{"vip": {"paths": ["/vip/"]}}"#,
        "room.vip": r#"{"enabled": true, "who_may_wait": "tier=presale", "sign_in_url": "https://shop.example/login"}"#,
    });
    let (code, out, err) = check_json(&login_store(with_sign_in), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!err.contains("note:"), "{err}");
}

#[test]
fn an_hs256_login_key_signing_keys_in_a_secret_store_and_a_challenge_are_too_many_secret_reads() {
    let over = "make 4 secret reads a request > the room's 3";
    let challenged = login_store(json!({"bot_challenge": CHALLENGE}));
    let (code, out, err) = check_json(&challenged, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("error: the HS256 login key site-hs (its secret read from the Secret Store waitingroom_login: 1 read)"),
        "{err}"
    );
    assert!(err.contains(over), "{err}");
    // The signing keys in a config store cost lookups, not secret reads.
    let (code, out, err) = check_json(&challenged, &["--keys-in", "config-store"]);
    assert_eq!(code, Some(0), "{out}{err}");
    // Without the HS256 key, or without the challenge: within the budget.
    let asymmetric = json!({"keys": test_support::logins::jwks()["keys"].as_array().unwrap()[..2]});
    let (code, out, err) = check_json(
        &login_store(json!({"bot_challenge": CHALLENGE, "login_keys": asymmetric.to_string()})),
        &[],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, _, err) = check_json(&login_store(json!({})), &[]);
    assert_eq!(code, Some(0), "{err}");
    // A named room's challenge, or an event's, counts as well.
    let room = json!({
        "rooms": r#"{"drops": {"paths": ["/drops/"]}}"#,
        "room.drops": format!(r#"{{"enabled": true, "bot_challenge": {CHALLENGE}}}"#),
    });
    let (code, out, err) = check_json(&login_store(room), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains(over), "{err}");
    let events = format!(
        r#"[{{"name": "drop-1", "start": "2030-01-01T10:00:00Z", "end": "2030-01-01T12:00:00Z",
            "settings": {{"bot_challenge": {CHALLENGE}}}}}]"#
    );
    let (code, out, err) = check_json(&login_store(json!({"events": events})), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("bot_challenge (set by event drop-1) (1 read, its secret)"),
        "{err}"
    );
}

#[test]
fn the_settings_item_is_held_to_a_config_store_values_length() {
    use waiting_room::credentials::login_mint::MintKey;
    let key = MintKey::from_pem(test_support::logins::RS256_PEM).unwrap();
    let keys: Vec<_> = (0..20)
        .map(|i| key.public_jwk(&format!("rs-{i}")))
        .collect();
    let login_keys = json!({"keys": keys}).to_string();
    let (code, out, err) = check_json(&login_store(json!({"login_keys": login_keys})), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("settings's value is ") && err.contains("Fastly stores at most 8000"),
        "{err}"
    );
}
