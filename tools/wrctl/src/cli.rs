//! The command line: `wrctl control` and its options (their names are a contract).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};
use control::fifo_rule::FifoOptions;
use control::options::Options;
use waiting_room::settings::config::{MAX_DURATION, Settings};
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::room::RoomName;

use crate::fastly_api::TOKEN_VAR;
use crate::server::LOG_SECRET_VAR;
use crate::sink::FASTLY_API;

/// The waiting room's operator tool.
#[derive(Debug, Parser)]
#[command(name = "wrctl", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Hold a target of new sessions a minute: read the room's log, write
    /// allow_percentage and the controller heartbeat to its config store.
    #[command(
        long_about = "Hold a target of new sessions a minute: read the room's log lines (stdin, \
and with --listen also HTTP POSTs from Fastly's HTTPS logging endpoint), decide the \
allow_percentage that admits the target from the crowd the log shows, and write it with \
the controller heartbeat to the room's config store: a Viceroy JSON file (--config-file), \
a Fastly config store through the Fastly API (--fastly-store-id, token in the environment \
variable FASTLY_API_TOKEN), or nowhere (--dry-run): exactly one of the three.

With --queueing fifo (a room whose queueing_method is fifo) it writes fifo_cutoff, \
fifo_rate and the heartbeat instead, in one batch: each tick the cutoff passes as many \
waiting places as the target allows for the next tick.

At most one write each --tick seconds: when the percentage (or the cutoff) changes, or \
when the heartbeat is due (--heartbeat-every). A failed write is retried after one tick, then after twice as \
long each time, up to 300 s (through the Fastly API, a 429 or a 5xx may hold it longer: \
see --api-budget). Each write prints one line on stderr unless --quiet.

One process holds every room of a service: --room NAME (repeatable, with the room's own \
settings after a colon) routes each log line to its room by its room= field, runs one \
controller per room, and writes all the rooms' keys of a tick in one update: one PATCH to \
the Fastly API, or one atomic replace of the file. Why one process, and per-room specs \
rather than one set of flags per room: the Fastly API allows about 1,000 modifying \
requests an hour per user, and a controller per room (120 to 360 updates an hour each) \
passes it at three busy rooms, while one writer's updates stay within --api-budget (500 \
an hour by default) whatever the number of rooms; the log is read once; and a room's spec \
keeps what differs in that room together, in the flags' own names, with every other \
setting shared.

When stdin ends without --listen, the controller ticks (and maybe writes) once more and \
exits 0; with --listen it keeps running on what the HTTP endpoint receives.",
        after_long_help = "Examples:
  # A local room in Viceroy, its config store in ./config.json:
  viceroy serve -C fastly.toml bin/main.wasm | \\
    wrctl control --target-per-minute 600 --config-file config.json --tick 5

  # A Fastly service, log lines from `fastly log-tail`:
  export FASTLY_API_TOKEN=...   # never on the command line
  fastly log-tail --service-id SERVICE | \\
    wrctl control --target-per-minute 3000 --max-active 20000 --fastly-store-id STORE_ID

  # Fastly's HTTPS logging endpoint posting to the controller (its header carries
  # Authorization: Bearer $WRCTL_LOG_SECRET), the dashboard and metrics on loopback:
  export WRCTL_LOG_SECRET=...   # without it, a public --listen is refused
  wrctl control --target-per-minute 3000 --fastly-store-id STORE_ID \\
    --listen 0.0.0.0:8080 --state-listen 127.0.0.1:7677 --service-id SERVICE < /dev/null

  # Watch what it would do:
  wrctl control --target-per-minute 600 --dry-run --listen 127.0.0.1:8080 < recorded.log

  # A FIFO room (queueing_method = fifo): move fifo_cutoff instead of the percentage:
  viceroy serve -C fastly.toml bin/main.wasm | \\
    wrctl control --queueing fifo --target-per-minute 600 --config-file config.json

  # Three rooms of one service, one writer: the service room at 600 a minute, drops in
  # FIFO mode at 300 (1,200 during its event drop-1), vip at 100; one PATCH a tick
  # (WRCTL_LOG_SECRET set as above):
  wrctl control --target-per-minute 600 --service-room \\
    --room drops:target=300,queueing=fifo,event.drop-1=1200 --room vip:target=100 \\
    --fastly-store-id STORE_ID --listen 0.0.0.0:8080 --service-id SERVICE < /dev/null"
    )]
    Control(Box<ControlArgs>),
    /// Print a new random signing key on stdout, and how to store it in Fastly on stderr.
    #[command(
        long_about = "Print a new signing key on stdout: --bytes random bytes from the operating \
system's CSPRNG, in standard base64 (the room's HMAC key is that text). Nothing else goes to \
stdout, and no newline unless stdout is a terminal, so `wrctl keygen > FILE` captures exactly \
the key. On stderr: the fastly commands that store it from that file (secret store \
waitingroom_signingkeys, or the config store of that name as the fallback), never with the key \
on a command line. Under 32 bytes is refused (exit 2) unless --allow-weak.",
        after_long_help = "Example:
  wrctl keygen --kid key2 > key2.key
  fastly secret-store-entry create --store-id=<SECRET_STORE_ID> --name=key2 --stdin < key2.key
  rm key2.key"
    )]
    Keygen(crate::keygen_cmd::KeygenArgs),
    /// Inspect or mint waiting-room tokens.
    #[command(
        subcommand,
        after_long_help = "Example:
  wrctl token inspect 'Cookie: waiting_room=ZGVj…' --keys local/signingkeys.json --uid 127.0.0.1
  wrctl token mint --keys local/signingkeys.json --kid key1 --dec allow --exp +600 --uid 127.0.0.1"
    )]
    Token(crate::token_cmd::TokenCommand),
    /// Identity from the site's login: login_keys from a provider's JWKS, test login tokens.
    #[command(subcommand)]
    Login(crate::login_cmd::LoginCommand),
    /// Add a new signing key and switch active_key to it; say when the old key can go.
    #[command(
        long_about = "Add a new strong key (generated here, never printed) to the key store and \
switch the room's active_key to it, then print when the old key can be deleted: after \
allow_period_timeout + 3 x wait_period_duration (read from the config; longer if redeem_window \
is over one wait period, or while FIFO places are held: in a pre-queue, until the line \
opens plus fifo_hold), as a UTC time and a duration. The key is stored before the switch, \
so the room never names a key it lacks. Give either --keys and --config, or both Fastly \
stores.

