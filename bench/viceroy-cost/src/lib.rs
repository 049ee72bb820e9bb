//! The pure parts of the whole-program cost run (`src/main.rs` drives the processes):
//! reading a process's CPU time from `/proc`, minting the room's tokens, the
//! ten-room service's, the draw cases' and the login cases' settings, the request
//! each case is sent (with the tests' HTTP client, test-support's `http`), the
//! checks each case's responses and log lines must pass, and the tables.

use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
pub use test_support::http::Response;
use test_support::{logins, mint};
use waiting_room::admission::lottery;
use waiting_room::credentials::login_mint;
use waiting_room::settings::percentage::Percentage;

/// The loopback address requests come from: the `uid` of the tokens sent.
pub const CLIENT: &str = "127.0.0.1";

/// The marker of every page the demo origin answers.
pub const ORIGIN_MARKER: &str = "You reached the demo origin";

/// The marker of the room's built-in keep-waiting page (a held draw's answer).
pub const KEEP_WAITING_MARKER: &str = "Thanks for waiting";

/// The percentage every room of the run admits (`allow_percentage`).
pub const ALLOW_PERCENTAGE: u8 = 50;

/// The bits of bot toll the toll cases' room asks, and their token owes: a phone's
/// second or so, the suggested setting (docs/reference/bot-toll.md).
pub const TOLL_BITS: u8 = 16;

/// The draw cases' `redeem_window`: a day, so that a wait token minted due for its
/// draw at the start of a run stays due through the run, however often it is drawn.
pub const REDEEM_WINDOW: u64 = 86_400;

