//! The writers: the Viceroy config-store file and the Fastly API client (against a
//! local stand-in that checks every request), and the retry after a failed write.

use crate::support;

use std::fs;

use control::options::Options;
use control::percentage_rule::{Controller, PercentageWrite};
use serde_json::{Value, json};
use support::{MockApi, info};
use wrctl::control::Control;
use wrctl::sink::{ConfigFile, FastlyApi, Sink};

fn write(p: Option<&str>, heartbeat: u64) -> PercentageWrite {
    PercentageWrite {
        allow_percentage: p.map(|p| p.parse().unwrap()),
        heartbeat,
    }
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_config_file_keeps_other_keys_and_is_replaced_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    fs::write(
        &path,
        r#"{"enabled":"true","allow_percentage":"50","wait_period_duration":"30","logger_name":"testlog"}"#,
    )
    .unwrap();
    let mut file = ConfigFile::open(&path).unwrap();
    file.write(&write(Some("12.5"), 1_700_000_000)).unwrap();
    assert_eq!(
        read(&path),
        json!({"enabled":"true","allow_percentage":"12.5","wait_period_duration":"30",
               "logger_name":"testlog","controller_heartbeat":"1700000000"})
    );
    // A heartbeat alone leaves the percentage; a key added meanwhile is kept.
    let mut settings = read(&path);
    settings["cookie_lifetime"] = json!("7200");
    fs::write(&path, settings.to_string()).unwrap();
    file.write(&write(None, 1_700_000_030)).unwrap();
    let settings = read(&path);
    assert_eq!(settings["allow_percentage"], "12.5");
    assert_eq!(settings["controller_heartbeat"], "1700000030");
    assert_eq!(settings["cookie_lifetime"], "7200");
    // Nothing but the file is left in the directory.
    assert_eq!(support::file_names(dir.path()), ["config.json"]);
    assert_eq!(file.describe(), format!("config-file {}", path.display()));
}

