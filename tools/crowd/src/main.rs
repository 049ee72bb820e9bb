//! `crowd`: a browser-like crowd against a running waiting room. See `crowd --help`.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use crowd::addr;
use crowd::plan::{self, Arrival};
use crowd::refresh;
use crowd::tally::{Outcome, Tally};
use crowd::token::{self, Dec};
use rand::SeedableRng as _;
use rand::rngs::StdRng;
use reqwest::cookie::{CookieStore as _, Jar};
use reqwest::header::{ACCEPT, REFRESH, RETRY_AFTER, SET_COOKIE};
use reqwest::{Client, Url};
use serde_json::json;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// A browser-like crowd against a running waiting room, over real HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "crowd",
    version,
    long_about = "A browser-like crowd against a running waiting room, over real HTTP.

Each person has their own loopback source address (127.0.x.y from --first-address; the \
room sees each connection's source address as the visitor) and --tabs tabs that share one \
cookie jar, opened within --tab-spread seconds of each other. Each tab requests --path, \
keeps every Set-Cookie in the shared jar, and follows the waiting page's `Refresh: N; \
url=...` (waits N seconds, then requests the url) until the origin's page comes back; \
then it browses --browse more pages, --browse-gap seconds apart, and closes. With --app \
a tab asks for JSON and polls every --poll seconds instead of following Refresh.

A response is a waiting page when it carries Refresh; it admits the tab when it has no \
Refresh, a 2xx status, and the jar then holds an allow token; anything else counts as an \
error (its kind is listed), and so does no response; the tab then tries again after \
Retry-After, or --retry seconds.

Every task stops at --duration; the program always exits by itself. It prints, minute by \
minute from its start, the people arrived, the new sessions (distinct allow tokens: the \
(uid, exp) of a `dec=allow` token a response set, counted in the minute first seen), the \
people admitted (each person's first admission), the requests, the waiting pages and the \
errors; with --watch-config also every change of allow_percentage in that JSON config \
store file (polled every 100 ms). --json writes the same as JSON. No cookie or signature \
is ever printed.

Only loopback rooms are accepted.",
    after_long_help = "Examples:
  # 600 people, 3 tabs each, arriving within 10 s, for 8 minutes:
  crowd --room http://127.0.0.1:7676 --people 600 --duration 480 --json crowd.json \\
    --watch-config target/demo/config.json

  # 200 apps polling every 3 to 6 s, arriving over 2 minutes:
  crowd --people 200 --app --poll 3..6 --arrival spread --over 120 --duration 300"
)]
struct Args {
    /// The room's address (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:7676", value_parser = loopback_url)]
    room: Url,
    /// The protected path every tab opens.
    #[arg(long, default_value = "/events")]
    path: String,
    /// How many people.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=60_000))]
    people: u32,
    /// Tabs per person, sharing one cookie jar.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    tabs: u32,
    /// How people arrive over --over seconds: flash (at random moments) or spread (evenly).
    #[arg(long, value_enum, default_value_t = Arrival::Flash)]
    arrival: Arrival,
    /// The arrival window, seconds.
    #[arg(long, default_value_t = 10.0, value_parser = seconds)]
    over: f64,
    /// A person's other tabs open within this many seconds of the first.
    #[arg(long, default_value_t = 3.0, value_parser = seconds)]
    tab_spread: f64,
    /// Pages an admitted tab browses before it closes.
    #[arg(long, default_value_t = 3)]
    browse: u32,
    /// Seconds between two browsed pages, drawn uniformly from A..B.
    #[arg(long, default_value = "2..5", value_parser = plan::parse_range)]
    browse_gap: (f64, f64),
    /// Apps instead of browsers: ask for JSON, poll every --poll seconds, ignore Refresh.
    #[arg(long)]
    app: bool,
    /// An app's polling interval, seconds, drawn uniformly from A..B for each poll.
    #[arg(long, default_value = "3..6", value_parser = plan::parse_range)]
    poll: (f64, f64),
    /// Seconds before trying again after an error or a page without Refresh (unless
    /// it says Retry-After).
    #[arg(long, default_value_t = 10.0, value_parser = seconds)]
    retry: f64,
    /// Seconds after which every task stops.
    #[arg(long, default_value_t = 300.0, value_parser = seconds)]
    duration: f64,
    /// The first person's source address; the next ones count up from it in
    /// 127.0.0.0/8, skipping host parts .0 and .255 and 127.0.0.1.
    #[arg(long, default_value_t = addr::DEFAULT_FIRST)]
    first_address: Ipv4Addr,
    /// Seconds a request may take.
    #[arg(long, default_value_t = 20.0, value_parser = seconds)]
    timeout: f64,
    /// Seed of the arrivals and pauses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the counts as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// A Viceroy JSON config store file whose allow_percentage changes are recorded.
    #[arg(long, value_name = "FILE")]
    watch_config: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    threads: u32,
    /// No progress line on stderr at each minute's end.
    #[arg(long)]
    quiet: bool,
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{text:?} is not a number of seconds")),
    }
}

