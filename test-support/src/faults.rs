//! The project's Viceroy (`tools/viceroy-faults/`, which `scripts/setup.sh` installs):
//! Fastly's per-execution limits on store reads, and failed reads on demand. A request's
//! [`FAIL_LOOKUP`] / [`FAIL_SECRET`] header names the reads of its execution that fail
//! (1-based); Viceroy prints a [`PREFIX`] line on stderr for each read it failed or
//! refused, read back here with [`lines`].

use std::process::Command;
use std::sync::OnceLock;

use super::viceroy_room::viceroy_bin;

/// The header naming the config-store lookups that fail, e.g. `1,3`.
pub const FAIL_LOOKUP: &str = "viceroy-fail-lookup";
/// The header naming the Secret Store reads that fail.
pub const FAIL_SECRET: &str = "viceroy-fail-secret";
/// The environment variables that override the limits (32 and 5).
pub const LOOKUP_LIMIT: &str = "VICEROY_LOOKUP_LIMIT";
pub const SECRET_LIMIT: &str = "VICEROY_SECRET_LIMIT";
/// What starts each line the project's Viceroy prints about a read.
pub const PREFIX: &str = "viceroy-faults: ";
/// The opt-out: with this variable set to `1` the tests that need the project's
/// Viceroy pass without running, and say so.
pub const SKIP_VAR: &str = "WAITING_ROOM_SKIP_FAULTS";

/// Whether the test `test`, which needs the project's Viceroy, is to run: `false` when
/// [`SKIP_VAR`]` = 1` asks to skip it (and says so). Panics in one line when the Viceroy
/// the rooms start is not the project's.
pub fn required(test: &str) -> bool {
    if std::env::var(SKIP_VAR).is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED on request ({SKIP_VAR}=1): {test} did not run");
        return false;
    }
    static VERSION: OnceLock<String> = OnceLock::new();
    let version = VERSION.get_or_init(|| {
        Command::new(viceroy_bin())
            .arg("--version")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .unwrap_or_else(|err| format!("cannot run: {err}"))
    });
    assert!(
        version.contains("viceroy-faults"),
        "{test} needs the project's Viceroy (tools/viceroy-faults), and `{} --version` says \
         {version:?}: run scripts/setup.sh, which installs it, or set {SKIP_VAR}=1 to skip \
         the tests that need it",
        viceroy_bin()
    );
    true
}

/// What kind of read a line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Lookup,
    Secret,
}

/// One read the project's Viceroy failed on demand, or refused past its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub read: Read,
    /// Its position among the execution's reads of its kind (1-based).
    pub position: u32,
    /// Refused past the limit (else failed on demand).
    pub refused: bool,
    pub store: String,
    pub key: String,
}

/// The lines about failed and refused reads in Viceroy's `output`, in order.
pub fn lines(output: &str) -> Vec<Line> {
    output
        .lines()
        .filter_map(|l| l.split_once(PREFIX).map(|(_, rest)| rest))
        .filter_map(parse)
        .collect()
}

/// `failed config lookup #3 store=S key=K`, `refused secret read #6 store=S key=K (limit 5)`.
fn parse(text: &str) -> Option<Line> {
    let (verb, rest) = text.split_once(' ')?;
    let refused = match verb {
        "failed" => false,
        "refused" => true,
        _ => return None,
    };
    let (read, rest) = if let Some(rest) = rest.strip_prefix("config lookup #") {
        (Read::Lookup, rest)
    } else {
        (Read::Secret, rest.strip_prefix("secret read #")?)
    };
    let mut words = rest.split(' ');
    let position = words.next()?.parse().ok()?;
    let store = words.next()?.strip_prefix("store=")?.to_string();
    let key = words.next()?.strip_prefix("key=")?.to_string();
    Some(Line {
        read,
        position,
        refused,
        store,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_lines() {
        let output = "INFO something\n\
            viceroy-faults: failed config lookup #3 store=waitingroom_config key=allow_percentage\n\
            testlog :: waitingroom t=1\n\
            viceroy-faults: refused secret read #6 store=waitingroom_signingkeys key=key1 (limit 5)\n";
        assert_eq!(
            lines(output),
            [
                Line {
                    read: Read::Lookup,
                    position: 3,
                    refused: false,
                    store: "waitingroom_config".into(),
                    key: "allow_percentage".into(),
                },
                Line {
                    read: Read::Secret,
                    position: 6,
                    refused: true,
                    store: "waitingroom_signingkeys".into(),
                    key: "key1".into(),
                },
            ]
        );
    }
}