Local JSON stores (--keys, --config): each file is replaced atomically (a temporary file \
renamed over it), every other entry kept.

Fastly (--fastly-config-store, --fastly-secret-store, token in FASTLY_API_TOKEN only): the \
config store's items are read (GET /resources/stores/config/ID/items), the key is created in \
the secret store (POST /resources/stores/secret/ID/secrets, its value base64-encoded as the \
API requires; an existing name is refused), and active_key is upserted (PATCH \
/resources/stores/config/ID/items, as `wrctl control` writes). --kid is required there. For a \
room that reads its keys from a config store instead, use `wrctl keygen` and the commands it \
prints.",
        after_long_help = "Example:
  wrctl rotate --keys local/signingkeys.json --config local/config.json
  export FASTLY_API_TOKEN=...   # never on the command line
  wrctl rotate --kid key3 --fastly-config-store CONFIG_STORE_ID --fastly-secret-store SECRET_STORE_ID"
    )]
    Rotate(crate::rotate_cmd::RotateArgs),
    /// Remove a key from the key store, a JSON file or Fastly's (never the active one).
    #[command(
        long_about = "Remove key KID from the key store: a JSON file (atomic replace, other keys \
kept) or, with --fastly-config-store and --fastly-secret-store, Fastly's stores through the API. \
The key the config's active_key names is refused (exit 1: rotate first), and so is a key the \
file does not hold. Revoke a rotated-out key only after the time `wrctl rotate` printed: \
tokens it signed are rejected as unknown-key from then on.",
        after_long_help = "Example:
  wrctl revoke key1 --keys local/signingkeys.json --config local/config.json"
    )]
    Revoke(crate::revoke_cmd::RevokeArgs),
    /// Check, encode and preview waiting-room pages for the page store.
    #[command(subcommand)]
    Pages(crate::pages_cmd::PagesCommand),
    /// Check a config store: effective settings, fallbacks, surprising combinations.
    #[command(subcommand)]
    Config(crate::config_cmd::ConfigCommand),
    /// List the rooms of a config store, and which room each URL falls in.
    #[command(
        long_about = "Read a waitingroom_config store from CONFIG (as `wrctl config check` \
does) and list its rooms: the service room (its keys) and the named rooms of the `rooms` \
index, with their hosts and paths. For each URL given, say which room the edge puts it in \
now (the most specific prefix wins), whether that room is on, and the event running in it. \
Exit status 1 when the index has entries the room ignores.",
        after_long_help = "Example:\n  wrctl rooms local/config.json https://shop.example/drops/1 /checkout"
    )]
    Rooms(crate::rooms_cmd::RoomsArgs),
    /// Mint signed passes for staff, partners and monitoring.
    #[command(subcommand)]
    Pass(crate::pass_cmd::PassCommand),
    /// Write a report of an event from its saved log: one HTML file of plots and tables.
    #[command(
        long_about = "Write a report of an event from its saved log, after the controller has \
gone: the log's lines are replayed through the controller's own code (the rules, the alert \
table) on the log's own clock, ticking every --tick seconds of it, with the options the \
controller ran with (after --). The report is one self-contained HTML file (--out): for each \
room, a minute at a time, the new sessions against the target, the people waiting, the \
waits of the people admitted (median, 90th and 99th percentiles, from each address's first \
waiting line to its new session), the allow_percentage (or the FIFO cutoff) in effect at the \
edge, and with --origin-healthy the origin's p95 against its bound, as plots and as a table \
of the same figures; then every alert the controller raised on a timeline, and a table of \
them. A replay writes nothing and listens nowhere; it cannot know whether writes failed or \
were throttled.",
        after_long_help = "Example:
  # The demo's log (Viceroy's output), as its controller held it:
  wrctl report target/demo/room.log --out report.html -- \\
    --target-per-minute 30 --wait-period 10 --max 50 --start 1"
    )]
    Report(ReportArgs),
}

/// The options of `wrctl report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The saved log: the room's lines as the controller read them (`-`: stdin).
    #[arg(
        value_name = "LOG",
        long_help = "The saved log: the room's log lines, as `wrctl control` read them (Viceroy's \
output, `fastly log-tail`, the lines a log endpoint stored), in the order written; other \
programs' lines are counted and skipped. `-` reads stdin.\nExample: demo.log"
    )]
    pub log: PathBuf,

    /// Where the report goes: one HTML file.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "report.html",
        long_help = "Where the report goes: one self-contained HTML file (its figures inline \
SVG, no script, nothing fetched), replaced if it exists.\nExample: --out event.html"
    )]
    pub out: PathBuf,

    /// The report's title.
    #[arg(
        long,
        value_name = "TEXT",
        default_value = "The event, minute by minute"
    )]
    pub title: String,

    /// After `--`: the options `wrctl control` ran with.
    #[arg(
        last = true,
        required = true,
        value_name = "CONTROL_OPTIONS",
        long_help = "After `--`: the options `wrctl control` ran with, as they were (its target, \
--wait-period, --queueing, --origin-healthy, --room, …), so that the replay holds what the \
controller held. Its sink and listener options are read and left unused: the replay writes \
nothing and listens nowhere.\nExample: -- --target-per-minute 600 --wait-period 30"
    )]
    pub controller: Vec<String>,
}