/// The service room's config-store entries, as the driver's manifest has them:
/// protecting `path`, signing with `kid`, admitting for `allow_period` seconds.
pub fn service_config(path: &str, kid: &str, allow_period: u64) -> Vec<(String, String)> {
    [
        ("enabled", "true".to_string()),
        ("protected_paths", path.to_string()),
        ("allow_percentage", ALLOW_PERCENTAGE.to_string()),
        ("wait_period_duration", "30".to_string()),
        ("allow_period_timeout", allow_period.to_string()),
        ("cookie_lifetime", "7200".to_string()),
        ("active_key", kid.to_string()),
        ("logger_name", "waitingroom_log".to_string()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect()
}

/// The config-store entries the draw cases' rooms have beside the service room's
/// keys: [`REDEEM_WINDOW`], and `bot_toll_bits` (0: the toll off).
pub fn draw_config(toll_bits: u8) -> Vec<(String, String)> {
    vec![
        ("redeem_window".to_string(), REDEEM_WINDOW.to_string()),
        ("bot_toll_bits".to_string(), toll_bits.to_string()),
    ]
}

/// A wait token for [`CLIENT`] due for its draw at `now` (it expired a second or
/// more before) that wins at [`ALLOW_PERCENTAGE`], signed with `key` (named `kid`):
/// owing `toll` bits when some (a token of a room that asks the bot toll), else
/// without the field; with its signature's hex (the toll's challenge). The room
/// keeps no state: the same token is drawn again on every request, and wins again,
/// while it is within its redeem window.
pub fn due_wait_token(key: &str, kid: &str, now: u64, toll: Option<u8>) -> (String, String) {
    (1..100)
        .map(|ago| {
            let exp = now - ago;
            match toll {
                Some(bits) => mint::mint_toll(key, exp, CLIENT, kid, bits),
                None => {
                    let text = format!("dec=wait&exp={exp}&uid={CLIENT}&kid={kid}");
                    let sig = mint::vcl_sig(key, &text);
                    (
                        mint::mint(key, "wait", exp, CLIENT, kid),
                        sig[2..].to_string(),
                    )
                }
            }
        })
        .find(|(_, sig)| {
            let seed = mint::seed(&format!("0x{sig}"));
            lottery::wins(seed, Percentage::whole(ALLOW_PERCENTAGE))
        })
        .expect("one of 99 tokens wins")
}

/// The person the login cases' JWTs name (`sub`, of test-support's issuer).
pub const PERSON: &str = "cost-person";

/// The login cases' `login_cookie` (test-support's [`logins::settings_members`]).
pub const LOGIN_COOKIE: &str = "session";

/// The config-store entries the login cases' service has beside the service room's
/// keys: `identity = login` with test-support's issuer, audience, hash key and login
/// cookie ([`logins::settings_members`]), and in `login_keys` only key `i` of
/// [`logins::KIDS`] (RS256, ES256, HS256): a site signs with one key.
pub fn login_config(i: usize) -> Vec<(String, String)> {
    let jwks = format!(
        r#"{{"keys": [{}]}}"#,
        logins::keys()[i].public_jwk(logins::KIDS[i])
    );
    logins::settings_members()
        .into_iter()
        .map(|(key, value)| match key {
            "login_keys" => (key.to_string(), jwks.clone()),
            _ => (key.to_string(), value),
        })
        .collect()
}

/// The Secret Store of the login cases' manifests, inline: the HS256 key's secret
/// under its kid (read only by the HS256 case's room).
pub fn login_secret_store() -> String {
    format!(
        "[[local_server.secret_stores.{}]]\nkey = \"{}\"\ndata = \"{}\"\n",
        waiting_room::resources::LOGIN_STORE,
        logins::KIDS[2],
        logins::HS256_SECRET
    )
}

/// The named rooms of the ten-room service ([`rooms_config`]).
pub const ROOM_COUNT: usize = 10;

/// The name of named room `i` of the ten-room service: `r00` to `r09`.
pub fn room_name(i: usize) -> String {
    format!("r{i:02}")
}

/// The one path of named room `i`: `/events/r00/` for `r00`, `/events/r00/r01/` for
/// `r01`, … each room's path inside the one before, so that a request to the last
/// room's path is in the scope of all ten (and of the service room's `/events`).
pub fn room_path(i: usize) -> String {
    (0..=i).fold("/events/".to_string(), |path, j| path + &room_name(j) + "/")
}

/// The room the ten-room cases' requests are in: the last, whose prefix is the
/// longest of the ten that hold the request, so the one that wins.
pub fn rooms_room() -> String {
    room_name(ROOM_COUNT - 1)
}

/// The path the ten-room cases ask for: the room's own path,
/// `/events/r00/r01/r02/r03/r04/r05/r06/r07/r08/r09/`.
pub fn rooms_path() -> String {
    room_path(ROOM_COUNT - 1)
}

/// The config-store entries the ten-room service has beside the service room's
/// keys: the `rooms` index, and each room's settings `room.<name>`: the service
/// room's settings (`allow_period` and the key `kid`) and two bypass rules that
/// the cases' requests (from [`CLIENT`], for [`rooms_path`]) do not match: an
/// address block in 198.51.100.0/24 and the path `static/` inside the room.
pub fn rooms_config(kid: &str, allow_period: u64) -> Vec<(String, String)> {
    let index: Vec<String> = (0..ROOM_COUNT)
        .map(|i| format!(r#""{}": {{"paths": ["{}"]}}"#, room_name(i), room_path(i)))
        .collect();
    let mut entries = vec![("rooms".to_string(), format!("{{{}}}", index.join(", ")))];
    entries.extend((0..ROOM_COUNT).map(|i| {
        let value = format!(
            r#"{{"enabled": true, "allow_percentage": {ALLOW_PERCENTAGE}, "wait_period_duration": 30, "allow_period_timeout": {allow_period}, "cookie_lifetime": 7200, "active_key": "{kid}", "bypass_addresses": ["198.51.100.{}/28"], "bypass_paths": ["{}static/"]}}"#,
            16 * i,
            room_path(i)
        );
        (format!("room.{}", room_name(i)), value)
    }));
    entries
}

/// Config-store entries as lines of an inline-TOML store: quoted keys (a room's
/// holds a dot), literal-string values (JSON holds double quotes, never single).
pub fn toml_entries(entries: &[(String, String)]) -> String {
    entries
        .iter()
        .map(|(key, value)| {
            assert!(!value.contains('\'') && !key.contains('"'), "{key}");
            format!("\"{key}\" = '{value}'\n")
        })
        .collect()
}

/// The programs of a run, on the token each is sent, in the order each round
/// sends to them (the baseline room's cases only when there is a baseline room).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// The room, on a young allow token (more than half its period left): lazy
    /// renewal keeps it, one HMAC and no `Set-Cookie`.
    RoomYoung,
    /// The room in a service whose identity is the login ([`login_config`]), on the
    /// young allow token of [`PERSON`]'s uid, with their JWT signed RS256 in
    /// [`LOGIN_COOKIE`]: the JWT verified, the uid hashed, then as [`Case::RoomYoung`].
    LoginRs256,
    /// The same with a JWT signed ES256 (P-256).
    LoginEs256,
    /// The same with a JWT signed HS256, its secret read from the Secret Store.
    LoginHs256,
    /// The room, on an allow token with less than half its period left: verified
    /// and renewed, two HMACs and a fresh `Set-Cookie`.
    RoomRenewing,
    /// The same room wasm serving the ten-room service ([`rooms_config`]), asked
    /// for [`rooms_path`] on a young allow token of room [`rooms_room`].
    RoomsYoung,
    /// The ten-room service, on a renewing allow token of room [`rooms_room`].
    RoomsRenewing,
    /// The room with the bot toll off, on a wait token due for its draw that wins
    /// ([`due_wait_token`]): drawn, admitted, a new allow token set.
    DrawNoToll,
    /// The room asking [`TOLL_BITS`] of bot toll, on a wait token that owes them,
    /// due for its draw, that wins, with the nonce that pays in `waiting_toll`: one
    /// SHA-256 more than [`Case::DrawNoToll`], then the same answer.
    DrawTollPaid,
    /// The toll's room on the same token without the nonce: the draw is held, the
    /// keep-waiting page served with a new wait token that owes again.
    DrawHeld,
    /// A second build of the room (an earlier commit's), on the young token.
    BaselineYoung,
    /// The second build of the room, on the renewing token.
    BaselineRenewing,
    /// `bench/forward-only`: forwards and nothing else, on the young token.
    ForwardOnly,
    /// `bench/forward-hmac`: two HMAC-SHA256, then forwards, on the renewing token.
    ForwardHmac,
}

impl Case {
    /// Every case, in round order.
    pub const ALL: [Case; 14] = [
        Case::RoomYoung,
        Case::LoginRs256,
        Case::LoginEs256,
        Case::LoginHs256,
        Case::RoomRenewing,
        Case::RoomsYoung,
        Case::RoomsRenewing,
        Case::DrawNoToll,
        Case::DrawTollPaid,
        Case::DrawHeld,
        Case::BaselineYoung,
        Case::BaselineRenewing,
        Case::ForwardOnly,
        Case::ForwardHmac,
    ];

    /// The case's name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Case::RoomYoung => "room, young token (kept)",
            Case::LoginRs256 => "room, young token (kept), login RS256",
            Case::LoginEs256 => "room, young token (kept), login ES256",
            Case::LoginHs256 => "room, young token (kept), login HS256",
            Case::RoomRenewing => "room, renewing token",
            Case::RoomsYoung => "room among 10 rooms, young token (kept)",
            Case::RoomsRenewing => "room among 10 rooms, renewing token",
            Case::DrawNoToll => "room, draw without the toll",
            Case::DrawTollPaid => "room, draw paying the toll",
            Case::DrawHeld => "room, draw held unpaid",
            Case::BaselineYoung => "baseline room, young token (kept)",
            Case::BaselineRenewing => "baseline room, renewing token",
            Case::ForwardOnly => "forward-only",
            Case::ForwardHmac => "forward + 2 HMAC-SHA256",
        }
    }

    /// The case's name in column headings and ratios.
    pub fn short(self) -> &'static str {
        match self {
            Case::RoomYoung => "room young",
            Case::LoginRs256 => "login RS256",
            Case::LoginEs256 => "login ES256",
            Case::LoginHs256 => "login HS256",
            Case::RoomRenewing => "room renewing",
            Case::RoomsYoung => "10 rooms young",
            Case::RoomsRenewing => "10 rooms renewing",
            Case::DrawNoToll => "draw no toll",
            Case::DrawTollPaid => "draw toll paid",
            Case::DrawHeld => "draw held",
            Case::BaselineYoung => "baseline young",
            Case::BaselineRenewing => "baseline renewing",
            Case::ForwardOnly => "forward-only",
            Case::ForwardHmac => "forward + 2 HMAC",
        }
    }

    /// Whether the case is sent the renewing token (else the young one): each
    /// program that forwards is sent the token of the room cases it is set against.
    pub fn renewing_token(self) -> bool {
        matches!(
            self,
            Case::RoomRenewing | Case::RoomsRenewing | Case::BaselineRenewing | Case::ForwardHmac
        )
    }

    /// Whether the case runs the ten-room service (else the one-room one).
    pub fn in_rooms(self) -> bool {
        matches!(self, Case::RoomsYoung | Case::RoomsRenewing)
    }

    /// The login case's key: its index in [`logins::KIDS`] (RS256, ES256, HS256);
    /// `None` for the cases whose visitor is their address.
    pub fn login_key(self) -> Option<usize> {
        match self {
            Case::LoginRs256 => Some(0),
            Case::LoginEs256 => Some(1),
            Case::LoginHs256 => Some(2),
            _ => None,
        }
    }

    /// The uid the room's log line must name, for the cases whose line is read:
    /// [`PERSON`]'s for a login case, [`CLIENT`] for the room by address it is set
    /// against.
    pub fn log_uid(self) -> Option<String> {
        match self.login_key() {
            Some(_) => Some(logins::person_uid(PERSON, None)),
            None => (self == Case::RoomYoung).then(|| CLIENT.to_string()),
        }
    }

    /// Whether the case is sent a wait token due for its draw (else an allow token).
    pub fn draws(self) -> bool {
        matches!(self, Case::DrawNoToll | Case::DrawTollPaid | Case::DrawHeld)
    }

    /// The bits of bot toll the case's room asks: [`TOLL_BITS`] in the toll cases,
    /// 0 in the others.
    pub fn toll_bits(self) -> u8 {
        match self {
            Case::DrawTollPaid | Case::DrawHeld => TOLL_BITS,
            _ => 0,
        }
    }

    /// The config-store entries the case's service has beside the service room's
    /// keys: the ten-room cases' [`rooms_config`], the draw cases' [`draw_config`],
    /// the login cases' [`login_config`], none for the others.
    pub fn store(self, kid: &str, allow_period: u64) -> Vec<(String, String)> {
        if let Some(i) = self.login_key() {
            login_config(i)
        } else if self.in_rooms() {
            rooms_config(kid, allow_period)
        } else if self.draws() {
            draw_config(self.toll_bits())
        } else {
            Vec::new()
        }
    }

    /// The path the case asks for: [`rooms_path`] in the ten-room service, `path`
    /// (the one-room service's protected path) otherwise.
    pub fn path(self, path: &str) -> String {
        if self.in_rooms() {
            rooms_path()
        } else {
            path.to_string()
        }
    }

    /// The name of the cookie the case's token travels in: `waiting_room`, or the
    /// ten-room cases' `waiting_room_r09`.
    pub fn cookie_name(self) -> String {
        if self.in_rooms() {
            format!("waiting_room_{}", rooms_room())
        } else {
            "waiting_room".to_string()
        }
    }

    /// The `Cookie` header the case is sent: an allow token for [`CLIENT`] signed
    /// with `key` (named `kid`), young (100 s after it was minted, at `now`) or
    /// renewing (a sixth of `allow_period` left) as [`Case::renewing_token`] says;
    /// the ten-room cases' signed with room [`rooms_room`]'s key (the tests' own minter,
    /// `test_support::mint`). The draw cases', a wait token due at `now` that wins
    /// ([`due_wait_token`]), owing the toll in the toll's room, and for
    /// [`Case::DrawTollPaid`] the first nonce that pays in `waiting_toll`. The login
    /// cases', the young allow token of [`PERSON`]'s uid and their JWT, valid from
    /// `now` for an hour, in [`LOGIN_COOKIE`].
    pub fn cookie(self, key: &str, kid: &str, now: u64, allow_period: u64) -> String {
        if let Some(i) = self.login_key() {
            let uid = logins::person_uid(PERSON, None);
            let token = mint::mint(key, "allow", now + allow_period - 100, &uid, kid);
            let claims = logins::claims(PERSON, now);
            let jwt = login_mint::mint(&claims, &logins::keys()[i], logins::KIDS[i]);
            return format!("{}={token}; {LOGIN_COOKIE}={jwt}", self.cookie_name());
        }
        if self.draws() {
            let toll = Some(self.toll_bits()).filter(|bits| *bits > 0);
            let (token, challenge) = due_wait_token(key, kid, now, toll);
            let cookie = format!("{}={token}", self.cookie_name());
            if self != Case::DrawTollPaid {
                return cookie;
            }
            let nonce = mint::toll_nonce(&challenge, u32::from(TOLL_BITS));
            return format!(
                "{cookie}; {}={nonce}",
                waiting_room::credentials::cookie_names::TOLL
            );
        }
        let exp = if self.renewing_token() {
            now + allow_period / 6
        } else {
            now + allow_period - 100
        };
        let token = if self.in_rooms() {
            mint::mint_in_room(key, &rooms_room(), "allow", exp, CLIENT, kid)
        } else {
            mint::mint(key, "allow", exp, CLIENT, kid)
        };
        format!("{}={token}", self.cookie_name())
    }

    /// The program a room case is set against: forward-only for the young token,
    /// forward + 2 HMAC for the renewing one; `None` for those programs themselves.
    pub fn reference(self) -> Option<Case> {
        match self {
            Case::RoomYoung
            | Case::LoginRs256
            | Case::LoginEs256
            | Case::LoginHs256
            | Case::RoomsYoung
            | Case::BaselineYoung => Some(Case::ForwardOnly),
            Case::RoomRenewing
            | Case::RoomsRenewing
            | Case::BaselineRenewing
            | Case::DrawNoToll
            | Case::DrawTollPaid => Some(Case::ForwardHmac),
            Case::DrawHeld | Case::ForwardOnly | Case::ForwardHmac => None,
        }
    }

    /// The case a room case is also set against, the same but for one thing: a
    /// ten-room case's one-room case (the same token in the one-room service), a
    /// login case's room by address (the same token, of the address), the
    /// toll-paying draw's draw without the toll; `None` for the others.
    pub fn pair(self) -> Option<Case> {
        match self {
            Case::LoginRs256 | Case::LoginEs256 | Case::LoginHs256 => Some(Case::RoomYoung),
            Case::RoomsYoung => Some(Case::RoomYoung),
            Case::RoomsRenewing => Some(Case::RoomRenewing),
            Case::DrawTollPaid => Some(Case::DrawNoToll),
            _ => None,
        }
    }

    /// The token the room must set in the case's cookie: a renewed allow token for
    /// the renewing cases, a new one for a won draw, a wait token that owes the toll
    /// again for a held draw; none for the others.
    fn sets(self) -> Option<&'static str> {
        match self {
            Case::RoomRenewing
            | Case::RoomsRenewing
            | Case::BaselineRenewing
            | Case::DrawNoToll
            | Case::DrawTollPaid => Some("an allow token"),
            Case::DrawHeld => Some("a wait token that owes"),
            _ => None,
        }
    }

    /// Checks one response of this case: it reached the origin (a held draw: the
    /// keep-waiting page, with the toll's check), and the room set a token exactly
    /// when it should, of the kind it should ([`Case::sets`]), in the case's cookie
    /// ([`Case::cookie_name`]; in the ten-room service, any room's cookie counts, and
    /// in the draw cases any `waiting_` cookie: the room sets no toll cookie).
    pub fn check(self, resp: &Response) -> Result<(), String> {
        if resp.status != 200 {
            return Err(format!("{}: status {}", self.name(), resp.status));
        }
        let toll_check = format!("data-bits=\"{TOLL_BITS}\"");
        let markers = match self {
            Case::DrawHeld => vec![
                (KEEP_WAITING_MARKER, "the keep-waiting page"),
                (&toll_check[..], "a page with the toll's check"),
            ],
            _ => vec![(ORIGIN_MARKER, "the origin's")],
        };
        for (marker, page) in markers {
            if !resp.body.contains(marker) {
                return Err(format!(
                    "{}: the response is not {page}: {}",
                    self.name(),
                    preview(&resp.body)
                ));
            }
        }
        let name = self.cookie_name();
        let prefix = if self.in_rooms() {
            "waiting_room".to_string()
        } else if self.draws() {
            "waiting_".to_string()
        } else {
            format!("{name}=")
        };
        let room_cookies: Vec<&str> = resp
            .all("set-cookie")
            .into_iter()
            .filter(|v| v.starts_with(&prefix))
            .collect();
        let Some(kind) = self.sets() else {
            return match room_cookies[..] {
                [] => Ok(()),
                _ => Err(format!(
                    "{}: sets a {prefix} cookie: {room_cookies:?}",
                    self.name()
                )),
            };
        };
        let [cookie] = room_cookies[..] else {
            return Err(format!(
                "{}: {} {prefix} cookies set, not one token",
                self.name(),
                room_cookies.len()
            ));
        };
        let Some(value) = cookie.strip_prefix(&format!("{name}=")) else {
            return Err(format!("{}: sets {cookie}, not {name}", self.name()));
        };
        let value = value.split(';').next().unwrap_or("");
        let text = STANDARD
            .decode(value)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default();
        let right = if self == Case::DrawHeld {
            text.starts_with("dec=wait&") && text.contains(&format!("&toll={TOLL_BITS}&sig="))
        } else {
            text.starts_with("dec=allow&")
        };
        if !right {
            return Err(format!("{}: not {kind}: {cookie}", self.name()));
        }
        Ok(())
    }
}

