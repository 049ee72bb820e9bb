//! The command line: `run`, `plan`, `cost`, `toll` and `identity`, read by clap.
//! Compound values (`--session 5:60`, `--nat 0.02:20`, …) go through the small parsers at the end;
//! what depends on several options (the scenario's bounds, the controller's and
//! the FIFO rule's options) is checked once the whole line is read.

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{ArgAction, Args, CommandFactory, Parser};
use control::options::DEFAULT_EXPECTED_PROPAGATION;
use waiting_room::admission::ceiling::DEFAULT_NODES;
use waiting_room::settings::config::{
    ALLOW_PERCENTAGE, ALLOW_PERIOD_TIMEOUT, BOT_TOLL_BITS, DRAW_GRID, FIFO_HOLD, IDENTITY,
    POP_NEW_SESSIONS_PER_MINUTE, REFRESH_MODE, WAIT_PERIOD_DURATION,
};
use waiting_room::settings::config::{MAX_DURATION, QueueingMethod};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::identity::Identity;
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::refresh_mode::RefreshMode;
use waiting_room::settings::room::RoomName;

use crate::bots::Bots;
use crate::fifo_mode::FifoSpec;
use crate::origin_model::{Change, OriginSpec};
use crate::planning::Question;
use crate::scenario::{
    Arrivals, Control, Mix, OriginRule, PopCountsModel, Room, Scenario, SecondRoom, Session,
};
use control::origin_rule::Healthy;

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Simulate one scenario on one or both draw grids, in one or both refresh
    /// modes, and write the report.
    Run {
        /// The scenario (its room's grid is replaced by each of `grids`).
        scenario: Scenario,
        /// Draw grids to run it on.
        grids: Vec<DrawGrid>,
        /// Refresh modes to run it in.
        modes: Vec<RefreshMode>,
        /// Where the JSON report and SVG plots go.
        out: PathBuf,
        /// The JSON report only, no plots.
        no_plots: bool,
        /// No progress lines.
        quiet: bool,
    },
    /// Answer an operator's question: for each candidate room, the origin load and waits.
    Plan {
        /// The scenario (its room is replaced by each candidate).
        scenario: Scenario,
        /// Candidate rooms: the scenario's with each combination of the listed
        /// `allow_percentage`, `wait_period_duration` and `allow_period_timeout`.
        candidates: Vec<Room>,
        /// Refresh mode.
        mode: RefreshMode,
        /// People actually simulated (figures are scaled up to `visitors`).
        sample: u64,
        /// Where to write the JSON table, if anywhere.
        out: Option<PathBuf>,
    },
    /// Simulate two rooms of one service at once, each with its own crowd and
    /// controller, on one log stream (`run --second-room NAME`), on each draw
    /// grid and in each refresh mode, and write the report.
    Rooms {
        /// The service room's scenario (its grid is replaced by each of `grids`).
        scenario: Scenario,
        /// The named room beside it (boxed: a scenario is large).
        second: Box<SecondRoom>,
        /// Draw grids to run them on.
        grids: Vec<DrawGrid>,
        /// Refresh modes to run them in.
        modes: Vec<RefreshMode>,
        /// Where the JSON report and SVG plots go.
        out: PathBuf,
        /// The JSON report only, no plots.
        no_plots: bool,
        /// No progress lines.
        quiet: bool,
    },
    /// Simulate one scenario with the room in FIFO mode (see [`crate::fifo_mode`]).
    Fifo {
        /// The scenario (its closed loop runs the FIFO rule).
        scenario: Scenario,
        /// What FIFO mode adds.
        spec: crate::fifo_mode::FifoSpec,
        /// Where the JSON report and the plot go.
        out: PathBuf,
        /// The JSON report only, no plot.
        no_plots: bool,
        /// No progress lines.
        quiet: bool,
    },
    /// Cost per decision as the crowd grows.
    Cost {
        /// The scenario (its `visitors` is replaced by each size).
        scenario: Scenario,
        /// Crowd sizes.
        sizes: Vec<u64>,
    },
    /// Bots against people with the bot toll off and on (see [`crate::toll_table`]).
    Toll {
        /// The scenario (its room's `bot_toll_bits` is replaced by each of `bits`).
        scenario: Scenario,
        /// `bot_toll_bits` values, one run each.
        bits: Vec<u8>,
        /// No progress lines.
        quiet: bool,
    },
    /// Each kind of person's odds of admission by identity (see [`crate::identity_odds`]).
    Identity {
        /// The crowd and the room (its `identity` replaced by each of `identities`).
        scenario: Scenario,
        /// The room's identities to compare, one run each per seed.
        identities: Vec<Identity>,
        /// Seeds: the scenario's and the ones after it, one crowd each.
        seeds: u64,
        /// No progress lines.
        quiet: bool,
    },
}

/// Parses the arguments after the program name. `--help` and every refusal come
/// back as clap's error: `.exit()` prints it (help on stdout and exit 0, a
/// refusal on stderr and exit 2).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, clap::Error> {
    let args = std::iter::once("simulate".to_string()).chain(args);
    let (name, command) = match Sub::try_parse_from(args)? {
        Sub::Run(run) => ("run", run.resolve()),
        Sub::Plan(plan) => ("plan", plan.resolve()),
        Sub::Cost(cost) => ("cost", cost.resolve()),
        Sub::Toll(toll) => ("toll", toll.resolve()),
        Sub::Identity(identity) => ("identity", identity.resolve()),
    };
    command.map_err(|why| {
        let mut cli = Sub::command();
        cli.build();
        let sub = cli.find_subcommand_mut(name).expect("a subcommand");
        sub.error(ErrorKind::ValueValidation, why)
    })
}