/// The options of `wrctl control`.
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("sink")
        .required(true)
        .multiple(false)
        .args(["config_file", "fastly_store_id", "dry_run"])
))]
pub struct ControlArgs {
    /// New sessions a minute to hold (required, unless every --room sets target=).
    #[arg(
        long,
        value_name = "N",
        value_parser = positive_number,
        long_help = "New sessions a minute to hold: visitors admitted from the waiting room \
(lottery wins) plus visitors let straight in while the room is open. Required, unless every \
--room sets its own target=; with several rooms, the target of each that does not. Not a \
positive number: usage error.\n\
Example: --target-per-minute 600"
    )]
    pub target_per_minute: Option<f64>,

    /// The room's queueing_method: which key the controller holds the target with.
    #[arg(
        long,
        value_name = "MODE",
        default_value = "random",
        value_parser = ["random", "fifo"],
        long_help = "The room's queueing_method, and so what the controller writes: random \
(the lottery: allow_percentage) or fifo (first in, first out: fifo_cutoff and fifo_rate, \
with the heartbeat in the same batch). Chosen here, never guessed from the log: the keys \
written are the operator's call; a line of the other mode is warned about once on stderr.\n\
Example: --queueing fifo"
    )]
    pub queueing: String,

    /// The room's fifo_hold, seconds (FIFO mode).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = Settings::default().fifo_hold,
        value_parser = clap::value_parser!(u64).range(1..=MAX_DURATION),
        long_help = "The room's fifo_hold in seconds, 1 to 31536000 (FIFO mode): a waiting page comes back \
every min(--wait-period, fifo_hold / 3) seconds, which the controller waits for before it \
counts a passed place as abandoned.\nExample: --fifo-hold 300"
    )]
    pub fifo_hold: u64,

    /// At most this many live sessions (addresses with a live allow token).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..),
        long_help = "At most this many live sessions (addresses holding a live allow token): \
new sessions are capped at the free places. Unset: no cap.\nExample: --max-active 20000"
    )]
    pub max_active: Option<u64>,

    /// Lowest percentage ever written.
    #[arg(
        long,
        value_name = "P",
        default_value = "0.0001",
        value_parser = percentage,
        long_help = "Lowest allow_percentage ever written, 0 to 100 with up to 4 decimals. \
0 is refused (it closes the room: a human decision, never the controller's), and so is a \
value above --max; with --queueing fifo it is refused unless left at its default.\n\
Example: --min 0.01"
    )]
    pub min: Percentage,

    /// Highest percentage ever written.
    #[arg(
        long,
        value_name = "P",
        default_value = "100",
        value_parser = percentage,
        long_help = "Highest allow_percentage ever written, 0 to 100 with up to 4 decimals: \
choose one your origin survives. With --queueing fifo it is refused unless left at its \
default.\nExample: --max 50"
    )]
    pub max: Percentage,

    /// Seconds between two ticks (at most one write each).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=3600),
        long_help = "Seconds between two ticks of the wall clock, 1 to 3600; each tick writes at most \
once (one update, every room's items in it). With --fastly-store-id it is raised to the \
least spacing of --api-budget (8 s at 500), and stderr says so.\nExample: --tick 5"
    )]
    pub tick: u64,

    /// Seconds after which the heartbeat is written even if nothing changed.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..),
        long_help = "Seconds after which controller_heartbeat is written even when the \
percentage has not changed. Keep it well under the room's controller_timeout (default \
120 s), counting a tick and the config store's propagation delay: when the edge sees \
the heartbeat older than controller_timeout, it falls back to allow_percentage_fallback. \
--heartbeat-every plus --tick at or above 120 s (or the --config-file's \
controller_timeout) is warned about.\n\
Example: --heartbeat-every 30"
    )]
    pub heartbeat_every: u64,

    /// Stop writing (heartbeat included) after this long without a log line; 0: never.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = control::options::DEFAULT_LOG_SILENCE,
        long_help = "Seconds without a single room log line after which the controller \
stops writing, heartbeat included, until lines come again: the edge then sees its \
heartbeat go stale and uses allow_percentage_fallback (with ALERT=controller-stale on \
every line), instead of a percentage held by a controller that can no longer see the \
room. Make it longer than the quietest stretch the site has; 0 never stops.\n\
Example: --log-silence 300"
    )]
    pub log_silence: u64,

    /// The room's wait_period_duration, seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = Settings::default().wait_period_duration,
        value_parser = clap::value_parser!(u64).range(1..=MAX_DURATION),
        long_help = "The room's wait_period_duration in seconds, 1 to 31536000: visitors draw once every \
two of these. A value other than the --config-file's is warned about; against a live room \
on another wait period, the controller can only forecast from the draw period's average.\n\
Example: --wait-period 30"
    )]
    pub wait_period: u64,

    /// The room's redeem_window, seconds (default: one wait period).
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(0..=MAX_DURATION),
        long_help = "The room's redeem_window in seconds, 0 to 31536000: how long after its expiry a wait \
token still counts as waiting. Default: one wait period, as the room's own default. \
Refused with --queueing fifo.\n\
Example: --redeem-window 60"
    )]
    pub redeem_window: Option<u64>,

    /// Seconds a write takes to reach the edge, until the controller has measured it.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = control::options::DEFAULT_EXPECTED_PROPAGATION,
        value_parser = clap::value_parser!(u64).range(0..=MAX_DURATION),
        long_help = "Seconds (0 to 31536000) a write to the config store takes to reach the edge, taken \
until the controller has measured it (from a write of its own to the first log line \
showing it in effect): it aims its first computed writes at the draws they will meet. \
0: none.\nExample: --expected-propagation 30"
    )]
    pub expected_propagation: u64,

    /// Follow the origin's health: what healthy means (p95<TIME,errors<SHARE%).
    #[arg(
        long,
        value_name = "SPEC",
        value_parser = origin_healthy,
        requires_all = ["origin_floor", "origin_ceiling"],
        help_heading = "Origin",
        long_help = "The target follows the origin's health instead of staying where --target-per-minute puts it (it is then where the target starts): every half window the controller reads, from the room's log lines (origin_ms=, origin_status=, origin_error=), the origin's p95 and error share over the window, cuts the target to --origin-floor while either is over its bound (the places of the sessions that end are refilled only once the origin is healthy again), raises it while the origin shows no queueing and people wait, and otherwise holds the live sessions (let in over the last --session-length) at those that would put the origin's p95 at 80 % of the bound: the target fills the places free under that limit and replaces the sessions that end. Terms: p95<TIME (ms or s, required), errors<SHARE% (default 1%), window=SECONDS (10 s to 600 s, default 60s). A term that does not parse: usage error.
Example: --origin-healthy 'p95<800ms,errors<1%'"
    )]
    pub origin_healthy: Option<control::origin_rule::Healthy>,

    /// New sessions a minute the origin rule never cuts below.
    #[arg(
        long,
        value_name = "N",
        value_parser = positive_number,
        requires = "origin_healthy",
        help_heading = "Origin",
        long_help = "New sessions a minute the origin rule never cuts below, however slow the origin: the queue keeps moving. At the floor and still unhealthy after twice --session-length, the state is origin-slow (an alert on the dashboard and in /metrics).
