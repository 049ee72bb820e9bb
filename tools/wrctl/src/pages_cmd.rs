//! The command line of `wrctl pages` and `wrctl config check`, and what they do.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use waiting_room::admission::decision::Decision;
use waiting_room::admission::grid;
use waiting_room::admission::refresh;
use waiting_room::pages::page::Page;
use waiting_room::pages::view::Status;
use waiting_room::settings::config::QueueingMethod;
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::refresh_mode::RefreshMode;

use crate::clock::unix_now;
use crate::config_check;
use crate::pages::{self, Finding};

/// `wrctl pages …`.
#[derive(Debug, Subcommand)]
pub enum PagesCommand {
    /// Check a page for the page store: size, external loads, template variables.
    #[command(
        long_about = "Check an HTML page before it goes into the waitingroom_pages config \
store, or onto the origin as a /path page. Errors (exit 1): its base64 value is over the \
config store's limit of 8,000 characters; it is over 262,144 bytes, all the room reads of a \
page it fetches from the origin; it loads anything from outside the page (scripts, stylesheets, images, fonts, \
frames, media, <link>, CSS url() or @import with an http(s)://, // or relative address: \
data: URLs are fine); it uses a {{variable}} the room does not know; it is not UTF-8. \
Warnings (exit 0): no <meta name=\"viewport\">, no lang on <html>, no <title>. Each \
finding is printed on stderr as FILE:LINE: error|warning: message.",
        after_long_help = "Example:\n  wrctl pages check waiting.html"
    )]
    Check(CheckArgs),
    /// Print a page's value for the page store (base64), after the checks.
    #[command(
        long_about = "Print the page's value for the waitingroom_pages config store: the \
base64 of the file, on stdout. With --json, a JSON object {\"KEY\": \"<base64>\"} to merge \
into a store file (local/pages.json). The checks of `wrctl pages check` run first; on an \
error nothing is printed and the exit status is 1, unless --force.",
        after_long_help = "Example:\n  wrctl pages encode waiting.html --key startwaiting.de --json > pages.json\n  \
wrctl pages encode waiting.html | fastly config-store-entry update --store-id STORE_ID --key startwaiting --stdin --upsert"
    )]
    Encode(EncodeArgs),
    /// Fill a page's template with sample figures, to open in a browser.
    #[command(
        long_about = "Fill the page's {{variables}} with sample figures, as the room does \
(the room's own renderer): a visitor who just started waiting on a room at --percentage, \
with slots of --wait-period seconds, estimates computed by the room. Writes OUT.html.",
        after_long_help = "Example:\n  wrctl pages preview waiting.html --out /tmp/preview.html --percentage 5 --wait-period 30"
    )]
    Preview(PreviewArgs),
}

/// `wrctl pages check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The HTML page.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// `wrctl pages encode`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// The HTML page.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The page-store key, for --json.
    #[arg(
        long,
        value_name = "KEY",
        default_value = "startwaiting",
        value_parser = pages::page_key,
        long_help = "The page-store key: startwaiting, keepwaiting or deny, optionally with \
.LANG for a per-language page (e.g. deny.de). Used by --json.\nExample: --key keepwaiting.fr"
    )]
    pub key: String,
    /// Print a JSON object {"KEY": "<base64>"}.
    #[arg(long)]
    pub json: bool,
    /// Print the value even when the checks find an error.
    #[arg(long)]
    pub force: bool,
}

/// `wrctl pages preview`.
#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// The HTML page (a template with {{variables}}).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Where to write the filled page.
    #[arg(long, value_name = "OUT.html")]
    pub out: PathBuf,
    /// Which page it is.
    #[arg(long, value_name = "PAGE", default_value = "startwaiting", value_parser = ["startwaiting", "keepwaiting", "deny"])]
    pub page: String,
    /// The room's allow_percentage.
    #[arg(long, value_name = "P", default_value = "10", value_parser = percentage)]
    pub percentage: Percentage,
    /// The room's wait_period_duration, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=waiting_room::settings::config::MAX_DURATION))]
    pub wait_period: u64,
}

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

fn percentage(text: &str) -> Result<Percentage, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number".to_string())?;
    if !(0.0..=100.0).contains(&value) {
        return Err("a percentage is 0 to 100".into());
    }
    text.parse().map_err(|e| format!("{e}"))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `wrctl pages …`.
pub fn pages(command: PagesCommand) -> ExitCode {
    match command {
        PagesCommand::Check(args) => check(&args.file),
        PagesCommand::Encode(args) => encode(&args),
        PagesCommand::Preview(args) => preview(&args),
    }
}

