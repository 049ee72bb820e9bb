//! The commands the project's Markdown shows, for the tests that hold the docs to
//! the code (`tests/native/docs.rs`, `tools/wrctl/tests/docs.rs`,
//! `tools/simulate/tests/invocations.rs`): every line of a `sh` code block and every
//! inline code span, cut into simple commands the way a shell would (quotes, pipes,
//! `&&`, redirections, comments, line continuations), and a program's `--help` read
//! for the subcommands and options it knows.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Markdown files the docs check: `README.md`, `BENCHMARKS.md`, `SECURITY.md` and
/// every `.md` under `docs/`, as paths relative to `root`, sorted.
pub fn files(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = ["README.md", "BENCHMARKS.md", "SECURITY.md"]
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| root.join(p).is_file())
        .collect();
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(root.join(&dir))
            .unwrap_or_else(|e| panic!("{}: {e}", root.join(&dir).display()));
        for entry in entries {
            let path = dir.join(entry.expect("a directory entry").file_name());
            if root.join(&path).is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    assert!(found.len() > 3, "no docs under {}", root.display());
    found
}

/// Where a piece of code was shown, and the code.
#[derive(Debug, Clone, PartialEq)]
pub struct Snippet {
    /// `file:line`.
    pub place: String,
    /// The code: one line of a `sh` block (continuation lines joined), or an inline span.
    pub code: String,
}

/// The code of one Markdown text: each logical line of its `sh` code blocks (other
/// blocks, such as `text` or `json`, are left out), and each inline code span outside
/// code blocks (a span may run across a line break).
pub fn snippets(file: &str, text: &str) -> Vec<Snippet> {
    let mut out = Vec::new();
    let mut fence: Option<bool> = None; // Some(is sh) while inside a block
    let mut pending = String::new(); // a sh line continued with a backslash
    let mut pending_line = 0;
    let mut prose = String::new(); // text outside blocks, with each line's number
    let mut prose_lines: Vec<(usize, usize)> = Vec::new(); // (byte offset, line number)
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell" | "console")),
                Some(_) => None,
            };
            continue;
        }
        match fence {
            Some(true) => {
                if pending.is_empty() {
                    pending_line = number;
                }
                match trimmed.strip_suffix('\\') {
                    Some(head) => {
                        pending.push_str(head);
                        pending.push(' ');
                    }
                    None => {
                        pending.push_str(trimmed);
                        out.push(Snippet {
                            place: format!("{file}:{pending_line}"),
                            code: std::mem::take(&mut pending),
                        });
                    }
                }
            }
            Some(false) => {}
            None => {
                prose_lines.push((prose.len(), number));
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    let line_at = |offset: usize| {
        prose_lines
            .iter()
            .rev()
            .find(|(start, _)| *start <= offset)
            .map_or(0, |(_, n)| *n)
    };
    let mut rest = prose.as_str();
    let mut offset = 0;
    while let Some(open) = rest.find('`') {
        let ticks = rest[open..].chars().take_while(|c| *c == '`').count();
        let body = &rest[open + ticks..];
        let fence = "`".repeat(ticks);
        let Some(close) = body.find(&fence) else {
            break;
        };
        let code = body[..close].replace('\n', " ");
        out.push(Snippet {
            place: format!("{file}:{}", line_at(offset + open)),
            code: code.trim().to_string(),
        });
        let consumed = open + ticks + close + ticks;
        offset += consumed;
        rest = &rest[consumed..];
    }
    out
}

/// Every snippet of every file of [`files`].
pub fn all_snippets(root: &Path) -> Vec<Snippet> {
    files(root)
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(root.join(file))
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            snippets(&file.display().to_string(), &text)
        })
        .collect()
}