Example: --origin-floor 30"
    )]
    pub origin_floor: Option<f64>,

    /// New sessions a minute the origin rule never exceeds.
    #[arg(
        long,
        value_name = "N",
        value_parser = positive_number,
        requires = "origin_healthy",
        help_heading = "Origin",
        long_help = "New sessions a minute the origin rule never exceeds, however healthy the origin: what the rest of the site (payment, stock) can take. An --event-target during its event is the ceiling instead. Below --origin-floor: usage error.
Example: --origin-ceiling 3000"
    )]
    pub origin_ceiling: Option<f64>,

    /// Seconds a session keeps making requests, about (the origin rule).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 600,
        value_parser = clap::value_parser!(u64).range(60..=3600),
        requires = "origin_healthy",
        help_heading = "Origin",
        long_help = "Seconds a visitor keeps browsing once let in, about, 60 to 3600: the new sessions of this span are the live sessions loading the origin, the ones the origin rule limits, and an origin still unhealthy at the floor after twice it is slow for reasons admissions do not cause.
Example: --session-length 600"
    )]
    pub session_length: u64,

    /// Percentage written at the first tick, before the log shows a crowd.
    #[arg(
        long,
        value_name = "P",
        value_parser = percentage,
        long_help = "allow_percentage written at the first tick, before the controller has \
seen a draw period of log (2 x --wait-period); until then a computed percentage is \
written only when lower than the one in effect. Within --min..--max. Unset: only the \
heartbeat, and such lower percentages, are written until then. Refused with --queueing \
fifo.\nExample: --start 100"
    )]
    pub start: Option<Percentage>,

    /// Write to this Viceroy JSON config-store file.
    #[arg(
        long,
        value_name = "PATH",
        long_help = "Write to this Viceroy JSON config-store file (the file a local room's \
fastly.toml names for waitingroom_config): each write reads it, sets allow_percentage (in \
FIFO mode fifo_cutoff and fifo_rate) and controller_heartbeat, keeps every other key, and replaces it atomically (a temporary file \
in the same directory renamed over it). It must exist and hold a JSON object at start \
(else exit 1); its wait_period_duration, controller_timeout, queueing_method and fifo_hold \
are checked against the flags (warnings), for a named room in the room's value.\n\
Example: --config-file ./config.json"
    )]
    pub config_file: Option<PathBuf>,

    /// Write to this Fastly config store through the Fastly API.
    #[arg(
        long,
        value_name = "ID",
        value_parser = store_id,
        long_help = "Write to the Fastly config store with this ID through the Fastly API: \
one PATCH /resources/stores/config/ID/items an update (header Fastly-Key), upserting the \
keys of every room held, paced by --api-budget. The API token is read from the environment \
variable FASTLY_API_TOKEN only (never a flag or a file), and never printed; missing, empty \
or with spaces: usage error.\nExample: FASTLY_API_TOKEN=... wrctl control --fastly-store-id 7Jx2abcDEF ..."
    )]
    pub fastly_store_id: Option<String>,

    /// The Fastly API's address.
    #[arg(
        long,
        value_name = "URL",
        default_value = FASTLY_API,
        value_parser = api_url,
        long_help = "The Fastly API's address (for tests against a local stand-in). Warned \
about without --fastly-store-id.\n\
Example: --fastly-api-url http://127.0.0.1:9000"
    )]
    pub fastly_api_url: String,

    /// Compute and print what would be written; write nothing.
    #[arg(
        long,
        long_help = "Compute and print what would be written, and write nothing; the \
controller carries on as if every write had succeeded. Cannot be combined with \
--config-file or --fastly-store-id.\nExample: --dry-run"
    )]
    pub dry_run: bool,

    /// Also serve HTTP here: log POSTs, challenge, metrics, status and dashboard.
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = listen_addr,
        long_help = "Also serve HTTP on this address: POST / or /logs takes newline-separated \
log lines (Fastly's HTTPS logging endpoint; Content-Encoding gzip accepted); GET \
/.well-known/fastly/logging/challenge answers Fastly's ownership check; GET /metrics \
(Prometheus), GET /status.json, GET / and /dashboard (the dashboard page). Port 0 picks a \
free port; the address is printed on stderr at start. With the environment variable \
WRCTL_LOG_SECRET set, log POSTs must carry Authorization: Bearer <secret> (set the same as \
the Fastly log endpoint's custom header), others get 401; set but empty: usage error. An \
address that cannot be bound: exit 1.\nExample: --listen 127.0.0.1:8080"
    )]
    pub listen: Option<SocketAddr>,

    /// Serve the dashboard, /metrics and /status.json here instead of on --listen.
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = listen_addr,
        requires = "listen",
        long_help = "Serve the dashboard (GET / and /dashboard), GET /metrics and GET \
/status.json on this address, and no longer on --listen, which then takes only the log \
POSTs and Fastly's challenge: the log endpoint can face the edge while the controller's \
state stays on loopback (or a private network) for the operators and Prometheus. Port 0 \
picks a free port; the address is printed on stderr at start (`serving the dashboard and \
metrics on http://ADDR`). Needs --listen. An address that cannot be bound: exit 1.\n\
Example: --listen 0.0.0.0:8080 --state-listen 127.0.0.1:7677"
    )]
    pub state_listen: Option<SocketAddr>,

    /// Take log POSTs without WRCTL_LOG_SECRET on a non-loopback --listen, writing to Fastly.
    #[arg(
        long,
        long_help = "Accept the risk of taking log lines from anyone who can reach --listen: \
without it, --fastly-store-id with --listen on an address other than loopback and no \
WRCTL_LOG_SECRET is a usage error, because whoever can post lines steers the controller \
(a forged crowd cuts admissions, forged losses open the room up to --max). With it the \
controller starts, says so on stderr every minute, and its metrics carry \
wrctl_alert{alert=\"unauthenticated-logs\"} 1. Ignored, with a warning, where there is \
no risk to accept (WRCTL_LOG_SECRET set, --listen on loopback, or no --fastly-store-id).\n\
Example: --accept-unauthenticated-logs"
    )]
    pub accept_unauthenticated_logs: bool,

    /// A Fastly service ID allowed to post logs (repeatable).
    #[arg(
        long = "service-id",
        value_name = "ID",
        value_parser = service_id,
        long_help = "A Fastly service ID that may post logs here: the challenge path lists \
the SHA-256 of each (repeat the option for several). Without it, the challenge answers `*` \
(any service). Warned about without --listen.\nExample: --service-id SU1Z0isxPaozGVKXdv0eY --service-id 6M9tYhfjNU3KrQ0kQ3T4"
    )]
    pub service_ids: Vec<String>,

    /// Largest POST body taken, bytes.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 100 * 1024 * 1024,
        value_parser = clap::value_parser!(u64).range(1..=(1 << 32)),
        long_help = "Largest POST body taken, in bytes, 1 to 2^32 (after gzip decoding too); a larger \
one is answered 413 and none of it counted.\nExample: --max-body-bytes 10485760"
    )]
    pub max_body_bytes: u64,

    /// Seconds a client may take to send its request head (and between two
    /// pieces of a body).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=3600),
        long_help = "Seconds (1 to 3600) an HTTP client may take to send its request head, and to send \
the next piece of a body; a slower client is cut off (so silent or trickling clients cannot \
hold the listener's 128 connections). A connection lives at most ten times this.\n\
Example: --http-timeout 10"
    )]
    pub http_timeout: u64,

    /// Print only failures and the start-up lines.
    #[arg(
        long,
        long_help = "Print nothing per write: only failures, warnings and the start-up \
lines.\nExample: --quiet"
    )]
    pub quiet: bool,

    /// A named room to hold, with its own settings (repeatable; default: the service room).
    #[arg(
        long,
        value_name = "NAME[:KEY=VALUE,...]",
        value_parser = RoomSpec::parse,
        long_help = "Hold this named room (of the `rooms` index): its log lines (room=NAME) \
go to its own controller, and its keys are written as room.NAME.allow_percentage, \
room.NAME.controller_heartbeat, room.NAME.fifo_cutoff, room.NAME.fifo_rate. Repeat it for \
every room of the service: one process holds them all, each with its own rule and state, \
and writes all their keys of a tick in one update (one PATCH, or one file write). Without \
--room, the service room (lines without room=, its own keys); with --room, add \
--service-room to hold it too. Its metrics carry the label room=\"NAME\", and its dashboard \
page (?room=NAME) and status.json (\"room\") name it.\n\
After a colon, the room's own settings, comma-separated, named as the flags they override \
(every other setting is the flag's): target (or target-per-minute), queueing, max-active, \
min, max, start, wait-period, redeem-window, fifo-hold, expected-propagation, origin-floor, \
origin-ceiling, and event.NAME=N (as --event-target NAME=N, for this room). Rooms whose targets \
follow the origin (--origin-healthy) read every room's origin answers, the origin's health \
being all of theirs, and share its load at the aim in proportion to their origin ceilings. \
Not a room name, a key it does not \
take, a value its flag would refuse, a room given twice, a room without a target: usage \
error naming the room.\n\
Example: --room drops:target=300,queueing=fifo,event.drop-1=1200 --room vip:target=100"
    )]
    pub room: Vec<RoomSpec>,

    /// With --room: hold the service room too, on the flags' own settings.
    #[arg(
        long,
        long_help = "With --room: hold the service room (lines without room=) too, with \
the flags' own settings, in the same process and the same updates as the named rooms. \
Without --room it is the room held anyway.\n\
Example: --target-per-minute 600 --service-room --room drops:target=300"
    )]
    pub service_room: bool,

    /// Fastly API updates an hour at most (the writer's budget).
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::budget::DEFAULT_BUDGET,
        value_parser = clap::value_parser!(u64).range(1..=100_000),
        long_help = "With --fastly-store-id: config-store updates an hour at most (1 to 100000), whatever \
the number of rooms (each update carries every room's items of a tick). The default, 500, is \
half of the 1,000 modifying requests an hour the Fastly API allows a user by default \
(\"Fastly API rate limiting\"); the other half is left to people and other tools of the same \
user. It sets the least time between two updates, 3600 / N s rounded up (8 s: at most 450 an \
hour), and --tick is raised to it. The API's Fastly-RateLimit-Remaining and \
Fastly-RateLimit-Reset are read on every answer: with few requests left the updates spread \
out (never further apart than --heartbeat-every); a 429, or a 5xx with Retry-After, holds \
them until its Retry-After or Fastly-RateLimit-Reset, at most 300 s. Above 500, or without \
--fastly-store-id: warned about.\n\
Example: --api-budget 500"
    )]
    pub api_budget: u64,

    /// During the scheduled event NAME, hold N new sessions a minute (repeatable).
    #[arg(
        long,
        value_name = "NAME=N",
        value_parser = parse_event_target,
        long_help = "While the room's log lines say event=NAME (the event's pre-queue and \
run, on the edge's clock), hold N new sessions a minute instead of --target-per-minute; back \
to it when the lines no longer name the event. Repeatable, one per event. status.json and \
the metrics show the target in effect.\n\
Example: --event-target drop-1=1200"
    )]
    pub event_target: Vec<(String, f64)>,

    /// Another process's room dashboard, for the room picker (repeatable).
    #[arg(
        long,
        value_name = "NAME=URL",
        value_parser = parse_room_dashboard,
        long_help = "The dashboard of a room held by another wrctl control process (rooms \
held here are listed anyway, with --room), listed in this dashboard's room picker under \
NAME (status.json's room_dashboards). Repeatable. Not NAME=URL with an http(s) URL: usage \
error.\n\
Example: --room-dashboard drops=http://127.0.0.1:7679/"
    )]
    pub room_dashboard: Vec<(String, String)>,

    /// With WRCTL_WEBHOOK_URL: posts to the webhook a minute at most.
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::notify::DEFAULT_PER_MINUTE,
        value_parser = clap::value_parser!(u32).range(1..=600),
        long_help = "With the environment variable WRCTL_WEBHOOK_URL set (the URL is a \
secret: from the environment only, never a flag, never printed), every alert of the alert \
table raised or cleared (SECURITY.md, Controller alerts) is posted to it as JSON: the room \
(or the service), the alert, its severity, the figures that caused it, the runbook link, \
and a text field that Slack-compatible receivers show. The posts run on a thread of their \
own and never delay a write: at most N in any 60 s (1 to 600, retries included), each \
within 10 s; a failed post is retried after 1 s, doubling up to 60 s, 8 attempts at most. \
Messages wait in a queue of --webhook-queue; a message that finds it full, or whose \
attempts are spent, is dropped and counted (wrctl_webhook_dropped_total), and the next \
message delivered says how many were dropped before it. Set but empty, or not an \
http(s) URL: usage error.\n\
Example: --webhook-per-minute 20"
    )]
    pub webhook_per_minute: u32,

    /// With WRCTL_WEBHOOK_URL: notifications waiting at most.
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::notify::DEFAULT_QUEUE,
        value_parser = clap::value_parser!(u32).range(1..=10_000),
        long_help = "With WRCTL_WEBHOOK_URL: alert notifications waiting to be posted at most \
(1 to 10000), besides the one being posted; one more is dropped and counted \
(wrctl_webhook_dropped_total).\n\
Example: --webhook-queue 64"
    )]
    pub webhook_queue: u32,
}

