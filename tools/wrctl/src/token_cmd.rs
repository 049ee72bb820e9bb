//! `wrctl token inspect` and `wrctl token mint`: the room's tokens read and written
//! by the room's own code (decoding, signing, verifying, deciding), for operators.

use std::path::PathBuf;
use std::process::ExitCode;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::{Args, Subcommand};
use waiting_room::admission::decision::{Context, Request, decide};
use waiting_room::admission::lottery;
use waiting_room::credentials::keys::{KeyStore, RoomKeys, SigningKey};
use waiting_room::credentials::token::{self, Claims, SignedToken, TokenKind};
use waiting_room::credentials::{cookie, cookie_names};

use crate::clock::relative;
use crate::clock::{millis_arg, seconds_arg, unix_now, utc, utc_millis};
use crate::keygen_cmd::check_kid;
use crate::store_file::{read_store, settings, store_strings};

/// `wrctl token …`.
#[derive(Debug, Clone, Subcommand)]
pub enum TokenCommand {
    /// Decode a token, check its signature, and say what the room would decide.
    #[command(
        long_about = "Decode a waiting-room token (a cookie value, or a whole Cookie header with \
or without its `Cookie:` name) and print its fields: dec, exp (with its UTC time and how far \
it is from --at or now), uid, kid, adm or arr if any, and the signature abbreviated. With --keys, \
check the signature in constant time with the room's code: valid, bad-signature or \
unknown-key (no key is ever printed). With --uid (the visitor's IP) and --keys, say what the \
room would decide for that visitor at --at, with the same words as the room's log \
(uid-mismatch, lottery-won, lottery-lost, session-expired, redeem-window-passed, …), under \
the settings of --config (the room's defaults without it). For an expired wait token, also \
the lottery's draw at the config's percentage.

Exit status: 0 when the token decodes (whatever the verdict), 1 when it does not (the reason \
is printed as malformed:<field>) or a file cannot be read, 2 on bad usage.",
        after_long_help = "Example:
  wrctl token inspect 'ZGVjPXdhaXQmZXhwPTE3…' --keys local/signingkeys.json
  wrctl token inspect 'Cookie: theme=dark; waiting_room=ZGVj…' --keys local/signingkeys.json \\
    --uid 203.0.113.7 --config local/config.json --at 2025-11-22T16:46:40Z"
    )]
    Inspect(InspectArgs),
    /// Mint a token with a key from a JSON key file and print its cookie value.
    #[command(
        long_about = "Mint a token with the room's code, signed with key --kid from the JSON \
key file --keys, and print the cookie value (the waiting_room cookie's value) on stdout. An \
empty key is refused, and so is a key under 32 bytes unless --allow-weak. A token the room \
could not read back (a uid that is no IP address, an adm on a wait token, …) is refused.",
        after_long_help = "Example:
  wrctl token mint --keys local/signingkeys.json --kid key1 --dec allow --exp +600 \\
    --uid 127.0.0.1
  curl -b \"waiting_room=$(wrctl token mint --keys local/signingkeys.json --kid key1 \\
    --dec wait --exp +30 --uid 127.0.0.1 --allow-weak)\" http://127.0.0.1:7676/events"
    )]
    Mint(MintArgs),
}

/// The options of `wrctl token inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// A cookie value, or a whole Cookie header (`Cookie:` optional).
    #[arg(
        value_name = "VALUE",
        long_help = "The token: the waiting_room cookie's value, or a whole Cookie header, \
with or without `Cookie:` (the room's cookie is found in it as the room finds it).\n\
Example: 'Cookie: theme=dark; waiting_room=ZGVjPXdhaXQm…'"
    )]
    pub value: String,
    /// JSON key file (kid → key) to verify the signature with.
    #[arg(
        long,
        value_name = "FILE",
        long_help = "A JSON key store (an object of kid → key, as local/signingkeys.json) to \
verify the signature with. No key is ever printed.\nExample: --keys local/signingkeys.json"
    )]
    pub keys: Option<PathBuf>,
    /// The visitor's IP: say what the room would decide for them (needs --keys).
    #[arg(
        long,
        value_name = "IP",
        requires = "keys",
        long_help = "The visitor's IP address, as the room sees it: print what the room \
would decide for this visitor presenting this token (needs --keys).\nExample: --uid 203.0.113.7"
    )]
    pub uid: Option<String>,
    /// The time to judge at, RFC 3339 or Unix seconds (default now).
    #[arg(
        long,
        value_name = "TIME",
        value_parser = seconds_arg,
        long_help = "The time the expiry and the decision are judged at, RFC 3339 or Unix \
seconds (default: now).\nExample: --at 2025-11-22T17:46:40+01:00 (or --at 1763830000)"
    )]
    pub at: Option<u64>,
    /// JSON config store file with the room's settings (defaults without it).
    #[arg(
        long,
        value_name = "FILE",
        long_help = "A JSON config store (as local/config.json) whose settings the decision \
and the draw use; the room's defaults without it.\nExample: --config local/config.json"
    )]
    pub config: Option<PathBuf>,
}

