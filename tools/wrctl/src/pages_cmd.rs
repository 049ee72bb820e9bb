//! The command line of `wrctl pages`, and what it does (the checks: [`crate::pages`]).

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
