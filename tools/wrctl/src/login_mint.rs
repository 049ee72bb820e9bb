//! `wrctl login mint`: login tokens as a site's sign-in would issue them, signed by
//! [`waiting_room::credentials::login_mint`], for tests and load tests; and a key's
//! public JWK for `login_keys`, judged by the room's own [`LoginKey::from_jwk`].

use std::io::{BufWriter, Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Map, Value, json};
use waiting_room::credentials::keys::MIN_STRONG_KEY_LEN;
use waiting_room::credentials::login_mint::{MintKey, mint};
use waiting_room::settings::config::MAX_DURATION;
use waiting_room::settings::identity::LoginKey;
use waiting_room::settings::limits::is_secret_name;

use crate::clock::unix_now;
use crate::jwks_review::why;
use crate::usage::fail;
use crate::usage::usage_error;

/// The environment variable an HS256 key's secret is read from (never a flag).
pub const SECRET_VAR: &str = "WRCTL_LOGIN_SECRET";

/// The most tokens one run mints.
pub const MAX_COUNT: u32 = 1_000_000;

/// The options of `wrctl login mint`.
#[derive(Debug, Args)]
pub struct MintArgs {
    /// The private key (PKCS #8 PEM, RSA or P-256); without it, HS256 from WRCTL_LOGIN_SECRET.
    #[arg(
        long,
        value_name = "FILE",
        long_help = "The private key to sign with: a PKCS #8 PEM file, RSA (RS256) or P-256 \
(ES256). Without it the tokens are HS256, their secret the bytes of the environment variable \
WRCTL_LOGIN_SECRET (as the Secret Store waitingroom_login holds it under --kid).\n\
Example: --key login-es.pem"
    )]
    pub key: Option<PathBuf>,
    /// The key id: the token's kid, and the JWK's.
    #[arg(
        long,
        value_name = "ID",
        value_parser = kid,
        long_help = "The key's id: each token's kid header, and its JWK's kid in login_keys: \
1 to 255 letters, digits, -, _ and . (a Secret Store name).\nExample: --kid site-es"
    )]
    pub kid: String,
    /// The issuer (iss): the service's login_issuer.
    #[arg(
        long,
        value_name = "ISSUER",
        required_unless_present = "print_jwk",
        value_parser = non_empty,
        long_help = "The tokens' iss: the service's login_issuer.\n\
Example: --iss https://id.example.com/"
    )]
    pub iss: Option<String>,
    /// The audience (aud): the service's login_audience.
    #[arg(
        long,
        value_name = "AUDIENCE",
        required_unless_present = "print_jwk",
        value_parser = non_empty,
        long_help = "The tokens' aud: the service's login_audience.\nExample: --aud waiting-room"
    )]
    pub aud: Option<String>,
    /// The subject (sub) of one token.
    #[arg(
        long,
        value_name = "SUBJECT",
        value_parser = non_empty,
        required_unless_present_any = ["subs_prefix", "print_jwk"],
        conflicts_with = "subs_prefix",
        long_help = "The sub of the one token minted: the person.\nExample: --sub alice"
    )]
    pub sub: Option<String>,
    /// Mint --count tokens, of subjects PREFIX0 to PREFIX{N-1}.
    #[arg(
        long,
        value_name = "PREFIX",
        requires = "count",
        long_help = "Mint --count tokens, one a line, whose subjects are PREFIX0, PREFIX1, … \
PREFIX{N-1}: as many people, for a load test.\nExample: --subs-prefix load- --count 1000"
    )]
    pub subs_prefix: Option<String>,
    /// How many tokens --subs-prefix mints.
    #[arg(
        long,
        value_name = "N",
        requires = "subs_prefix",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_COUNT)),
        long_help = "How many tokens --subs-prefix mints, 1 to 1000000.\nExample: --count 1000"
    )]
    pub count: Option<u32>,
    /// Seconds each token lives (exp = now + TTL).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 3600,
        value_parser = clap::value_parser!(u64).range(1..=MAX_DURATION),
        long_help = "Seconds each token lives: its iat is now, its exp now + SECONDS (the room \
allows 60 s of clock skew).\nExample: --ttl 900"
    )]
    pub ttl: u64,
    /// A claim of each token, NAME=VALUE (repeatable; a name given twice is a list).
    #[arg(
        long = "claim",
        value_name = "NAME=VALUE",
        value_parser = claim,
        long_help = "A claim of each token, its value text: a room's who_may_wait = \
NAME=VALUE admits it. Repeatable; a name given twice makes a list of the values. iss, aud, \
sub, iat and exp have flags of their own.\nExample: --claim tier=presale"
    )]
    pub claims: Vec<(String, String)>,
    /// Print the key's public JWK for login_keys instead of minting.
    #[arg(
        long,
        conflicts_with_all = ["iss", "aud", "sub", "subs_prefix", "claims"],
        long_help = "Print the key's public JWK for the service's login_keys instead of \
minting (an HS256 key's names only its kid: no secret is needed or printed). A key the room \
would refuse is an error.\nExample: --print-jwk"
    )]
    pub print_jwk: bool,
}

