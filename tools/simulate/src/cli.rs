//! The command line: `run`, `plan` and `cost`, each with `--name value` options.

use std::collections::BTreeMap;
use std::path::PathBuf;

use waiting_room::config::MAX_DURATION;
use waiting_room::grid::DrawGrid;
use waiting_room::percentage::Percentage;
use waiting_room::refresh::RefreshMode;

use crate::planning::Question;
use crate::scenario::{Arrivals, Control, Mix, Scenario, Session};

/// Usage text.
pub const USAGE: &str = "\
usage:
  simulate run  [scenario options] [--refresh eligible|fixed|both] [--draw-grid address|global|both]
                [--out DIR] [--no-plots] [--quiet]
  simulate plan [scenario options, with lists for the room] [--sample N] [--out FILE]
  simulate cost [scenario options, with a list for --visitors]

scenario options (defaults for `run`):
  --visitors N              people (100000)
  --arrivals SPEC           steady:SECONDS | flash:SECONDS | waves:COUNT:EVERY:WIDTH (steady:3000)
  --duration SECONDS        virtual time simulated (3600)
  --allow-percentage P      allow_percentage, up to 4 decimals (20)   plan: a list, e.g. 0.5,1,2.5
  --wait-period SECONDS     wait_period_duration (30)        plan: a list
  --allow-timeout SECONDS   allow_period_timeout (3600)      plan: a list
  --session N:SECONDS       requests after admission, and their spacing (5:60)
  --mix NAME                the mix of people below, as a whole: plain (one device and tab
                            each, on its own address, following Refresh, never giving up),
                            devices (several devices, shared addresses, replayers only),
                            default, or heavy; the options below change it part by part
  --multi-device SHARE:DEVICES:SPREAD   people on several devices behind one address (0.1:3:10)
  --device-spread SECONDS   seconds over which a multi-device person's devices join
                            (10; overrides the SPREAD of --multi-device)
  --nat SHARE:SIZE          people behind shared addresses, and how many per address (0.02:20)
  --attackers SHARE         people who keep and replay their tokens (0.001)
  --tabs SHARE:N            devices with N tabs on the waiting page, sharing one cookie
                            jar, each following Refresh (0.3:3)
  --app-poll SHARE:MIN:MAX  devices that are apps polling every MIN..MAX s instead of
                            following Refresh (0.05:3:6)
  --early SHARE             devices whose person reloads at half the page's Refresh (0.1)
  --abandon SHARE:SECONDS   people who give up waiting, each within SECONDS of arriving
                            (0.1:1800)
  --seed N                  seed of every random choice (1)
  --draw-grid GRID          draw_grid: address (each address's own grid, the room's
                            default) or global (the VCL's slots); run: also both

closed loop (run only): the room's own controller holds a target, reading the log
late and writing settings that reach the edge late; --allow-percentage is the
static setting until its first write lands
  --target-per-minute N     new sessions a minute to hold
  --propagation-delay S     seconds from a write until the edge sees it (required)
  --log-delay S             seconds from a request until the controller reads its line (5)
  --tick S                  seconds between the controller's ticks (10)
  --max-active N            at most N live sessions
  --start P                 percentage written at the first tick, before one is computed
  --expected-propagation S  propagation delay the controller assumes until it measures one (30)
  --min P, --max P          bounds of the percentages written (0.0001, 100)
FIFO mode (run only, with the closed loop: the FIFO rule moves fifo_cutoff)
  --queueing fifo           the room in FIFO mode (queueing_method = fifo)
  --fifo-hold SECONDS       fifo_hold (300)
plan and cost default to plain visitors (one device and tab each on its own address,
following Refresh, never giving up); run, random or FIFO, to the mix above.";

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
        /// Candidate `allow_percentage` values.
        percentages: Vec<Percentage>,
        /// Candidate `wait_period_duration` values.
        wait_periods: Vec<u64>,
        /// Candidate `allow_period_timeout` values.
        allow_timeouts: Vec<u64>,
        /// Refresh mode.
        mode: RefreshMode,
        /// People actually simulated (figures are scaled up to `visitors`).
        sample: u64,
        /// Where to write the JSON table, if anywhere.
        out: Option<PathBuf>,
    },
    /// Simulate one scenario with the room in FIFO mode (see [`crate::fifo`]).
    Fifo {
        /// The scenario (its closed loop runs the FIFO rule).
        scenario: Scenario,
        /// What FIFO mode adds.
        spec: crate::fifo::FifoSpec,
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
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let command = args.next().ok_or("no command given")?;
    let mut options = Options::read(args)?;
    let parsed = match command.as_str() {
        "run" if options.0.contains_key("queueing") => fifo_run(&mut options)?,
        "run" => {
            let grids = match options.take("draw-grid").as_deref() {
                None => vec![Scenario::default().room.draw_grid],
                Some("both") => vec![DrawGrid::Address, DrawGrid::Global],
                Some(one) => vec![grid(one)?],
            };
            let mut scenario = options.scenario(Scenario::default())?;
            scenario.room.draw_grid = grids[0];
            scenario.control = options.control()?;
            check(&scenario)?;
            Command::Run {
                scenario,
                grids,
                modes: match options.take("refresh").as_deref() {
                    None | Some("both") => vec![RefreshMode::Eligible, RefreshMode::Fixed],
                    Some(one) => vec![mode(one)?],
                },
                out: PathBuf::from(options.take("out").unwrap_or_else(|| "simulation".into())),
                no_plots: options.flag("no-plots"),
                quiet: options.flag("quiet"),
            }
        }
        "plan" => {
            let defaults = Scenario {
                mix: Mix::plain(),
                ..Scenario::default()
            };
            let percentages =
                options.percentages("allow-percentage", defaults.room.allow_percentage)?;
            let wait_periods = options.list("wait-period", defaults.room.wait_period)?;
            let allow_timeouts = options.list("allow-timeout", defaults.room.allow_timeout)?;
            let scenario = options.scenario(defaults)?;
            let rooms = Question::rooms(
                &percentages,
                &wait_periods,
                &allow_timeouts,
                scenario.room.draw_grid,
            );
            for room in rooms {
                check(&Scenario { room, ..scenario })?;
            }
            Command::Plan {
                scenario,
                percentages,
                wait_periods,
                allow_timeouts,
                mode: mode(options.take("refresh").as_deref().unwrap_or("eligible"))?,
                sample: options.number("sample")?.unwrap_or(20_000),
                out: options.take("out").map(PathBuf::from),
            }
        }
        "cost" => {
            let sizes = options.list("visitors", 0)?;
            let defaults = Scenario {
                mix: Mix::plain(),
                arrivals: Arrivals::Flash { seconds: 60 },
                duration: 600,
                ..Scenario::default()
            };
            Command::Cost {
                scenario: options.scenario(defaults)?,
                sizes: if sizes == [0] {
                    vec![1_000, 10_000, 100_000, 1_000_000]
                } else {
                    sizes
                },
            }
        }
        other => return Err(format!("unknown command {other:?}")),
    };
    options.finish()?;
    Ok(parsed)
}

