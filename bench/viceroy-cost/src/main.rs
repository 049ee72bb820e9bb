//! The driver of the whole-program cost run (docs/research/viceroy-cost.md): it starts the
//! processes, sends the rounds and reads `/proc`; what it measures is `Options`' doc
//! (its `--help`), the pure parts are in `lib.rs`.
//!
//! Every request has a connection of its own; the room's log line of every request
//! of the login cases and of the room by address they are set against is read back
//! from its Viceroy's output and checked. Viceroy's epoch ticker (a thread that
//! wakes every 50 µs, busy or idle) is found in an idle second after the warm-up and
//! reported apart from the threads that serve requests.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use viceroy_cost::{
    ALLOW_PERCENTAGE, Case, Cost, LOGIN_COOKIE, PERSON, REDEEM_WINDOW, ROOM_COUNT, Stat, TOLL_BITS,
    get, login_secret_store, room_line, rooms_path, rooms_room, schedstat_ns, service_config, stat,
    summary, table, toml_entries,
};
use waiting_room::settings::layout::store_entries;

/// The signing key the room's store holds, and its id.
const KEY: &str = "cost-key-one-0123456789abcdef0123456789";
const KID: &str = "key1";
/// The room's allow period: a token with more than half of it left is kept.
const ALLOW_PERIOD: u64 = 3600;
/// The one-room service's protected path: what every request but the ten-room
/// cases' asks for.
const PATH: &str = "/events";

/// Whole-program CPU per request through Viceroy, the room's beside programs that
/// only forward.
///
/// The room (a young token, and a renewing one), the same room on the young token in
/// a service whose identity is the login (the person's JWT signed RS256, ES256 or
/// HS256), the same room in a service of ten named rooms with two bypass rules each
/// (a token of the room the request is in),
/// the room drawing a wait token due for its draw (without the bot toll, paying it,
/// and held for want of it), and a second build of the room if given, beside a
/// Compute program that only forwards and one that forwards after two HMAC-SHA256,
/// each in its own Viceroy in front of one demo origin, sent requests in turn; each
/// Viceroy's CPU time is read from /proc. Prints Markdown tables: each run's, then
/// one row a run.
/// scripts/viceroy-cost.sh builds the programs and runs this.
#[derive(Parser)]
#[command(
    name = "viceroy-cost",
    after_help = "Example, this build against an earlier one (the script builds both):
  scripts/viceroy-cost.sh --baseline 0b8f6a6 --runs 3 --rounds 2000 --warmup 200"
)]
struct Options {
    /// Runs, each with a fresh origin and fresh Viceroys.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), default_value_t = 3)]
    runs: u32,
    /// Measured rounds per run: one request to each program per round.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), default_value_t = 3000)]
    rounds: u32,
    /// Warm-up rounds per run, before the idle second and the measured rounds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), default_value_t = 300)]
    warmup: u32,
    /// Time limit for the whole invocation, in seconds: a run still going then fails.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), default_value_t = 900)]
    max_seconds: u64,
    /// The Viceroy binary ($VICEROY when set).
    #[arg(long, value_name = "PATH", default_value_os_t = std::env::var_os("VICEROY").map_or("viceroy".into(), PathBuf::from))]
    viceroy: PathBuf,
    /// The demo origin's binary.
    #[arg(long, value_name = "PATH", value_parser = existing, default_value_os_t = built("release/demo-origin"))]
    origin: PathBuf,
    /// The room's wasm.
    #[arg(long, value_name = "WASM", value_parser = existing, default_value_os_t = wasm("edge-waiting-room"))]
    room: PathBuf,
    /// A second build of the room (an earlier commit's, say), measured in the same
    /// rounds as the room, on the same two tokens.
    #[arg(long, value_name = "WASM", value_parser = existing)]
    baseline_room: Option<PathBuf>,
    /// The program that only forwards (bench/forward-only).
    #[arg(long, value_name = "WASM", value_parser = existing, default_value_os_t = wasm("forward-only"))]
    forward_only: PathBuf,
    /// The program that forwards after two HMAC-SHA256 (bench/forward-hmac).
    #[arg(long, value_name = "WASM", value_parser = existing, default_value_os_t = wasm("forward-hmac"))]
    forward_hmac: PathBuf,
}

/// `path` under the workspace's target directory ($CARGO_TARGET_DIR, else target).
fn built(path: &str) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or("target".into(), PathBuf::from)
        .join(path)
}

/// A Compute program's release wasm under the target directory.
fn wasm(name: &str) -> PathBuf {
    built(&format!("wasm32-wasip1/release/{name}.wasm"))
}

/// A program that must be there already (defaults included).
fn existing(raw: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(raw);
    path.exists()
        .then_some(path)
        .ok_or_else(|| "no such file (scripts/viceroy-cost.sh builds it)".to_string())
}