/// The options of `wrctl token mint`.
#[derive(Debug, Clone, Args)]
pub struct MintArgs {
    /// JSON key file (kid → key).
    #[arg(
        long,
        value_name = "FILE",
        long_help = "The JSON key store holding the key to sign with.\n\
Example: --keys local/signingkeys.json"
    )]
    pub keys: PathBuf,
    /// The key id to sign with.
    #[arg(
        long,
        value_name = "ID",
        long_help = "The key id to sign with, a key of --keys.\nExample: --kid key1"
    )]
    pub kid: String,
    /// `wait` or `allow`.
    #[arg(
        long,
        value_name = "wait|allow",
        value_parser = kind,
        long_help = "The token's decision: wait (waiting until exp, then drawn) or allow \
(admitted until exp).\nExample: --dec allow"
    )]
    pub dec: TokenKind,
    /// Expiry: RFC 3339, Unix seconds, or +SECONDS from now.
    #[arg(
        long,
        value_name = "TIME|+SECONDS",
        value_parser = expiry,
        allow_hyphen_values = true,
        long_help = "The expiry: a time, RFC 3339 or Unix seconds, or +SECONDS from now.\n\
Example: --exp +600 (or --exp 2025-11-22T16:46:40Z)"
    )]
    pub exp: Expiry,
    /// The visitor's IP the token is bound to.
    #[arg(
        long,
        value_name = "IP",
        long_help = "The client IP the token is bound to.\nExample: --uid 203.0.113.7"
    )]
    pub uid: String,
    /// Admission time, RFC 3339 or Unix seconds (allow tokens of fixed sessions).
    #[arg(
        long,
        value_name = "TIME",
        value_parser = seconds_arg,
        long_help = "The time of first admission, RFC 3339 or Unix seconds: allow tokens of \
fixed sessions (session_mode = fixed) only.\nExample: --adm 2025-11-22T16:46:40Z (or --adm \
1763830000)"
    )]
    pub adm: Option<u64>,
    /// Arrival time, RFC 3339 or Unix milliseconds (FIFO wait tokens).
    #[arg(
        long,
        value_name = "TIME_MS",
        value_parser = millis_arg,
        conflicts_with = "adm",
        long_help = "The place in a FIFO line: the time of first arrival, RFC 3339 (to the \
millisecond) or Unix milliseconds (wait tokens in queueing_method = fifo) only.\n\
Example: --arr 2025-11-22T16:46:40.123Z (or --arr 1763830000123)"
    )]
    pub arr: Option<u64>,
    /// Sign with a key under 32 bytes (for tests only).
    #[arg(long)]
    pub allow_weak: bool,
}

/// An expiry as given: absolute, or relative to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Unix seconds.
    At(u64),
    /// Seconds from now.
    In(u64),
}

fn expiry(text: &str) -> Result<Expiry, String> {
    match text.strip_prefix('+') {
        Some(rest) => rest
            .parse()
            .map(Expiry::In)
            .map_err(|_| format!("{text:?} is not +SECONDS")),
        None => seconds_arg(text)
            .map(Expiry::At)
            .map_err(|e| format!("{e}, nor +SECONDS")),
    }
}

fn kind(text: &str) -> Result<TokenKind, String> {
    match text {
        "wait" => Ok(TokenKind::Wait),
        "allow" => Ok(TokenKind::Allow),
        _ => Err(format!("{text:?} is neither wait nor allow")),
    }
}