/// `--room NAME[:KEY=VALUE,...]`: a named room, and its own settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomSpec {
    /// The room.
    pub name: RoomName,
    /// Its settings, in the order given.
    pub settings: Vec<RoomSetting>,
}

/// One of a room's own settings in its `--room` spec.
#[derive(Debug, Clone, PartialEq)]
pub enum RoomSetting {
    /// `target=N` (`target-per-minute=N`).
    Target(f64),
    /// `queueing=random|fifo`.
    Queueing(String),
    /// `max-active=N`.
    MaxActive(u64),
    /// `min=P`.
    Min(Percentage),
    /// `max=P`.
    Max(Percentage),
    /// `start=P`.
    Start(Percentage),
    /// `wait-period=SECONDS`.
    WaitPeriod(u64),
    /// `redeem-window=SECONDS`.
    RedeemWindow(u64),
    /// `fifo-hold=SECONDS`.
    FifoHold(u64),
    /// `expected-propagation=SECONDS`.
    ExpectedPropagation(u64),
    /// `event.NAME=N`.
    Event(String, f64),
    /// `origin-floor=N`.
    OriginFloor(f64),
    /// `origin-ceiling=N`: rooms behind one origin share its load in proportion
    /// to these.
    OriginCeiling(f64),
}

/// The keys a `--room` spec takes.
const ROOM_KEYS: &str = "target, queueing, max-active, min, max, start, wait-period, \
redeem-window, fifo-hold, expected-propagation, origin-floor, origin-ceiling, event.NAME";