/// The simple commands of a line of shell, as words: split where a shell would run
/// another command (unquoted `|`, `&`, `;`, `(`, `)`), quotes removed, redirections
/// (`>`, `>>`, `< `, `2>` and their target) and comments dropped, leading `NAME=value`
/// assignments and `time`, `env` or `exec` dropped. A `<` that a word follows at once
/// opens a placeholder, `<store id>`, kept as one word.
pub fn commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    // The word being read, once one has begun (`''` begins an empty one).
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.get_or_insert_default().extend(chars.next()),
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '\\') => word.get_or_insert_default().extend(chars.next()),
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '|' | '&' | ';' | '(' | ')') => {
                words.extend(word.take());
                commands.push(std::mem::take(&mut words));
            }
            (None, '<')
                if chars
                    .peek()
                    .is_some_and(|c| !c.is_whitespace() && *c != '(') =>
            {
                // A placeholder, `<waitingroom_config id>`: one word up to its `>`.
                let word = word.get_or_insert_default();
                word.push('<');
                for c in chars.by_ref() {
                    word.push(c);
                    if c == '>' {
                        break;
                    }
                }
            }
            (None, '>' | '<') => {
                // A redirection: `2>` takes its digit along; the target is the next word.
                word.take_if(|w| w.chars().all(|d| d.is_ascii_digit()));
                words.extend(word.take());
                if chars.peek() == Some(&'(') {
                    continue; // process substitution: `(` opens a command
                }
                while chars.peek().is_some_and(|c| matches!(c, '>' | '&')) {
                    chars.next();
                }
                words.push(REDIRECT.to_string());
            }
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    commands.push(words);
    commands
        .into_iter()
        .map(|words| {
            // A redirection and its target are no arguments.
            let mut words = words.into_iter();
            let mut kept = Vec::new();
            while let Some(w) = words.next() {
                if w == REDIRECT {
                    words.next();
                } else {
                    kept.push(w);
                }
            }
            let lead = kept
                .iter()
                .take_while(|w| {
                    matches!(w.as_str(), "time" | "env" | "exec")
                        || w.split_once('=').is_some_and(|(name, _)| {
                            !name.is_empty()
                                && name.chars().all(|c| {
                                    c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'
                                })
                        })
                })
                .count();
            kept.split_off(lead)
        })
        .filter(|words| !words.is_empty())
        .collect()
}

const REDIRECT: &str = "\u{0}redirect";

/// Where the docs run `program`, and its arguments there: commands whose first word is
/// `program` or a path to it under a `target/` directory, and `cargo run … -p program
/// … -- ARGS`.
pub fn invocations(snippets: &[Snippet], program: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for snippet in snippets {
        for words in commands(&snippet.code) {
            let first = words[0].as_str();
            let args = if first == program
                || (first.contains("target/") && first.ends_with(&format!("/{program}")))
            {
                Some(words[1..].to_vec())
            } else if first == "cargo" && words.get(1).is_some_and(|w| w == "run") {
                let package = words
                    .windows(2)
                    .find(|w| w[0] == "-p" || w[0] == "--package")
                    .map(|w| w[1].as_str());
                let dashes = words.iter().position(|w| w == "--");
                (package == Some(program))
                    .then(|| dashes.map_or_else(Vec::new, |i| words[i + 1..].to_vec()))
            } else {
                None
            };
            if let Some(args) = args {
                out.push((snippet.place.clone(), args));
            }
        }
    }
    out
}

/// What a program's `--help` says it knows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Help {
    /// The names under `Commands:`.
    pub commands: Vec<String>,
    /// Every long option a line of the help starts with (`-h, --help`, `--max <P>`).
    pub options: Vec<String>,
}

impl Help {
    /// Reads a help text.
    pub fn parse(text: &str) -> Help {
        let mut help = Help::default();
        let mut in_commands = false;
        for line in text.lines() {
            if line.trim().is_empty() || !line.starts_with(' ') {
                in_commands = line.trim_end() == "Commands:";
                continue;
            }
            let mut words = line.split_whitespace();
            let Some(first) = words.next() else { continue };
            if in_commands {
                help.commands.push(first.to_string());
            } else if first.starts_with('-') {
                let long = std::iter::once(first)
                    .chain(words.next())
                    .map(|w| w.trim_end_matches(','))
                    .find(|w| w.starts_with("--"));
                if let Some(long) = long {
                    let name = long.split(['=', '[', '<']).next().unwrap_or(long);
                    help.options.push(name.to_string());
                }
            }
        }
        help
    }