fn grid(name: &str) -> Result<DrawGrid, String> {
    match name {
        "address" => Ok(DrawGrid::Address),
        "global" => Ok(DrawGrid::Global),
        other => Err(format!(
            "--draw-grid {other:?}: expected address or global (run: or both)"
        )),
    }
}

/// `run --queueing fifo …`: plain visitors by default (as `plan` and `cost`).
fn fifo_run(options: &mut Options) -> Result<Command, String> {
    match options.take("queueing").as_deref() {
        Some("fifo") => {}
        other => {
            return Err(format!(
                "--queueing {other:?}: expected fifo (random is the default)"
            ));
        }
    }
    let mut spec = crate::fifo::FifoSpec::default();
    if let Some(v) = options.number("fifo-hold")? {
        spec.fifo_hold = v;
    }
    let mut scenario = options.scenario(Scenario::default())?;
    scenario.control = options.control()?;
    check(&scenario)?;
    let control = scenario
        .control
        .ok_or("--queueing fifo needs --target-per-minute and --propagation-delay")?;
    if !(1..=MAX_DURATION).contains(&spec.fifo_hold) {
        return Err("--fifo-hold must be 1 s to a year".into());
    }
    waiting_room::control::fifo::FifoController::new(crate::fifo::options(
        &control, &scenario, &spec,
    ))
    .map_err(|e| format!("the FIFO rule refuses its options: {e}"))?;
    Ok(Command::Fifo {
        scenario,
        spec,
        out: PathBuf::from(options.take("out").unwrap_or_else(|| "simulation".into())),
        no_plots: options.flag("no-plots"),
        quiet: options.flag("quiet"),
    })
}