fn kid(text: &str) -> Result<String, String> {
    match is_secret_name(text) {
        true => Ok(text.to_string()),
        false => Err("a kid is 1 to 255 letters, digits, -, _ and .".into()),
    }
}

fn non_empty(text: &str) -> Result<String, String> {
    match text.is_empty() {
        true => Err("empty".into()),
        false => Ok(text.to_string()),
    }
}

fn claim(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .filter(|(name, _)| !name.is_empty())
        .ok_or("expected NAME=VALUE, e.g. tier=presale")?;
    match name {
        "iss" | "aud" | "sub" => Err(format!("{name} has a flag of its own: --{name}")),
        "iat" | "exp" => Err(format!("{name} is set by --ttl (iat now, exp now + TTL)")),
        _ => Ok((name.to_string(), value.to_string())),
    }
}

/// The signing key: the PEM file, or HS256 with the secret from [`SECRET_VAR`].
fn signing_key(args: &MintArgs) -> Result<MintKey, String> {
    if let Some(path) = &args.key {
        let mut pem = String::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(64 * 1024).read_to_string(&mut pem))
            .map_err(|e| format!("--key {}: {e}", path.display()))?;
        return MintKey::from_pem(&pem).map_err(|e| format!("--key {}: {e}", path.display()));
    }
    // The JWK of an HS256 key names only its kid: printing it needs no secret.
    if args.print_jwk {
        return Ok(MintKey::Hs256(Vec::new()));
    }
    let secret = std::env::var_os(SECRET_VAR).unwrap_or_default();
    if secret.is_empty() {
        usage_error(&format!(
            "without --key the tokens are HS256: their secret must be in the environment \
             variable {SECRET_VAR} (never a flag)"
        ));
    }
    let secret = secret.into_encoded_bytes();
    if secret.len() < MIN_STRONG_KEY_LEN {
        eprintln!(
            "wrctl: warning: {SECRET_VAR} holds {} bytes, under the {MIN_STRONG_KEY_LEN} an \
             HS256 secret should have",
            secret.len()
        );
    }
    Ok(MintKey::Hs256(secret))
}

/// The claims of each token but its `sub`.
fn base_claims(args: &MintArgs, now: u64) -> Map<String, Value> {
    let mut claims = Map::new();
    for (name, value) in &args.claims {
        match claims.get_mut(name) {
            Some(Value::Array(values)) => values.push(value.clone().into()),
            Some(first) => *first = json!([first.clone(), value]),
            None => {
                claims.insert(name.clone(), value.clone().into());
            }
        }
    }
    claims.insert("iss".into(), args.iss.clone().into());
    claims.insert("aud".into(), args.aud.clone().into());
    claims.insert("iat".into(), now.into());
    claims.insert("exp".into(), now.saturating_add(args.ttl).into());
    claims
}

/// `wrctl login mint`.
pub fn run(args: MintArgs) -> ExitCode {
    let key = match signing_key(&args) {
        Ok(key) => key,
        Err(e) => return fail(1, e),
    };
    let jwk = key.public_jwk(&args.kid);
    let refused = LoginKey::from_jwk(&jwk).err().map(|code| why(&jwk, code));
    if args.print_jwk {
        return match refused {
            None => {
                println!("{jwk}");
                ExitCode::SUCCESS
            }
            Some(why) => fail(1, format!("the room refuses this key: {why}")),
        };
    }
    if let Some(why) = refused {
        eprintln!(
            "wrctl: warning: the room refuses this key ({why}): it refuses these tokens \
             as unknown-kid"
        );
    }
    let subjects: Box<dyn Iterator<Item = String>> = match (&args.sub, &args.subs_prefix) {
        (Some(sub), _) => Box::new(std::iter::once(sub.clone())),
        (None, Some(prefix)) => {
            let prefix = prefix.clone();
            Box::new((0..args.count.unwrap_or(1)).map(move |i| format!("{prefix}{i}")))
        }
        (None, None) => usage_error("--sub or --subs-prefix with --count is needed"),
    };
    let mut claims = base_claims(&args, unix_now());
    let mut out = BufWriter::new(std::io::stdout().lock());
    for sub in subjects {
        claims.insert("sub".into(), sub.into());
        let token = mint(&Value::Object(claims.clone()), &key, &args.kid);
        if writeln!(out, "{token}").is_err() {
            return fail(1, "cannot write the tokens to stdout");
        }
    }
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => fail(1, "cannot write the tokens to stdout"),
    }
}
