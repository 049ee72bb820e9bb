//! `wrctl keygen`: a new signing key from the operating system's CSPRNG, and the
//! checks of a key's size and id that `rotate` shares.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::Args;
use waiting_room::credentials::keys::{MAX_KID_LEN, MIN_STRONG_KEY_LEN, is_storable_kid};
use waiting_room::settings::config::Settings;

/// The most random bytes a key may have (its text stays far under a config-store
/// value's 8000 characters).
pub const MAX_KEY_BYTES: usize = 4096;

/// The options of `wrctl keygen`.
#[derive(Debug, Clone, Args)]
pub struct KeygenArgs {
    /// Random bytes in the key (at least 32).
    #[arg(
        long,
        value_name = "N",
        default_value_t = MIN_STRONG_KEY_LEN,
        long_help = "Random bytes in the key, from the operating system's CSPRNG; the key is \
their standard base64 (32 bytes give 44 characters, the room's HMAC key is that text). \
Under 32 bytes is refused unless --allow-weak, and 0 or over 4096 always (exit 2).\n\
Example: --bytes 48"
    )]
    pub bytes: usize,
    /// The key id the instructions store the key under.
    #[arg(
        long,
        value_name = "ID",
        default_value_t = Settings::default().active_key,
        long_help = "The key id (kid) the printed commands store the key under: the name the \
room's active_key setting and its tokens use: 1 to 255 letters, digits, `-`, `_` and `.`, \
the names Fastly's Secret Store accepts (else exit 2).\nExample: --kid key2"
    )]
    pub kid: String,
    /// Allow a key under 32 bytes (for tests only).
    #[arg(long)]
    pub allow_weak: bool,
}

/// Checks a key size: at least [`MIN_STRONG_KEY_LEN`] bytes unless `allow_weak`.
pub fn check_size(bytes: usize, allow_weak: bool) -> Result<(), String> {
    if bytes == 0 {
        return Err("a key of 0 bytes is no key".into());
    }
    if bytes > MAX_KEY_BYTES {
        return Err(format!("at most {MAX_KEY_BYTES} bytes"));
    }
    if bytes < MIN_STRONG_KEY_LEN && !allow_weak {
        return Err(format!(
            "{bytes} bytes is weak: HMAC-SHA256 keys need at least {MIN_STRONG_KEY_LEN} \
             (--allow-weak to insist)"
        ));
    }
    Ok(())
}

/// Checks a key id is one the room reads: a name its stores can hold.
pub fn check_kid(kid: &str) -> Result<(), String> {
    if is_storable_kid(kid) {
        Ok(())
    } else {
        Err(format!(
            "{kid:?} is not a key id: 1 to {MAX_KID_LEN} letters, digits, `-`, `_` and `.`"
        ))
    }
}

/// A new key: `bytes` random bytes from the operating system, as standard base64.
pub fn generate(bytes: usize) -> Result<String, String> {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).map_err(|e| format!("no randomness from the system: {e}"))?;
    let key = STANDARD.encode(&raw);
    raw.fill(0);
    Ok(key)
}

/// The commands that store key `kid` from `file` in Fastly (secret store first,
/// config store as the fallback the room reads when there is no secret store).
pub fn fastly_instructions(kid: &str, file: &str) -> String {
    format!(
        "  # The room reads its keys from the secret store named waitingroom_signingkeys:\n\
         \x20 fastly secret-store-entry create --store-id=<SECRET_STORE_ID> --name={kid} --stdin < {file}\n\
         \x20 # or, on a service without a secret store, from the config store of that name:\n\
         \x20 fastly config-store-entry create --store-id=<CONFIG_STORE_ID> --key={kid} --stdin < {file}\n\
         \x20 # then point active_key at it in the room's config store, and remove {file}:\n\
         \x20 fastly config-store-entry update --store-id=<ROOM_CONFIG_STORE_ID> --key=active_key --value={kid} --upsert\n\
         \x20 rm {file}"
    )
}

/// `wrctl keygen`.
pub fn keygen(args: KeygenArgs) -> ExitCode {
    if let Err(e) = check_size(args.bytes, args.allow_weak).and_then(|()| check_kid(&args.kid)) {
        crate::usage::usage_error(&e);
    }
    let key = match generate(args.bytes) {
        Ok(key) => key,
        Err(e) => {
            eprintln!("wrctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    // No newline into a file or a pipe: `fastly … --stdin` stores exactly the key.
    let newline = if stdout.is_terminal() { "\n" } else { "" };
    if write!(stdout, "{key}{newline}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        eprintln!("wrctl: cannot write the key to stdout");
        return ExitCode::FAILURE;
    }
    let file = format!("{}.key", args.kid);
    eprintln!(
        "wrctl: a new {}-byte key for kid {:?} is on stdout (and nowhere else). Save it to a \
         file (`wrctl keygen --kid {} > {file}`) and store it from there, never on a command \
         line:\n{}",
        args.bytes,
        args.kid,
        args.kid,
        fastly_instructions(&args.kid, &file)
    );
    if args.bytes < MIN_STRONG_KEY_LEN {
        eprintln!("wrctl: warning: a {}-byte key is weak", args.bytes);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_base64_of_the_size_asked() {
        let a = generate(32).unwrap();
        assert_eq!(STANDARD.decode(&a).unwrap().len(), 32);
        assert_ne!(a, generate(32).unwrap());
        assert!(check_size(31, false).is_err());
        assert!(check_size(31, true).is_ok());
        assert!(check_size(0, true).is_err());
    }
}