/// `wrctl token …`.
pub fn run(command: TokenCommand) -> ExitCode {
    match command {
        TokenCommand::Inspect(args) => inspect(args),
        TokenCommand::Mint(args) => mint(args),
    }
}

/// The cookie value in `input`: a value, or a Cookie header (with or without its name).
fn cookie_value(input: &str) -> Result<&str, String> {
    let input = input.trim();
    let (header, named) = match input.get(..7) {
        Some(head) if head.eq_ignore_ascii_case("cookie:") => (input[7..].trim(), true),
        _ => (input, false),
    };
    if cookie::has_room_cookie(header, &[]) {
        return cookie::find(header, cookie_names::TOKEN)
            .ok_or_else(|| format!("the {} cookie is empty", cookie_names::TOKEN));
    }
    if named || header.contains(';') {
        return Err(format!("no {} cookie in the header", cookie_names::TOKEN));
    }
    Ok(header)
}

/// `0x` and the first 8 and last 4 hex digits of the signature in `value` (a
/// decoded token: the text is canonical).
fn sig_abbreviated(value: &str) -> String {
    let text = STANDARD.decode(value).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    match text.rsplit_once("&sig=0x") {
        Some((_, hex)) if hex.len() == 64 => format!("0x{}…{}", &hex[..8], &hex[60..]),
        _ => "?".into(),
    }
}