impl RoomSpec {
    /// Parses `NAME` or `NAME:KEY=VALUE,...` (clap's value parser).
    pub fn parse(text: &str) -> Result<RoomSpec, String> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let name = parse_room(name)?;
        let mut settings = Vec::new();
        for pair in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not KEY=VALUE (keys: {ROOM_KEYS})"))?;
            let (key, value) = (key.trim(), value.trim());
            let bad = |e: String| format!("{key}={value}: {e}");
            let seconds = |lo: u64, hi: u64| -> Result<u64, String> {
                value
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or_else(|| bad(format!("expected whole seconds, {lo} to {hi}")))
            };
            let setting = match key {
                "target" | "target-per-minute" => {
                    RoomSetting::Target(positive_number(value).map_err(bad)?)
                }
                "queueing" => match value {
                    "random" | "fifo" => RoomSetting::Queueing(value.to_string()),
                    _ => return Err(bad("expected random or fifo".into())),
                },
                "max-active" => {
                    RoomSetting::MaxActive(seconds(1, u64::MAX).map_err(|_| {
                        bad("expected a whole number of sessions, at least 1".into())
                    })?)
                }
                "min" => RoomSetting::Min(percentage(value).map_err(bad)?),
                "max" => RoomSetting::Max(percentage(value).map_err(bad)?),
                "start" => RoomSetting::Start(percentage(value).map_err(bad)?),
                "wait-period" => RoomSetting::WaitPeriod(seconds(1, MAX_DURATION)?),
                "redeem-window" => RoomSetting::RedeemWindow(seconds(0, MAX_DURATION)?),
                "fifo-hold" => RoomSetting::FifoHold(seconds(1, MAX_DURATION)?),
                "expected-propagation" => {
                    RoomSetting::ExpectedPropagation(seconds(0, MAX_DURATION)?)
                }
                "origin-floor" => RoomSetting::OriginFloor(positive_number(value).map_err(bad)?),
                "origin-ceiling" => {
                    RoomSetting::OriginCeiling(positive_number(value).map_err(bad)?)
                }
                _ => match key.strip_prefix("event.") {
                    Some(event) => {
                        let (event, n) = parse_event_target(&format!("{event}={value}"))?;
                        RoomSetting::Event(event, n)
                    }
                    None => return Err(format!("unknown setting {key:?} (keys: {ROOM_KEYS})")),
                },
            };
            settings.push(setting);
        }
        Ok(RoomSpec { name, settings })
    }

    /// The room's settings: `flags`' (the command line's), with this spec's
    /// over them. A FIFO room of a lottery command line starts from the
    /// percentage flags' defaults, and refuses them in its spec.
    pub fn settings_of(&self, flags: &ControlArgs) -> Result<ControlArgs, String> {
        let mut args = flags.clone();
        args.room = Vec::new();
        args.service_room = false;
        let fifo = self.settings.iter().rev().find_map(|s| match s {
            RoomSetting::Queueing(q) => Some(q == "fifo"),
            _ => None,
        });
        if fifo == Some(true) && !flags.fifo() {
            args.min = Percentage::STEP;
            args.max = Percentage::HUNDRED;
            args.start = None;
            args.redeem_window = None;
        }
        for setting in &self.settings {
            match setting.clone() {
                RoomSetting::Target(n) => args.target_per_minute = Some(n),
                RoomSetting::Queueing(q) => args.queueing = q,
                RoomSetting::MaxActive(n) => args.max_active = Some(n),
                RoomSetting::OriginFloor(n) => args.origin_floor = Some(n),
                RoomSetting::OriginCeiling(n) => args.origin_ceiling = Some(n),
                RoomSetting::Min(p) => args.min = p,
                RoomSetting::Max(p) => args.max = p,
                RoomSetting::Start(p) => args.start = Some(p),
                RoomSetting::WaitPeriod(n) => args.wait_period = n,
                RoomSetting::RedeemWindow(n) => args.redeem_window = Some(n),
                RoomSetting::FifoHold(n) => args.fifo_hold = n,
                RoomSetting::ExpectedPropagation(n) => args.expected_propagation = n,
                RoomSetting::Event(name, n) => {
                    args.event_target.retain(|(e, _)| *e != name);
                    args.event_target.push((name, n));
                }
            }
        }
        if args.target_per_minute.is_none() {
            return Err("no target: give it target=N, or give --target-per-minute".into());
        }
        Ok(args)
    }
}