/// Prints the findings; `None` when the file cannot be read or is not UTF-8.
fn findings(path: &Path) -> Option<(Vec<u8>, Vec<Finding>)> {
    let bytes = match read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("wrctl: {e}");
            return None;
        }
    };
    let name = path.display().to_string();
    match pages::check(&bytes) {
        Ok(findings) => {
            for finding in &findings {
                eprintln!("{}", finding.display(&name));
            }
            Some((bytes, findings))
        }
        Err(e) => {
            eprintln!("{name}: error: {e}");
            None
        }
    }
}

fn check(path: &Path) -> ExitCode {
    let Some((bytes, findings)) = findings(path) else {
        return ExitCode::FAILURE;
    };
    let errors = findings
        .iter()
        .filter(|f| f.severity == pages::Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    eprintln!(
        "{}: {errors} error(s), {warnings} warning(s); encoded {} of {} characters",
        path.display(),
        pages::thousands(pages::encoded_len(bytes.len())),
        pages::thousands(pages::MAX_VALUE_LEN)
    );
    if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn encode(args: &EncodeArgs) -> ExitCode {
    let Some((bytes, findings)) = findings(&args.file) else {
        return ExitCode::FAILURE;
    };
    if pages::has_errors(&findings) && !args.force {
        eprintln!(
            "wrctl: {}: not encoded: fix the errors above, or pass --force",
            args.file.display()
        );
        return ExitCode::FAILURE;
    }
    let value = pages::encode(&bytes);
    if args.json {
        let mut object = serde_json::Map::new();
        object.insert(args.key.clone(), serde_json::Value::String(value));
        println!("{}", serde_json::Value::Object(object));
    } else {
        println!("{value}");
    }
    ExitCode::SUCCESS
}

/// A sample visitor who has just started waiting, as the room would see them.
pub fn sample_status(page: Page, percentage: Percentage, d: u64, now: u64) -> Status {
    let uid = "192.0.2.1";
    match page {
        Page::StartWaiting | Page::KeepWaiting => {
            let exp = grid::address_expiry(now, uid, d);
            let refresh_after =
                refresh::refresh_after(RefreshMode::Eligible, DrawGrid::Address, now, exp, uid, d);
            Status {
                page,
                decision: Some(if page == Page::StartWaiting {
                    Decision::Anon
                } else {
                    Decision::Wait
                }),
                now,
                allow_percentage: percentage,
                wait_period_duration: d,
                refresh_after: Some(refresh_after),
                estimate: waiting_room::admission::estimate::estimate(refresh_after, percentage, d),
                queueing_method: QueueingMethod::Random,
                place: None,
                toll: None,
                challenge: None,
            }
        }
        Page::Deny | Page::Ended | Page::OriginUnavailable => Status {
            page,
            decision: (page == Page::Deny).then_some(Decision::Deny),
            now,
            allow_percentage: percentage,
            wait_period_duration: d,
            refresh_after: None,
            estimate: None,
            queueing_method: QueueingMethod::Random,
            place: None,
            toll: None,
            challenge: None,
        },
    }
}

fn preview(args: &PreviewArgs) -> ExitCode {
    let template = match read(&args.file) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("wrctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let page = match args.page.as_str() {
        "keepwaiting" => Page::KeepWaiting,
        "deny" => Page::Deny,
        "ended" => Page::Ended,
        _ => Page::StartWaiting,
    };
    let now = unix_now();
    let status = sample_status(page, args.percentage, args.wait_period, now);
    let html = status.render(&template);
    if let Err(e) = std::fs::write(&args.out, html) {
        eprintln!("wrctl: {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    eprintln!(
        "wrctl: wrote {} ({} at {}%, refresh in {} s, median wait {})",
        args.out.display(),
        args.page,
        args.percentage,
        status.refresh_after.map_or("—".into(), |s| s.to_string()),
        status.variable("wait_p50").unwrap_or_default()
    );
    ExitCode::SUCCESS
}

/// Runs `wrctl config …`.
pub fn config(command: ConfigCommand) -> ExitCode {
    let args = match command {
        ConfigCommand::Check(args) => args,
        ConfigCommand::Set(args) => return crate::config_set::run_set(args),
        ConfigCommand::Migrate(args) => return crate::config_set::run_migrate(args),
    };
    let load = |path: &Path| -> Result<config_check::Store, String> {
        let bytes = read(path)?;
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