#[test]
fn a_config_file_that_cannot_be_written_is_a_failed_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    fs::write(&path, r#"{"enabled":"true"}"#).unwrap();
    let mut file = ConfigFile::open(&path).unwrap();

    // Gone, or garbled by someone else: refused, and not overwritten.
    fs::write(&path, "{not json").unwrap();
    assert!(file.write(&write(Some("5"), 1)).is_err());
    assert_eq!(fs::read_to_string(&path).unwrap(), "{not json");
    fs::remove_file(&path).unwrap();
    let err = file.write(&write(Some("5"), 1)).unwrap_err();
    assert!(err.contains("config.json"), "{err}");

    // A directory where the temporary file cannot be created (a path under a file).
    let blocker = dir.path().join("file");
    fs::write(&blocker, "x").unwrap();
    let err = wrctl::store_file::replace(&blocker.join("config.json"), b"{}").unwrap_err();
    assert!(err.contains("cannot replace"), "{err}");

    // A read-only directory (unless the tests run as root, who may write anyway).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = dir.path().join("locked");
        fs::create_dir(&locked).unwrap();
        let path = locked.join("config.json");
        fs::write(&path, r#"{"enabled":"true"}"#).unwrap();
        let mut file = ConfigFile::open(&path).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
        let probe = fs::File::create(locked.join("probe")).is_ok();
        if !probe {
            assert!(file.write(&write(Some("5"), 1)).is_err());
            assert_eq!(read(&path), json!({"enabled":"true"}));
        }
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Checks one request as the Fastly API expects it.
fn check_request(request: &support::Received, store: &str, token: &str, items: Value) {
    assert_eq!(request.method, "PATCH");
    assert_eq!(
        request.path,
        format!("/resources/stores/config/{store}/items")
    );
    assert_eq!(request.header("Fastly-Key"), Some(token));
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    assert_eq!(request.header("Accept"), Some("application/json"));
    let body: Value = serde_json::from_str(&request.body).unwrap();
    assert_eq!(body, json!({ "items": items }), "{}", request.body);
}

#[test]
fn the_fastly_client_sends_one_batch_patch_a_write() {
    let api = MockApi::start(&[200], r#"{"status":"ok"}"#);
    let mut client = FastlyApi::new(&format!("{}/", api.url()), "STORE", "secret-token".into());
    client.write(&write(Some("12.5"), 1_700_000_000)).unwrap();
    client.write(&write(None, 1_700_000_030)).unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    check_request(
        &requests[0],
        "STORE",
        "secret-token",
        json!([
            {"op":"upsert","item_key":"allow_percentage","item_value":"12.5"},
            {"op":"upsert","item_key":"controller_heartbeat","item_value":"1700000000"},
        ]),
    );
    check_request(
        &requests[1],
        "STORE",
        "secret-token",
        json!([{"op":"upsert","item_key":"controller_heartbeat","item_value":"1700000030"}]),
    );
    assert_eq!(client.describe(), "fastly config store STORE");
}

#[test]
fn an_error_status_is_a_failure_that_never_shows_the_token() {
    let api = MockApi::start(&[500], r#"{"msg":"bad key secret-token"}"#);
    let mut client = FastlyApi::new(&api.url(), "STORE", "secret-token".into());
    let err = client.write(&write(Some("1"), 1)).unwrap_err();
    assert!(err.contains("500"), "{err}");
    assert!(!err.contains("secret-token"), "{err}");
    // Nothing listening: a failure too.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut client = FastlyApi::new(&url, "STORE", "secret-token".into());
    assert!(client.write(&write(Some("1"), 1)).is_err());
}

#[test]
fn a_failed_write_is_retried_after_the_backoff() {
    let api = MockApi::start(&[500, 200], "{}");
    let options = Options {
        target_per_minute: 60.0,
        tick: 10,
        start: Some("25".parse().unwrap()),
        ..Options::default()
    };
    let info = info(None, 60.0, false, "fastly config store STORE");
    let sink = FastlyApi::new(&api.url(), "STORE", "tok".into());
    let rule = Controller::new(options).unwrap();
    let mut control = Control::new(rule, Box::new(sink), info, true);
    control.tick(1000); // 500
    control.tick(1005); // backing off: no request
    assert_eq!(api.requests().len(), 1);
    control.tick(1010); // one tick later: 200
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    for (request, heartbeat) in requests.iter().zip(["1000", "1010"]) {
        check_request(
            request,
            "STORE",
            "tok",
            json!([
                {"op":"upsert","item_key":"allow_percentage","item_value":"25"},
                {"op":"upsert","item_key":"controller_heartbeat","item_value":heartbeat},
            ]),
        );
    }
    let counters = control.view().snapshot.counters;
    assert_eq!((counters.writes, counters.write_failures), (1, 1));
    control.tick(1020); // nothing changed, heartbeat not due
    assert_eq!(api.requests().len(), 2);
    let status = control.view().status_json();
    assert_eq!(status["allow_percentage"], "25");
    assert_eq!(status["last_write"], 1010);
}

#[test]
fn in_fifo_mode_one_batch_carries_the_cutoff_its_rate_and_the_heartbeat() {
    use control::fifo_rule::{FifoController, FifoOptions};
    use control::record::Record;

    let api = MockApi::start(&[200, 500, 200], "{}");
    let options = FifoOptions {
        target_per_minute: 60.0,
        tick: 10,
        expected_propagation: None,
        ..FifoOptions::default()
    };
    let info = info(None, 60.0, false, "fastly config store STORE");
    let sink = FastlyApi::new(&api.url(), "STORE", "tok".into());
    let rule = FifoController::new(options).unwrap();
    let mut control = Control::new(rule, Box::new(sink), info, true);
    // Fifty arrivals, 2 ms apart, at the controller's clock.
    let now = wrctl::clock::unix_now();
    let records: Vec<Record> = (0..50u64)
        .map(|i| {
            format!(
                "waitingroom t={now} decision=anon uid=10.0.0.{i} p=50 exp={} arr={} \
                 path=/events cutoff=none ALERT=fifo-no-cutoff",
                now + 300,
                now * 1000 + 2 * i
            )
            .parse()
            .unwrap()
        })
        .collect();
    control.handle(wrctl::ingest::Msg::Batch(wrctl::ingest::Batch {
        records,
        ..Default::default()
    }));
    control.tick(now + 1);
    // Ten places (60 a minute, 10 s a tick): the tenth arrived 18 ms after the
    // first, passed in a tick of 10 s: 1.9 ms a second.
    let cutoff = (now * 1000 + 18).to_string();
    let heartbeat = (now + 1).to_string();
    check_request(
        &api.requests()[0],
        "STORE",
        "tok",
        json!([
            {"op":"upsert","item_key":"fifo_cutoff","item_value":cutoff},
            {"op":"upsert","item_key":"fifo_rate","item_value":"1.9"},
            {"op":"upsert","item_key":"controller_heartbeat","item_value":heartbeat},
        ]),
    );
    // The next tick fails; the one after retries from the cutoff last written.
    control.tick(now + 11);
    control.tick(now + 21);
    let requests = api.requests();
    assert_eq!(requests.len(), 3);
    let cutoff = (now * 1000 + 38).to_string();
    for (request, heartbeat) in requests[1..].iter().zip([now + 11, now + 21]) {
        let body: Value = serde_json::from_str(&request.body).unwrap();
        assert_eq!(body["items"][0]["item_value"], cutoff.as_str(), "{body}");
        assert_eq!(body["items"][0]["item_key"], "fifo_cutoff");
        assert_eq!(body["items"][1]["item_key"], "fifo_rate");
        assert_eq!(
            body["items"][2],
            json!({"op":"upsert","item_key":"controller_heartbeat","item_value":heartbeat.to_string()})
        );
    }
    let status = control.view().status_json();
    assert_eq!(status["queueing"], "fifo");
    assert_eq!(status["fifo"]["cutoff"], now * 1000 + 38);
    assert_eq!(status["writes_total"], 2);
    assert_eq!(status["write_failures_total"], 1);
    let metrics = control.view().metrics();
    assert!(
        metrics.contains(&format!(
            "wrctl_fifo_cutoff_milliseconds {}",
            now * 1000 + 38
        )),
        "{metrics}"
    );
    assert!(metrics.contains("wrctl_fifo_rate "), "{metrics}");
    assert!(
        metrics.contains("wrctl_fifo_show_up_ratio{holder=\"live\"} 1"),
        "{metrics}"
    );
}

#[test]
fn a_rooms_controller_counts_only_its_rooms_lines_and_writes_its_keys() {
    use control::record::Record;
    use waiting_room::settings::room::RoomName;

    let api = MockApi::start(&[200], "{}");
    let options = Options {
        target_per_minute: 60.0,
        tick: 10,
        start: Some("25".parse().unwrap()),
        ..Options::default()
    };
    let info = info(Some("drops"), 60.0, false, "fastly config store STORE");
    let drops = RoomName::new("drops").unwrap();
    let sink = wrctl::sink::InRoom::new(
        Box::new(FastlyApi::new(&api.url(), "STORE", "tok".into())),
        drops.clone(),
    );
    let rule = Controller::new(options).unwrap();
    let mut control = Control::new(rule, Box::new(sink), info, true).in_room(Some(&drops));
    let now = wrctl::clock::unix_now();
    // Ten newcomers in each of three rooms: the service room, drops and vip.
    let records: Vec<Record> = ["", " room=drops", " room=vip"]
        .iter()
        .enumerate()
        .flat_map(|(r, room)| {
            (0..10u64).map(move |i| {
                format!(
                    "waitingroom t={now} decision=anon uid=10.0.{r}.{i}{room} p=25 exp={} path=/x",
                    now + 60
                )
                .parse()
                .unwrap()
            })
        })
        .collect();
    control.handle(wrctl::ingest::Msg::Batch(wrctl::ingest::Batch {
        records,
        ..Default::default()
    }));
    assert_eq!(control.view().snapshot.waiting, 10, "drops' ten only");
    let view = control.view();
    assert_eq!(view.status_json()["room"], "drops");
    let metrics = view.metrics();
    assert!(
        metrics.contains("wrctl_log_lines_total{room=\"drops\"} 10"),
        "{metrics}"
    );
    control.tick(now);
    let heartbeat = now.to_string();
    check_request(
        &api.requests()[0],
        "STORE",
        "tok",
        json!([
            {"op":"upsert","item_key":"room.drops.allow_percentage","item_value":"25"},
            {"op":"upsert","item_key":"room.drops.controller_heartbeat","item_value":heartbeat},
        ]),
    );
}

#[test]
fn the_target_follows_the_event_the_newest_lines_name() {
    use control::record::Record;

    let options = Options {
        target_per_minute: 60.0,
        ..Options::default()
    };
    let info = info(None, 60.0, true, "dry run");
    let rule = Controller::new(options).unwrap();
    let mut control = Control::new(rule, Box::new(wrctl::sink::DryRun), info, true)
        .with_event_targets(&[("drop-1".into(), 1200.0)]);
    let mut feed = |t: u64, event: &str| {
        let line = format!(
            "waitingroom t={t} decision=anon uid=10.0.0.1{event} p=5 exp={} path=/x",
            t + 60
        );
        let record: Record = line.parse().unwrap();
        control.handle(wrctl::ingest::Msg::Batch(wrctl::ingest::Batch {
            records: vec![record],
            ..Default::default()
        }));
        control.view().status_json()["target_per_minute"].clone()
    };
    let now = wrctl::clock::unix_now();
    assert_eq!(feed(now, ""), 60);
    assert_eq!(feed(now + 1, " event=drop-1"), 1200);
    // An older line does not move it back; a newer one without the event does.
    assert_eq!(feed(now, ""), 1200);
    assert_eq!(feed(now + 2, " event=other"), 60);
    assert_eq!(feed(now + 3, " event=drop-1"), 1200);
    assert_eq!(feed(now + 4, ""), 60);
}
