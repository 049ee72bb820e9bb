//! `wrctl control`: the options checked, the sink, the listener and the stdin
//! reader started, and the rooms' rules run by the control thread
//! ([`crate::control`]) until the log ends.

use std::process::ExitCode;
use std::sync::mpsc::sync_channel;
use std::thread;

use waiting_room::settings::room::RoomName;

use crate::budget::{self, Pacer};
use crate::cli::{ControlArgs, SinkChoice};
use crate::control::{Chosen, Control};
use crate::fastly_api::TOKEN_VAR;
use crate::sink::{ConfigFile, DryRun, FastlyApi, Sink};
use crate::usage::usage_error;
use crate::{ingest, server};

/// Batches in flight between the readers and the control thread.
const CHANNEL: usize = 64;

/// `wrctl control`: each room's rule is chosen once ([`crate::control::choose`]);
/// the rest runs either.
pub fn control(mut args: ControlArgs) -> ExitCode {
    // The API's budget sets the least time between two updates: the tick is no shorter.
    if args.fastly_store_id.is_some() {
        let least = budget::interval_for(args.api_budget);
        if args.tick < least {
            eprintln!(
                "wrctl: --tick {} raised to {least} s: the least time between two updates \
                 of --api-budget {} an hour",
                args.tick, args.api_budget
            );
            args.tick = least;
        }
    }
    let chosen = crate::control::choose(&args).unwrap_or_else(|e| usage_error(&e));
    run_control(chosen, args)
}

