//! wrctl's tests, one binary, a module per file of tests/ (the real `wrctl` binary
//! run as a process, its listener, its writers against local stand-ins, the docs held
//! to its command line), sharing `support`. One area:
//! `cargo nextest run -p wrctl --test wrctl keys::`.

mod alerts;
mod budget;
mod cli;
mod config_check;
mod dashboard;
mod docs;
mod fifo_loop;
mod grafana;
mod keys;
mod listener;
mod log_secret;
mod login;
mod manual;
mod origin;
mod pages;
mod process;
mod prometheus;
mod promtool;
mod report;
mod rooms;
mod sinks;
mod support;
mod webhook;

/// Every file of tests/ is a module above: with `autotests = false` cargo would leave
/// a file not named here unbuilt and its tests unrun.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let missing = test_support::docs::unnamed_test_modules(&dir, include_str!("main.rs"));
    assert!(
        missing.is_empty(),
        "tests/main.rs does not name {missing:?}: add `mod NAME;` for each"
    );
}