fn loopback_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{text}: {e}"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "{text}: only http:// (the crowd targets loopback rooms)"
        ));
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if !loopback {
        return Err(format!("{text}: not a loopback address"));
    }
    Ok(url)
}

/// What every task shares.
struct Shared {
    args: Args,
    /// `--room` joined with `--path`.
    url: Url,
    start: Instant,
    tally: Mutex<Tally>,
}

impl Shared {
    /// Seconds since the crowd's start.
    fn t(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let addresses = match addr::addresses(args.first_address, args.people as usize) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("crowd: {e}");
            return ExitCode::from(2);
        }
    };
    let url = match args.room.join(&args.path) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("crowd: --path {}: {e}", args.path);
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads as usize)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("crowd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let start_unix = unix_now();
    let duration = Duration::from_secs_f64(args.duration);
    let shared = Arc::new(Shared {
        url,
        start: runtime.block_on(async { Instant::now() }),
        tally: Mutex::new(Tally::new()),
        args,
    });
    eprintln!(
        "crowd: {} people x {} tabs ({}) from {} on, arriving {} over {} s, at {} for {} s",
        shared.args.people,
        shared.args.tabs,
        if shared.args.app {
            "apps polling"
        } else {
            "browsers following Refresh"
        },
        shared.args.first_address,
        match shared.args.arrival {
            Arrival::Flash => "as a flash",
            Arrival::Spread => "spread",
        },
        shared.args.over,
        shared.url,
        shared.args.duration,
    );
    let run = {
        let shared = Arc::clone(&shared);
        async move {
            let mut tasks = JoinSet::new();
            let mut rng = StdRng::seed_from_u64(shared.args.seed);
            let arrivals = plan::arrivals(
                addresses.len(),
                shared.args.arrival,
                shared.args.over,
                &mut rng,
            );
            for (i, (address, arrival)) in addresses.into_iter().zip(arrivals).enumerate() {
                tasks.spawn(person(Arc::clone(&shared), i, address, arrival));
            }
            if let Some(path) = shared.args.watch_config.clone() {
                tasks.spawn(watch(Arc::clone(&shared), path));
            }
            if !shared.args.quiet {
                tasks.spawn(progress(Arc::clone(&shared)));
            }
            // Every task stops at the deadline (dropping the set aborts them).
            let _ = tokio::time::timeout_at(shared.start + duration, async {
                while tasks.join_next().await.is_some() {}
            })
            .await;
        }
    };
    runtime.block_on(run);
    runtime.shutdown_timeout(Duration::from_secs(2));

    let report = shared
        .tally()
        .report(start_unix, shared.t().min(shared.args.duration));
    print!("{}", report.table());
    if !report.writes.is_empty() {
        println!("allow_percentage in the watched config file:");
        print!("{}", report.writes_text());
    }
    if let Some(path) = &shared.args.json {
        let a = &shared.args;
        let settings = json!({
            "room": a.room.as_str(),
            "path": a.path,
            "people": a.people,
            "tabs": a.tabs,
            "mode": if a.app { "app" } else { "browser" },
            "arrival": format!("{:?}", a.arrival).to_lowercase(),
            "over": a.over,
            "tab_spread": a.tab_spread,
            "browse": a.browse,
            "browse_gap": [a.browse_gap.0, a.browse_gap.1],
            "poll": [a.poll.0, a.poll.1],
            "duration": a.duration,
            "first_address": a.first_address.to_string(),
            "seed": a.seed,
        });
        let text = serde_json::to_string_pretty(&report.json(settings)).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("crowd: --json {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One person: arrives, opens their tabs, and waits for them to close.
async fn person(shared: Arc<Shared>, i: usize, address: Ipv4Addr, arrival: f64) {
    tokio::time::sleep_until(shared.start + Duration::from_secs_f64(arrival)).await;
    let jar = Arc::new(Jar::default());
    let client = Client::builder()
        .local_address(IpAddr::V4(address))
        .cookie_provider(Arc::clone(&jar))
        .timeout(Duration::from_secs_f64(shared.args.timeout))
        .connect_timeout(Duration::from_secs(5))
        // A browser keeps a connection a little while; the room's pages come back
        // after seconds, so most of them open a new one, as a browser's would.
        .pool_idle_timeout(Duration::from_secs(5))
        .build();
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            let t = shared.t();
            shared
                .tally()
                .response(t, i, &Outcome::Failed(format!("client: {e}")), []);
            return;
        }
    };
    shared.tally().arrive(shared.t(), i);
    let seed = shared.args.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tabs = JoinSet::new();
    for tab in 0..shared.args.tabs {
        let opens = if tab == 0 {
            0.0
        } else {
            plan::uniform(&mut rng, (0.0, shared.args.tab_spread))
        };
        let tab_rng = StdRng::seed_from_u64(seed.wrapping_add(u64::from(tab) + 1));
        tabs.spawn(tab_task(
            Arc::clone(&shared),
            i,
            client.clone(),
            Arc::clone(&jar),
            opens,
            tab_rng,
        ));
    }
    while tabs.join_next().await.is_some() {}
}

/// One tab: waits in the room until admitted, browses, closes.
async fn tab_task(
    shared: Arc<Shared>,
    person: usize,
    client: Client,
    jar: Arc<Jar>,
    opens: f64,
    mut rng: StdRng,
) {
    tokio::time::sleep(Duration::from_secs_f64(opens)).await;
    let a = &shared.args;
    let mut url = shared.url.clone();
    loop {
        let answer = fetch(&shared, person, &client, &jar, &url).await;
        let pause = match answer.outcome {
            Outcome::Admitted => break,
            Outcome::Waiting if a.app => plan::uniform(&mut rng, a.poll),
            Outcome::Waiting => {
                let refresh = answer.refresh.unwrap_or(refresh::Refresh {
                    after: Duration::from_secs_f64(a.retry),
                    url: None,
                });
                if let Some(next) = refresh.url.as_deref() {
                    match url.join(next) {
                        Ok(next) if next.host() == shared.url.host() => url = next,
                        // A refresh elsewhere is not followed off the room.
                        _ => url = shared.url.clone(),
                    }
                }
                // A browser reloads at once on `Refresh: 0`; a second's floor keeps a
                // room that says 0 by mistake from being hammered.
                refresh.after.as_secs_f64().clamp(1.0, 3600.0)
            }
            Outcome::Other(_) | Outcome::Failed(_) => answer.retry_after.unwrap_or(a.retry),
        };
        tokio::time::sleep(Duration::from_secs_f64(pause)).await;
    }
    for page in 1..=a.browse {
        tokio::time::sleep(Duration::from_secs_f64(plan::uniform(
            &mut rng,
            a.browse_gap,
        )))
        .await;
        let mut next = shared.url.clone();
        next.set_query(Some(&format!("page={page}")));
        fetch(&shared, person, &client, &jar, &next).await;
    }
}

/// What a tab needs of a response.
struct Answer {
    outcome: Outcome,
    refresh: Option<refresh::Refresh>,
    retry_after: Option<f64>,
}

/// One request: sends it, reads the whole response, counts it.
async fn fetch(shared: &Shared, person: usize, client: &Client, jar: &Jar, url: &Url) -> Answer {
    let accept = if shared.args.app {
        "application/json"
    } else {
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    };
    let sent = client.get(url.clone()).header(ACCEPT, accept).send().await;
    let mut answer = Answer {
        outcome: Outcome::Failed(String::new()),
        refresh: None,
        retry_after: None,
    };
    let mut set_cookies = Vec::new();
    match sent {
        Err(e) => answer.outcome = Outcome::Failed(error_kind(&e)),
        Ok(response) => {
            let status = response.status();
            let headers = response.headers();
            answer.refresh = headers
                .get(REFRESH)
                .and_then(|v| v.to_str().ok())
                .and_then(refresh::parse);
            answer.retry_after = headers
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0);
            let has_refresh = headers.contains_key(REFRESH);
            set_cookies = headers
                .get_all(SET_COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok().map(String::from))
                .collect();
            // The page itself, read to its end as a browser would.
            answer.outcome = match response.bytes().await {
                Err(e) => Outcome::Failed(error_kind(&e)),
                Ok(_) if has_refresh => Outcome::Waiting,
                Ok(_) if status.is_success() && holds_allow(jar, url) => Outcome::Admitted,
                Ok(_) if status.is_success() => Outcome::Other(format!(
                    "status {} without Refresh or allow token",
                    status.as_u16()
                )),
                Ok(_) => Outcome::Other(format!("status {}", status.as_u16())),
            };
        }
    }
    let t = shared.t();
    shared.tally().response(
        t,
        person,
        &answer.outcome,
        set_cookies.iter().map(String::as_str),
    );
    answer
}