/// Starts the sink, the listener and the stdin reader, and runs the rooms'
/// rules until the log ends.
fn run_control(rooms: Vec<(Option<RoomName>, ControlArgs, Chosen)>, args: ControlArgs) -> ExitCode {
    let choice = args
        .sink(std::env::var(TOKEN_VAR).ok())
        .unwrap_or_else(|e| usage_error(&e));
    let log_secret = std::env::var(server::LOG_SECRET_VAR).ok();
    if log_secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
        usage_error(&format!(
            "the environment variable {} is set but empty",
            server::LOG_SECRET_VAR
        ));
    }
    let webhook = args
        .webhook(std::env::var(crate::notify::URL_VAR).ok())
        .unwrap_or_else(|e| usage_error(&e));
    let unauthenticated = args
        .unauthenticated_logs(
            matches!(choice, SinkChoice::Fastly { .. }),
            log_secret.is_some(),
        )
        .unwrap_or_else(|e| usage_error(&e));
    for warning in args.warnings(log_secret.is_some()) {
        eprintln!("wrctl: warning: {warning}");
    }
    let sink: Box<dyn Sink> = match choice {
        SinkChoice::ConfigFile(path) => match ConfigFile::open(&path) {
            Ok(file) => {
                let several = rooms.len() > 1;
                for (room, room_args, _) in &rooms {
                    check_config_file(&file, room_args, room.as_ref(), several);
                }
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
    let pacer = if sink.budgeted() {
        Pacer::budgeted(args.api_budget, args.heartbeat_every)
    } else {
        Pacer::unlimited()
    };
    let described = match rooms.as_slice() {
        // One named room: said as its controller always said it.
        [(Some(room), _, _)] => format!("{} (room {room})", sink.describe()),
        _ => sink.describe(),
    };
    let modes: Vec<&str> = rooms
        .iter()
        .map(|(_, a, _)| {
            if a.fifo() {
                "fifo_cutoff and fifo_rate"
            } else {
                "allow_percentage"
            }
        })
        .collect();
    let writes = if modes.iter().all(|m| *m == modes[0]) {
        modes[0].to_string()
    } else {
        "allow_percentage, fifo_cutoff and fifo_rate".into()
    };
    let held = crate::control::held(rooms, &args, &described, sink.is_dry_run());
    let names: Vec<String> = held
        .iter()
        .map(|r| {
            r.room()
                .map_or("the service room".into(), |n| format!("room {n}"))
        })
        .collect();
    let (tx, rx) = sync_channel(CHANNEL);

    if let Some(addr) = args.listen {
        let settings = server::Settings {
            max_body: args.max_body_bytes,
            service_ids: args.service_ids.clone(),
            log_secret,
            timeout: std::time::Duration::from_secs(args.http_timeout),
            serves: if args.state_listen.is_some() {
                server::Serves::Logs
            } else {
                server::Serves::All
            },
        };
        if let Some(state) = args.state_listen {
            let settings = server::Settings {
                serves: server::Serves::State,
                ..settings.clone()
            };
            match server::start(state, settings, tx.clone()) {
                Ok(bound) => {
                    eprintln!("wrctl: serving the dashboard and metrics on http://{bound}")
                }
                Err(e) => {
                    eprintln!("wrctl: --state-listen {state}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        match server::start(addr, settings, tx.clone()) {
            Ok(bound) => eprintln!("wrctl: listening on http://{bound}"),
            Err(e) => {
                eprintln!("wrctl: --listen {addr}: {e}");
                return ExitCode::FAILURE;
            }
        }
        if unauthenticated {
            eprintln!("wrctl: warning: {}", crate::control::UNAUTHENTICATED_LOGS);
        }
    }
    if names.len() > 1 {
        eprintln!(
            "wrctl: holding {} in one writer: every room's keys of a tick in one update",
            names.join(", ")
        );
    }
    if sink.budgeted() {
        eprintln!(
            "wrctl: at most {} Fastly API updates an hour (--api-budget), one each {} s at most",
            args.api_budget,
            budget::interval_for(args.api_budget)
        );
    }
    eprintln!("wrctl: writing {writes} to {described}; reading log lines from stdin");
    let stdin = thread::Builder::new().name("stdin".into()).spawn(move || {
        if let Err(e) = ingest::read_stream(std::io::stdin(), &tx) {
            eprintln!("wrctl: stdin: {e}");
        }
    });
    if let Err(e) = stdin {
        eprintln!("wrctl: cannot start the stdin reader: {e}");
        return ExitCode::FAILURE;
    }
    let mut control = Control::of_rooms(held, sink, args.quiet)
        .with_pacer(pacer)
        .with_unauthenticated_logs(unauthenticated);
    if let Some((url, options)) = webhook {
        let (queue, per_minute) = (options.queue, options.per_minute);
        match crate::notify::Notifier::start(url, options) {
            Ok(notifier) => {
                eprintln!(
                    "wrctl: posting alert transitions to the webhook of {} (at most {per_minute} \
                     a minute, {queue} waiting)",
                    crate::notify::URL_VAR
                );
                control = control.with_notifier(notifier);
            }
            Err(e) => {
                eprintln!("wrctl: cannot start the webhook's thread: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    control.run(rx);
    ExitCode::SUCCESS
}

/// Warns when the config file's own settings disagree with the options.
fn check_config_file(
    file: &ConfigFile,
    args: &ControlArgs,
    room: Option<&RoomName>,
    several: bool,
) {
    let Ok(mut settings) = file.settings() else {
        return;
    };
    // A named room's settings are its value, a JSON object (numbers as numbers).
    if let Some(room) = room {
        settings = settings
            .get(&room.store_key())
            .and_then(|v| v.as_str())
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or_default();
    }
    // Several rooms: each warning says whose settings disagree.
    let of = match room {
        Some(room) if several => format!("room {room}: "),
        None if several => "service room: ".to_string(),
        _ => String::new(),
    };
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
            "wrctl: warning: {of}--heartbeat-every {} with --tick {} is not well under the file's \
             controller_timeout {timeout}",
            args.heartbeat_every, args.tick
        );
    }
    if let Some(d) = number(waiting_room::settings::config::WAIT_PERIOD_DURATION)
        && d != args.wait_period
    {
        eprintln!(
            "wrctl: warning: {of}--wait-period {} but the file's wait_period_duration is {d}",
            args.wait_period
        );
    }
    let method = text(waiting_room::settings::config::QUEUEING_METHOD)
        .map_or("random".to_string(), |v| v.trim().to_ascii_lowercase());
    if (method == "fifo") != args.fifo() {
        eprintln!(
            "wrctl: warning: {of}--queueing {} but the file's queueing_method is {method}",
            args.queueing
        );
    }
    if let Some(hold) = number(waiting_room::settings::config::FIFO_HOLD)
        && args.fifo()
        && hold != args.fifo_hold
    {
        eprintln!(
            "wrctl: warning: {of}--fifo-hold {} but the file's fifo_hold is {hold}",
            args.fifo_hold
        );
    }
}