/// The waiting room under a virtual crowd: its own decision code at a virtual
/// clock, reporting origin load, fairness, waits and what replayers get.
#[derive(Parser)]
#[command(
    name = "simulate",
    after_help = "plan and cost default to plain visitors (one device and tab each on its own \
address, following Refresh, never giving up); run, random or FIFO, to the default mix."
)]
enum Sub {
    /// Simulate one scenario on one or both draw grids, in one or both refresh
    /// modes (or in FIFO mode), and write the JSON report and SVG plots.
    Run(Box<RunArgs>),
    /// For each candidate room (lists for the room's settings), the origin load
    /// and waits, from a sample scaled up to --visitors.
    Plan(PlanArgs),
    /// Cost per decision as the crowd grows (a list for --visitors).
    Cost(CostArgs),
    /// Bots with many addresses against people, with the bot toll off and on (a
    /// list for --bot-toll-bits): the places each takes, and the hashes and CPU
    /// a bot spends per place.
    Toll(TollArgs),
    /// Each kind of person's odds of admission with the room's identity by
    /// address and by login, side by side, over several seeds: people alone on
    /// their address, behind shared addresses, and on several addresses.
    Identity(IdentityArgs),
}

#[derive(Args)]
struct RunArgs {
    /// People.
    #[arg(long, value_name = "N", value_parser = number::<u64>, default_value_t = Scenario::default().visitors)]
    visitors: u64,
    #[command(flatten)]
    room: RoomArgs,
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// draw_grid: where new wait tokens expire: each address's own grid (the room's
    /// default), the VCL's global slots, or one run on each.
    #[arg(long, value_name = "GRID", value_parser = ["address", "global", "both"])]
    draw_grid: Option<String>,
    /// Refresh modes to run in, one run each (not in FIFO mode) [default:
    /// refresh_mode when set, else both].
    #[arg(long, value_name = "MODE", value_parser = ["eligible", "fixed", "both"], conflicts_with = "queueing")]
    refresh: Option<String>,
    /// Directory for the JSON report and SVG plots.
    #[arg(long, value_name = "DIR", default_value = "simulation")]
    out: PathBuf,
    /// The JSON report only, no plots.
    #[arg(long)]
    no_plots: bool,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    control: ControlArgs,
    /// The room in FIFO mode (queueing_method = fifo; random is the default): the
    /// FIFO rule moves fifo_cutoff in the closed loop, so it needs --target-per-minute.
    #[arg(long, value_name = "METHOD", value_parser = ["fifo"], requires = "target_per_minute", help_heading = "FIFO mode")]
    queueing: Option<String>,
    /// fifo_hold, seconds [default: the room's, 300].
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>, requires = "queueing", help_heading = "FIFO mode")]
    fifo_hold: Option<u64>,
    /// bot_toll_bits: the bot toll each wait token owes (0, the default: none);
    /// people's pages and paying bots pay it, skipping bots never do.
    #[arg(long, value_name = "BITS", value_parser = toll_bits)]
    bot_toll_bits: Option<u8>,
    /// identity: who the room takes a visitor for: their address (the room's
    /// default) or their login (every person presents one: all their devices, on
    /// any address, are one uid, the room's own hash of the person).
    #[arg(long, value_name = "IDENTITY", value_parser = ["address", "login"])]
    identity: Option<String>,
    #[command(flatten)]
    second: SecondRoomArgs,
    #[command(flatten)]
    origin: OriginArgs,
}

/// An origin behind the room (`run` with the closed loop, random mode): it
/// answers every request the room lets through, slower as it saturates (see
/// the simulator's `origin` module), and the controller can follow its health.
#[derive(Args)]
#[command(next_help_heading = "Origin")]
struct OriginArgs {
    /// Requests a second the origin serves at its base time.
    #[arg(long, value_name = "N", value_parser = number::<f64>, requires = "target_per_minute", conflicts_with_all = ["queueing", "second_room"])]
    origin_capacity: Option<f64>,
    /// The origin's base time of a request (its median), milliseconds.
    #[arg(long, value_name = "MS", value_parser = number::<f64>, requires = "origin_capacity", default_value_t = OriginSpec::default().base_ms)]
    origin_base_ms: f64,
    /// From minute FROM (until minute UNTIL), the capacity times FACTOR.
    #[arg(long, value_name = "FROM:FACTOR[:UNTIL]", value_parser = origin_change, requires = "origin_capacity")]
    origin_change: Option<Change>,
    /// Seconds over which a cold origin warms up (a third of its capacity and
    /// three times its base time at the start).
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>, requires = "origin_capacity", default_value_t = 0)]
    origin_warmup: u64,
    /// Requests the origin serves at once (a pool of threads): above one, it
    /// hardly slows until it is nearly full, then all at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000), requires = "origin_capacity", default_value_t = 1)]
    origin_servers: u32,
    /// The controller follows the origin's health: what healthy means, as
    /// `wrctl control --origin-healthy` takes it (p95<800ms,errors<1%).
    #[arg(long, value_name = "SPEC", value_parser = healthy, requires_all = ["origin_capacity", "origin_floor", "origin_ceiling"])]
    origin_healthy: Option<Healthy>,
    /// New sessions a minute the origin rule never cuts below.
    #[arg(long, value_name = "N", value_parser = number::<f64>, requires = "origin_healthy")]
    origin_floor: Option<f64>,
    /// New sessions a minute the origin rule never exceeds.
    #[arg(long, value_name = "N", value_parser = number::<f64>, requires = "origin_healthy")]
    origin_ceiling: Option<f64>,
}

