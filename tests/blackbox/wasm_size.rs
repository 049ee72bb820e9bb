//! The built wasm stays within its recorded size budget, `wasm-size-budget`, plus
//! 10 %. A change that grows the program past that either pays for itself (record
//! the new size, and say why, in BENCHMARKS.md) or is reworked.

use std::fs;
use std::path::Path;

use support::viceroy_room::wasm_path;

/// The file holding the budget, in bytes.
const BUDGET_FILE: &str = "wasm-size-budget";
/// Growth tolerated over the budget, in percent.
const ALLOWANCE_PERCENT: u64 = 10;

/// The byte count in `text`: its first line that is neither blank nor a `#` comment.
fn parse_budget(text: &str) -> Option<u64> {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))?
        .parse()
        .ok()
}

/// The largest size accepted for `budget`: budget × 1.10, rounded down.
fn ceiling(budget: u64) -> u64 {
    budget * (100 + ALLOWANCE_PERCENT) / 100
}

#[test]
fn wasm_is_within_its_size_budget() {
    let budget_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(BUDGET_FILE);
    let text = fs::read_to_string(&budget_path)
        .unwrap_or_else(|e| panic!("{}: {e}", budget_path.display()));
    let budget = parse_budget(&text)
        .unwrap_or_else(|| panic!("{} holds no byte count", budget_path.display()));
    let wasm = wasm_path();
    let size = fs::metadata(&wasm)
        .unwrap_or_else(|e| panic!("{}: {e}", wasm.display()))
        .len();
    assert!(
        size <= ceiling(budget),
        "{} is {size} bytes, over its budget of {budget} + {ALLOWANCE_PERCENT} % = {} bytes \
         (see BENCHMARKS.md, \"Wasm size\")",
        wasm.display(),
        ceiling(budget)
    );
}

#[test]
fn budget_file_format() {
    assert_eq!(parse_budget("# a comment\n\n 584592 \n"), Some(584_592));
    assert_eq!(parse_budget("# only comments\n"), None);
    assert_eq!(parse_budget("lots\n"), None);
    assert_eq!(ceiling(1_000_000), 1_100_000);
    assert_eq!(ceiling(999), 1098);
}
