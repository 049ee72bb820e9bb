//! The command line of `wrctl config check`, `set` and `migrate`, and `check`'s
//! report: the checks are [`crate::config_check`] (and [`crate::config_login`]),
//! `set` and `migrate` are [`crate::config_set`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::clock::unix_now;
use crate::config_check;

/// `wrctl config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// What the room would make of a config store: effective settings, fallbacks, warnings.
    #[command(
        long_about = "Read a waitingroom_config store from FILE (a JSON object of string \
values such as local/config.json, or the output of `fastly config-store-entry list \
--store-id ID --json`) through the room's own settings reader, and print every setting the \
room reads with its effective value and whether it is set, the default, or a fallback. \
Fallbacks are named as the room logs them (config_fallback=<key>,…) on the requests \
that read the key. Warnings for \
combinations that work but are probably not meant: the room off, allow_percentage 0, a \
redeem window shorter than the refresh, a cookie shorter than the session, a controller \
heartbeat without allow_percentage_fallback, a redeem window (in FIFO mode a hold) over half \
of allow_period_timeout, a wait period over 300 s, a bot toll that would cost a phone more \
than about 5 s (or that nobody pays, in a room open at 100 %), unknown keys. An active_key \
that is not a key id the room reads (1 to 255 letters, digits, -, _ and .) is an error. With \
--keys, the signing keys too (active_key present, each key under such an id, strong enough; \
their values are never printed). \
With a rooms index, the same for every named room (its value, its controller's keys, the \
service's logger_name and uid_ipv6_prefix), with its scope; a bad index entry, a room value \
that is not a JSON object, and a bypass rule or an event the room would ignore are errors, \
and each event is listed. \
With identity = login, a missing login_issuer, login_audience or login_hash_key, or no usable \
key in login_keys, is an error; each JWK of login_keys the room ignores is named with why (an \
RSA key under 2048 bits among them); login_hash_key is shown as set, never its value. A room \
whose who_may_wait asks for a login while identity is address is an error, and one without \
sign_in_url gets a note (browsers get a 401). An HS256 login key with the signing keys in a \
Secret Store (--keys-in) and bot_challenge is an error: 4 secret reads a request, over the \
room's 3. The settings item, as every value, is checked against a config-store value's 8,000 \
characters.\n\nExit status: 0 \
(warnings allowed), 1 when the room would fall back on something or could not issue \
tokens, 2 on bad usage or an unreadable file.",
        after_long_help = "Example:\n  wrctl config check local/config.json --keys local/signingkeys.json\n  \
fastly config-store-entry list --store-id STORE_ID --json > config.json && wrctl config check config.json"
    )]
    Check(ConfigCheckArgs),
    /// Set one setting where the room reads it: its own key, or a member of `settings`.
    #[command(
        long_about = "Write one setting where the room reads it: a key of its own (the VCL's \
keys and the controller's), or a member of the `settings` JSON object (every other setting), \
after checking that the room reads the value without falling back. In a local store file \
(--config-file), or in the service's config store through Fastly's API \
(--fastly-config-store, token in FASTLY_API_TOKEN only): one GET of the items, one upsert.\n\n\
Exit status: 0 once written, 1 when the value is refused or the write fails, 2 on bad usage.",
        after_long_help = "Example:\n  wrctl config set queue_all true --config-file local/config.json\n  \
FASTLY_API_TOKEN=... wrctl config set bot_toll_bits 16 --fastly-config-store STORE_ID"
    )]
    Set(crate::config_set::SetArgs),
    /// Print a store configured with every setting as a key of its own, moved to `settings`.
    #[command(
        long_about = "Read a config store (a JSON object, or a Fastly config-store export) and \
print it as the room reads it: the keys of their own as they are, every other setting moved \
into the `settings` JSON object (over what it holds). stderr names the keys moved: write the \
printed `settings` item, then delete those keys. `wrctl config check` names them too.",
        after_long_help = "Example:\n  wrctl config migrate old-config.json > config.json"
    )]
    Migrate(crate::config_set::MigrateArgs),
}

/// `wrctl config check`.
#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// The config store: a JSON object, or a Fastly config-store export.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The signing keys (same formats), to check active_key, key ids and key strength.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Where the service keeps its signing keys: the secret reads a request may make.
    #[arg(
        long,
        value_name = "STORE",
        value_enum,
        default_value = "secret-store",
        long_help = "Where the service keeps its signing keys (waitingroom_signingkeys): a \
Secret Store (the recommended set-up; the edge reads one whenever the service has it), or a \
config store of that name (local runs, a service without a Secret Store). A store file \
cannot say which; it decides the secret reads a request may make, which an HS256 login key \
and bot_challenge add to.\nExample: --keys-in config-store"
    )]
    pub keys_in: crate::config_login::KeysIn,
}

/// Runs `wrctl config …`.
pub fn config(command: ConfigCommand) -> ExitCode {
    let args = match command {
        ConfigCommand::Check(args) => args,
        ConfigCommand::Set(args) => return crate::config_set::run_set(args),
        ConfigCommand::Migrate(args) => return crate::config_set::run_migrate(args),
    };
    let load = |path: &Path| -> Result<config_check::Store, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text =
            String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))?;
        config_check::parse_store(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let usage = |e: String| {
        eprintln!("wrctl: {e}");
        ExitCode::from(2)
    };
    let store = match load(&args.file) {
        Ok(store) => store,
        Err(e) => return usage(e),
    };
    let keys = match args.keys.as_deref().map(load).transpose() {
        Ok(keys) => keys,
        Err(e) => return usage(e),
    };
    let now = unix_now();
    let mut report = config_check::check(&store, keys.as_ref(), args.keys_in, now);
    let (index_errors, rooms) = config_check::check_rooms(&store, keys.as_ref(), args.keys_in, now);
    report.errors.extend(index_errors);
    let mut errors = 0;
    let mut warnings = 0;
    let mut show = |title: String, report: &config_check::Report| {
        println!("{title}:");
        for line in &report.effective {
            println!("  {line}");
        }
        if let Some(field) = &report.fallback_field {
            println!("  The room logs on every request: {field}");
        }
        for error in &report.errors {
            eprintln!("error: {error}");
        }
        for warning in &report.warnings {
            eprintln!("warning: {warning}");
        }
        for note in &report.notes {
            eprintln!("note: {note}");
        }
        errors += report.errors.len();
        warnings += report.warnings.len();
    };
    show(
        format!(
            "Effective settings of the service room ({})",
            args.file.display()
        ),
        &report,
    );
    for room in &rooms {
        show(
            format!("Effective settings of room {} ({})", room.name, room.scope),
            &room.report,
        );
    }
    eprintln!(
        "{}: {errors} error(s), {warnings} warning(s)",
        args.file.display()
    );
    if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
