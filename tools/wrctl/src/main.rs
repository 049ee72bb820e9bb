//! `wrctl`: see the library's documentation (`tools/wrctl/src/lib.rs`) and
//! `wrctl control --help`.

use std::process::ExitCode;
use std::sync::mpsc::sync_channel;
use std::thread;

use clap::Parser;
use control::fifo::FifoController;
use control::{Controller, Rule};
use wrctl::cli::{Cli, Command, ControlArgs, SinkChoice, usage_error};
use wrctl::control::Control;
use wrctl::sink::{ConfigFile, DryRun, FastlyApi, InRoom, Sink, TOKEN_VAR};
use wrctl::state::Info;
use wrctl::{ingest, server};

/// Batches in flight between the readers and the control thread.
const CHANNEL: usize = 64;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Control(args) => control(args),
        Command::Keygen(args) => wrctl::keys::keygen(args),
        Command::Token(command) => wrctl::token_cmd::run(command),
        Command::Rotate(args) => wrctl::rotate::rotate(args),
        Command::Revoke(args) => wrctl::rotate::revoke(args),
        Command::Pages(command) => wrctl::pages_cmd::pages(command),
        Command::Config(command) => wrctl::pages_cmd::config(command),
        Command::Rooms(args) => wrctl::rooms_cmd::rooms(args),
        Command::Pass(command) => wrctl::rooms_cmd::pass(command),
    }
}

/// `wrctl control`: the rule is chosen here, once; the rest runs either.
fn control(args: ControlArgs) -> ExitCode {
    if args.fifo() {
        let options = args.fifo_options().unwrap_or_else(|e| usage_error(&e));
        let rule = FifoController::new(options).unwrap_or_else(|e| usage_error(&e.to_string()));
        run_control(rule, args)
    } else {
        let options = args.options().unwrap_or_else(|e| usage_error(&e));
        let rule = Controller::new(options).unwrap_or_else(|e| usage_error(&e.to_string()));
        run_control(rule, args)
    }
}

/// Starts the sink, the listener and the stdin reader, and runs `rule` until
/// the log ends.
fn run_control<R: Rule>(rule: R, args: ControlArgs) -> ExitCode {
    let choice = args
        .sink(std::env::var(TOKEN_VAR).ok())
        .unwrap_or_else(|e| usage_error(&e));
    for warning in args.warnings() {
        eprintln!("wrctl: warning: {warning}");
    }
    let sink: Box<dyn Sink> = match choice {
        SinkChoice::ConfigFile(path) => match ConfigFile::open(&path) {
            Ok(file) => {
                check_config_file(&file, &args);
                Box::new(file)
            }
            Err(e) => {
                eprintln!("wrctl: --config-file {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        SinkChoice::Fastly {
            api,
            store_id,
            token,
        } => Box::new(FastlyApi::new(&api, &store_id, token)),
        SinkChoice::DryRun => Box::new(DryRun),
    };
    let sink: Box<dyn Sink> = match &args.room {
        Some(room) => Box::new(InRoom::new(sink, room.clone())),
        None => sink,
    };
    let info = Info {
        target_per_minute: args.target_per_minute,
        max_active: args.max_active,
        min: args.min,
        max: args.max,
        dry_run: sink.is_dry_run(),
        sink: sink.describe(),
        room: args.room.as_ref().map(ToString::to_string),
        room_dashboards: args.room_dashboard.clone(),
    };
    let (tx, rx) = sync_channel(CHANNEL);

    if let Some(addr) = args.listen {
        let log_secret = std::env::var(server::LOG_SECRET_VAR).ok();
        if log_secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
            usage_error(&format!(
                "the environment variable {} is set but empty",
                server::LOG_SECRET_VAR
            ));
        }
        let settings = server::Settings {
            max_body: args.max_body_bytes,
            service_ids: args.service_ids.clone(),
            log_secret,
            timeout: std::time::Duration::from_secs(args.http_timeout),
        };
        match server::start(addr, settings, tx.clone()) {
            Ok(bound) => eprintln!("wrctl: listening on http://{bound}"),
            Err(e) => {
                eprintln!("wrctl: --listen {addr}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    eprintln!(
        "wrctl: writing {} to {}; reading log lines from stdin",
        if args.fifo() {
            "fifo_cutoff and fifo_rate"
        } else {
            "allow_percentage"
        },
        info.sink
    );
    let stdin = thread::Builder::new().name("stdin".into()).spawn(move || {
        if let Err(e) = ingest::read_stream(std::io::stdin(), &tx) {
            eprintln!("wrctl: stdin: {e}");
        }
    });
    if let Err(e) = stdin {
        eprintln!("wrctl: cannot start the stdin reader: {e}");
        return ExitCode::FAILURE;
    }
    Control::new(rule, sink, info, args.quiet)
        .in_room(args.room.as_ref())
        .with_event_targets(&args.event_target)
        .run(rx);
    ExitCode::SUCCESS
}

/// Warns when the config file's own settings disagree with the options.
fn check_config_file(file: &ConfigFile, args: &ControlArgs) {
    let Ok(mut settings) = file.settings() else {
        return;
    };
    // A named room's settings are its value, a JSON object (numbers as numbers).
    if let Some(room) = &args.room {
        settings = settings
            .get(&room.store_key())
            .and_then(|v| v.as_str())
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or_default();
    }
    let text = |key: &str| {
        settings
            .get(key)
            .and_then(waiting_room::settings::config::text_of)
    };
    let number = |key: &str| text(key).and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(timeout) = number(waiting_room::settings::config::CONTROLLER_TIMEOUT)
        && args.heartbeat_every.saturating_add(args.tick) >= timeout
    {
        eprintln!(
            "wrctl: warning: --heartbeat-every {} with --tick {} is not well under the file's \
             controller_timeout {timeout}",
            args.heartbeat_every, args.tick
        );
    }
    if let Some(d) = number(waiting_room::settings::config::WAIT_PERIOD_DURATION)
        && d != args.wait_period
    {
        eprintln!(
            "wrctl: warning: --wait-period {} but the file's wait_period_duration is {d}",
            args.wait_period
        );
    }
    let method = text(waiting_room::settings::config::QUEUEING_METHOD)
        .map_or("random".to_string(), |v| v.trim().to_ascii_lowercase());
    if (method == "fifo") != args.fifo() {
        eprintln!(
            "wrctl: warning: --queueing {} but the file's queueing_method is {method}",
            args.queueing
        );
    }
    if let Some(hold) = number(waiting_room::settings::config::FIFO_HOLD)
        && args.fifo()
        && hold != args.fifo_hold
    {
        eprintln!(
            "wrctl: warning: --fifo-hold {} but the file's fifo_hold is {hold}",
            args.fifo_hold
        );
    }
}
