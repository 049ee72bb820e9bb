//! The real `wrctl control` process, fed recorded-style log lines on stdin: it
//! writes a Viceroy config-store file, or the Fastly API (a local stand-in), and
//! ends cleanly when stdin does.

use crate::support;

use std::fs;

use serde_json::{Value, json};
use support::{MockApi, Wrctl, eventually, unix_now};
use waiting_room::settings::percentage::Percentage;
use wrctl::synthetic::Crowd;

/// Five minutes of a crowd at 10 %, up to now, with Viceroy's own lines among them.
fn recorded_lines() -> Vec<String> {
    let mut crowd = Crowd::new(unix_now() - 300, 42);
    crowd.arrivals_per_second = 20;
    crowd.prefixed = 0.5;
    let mut lines = vec![
        "Listening on http://127.0.0.1:7676".to_string(),
        "INFO request{id=0}: handling request GET http://127.0.0.1:7676/events".to_string(),
    ];
    lines.extend(crowd.lines(300));
    lines
}

#[test]
fn the_config_file_gets_a_percentage_and_a_heartbeat_and_keeps_its_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let original = json!({
        "enabled": "true",
        "allow_percentage": "10",
        "wait_period_duration": "30",
        "allow_period_timeout": "3600",
        "cookie_lifetime": "7200",
        "active_key": "key1",
        "logger_name": "testlog",
    });
    fs::write(&path, serde_json::to_string_pretty(&original).unwrap()).unwrap();
    let started = unix_now();
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--config-file",
            path.to_str().unwrap(),
            "--tick",
            "1",
        ],
        &[],
    );
    wrctl.feed(&recorded_lines());

    let settings: Value = eventually("the file to get a new percentage", || {
        let settings: Value = serde_json::from_str(&fs::read_to_string(&path).ok()?).ok()?;
        (settings["allow_percentage"] != "10").then_some(settings)
    });
    // The crowd at 10 % admits far more than 60 a minute: the controller lowers it.
    let p: Percentage = settings["allow_percentage"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        p > Percentage::ZERO && p < Percentage::whole(10),
        "allow_percentage {p}"
    );
    let heartbeat: u64 = settings["controller_heartbeat"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((started..=unix_now()).contains(&heartbeat), "{heartbeat}");
    for (key, value) in original.as_object().unwrap() {
        if key != "allow_percentage" {
            assert_eq!(&settings[key], value, "{key}");
        }
    }
    assert_eq!(support::file_names(dir.path()), ["config.json"]);

    wrctl.close_stdin();
    assert_eq!(wrctl.wait(), Some(0));
    let err = wrctl.stderr();
    assert!(
        err.contains(&format!("wrote allow_percentage={p}")),
        "{err}"
    );
    assert!(err.contains("new sessions last minute"), "{err}");
}

#[test]
fn the_fastly_api_is_written_with_the_token_from_the_environment_and_retried() {
    let token = "token-from-the-environment-0123";
    let api = MockApi::start(&[500, 200], &format!(r#"{{"msg":"no such key {token}"}}"#));
    let url = api.url();
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--fastly-store-id",
            "7Jx2abcDEF",
            "--fastly-api-url",
            &url,
            "--tick",
            "1",
            "--start",
            "25",
        ],
        &[("FASTLY_API_TOKEN", token)],
    );
    let requests = eventually("a failed write and its retry", || {
        let requests = api.requests();
        (requests.len() >= 2).then_some(requests)
    });
    for request in &requests[..2] {
        assert_eq!(request.method, "PATCH");
        assert_eq!(request.path, "/resources/stores/config/7Jx2abcDEF/items");
        assert_eq!(request.header("Fastly-Key"), Some(token));
        assert_eq!(request.header("Content-Type"), Some("application/json"));
        let body: Value = serde_json::from_str(&request.body).unwrap();
        let items = body["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{body}");
        assert_eq!(
            items[0],
            json!({"op":"upsert","item_key":"allow_percentage","item_value":"25"})
        );
        assert_eq!(items[1]["op"], "upsert");
        assert_eq!(items[1]["item_key"], "controller_heartbeat");
    }
    // The retry came a tick later, not at once.
    let heartbeat = |i: usize| -> u64 {
        let body: Value = serde_json::from_str(&requests[i].body).unwrap();
        body["items"][1]["item_value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(heartbeat(1) > heartbeat(0));
    wrctl.close_stdin();
    assert_eq!(wrctl.wait(), Some(0));
    let err = wrctl.stderr();
    assert!(err.contains("write failed") && err.contains("500"), "{err}");
    assert!(!err.contains(token), "the token was printed:\n{err}");
}

#[test]
fn a_dry_run_prints_what_it_would_write_and_ends_with_stdin() {
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--dry-run",
            "--tick",
            "1",
        ],
        &[],
    );
    wrctl.feed(&recorded_lines());
    eventually("a decision", || {
        wrctl
            .stderr()
            .contains("would write allow_percentage=")
            .then_some(())
    });
    wrctl.close_stdin();
    assert_eq!(wrctl.wait(), Some(0));
}