impl Options {
    /// The wasm each case runs; `None` for the baseline room's cases without one.
    fn wasm(&self, case: Case) -> Option<&Path> {
        match case {
            Case::BaselineYoung | Case::BaselineRenewing => self.baseline_room.as_deref(),
            Case::ForwardOnly => Some(&self.forward_only),
            Case::ForwardHmac => Some(&self.forward_hmac),
            // Every other case is the room's.
            _ => Some(&self.room),
        }
    }

    /// The cases of a round, in order: the baseline room's only when there is one.
    fn cases(&self) -> Vec<Case> {
        Case::ALL
            .into_iter()
            .filter(|case| self.wasm(*case).is_some())
            .collect()
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    let deadline = Instant::now() + Duration::from_secs(options.max_seconds);
    println!("{}", machine(&options));
    let mut runs = Vec::new();
    for run in 1..=options.runs {
        match measure(&options, deadline) {
            Ok(costs) => {
                println!("### Run {run} of {}\n\n{}", options.runs, table(&costs));
                runs.push(costs);
            }
            Err(message) => {
                eprintln!("viceroy-cost: run {run}: {message}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("### Every run\n\n{}", summary(&runs));
    println!("load average after: {}", loadavg());
    ExitCode::SUCCESS
}

/// The machine and the run's settings, as Markdown.
fn machine(o: &Options) -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']))
        })
        .unwrap_or("unknown");
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let viceroy = Command::new(&o.viceroy)
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string());
    let cases = o.cases();
    let names: Vec<&str> = cases.iter().map(|c| c.short()).collect();
    let mut sizes = format!("- room: {}", size(&o.room));
    if let Some(baseline) = &o.baseline_room {
        sizes += &format!("; baseline room: {}", size(baseline));
    }
    format!(
        "## Whole-program CPU per request through Viceroy\n\n\
         - machine: {cpus} CPUs ({model}), load average before: {}\n\
         - {viceroy}, one process per case, in front of one demo origin\n\
         {sizes}\n\
         - login: the room's service with identity login and one key in login_keys, on \
         the young token of {PERSON}'s uid, with their JWT signed RS256 (2048 bits), ES256 \
         or HS256 (the secret in the Secret Store) in the cookie {LOGIN_COOKIE}\n\
         - 10 rooms: the room's service with {ROOM_COUNT} named rooms of 2 bypass rules \
         each, asked for {} (room {}, the longest of the {ROOM_COUNT} nested prefixes \
         that hold it)\n\
         - draws: the room with redeem_window {REDEEM_WINDOW}, on a wait token due for its \
         draw that wins at {ALLOW_PERCENTAGE} %: bot_toll_bits 0; bot_toll_bits {TOLL_BITS} \
         with the token owing {TOLL_BITS} bits, paid (the nonce in waiting_toll) or not \
         (held)\n\
         - {} runs, each {} warm-up rounds then {} measured rounds of {} requests \
         ({}, in turn), a new connection per request\n",
        loadavg(),
        rooms_path(),
        rooms_room(),
        o.runs,
        o.warmup,
        o.rounds,
        cases.len(),
        names.join(", "),
    )
}

/// A file's size and path, for the header.
fn size(path: &Path) -> String {
    let bytes = fs::metadata(path).map_or(0, |m| m.len());
    format!("{} ({bytes} bytes)", path.display())
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A child process, killed and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process's CPU time at one moment: each thread's, and the whole process's.
#[derive(Debug)]
struct CpuSample {
    /// Thread id → nanoseconds on a CPU (schedstat).
    threads: BTreeMap<u32, u64>,
    /// The whole process's stat.
    stat: Stat,
}

impl CpuSample {
    fn schedstat_ns(&self) -> u64 {
        self.threads.values().sum()
    }

    /// Nanoseconds thread `tid` ran since `earlier`.
    fn thread_delta(&self, earlier: &CpuSample, tid: u32) -> u64 {
        let now = self.threads.get(&tid).copied().unwrap_or(0);
        now.saturating_sub(earlier.threads.get(&tid).copied().unwrap_or(0))
    }
}

fn cpu_sample(pid: u32) -> Result<CpuSample, String> {
    let tasks = format!("/proc/{pid}/task");
    let mut threads = BTreeMap::new();
    for entry in fs::read_dir(&tasks).map_err(|e| format!("{tasks}: {e}"))? {
        let entry = entry.map_err(|e| format!("{tasks}: {e}"))?;
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A thread may exit between the listing and the read: it is then left out.
        if let Ok(line) = fs::read_to_string(entry.path().join("schedstat")) {
            let ns = schedstat_ns(&line).ok_or(format!("bad schedstat {line:?}"))?;
            threads.insert(tid, ns);
        }
    }
    let line = fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("stat: {e}"))?;
    let stat = stat(&line).ok_or(format!("bad stat {line:?}"))?;
    Ok(CpuSample { threads, stat })
}

fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100)
}