fn mode(name: &str) -> Result<RefreshMode, String> {
    match name {
        "eligible" => Ok(RefreshMode::Eligible),
        "fixed" => Ok(RefreshMode::Fixed),
        other => Err(format!(
            "--refresh {other:?}: expected eligible, fixed or both"
        )),
    }
}

/// `--name value` pairs (and bare `--quiet`), consumed as they are read.
struct Options(BTreeMap<String, String>);

impl Options {
    fn read(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut map = BTreeMap::new();
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            let name = arg
                .strip_prefix("--")
                .ok_or(format!("expected an option, found {arg:?}"))?;
            let value = match args.peek() {
                Some(next) if !next.starts_with("--") => args.next().unwrap_or_default(),
                _ => String::new(),
            };
            if map.insert(name.to_string(), value).is_some() {
                return Err(format!("--{name} given twice"));
            }
        }
        Ok(Options(map))
    }

    fn take(&mut self, name: &str) -> Option<String> {
        self.0.remove(name)
    }

    fn flag(&mut self, name: &str) -> bool {
        self.take(name).is_some()
    }

    fn number<T: std::str::FromStr>(&mut self, name: &str) -> Result<Option<T>, String> {
        self.take(name).map(|v| number(name, &v)).transpose()
    }

    fn fraction(&mut self, name: &str) -> Result<Option<f64>, String> {
        self.take(name).map(|v| fraction(name, &v)).transpose()
    }

    /// A comma-separated list; `[default]` when absent.
    fn list<T: std::str::FromStr + Copy>(
        &mut self,
        name: &str,
        default: T,
    ) -> Result<Vec<T>, String> {
        match self.take(name) {
            None => Ok(vec![default]),
            Some(raw) => raw.split(',').map(|v| number(name, v)).collect(),
        }
    }

    /// A comma-separated list of percentages; `[default]` when absent.
    fn percentages(&mut self, name: &str, default: Percentage) -> Result<Vec<Percentage>, String> {
        match self.take(name) {
            None => Ok(vec![default]),
            Some(raw) => raw.split(',').map(|v| percentage(name, v)).collect(),
        }
    }

    fn percentage(&mut self, name: &str) -> Result<Option<Percentage>, String> {
        self.take(name).map(|v| percentage(name, &v)).transpose()
    }

    /// The closed loop, when `--target-per-minute` is given (with `--propagation-delay`).
    fn control(&mut self) -> Result<Option<Control>, String> {
        let Some(target) = self.number::<f64>("target-per-minute")? else {
            for name in CONTROL_OPTIONS {
                if self.0.contains_key(name) {
                    return Err(format!("--{name} needs --target-per-minute"));
                }
            }
            return Ok(None);
        };
        let mut control = Control::new(target);
        control.propagation_delay = self
            .number("propagation-delay")?
            .ok_or("--target-per-minute needs --propagation-delay SECONDS")?;
        if let Some(v) = self.number("log-delay")? {
            control.log_delay = v;
        }
        if let Some(v) = self.number("tick")? {
            control.tick = v;
        }
        control.max_active = self.number("max-active")?;
        control.start = self.percentage("start")?;
        if let Some(v) = self.number("expected-propagation")? {
            control.expected_propagation = Some(v);
        }
        if let Some(v) = self.percentage("min")? {
            control.min = v;
        }
        if let Some(v) = self.percentage("max")? {
            control.max = v;
        }
        Ok(Some(control))
    }

    /// `default`, with every scenario option given applied.
    fn scenario(&mut self, default: Scenario) -> Result<Scenario, String> {
        let mut s = default;
        if let Some(name) = self.take("mix") {
            s.mix = Mix::named(&name).ok_or_else(|| {
                format!("--mix {name:?}: expected plain, devices, default or heavy")
            })?;
        }
        if let Some(v) = self.number("visitors")? {
            s.visitors = v;
        }
        if let Some(spec) = self.take("arrivals") {
            s.arrivals = Arrivals::parse(&spec)?;
        }
        if let Some(v) = self.number("duration")? {
            s.duration = v;
        }
        if let Some(v) = self.percentage("allow-percentage")? {
            s.room.allow_percentage = v;
        }
        if let Some(v) = self.number("wait-period")? {
            s.room.wait_period = v;
        }
        if let Some(v) = self.number("allow-timeout")? {
            s.room.allow_timeout = v;
        }
        if let Some(spec) = self.take("session") {
            let [requests, interval] = parts::<2>("session", &spec)?;
            s.session = Session {
                requests: number("session", requests)?,
                interval: number("session", interval)?,
            };
        }
        if let Some(spec) = self.take("multi-device") {
            let [share, devices, spread] = parts::<3>("multi-device", &spec)?;
            s.mix.multi_device_share = fraction("multi-device", share)?;
            s.mix.devices = number("multi-device", devices)?;
            s.mix.device_spread = number("multi-device", spread)?;
        }
        if let Some(v) = self.number("device-spread")? {
            s.mix.device_spread = v;
        }
        if let Some(name) = self.take("draw-grid") {
            s.room.draw_grid = grid(&name)?;
        }
        if let Some(spec) = self.take("nat") {
            let [share, size] = parts::<2>("nat", &spec)?;
            s.mix.nat_share = fraction("nat", share)?;
            s.mix.nat_size = number("nat", size)?;
        }
        if let Some(share) = self.fraction("attackers")? {
            s.mix.attacker_share = share;
        }
        if let Some(spec) = self.take("tabs") {
            let [share, tabs] = parts::<2>("tabs", &spec)?;
            s.mix.tabs_share = fraction("tabs", share)?;
            s.mix.tabs = number("tabs", tabs)?;
        }
        if let Some(spec) = self.take("app-poll") {
            let [share, least, most] = parts::<3>("app-poll", &spec)?;
            s.mix.poller_share = fraction("app-poll", share)?;
            s.mix.poll_every = (number("app-poll", least)?, number("app-poll", most)?);
        }
        if let Some(share) = self.fraction("early")? {
            s.mix.early_share = share;
        }
        if let Some(spec) = self.take("abandon") {
            let [share, seconds] = parts::<2>("abandon", &spec)?;
            s.mix.abandon_share = fraction("abandon", share)?;
            s.mix.patience = number("abandon", seconds)?;
        }
        if let Some(v) = self.number("seed")? {
            s.seed = v;
        }
        check(&s)?;
        Ok(s)
    }

    fn finish(self) -> Result<(), String> {
        match self.0.keys().next() {
            None => Ok(()),
            Some(name) => Err(format!("unknown or misplaced option --{name}")),
        }
    }
}