/// Whether the jar holds an allow token for `url`.
fn holds_allow(jar: &Jar, url: &Url) -> bool {
    jar.cookies(url)
        .and_then(|h| {
            let header = h.to_str().ok()?;
            token::decode(token::from_cookie_header(header)?)
        })
        .is_some_and(|t| t.dec == Dec::Allow)
}

/// A failed request's kind, for the error counts.
fn error_kind(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timeout".into()
    } else if e.is_connect() {
        "connect".into()
    } else if e.is_body() || e.is_decode() {
        "body".into()
    } else if e.is_request() {
        "request".into()
    } else {
        "other".into()
    }
}

/// Records every change of `allow_percentage` in the config store file.
async fn watch(shared: Arc<Shared>, path: PathBuf) {
    let mut last: Option<Option<String>> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let Ok(text) = tokio::fs::read_to_string(&path).await else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let p = value
            .get("allow_percentage")
            .and_then(|v| v.as_str())
            .map(String::from);
        if last.as_ref() != Some(&p) {
            let t = shared.t();
            shared.tally().write(t, unix_now(), p.clone());
            last = Some(p);
        }
    }
}

/// A line on stderr at each minute's end, with that minute's counts.
async fn progress(shared: Arc<Shared>) {
    for minute in 1u32.. {
        tokio::time::sleep_until(shared.start + Duration::from_secs(60 * u64::from(minute))).await;
        let report = shared.tally().report(0.0, f64::from(minute) * 60.0);
        if let Some(row) = report.rows.get(minute as usize - 1) {
            let m = &row.counts;
            eprintln!(
                "crowd: minute {minute}: {} arrived, {} new sessions, {} admitted, {} requests, \
                 {} waiting, {} errors{}",
                m.arrived,
                m.new_sessions,
                m.admitted,
                m.requests,
                m.waiting,
                m.errors,
                row.allow_percentage
                    .as_deref()
                    .map_or(String::new(), |p| format!(", allow_percentage {p}")),
            );
        }
    }
}
