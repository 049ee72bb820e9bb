//! Runs the built wasm in Viceroy, in front of a real demo origin, with its own
//! stores in JSON files (re-read on every request, so a test can tune them live).

use std::collections::BTreeMap;
use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::challenge_server::ChallengeServer;
use super::http;
use waiting_room::settings::{config, layout};

/// The test signing keys.
pub const KEY1: &str = "test-key-one-0123456789abcdef0123456789";
pub const KEY2: &str = "test-key-two-0123456789abcdef0123456789";
/// The log endpoint the tests read.
pub const LOGGER: &str = "testlog";

/// Where the room's backend points.
#[derive(Default)]
pub enum Backend {
    /// A fresh demo origin.
    #[default]
    DemoOrigin,
    /// A port nothing listens on (origin down).
    Down,
    /// An origin the test started, e.g. a demo origin with a capacity
    /// (`demo_origin::Origin::start_with`), whose stats and capacity it keeps a
    /// handle on.
    Origin(SocketAddr),
}

/// Everything a test can choose about a room; [`Default`] is the usual room.
#[derive(Default)]
pub struct RoomSpec<'a> {
    /// Overrides of [`base_config`].
    pub config: &'a [(&'a str, &'a str)],
    /// The page store.
    pub pages: &'a [(&'a str, &'a str)],
    /// Where the backend points.
    pub backend: Backend,
    /// When set, the signing keys live in a Secret Store with these entries
    /// (the config store of the same name keeps the usual test keys).
    pub secret_keys: Option<&'a [(&'a str, &'a str)]>,
    /// The backend's first-byte timeout, in milliseconds.
    pub first_byte_timeout_ms: Option<u64>,
    /// Viceroy's standard output (the log lines) goes to a pipe the test takes with
    /// [`Room::take_stdout`], instead of the log file.
    pub pipe_stdout: bool,
    /// Viceroy listens on the IPv6 loopback (`[::1]`) instead of 127.0.0.1; reach
    /// it with [`Room::get_v6`].
    pub ipv6: bool,
    /// Both challenge backends (`challenge_turnstile`, `challenge_hcaptcha`) point
    /// at this stand-in of the providers' `siteverify`.
    pub challenge_server: Option<&'a ChallengeServer>,
    /// The challenge backends' first-byte timeout, in milliseconds (default 1000).
    pub challenge_timeout_ms: Option<u64>,
    /// When set, the Secret Store `waitingroom_challenge` with these entries
    /// (site key → secret key); else the room has none.
    pub challenge_secrets: Option<&'a [(&'a str, &'a str)]>,
    /// When set, the Secret Store `waitingroom_login` with these entries (an HS256
    /// login key's id → its secret); else the room has none.
    pub login_secrets: Option<&'a [(&'a str, &'a str)]>,
    /// Environment variables for Viceroy, such as the project's Viceroy's limits
    /// (`VICEROY_LOOKUP_LIMIT`, `VICEROY_SECRET_LIMIT`: [`super::faults`]).
    pub viceroy_env: &'a [(&'a str, &'a str)],
}

/// A room under test. Dropping it stops Viceroy and removes its files.
pub struct Room {
    viceroy: Child,
    pub addr: SocketAddr,
    dir: PathBuf,
}

type Store = BTreeMap<String, String>;