fn parse_room_dashboard(text: &str) -> Result<(String, String), String> {
    let (name, url) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=URL"))?;
    let name = name.trim();
    let plain = !name.is_empty() && name.len() <= 64 && name.chars().all(|c| !c.is_control());
    let web = url.starts_with("http://") || url.starts_with("https://");
    if !plain || !web {
        return Err(format!("{text:?} is not NAME=URL with an http(s) URL"));
    }
    Ok((name.to_string(), url.to_string()))
}

fn parse_event_target(text: &str) -> Result<(String, f64), String> {
    let (name, n) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=N"))?;
    let n: f64 = n
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n > 0.0)
        .ok_or_else(|| format!("{n:?} is not a positive number of new sessions a minute"))?;
    RoomName::new(name).ok_or_else(|| format!("{name:?} is not an event name"))?;
    Ok((name.to_string(), n))
}

fn parse_room(text: &str) -> Result<RoomName, String> {
    RoomName::new(text).ok_or_else(|| {
        format!("{text:?} is not a room name (1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit)")
    })
}

/// Where writes go, as chosen on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkChoice {
    /// `--config-file`.
    ConfigFile(PathBuf),
    /// `--fastly-store-id`, with the API address and the token.
    Fastly {
        /// The API's address.
        api: String,
        /// The config store's ID.
        store_id: String,
        /// From `FASTLY_API_TOKEN`.
        token: String,
    },
    /// `--dry-run`.
    DryRun,
}

impl ControlArgs {
    /// The controller's options, checked together; the error names the flags.
    pub fn options(&self) -> Result<Options, String> {
        if self.min > self.max {
            return Err(format!("--min {} is above --max {}", self.min, self.max));
        }
        if let Some(start) = self.start
            && (start < self.min || start > self.max)
        {
            return Err(format!(
                "--start {start} is outside --min {} .. --max {}",
                self.min, self.max
            ));
        }
        let options = Options {
            target_per_minute: self.target()?,
            max_active: self.max_active,
            min: self.min,
            max: self.max,
            tick: self.tick,
            heartbeat_every: self.heartbeat_every,
            log_silence: (self.log_silence > 0).then_some(self.log_silence),
            wait_period: self.wait_period,
            redeem_window: self.redeem_window,
            start: self.start,
            expected_propagation: Some(self.expected_propagation),
            ..Options::default()
        };
        options.check().map_err(|e| e.to_string())?;
        Ok(options)
    }

    /// The origin rule's options (`--origin-healthy` and its companions), if any.
    pub fn origin(&self) -> Result<Option<control::origin_rule::OriginOptions>, String> {
        let Some(healthy) = self.origin_healthy else {
            return Ok(None);
        };
        let options = control::origin_rule::OriginOptions {
            healthy,
            floor: self.origin_floor.unwrap_or(0.0),
            ceiling: self.origin_ceiling.unwrap_or(0.0),
            session: self.session_length,
        };
        options.check().map_err(|e| e.to_string())?;
        Ok(Some(options))
    }

    /// `--target-per-minute`, or the error that says it is missing.
    pub fn target(&self) -> Result<f64, String> {
        self.target_per_minute.ok_or_else(|| {
            "--target-per-minute N is required (with --room, unless every room sets target=)"
                .to_string()
        })
    }

    /// The rooms held, in order (the service room first, with
    /// `--service-room`), each with its own settings: the flags', overridden by
    /// its `--room` spec. A FIFO room does not take the percentage's flags
    /// (`--min`, `--max`, `--start`, `--redeem-window`) from the others'; its
    /// spec may not set them. Errors name the room and the setting.
    pub fn rooms(&self) -> Result<Vec<(Option<RoomName>, ControlArgs)>, String> {
        let mut rooms = Vec::new();
        if self.room.is_empty() || self.service_room {
            rooms.push((None, self.clone()));
        }
        for spec in &self.room {
            if rooms
                .iter()
                .any(|(name, _)| name.as_ref() == Some(&spec.name))
            {
                return Err(format!("--room {} is given twice", spec.name));
            }
            let args = spec
                .settings_of(self)
                .map_err(|e| format!("--room {}: {e}", spec.name))?;
            rooms.push((Some(spec.name.clone()), args));
        }
        Ok(rooms)
    }

    /// Whether the controller runs the FIFO rule (`--queueing fifo`).
    pub fn fifo(&self) -> bool {
        self.queueing == "fifo"
    }

    /// The FIFO rule's options, checked; the error names the flags. The
    /// percentage flags (`--min`, `--max`, `--start`, `--redeem-window`) do not
    /// apply: `--start` and `--redeem-window` are refused, `--min` and `--max`
    /// left at their defaults.
    pub fn fifo_options(&self) -> Result<FifoOptions, String> {
        if self.start.is_some() {
            return Err("--start is a percentage: it does not apply with --queueing fifo".into());
        }
        if self.redeem_window.is_some() {
            return Err("--redeem-window does not apply with --queueing fifo".into());
        }
        if self.min != Percentage::STEP || self.max != Percentage::HUNDRED {
            return Err(
                "--min and --max bound the percentage: they do not apply with \
                        --queueing fifo"
                    .into(),
            );
        }
        let options = FifoOptions {
            target_per_minute: self.target()?,
            max_active: self.max_active,
            tick: self.tick,
            heartbeat_every: self.heartbeat_every,
            wait_period: self.wait_period,
            fifo_hold: self.fifo_hold,
            log_silence: (self.log_silence > 0).then_some(self.log_silence),
            expected_propagation: Some(self.expected_propagation),
            ..FifoOptions::default()
        };
        options.check().map_err(|e| e.to_string())?;
        Ok(options)
    }