impl OriginArgs {
    /// The origin, and the rule following it.
    fn origin(&self) -> (Option<OriginSpec>, Option<OriginRule>) {
        let origin = self.origin_capacity.map(|capacity| OriginSpec {
            capacity,
            base_ms: self.origin_base_ms,
            change: self.origin_change,
            warmup: self.origin_warmup,
            servers: self.origin_servers,
            ..OriginSpec::default()
        });
        let rule = self.origin_healthy.map(|healthy| OriginRule {
            healthy,
            floor: self.origin_floor.unwrap_or(0.0),
            ceiling: self.origin_ceiling.unwrap_or(0.0),
        });
        (origin, rule)
    }
}

/// A second room (`run` in random mode, with the closed loop): a named room of
/// the same service run at once with the first, which is the service room.
/// Every option of the first applies to it too, but its crowd and target.
#[derive(Args)]
#[command(next_help_heading = "Second room")]
struct SecondRoomArgs {
    /// A named room run at once with the service room, with its own crowd and
    /// controller: both rooms' lines go into one log stream, which each
    /// controller reads whole, counting only its own room's lines. Its crowd is
    /// drawn with the next --seed.
    #[arg(long, value_name = "NAME", value_parser = room_name, requires_all = ["target_per_minute", "second_room_target"], conflicts_with = "queueing")]
    second_room: Option<RoomName>,
    /// New sessions a minute its controller holds.
    #[arg(long, value_name = "N", value_parser = number::<f64>, requires = "second_room")]
    second_room_target: Option<f64>,
    /// People in its crowd [default: --visitors].
    #[arg(long, value_name = "N", value_parser = number::<u64>, requires = "second_room")]
    second_room_visitors: Option<u64>,
    /// When they arrive [default: --arrivals].
    #[arg(long, value_name = "SPEC", requires = "second_room")]
    second_room_arrivals: Option<Arrivals>,
}

impl SecondRoomArgs {
    /// The second room beside `first`, when `--second-room` is given.
    fn room(&self, first: &Scenario) -> Option<SecondRoom> {
        let name = self.second_room.clone()?;
        let control = first.control.map(|c| Control {
            target_per_minute: self.second_room_target.unwrap_or(c.target_per_minute),
            ..c
        });
        let scenario = Scenario {
            visitors: self.second_room_visitors.unwrap_or(first.visitors),
            arrivals: self.second_room_arrivals.unwrap_or(first.arrivals),
            seed: first.seed.wrapping_add(1),
            control,
            ..first.clone()
        };
        Some(SecondRoom { name, scenario })
    }
}

impl RunArgs {
    fn resolve(self) -> Result<Command, String> {
        let both = self.draw_grid.as_deref() == Some("both");
        let room = self.room.room([
            (DRAW_GRID, self.draw_grid.clone().filter(|_| !both)),
            (BOT_TOLL_BITS, text(self.bot_toll_bits)),
            (FIFO_HOLD, text(self.fifo_hold)),
            (IDENTITY, self.identity.clone()),
        ])?;
        let grids = if both {
            vec![DrawGrid::Address, DrawGrid::Global]
        } else {
            vec![room.settings().draw_grid]
        };
        // FIFO mode and the refresh modes as their flags say, or else as the room's settings.
        let fifo =
            self.queueing.is_some() || room.settings().queueing_method == QueueingMethod::Fifo;
        if fifo && room.settings().pop_new_sessions_per_minute.is_some() {
            return Err(
                "--pop-new-sessions-per-minute holds lottery wins: random mode only".into(),
            );
        }
        let modes = modes(
            self.refresh
                .as_deref()
                .or(room.stored(REFRESH_MODE))
                .unwrap_or("both"),
        );
        let mut scenario = self.scenario.apply(Scenario {
            visitors: self.visitors,
            room,
            ..Scenario::default()
        });
        scenario.control = self.control.control();
        let (origin, rule) = self.origin.origin();
        scenario.origin = origin;
        if let Some(control) = &mut scenario.control {
            control.origin = rule;
        }
        check(&scenario)?;
        let (out, no_plots, quiet) = (self.out, self.no_plots, self.quiet);
        if let Some(second) = self.second.room(&scenario) {
            if fifo {
                return Err("--second-room is for random mode".into());
            }
            check(&second.scenario)?;
            return Ok(Command::Rooms {
                scenario,
                second: Box::new(second),
                grids,
                modes,
                out,
                no_plots,
                quiet,
            });
        }
        if !fifo {
            return Ok(Command::Run {
                scenario,
                grids,
                modes,
                out,
                no_plots,
                quiet,
            });
        }
        let control = scenario
            .control
            .ok_or("--queueing fifo needs --target-per-minute and --propagation-delay")?;
        if grids.len() > 1 {
            return Err("--draw-grid both is for random mode: FIFO mode runs one grid".into());
        }
        let spec = FifoSpec {
            fifo_hold: scenario.room.settings().fifo_hold,
        };
        let options = crate::fifo_mode::options(&control, &scenario, &spec);
        control::fifo_rule::FifoController::new(options)
            .map_err(|e| format!("the FIFO rule refuses its options: {e}"))?;
        Ok(Command::Fifo {
            scenario,
            spec,
            out,
            no_plots,
            quiet,
        })
    }
}