/// The room's log line in a line of Viceroy's output (`waitingroom_log :: waitingroom
/// t=…`), when it holds one.
pub fn room_line(output: &str) -> Option<&str> {
    let start = output.find(&format!("{} t=", waiting_room::log::PREFIX))?;
    Some(&output[start..])
}

impl Case {
    /// Checks the room's log line of one request of this case, when it has a
    /// [`Case::log_uid`]: an allow decision for that uid, no login refused.
    pub fn check_log(self, line: &str) -> Result<(), String> {
        let Some(uid) = self.log_uid() else {
            return Ok(());
        };
        let allowed = line.contains(" decision=allow ") && line.contains(&format!(" uid={uid} "));
        if !allowed || line.contains("login_refused") {
            return Err(format!(
                "{}: the log line is not an allow for uid {uid}: {line}",
                self.name()
            ));
        }
        Ok(())
    }
}

fn preview(body: &str) -> String {
    body.chars().take(200).collect()
}

/// The first field of a `/proc/<pid>/task/<tid>/schedstat` line: nanoseconds the
/// task has run on a CPU.
pub fn schedstat_ns(line: &str) -> Option<u64> {
    line.split_whitespace().next()?.parse().ok()
}

/// What a `/proc/<pid>/stat` line says of the whole process, threads that have
/// exited included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// Minor page faults.
    pub minflt: u64,
    /// CPU time in user mode, clock ticks.
    pub utime: u64,
    /// CPU time in the kernel, clock ticks.
    pub stime: u64,
}

