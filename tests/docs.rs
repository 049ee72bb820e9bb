//! The scripts the docs name (README.md, BENCHMARKS.md, SECURITY.md and docs/): each
//! exists, and each the docs show as a command (a `sh` code block's or inline code's
//! command, read by `test_support::docs`) runs in CI, from `.ci/run` through
//! scripts/test.sh and the scripts it runs (scripts/smoke.sh: the long ones at their
//! smallest size), or is listed in docs/development.md's table of the docs' commands as
//! "not run", with the reason. `wrctl` and `simulate` command lines are checked against
//! the binaries in their own crates' tests/docs.rs and tests/invocations.rs.

use test_support as support;

use std::collections::BTreeSet;
use std::path::Path;

use support::docs;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `scripts/NAME` paths a text names (NAME as far as a file name goes, without a
/// sentence's closing dot), but not `other/scripts/`.
fn scripts_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("scripts/") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || (before == Some('/') && !text[..at].ends_with("../"))
        {
            continue;
        }
        let name: String = text[at + "scripts/".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .collect();
        let name = name.trim_end_matches('.');
        if !name.is_empty() {
            found.push(format!("scripts/{name}"));
        }
    }
    found
}

#[test]
fn every_script_the_docs_name_exists() {
    let mut named = 0;
    let mut missing = Vec::new();
    for file in docs::files(root()) {
        let text = read(&file.display().to_string());
        for (number, line) in text.lines().enumerate() {
            for script in scripts_named(line) {
                named += 1;
                if !root().join(&script).is_file() {
                    missing.push(format!("{}:{}: {script}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs name scripts that do not exist:\n{}",
        missing.join("\n")
    );
    // Scores of mentions: finding few means the reading broke.
    assert!(named > 50, "only {named} scripts named in the docs");
}

/// The scripts CI runs: those `.ci/run` names, and, over and over, those a line of
/// code (not a comment) of a script already found names.
fn run_by_ci() -> BTreeSet<String> {
    let mut run = BTreeSet::new();
    let mut queue = vec![".ci/run".to_string()];
    while let Some(path) = queue.pop() {
        for line in read(&path).lines() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            for script in scripts_named(line) {
                if root().join(&script).is_file() && run.insert(script.clone()) {
                    queue.push(script);
                }
            }
        }
    }
    run
}

/// The scripts of docs/development.md's table of the docs' commands (its section
/// "The docs' commands in CI") on a row whose last cell says "not run".
fn said_not_run() -> BTreeSet<String> {
    let text = read("docs/development.md");
    let start = text
        .find("\n## The docs' commands in CI\n")
        .expect("docs/development.md has a section \"The docs' commands in CI\"");
    let section = &text[start + 1..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    section
        .lines()
        .filter(|line| line.starts_with('|'))
        .filter(|line| {
            let cells: Vec<&str> = line.trim_end_matches('|').split('|').collect();
            cells
                .last()
                .is_some_and(|c| c.trim_start().starts_with("not run"))
        })
        .flat_map(scripts_named)
        .collect()
}

#[test]
fn every_script_the_docs_run_runs_in_ci_or_is_said_not_to() {
    let run = run_by_ci();
    for expected in [
        "scripts/test.sh",
        "scripts/smoke.sh",
        "scripts/fuzz.sh",
        "scripts/demo.sh",
    ] {
        assert!(
            run.contains(expected),
            "CI runs {expected}? found only {run:?}"
        );
    }
    let exempt = said_not_run();
    let mut commands = 0;
    let mut unrun = Vec::new();
    for snippet in docs::all_snippets(root()) {
        for words in docs::commands(&snippet.code) {
            let program = match words[0].as_str() {
                "python3" | "bash" | "sh" | "node" | "source" | "." => words.get(1),
                _ => words.first(),
            };
            let Some(program) = program else { continue };
            let program = program.trim_start_matches("./");
            // A script by name (not the directory, `scripts/`, or `scripts/…`).
            if scripts_named(program) != [program] {
                continue;
            }
            commands += 1;
            if !run.contains(program) && !exempt.contains(program) {
                unrun.push(format!("{}: {}", snippet.place, words.join(" ")));
            }
        }
    }
    assert!(
        unrun.is_empty(),
        "scripts the docs run that CI does not, nor docs/development.md says it does not:\n{}",
        unrun.join("\n")
    );
    assert!(
        commands > 20,
        "only {commands} script commands found in the docs"
    );
}