#[derive(Args)]
struct PlanArgs {
    /// People.
    #[arg(long, value_name = "N", value_parser = number::<u64>, default_value_t = Scenario::default().visitors)]
    visitors: u64,
    #[command(flatten)]
    settings: SetArgs,
    /// Candidate allow_percentage values, up to four decimals each (e.g. 0.5,1,2.5)
    /// [default: the room's, 20].
    #[arg(long, value_name = "P,…", value_parser = percentage, value_delimiter = ',', action = ArgAction::Set)]
    allow_percentage: Vec<Percentage>,
    /// Candidate wait_period_duration values, seconds [default: the room's, 30].
    #[arg(long, visible_alias = "wait-period", value_name = "SECONDS,…", value_parser = number::<u64>, value_delimiter = ',', action = ArgAction::Set)]
    wait_period_duration: Vec<u64>,
    /// Candidate allow_period_timeout values, seconds [default: the room's, 3600].
    #[arg(long, visible_alias = "allow-timeout", value_name = "SECONDS,…", value_parser = number::<u64>, value_delimiter = ',', action = ArgAction::Set)]
    allow_period_timeout: Vec<u64>,
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    grid: GridArg,
    /// Refresh mode [default: refresh_mode when set, else eligible].
    #[arg(long, value_name = "MODE", value_parser = ["eligible", "fixed"])]
    refresh: Option<String>,
    /// People actually simulated (figures are scaled up to --visitors).
    #[arg(long, value_name = "N", value_parser = number::<u64>, default_value_t = 20_000)]
    sample: u64,
    /// Where to write the answers as JSON (nowhere unless given).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl PlanArgs {
    fn resolve(self) -> Result<Command, String> {
        let room = self.settings.apply(Room::default(), [self.grid.flag()])?;
        let candidates = Question::rooms(
            &room,
            &[
                (ALLOW_PERCENTAGE, texts(&self.allow_percentage)),
                (WAIT_PERIOD_DURATION, texts(&self.wait_period_duration)),
                (ALLOW_PERIOD_TIMEOUT, texts(&self.allow_period_timeout)),
            ],
        )?;
        let refresh = self.refresh.as_deref().or(room.stored(REFRESH_MODE));
        let mode = modes(refresh.unwrap_or("eligible"))[0];
        let scenario = self.scenario.apply(Scenario {
            visitors: self.visitors,
            mix: Mix::plain(),
            room,
            ..Scenario::default()
        });
        check(&scenario)?;
        Ok(Command::Plan {
            scenario,
            candidates,
            mode,
            sample: self.sample,
            out: self.out,
        })
    }
}

/// A flag's value as text, when given.
fn text(value: Option<impl ToString>) -> Option<String> {
    value.map(|v| v.to_string())
}

/// Each value as text.
fn texts<T: ToString>(values: &[T]) -> Vec<String> {
    values.iter().map(T::to_string).collect()
}

#[derive(Args)]
struct CostArgs {
    /// Crowd sizes.
    #[arg(long, value_name = "N,…", value_parser = number::<u64>, value_delimiter = ',', action = ArgAction::Set, default_value = "1000,10000,100000,1000000")]
    visitors: Vec<u64>,
    #[command(flatten)]
    room: RoomArgs,
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    grid: GridArg,
}

impl CostArgs {
    fn resolve(self) -> Result<Command, String> {
        let scenario = self.scenario.apply(Scenario {
            mix: Mix::plain(),
            arrivals: Arrivals::Flash { seconds: 60 },
            duration: 600,
            room: self.room.room([self.grid.flag()])?,
            ..Scenario::default()
        });
        for &visitors in &self.visitors {
            check(&Scenario {
                visitors,
                ..scenario.clone()
            })?;
        }
        Ok(Command::Cost {
            scenario,
            sizes: self.visitors,
        })
    }
}

/// The people, bots and controller `toll` runs unless told otherwise.
pub const TOLL_PEOPLE: u64 = 2_000;
/// Addresses of skipping and of paying bots.
pub const TOLL_BOTS: Bots = Bots {
    skipping: 1_000,
    paying: 1_000,
};
/// New sessions a minute the controller holds.
pub const TOLL_TARGET: f64 = 60.0;