fn inspect(args: InspectArgs) -> ExitCode {
    let now = args.at.unwrap_or_else(unix_now);
    let value = match cookie_value(&args.value) {
        Ok(value) => value,
        Err(e) => {
            println!("not a token: {e}");
            return ExitCode::FAILURE;
        }
    };
    let token = match token::decode(value) {
        Ok(token) => token,
        Err(why) => {
            println!("not a token: malformed:{why}");
            return ExitCode::FAILURE;
        }
    };
    let settings = match settings(args.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("wrctl: --config: {e}");
            return ExitCode::FAILURE;
        }
    };
    let keys = match args.keys.as_deref().map(read_store).transpose() {
        Ok(map) => map.map(|m| store_strings(&m)),
        Err(e) => {
            eprintln!("wrctl: --keys: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The service room's keys as the room reads them: only under the ids it reads.
    let keys = keys.as_ref().map(|keys| RoomKeys::new(keys, None));
    print_fields(&token, value, now);
    match &keys {
        None => println!("signature  not checked (no --keys)"),
        Some(keys) => println!("signature  {}", signature(&token, keys)),
    }
    let c = &token.claims;
    if c.dec == TokenKind::Wait && now > c.exp {
        let p = settings.percentage_at(now);
        let won = lottery::wins(token.lottery_seed(), p);
        println!(
            "draw       {} at p={p} (seed 0x{:06x})",
            if won { "lottery-won" } else { "lottery-lost" },
            token.lottery_seed()
        );
    }
    if let (Some(uid), Some(keys)) = (&args.uid, &keys) {
        let request = Request::new(now, uid, Some(value));
        let verdict = decide(&request, &Context::new(&settings), keys);
        let mut why: Vec<String> = Vec::new();
        if let Some(t) = verdict.transition {
            why.push(t.to_string());
        }
        if let Some(r) = &verdict.rejection {
            why.push(r.to_string());
        }
        if verdict.signing_key_missing {
            why.push(format!(
                "active-key-unusable kid={}",
                settings.active_key.escape_debug()
            ));
        }
        println!(
            "decision   {} for uid={uid} at {} (p={}){}{}",
            verdict.decision,
            utc(now),
            settings.percentage_at(now),
            if why.is_empty() { "" } else { ": " },
            why.join(" ")
        );
        let path = settings.protected_paths.first().map_or("/", String::as_str);
        println!(
            "log        {}",
            waiting_room::log::decision_line(now, uid, path, &verdict, &settings.clone().into())
        );
    }
    ExitCode::SUCCESS
}

fn print_fields(token: &SignedToken, value: &str, now: u64) {
    let c = &token.claims;
    println!("dec        {}", c.dec);
    println!(
        "exp        {} ({}, {})",
        c.exp,
        utc(c.exp),
        relative(c.exp, now)
    );
    println!("uid        {}", c.uid);
    println!("kid        {}", c.kid);
    if let Some(adm) = c.adm {
        println!("adm        {adm} ({}, {})", utc(adm), relative(adm, now));
    }
    if let Some(arr) = c.arr {
        println!(
            "arr        {arr} ({}, {})",
            utc_millis(arr),
            relative(arr / 1000, now)
        );
    }
    println!("sig        {}", sig_abbreviated(value));
}

/// `valid`, `bad-signature`, `unknown-key kid=…` or `unreadable-key kid=…`, checked
/// by the room's code.
fn signature(token: &SignedToken, keys: &impl KeyStore) -> String {
    let kid = &token.claims.kid;
    match keys.key(kid) {
        Err(_) => format!("unreadable-key kid={kid}"),
        Ok(None) => format!("unknown-key kid={kid}"),
        Ok(Some(key)) if token.verify(&key) => {
            if key.is_weak() {
                format!("valid (WARN=weak-key kid={kid})")
            } else {
                "valid".into()
            }
        }
        Ok(Some(_)) => "bad-signature".into(),
    }
}

fn mint(args: MintArgs) -> ExitCode {
    let keys = match read_store(&args.keys) {
        Ok(map) => store_strings(&map),
        Err(e) => {
            eprintln!("wrctl: --keys: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = check_kid(&args.kid) {
        eprintln!("wrctl: --kid: {e}: the room never reads a key under it");
        return ExitCode::FAILURE;
    }
    let Some(secret) = keys.get(&args.kid) else {
        eprintln!("wrctl: no key {:?} in {}", args.kid, args.keys.display());
        return ExitCode::FAILURE;
    };
    let Some(key) = SigningKey::new(secret) else {
        eprintln!("wrctl: key {:?} is empty: it must never sign", args.kid);
        return ExitCode::FAILURE;
    };
    if key.is_weak() && !args.allow_weak {
        eprintln!(
            "wrctl: key {:?} is under {} bytes, weak (--allow-weak to sign with it anyway)",
            args.kid,
            waiting_room::credentials::keys::MIN_STRONG_KEY_LEN
        );
        return ExitCode::FAILURE;
    }
    let exp = match args.exp {
        Expiry::At(t) => t,
        Expiry::In(s) => unix_now().saturating_add(s),
    };
    let claims = Claims {
        dec: args.dec,
        exp,
        uid: args.uid,
        kid: args.kid,
        adm: args.adm,
        arr: args.arr,
        toll: None,
    };
    let value = claims.mint(&key);
    // The room would read back only what decodes to these claims.
    match token::decode(&value) {
        Ok(read) if read.claims == claims && read.verify(&key) => {}
        Ok(_) => {
            eprintln!("wrctl: the token would not read back as minted");
            return ExitCode::FAILURE;
        }
        Err(why) => {
            eprintln!("wrctl: the room could not read this token: malformed:{why}");
            return ExitCode::FAILURE;
        }
    }
    println!("{value}");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_value_in_a_header_or_takes_it_whole() {
        assert_eq!(cookie_value("abc="), Ok("abc="));
        assert_eq!(cookie_value("Cookie: a=1; waiting_room=abc="), Ok("abc="));
        assert_eq!(cookie_value("cookie:waiting_room=x"), Ok("x"));
        assert_eq!(cookie_value("a=1; waiting_room=\"q\""), Ok("q"));
        assert!(cookie_value("Cookie: a=1").is_err());
        assert!(cookie_value("a=1; b=2").is_err());
    }

    #[test]
    fn expiries() {
        assert_eq!(expiry("+30"), Ok(Expiry::In(30)));
        assert_eq!(expiry("1700000000"), Ok(Expiry::At(1_700_000_000)));
        assert!(expiry("soon").is_err());
        assert_eq!(
            expiry("2023-11-14T22:13:20Z"),
            Ok(Expiry::At(1_700_000_000))
        );
        assert_eq!(
            expiry("2023-11-14T23:13:20+01:00"),
            Ok(Expiry::At(1_700_000_000))
        );
        for bad in [
            "+soon",
            "+-5",
            "2023-11-14T22:13:20",
            "1969-12-31T23:59:59Z",
        ] {
            assert!(expiry(bad).is_err(), "{bad:?}");
        }
    }
}