/// Parses a `/proc/<pid>/stat` line.
pub fn stat(line: &str) -> Option<Stat> {
    // The command name (field 2) is in parentheses and may hold spaces or ')'.
    let after_name = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name, state is field 3: minflt is field 10, utime 14, stime 15.
    let field = |n: usize| fields.get(n - 3)?.parse().ok();
    Some(Stat {
        minflt: field(10)?,
        utime: field(14)?,
        stime: field(15)?,
    })
}

/// `GET path` with a `Cookie` header from [`CLIENT`], on a connection of its own
/// (Viceroy passes the demo origin's `Connection: close` on, so a connection could
/// not be kept anyway).
pub fn get(addr: SocketAddr, path: &str, cookie: &str) -> Result<Response, String> {
    test_support::http::try_get(addr, 1, path, &[("Cookie", cookie)])
        .map_err(|failure| format!("GET {path} from {CLIENT} to {addr}: {failure}"))
}

/// What one case cost over the measured rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub case: Case,
    pub requests: u64,
    /// CPU time of the Viceroy process, summed over its threads' schedstat.
    pub schedstat_ns: u64,
    /// Of which Viceroy's epoch ticker thread (it wakes every 50 µs whatever the
    /// load: CPU by the wall-clock second, not by the request).
    pub ticker_ns: u64,
    /// User CPU time of the Viceroy process (`utime` of its stat), in ns.
    pub user_ns: u64,
    /// System CPU time of the Viceroy process (`stime` of its stat), in ns.
    pub system_ns: u64,
    /// Minor page faults of the Viceroy process.
    pub minor_faults: u64,
}

impl Cost {
    /// CPU µs per request of the threads that serve requests: every thread but the
    /// epoch ticker.
    pub fn us_per_request(&self) -> f64 {
        self.per_request(self.schedstat_ns.saturating_sub(self.ticker_ns))
    }

    /// CPU µs per request of the epoch ticker.
    pub fn ticker_us_per_request(&self) -> f64 {
        self.per_request(self.ticker_ns)
    }

    /// CPU µs per request of the whole process (schedstat, every thread).
    pub fn all_us_per_request(&self) -> f64 {
        self.per_request(self.schedstat_ns)
    }

    /// User and system CPU µs per request of the whole process (stat, clock-tick
    /// resolution).
    pub fn user_system_us_per_request(&self) -> (f64, f64) {
        (
            self.per_request(self.user_ns),
            self.per_request(self.system_ns),
        )
    }

    /// Minor page faults per request.
    pub fn faults_per_request(&self) -> f64 {
        self.minor_faults as f64 / self.requests as f64
    }

    fn per_request(&self, ns: u64) -> f64 {
        ns as f64 / 1000.0 / self.requests as f64
    }
}

/// What a case is set against: [`Case::reference`] or [`Case::pair`].
type Against = fn(Case) -> Option<Case>;

/// Each room case's figure `per` (µs per request) divided by its reference's
/// ([`Case::reference`]), in the order of `costs`; a case whose reference is
/// missing is left out.
pub fn ratios(costs: &[Cost], per: fn(&Cost) -> f64) -> Vec<(Case, f64)> {
    ratios_to(costs, per, Case::reference)
}

/// Each case's figure `per` divided by that of the case `against` names, in the
/// order of `costs`; a case set against nothing there is left out.
fn ratios_to(costs: &[Cost], per: fn(&Cost) -> f64, against: Against) -> Vec<(Case, f64)> {
    costs
        .iter()
        .filter_map(|c| Some((c.case, ratio(costs, c.case, against, per)?)))
        .collect()
}

/// `case`'s figure `per`, when it is in `costs`.
fn figure(costs: &[Cost], case: Case, per: fn(&Cost) -> f64) -> Option<f64> {
    costs.iter().find(|c| c.case == case).map(per)
}

/// `case`'s figure `per` divided by that of the case `against` names, when both
/// are in `costs`.
fn ratio(costs: &[Cost], case: Case, against: Against, per: fn(&Cost) -> f64) -> Option<f64> {
    Some(figure(costs, case, per)? / figure(costs, against(case)?, per)?)
}

/// A ratio's name: "room young ÷ forward-only", "10 rooms young ÷ room young".
fn ratio_name(case: Case, against: Against) -> String {
    let other = against(case).map_or("?", Case::short);
    format!("{} ÷ {other}", case.short())
}

/// One run's tables: CPU per request per case, then each room case's ratio to
/// the program it is set against, and each paired case's to its pair.
pub fn table(costs: &[Cost]) -> String {
    let mut out = String::from(
        "| case | requests | request threads µs/request | epoch ticker µs/request | all threads µs/request | of which user, system (stat) | minor faults/request |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for c in costs {
        let (user, system) = c.user_system_us_per_request();
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {user:.0}, {system:.0} | {:.1} |\n",
            c.case.name(),
            c.requests,
            c.us_per_request(),
            c.ticker_us_per_request(),
            c.all_us_per_request(),
            c.faults_per_request()
        ));
    }
    if ratios(costs, Cost::us_per_request).is_empty() {
        return out;
    }
    out.push_str("\n| ratio | request threads | all threads |\n|---|---:|---:|\n");
    for against in [Case::reference as Against, Case::pair] {
        let request = ratios_to(costs, Cost::us_per_request, against);
        let all = ratios_to(costs, Cost::all_us_per_request, against);
        for ((case, ratio), (_, all)) in request.iter().zip(&all) {
            let name = ratio_name(*case, against);
            out.push_str(&format!("| {name} | {ratio:.3} | {all:.3} |\n"));
        }
    }
    out
}

/// The cases of `costs` in summary order: the young token's (those set against
/// forward-only), then the others (the renewing token's, the draws).
fn summary_order(costs: &[Cost]) -> Vec<Case> {
    let (others, young): (Vec<Case>, Vec<Case>) = costs
        .iter()
        .map(|c| c.case)
        .partition(|c| c.reference().unwrap_or(*c) != Case::ForwardOnly);
    young.into_iter().chain(others).collect()
}

