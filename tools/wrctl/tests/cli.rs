//! The command line refuses what it cannot use, with exit code 2 and a message
//! naming the flag; a failure to start exits 1.

use crate::support;

use support::{run_to_end, wrctl};

/// Runs `wrctl control ARGS` and checks it is refused with 2 and every `words` in the message.
fn refused(args: &[&str], env: &[(&str, &str)], words: &[&str]) {
    let all = [&["control"], args].concat();
    let (code, err) = run_to_end(&all, env);
    assert_eq!(code, Some(2), "wrctl {all:?} exit code; stderr:\n{err}");
    for word in words {
        assert!(err.contains(word), "wrctl {all:?}: {word:?} not in:\n{err}");
    }
}

/// A dry run with a target: where each refusal below starts.
const DRY_RUN: [&str; 3] = ["--target-per-minute", "60", "--dry-run"];

/// [`refused`] for a dry run with a target and `extra` arguments.
fn refused_dry_run(extra: &[&str], words: &[&str]) {
    refused(&[&DRY_RUN[..], extra].concat(), &[], words);
}

#[test]
fn a_missing_target_is_refused() {
    refused(&["--dry-run"], &[], &["--target-per-minute"]);
}

#[test]
fn a_bad_target_is_refused() {
    refused(
        &["--target-per-minute", "0", "--dry-run"],
        &[],
        &["--target-per-minute", "'0'"],
    );
    refused(
        &["--target-per-minute", "lots", "--dry-run"],
        &[],
        &["--target-per-minute", "lots"],
    );
}

#[test]
fn min_above_max_is_refused() {
    refused_dry_run(&["--min", "50", "--max", "10"], &["--min 50", "--max 10"]);
}

#[test]
fn a_start_outside_min_max_is_refused() {
    refused_dry_run(
        &["--max", "10", "--start", "20"],
        &["--start 20", "--max 10"],
    );
}

#[test]
fn bad_percentage_text_is_refused() {
    for bad in ["abc", "12,5", ".5", "101", "-1", ""] {
        refused_dry_run(&[&format!("--min={bad}")], &["--min", &format!("'{bad}'")]);
    }
    refused_dry_run(&["--start", "x"], &["--start", "'x'"]);
}

#[test]
fn no_sink_or_two_sinks_are_refused() {
    refused(
        &["--target-per-minute", "60"],
        &[],
        &["--config-file", "--fastly-store-id", "--dry-run"],
    );
    refused_dry_run(
        &["--config-file", "x.json"],
        &["--dry-run", "--config-file"],
    );
    refused(
        &[
            "--target-per-minute",
            "60",
            "--config-file",
            "x.json",
            "--fastly-store-id",
            "abc",
        ],
        &[("FASTLY_API_TOKEN", "t")],
        &["--config-file", "--fastly-store-id"],
    );
}

#[test]
fn a_store_id_without_a_token_is_refused() {
    refused(
        &["--target-per-minute", "60", "--fastly-store-id", "store123"],
        &[],
        &["--fastly-store-id store123", "FASTLY_API_TOKEN"],
    );
    refused(
        &["--target-per-minute", "60", "--fastly-store-id", "store123"],
        &[("FASTLY_API_TOKEN", "")],
        &["FASTLY_API_TOKEN"],
    );
}

#[test]
fn the_token_is_not_a_flag() {
    refused(
        &[
            "--target-per-minute",
            "60",
            "--fastly-store-id",
            "s",
            "--token",
            "x",
        ],
        &[("FASTLY_API_TOKEN", "t")],
        &["--token"],
    );
}

#[test]
fn bad_values_of_other_flags_are_refused() {
    for (flag, value) in [
        ("--tick", "0"),
        ("--heartbeat-every", "0"),
        ("--wait-period", "0"),
        ("--max-active", "0"),
        ("--fastly-store-id", "a/b"),
        ("--fastly-api-url", "ftp://x"),
        ("--listen", "not an address"),
        ("--service-id", "a b"),
        ("--max-body-bytes", "0"),
    ] {
        refused_dry_run(&[flag, value], &[flag, &format!("'{value}'")]);
    }
}