#[derive(Args)]
struct TollArgs {
    /// People.
    #[arg(long, value_name = "N", value_parser = number::<u64>, default_value_t = TOLL_PEOPLE)]
    visitors: u64,
    /// bot_toll_bits values to compare, one run each over the same crowd.
    #[arg(long, value_name = "BITS,…", value_parser = toll_bits, value_delimiter = ',', action = ArgAction::Set, default_value = "0,8,12,16")]
    bot_toll_bits: Vec<u8>,
    #[command(flatten)]
    room: RoomArgs,
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    grid: GridArg,
    #[command(flatten)]
    control: ControlArgs,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

impl TollArgs {
    fn resolve(self) -> Result<Command, String> {
        let mut scenario = self.scenario.apply(Scenario {
            visitors: self.visitors,
            arrivals: Arrivals::Flash { seconds: 60 },
            duration: 1800,
            mix: Mix {
                bots: TOLL_BOTS,
                ..Mix::plain()
            },
            room: self.room.room([self.grid.flag()])?,
            ..Scenario::default()
        });
        scenario.control = Some(self.control.control().unwrap_or(Control {
            propagation_delay: 30,
            ..Control::new(TOLL_TARGET)
        }));
        // The runs differ only in bot_toll_bits, which the room reads as --bot-toll-bits does.
        check(&scenario)?;
        Ok(Command::Toll {
            scenario,
            bits: self.bot_toll_bits,
            quiet: self.quiet,
        })
    }
}

#[derive(Args)]
struct IdentityArgs {
    /// People [default: 6000].
    #[arg(long, value_name = "N", value_parser = number::<u64>)]
    visitors: Option<u64>,
    /// The room's identities to compare, one run each per seed.
    #[arg(long, value_name = "IDENTITY,…", value_parser = ["address", "login"], value_delimiter = ',', action = ArgAction::Set, default_value = "address,login")]
    identity: Vec<String>,
    /// Crowds: one for each seed from --seed on, run with each identity.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100), default_value_t = 10)]
    seeds: u64,
    #[command(flatten)]
    room: RoomArgs,
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    grid: GridArg,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

impl IdentityArgs {
    fn resolve(self) -> Result<Command, String> {
        let crowd = crate::identity_odds::crowd();
        let room = self.room.room_on(crowd.room.clone(), [self.grid.flag()])?;
        let scenario = self.scenario.apply(Scenario {
            visitors: self.visitors.unwrap_or(crowd.visitors),
            room,
            ..crowd
        });
        check(&scenario)?;
        let identities = self
            .identity
            .iter()
            .map(|word| match word.as_str() {
                "login" => Identity::Login,
                _ => Identity::Address,
            })
            .collect();
        Ok(Command::Identity {
            scenario,
            identities,
            seeds: self.seeds,
            quiet: self.quiet,
        })
    }
}

/// `--draw-grid` of `plan`, `cost`, `toll` and `identity`.
#[derive(Args)]
struct GridArg {
    /// draw_grid: where new wait tokens expire: each address's own grid (the room's
    /// default) or the VCL's global slots.
    #[arg(long, value_name = "GRID", value_parser = ["address", "global"])]
    draw_grid: Option<String>,
}

impl GridArg {
    /// The flag as the setting it is short for.
    fn flag(&self) -> (&'static str, Option<String>) {
        (DRAW_GRID, self.draw_grid.clone())
    }
}

/// `--set KEY=VALUE`: the room's settings under their config-store keys.
#[derive(Args)]
struct SetArgs {
    /// A setting of the room, under its config-store key, as the store holds it
    /// (session_mode=fixed, queue_all=true): any key the room reads, read by the
    /// room's own reader (a value it refuses is an error). Repeatable. The flags
    /// named after a key (--wait-period-duration, --draw-grid, …) are short for
    /// it, and win over it.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    set: Vec<(String, String)>,
}

impl SetArgs {
    /// `room` with every `--set`, then every flag given (key, text).
    fn apply(
        &self,
        mut room: Room,
        flags: impl IntoIterator<Item = (&'static str, Option<String>)>,
    ) -> Result<Room, String> {
        let flags = flags
            .into_iter()
            .filter_map(|(key, text)| Some((key.to_string(), text?)));
        for (key, text) in self.set.iter().cloned().chain(flags) {
            room.set(&key, &text)?;
        }
        Ok(room)
    }
}

/// The room's settings, one value each (`run`, `cost` and `toll`): `--set`, and
/// flags short for the keys most runs set, and how the simulated POP counts.
#[derive(Args)]
struct RoomArgs {
    #[command(flatten)]
    settings: SetArgs,
    /// allow_percentage, up to four decimals [default: 20].
    #[arg(long, value_name = "P", value_parser = percentage)]
    allow_percentage: Option<Percentage>,
    /// wait_period_duration, seconds [default: the room's, 30].
    #[arg(long, visible_alias = "wait-period", value_name = "SECONDS", value_parser = number::<u64>)]
    wait_period_duration: Option<u64>,
    /// allow_period_timeout, seconds [default: the room's, 3600].
    #[arg(long, visible_alias = "allow-timeout", value_name = "SECONDS", value_parser = number::<u64>)]
    allow_period_timeout: Option<u64>,
    /// pop_new_sessions_per_minute: new sessions the room (one POP) starts in a
    /// minute at most; a win over it waits on as after a loss [default: none].
    #[arg(long, value_name = "N", value_parser = pop_ceiling)]
    pop_new_sessions_per_minute: Option<u32>,
    /// How the POP counts new sessions for the ceiling: edge (Fastly's edge rate
    /// counter as documented: every read 10 % low, the worst it "may under count";
    /// reads spread over --pop-nodes nodes, each reading zero at its first use and
    /// seeing only what the POP counted after it) or exact (every session counted
    /// at once, as the simulator did before).
    #[arg(long, value_name = "MODEL", value_parser = ["edge", "exact"], default_value = "edge")]
    pop_counts: String,
    /// Nodes of the POP with --pop-counts edge.
    #[arg(long, value_name = "N", value_parser = pop_nodes, default_value_t = DEFAULT_NODES)]
    pop_nodes: u32,
}

impl RoomArgs {
    /// The room of `--set` and the flags, and the command's own `flags` (key, text).
    fn room<const N: usize>(
        &self,
        flags: [(&'static str, Option<String>); N],
    ) -> Result<Room, String> {
        self.room_on(Room::default(), flags)
    }

    /// [`RoomArgs::room`], from the command's own default room `room`.
    fn room_on<const N: usize>(
        &self,
        mut room: Room,
        flags: [(&'static str, Option<String>); N],
    ) -> Result<Room, String> {
        room.pop_counts = match self.pop_counts.as_str() {
            "exact" => PopCountsModel::Exact,
            _ => PopCountsModel::Edge {
                nodes: self.pop_nodes,
            },
        };
        let own = [
            (ALLOW_PERCENTAGE, text(self.allow_percentage)),
            (WAIT_PERIOD_DURATION, text(self.wait_period_duration)),
            (ALLOW_PERIOD_TIMEOUT, text(self.allow_period_timeout)),
            (
                POP_NEW_SESSIONS_PER_MINUTE,
                text(self.pop_new_sessions_per_minute),
            ),
        ];
        self.settings.apply(room, own.into_iter().chain(flags))
    }
}

/// The options every command shares. `--mix` sets the whole mix; the part options
/// then change it part by part, wherever they stand on the line, and
/// `--device-spread` overrides the SPREAD of `--multi-device`.
#[derive(Args)]
struct ScenarioArgs {
    /// When people arrive: steady:SECONDS, flash:SECONDS or waves:COUNT:EVERY:WIDTH
    /// [default: steady:3000; cost: flash:60].
    #[arg(long, value_name = "SPEC")]
    arrivals: Option<Arrivals>,
    /// Virtual seconds simulated [default: 3600; cost: 600].
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>)]
    duration: Option<u64>,
    /// Requests after admission, and the seconds between them [default: 5:60].
    #[arg(long, value_name = "N:SECONDS", value_parser = session)]
    session: Option<Session>,
    /// The mix of people, as a whole: plain (one device and tab each, on its own
    /// address, following Refresh, never giving up), devices (the default's several
    /// devices, shared addresses and replayers only), default (the defaults below) or
    /// heavy (more of everything); the options below change it part by part
    /// [default: default; plan and cost: plain].
    #[arg(long, value_name = "NAME")]
    mix: Option<Mix>,
    /// People on several devices behind one address: their share, devices each, and
    /// the seconds over which those join [default mix: 0.1:3:10].
    #[arg(long, value_name = "SHARE:DEVICES:SPREAD", value_parser = multi_device)]
    multi_device: Option<(f64, u32, u64)>,
    /// Seconds over which a multi-device person's devices join; overrides the SPREAD
    /// of --multi-device [default mix: 10].
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>)]
    device_spread: Option<u64>,
    /// People behind shared addresses, and how many per address [default mix: 0.02:20].
    #[arg(long, value_name = "SHARE:SIZE", value_parser = share_and::<u32>)]
    nat: Option<(f64, u32)>,
    /// People with a device on each of several addresses of their own (Wi-Fi,
    /// mobile data, office), joining within the device spread: their share, and
    /// addresses each [default: 0:3; identity: a third, 3 each].
    #[arg(long, value_name = "SHARE:ADDRESSES", value_parser = share_and::<u32>)]
    multi_address: Option<(f64, u32)>,
    /// People who keep and replay their tokens [default mix: 0.001].
    #[arg(long, value_name = "SHARE", value_parser = fraction)]
    attackers: Option<f64>,
    /// Devices with N tabs on the waiting page, sharing one cookie jar, each
    /// following Refresh [default mix: 0.3:3].
    #[arg(long, value_name = "SHARE:N", value_parser = share_and::<u32>)]
    tabs: Option<(f64, u32)>,
    /// Devices that are apps polling every MIN..MAX s instead of following Refresh
    /// [default mix: 0.05:3:6].
    #[arg(long, value_name = "SHARE:MIN:MAX", value_parser = app_poll)]
    app_poll: Option<(f64, (u64, u64))>,
    /// Devices whose person reloads at half the page's Refresh [default mix: 0.1].
    #[arg(long, value_name = "SHARE", value_parser = fraction)]
    early: Option<f64>,
    /// People who give up waiting, each within SECONDS of arriving [default mix: 0.1:1800].
    #[arg(long, value_name = "SHARE:SECONDS", value_parser = share_and::<u64>)]
    abandon: Option<(f64, u64)>,
    /// Bots besides the people, each alone on an address of its own, arriving as
    /// the people do: addresses of bots that never pay the bot toll, and of bots
    /// that pay it [default: 0:0; toll: 1000:1000].
    #[arg(long, value_name = "SKIPPING:PAYING")]
    bots: Option<Bots>,
    /// Seed of every random choice.
    #[arg(long, value_name = "N", value_parser = number::<u64>, default_value_t = Scenario::default().seed)]
    seed: u64,
}

impl ScenarioArgs {
    /// `s` with every option given applied: the mix first, then its parts.
    fn apply(&self, mut s: Scenario) -> Scenario {
        // A named mix is people only: the bots stay as they were.
        s.mix = self.mix.map_or(s.mix, |m| Mix {
            bots: s.mix.bots,
            ..m
        });
        s.arrivals = self.arrivals.unwrap_or(s.arrivals);
        s.duration = self.duration.unwrap_or(s.duration);
        s.session = self.session.unwrap_or(s.session);
        s.seed = self.seed;
        let m = &mut s.mix;
        if let Some((share, devices, spread)) = self.multi_device {
            (m.multi_device_share, m.devices, m.device_spread) = (share, devices, spread);
        }
        m.device_spread = self.device_spread.unwrap_or(m.device_spread);
        (m.nat_share, m.nat_size) = self.nat.unwrap_or((m.nat_share, m.nat_size));
        (m.multi_address_share, m.addresses_each) = self
            .multi_address
            .unwrap_or((m.multi_address_share, m.addresses_each));
        m.attacker_share = self.attackers.unwrap_or(m.attacker_share);
        (m.tabs_share, m.tabs) = self.tabs.unwrap_or((m.tabs_share, m.tabs));
        (m.poller_share, m.poll_every) = self.app_poll.unwrap_or((m.poller_share, m.poll_every));
        m.early_share = self.early.unwrap_or(m.early_share);
        (m.abandon_share, m.patience) = self.abandon.unwrap_or((m.abandon_share, m.patience));
        m.bots = self.bots.unwrap_or(m.bots);
        s
    }
}

/// The closed loop (`run` only): the room's own controller holds a target, reading
/// the log late and writing settings that reach the edge late. Its options need
/// `--target-per-minute`, and that needs `--propagation-delay`.
#[derive(Args)]
#[command(next_help_heading = "Closed loop")]
#[group(multiple = true, requires = "target_per_minute")]
struct ControlArgs {
    /// New sessions a minute to hold (--allow-percentage is the static setting until
    /// the controller's first write lands).
    #[arg(long, value_name = "N", value_parser = number::<f64>, requires = "propagation_delay")]
    target_per_minute: Option<f64>,
    /// Seconds from a write until the edge sees it (required with --target-per-minute).
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>)]
    propagation_delay: Option<u64>,
    /// Seconds from a request until the controller reads its line.
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>, default_value_t = Control::new(0.0).log_delay)]
    log_delay: u64,
    /// Seconds between the controller's ticks.
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>, default_value_t = Control::new(0.0).tick)]
    tick: u64,
    /// At most N live sessions.
    #[arg(long, value_name = "N", value_parser = number::<u64>)]
    max_active: Option<u64>,
    /// Percentage written at the first tick, before one is computed.
    #[arg(long, value_name = "P", value_parser = percentage)]
    start: Option<Percentage>,
    /// Propagation delay the controller assumes until it measures one, seconds.
    #[arg(long, value_name = "SECONDS", value_parser = number::<u64>, default_value_t = DEFAULT_EXPECTED_PROPAGATION)]
    expected_propagation: u64,
    /// Lowest percentage written.
    #[arg(long, value_name = "P", value_parser = percentage, default_value_t = Control::new(0.0).min)]
    min: Percentage,
    /// Highest percentage written.
    #[arg(long, value_name = "P", value_parser = percentage, default_value_t = Control::new(0.0).max)]
    max: Percentage,
}