fn free_addr() -> Result<SocketAddr, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))
}

fn wait_listening(proc: &mut Proc, addr: SocketAddr, what: &str, log: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = proc.0.try_wait() {
            let output = fs::read_to_string(log).unwrap_or_default();
            return Err(format!("{what} exited ({status}):\n{output}"));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("{what} not listening on {addr} after 30 s"))
}

/// The manifest of one Viceroy: backend `origin`, and the room's stores inline (JSON
/// store files would be read again on every request, a cost only Viceroy has), the
/// config store with the service room's settings and the case's own (`more`). Each
/// setting is written both where this room reads it ([`store_entries`]) and as a key
/// of its own, where a baseline room from before the settings moved reads it; and
/// the case's Secret Stores (`secrets`, TOML: the login cases').
fn manifest(origin: SocketAddr, more: &[(String, String)], secrets: &str) -> String {
    let mut flat = service_config(PATH, KID, ALLOW_PERIOD);
    flat.extend_from_slice(more);
    let mut entries: BTreeMap<String, String> = flat.iter().cloned().collect();
    entries.extend(store_entries(
        flat.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    ));
    let config = toml_entries(&entries.into_iter().collect::<Vec<_>>());
    format!(
        r#"manifest_version = 3
name = "viceroy-cost"
language = "rust"
[local_server.backends.origin]
url = "http://{origin}/"
[local_server.config_stores.waitingroom_config]
format = "inline-toml"
[local_server.config_stores.waitingroom_config.contents]
{config}[local_server.config_stores.waitingroom_signingkeys]
format = "inline-toml"
[local_server.config_stores.waitingroom_signingkeys.contents]
{KID} = "{KEY}"
[local_server.config_stores.waitingroom_pages]
format = "inline-toml"
[local_server.config_stores.waitingroom_pages.contents]
{secrets}"#
    )
}

/// A case's Viceroy: the process, its address, and its output read back when the
/// case's log lines are checked.
type Viceroy = (Case, Proc, SocketAddr, Option<LogTail>);

/// A Viceroy's output file, read as it grows: the room's log lines, one a request.
struct LogTail {
    file: fs::File,
    /// Output read but not yet taken: a partial line at most, between requests.
    pending: Vec<u8>,
}

impl LogTail {
    fn open(path: &Path) -> Result<LogTail, String> {
        let file = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(LogTail {
            file,
            pending: Vec::new(),
        })
    }