/// The summary over runs, one row a run: the request threads' CPU per request of
/// each case, each room case's ratio, each paired case's ratio to its pair, and the
/// same ratios over all threads. The columns are the first run's cases.
pub fn summary(runs: &[Vec<Cost>]) -> String {
    let first = runs.first().map_or(&[][..], Vec::as_slice);
    let cases = summary_order(first);
    // The ratio columns: each room case's to its reference, then each paired case's
    // to its pair.
    let references = cases.iter().filter(|c| c.reference().is_some());
    let pairs = first.iter().map(|c| c.case).filter(|c| c.pair().is_some());
    let ratio_columns: Vec<(Case, Against)> = references
        .map(|c| (*c, Case::reference as Against))
        .chain(pairs.map(|c| (c, Case::pair as Against)))
        .collect();
    let mut head = vec!["run".to_string()];
    head.extend(cases.iter().map(|c| format!("{} µs", c.short())));
    head.extend(ratio_columns.iter().map(|(c, on)| ratio_name(*c, *on)));
    head.push("all threads: same ratios".to_string());
    let mut out = format!(
        "| {} |\n|{}\n",
        head.join(" | "),
        "---:|".repeat(head.len())
    );
    for (i, costs) in runs.iter().enumerate() {
        let ratios = |per: fn(&Cost) -> f64| {
            ratio_columns.iter().map(move |(case, on)| {
                format!("{:.3}", ratio(costs, *case, *on, per).unwrap_or(f64::NAN))
            })
        };
        let mut row = vec![(i + 1).to_string()];
        row.extend(cases.iter().map(|c| {
            let us = figure(costs, *c, Cost::us_per_request);
            format!("{:.1}", us.unwrap_or(f64::NAN))
        }));
        row.extend(ratios(Cost::us_per_request));
        let all: Vec<String> = ratios(Cost::all_us_per_request).collect();
        row.push(all.join(", "));
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use waiting_room::credentials::keys::Unread;
    use waiting_room::credentials::login;
    use waiting_room::pages::page::Page;
    use waiting_room::settings::config::Settings;
    use waiting_room::settings::context::RequestContext;
    use waiting_room::settings::identity::Identity;
    use waiting_room::settings::room_settings::Remembered;
    use waiting_room::{Action, Visit, plan};

    #[test]
    fn schedstat_first_field_is_the_run_time() {
        assert_eq!(schedstat_ns("123456789 4567 89\n"), Some(123_456_789));
        assert_eq!(schedstat_ns(""), None);
        assert_eq!(schedstat_ns("x 1 2"), None);
    }

    #[test]
    fn stat_fields_are_counted_after_an_awkward_name() {
        // minflt (10) is 900, utime (14) 250, stime (15) 40; the name holds a space and a ')'.
        let line = "4242 (tokio rt) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 40 0 0 20 0 9 0 \
                    123 456789 1000 18446744073709551615";
        let want = Stat {
            minflt: 900,
            utime: 250,
            stime: 40,
        };
        assert_eq!(stat(line), Some(want));
        assert_eq!(stat("4242 (short) S 1 2"), None);
        assert_eq!(stat("no parentheses"), None);
    }

    fn origin_page(set_cookies: &[&str]) -> Response {
        Response {
            status: 200,
            headers: set_cookies
                .iter()
                .map(|v| ("Set-Cookie".to_string(), v.to_string()))
                .collect(),
            body: format!("<p>{ORIGIN_MARKER}</p>"),
        }
    }

    #[test]
    fn checks_want_the_origin_and_a_renewal_exactly_when_due() {
        let renewed = format!(
            "waiting_room={}; Path=/",
            mint::mint("k", "allow", 1, "127.0.0.1", "key1")
        );
        let origin = "demo_origin=1; Path=/";
        assert!(Case::RoomYoung.check(&origin_page(&[origin])).is_ok());
        assert!(
            Case::RoomYoung
                .check(&origin_page(&[origin, &renewed]))
                .is_err()
        );
        assert!(
            Case::RoomRenewing
                .check(&origin_page(&[origin, &renewed]))
                .is_ok()
        );
        assert!(Case::RoomRenewing.check(&origin_page(&[origin])).is_err());
        let wait = format!("waiting_room={}", STANDARD.encode("dec=wait&exp=1"));
        assert!(Case::RoomRenewing.check(&origin_page(&[&wait])).is_err());
        assert!(Case::ForwardOnly.check(&origin_page(&[origin])).is_ok());
        let page = Response {
            status: 200,
            headers: Vec::new(),
            body: "a waiting page".to_string(),
        };
        assert!(Case::ForwardHmac.check(&page).is_err());
        let failed = Response {
            status: 503,
            ..origin_page(&[])
        };
        assert!(Case::ForwardOnly.check(&failed).is_err());
    }

    fn cost(case: Case, us: u64) -> Cost {
        Cost {
            case,
            requests: 1000,
            schedstat_ns: (us + 100) * 1_000_000,
            ticker_ns: 100 * 1_000_000,
            user_ns: us * 1_000_000,
            system_ns: 100 * 1_000_000,
            minor_faults: 25_000,
        }
    }

    #[test]
    fn ratios_set_each_room_case_against_its_baseline() {
        let costs = vec![
            cost(Case::RoomYoung, 840),
            cost(Case::RoomRenewing, 900),
            cost(Case::ForwardOnly, 800),
            cost(Case::ForwardHmac, 810),
        ];
        let young_renewing = |ratios: Vec<(Case, f64)>| match ratios[..] {
            [(Case::RoomYoung, young), (Case::RoomRenewing, renewing)] => (young, renewing),
            _ => panic!("{ratios:?}"),
        };
        let (young, renewing) = young_renewing(ratios(&costs, Cost::us_per_request));
        assert!((young - 1.05).abs() < 1e-9);
        assert!((renewing - 900.0 / 810.0).abs() < 1e-9);
        // The ticker's constant pulls the all-threads ratios towards 1.
        let (young_all, _) = young_renewing(ratios(&costs, Cost::all_us_per_request));
        assert!((young_all - 940.0 / 900.0).abs() < 1e-9);
        let table = table(&costs);
        assert!(table.contains(
            "| room, young token (kept) | 1000 | 840.0 | 100.0 | 940.0 | 840, 100 | 25.0 |"
        ));
        assert!(table.contains("| room young ÷ forward-only | 1.050 | 1.044 |"));
        assert!(table.contains("| room renewing ÷ forward + 2 HMAC | 1.111 | 1.099 |"));
        assert!(!table.contains("baseline"));
        assert_eq!(
            summary(&[costs]),
            "| run | room young µs | forward-only µs | room renewing µs | forward + 2 HMAC µs \
             | room young ÷ forward-only | room renewing ÷ forward + 2 HMAC | all threads: same ratios |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|\n\
             | 1 | 840.0 | 800.0 | 900.0 | 810.0 | 1.050 | 1.111 | 1.044, 1.099 |\n"
        );
        assert!(ratios(&[cost(Case::RoomYoung, 1)], Cost::us_per_request).is_empty());
    }

    #[test]
    fn a_baseline_room_is_set_against_the_same_programs() {
        let costs: Vec<Cost> = Case::ALL
            .into_iter()
            .filter(|case| !case.in_rooms() && !case.draws() && case.login_key().is_none())
            .zip([840, 900, 880, 950, 800, 810])
            .map(|(case, us)| cost(case, us))
            .collect();
        let table = table(&costs);
        assert!(table.contains("| baseline room, young token (kept) | 1000 | 880.0 |"));
        assert!(table.contains("| baseline young ÷ forward-only | 1.100 |"));
        assert!(table.contains("| baseline renewing ÷ forward + 2 HMAC | 1.173 |"));
        let summary = summary(&[costs]);
        assert!(summary.starts_with(
            "| run | room young µs | baseline young µs | forward-only µs \
             | room renewing µs | baseline renewing µs | forward + 2 HMAC µs \
             | room young ÷ forward-only | baseline young ÷ forward-only \
             | room renewing ÷ forward + 2 HMAC | baseline renewing ÷ forward + 2 HMAC |"
        ));
        assert!(summary.contains(
            "| 1 | 840.0 | 880.0 | 800.0 | 900.0 | 950.0 | 810.0 | 1.050 | 1.100 | 1.111 | 1.173 |"
        ));
    }

    const KEY: &str = "cost-key-one-0123456789abcdef0123456789";
    const NOW: u64 = 1_700_000_000;

    /// The config store of `case`'s service: the service room's keys as the driver's
    /// manifest has them ([`service_config`]), and the case's own ([`Case::store`]).
    fn store_of(case: Case) -> HashMap<String, String> {
        let mut flat = service_config("/events", "key1", 3600);
        flat.extend(case.store("key1", 3600));
        waiting_room::settings::layout::store_entries(
            flat.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .into_iter()
        .collect()
    }

    /// The ten-room service's config store, with [`rooms_config`].
    fn ten_room_store() -> HashMap<String, String> {
        store_of(Case::RoomsYoung)
    }

    fn settings_for(store: &HashMap<String, String>, path: &str) -> RequestContext {
        settings_at(store, path, NOW)
    }

    fn settings_at(store: &HashMap<String, String>, path: &str, now: u64) -> RequestContext {
        let lookup = Remembered::new(|key: &str| store.get(key).cloned());
        RequestContext::for_request(&lookup, None, path, now)
    }

    /// The ten-room service's plan for a request from [`CLIENT`] for `path` with
    /// `cookie`.
    fn room_plan(path: &str, cookie: &str) -> waiting_room::Plan {
        plan_in(&ten_room_store(), NOW, path, cookie)
    }

    /// The room's plan, with config store `store`, at `now`, for a request from
    /// [`CLIENT`] for `path` with `cookie`.
    fn plan_in(
        store: &HashMap<String, String>,
        now: u64,
        path: &str,
        cookie: &str,
    ) -> waiting_room::Plan {
        let keys = HashMap::from([("key1".to_string(), KEY.to_string())]);
        let visit = Visit {
            now,
            millis: 0,
            uid: CLIENT,
            path,
            path_and_query: path,
            cookie_header: Some(cookie),
            ..Visit::default()
        };
        plan(&visit, &settings_at(store, path, now), &keys)
    }

    #[test]
    fn the_ten_rooms_nest_and_the_request_is_in_the_last() {
        assert_eq!(room_path(0), "/events/r00/");
        assert_eq!(
            rooms_path(),
            "/events/r00/r01/r02/r03/r04/r05/r06/r07/r08/r09/"
        );
        assert_eq!(rooms_room(), "r09");
        let store = ten_room_store();
        let index = waiting_room::settings::room::Index::parse(&store["rooms"]);
        assert!(index.problems.is_empty(), "{:?}", index.problems);
        assert_eq!(index.rooms.len(), ROOM_COUNT);
        // Every room's scope holds the request, and the service room's /events too.
        for scope in &index.rooms {
            assert!(rooms_path().starts_with(&scope.paths[0]), "{scope:?}");
        }
        let room = index.room_for(None, &rooms_path(), Some("/events".len()));
        assert_eq!(room.map(|s| s.name.as_str()), Some("r09"));
    }

    #[test]
    fn each_room_has_two_rules_the_requests_do_not_match() {
        let store = ten_room_store();
        let mut rules = 0;
        for i in 0..ROOM_COUNT {
            let settings = settings_for(&store, &room_path(i));
            let name = settings.room.name().map(|n| n.as_str().to_string());
            assert_eq!(name, Some(room_name(i)));
            assert!(settings.fallbacks.is_empty(), "{:?}", settings.fallbacks);
            assert!(settings.settings.enabled);
            assert_eq!(settings.settings.allow_period_timeout, 3600);
            rules +=
                settings.settings.bypass_addresses.len() + settings.settings.bypass_paths.len();
            let bypass = waiting_room::settings::rules::bypass_scope(
                CLIENT.parse().ok(),
                &rooms_path(),
                &settings.settings.bypass_paths,
                &settings.settings.bypass_addresses,
            );
            assert_eq!(bypass, None, "{}", room_name(i));
        }
        assert_eq!(rules, 20);
        let static_path = format!("{}static/a.css", rooms_path());
        assert!(
            room_plan(&static_path, "")
                .log_line()
                .contains("scope=bypass-path")
        );
    }

    #[test]
    fn the_ten_room_cases_carry_a_token_of_their_room() {
        let exp = NOW + 3600 - 100;
        assert_eq!(
            Case::RoomsYoung.cookie(KEY, "key1", NOW, 3600),
            format!(
                "waiting_room_r09={}",
                mint::mint_in_room(KEY, "r09", "allow", exp, CLIENT, "key1")
            )
        );
        assert_eq!(
            Case::RoomYoung.cookie(KEY, "key1", NOW, 3600),
            format!(
                "waiting_room={}",
                mint::mint(KEY, "allow", exp, CLIENT, "key1")
            )
        );
        assert_eq!(
            Case::BaselineRenewing.cookie(KEY, "key1", NOW, 3600),
            format!(
                "waiting_room={}",
                mint::mint(KEY, "allow", NOW + 600, CLIENT, "key1")
            )
        );
        assert_eq!(Case::RoomsRenewing.path("/events"), rooms_path());
        assert_eq!(Case::ForwardOnly.path("/events"), "/events");
    }

    #[test]
    fn the_room_keeps_and_renews_the_ten_room_tokens_as_the_checks_want() {
        let young = room_plan(
            &rooms_path(),
            &Case::RoomsYoung.cookie(KEY, "key1", NOW, 3600),
        );
        assert_eq!(young.action, Action::Forward);
        assert_eq!(young.set_cookie, None);
        let line = &young.log_line();
        assert!(line.contains("decision=allow"), "{line}");
        assert!(line.contains(" room=r09"), "{line}");
        assert!(!line.contains("config_fallback"), "{line}");
        assert!(Case::RoomsYoung.check(&origin_page(&[])).is_ok());

        let renewing = room_plan(
            &rooms_path(),
            &Case::RoomsRenewing.cookie(KEY, "key1", NOW, 3600),
        );
        assert_eq!(renewing.action, Action::Forward);
        let set_cookie = renewing.set_cookie.expect("a renewed token");
        assert!(set_cookie.starts_with("waiting_room_r09="), "{set_cookie}");
        assert!(
            Case::RoomsRenewing
                .check(&origin_page(&[&set_cookie]))
                .is_ok()
        );

        // A token of another room, or of the service room, is no token here.
        let r08 = mint::mint_in_room(KEY, "r08", "allow", NOW + 3500, CLIENT, "key1");
        let service = mint::mint(KEY, "allow", NOW + 3500, CLIENT, "key1");
        for token in [r08, service] {
            let other = room_plan(&rooms_path(), &format!("waiting_room_r09={token}"));
            assert_ne!(other.action, Action::Forward, "{}", other.log_line());
        }
    }

    #[test]
    fn the_ten_room_checks_want_their_rooms_cookie() {
        let token = mint::mint("k", "allow", 1, "127.0.0.1", "key1");
        let r09 = format!("waiting_room_r09={token}; Path=/");
        let service = format!("waiting_room={token}; Path=/");
        let r08 = format!("waiting_room_r08={token}; Path=/");
        let origin = "demo_origin=1; Path=/";
        let check = |case: Case, cookies: &[&str]| case.check(&origin_page(cookies));
        assert!(check(Case::RoomsRenewing, &[origin, &r09]).is_ok());
        assert!(check(Case::RoomsRenewing, &[origin]).is_err());
        assert!(check(Case::RoomsRenewing, &[&service]).is_err());
        assert!(check(Case::RoomsRenewing, &[&r08]).is_err());
        assert!(check(Case::RoomsRenewing, &[&r09, &service]).is_err());
        let wait = format!("waiting_room_r09={}", STANDARD.encode("dec=wait&exp=1"));
        assert!(check(Case::RoomsRenewing, &[&wait]).is_err());
        assert!(check(Case::RoomsYoung, &[origin]).is_ok());
        for cookie in [&r09, &service, &r08] {
            assert!(check(Case::RoomsYoung, &[cookie]).is_err(), "{cookie}");
        }
        // The one-room cases still look at their own cookie only.
        assert!(check(Case::RoomYoung, &[&r09]).is_ok());
        assert!(check(Case::RoomRenewing, &[&r09]).is_err());
    }

    #[test]
    fn the_ten_room_entries_are_inline_toml() {
        let lines = toml_entries(&rooms_config("key1", 3600));
        assert_eq!(lines.lines().count(), 1 + ROOM_COUNT);
        assert!(
            lines.starts_with("\"rooms\" = '{\"r00\": {\"paths\": [\"/events/r00/\"]}, \"r01\": ")
        );
        assert!(lines.contains(
            "\n\"room.r00\" = '{\"enabled\": true, \"allow_percentage\": 50, \
             \"wait_period_duration\": 30, \"allow_period_timeout\": 3600, \
             \"cookie_lifetime\": 7200, \"active_key\": \"key1\", \
             \"bypass_addresses\": [\"198.51.100.0/28\"], \
             \"bypass_paths\": [\"/events/r00/static/\"]}'\n"
        ));
        assert!(lines.contains("\"bypass_addresses\": [\"198.51.100.144/28\"]"));
    }

    #[test]
    fn ten_room_cases_are_set_against_the_programs_and_the_one_room_cases() {
        let costs: Vec<Cost> = Case::ALL
            .into_iter()
            .filter(|case| !case.draws() && case.login_key().is_none())
            .filter(|case| !matches!(case, Case::BaselineYoung | Case::BaselineRenewing))
            .zip([840, 900, 880, 954, 800, 810])
            .map(|(case, us)| cost(case, us))
            .collect();
        let table = table(&costs);
        assert!(table.contains(
            "| room among 10 rooms, young token (kept) | 1000 | 880.0 | 100.0 | 980.0 |"
        ));
        assert!(table.contains("| 10 rooms young ÷ forward-only | 1.100 |"));
        assert!(table.contains("| 10 rooms renewing ÷ forward + 2 HMAC | 1.178 |"));
        assert!(table.contains("| 10 rooms young ÷ room young | 1.048 | 1.043 |"));
        assert!(table.contains("| 10 rooms renewing ÷ room renewing | 1.060 | 1.054 |"));
        assert_eq!(
            summary(&[costs]),
            "| run | room young µs | 10 rooms young µs | forward-only µs | room renewing µs \
             | 10 rooms renewing µs | forward + 2 HMAC µs | room young ÷ forward-only \
             | 10 rooms young ÷ forward-only | room renewing ÷ forward + 2 HMAC \
             | 10 rooms renewing ÷ forward + 2 HMAC | 10 rooms young ÷ room young \
             | 10 rooms renewing ÷ room renewing | all threads: same ratios |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
             | 1 | 840.0 | 880.0 | 800.0 | 900.0 | 954.0 | 810.0 | 1.050 | 1.100 | 1.111 \
             | 1.178 | 1.048 | 1.060 | 1.044, 1.089, 1.099, 1.158, 1.043, 1.054 |\n"
        );
    }

    #[test]
    fn each_program_that_forwards_gets_the_token_of_the_rooms_set_against_it() {
        // The draws are sent wait tokens; forward + 2 HMAC, set against them, does
        // not read its token.
        for case in Case::ALL.into_iter().filter(|c| !c.draws()) {
            if let Some(reference) = case.reference() {
                assert_eq!(
                    case.renewing_token(),
                    reference.renewing_token(),
                    "{case:?}"
                );
            }
        }
    }

    #[test]
    fn the_draw_rooms_differ_only_in_the_toll() {
        for case in [Case::DrawNoToll, Case::DrawTollPaid, Case::DrawHeld] {
            let settings = settings_for(&store_of(case), "/events");
            assert!(settings.fallbacks.is_empty(), "{:?}", settings.fallbacks);
            assert_eq!(settings.settings.redeem_window(), REDEEM_WINDOW);
            assert_eq!(settings.settings.bot_toll_bits, case.toll_bits());
            assert_eq!(case.path("/events"), "/events");
        }
        assert_eq!(Case::DrawNoToll.toll_bits(), 0);
        assert_eq!(Case::DrawTollPaid.toll_bits(), 16);
        let (paid, held) = (store_of(Case::DrawTollPaid), store_of(Case::DrawHeld));
        assert_eq!(paid, held);
        let free = settings_for(&store_of(Case::DrawNoToll), "/events");
        assert_eq!(
            settings_for(&paid, "/events").settings,
            Settings {
                bot_toll_bits: TOLL_BITS,
                ..free.settings
            }
        );
        assert_eq!(
            settings_for(&store_of(Case::RoomYoung), "/events")
                .settings
                .bot_toll_bits,
            0
        );
    }

    #[test]
    fn the_draw_cases_carry_a_due_winning_token_and_the_paid_one_its_nonce() {
        let cookie = |case: Case| case.cookie(KEY, "key1", NOW, 3600);
        let free = mint::open(
            cookie(Case::DrawNoToll)
                .strip_prefix("waiting_room=")
                .unwrap(),
        );
        assert!(
            free.starts_with("dec=wait&") && !free.contains("&toll="),
            "{free}"
        );
        assert!(mint::number(&free, "exp") < NOW);
        let held = cookie(Case::DrawHeld);
        let paid = cookie(Case::DrawTollPaid);
        let (token, nonce) = paid.split_once("; waiting_toll=").expect("a nonce");
        assert_eq!(token, held, "the same token, paid or not");
        let text = mint::open(token.strip_prefix("waiting_room=").unwrap());
        assert!(text.contains("&toll=16&sig=0x"), "{text}");
        let challenge = text.rsplit("&sig=0x").next().unwrap();
        assert!(mint::toll_pays(challenge, nonce.parse().unwrap(), 16));
        assert!(!held.contains("waiting_toll"));
    }

    #[test]
    fn the_room_draws_the_draw_tokens_as_the_checks_want_through_a_run() {
        // At once, and the longest run --max-seconds allows by default later.
        for now in [NOW, NOW + 900] {
            for case in [Case::DrawNoToll, Case::DrawTollPaid] {
                let store = store_of(case);
                let plan = plan_in(&store, now, "/events", &case.cookie(KEY, "key1", NOW, 3600));
                let line = &plan.log_line();
                assert_eq!(plan.action, Action::Forward, "{line}");
                assert!(line.contains("transition=lottery-won"), "{line}");
                assert_eq!(
                    line.contains(" toll=paid"),
                    case == Case::DrawTollPaid,
                    "{line}"
                );
                let set_cookie = plan.set_cookie.expect("an allow token");
                assert!(case.check(&origin_page(&[&set_cookie])).is_ok());
                assert!(case.check(&origin_page(&[])).is_err());
            }
            let held = Case::DrawHeld;
            let plan = plan_in(
                &store_of(held),
                now,
                "/events",
                &held.cookie(KEY, "key1", NOW, 3600),
            );
            let line = &plan.log_line();
            assert_eq!(plan.action, Action::Serve(Page::KeepWaiting), "{line}");
            assert!(line.contains("transition=toll-unpaid"), "{line}");
            let set_cookie = plan.set_cookie.expect("a wait token");
            assert!(held.check(&held_page(&[&set_cookie])).is_ok());
            assert!(held.check(&origin_page(&[&set_cookie])).is_err());
            assert!(
                Case::DrawTollPaid
                    .check(&held_page(&[&set_cookie]))
                    .is_err()
            );
        }
    }

    /// The keep-waiting page with the toll's check, as a held draw is answered.
    fn held_page(set_cookies: &[&str]) -> Response {
        Response {
            body: format!("<h1>{KEEP_WAITING_MARKER}</h1><div data-bits=\"16\">"),
            ..origin_page(set_cookies)
        }
    }

    #[test]
    fn the_draw_checks_want_one_token_of_their_kind_and_no_toll_cookie() {
        let allow = format!(
            "waiting_room={}; Path=/",
            mint::mint("k", "allow", 1, "127.0.0.1", "key1")
        );
        let (owing, _) = mint::mint_toll("k", 1, "127.0.0.1", "key1", 16);
        let owing = format!("waiting_room={owing}; Path=/");
        let (paid, _) = mint::mint_toll("k", 1, "127.0.0.1", "key1", 0);
        let paid = format!("waiting_room={paid}; Path=/");
        let toll = "waiting_toll=1; Path=/";
        let paying = Case::DrawTollPaid;
        assert!(paying.check(&origin_page(&[&allow])).is_ok());
        assert!(paying.check(&origin_page(&[&allow, toll])).is_err());
        assert!(paying.check(&origin_page(&[&owing])).is_err());
        let held = Case::DrawHeld;
        assert!(held.check(&held_page(&[&owing])).is_ok());
        assert!(held.check(&held_page(&[&paid])).is_err());
        assert!(held.check(&held_page(&[&allow])).is_err());
        assert!(held.check(&held_page(&[])).is_err());
        let no_check = Response {
            body: format!("<h1>{KEEP_WAITING_MARKER}</h1>"),
            ..origin_page(&[&owing])
        };
        assert!(held.check(&no_check).is_err());
    }

    #[test]
    fn the_toll_paying_draw_is_set_against_the_draw_without_it() {
        let costs: Vec<Cost> = Case::ALL
            .into_iter()
            .filter(|case| !matches!(case, Case::BaselineYoung | Case::BaselineRenewing))
            .filter(|case| case.login_key().is_none())
            .zip([840, 900, 880, 954, 920, 966, 1100, 800, 810])
            .map(|(case, us)| cost(case, us))
            .collect();
        let table = table(&costs);
        assert!(table.contains("| room, draw paying the toll | 1000 | 966.0 | 100.0 | 1066.0 |"));
        assert!(table.contains("| draw no toll ÷ forward + 2 HMAC | 1.136 |"));
        assert!(table.contains("| draw toll paid ÷ draw no toll | 1.050 | 1.045 |"));
        assert!(!table.contains("draw held ÷"));
        let summary = summary(&[costs]);
        assert!(
            summary.starts_with(
                "| run | room young µs | 10 rooms young µs | forward-only µs | room renewing µs \
             | 10 rooms renewing µs | draw no toll µs | draw toll paid µs | draw held µs \
             | forward + 2 HMAC µs | room young ÷ forward-only | 10 rooms young ÷ forward-only \
             | room renewing ÷ forward + 2 HMAC | 10 rooms renewing ÷ forward + 2 HMAC \
             | draw no toll ÷ forward + 2 HMAC | draw toll paid ÷ forward + 2 HMAC \
             | 10 rooms young ÷ room young | 10 rooms renewing ÷ room renewing \
             | draw toll paid ÷ draw no toll | all threads: same ratios |"
            ),
            "{summary}"
        );
        assert!(
            summary.contains("| 920.0 | 966.0 | 1100.0 | 810.0 |"),
            "{summary}"
        );
        assert!(
            summary.contains("| 1.136 | 1.193 | 1.048 | 1.060 | 1.050 |"),
            "{summary}"
        );
    }

    const LOGINS: [Case; 3] = [Case::LoginRs256, Case::LoginEs256, Case::LoginHs256];

    #[test]
    fn the_login_services_differ_from_the_address_one_only_in_the_login() {
        let address = settings_for(&store_of(Case::RoomYoung), "/events").settings;
        for (i, case) in LOGINS.into_iter().enumerate() {
            let login = settings_for(&store_of(case), "/events");
            assert!(login.fallbacks.is_empty(), "{:?}", login.fallbacks);
            let settings = login.settings;
            assert_eq!(settings.identity, Identity::Login);
            assert_eq!(settings.login_cookie.as_deref(), Some(LOGIN_COOKIE));
            let kids: Vec<&str> = settings.login_keys.iter().map(|k| k.kid.as_str()).collect();
            assert_eq!(kids, [logins::KIDS[i]], "{case:?}: one key");
            assert_eq!(
                Settings {
                    identity: Identity::Address,
                    login_issuer: None,
                    login_audience: None,
                    login_cookie: None,
                    login_hash_key: None,
                    login_keys: Vec::new(),
                    ..settings
                },
                address,
                "{case:?}"
            );
            assert_eq!(
                (case.path("/events"), case.cookie_name()),
                ("/events".to_string(), "waiting_room".to_string())
            );
        }
        assert!(login_secret_store().contains("\nkey = \"site-hs\"\n"));
    }

    #[test]
    fn the_room_knows_the_person_by_each_login_and_keeps_their_token() {
        for case in LOGINS {
            let store = store_of(case);
            let context = settings_for(&store, "/events");
            let cookie = case.cookie(KEY, "key1", NOW, 3600);
            let mut secret = |kid: &str| -> Result<Option<Vec<u8>>, Unread> {
                Ok((kid == logins::KIDS[2]).then(|| logins::HS256_SECRET.as_bytes().to_vec()))
            };
            let login = login::of_request(
                &context.settings,
                "/events",
                || None,
                Some(&cookie),
                CLIENT,
                NOW,
                &mut secret,
            )
            .expect("a login read");
            let uid = logins::person_uid(PERSON, None);
            assert_eq!(login.uid(CLIENT), uid, "{case:?}: {login:?}");
            assert_eq!(case.log_uid(), Some(uid.clone()));
            let keys = HashMap::from([("key1".to_string(), KEY.to_string())]);
            let visit = Visit {
                now: NOW,
                uid: &uid,
                path: "/events",
                path_and_query: "/events",
                cookie_header: Some(&cookie),
                login: Some(&login),
                ..Visit::default()
            };
            let plan = plan(&visit, &context, &keys);
            let line = &plan.log_line();
            assert_eq!(plan.action, Action::Forward, "{line}");
            assert_eq!(plan.set_cookie, None, "{line}");
            assert!(case.check(&origin_page(&[])).is_ok());
            assert!(case.check_log(line).is_ok(), "{line}");
            // The address's line is not the person's, nor the person's the address's.
            let by_address = room_plan_in(
                &store_of(Case::RoomYoung),
                &Case::RoomYoung.cookie(KEY, "key1", NOW, 3600),
            );
            assert!(case.check_log(&by_address.log_line()).is_err());
            assert!(Case::RoomYoung.check_log(&by_address.log_line()).is_ok());
            assert!(Case::RoomYoung.check_log(line).is_err());
        }
        let output = "waitingroom_log :: waitingroom t=1 decision=allow uid=127.0.0.1 p=50";
        assert_eq!(room_line(output), Some(&output[19..]));
        assert_eq!(room_line("INFO viceroy: listening"), None);
        assert_eq!(Case::ForwardOnly.log_uid(), None);
        assert!(Case::ForwardOnly.check_log("").is_ok());
    }

    /// The one-room service's plan (config store `store`) for a request from
    /// [`CLIENT`] for `/events` with `cookie`, at [`NOW`].
    fn room_plan_in(store: &HashMap<String, String>, cookie: &str) -> waiting_room::Plan {
        plan_in(store, NOW, "/events", cookie)
    }

    #[test]
    fn each_login_is_set_against_the_room_by_address() {
        let costs: Vec<Cost> = [
            Case::RoomYoung,
            Case::LoginRs256,
            Case::LoginEs256,
            Case::LoginHs256,
            Case::ForwardOnly,
        ]
        .into_iter()
        .zip([840, 1260, 1050, 861, 800])
        .map(|(case, us)| cost(case, us))
        .collect();
        let table = table(&costs);
        assert!(
            table.contains("| login RS256 ÷ forward-only | 1.575 |"),
            "{table}"
        );
        assert!(
            table.contains("| login RS256 ÷ room young | 1.500 | 1.447 |"),
            "{table}"
        );
        assert!(
            table.contains("| login HS256 ÷ room young | 1.025 |"),
            "{table}"
        );
        assert_eq!(
            summary(&[costs]).lines().next(),
            Some(
                "| run | room young µs | login RS256 µs | login ES256 µs | login HS256 µs \
                 | forward-only µs | room young ÷ forward-only | login RS256 ÷ forward-only \
                 | login ES256 ÷ forward-only | login HS256 ÷ forward-only \
                 | login RS256 ÷ room young | login ES256 ÷ room young \
                 | login HS256 ÷ room young | all threads: same ratios |"
            )
        );
    }
}