impl ControlArgs {
    /// The closed loop, when `--target-per-minute` is given.
    fn control(&self) -> Option<Control> {
        Some(Control {
            target_per_minute: self.target_per_minute?,
            propagation_delay: self.propagation_delay?,
            log_delay: self.log_delay,
            tick: self.tick,
            max_active: self.max_active,
            start: self.start,
            expected_propagation: Some(self.expected_propagation),
            min: self.min,
            max: self.max,
            origin: None,
        })
    }
}

/// The refresh modes a `--refresh` value names (clap has checked the name).
fn modes(name: &str) -> Vec<RefreshMode> {
    match name {
        "eligible" => vec![RefreshMode::Eligible],
        "fixed" => vec![RefreshMode::Fixed],
        _ => vec![RefreshMode::Eligible, RefreshMode::Fixed],
    }
}

/// Rejects scenarios the simulator cannot run meaningfully.
fn check(s: &Scenario) -> Result<(), String> {
    const DAY: u64 = 24 * 3600;
    let refuse = |bad: bool, why: &str| if bad { Err(why.to_string()) } else { Ok(()) };
    if let Some(c) = &s.control {
        if let Some(Err(e)) = s.controller() {
            return Err(format!("the controller refuses its options: {e}"));
        }
        refuse(
            c.propagation_delay > DAY
                || c.log_delay > DAY
                || c.expected_propagation.is_some_and(|e| e > DAY),
            "--propagation-delay, --log-delay and --expected-propagation are at most a day",
        )?;
    }
    let m = &s.mix;
    refuse(s.visitors == 0, "--visitors must be at least 1")?;
    refuse(s.visitors > 16_000_000, "--visitors is at most 16000000")?;
    refuse(
        s.mix.bots.addresses() > 16_000_000,
        "--bots is at most 16000000 addresses",
    )?;
    refuse(
        !(1..=7 * DAY).contains(&s.duration),
        "--duration must be 1 s to 7 days",
    )?;
    refuse(m.devices == 0, "--multi-device needs at least 1 device")?;
    refuse(m.device_spread > DAY, "--device-spread is at most a day")?;
    refuse(m.nat_size == 0, "--nat needs at least 1 person per address")?;
    refuse(
        !(1..=64).contains(&m.addresses_each),
        "--multi-address needs 1 to 64 addresses",
    )?;
    refuse(
        m.multi_device_share + m.nat_share + m.attacker_share + m.multi_address_share > 1.0,
        "the shares of --multi-device, --nat, --multi-address and --attackers exceed 1",
    )?;
    refuse(!(1..=64).contains(&m.tabs), "--tabs needs 1 to 64 tabs")?;
    let (least, most) = m.poll_every;
    refuse(
        least == 0 || least > most || most > DAY,
        "--app-poll needs 1 <= MIN <= MAX <= a day",
    )?;
    refuse(
        m.poller_share + m.early_share > 1.0,
        "the shares of --app-poll and --early exceed 1",
    )?;
    refuse(
        !(1..=MAX_DURATION).contains(&m.patience),
        "--abandon's SECONDS must be 1 s to a year",
    )
}