    /// The room's next log line, waiting a little for Viceroy to write it; the output
    /// that is no log line of the room's is passed over.
    fn next_line(&mut self) -> Result<String, String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                if let Some(room) = room_line(String::from_utf8_lossy(&line).trim_end()) {
                    return Ok(room.to_string());
                }
            }
            let read = self
                .file
                .read_to_end(&mut self.pending)
                .map_err(|e| format!("viceroy's output: {e}"))?;
            if read == 0 {
                if Instant::now() > deadline {
                    let rest = String::from_utf8_lossy(&self.pending);
                    return Err(format!("no log line after 5 s: {rest:?}"));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// One whole run: a fresh origin and a Viceroy per case, warm-up, measured rounds.
fn measure(o: &Options, deadline: Instant) -> Result<Vec<Cost>, String> {
    let dir = std::env::temp_dir().join(format!("viceroy-cost-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = measure_in(o, deadline, &dir);
    if result.is_ok() {
        let _ = fs::remove_dir_all(&dir);
    } else {
        eprintln!("viceroy-cost: the logs are in {}", dir.display());
    }
    result
}

fn measure_in(o: &Options, deadline: Instant, dir: &Path) -> Result<Vec<Cost>, String> {
    let log_file = |name: &str| {
        fs::File::create(dir.join(name)).map_err(|e| format!("{}: {e}", dir.display()))
    };
    let origin_addr = free_addr()?;
    let origin_log = dir.join("origin.log");
    let mut origin = Proc(
        Command::new(&o.origin)
            .arg(origin_addr.to_string())
            .stdout(Stdio::from(log_file("origin.log")?))
            .stderr(Stdio::from(log_file("origin.err")?))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", o.origin.display()))?,
    );
    wait_listening(&mut origin, origin_addr, "the demo origin", &origin_log)?;

    let mut viceroys = Vec::new();
    for case in o.cases() {
        let wasm = o.wasm(case).expect("a case with a program");
        let toml = dir.join(format!("fastly-{}.toml", viceroys.len() + 1));
        let secrets = match case.login_key() {
            Some(_) => login_secret_store(),
            None => String::new(),
        };
        fs::write(
            &toml,
            manifest(origin_addr, &case.store(KID, ALLOW_PERIOD), &secrets),
        )
        .map_err(|e| format!("{}: {e}", toml.display()))?;
        let addr = free_addr()?;
        let log_name = format!("viceroy-{}.log", viceroys.len() + 1);
        let log = log_file(&log_name)?;
        let child = Command::new(&o.viceroy)
            .arg("serve")
            .arg("-C")
            .arg(&toml)
            .arg("--addr")
            .arg(addr.to_string())
            .arg(wasm)
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", o.viceroy.display()))?;
        let mut proc = Proc(child);
        wait_listening(&mut proc, addr, "viceroy", &dir.join(&log_name))?;
        let tail = match case.log_uid() {
            Some(_) => Some(LogTail::open(&dir.join(&log_name))?),
            None => None,
        };
        viceroys.push((case, proc, addr, tail));
    }

    // The tokens are minted now; the run lasts minutes, far less than what would
    // move any across half the allow period, or the draws' wait token out of its
    // redeem window (a day). Each baseline gets the same request as the room case it
    // is set against; the ten-room cases, their room's path and tokens of their room.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let requests: Vec<(String, String)> = o
        .cases()
        .into_iter()
        .map(|case| (case.path(PATH), case.cookie(KEY, KID, now, ALLOW_PERIOD)))
        .collect();

    let round = |viceroys: &mut [Viceroy]| -> Result<(), String> {
        for ((case, _, addr, tail), (path, cookie)) in viceroys.iter_mut().zip(&requests) {
            let resp = get(*addr, path, cookie)?;
            case.check(&resp)?;
            if let Some(tail) = tail {
                case.check_log(&tail.next_line()?)?;
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "out of time (--max-seconds {}): fewer rounds?",
                o.max_seconds
            ));
        }
        Ok(())
    };
    let samples = |viceroys: &[Viceroy]| {
        viceroys
            .iter()
            .map(|(_, p, _, _)| cpu_sample(p.0.id()))
            .collect::<Result<Vec<_>, _>>()
    };
    for _ in 0..o.warmup {
        round(&mut viceroys)?;
    }
    // An idle second: the one thread that still runs is the epoch ticker.
    let idle_start = samples(&viceroys)?;
    std::thread::sleep(IDLE);
    let idle_end = samples(&viceroys)?;
    let tickers = idle_start
        .iter()
        .zip(&idle_end)
        .map(|(before, after)| ticker(before, after))
        .collect::<Result<Vec<_>, _>>()?;

    let before = samples(&viceroys)?;
    for _ in 0..o.rounds {
        round(&mut viceroys)?;
    }
    let after = samples(&viceroys)?;

    let ns_per_tick = 1_000_000_000 / clock_ticks_per_second();
    let mut costs = Vec::new();
    for (i, (case, _, _, _)) in viceroys.iter().enumerate() {
        let (b, a) = (&before[i], &after[i]);
        // A thread that ran during the rounds and exited took its schedstat with it:
        // then only the stat figure (which keeps it) is whole.
        if !b.threads.keys().all(|tid| a.threads.contains_key(tid)) {
            eprintln!(
                "viceroy-cost: {}: threads exited during the rounds ({:?} → {:?}); \
                 trust the stat columns",
                case.name(),
                b.threads.keys(),
                a.threads.keys()
            );
        }
        costs.push(Cost {
            case: *case,
            requests: u64::from(o.rounds),
            schedstat_ns: a.schedstat_ns().saturating_sub(b.schedstat_ns()),
            ticker_ns: a.thread_delta(b, tickers[i]),
            user_ns: a.stat.utime.saturating_sub(b.stat.utime) * ns_per_tick,
            system_ns: a.stat.stime.saturating_sub(b.stat.stime) * ns_per_tick,
            minor_faults: a.stat.minflt.saturating_sub(b.stat.minflt),
        });
    }
    Ok(costs)
}

/// How long the idle window that finds each Viceroy's epoch ticker lasts.
const IDLE: Duration = Duration::from_secs(1);

/// The epoch ticker: the thread that ran most while no request was in flight; it
/// must have run at least 1 % of the time, and every other thread together less
/// than a tenth of it.
fn ticker(before: &CpuSample, after: &CpuSample) -> Result<u32, String> {
    let (tid, ran) = after
        .threads
        .keys()
        .map(|tid| (*tid, after.thread_delta(before, *tid)))
        .max_by_key(|(_, ran)| *ran)
        .ok_or("a Viceroy without threads")?;
    let others = after
        .schedstat_ns()
        .saturating_sub(before.schedstat_ns())
        .saturating_sub(ran);
    let idle_ns = IDLE.as_nanos() as u64;
    if ran < idle_ns / 100 || others > ran / 10 {
        return Err(format!(
            "no epoch ticker found: in an idle {IDLE:?}, the busiest thread ran {ran} ns, \
             the others {others} ns"
        ));
    }
    Ok(tid)
}