fn store(pairs: &[(&str, &str)]) -> Store {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The settings every test starts from; tests override what they exercise.
pub fn base_config() -> Vec<(&'static str, &'static str)> {
    vec![
        ("enabled", "true"),
        ("allow_percentage", "50"),
        ("wait_period_duration", "30"),
        ("allow_period_timeout", "3600"),
        ("cookie_lifetime", "7200"),
        ("active_key", "key1"),
        ("logger_name", LOGGER),
    ]
}

impl Room {
    /// A room with [`base_config`] overridden by `config`, both test keys, no stored pages.
    pub fn start(config: &[(&str, &str)]) -> Room {
        Room::start_with(config, &[], Backend::DemoOrigin)
    }

    /// A room with the given config overrides, page store and backend.
    pub fn start_with(config: &[(&str, &str)], pages: &[(&str, &str)], backend: Backend) -> Room {
        Room::launch(RoomSpec {
            config,
            pages,
            backend,
            ..RoomSpec::default()
        })
    }

    /// A room as `spec` describes. Panics in one line when Viceroy or the built room
    /// is missing ([`missing`]).
    pub fn launch(spec: RoomSpec<'_>) -> Room {
        if let Some(why) = missing(&viceroy_bin(), &wasm_file()) {
            panic!("{why}");
        }
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "waiting-room-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        fs::create_dir_all(&dir).unwrap();

        let origin_addr = match spec.backend {
            Backend::DemoOrigin => demo_origin::Origin::start("127.0.0.1:0").unwrap().addr(),
            Backend::Down => free_addr(),
            Backend::Origin(addr) => addr,
        };
        // The settings as an operator gives them, one key each, stored where the
        // room reads them; every stored page listed in `custom_pages`, as the
        // operator lists it.
        let mut settings = store(&base_config());
        settings.extend(store(spec.config));
        if !spec.pages.is_empty() && !settings.contains_key(config::CUSTOM_PAGES) {
            let listed: Vec<&str> = spec.pages.iter().map(|(key, _)| *key).collect();
            settings.insert(config::CUSTOM_PAGES.to_string(), listed.join(","));
        }
        let settings =
            layout::store_entries(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        write_json(&dir.join("config.json"), &settings);
        write_json(
            &dir.join("keys.json"),
            &store(&[("key1", KEY1), ("key2", KEY2)]),
        );
        write_json(&dir.join("pages.json"), &store(spec.pages));
        // Backend options, then the optional Secret Store, in TOML.
        let mut extra = String::new();
        if let Some(ms) = spec.first_byte_timeout_ms {
            extra.push_str(&format!("first_byte_timeout_ms = {ms}\n"));
        }
        if let Some(secrets) = spec.secret_keys {
            write_json(&dir.join("secrets.json"), &store(secrets));
            extra.push_str(&format!(
                "[local_server.secret_stores.waitingroom_signingkeys]\nformat = \"json\"\nfile = \"{}/secrets.json\"\n",
                dir.display()
            ));
        }
        if let Some(server) = spec.challenge_server {
            let timeout = spec.challenge_timeout_ms.unwrap_or(1000);
            for backend in ["challenge_turnstile", "challenge_hcaptcha"] {
                extra.push_str(&format!(
                    "[local_server.backends.{backend}]\nurl = \"{}\"\nfirst_byte_timeout_ms = {timeout}\n",
                    server.url()
                ));
            }
        }
        if let Some(secrets) = spec.login_secrets {
            write_json(&dir.join("login-secrets.json"), &store(secrets));
            extra.push_str(&format!(
                "[local_server.secret_stores.waitingroom_login]\nformat = \"json\"\nfile = \"{}/login-secrets.json\"\n",
                dir.display()
            ));
        }
        if let Some(secrets) = spec.challenge_secrets {
            write_json(&dir.join("challenge-secrets.json"), &store(secrets));
            extra.push_str(&format!(
                "[local_server.secret_stores.waitingroom_challenge]\nformat = \"json\"\nfile = \"{}/challenge-secrets.json\"\n",
                dir.display()
            ));
        }
        fs::write(
            dir.join("fastly.toml"),
            format!(
                r#"manifest_version = 3
name = "waiting-room-test"
language = "rust"
[local_server.backends.origin]
url = "http://{origin_addr}/"
{extra}
[local_server.config_stores.waitingroom_config]
format = "json"
file = "{dir}/config.json"
[local_server.config_stores.waitingroom_signingkeys]
format = "json"
file = "{dir}/keys.json"
[local_server.config_stores.waitingroom_pages]
format = "json"
file = "{dir}/pages.json"
"#,
                dir = dir.display()
            ),
        )
        .unwrap();

        // The port is free when picked, and Viceroy binds it only once it has
        // compiled the room: another socket may take it in between. Then Viceroy
        // exits at once, and the room is launched again on another port.
        for attempt in 1.. {
            let addr = if spec.ipv6 {
                free_addr_v6()
            } else {
                free_addr()
            };
            let mut viceroy = spawn_viceroy(&dir, addr, spec.pipe_stdout, spec.viceroy_env);
            match wait_until_listening(&mut viceroy, addr, &dir) {
                Ok(()) => return Room { viceroy, addr, dir },
                Err(output) if attempt < 3 && output.contains("Address already in use") => {}
                Err(output) => {
                    let _ = viceroy.kill();
                    panic!("{output}");
                }
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// Viceroy's standard output, when the room was launched with `pipe_stdout`.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.viceroy.stdout.take()
    }

    /// The JSON file behind the `waitingroom_config` store.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// Everything Viceroy printed so far.
    pub fn viceroy_output(&self) -> String {
        viceroy_output(&self.dir)
    }

    /// How many bytes Viceroy printed so far: a mark for [`Room::output_since`].
    pub fn output_mark(&self) -> usize {
        fs::metadata(viceroy_log(&self.dir)).map_or(0, |m| m.len() as usize)
    }

    /// What Viceroy printed after `mark` ([`Room::output_mark`]).
    pub fn output_since(&self, mark: usize) -> String {
        let bytes = fs::read(viceroy_log(&self.dir)).unwrap_or_default();
        String::from_utf8_lossy(bytes.get(mark..).unwrap_or_default()).into_owned()
    }

    /// The room's log line written after `mark` ([`Room::output_mark`]), once it has
    /// been written: the line of the one request made since.
    pub fn log_line_since(&self, mark: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(line) = self.try_log_line_since(mark) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no log line:\n{}",
                self.output_since(mark)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The room's log line written after `mark`, if it is there yet: at the log
    /// endpoint, or on standard error when the room could not read the endpoint's
    /// name. Panics when there are several.
    pub fn try_log_line_since(&self, mark: usize) -> Option<String> {
        let start = format!("{} t=", waiting_room::log::PREFIX);
        let output = self.output_since(mark);
        let lines: Vec<&str> = output
            .lines()
            .filter_map(|l| l.find(&start).map(|at| &l[at..]))
            .collect();
        assert!(
            lines.len() <= 1,
            "more than one log line since the mark:\n{output}"
        );
        lines.first().map(|l| l.to_string())
    }

    /// `GET path` from visitor 127.0.0.`from`.
    pub fn get(&self, from: u8, path: &str, headers: &[(&str, &str)]) -> http::Response {
        http::get(self.addr, from, path, headers)
    }

    /// `GET path` from the IPv6 loopback `::1` (a room launched with `ipv6`).
    pub fn get_v6(&self, path: &str, headers: &[(&str, &str)]) -> http::Response {
        http::get_v6(self.addr, path, headers)
    }

    /// `GET path` from visitor 127.0.0.`from` presenting `cookie_header`.
    pub fn get_with_cookie(&self, from: u8, path: &str, cookie_header: &str) -> http::Response {
        self.get(from, path, &[("Cookie", cookie_header)])
    }

    /// The room's log lines so far (what it wrote to the test endpoint).
    pub fn log_lines(&self) -> Vec<String> {
        let prefix = format!("{LOGGER} :: ");
        self.viceroy_output()
            .lines()
            .filter_map(|l| l.split_once(&prefix).map(|(_, rest)| rest.to_string()))
            .collect()
    }

    /// The last log line, once it has been written.
    pub fn last_log_line(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(line) = self.log_lines().pop() {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no log line:\n{}",
                self.viceroy_output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Changes one setting live, where the room reads it (the JSON store is re-read
    /// on every request).
    pub fn set_config(&self, key: &str, value: &str) {
        self.edit_store("config.json", |s| layout::set(s, key, value));
    }

    /// Replaces the whole config store live: [`base_config`] overridden by `config`,
    /// stored as the room reads them (no `custom_pages` but what `config` lists).
    pub fn reset_config(&self, config: &[(&str, &str)]) {
        let mut settings = store(&base_config());
        settings.extend(store(config));
        let settings =
            layout::store_entries(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        write_json(&self.config_path(), &settings);
    }

    /// Removes a signing key live (emergency revocation).
    pub fn remove_key(&self, kid: &str) {
        self.edit_store("keys.json", |s| {
            s.remove(kid);
        });
    }

    fn edit_store(&self, file: &str, edit: impl FnOnce(&mut Store)) {
        let path = self.dir.join(file);
        let mut current: Store = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut current);
        write_json(&path, &current);
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let _ = self.viceroy.kill();
        let _ = self.viceroy.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Viceroy serving the room whose files are in `dir` at `addr`, with `env`.
fn spawn_viceroy(dir: &Path, addr: SocketAddr, pipe_stdout: bool, env: &[(&str, &str)]) -> Child {
    let log = fs::File::create(viceroy_log(dir)).unwrap();
    let stdout = if pipe_stdout {
        Stdio::piped()
    } else {
        Stdio::from(log.try_clone().unwrap())
    };
    Command::new(viceroy_bin())
        .arg("serve")
        .arg("-C")
        .arg(dir.join("fastly.toml"))
        .arg("--addr")
        .arg(addr.to_string())
        .arg(wasm_path())
        .envs(env.iter().copied())
        .stdout(stdout)
        .stderr(Stdio::from(log))
        .spawn()
        .expect("cannot start viceroy: run the README's test command, which installs it")
}

/// Waits until `viceroy` listens at `addr`; `Err` with its output (in `dir`) when
/// it exits first or does not listen within 30 s.
fn wait_until_listening(viceroy: &mut Child, addr: SocketAddr, dir: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(status) = viceroy.try_wait().unwrap() {
            return Err(format!(
                "viceroy exited ({status}):\n{}",
                viceroy_output(dir)
            ));
        }
        if TcpStream::connect(addr).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "viceroy not ready after 30 s:\n{}",
        viceroy_output(dir)
    ))
}

/// Where Viceroy's output goes (its standard output too, unless piped).
fn viceroy_log(dir: &Path) -> PathBuf {
    dir.join("viceroy.log")
}

/// Everything Viceroy printed so far into the room's `dir`.
fn viceroy_output(dir: &Path) -> String {
    fs::read_to_string(viceroy_log(dir)).unwrap_or_default()
}

/// Writes the store atomically, so Viceroy never reads half a file.
fn write_json(path: &Path, store: &Store) {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, serde_json::to_string_pretty(store).unwrap()).unwrap();
    fs::rename(tmp, path).unwrap();
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn free_addr_v6() -> SocketAddr {
    TcpListener::bind("[::1]:0")
        .expect("the IPv6 loopback ::1 is needed for the IPv6 tests")
        .local_addr()
        .unwrap()
}

/// Viceroy: `VICEROY`, or `viceroy` on `PATH`.
pub fn viceroy_bin() -> String {
    std::env::var("VICEROY").unwrap_or_else(|_| "viceroy".to_string())
}

/// The built room: `WAITING_ROOM_WASM`, or the release build under `target/`.
fn wasm_file() -> PathBuf {
    std::env::var("WAITING_ROOM_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/wasm32-wasip1/release/edge-waiting-room.wasm")
        })
}

/// What a room lacks of what it needs, Viceroy at `viceroy` (a path, or a name
/// looked up on `PATH`) and the built room at `wasm`, as one line naming how to get
/// each; `None` when both are there.
pub fn missing(viceroy: &str, wasm: &Path) -> Option<String> {
    // A name without a slash is looked up on PATH, as `Command` does.
    let (found, place) = match std::env::var_os("PATH") {
        Some(dirs) if !viceroy.contains('/') => (
            std::env::split_paths(&dirs).any(|d| d.join(viceroy).is_file()),
            format!("`{viceroy}` on PATH"),
        ),
        _ => (Path::new(viceroy).is_file(), viceroy.to_string()),
    };
    let viceroy = (!found).then(|| {
        format!(
            "Viceroy not found at {place}: run scripts/setup.sh (or set VICEROY=/path/to/viceroy)"
        )
    });
    let missing: Vec<String> = viceroy.into_iter().chain(wasm_missing(wasm)).collect();
    (!missing.is_empty()).then(|| format!("{}: {}", test_binary(), missing.join("; ")))
}

/// The test binary's name (`blackbox`, `browser`: its file's without cargo's hash).
fn test_binary() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().unwrap_or_default().to_string_lossy();
    stem.rsplit_once('-')
        .map_or(&*stem, |(name, _)| name)
        .to_string()
}

/// How to get the built room when `wasm` is not there.
fn wasm_missing(wasm: &Path) -> Option<String> {
    (!wasm.is_file()).then(|| {
        format!(
            "the room's wasm not found at {}: build it with `cargo build --release --target \
             wasm32-wasip1 -p edge-waiting-room` (or set WAITING_ROOM_WASM=/path/to/it)",
            wasm.display()
        )
    })
}

/// The built room ([`wasm_file`]); panics in one line when it is missing.
pub fn wasm_path() -> PathBuf {
    let path = wasm_file();
    if let Some(why) = wasm_missing(&path) {
        panic!("{}: {why}", test_binary());
    }
    path
}

/// Unix seconds now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}