#[test]
fn an_unreadable_config_file_fails_at_start_with_1() {
    let dir = tempfile::tempdir().unwrap();
    let start = |config: &std::path::Path| {
        let args = ["control", "--target-per-minute", "60", "--config-file"];
        run_to_end(&[&args[..], &[config.to_str().unwrap()]].concat(), &[])
    };
    let (code, err) = start(&dir.path().join("missing.json"));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--config-file") && err.contains("missing.json"),
        "{err}"
    );

    let not_json = dir.path().join("bad.json");
    std::fs::write(&not_json, "[1, 2]").unwrap();
    let (code, err) = start(&not_json);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a JSON object"), "{err}");
}

#[test]
fn an_address_in_use_fails_at_start_with_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = run_to_end(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--dry-run",
            "--listen",
            &addr,
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--listen") && err.contains(&addr), "{err}");
}

#[test]
fn the_help_documents_every_option_with_an_example() {
    let run = wrctl(&["control", "--help"], &[]);
    assert_eq!(run.code, Some(0));
    let help = run.out;
    for flag in [
        "--target-per-minute",
        "--queueing",
        "--fifo-hold",
        "--max-active",
        "--min",
        "--max",
        "--tick",
        "--heartbeat-every",
        "--log-silence",
        "--wait-period",
        "--redeem-window",
        "--start",
        "--config-file",
        "--fastly-store-id",
        "--fastly-api-url",
        "--dry-run",
        "--listen",
        "--state-listen",
        "--accept-unauthenticated-logs",
        "--service-id",
        "--max-body-bytes",
        "--http-timeout",
        "--quiet",
        "--room",
        "--service-room",
        "--api-budget",
        "--event-target",
        "--room-dashboard",
        "--origin-healthy",
        "--origin-floor",
        "--origin-ceiling",
        "--session-length",
        "--webhook-per-minute",
        "--webhook-queue",
    ] {
        assert!(
            help.contains(&format!("Example: {flag}")) || help.contains(&format!("{flag} ")),
            "{flag}"
        );
    }
    assert_eq!(help.matches("Example:").count(), 35, "{help}");
    assert!(help.contains("FASTLY_API_TOKEN"));
}

#[test]
fn stdin_ending_without_a_listener_exits_0() {
    let (code, err) = run_to_end(&["control", "--target-per-minute", "60", "--dry-run"], &[]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn bad_room_specs_are_refused_naming_the_room_and_the_setting() {
    refused_dry_run(
        &["--room", "drops", "--room", "drops"],
        &["--room drops is given twice"],
    );
    refused_dry_run(
        &["--room", "drops:speed=3"],
        &["--room", "unknown setting \"speed\"", "target, queueing"],
    );
    refused_dry_run(&["--room", "drops:target=0"], &["--room", "target=0"]);
    refused_dry_run(
        &["--room", "drops:queueing=lifo"],
        &["--room", "random or fifo"],
    );
    refused_dry_run(&["--room", "drops:wait-period=0"], &["wait-period=0"]);
    refused_dry_run(&["--room", "Drops"], &["not a room name"]);
    refused_dry_run(&["--room", "drops:target"], &["not KEY=VALUE"]);
    refused_dry_run(
        &["--room", "drops:queueing=fifo,min=1", "--room", "vip"],
        &["--room drops", "--min and --max"],
    );
    refused_dry_run(
        &["--room", "a:min=50,max=10", "--room", "b"],
        &["--room a", "--min 50 is above --max 10"],
    );
    refused(
        &["--dry-run", "--room", "drops:target=5", "--room", "vip"],
        &[],
        &["--room vip: no target"],
    );
    refused(
        &["--dry-run", "--service-room", "--room", "drops:target=5"],
        &[],
        &["--target-per-minute"],
    );
}

#[test]
fn rooms_of_either_mode_share_the_flags_that_apply_to_them() {
    // The lottery's --min and --start are the service room's; the FIFO room
    // takes none of them. Every room with a target needs no --target-per-minute.
    for args in [
        &[
            "--target-per-minute",
            "60",
            "--min",
            "0.01",
            "--start",
            "5",
            "--service-room",
            "--room",
            "drops:queueing=fifo,event.drop-1=120",
        ][..],
        &["--room", "a:target=5", "--room", "b:target=6,max-active=9"][..],
    ] {
        let all = [&["control", "--dry-run"], args].concat();
        let (code, err) = run_to_end(&all, &[]);
        assert_eq!(code, Some(0), "{all:?}: {err}");
        assert!(err.contains("in one writer"), "{err}");
    }
}
