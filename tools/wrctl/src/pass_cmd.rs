//! `wrctl pass mint`: a signed pass for staff, partners and monitoring.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use waiting_room::credentials::keys::{KeyStore, RoomKeys};
use waiting_room::credentials::pass::{self, PassClaims};
use waiting_room::settings::room::{Room, RoomName};

use crate::clock::{seconds_arg, unix_now, utc};
use crate::store_file::{read_store, store_strings};

/// `wrctl pass …`.
#[derive(Debug, Subcommand)]
pub enum PassCommand {
    /// Mint a signed pass that lets its holder through one room until a time.
    #[command(
        long_about = "Sign a pass for a room (the service room without --room) with a key of \
--keys, issued now, and print it on stdout: with --url the link that sets the pass cookie \
(URL?waiting_pass=PASS), without it the pass alone, for the header monitoring probes send \
(Waiting-Room-Pass: PASS); stderr says its id, the room, its end and the note. The pass holds no secret and nothing is stored: it is refused \
after --until, in another room, once its key leaves the key store, and when the room's \
passes_not_before is later than its issue time (now). Its id (the first 8 hex digits of \
its signature) is what the room logs (scope=pass pass=ID): keep it with --note in your \
records.",
        after_long_help = "Example:\n  wrctl pass mint --keys local/signingkeys.json --kid key1 \
--room drops --until +86400 --url https://shop.example/drops/ --note 'support team'"
    )]
    Mint(PassArgs),
}

/// The options of `wrctl pass mint`.
#[derive(Debug, Clone, Args)]
pub struct PassArgs {
    /// JSON key file (kid → key).
    #[arg(long, value_name = "FILE")]
    pub keys: PathBuf,
    /// The key id to sign with.
    #[arg(long, value_name = "ID")]
    pub kid: String,
    /// The named room (default: the service room).
    #[arg(long, value_name = "NAME")]
    pub room: Option<String>,
    /// Valid until: RFC 3339, Unix seconds, or +SECONDS from now.
    #[arg(long, value_name = "TIME|+SECONDS", allow_hyphen_values = true)]
    pub until: String,
    /// A URL in the room: print the link that sets the pass.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// What the pass is for, printed beside its id (not in the pass).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

/// `wrctl pass …`.
pub fn pass(command: PassCommand) -> ExitCode {
    let PassCommand::Mint(args) = command;
    match mint_pass(&args, unix_now()) {
        Ok((value, id, until)) => {
            if let Some(url) = &args.url {
                println!("{}", link(url, &value));
            } else {
                println!("{value}");
            }
            eprintln!(
                "wrctl: pass {id} for {} until {}{}; probes send the header \
                 `Waiting-Room-Pass: <the pass>`",
                args.room
                    .as_deref()
                    .map_or("the service room".into(), |r| format!("room {r}")),
                utc(until),
                args.note
                    .as_deref()
                    .map_or(String::new(), |n| format!(" ({n})"))
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wrctl: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `url` with the pass as its `waiting_pass` parameter (before any `#fragment`,
/// which browsers never send).
pub fn link(url: &str, pass: &str) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((base, fragment)) => (base, format!("#{fragment}")),
        None => (url, String::new()),
    };
    let join = if base.contains('?') { '&' } else { '?' };
    format!("{base}{join}{}={pass}{fragment}", pass::QUERY_PARAMETER)
}

/// The pass `args` asks for at `now`: its value, its id and its end.
pub fn mint_pass(args: &PassArgs, now: u64) -> Result<(String, String, u64), String> {
    let room = match args.room.as_deref() {
        None => Room::Service,
        Some(text) => {
            Room::Named(RoomName::new(text).ok_or_else(|| format!("{text:?} is not a room name"))?)
        }
    };
    let until = match args.until.strip_prefix('+') {
        Some(secs) => now.saturating_add(
            secs.parse::<u64>()
                .map_err(|_| format!("--until {:?} is not +SECONDS", args.until))?,
        ),
        None => seconds_arg(&args.until).map_err(|e| format!("--until: {e}"))?,
    };
    if until <= now {
        return Err(format!("--until {} is not in the future", utc(until)));
    }
    let keys = store_strings(&read_store(&args.keys).map_err(|e| format!("--keys: {e}"))?);
    if !waiting_room::credentials::keys::is_storable_kid(&args.kid) {
        return Err(format!(
            "--kid {:?} is not a key id the room reads (letters, digits, -, _ and .)",
            args.kid
        ));
    }
    let key = RoomKeys::new(&keys, room.name())
        .key(&args.kid)
        .map_err(|_| format!("cannot read key {:?} in {}", args.kid, args.keys.display()))?
        .ok_or_else(|| format!("no usable key {:?} in {}", args.kid, args.keys.display()))?;
    let claims = PassClaims {
        room: room.name().map_or(String::new(), ToString::to_string),
        iat: now,
        exp: until,
        kid: args.kid.clone(),
    };
    let value = claims.mint(&key);
    // The room reads back exactly what was signed.
    let (_, id) = pass::check(&value, &room, &RoomKeys::new(&keys, room.name()), now, None)
        .map_err(|why| format!("the pass does not read back ({why})"))?;
    Ok((value, id, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_carries_the_pass_before_any_fragment() {
        assert_eq!(
            link("https://s.example/d/", "P"),
            "https://s.example/d/?waiting_pass=P"
        );
        assert_eq!(
            link("https://s.example/d/?a=1", "P"),
            "https://s.example/d/?a=1&waiting_pass=P"
        );
        assert_eq!(
            link("https://s.example/d/#top", "P"),
            "https://s.example/d/?waiting_pass=P#top"
        );
    }
}