/// The options of the closed loop, besides `--target-per-minute`.
const CONTROL_OPTIONS: [&str; 8] = [
    "propagation-delay",
    "log-delay",
    "tick",
    "max-active",
    "start",
    "expected-propagation",
    "min",
    "max",
];

/// Rejects scenarios the simulator cannot run meaningfully.
fn check(s: &Scenario) -> Result<(), String> {
    if let Some(control) = &s.control {
        waiting_room::control::Controller::new(control.options(&s.room))
            .map_err(|e| format!("the controller refuses its options: {e}"))?;
        let day = 24 * 3600;
        if control.propagation_delay > day
            || control.log_delay > day
            || control.expected_propagation.is_some_and(|e| e > day)
        {
            return Err(
                "--propagation-delay, --log-delay and --expected-propagation are at most a day"
                    .into(),
            );
        }
    }
    let shares = s.mix.multi_device_share + s.mix.nat_share + s.mix.attacker_share;
    let problems = [
        (s.visitors == 0, "--visitors must be at least 1"),
        (s.visitors > 16_000_000, "--visitors is at most 16000000"),
        (
            s.duration == 0 || s.duration > 7 * 24 * 3600,
            "--duration must be 1 s to 7 days",
        ),
        (
            !(1..=MAX_DURATION).contains(&s.room.wait_period),
            "--wait-period must be 1 s to a year (the room's own bounds)",
        ),
        (
            !(1..=MAX_DURATION).contains(&s.room.allow_timeout),
            "--allow-timeout must be 1 s to a year (the room's own bounds)",
        ),
        (s.mix.devices == 0, "--multi-device needs at least 1 device"),
        (
            s.mix.device_spread > 24 * 3600,
            "--device-spread is at most a day",
        ),
        (
            s.mix.nat_size == 0,
            "--nat needs at least 1 person per address",
        ),
        (
            shares > 1.0,
            "the shares of --multi-device, --nat and --attackers exceed 1",
        ),
        (!(1..=64).contains(&s.mix.tabs), "--tabs needs 1 to 64 tabs"),
        (
            s.mix.poll_every.0 == 0
                || s.mix.poll_every.0 > s.mix.poll_every.1
                || s.mix.poll_every.1 > 24 * 3600,
            "--app-poll needs 1 <= MIN <= MAX <= a day",
        ),
        (
            s.mix.poller_share + s.mix.early_share > 1.0,
            "the shares of --app-poll and --early exceed 1",
        ),
        (
            !(1..=MAX_DURATION).contains(&s.mix.patience),
            "--abandon's SECONDS must be 1 s to a year",
        ),
    ];
    match problems.iter().find(|(bad, _)| *bad) {
        Some((_, why)) => Err(why.to_string()),
        None => Ok(()),
    }
}

