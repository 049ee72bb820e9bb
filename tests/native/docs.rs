//! The scripts the docs name (README.md, BENCHMARKS.md, SECURITY.md and docs/): each
//! exists, and each the docs show as a command (a `sh` code block's or inline code's
//! command, read by `test_support::docs`) runs in CI, from `.ci/run` through
//! scripts/test.sh and the scripts it runs (scripts/smoke.sh: the long ones at their
//! smallest size), or is listed in docs/development.md's table of the docs' commands as
//! "not run", with the reason. `wrctl` and `simulate` command lines are checked against
//! the binaries in their own crates' tests/docs.rs and tests/invocations.rs. Every
//! link of the docs leads to a file that exists, and a `#fragment` to one of its
//! headings; every file git keeps under docs/research/figures is linked from a doc. The
//! first `fastly compute publish` leaves the room off. README.md is an operator's guide
//! of at most 250 lines, which says how to get `wrctl` before it runs it.
//! docs/operate/configuration.md's key table is the settings table's
//! (`waiting_room::settings::table`): `WRITE_CONFIG_REFERENCE=1` rewrites it.

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

/// The GitHub anchor of a heading: lower case, without what is neither a letter, a
/// digit, a space, `-` nor `_`, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lines of a Markdown text outside its code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The anchors of a Markdown text's headings (a repeated heading's with `-1`, `-2`…).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = anchor(heading);
        let mut name = base.clone();
        let mut n = 0;
        while !found.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
    }
    found
}

/// The targets of a line's inline links, `[text](target)`, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    let prose: String = line
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, piece)| piece)
        .collect::<Vec<_>>()
        .join("");
    let mut targets = Vec::new();
    for (at, _) in prose.match_indices("](") {
        let rest = &prose[at + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].trim().to_string());
        }
    }
    targets
}

/// A link of the docs to a file of the repository.
struct Link {
    /// `file:line: (target)`.
    place: String,
    /// The file linked, from the root (`docs/a/../b.md` as written, the linking file
    /// itself for `#fragment` alone).
    path: std::path::PathBuf,
    /// What follows `#`, or nothing.
    fragment: String,
}

/// Every link of the docs but those to other sites (`://`, `mailto:`).
fn links() -> Vec<Link> {
    let mut found = Vec::new();
    for file in docs::files(root()) {
        let text = read(&file.display().to_string());
        let dir = file.parent().unwrap_or(Path::new(""));
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
                found.push(Link {
                    place: format!("{}:{number}: ({target})", file.display()),
                    path: if path.is_empty() {
                        file.clone()
                    } else {
                        dir.join(path)
                    },
                    fragment: fragment.to_string(),
                });
            }
        }
    }
    found
}

