//! The pure parts of the whole-program cost run (`src/main.rs` drives the processes):
//! reading a process's CPU time from `/proc`, minting the room's tokens, the
//! request each case is sent (with the tests' HTTP client, test-support's `http`),
//! the checks each case's responses must pass, and the tables.

use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
pub use test_support::http::Response;

/// The loopback address requests come from: the `uid` of the tokens sent.
pub const CLIENT: &str = "127.0.0.1";

/// The marker of every page the demo origin answers.
pub const ORIGIN_MARKER: &str = "You reached the demo origin";

/// The programs of a run, on the token each is sent, in the order each round
/// sends to them (the baseline room's cases only when there is a baseline room).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// The room, on a young allow token (more than half its period left): lazy
    /// renewal keeps it, one HMAC and no `Set-Cookie`.
    RoomYoung,
    /// The room, on an allow token with less than half its period left: verified
    /// and renewed, two HMACs and a fresh `Set-Cookie`.
    RoomRenewing,
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
    pub const ALL: [Case; 6] = [
        Case::RoomYoung,
        Case::RoomRenewing,
        Case::BaselineYoung,
        Case::BaselineRenewing,
        Case::ForwardOnly,
        Case::ForwardHmac,
    ];

    /// The case's name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Case::RoomYoung => "room, young token (kept)",
            Case::RoomRenewing => "room, renewing token",
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
            Case::RoomRenewing => "room renewing",
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
            Case::RoomRenewing | Case::BaselineRenewing | Case::ForwardHmac
        )
    }

    /// The program a room case is set against: forward-only for the young token,
    /// forward + 2 HMAC for the renewing one; `None` for those programs themselves.
    pub fn reference(self) -> Option<Case> {
        match self {
            Case::RoomYoung | Case::BaselineYoung => Some(Case::ForwardOnly),
            Case::RoomRenewing | Case::BaselineRenewing => Some(Case::ForwardHmac),
            Case::ForwardOnly | Case::ForwardHmac => None,
        }
    }

    /// Checks one response of this case: it reached the origin, and the room
    /// renewed the token exactly when it should.
    pub fn check(self, resp: &Response) -> Result<(), String> {
        if resp.status != 200 {
            return Err(format!("{}: status {}", self.name(), resp.status));
        }
        if !resp.body.contains(ORIGIN_MARKER) {
            return Err(format!(
                "{}: the response is not the origin's: {}",
                self.name(),
                preview(&resp.body)
            ));
        }
        let room_cookies: Vec<&str> = resp
            .all("set-cookie")
            .into_iter()
            .filter(|v| v.starts_with("waiting_room="))
            .collect();
        match self {
            Case::RoomRenewing | Case::BaselineRenewing => {
                let [cookie] = room_cookies[..] else {
                    return Err(format!(
                        "{}: {} waiting_room cookies set, not one renewed token",
                        self.name(),
                        room_cookies.len()
                    ));
                };
                let value = cookie["waiting_room=".len()..]
                    .split(';')
                    .next()
                    .unwrap_or("");
                let text = STANDARD
                    .decode(value)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .unwrap_or_default();
                if !text.starts_with("dec=allow&") {
                    return Err(format!(
                        "{}: not a renewed allow token: {cookie}",
                        self.name()
                    ));
                }
                Ok(())
            }
            _ if !room_cookies.is_empty() => Err(format!(
                "{}: sets a waiting_room cookie: {room_cookies:?}",
                self.name()
            )),
            _ => Ok(()),
        }
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

/// `"0x" + lowercase hex(HMAC-SHA256(key, text))`, the room's signature format.
pub fn signature(key: &str, text: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("any key length");
    mac.update(text.as_bytes());
    format!("0x{}", hex::encode(mac.finalize().into_bytes()))
}

/// An allow token for visitor `uid` until `exp`, signed with `key` named `kid`.
pub fn allow_token(key: &str, kid: &str, exp: u64, uid: &str) -> String {
    let text = format!("dec=allow&exp={exp}&uid={uid}&kid={kid}");
    let sig = signature(key, &text);
    STANDARD.encode(format!("{text}&sig={sig}"))
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

/// Each room case's figure `per` (µs per request) divided by its reference's
/// ([`Case::reference`]), in the order of `costs`; a case whose reference is
/// missing is left out.
pub fn ratios(costs: &[Cost], per: fn(&Cost) -> f64) -> Vec<(Case, f64)> {
    let of = |case: Case| costs.iter().find(|c| c.case == case).map(per);
    costs
        .iter()
        .filter_map(|c| Some((c.case, per(c) / of(c.case.reference()?)?)))
        .collect()
}

/// A ratio's name: "room young ÷ forward-only".
fn ratio_name(case: Case) -> String {
    let reference = case.reference().map_or("?", Case::short);
    format!("{} ÷ {reference}", case.short())
}

/// One run's tables: CPU per request per case, then each room case's ratio to
/// the program it is set against.
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
    let all = ratios(costs, Cost::all_us_per_request);
    let request = ratios(costs, Cost::us_per_request);
    if !request.is_empty() {
        out.push_str("\n| ratio | request threads | all threads |\n|---|---:|---:|\n");
        for ((case, ratio), (_, all)) in request.iter().zip(&all) {
            out.push_str(&format!(
                "| {} | {ratio:.3} | {all:.3} |\n",
                ratio_name(*case)
            ));
        }
    }
    out
}

/// The cases of `costs` in summary order: the young token's, then the renewing one's.
fn summary_order(costs: &[Cost]) -> Vec<Case> {
    let (renewing, young): (Vec<Case>, Vec<Case>) = costs
        .iter()
        .map(|c| c.case)
        .partition(|c| c.renewing_token());
    young.into_iter().chain(renewing).collect()
}

/// The summary over runs, one row a run: the request threads' CPU per request of
/// each case, each room case's ratio, and the same ratios over all threads. The
/// columns are the first run's cases.
pub fn summary(runs: &[Vec<Cost>]) -> String {
    let first = runs.first().map_or(&[][..], Vec::as_slice);
    let cases = summary_order(first);
    let rooms: Vec<Case> = cases
        .iter()
        .copied()
        .filter(|c| c.reference().is_some())
        .collect();
    let mut head = vec!["run".to_string()];
    head.extend(cases.iter().map(|c| format!("{} µs", c.short())));
    head.extend(rooms.iter().map(|c| ratio_name(*c)));
    head.push("all threads: same ratios".to_string());
    let mut out = format!(
        "| {} |\n|{}\n",
        head.join(" | "),
        "---:|".repeat(head.len())
    );
    for (i, costs) in runs.iter().enumerate() {
        let per = |case: Case| {
            costs
                .iter()
                .find(|c| c.case == case)
                .map_or(f64::NAN, Cost::us_per_request)
        };
        let ratio = |ratios: &[(Case, f64)], case: Case| {
            ratios
                .iter()
                .find(|(c, _)| *c == case)
                .map_or(f64::NAN, |(_, r)| *r)
        };
        let (request, all) = (
            ratios(costs, Cost::us_per_request),
            ratios(costs, Cost::all_us_per_request),
        );
        let mut row = vec![(i + 1).to_string()];
        row.extend(cases.iter().map(|c| format!("{:.1}", per(*c))));
        row.extend(rooms.iter().map(|c| format!("{:.3}", ratio(&request, *c))));
        let all: Vec<String> = rooms
            .iter()
            .map(|c| format!("{:.3}", ratio(&all, *c)))
            .collect();
        row.push(all.join(", "));
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn tokens_are_signed_as_the_room_expects() {
        let token = allow_token("k", "key1", 1_700_000_000, "127.0.0.1");
        let text = String::from_utf8(STANDARD.decode(token).unwrap()).unwrap();
        let (signed, sig) = text.split_once("&sig=").unwrap();
        assert_eq!(signed, "dec=allow&exp=1700000000&uid=127.0.0.1&kid=key1");
        assert_eq!(sig, signature("k", signed));
        assert_eq!(sig.len(), 66);
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
            allow_token("k", "key1", 1, "127.0.0.1")
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

    #[test]
    fn each_program_that_forwards_gets_the_token_of_the_rooms_set_against_it() {
        for case in Case::ALL {
            if let Some(reference) = case.reference() {
                assert_eq!(
                    case.renewing_token(),
                    reference.renewing_token(),
                    "{case:?}"
                );
            }
        }
    }
}
