//! The command reference of `docs/operate/wrctl.md`, rendered from the command line's own
//! definition ([`crate::cli::Cli`], through clap's `Command`): every command, its
//! usage, its long help, its examples and a table of its arguments and options,
//! so the page says what `--help` says. The page keeps the reference between
//! [`BEGIN`] and [`END`]; `tools/wrctl/tests/manual.rs` fails when the two differ,
//! and rewrites it with `WRCTL_WRITE_MANUAL=1`.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::cli::Cli;

/// The line before the generated reference in `docs/operate/wrctl.md`.
pub const BEGIN: &str = "<!-- BEGIN the reference generated from wrctl's command line \
(tools/wrctl/src/manual.rs); edit the help in tools/wrctl/src/, not this part -->";

/// The line after it.
pub const END: &str = "<!-- END of the generated reference -->";

/// The reference: a table of the commands, then a section for each, in the order
/// of `wrctl --help`.
pub fn markdown() -> String {
    let mut root = Cli::command();
    root.build();
    let mut out = String::new();
    out.push_str("| command | what it does |\n|---|---|\n");
    for (path, cmd) in commands(&root, &[]) {
        if cmd.has_subcommands() {
            continue;
        }
        let name = format!("wrctl {}", path.join(" "));
        let _ = writeln!(
            out,
            "| [`{name}`](#{}) | {} |",
            anchor(&name),
            cell(&text(cmd.get_about()))
        );
    }
    for (path, cmd) in commands(&root, &[]) {
        out.push('\n');
        command(&mut out, &path, cmd);
    }
    out
}

/// Every visible subcommand under `cmd`, depth first, with its path of names.
fn commands<'a>(cmd: &'a Command, path: &[String]) -> Vec<(Vec<String>, &'a Command)> {
    let mut found = Vec::new();
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let mut here = path.to_vec();
        here.push(sub.get_name().to_string());
        found.push((here.clone(), sub));
        found.extend(commands(sub, &here));
    }
    found
}

/// One command's section: its heading (`##` for a command of `wrctl`, `###` below),
/// its usage, its long help, its arguments and options, its examples.
fn command(out: &mut String, path: &[String], cmd: &Command) {
    let name = format!("wrctl {}", path.join(" "));
    let level = if path.len() == 1 { "##" } else { "###" };
    let _ = writeln!(out, "{level} `{name}`\n");
    let about = cmd.get_long_about().or(cmd.get_about());
    for paragraph in text(about).split("\n\n").filter(|p| !p.trim().is_empty()) {
        let _ = writeln!(out, "{}\n", prose(&paragraph.replace('\n', " ")));
    }
    let mut cmd = cmd.clone();
    let usage = cmd.render_usage().to_string();
    let usage = usage.trim().strip_prefix("Usage: ").unwrap_or(usage.trim());
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    if cmd.has_subcommands() {
        out.push_str("| command | what it does |\n|---|---|\n");
        for (sub_path, sub) in commands(&cmd, path) {
            let sub_name = format!("wrctl {}", sub_path.join(" "));
            let _ = writeln!(
                out,
                "| [`{sub_name}`](#{}) | {} |",
                anchor(&sub_name),
                cell(&text(sub.get_about()))
            );
        }
        out.push('\n');
    }
    let args: Vec<&Arg> = cmd
        .get_positionals()
        .chain(cmd.get_arguments().filter(|a| !a.is_positional()))
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !args.is_empty() {
        out.push_str("| argument | value | what it does |\n|---|---|---|\n");
        for arg in args {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} |",
                arg_name(arg).replace('|', "\\|"),
                value(arg),
                cell(&text(arg.get_long_help().or(arg.get_help())))
            );
        }
        out.push('\n');
    }
    if let Some(examples) = cmd.get_after_long_help() {
        let examples = examples.to_string();
        let mut lines = examples.lines();
        let heading = lines.next().unwrap_or_default().trim_end_matches(':');
        let _ = writeln!(out, "{heading}:\n\n```sh");
        for line in lines {
            let _ = writeln!(out, "{}", line.strip_prefix("  ").unwrap_or(line));
        }
        out.push_str("```\n\n");
    }
    // One blank line between sections, none at the end.
    while out.ends_with("\n\n") {
        out.pop();
    }
}

/// `--name <VALUE>`, or `<VALUE>` for a positional argument.
fn arg_name(arg: &Arg) -> String {
    let values = arg
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    let takes_value = matches!(arg.get_action(), ArgAction::Set | ArgAction::Append);
    match arg.get_long() {
        Some(long) if takes_value => format!("--{long} {values}"),
        Some(long) => format!("--{long}"),
        None => values,
    }
}

/// What clap knows of a value: required, repeatable, its choices and its default.
fn value(arg: &Arg) -> String {
    let mut said = Vec::new();
    if arg.is_required_set() {
        said.push("required".to_string());
    }
    if matches!(arg.get_action(), ArgAction::Append) {
        said.push(if arg.is_positional() {
            "any number".to_string()
        } else {
            "repeatable".to_string()
        });
    }
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !choices.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue) {
        said.push(format!("one of {}", choices.join(", ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue) {
        said.push(format!("default {}", defaults.join(", ")));
    }
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        said.push("a flag".to_string());
    }
    said.join("; ")
}

/// A help text as plain text (clap's styling dropped).
fn text(styled: Option<&clap::builder::StyledStr>) -> String {
    styled.map(ToString::to_string).unwrap_or_default()
}

/// A help text in one table cell: lines joined, the example set apart as code.
fn cell(help: &str) -> String {
    let lines: Vec<String> = help
        .lines()
        .map(|line| match line.strip_prefix("Example: ") {
            Some(example) if !example.contains('`') => {
                let code = |e: &str| format!("`{}`", e.replace('|', "\\|"));
                match example
                    .strip_suffix(')')
                    .and_then(|e| e.split_once(" (or "))
                {
                    Some((one, other)) => format!("Example: {} (or {})", code(one), code(other)),
                    None => format!("Example: {}", code(example)),
                }
            }
            _ => prose(line).replace('|', "\\|"),
        })
        .collect();
    lines.join(" ").trim().to_string()
}

/// Text as Markdown shows it: `<` and `>` outside code spans escaped, so that a
/// placeholder such as `<secret>` is not taken for HTML.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for (i, piece) in text.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(piece);
        } else {
            out.push_str(&piece.replace('<', "&lt;").replace('>', "&gt;"));
        }
    }
    out
}

/// The anchor GitHub gives a heading of `` `name` ``.
fn anchor(name: &str) -> String {
    name.chars()
        .filter_map(|c| match c {
            ' ' | '-' => Some('-'),
            c if c.is_alphanumeric() || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_githubs() {
        assert_eq!(anchor("wrctl token inspect"), "wrctl-token-inspect");
        assert_eq!(anchor("wrctl config check"), "wrctl-config-check");
    }

    #[test]
    fn placeholders_outside_code_are_escaped() {
        assert_eq!(
            prose("Bearer <secret> and `<kept>`"),
            "Bearer &lt;secret&gt; and `<kept>`"
        );
    }

    #[test]
    fn every_command_and_option_is_in_the_reference() {
        let reference = markdown();
        for needle in [
            "## `wrctl control`",
            "### `wrctl token inspect`",
            "## `wrctl rooms`",
            "### `wrctl pass mint`",
            "`--room <NAME[:KEY=VALUE,...]>`",
            "`--event-target <NAME=N>`",
            "`--until <TIME|+SECONDS>`",
        ] {
            assert!(
                reference.contains(&needle.replace("TIME|", "TIME\\|")),
                "{needle}"
            );
        }
    }
}