/// `spec` split at ':' into exactly `N` parts.
fn parts<const N: usize>(spec: &str) -> Result<[&str; N], String> {
    let parts: Vec<&str> = spec.split(':').collect();
    parts
        .try_into()
        .map_err(|_| format!("expected {N} parts separated by ':'"))
}

/// A number; `_` may group digits (`1_000_000`).
fn number<T: std::str::FromStr>(raw: &str) -> Result<T, String> {
    raw.trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{raw:?} is not a valid number"))
}

/// A share between 0 and 1.
fn fraction(raw: &str) -> Result<f64, String> {
    let value: f64 = number(raw)?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{raw:?} is not a share between 0 and 1"))
    }
}

/// A percentage of 0 to 100 with at most four decimals (`12.5`, `0.0625`).
fn percentage(raw: &str) -> Result<Percentage, String> {
    let text = raw.trim();
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len());
    let in_range = text
        .parse::<f64>()
        .is_ok_and(|v| (0.0..=100.0).contains(&v));
    match text.parse() {
        Ok(p) if in_range && decimals <= 4 && !text.starts_with('+') => Ok(p),
        _ => Err(format!(
            "{raw:?} is not a percentage from 0 to 100 with at most four decimals"
        )),
    }
}

/// A room's name: lower-case letters, digits, `_` and `-`, up to 32.
fn room_name(raw: &str) -> Result<RoomName, String> {
    RoomName::new(raw).ok_or_else(|| {
        format!("{raw:?} is not a room name: 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit")
    })
}

