//! The simulator's tests, one binary, a module per file of tests/ (its command line,
//! small scenarios, the closed loop, FIFO, the toll and identity on small crowds, the
//! docs' `simulate` lines). One area:
//! `cargo nextest run -p simulate --test simulate closed_loop::`.

mod cli;
mod closed_loop;
mod fifo;
mod identity;
mod invocations;
mod small_scenarios;
mod toll;

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