    /// The sink, with the token read from the environment (`token`: the variable's value).
    pub fn sink(&self, token: Option<String>) -> Result<SinkChoice, String> {
        if let Some(path) = &self.config_file {
            return Ok(SinkChoice::ConfigFile(path.clone()));
        }
        if let Some(store_id) = &self.fastly_store_id {
            let token = token.filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                format!(
                    "--fastly-store-id {store_id} needs the Fastly API token in the environment \
variable {TOKEN_VAR} (it is never taken from a flag or a file)"
                )
            })?;
            if token
                .bytes()
                .any(|b| b.is_ascii_control() || b == b' ' || !b.is_ascii())
            {
                return Err(format!(
                    "the environment variable {TOKEN_VAR} (for --fastly-store-id) holds \
spaces or characters a token cannot have"
                ));
            }
            return Ok(SinkChoice::Fastly {
                api: self.fastly_api_url.clone(),
                store_id: store_id.clone(),
                token,
            });
        }
        Ok(SinkChoice::DryRun)
    }

    /// Whether log POSTs are taken without a secret where the risk must be
    /// accepted, given whether the writes go to the Fastly API (`api`) and whether
    /// `WRCTL_LOG_SECRET` is set (`secret`): `Ok(true)` when the controller runs
    /// with unauthenticated logs on `--accept-unauthenticated-logs` (it then
    /// warns every minute), `Ok(false)` when there is nothing to accept, and the
    /// usage error when the risk is not accepted: writing to a Fastly store,
    /// listening on an address other than loopback, without the secret.
    pub fn unauthenticated_logs(&self, api: bool, secret: bool) -> Result<bool, String> {
        let Some(listen) = self.listen else {
            return Ok(false);
        };
        if !api || secret || listen.ip().is_loopback() {
            return Ok(false);
        }
        if self.accept_unauthenticated_logs {
            return Ok(true);
        }
        Err(format!(
            "--listen {listen} with --fastly-store-id takes log lines from anyone who can \
reach it, and they steer the controller: set the environment variable \
{LOG_SECRET_VAR} (and the same Authorization: Bearer header on the Fastly log endpoint), \
listen on loopback behind a proxy that checks it, or accept the risk with \
--accept-unauthenticated-logs"
        ))
    }

    /// The notifier's options, with the webhook's URL read from the environment
    /// (`url`: `WRCTL_WEBHOOK_URL`'s value): `None` without one; the error never
    /// has the URL in it.
    pub fn webhook(
        &self,
        url: Option<String>,
    ) -> Result<Option<(String, crate::notify::Options)>, String> {
        let Some(url) = url else {
            return Ok(None);
        };
        let var = crate::notify::URL_VAR;
        let url = url.trim().to_string();
        if url.is_empty() {
            return Err(format!("the environment variable {var} is set but empty"));
        }
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        if rest.is_none_or(|r| r.is_empty() || r.bytes().any(|b| b.is_ascii_control() || b == b' '))
        {
            return Err(format!(
                "the environment variable {var} is not an http:// or https:// URL"
            ));
        }
        let options = crate::notify::Options {
            queue: self.webhook_queue as usize,
            per_minute: self.webhook_per_minute,
            ..crate::notify::Options::default()
        };
        Ok(Some((url, options)))
    }

    /// Warnings about options that work but are probably wrong.
    /// `secret`: whether `WRCTL_LOG_SECRET` is set.
    pub fn warnings(&self, secret: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.fastly_store_id.is_some() && self.api_budget > crate::budget::DEFAULT_BUDGET {
            warnings.push(format!(
                "--api-budget {} is more than half of the Fastly API's documented default of \
{} modifying requests an hour per user: other tools of the same user may meet 429s",
                self.api_budget,
                crate::budget::FASTLY_HOURLY_LIMIT
            ));
        }
        if self.fastly_store_id.is_none() && self.api_budget != crate::budget::DEFAULT_BUDGET {
            warnings.push("--api-budget is used only with --fastly-store-id".into());
        }
        if self.heartbeat_every.saturating_add(self.tick) >= Settings::default().controller_timeout
        {
            warnings.push(format!(
                "--heartbeat-every {} with --tick {}: the heartbeat may be {} s old before it \
is rewritten, not well under the room's default controller_timeout of {} s",
                self.heartbeat_every,
                self.tick,
                self.heartbeat_every + self.tick,
                Settings::default().controller_timeout
            ));
        }
        if self.fastly_store_id.is_none() && self.fastly_api_url != FASTLY_API {
            warnings.push("--fastly-api-url is used only with --fastly-store-id".into());
        }
        if self.listen.is_none() && !self.service_ids.is_empty() {
            warnings.push("--service-id is used only with --listen".into());
        }
        if let Some(listen) = self.listen
            && listen.ip().is_loopback()
            && self.fastly_store_id.is_some()
            && !secret
        {
            warnings.push(format!(
                "--listen {listen} takes log lines without {LOG_SECRET_VAR}: a proxy that \
forwards the edge's batches to it forwards anyone's, and they steer the controller; set it \
and the log endpoint's Authorization: Bearer header"
            ));
        }
        let at_risk = self.fastly_store_id.is_some()
            && !secret
            && self.listen.is_some_and(|a| !a.ip().is_loopback());
        if self.accept_unauthenticated_logs && !at_risk {
            warnings.push(format!(
                "--accept-unauthenticated-logs is used only with --fastly-store-id, --listen on \
an address other than loopback and no {LOG_SECRET_VAR}: there is no risk to accept here"
            ));
        }
        warnings
    }
}

fn percentage(text: &str) -> Result<Percentage, String> {
    let p: Percentage = text.parse().map_err(|e| format!("{e}"))?;
    // The library clamps; on the command line a value outside 0-100 is a mistake.
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number".to_string())?;
    if !(0.0..=100.0).contains(&value) {
        return Err("a percentage is 0 to 100".into());
    }
    Ok(p)
}

fn origin_healthy(text: &str) -> Result<control::origin_rule::Healthy, String> {
    text.parse()
        .map_err(|e: control::options::BadOptions| e.to_string())
}

fn positive_number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err("expected a positive number, e.g. 600".into()),
    }
}

fn store_id(text: &str) -> Result<String, String> {
    if !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Ok(text.to_string())
    } else {
        Err("a config store ID is letters, digits, - and _".into())
    }
}

fn service_id(text: &str) -> Result<String, String> {
    if !text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(text.to_string())
    } else {
        Err("a service ID is letters and digits".into())
    }
}

fn api_url(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or("expected an http:// or https:// address")?;
    if rest.is_empty() || rest.contains(['?', '#', ' ']) {
        return Err("expected an address such as https://api.fastly.com".into());
    }
    Ok(text.trim_end_matches('/').to_string())
}

fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    text.to_socket_addrs()
        .map_err(|e| format!("not an address to listen on ({e}); e.g. 127.0.0.1:8080"))?
        .next()
        .ok_or_else(|| "the name resolves to no address".into())
}
