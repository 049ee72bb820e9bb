//! Every `wrctl` command line the docs show (README.md, BENCHMARKS.md, SECURITY.md and
//! docs/: `sh` code blocks and inline code, read by `test_support::docs`) names only
//! subcommands and options the real binary's `--help` lists.

use std::path::Path;

use test_support::docs::{self, Cli};

#[test]
fn every_documented_wrctl_command_is_one_wrctl_knows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = docs::invocations(&docs::all_snippets(&root), "wrctl");
    // The docs show wrctl well over a hundred times: finding few means the reading broke.
    assert!(
        found.len() > 100,
        "only {} wrctl commands found",
        found.len()
    );
    let cli = Cli::new(env!("CARGO_BIN_EXE_wrctl"), "wrctl");
    let wrong: Vec<String> = found
        .iter()
        .filter_map(|(place, args)| cli.check(args).err().map(|e| format!("{place}: {e}")))
        .collect();
    assert!(
        wrong.is_empty(),
        "commands the docs show that wrctl does not know:\n{}",
        wrong.join("\n")
    );
}