fn parts<'a, const N: usize>(name: &str, spec: &'a str) -> Result<[&'a str; N], String> {
    let parts: Vec<&str> = spec.split(':').collect();
    parts
        .try_into()
        .map_err(|_| format!("--{name} {spec:?}: expected {N} parts separated by ':'"))
}

fn number<T: std::str::FromStr>(name: &str, raw: &str) -> Result<T, String> {
    raw.trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("--{name}: {raw:?} is not a valid number"))
}

/// A percentage of 0 to 100 with at most four decimals (`12.5`, `0.0625`).
fn percentage(name: &str, raw: &str) -> Result<Percentage, String> {
    let text = raw.trim();
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len());
    let in_range = text
        .parse::<f64>()
        .is_ok_and(|v| (0.0..=100.0).contains(&v));
    match text.parse() {
        Ok(p) if in_range && decimals <= 4 && !text.starts_with('+') => Ok(p),
        _ => Err(format!(
            "--{name}: {raw:?} is not a percentage from 0 to 100 with at most four decimals"
        )),
    }
}

fn fraction(name: &str, raw: &str) -> Result<f64, String> {
    let value: f64 = number(name, raw)?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("--{name}: {raw:?} is not a share between 0 and 1"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn run_defaults_to_both_modes() {
        let Command::Run {
            scenario,
            grids,
            modes,
            out,
            no_plots,
            quiet,
        } = parse(args("run")).unwrap()
        else {
            panic!("not a run");
        };
        assert_eq!(scenario, Scenario::default());
        assert_eq!(grids, [DrawGrid::Address]);
        assert_eq!(modes, [RefreshMode::Eligible, RefreshMode::Fixed]);
        assert_eq!(
            (out, no_plots, quiet),
            (PathBuf::from("simulation"), false, false)
        );
    }

    #[test]
    fn run_reads_every_scenario_option() {
        let line = "run --visitors 1_000 --arrivals flash:5 --duration 600 --allow-percentage 30 \
                    --wait-period 20 --allow-timeout 900 --session 2:30 --multi-device 0.2:4:5 \
                    --nat 0.1:50 --attackers 0.01 --seed 9 --refresh fixed --out x --quiet \
                    --draw-grid global --no-plots --tabs 0.4:2 --app-poll 0.2:5:9 --early 0.3 \
                    --abandon 0.5:300";
        let Command::Run {
            scenario: s,
            grids,
            modes,
            no_plots,
            quiet,
            ..
        } = parse(args(line)).unwrap()
        else {
            panic!("not a run");
        };
        assert_eq!(s.visitors, 1000);
        assert_eq!(s.arrivals, Arrivals::Flash { seconds: 5 });
        assert_eq!((s.duration, s.seed), (600, 9));
        assert_eq!(
            (
                s.room.allow_percentage,
                s.room.wait_period,
                s.room.allow_timeout
            ),
            (Percentage::whole(30), 20, 900)
        );
        assert_eq!((s.session.requests, s.session.interval), (2, 30));
        assert_eq!(
            (s.mix.multi_device_share, s.mix.devices, s.mix.device_spread),
            (0.2, 4, 5)
        );
        assert_eq!(
            (s.mix.nat_share, s.mix.nat_size, s.mix.attacker_share),
            (0.1, 50, 0.01)
        );
        assert_eq!((s.mix.tabs_share, s.mix.tabs), (0.4, 2));
        assert_eq!((s.mix.poller_share, s.mix.poll_every), (0.2, (5, 9)));
        assert_eq!(s.mix.early_share, 0.3);
        assert_eq!((s.mix.abandon_share, s.mix.patience), (0.5, 300));
        assert_eq!(modes, [RefreshMode::Fixed]);
        assert_eq!(
            (grids, s.room.draw_grid),
            (vec![DrawGrid::Global], DrawGrid::Global)
        );
        assert!(quiet && no_plots);
    }

    #[test]
    fn run_takes_both_grids_and_a_device_spread() {
        let line = "run --draw-grid both --multi-device 0.2:4:5 --device-spread 120";
        let Command::Run {
            scenario, grids, ..
        } = parse(args(line)).unwrap()
        else {
            panic!("not a run");
        };
        assert_eq!(grids, [DrawGrid::Address, DrawGrid::Global]);
        assert_eq!((scenario.mix.devices, scenario.mix.device_spread), (4, 120));
        let Command::Plan { scenario, .. } =
            parse(args("plan --draw-grid global --device-spread 40")).unwrap()
        else {
            panic!("not a plan");
        };
        assert_eq!(
            (scenario.room.draw_grid, scenario.mix.device_spread),
            (DrawGrid::Global, 40)
        );
    }

    #[test]
    fn run_reads_the_closed_loop() {
        let line = "run --target-per-minute 2000 --propagation-delay 60 --start 0.5 --max 20 --allow-percentage 1.25";
        let Command::Run { scenario, .. } = parse(args(line)).unwrap() else {
            panic!("not a run");
        };
        let control = scenario.control.unwrap();
        assert_eq!(
            (
                control.target_per_minute,
                control.propagation_delay,
                control.log_delay,
                control.tick
            ),
            (2000.0, 60, 5, 10)
        );
        assert_eq!(control.start, Some("0.5".parse().unwrap()));
        assert_eq!(control.expected_propagation, Some(30));
        let line = "run --target-per-minute 2000 --propagation-delay 60 --expected-propagation 45";
        let Command::Run { scenario: s, .. } = parse(args(line)).unwrap() else {
            panic!("not a run");
        };
        assert_eq!(s.control.unwrap().expected_propagation, Some(45));
        assert_eq!(
            (control.min, control.max),
            (Percentage::STEP, Percentage::whole(20))
        );
        assert_eq!(scenario.room.allow_percentage, "1.25".parse().unwrap());
        let Command::Run { scenario, .. } = parse(args("run")).unwrap() else {
            panic!("not a run");
        };
        assert_eq!(scenario.control, None);
    }

    #[test]
    fn plan_takes_lists() {
        let line = "plan --visitors 200000 --arrivals flash:60 --allow-percentage 10,2.5 --allow-timeout 600,3600";
        let Command::Plan {
            percentages,
            wait_periods,
            allow_timeouts,
            scenario,
            ..
        } = parse(args(line)).unwrap()
        else {
            panic!("not a plan");
        };
        assert_eq!(percentages, [Percentage::whole(10), "2.5".parse().unwrap()]);
        assert_eq!(wait_periods, [30]);
        assert_eq!(allow_timeouts, [600, 3600]);
        assert_eq!(scenario.mix, Mix::plain());
    }

    #[test]
    fn a_named_mix_is_taken_whole_and_changed_part_by_part() {
        for (name, mix) in [
            ("plain", Mix::plain()),
            ("devices", Mix::devices()),
            ("default", Mix::default()),
            ("heavy", Mix::heavy()),
        ] {
            let Command::Run { scenario, .. } = parse(args(&format!("run --mix {name}"))).unwrap()
            else {
                panic!("not a run");
            };
            assert_eq!(scenario.mix, mix);
        }
        let Command::Run { scenario, .. } = parse(args("run --mix heavy --early 0")).unwrap()
        else {
            panic!("not a run");
        };
        assert_eq!(
            scenario.mix,
            Mix {
                early_share: 0.0,
                ..Mix::heavy()
            }
        );
        assert!(parse(args("run --mix crowded")).is_err());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for line in [
            "",
            "fly",
            "run --visitors",
            "run --visitors -3",
            "run --visitors 0",
            "run --arrivals flood:3",
            "run --allow-percentage 300",
            "run --nat 2:5",
            "run --multi-device 0.1:3",
            "run --tabs 0.5:0",
            "run --tabs 0.5:65",
            "run --tabs 1.5:2",
            "run --app-poll 0.1:0:5",
            "run --app-poll 0.1:9:5",
            "run --app-poll 0.6:3:6 --early 0.6",
            "run --early 2",
            "run --abandon 0.1:0",
            "run --abandon 0.1",
            "run --wait-period 0",
            "run --wait-period 31536001",
            "plan --allow-timeout 600,0",
            "run --bogus 1",
            "run --refresh sometimes",
            "run --seed 1 --seed 2",
            "run stray",
            "plan --allow-percentage 10,x",
            "plan --allow-percentage 10,101",
            "run --allow-percentage 0.00001",
            "run --allow-percentage -1",
            "run --allow-percentage 1e1",
            "run --propagation-delay 30",
            "run --target-per-minute 100",
            "run --target-per-minute 0 --propagation-delay 0",
            "run --target-per-minute 100 --propagation-delay 0 --min 20 --max 10",
            "run --target-per-minute 100 --propagation-delay 0 --start 50 --max 10",
            "run --target-per-minute 100 --propagation-delay 0 --tick 0",
            "plan --target-per-minute 100 --propagation-delay 0",
            "cost --visitors 10,,20",
            "run --multi-device 0.6:2:1 --nat 0.6:2",
            "run --draw-grid vcl",
            "plan --draw-grid both",
            "run --device-spread -1",
            "run --device-spread 100000",
        ] {
            assert!(parse(args(line)).is_err(), "{line:?}");
        }
    }
}