#[test]
fn every_link_of_the_docs_resolves() {
    let links = links();
    let mut broken = Vec::new();
    for Link {
        place,
        path: linked,
        fragment,
    } in &links
    {
        if !root().join(linked).exists() {
            broken.push(format!("{place}: no file {}", linked.display()));
            continue;
        }
        if !fragment.is_empty() && linked.extension().is_some_and(|e| e == "md") {
            let linked_text = std::fs::read_to_string(root().join(linked))
                .unwrap_or_else(|e| panic!("{}: {e}", linked.display()));
            if !anchors(&linked_text).contains(fragment) {
                broken.push(format!("{place}: no heading #{fragment}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links of the docs that lead nowhere:\n{}",
        broken.join("\n")
    );
    // Hundreds of links: finding few means the reading broke.
    assert!(
        links.len() > 200,
        "only {} links found in the docs",
        links.len()
    );
}

/// `path` with its `.` and `..` steps taken, its parts joined by `/`.
fn normalized(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop();
            }
            part => parts.push(part.as_os_str().to_string_lossy().into_owned()),
        }
    }
    parts.join("/")
}

/// The files git keeps under `dir`, from the root.
fn in_git(dir: &str) -> Vec<String> {
    let output = std::process::Command::new("git")
        .args(["ls-files", "-z", "--", dir])
        .current_dir(root())
        .output()
        .expect("git, to list the files it keeps");
    assert!(
        output.status.success(),
        "git ls-files {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("file names in UTF-8")
        .split('\0')
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// The scripts remake the figures of docs/research/figures; git keeps only the ones a
/// doc links (the tables, the plots and screenshots the docs show), and its
/// `.gitignore` leaves out the rest. A figure kept in git that no doc links is one to
/// remove (or to link).
#[test]
fn every_figure_file_in_git_is_linked_from_a_doc() {
    let linked: BTreeSet<String> = links().iter().map(|l| normalized(&l.path)).collect();
    let kept = in_git("docs/research/figures");
    assert!(
        kept.iter().any(|f| f.ends_with(".svg")) && kept.iter().any(|f| f.ends_with(".md")),
        "no plots or tables in git under docs/research/figures: {kept:?}"
    );
    let unlinked: Vec<&String> = kept
        .iter()
        .filter(|f| !f.ends_with("/.gitignore") && !linked.contains(*f))
        .collect();
    assert!(
        unlinked.is_empty(),
        "figure files in git that no doc links (link them from a doc, or git rm them: \
         their script remakes them):\n{}",
        unlinked
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The value `[setup]` of fastly.toml gives the config-store item `key` on the first
/// publish (the `value = "…"` line of its table).
fn setup_value(manifest: &str, key: &str) -> Option<String> {
    let table = format!("[setup.config_stores.waitingroom_config.items.{key}]");
    let rest = &manifest[manifest.find(&table)? + table.len()..];
    let section = &rest[..rest.find("\n  [").unwrap_or(rest.len())];
    let section = &section[..section.find("\n    [").unwrap_or(section.len())];
    section.lines().find_map(|line| {
        let value = line
            .trim()
            .strip_prefix("value")?
            .trim_start()
            .strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_string())
    })
}

#[test]
fn the_first_publish_leaves_the_room_off_and_the_local_room_on() {
    let manifest = read("fastly.toml");
    assert_eq!(
        setup_value(&manifest, "enabled").as_deref(),
        Some("false"),
        "fastly.toml's [setup] must create enabled = \"false\": the room starts off"
    );
    // The paths it will protect once on: a member of the `settings` object.
    assert_eq!(
        setup_value(&manifest, "settings").as_deref(),
        Some(r#"'{"protected_paths": "/events,/checkout"}'"#)
    );
    // The demo and the tests serve [local_server]'s store, where the room is on.
    let local: serde_json::Value =
        serde_json::from_str(&read("local/config.json")).expect("local/config.json");
    assert_eq!(local["enabled"], "true");
}

#[test]
fn the_readme_is_an_operators_guide_of_at_most_250_lines() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines, over 250: move the detail into docs/"
    );
    for needed in [
        "scripts/demo.sh",
        ".ci/run",
        "## Launch checklist",
        "wrctl keygen",
        "wrctl config check",
        "wrctl pages check",
        "simulate -- plan",
        "wrctl control",
        "allow_percentage_fallback",
        "controller_timeout",
        "/metrics",
        "--key enabled --value true",
        "--key enabled --value false",
    ] {
        assert!(
            readme.contains(needed),
            "README.md says nothing of {needed}"
        );
    }
    // From the quick start on, nobody is asked to run wrctl (in a code block or in
    // inline code) before being told how to get it.
    let line_of = |needle: &str| {
        readme
            .lines()
            .position(|line| line.contains(needle))
            .map(|i| i + 1)
    };
    let start = line_of("## Quick start").expect("README.md has a quick start");
    let built = line_of("cargo build --release -p wrctl").expect("README.md builds wrctl");
    let snippets = docs::snippets("README.md", &readme);
    let first = docs::invocations(&snippets, "wrctl")
        .into_iter()
        .filter(|(_, args)| !args.is_empty()) // `wrctl` alone names it
        .filter_map(|(place, _)| place.rsplit(':').next()?.parse::<usize>().ok())
        .filter(|line| *line > start)
        .min()
        .expect("README.md runs wrctl");
    assert!(
        built < first,
        "README.md:{first} runs wrctl before line {built} says how to build it"
    );
}

/// docs/reference/how-it-works.md's table of the log line's fields is what
/// `waiting_room::log::FIELDS` renders; `WRITE_LOG_REFERENCE=1` rewrites it.
#[test]
fn log_fields_table_is_generated_from_the_log_record() {
    use waiting_room::log;
    docs::check_generated(&docs::Generated {
        path: &root().join("docs/reference/how-it-works.md"),
        begin: log::BEGIN,
        end: log::END,
        text: log::reference(),
        write_var: "WRITE_LOG_REFERENCE",
        regenerate: "WRITE_LOG_REFERENCE=1 cargo test --test native docs::log_fields",
    });
}

/// docs/operate/configuration.md's key table is what the settings table renders
/// (`waiting_room::settings::table::reference`): this test fails when the two differ.
/// `WRITE_CONFIG_REFERENCE=1` rewrites the page's table instead (docs/development.md,
/// "The configuration reference").
#[test]
fn configuration_md_key_table_is_generated_from_the_settings_table() {
    use waiting_room::settings::table;
    docs::check_generated(&docs::Generated {
        path: &root().join("docs/operate/configuration.md"),
        begin: table::BEGIN,
        end: table::END,
        text: table::reference(),
        write_var: "WRITE_CONFIG_REFERENCE",
        regenerate: "WRITE_CONFIG_REFERENCE=1 cargo test --test native docs::configuration_md",
    });
}