/// `--set KEY=VALUE` (the room checks both).
fn key_value(raw: &str) -> Result<(String, String), String> {
    let (key, value) = raw
        .split_once('=')
        .ok_or_else(|| format!("{raw:?} is not KEY=VALUE"))?;
    Ok((key.trim().to_string(), value.to_string()))
}

/// `--pop-new-sessions-per-minute`: 1 to the room's highest.
fn pop_ceiling(raw: &str) -> Result<u32, String> {
    let max = waiting_room::settings::config::MAX_POP_NEW_SESSIONS_PER_MINUTE;
    number::<u32>(raw)
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("{raw:?} is not a whole number from 1 to {max}"))
}

/// `--pop-nodes`: 1 to 1,000.
fn pop_nodes(raw: &str) -> Result<u32, String> {
    number::<u32>(raw)
        .ok()
        .filter(|n| (1..=1000).contains(n))
        .ok_or_else(|| format!("{raw:?} is not a whole number of nodes from 1 to 1000"))
}

/// `--bot-toll-bits`: 0 to the room's most ([`waiting_room::bots::toll::MAX_BITS`]).
fn toll_bits(raw: &str) -> Result<u8, String> {
    waiting_room::bots::toll::parse_bits(raw.trim()).ok_or_else(|| {
        let max = waiting_room::bots::toll::MAX_BITS;
        format!("{raw:?} is not a whole number of bits from 0 to {max}")
    })
}

/// `--origin-change FROM:FACTOR[:UNTIL]`.
fn origin_change(spec: &str) -> Result<Change, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let minute = |raw: &str| number::<u64>(raw);
    match parts.as_slice() {
        [from, factor] | [from, factor, _] => Ok(Change {
            from: minute(from)?,
            factor: number::<f64>(factor)
                .ok()
                .filter(|f| *f > 0.0 && f.is_finite())
                .ok_or(format!("{factor:?} is not a positive factor"))?,
            until: parts.get(2).map(|u| minute(u)).transpose()?,
        }),
        _ => Err(format!(
            "{spec:?}: expected FROM:FACTOR or FROM:FACTOR:UNTIL (minutes)"
        )),
    }
}

fn healthy(spec: &str) -> Result<Healthy, String> {
    spec.parse()
        .map_err(|e: control::options::BadOptions| e.to_string())
}

/// `--session N:SECONDS`.
fn session(spec: &str) -> Result<Session, String> {
    let [requests, interval] = parts(spec)?;
    let (requests, interval) = (number(requests)?, number(interval)?);
    Ok(Session { requests, interval })
}

/// `--multi-device SHARE:DEVICES:SPREAD`.
fn multi_device(spec: &str) -> Result<(f64, u32, u64), String> {
    let [share, devices, spread] = parts(spec)?;
    Ok((fraction(share)?, number(devices)?, number(spread)?))
}

/// `SHARE:N`: `--nat SHARE:SIZE`, `--tabs SHARE:N`, `--abandon SHARE:SECONDS`.
fn share_and<T: std::str::FromStr>(spec: &str) -> Result<(f64, T), String> {
    let [share, n] = parts(spec)?;
    Ok((fraction(share)?, number(n)?))
}

/// `--app-poll SHARE:MIN:MAX`.
fn app_poll(spec: &str) -> Result<(f64, (u64, u64)), String> {
    let [share, least, most] = parts(spec)?;
    Ok((fraction(share)?, (number(least)?, number(most)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_takes_grouped_digits() {
        assert_eq!(number::<u64>(" 1_000_000"), Ok(1_000_000));
        assert_eq!(number::<f64>("12.5"), Ok(12.5));
        for bad in ["", "-3", "x", "1.5", "1,2"] {
            assert!(number::<u64>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fraction_is_a_share() {
        assert_eq!(fraction("0"), Ok(0.0));
        assert_eq!(fraction("0.25"), Ok(0.25));
        assert_eq!(fraction("1"), Ok(1.0));
        for bad in ["", "-0.1", "1.01", "2", "NaN", "x"] {
            assert!(fraction(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn percentage_has_at_most_four_decimals() {
        assert_eq!(percentage("12.5"), Ok("12.5".parse().unwrap()));
        assert_eq!(percentage("0.0001"), Ok(Percentage::STEP));
        assert_eq!(percentage("100"), Ok(Percentage::whole(100)));
        for bad in ["", "100.01", "300", "-1", "+5", "0.00001", "1e1", "x"] {
            assert!(percentage(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn session_spec() {
        let expected = Session {
            requests: 2,
            interval: 30,
        };
        assert_eq!(session("2:30"), Ok(expected));
        for bad in ["", "5", "5:", ":60", "5:60:1", "-1:60", "x:60", "5:1.5"] {
            assert!(session(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn multi_device_spec() {
        assert_eq!(multi_device("0.2:4:1_0"), Ok((0.2, 4, 10)));
        for bad in ["0.1:3", "0.1:3:10:1", "1.5:3:10", "0.1:-3:10", "0.1:3:x"] {
            assert!(multi_device(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn share_and_a_number_spec() {
        assert_eq!(share_and::<u32>("0.02:20"), Ok((0.02, 20)));
        assert_eq!(share_and::<u64>("0.1:1800"), Ok((0.1, 1800)));
        for bad in ["0.1", "0.1:2:3", "2:5", "0.1:x", "0.1:-1", ":"] {
            assert!(share_and::<u32>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn app_poll_spec() {
        assert_eq!(app_poll("0.05:3:6"), Ok((0.05, (3, 6))));
        for bad in ["0.1:3", "0.1:3:6:9", "1.1:3:6", "0.1:x:6", "0.1:3:-6"] {
            assert!(app_poll(bad).is_err(), "{bad:?}");
        }
    }
}