    /// Runs `bin path… --help` and reads its output.
    pub fn of(bin: &Path, path: &[String]) -> Help {
        let output = Command::new(bin)
            .args(path)
            .arg("--help")
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        assert!(
            output.status.success(),
            "{} {} --help: {}",
            bin.display(),
            path.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        Help::parse(&String::from_utf8_lossy(&output.stdout))
    }
}

/// A program whose documented command lines are checked against its own `--help`.
pub struct Cli {
    bin: PathBuf,
    program: String,
    helps: std::cell::RefCell<std::collections::HashMap<Vec<String>, Help>>,
}

impl Cli {
    /// The binary `bin`, which the docs call `program`.
    pub fn new(bin: impl Into<PathBuf>, program: &str) -> Cli {
        Cli {
            bin: bin.into(),
            program: program.to_string(),
            helps: Default::default(),
        }
    }

    /// The help of the subcommand at `path` (read once).
    pub fn help(&self, path: &[String]) -> Help {
        self.helps
            .borrow_mut()
            .entry(path.to_vec())
            .or_insert_with(|| Help::of(&self.bin, path))
            .clone()
    }

    /// Checks the arguments a doc gives the program: the leading words name
    /// subcommands it has, as long as the command reached has any (a placeholder such
    /// as `COMMAND` or `…` ends them), and every `--option` is one the command reached
    /// lists. Returns what is wrong.
    pub fn check(&self, args: &[String]) -> Result<(), String> {
        let program = &self.program;
        let mut path: Vec<String> = Vec::new();
        let mut help = self.help(&path);
        let mut rest = args;
        while let Some(word) = rest.first() {
            let placeholder = !word.chars().any(|c| c.is_ascii_lowercase());
            if word.starts_with('-') || help.commands.is_empty() || placeholder {
                break;
            }
            if !help.commands.contains(word) {
                return Err(format!(
                    "`{program} {}`: no subcommand `{word}` (it has: {})",
                    path.join(" "),
                    help.commands.join(", ")
                ));
            }
            path.push(word.clone());
            help = self.help(&path);
            rest = &rest[1..];
        }
        for word in rest {
            if word == "--" {
                break;
            }
            if let Some(name) = word.trim_start_matches('[').strip_prefix("--") {
                let name = name.split(['=', ']']).next().unwrap_or(name);
                if !help.options.iter().any(|o| o[2..] == *name) {
                    return Err(format!(
                        "`{program} {}` has no option --{name}",
                        path.join(" ")
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The files of a test binary's `dir` (tests/) that its `main` source does not name
/// as a module (`mod NAME;`): with `autotests = false` cargo would leave them unbuilt
/// and their tests unrun.
pub fn unnamed_test_modules(dir: &Path, main: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let module = match name.strip_suffix(".rs") {
            Some("main") => continue,
            Some(module) => module,
            None if path.join("mod.rs").is_file() => name,
            None => continue,
        };
        if !main.lines().any(|line| line == format!("mod {module};")) {
            missing.push(name.to_string());
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(commands: &[&[&str]]) -> Vec<Vec<String>> {
        commands
            .iter()
            .map(|c| c.iter().map(|w| w.to_string()).collect())
            .collect()
    }

    #[test]
    fn commands_are_cut_as_a_shell_cuts_them() {
        assert_eq!(
            commands("A=1 B_2=x scripts/real-crowd.sh --people 300  # a comment --no"),
            want(&[&["scripts/real-crowd.sh", "--people", "300"]])
        );
        assert_eq!(
            commands("viceroy serve -C fastly.toml … | wrctl control --listen 127.0.0.1:7677"),
            want(&[
                &["viceroy", "serve", "-C", "fastly.toml", "…"],
                &["wrctl", "control", "--listen", "127.0.0.1:7677"]
            ])
        );
        assert_eq!(
            commands("wrctl keygen > FILE && wrctl x 2>/dev/null < in --y --id <store id> --z"),
            want(&[
                &["wrctl", "keygen"],
                &["wrctl", "x", "--y", "--id", "<store id>", "--z"]
            ])
        );
        assert_eq!(
            commands("tee >(wrctl control --room drops) | a 'b | c' \"d $(e)\" f\\ g"),
            want(&[
                &["tee"],
                &["wrctl", "control", "--room", "drops"],
                &["a", "b | c", "d $(e)", "f g"]
            ])
        );
        assert_eq!(
            commands("export FASTLY_API_TOKEN=…"),
            want(&[&["export", "FASTLY_API_TOKEN=…"]])
        );
    }

    #[test]
    fn snippets_are_sh_lines_and_inline_spans() {
        let text = "Run `wrctl keygen` or `a\nb`.\n\n```sh\nx --y \\\n  --z   # c\nw\n```\n\
                    ```json\n{\"not\": `code`}\n```\n``two `ticks` ``\n";
        let got = snippets("f.md", text);
        let got: Vec<(&str, &str)> = got.iter().map(|s| (&*s.place, &*s.code)).collect();
        let expected = [
            ("f.md:5", "x --y  --z   # c"),
            ("f.md:7", "w"),
            ("f.md:1", "wrctl keygen"),
            ("f.md:1", "a b"),
            ("f.md:12", "two `ticks`"),
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn invocations_find_the_program_and_cargo_run() {
        let snippet = |code: &str| Snippet {
            place: "f.md:1".into(),
            code: code.into(),
        };
        let found = invocations(
            &[
                snippet("cargo run --release -p simulate -- toll --quiet"),
                snippet("cargo run --release -p simulate"),
                snippet("cargo run -p other -- run"),
                snippet("./target/release/simulate run --x | tools/simulate y"),
                snippet("simulate"),
            ],
            "simulate",
        );
        let args: Vec<Vec<String>> = found.into_iter().map(|(_, a)| a).collect();
        assert_eq!(
            args,
            want(&[&["toll", "--quiet"], &[], &["run", "--x"], &[]])
        );
    }

    #[test]
    fn help_lists_commands_and_long_options() {
        let help = Help::parse(
            "About.\n\nUsage: x <COMMAND>\n\nCommands:\n  run   Run it\n  help  Print\n\n\
             Options:\n  -h, --help     Print help\n      --max <P>  Most\n\
             \x20 --at=<T>  At\n\nFIFO mode:\n      --fifo-hold <S>\n          Hold, see --nothing\n",
        );
        assert_eq!(help.commands, ["run", "help"]);
        assert_eq!(help.options, ["--help", "--max", "--at", "--fifo-hold"]);
    }
}

/// A generated part of a doc: the text between the lines `begin` and `end` of the
/// file at `path`.
pub struct Generated<'a> {
    pub path: &'a Path,
    pub begin: &'a str,
    pub end: &'a str,
    /// What the code renders for the part.
    pub text: String,
    /// The environment variable that rewrites the part instead of checking it.
    pub write_var: &'a str,
    /// The command that regenerates it, for the failure's message.
    pub regenerate: &'a str,
}

/// `doc` with the text between its `begin` and `end` lines replaced by `generated`;
/// `None` when it lacks either line.
pub fn splice(doc: &str, begin: &str, end: &str, generated: &str) -> Option<String> {
    let start = doc.find(begin)? + begin.len();
    let stop = start + doc[start..].find(end)?;
    Some(format!(
        "{}\n\n{generated}\n{}",
        &doc[..start],
        &doc[stop..]
    ))
}

/// Fails, naming the first line that differs, when the file's generated part is not
/// `part.text`; with `part.write_var` set, rewrites the part instead.
pub fn check_generated(part: &Generated<'_>) {
    let name = part.path.display();
    let doc = std::fs::read_to_string(part.path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let wanted = splice(&doc, part.begin, part.end, &part.text).unwrap_or_else(|| {
        panic!(
            "{name} lacks the lines around its generated part:\n{}\n{}",
            part.begin, part.end
        )
    });
    if std::env::var_os(part.write_var).is_some() {
        std::fs::write(part.path, &wanted).unwrap_or_else(|e| panic!("{name}: {e}"));
        return;
    }
    if doc != wanted {
        let (line, (have, want)) = doc
            .lines()
            .zip(wanted.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .unwrap_or((
                doc.lines().count().min(wanted.lines().count()),
                ("(end of file)", "(more lines)"),
            ));
        panic!(
            "{name}'s generated part is not what the code renders (first difference at line \
             {}):\n  page: {have}\n  code: {want}\nRegenerate it: {}",
            line + 1,
            part.regenerate
        );
    }
}

#[cfg(test)]
mod generated_tests {
    use super::splice;

    #[test]
    fn splice_replaces_only_between_the_markers() {
        let doc = "intro\nBEGIN\nold\nEND\noutro\n";
        assert_eq!(
            splice(doc, "BEGIN", "END", "new\n").unwrap(),
            "intro\nBEGIN\n\nnew\n\nEND\noutro\n"
        );
        assert_eq!(splice("no markers", "BEGIN", "END", "new"), None);
    }
}
