//! The `crowd` binary against a stand-in room (std only, on a loopback port): a
//! visitor without a cookie gets a wait token and `Refresh: 1; url=/events`; one
//! presenting a wait token on its second visit or later is admitted with an allow
//! token whose `exp` is fixed per address (so every tab of a person shares one
//! session); an allow token gets the origin's page. The checks: every person comes
//! from their own address, the tabs share the jar (one allow token a person, sent
//! back by the other tabs), every person is admitted, the counts add up, and the
//! program stops by itself at `--duration`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// What the stand-in saw: per source address, the cookies each request carried.
#[derive(Default)]
struct Seen {
    requests: BTreeMap<IpAddr, Vec<Option<String>>>,
}

fn token(dec: &str, exp: u64, uid: IpAddr) -> String {
    STANDARD.encode(format!(
        "dec={dec}&exp={exp}&uid={uid}&kid=key1&sig=00ff{exp}"
    ))
}

fn serve(stream: TcpStream, seen: &Mutex<Seen>) {
    let peer = stream.peer_addr().unwrap().ip();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut cookie = None;
    let mut first = true;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if first {
            path = line.split(' ').nth(1).unwrap_or("").to_string();
            first = false;
        } else if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("cookie")
        {
            cookie = value
                .split(';')
                .find_map(|p| p.trim().strip_prefix("waiting_room="))
                .map(String::from);
        }
    }
    let visits = {
        let mut seen = seen.lock().unwrap();
        let list = seen.requests.entry(peer).or_default();
        list.push(cookie.clone());
        list.len()
    };
    let decoded = cookie
        .as_deref()
        .and_then(|c| STANDARD.decode(c).ok())
        .map(|b| String::from_utf8(b).unwrap());
    let exp = 2_000_000_000
        + u64::from(match peer {
            IpAddr::V4(a) => a.octets()[3],
            IpAddr::V6(_) => 0,
        });
    let (head, body) = match decoded.as_deref() {
        Some(t) if t.starts_with("dec=allow") => (String::new(), "origin page"),
        Some(t) if t.starts_with("dec=wait") && visits >= 2 => (
            format!(
                "Set-Cookie: waiting_room={}; path=/; max-age=7200\r\n",
                token("allow", exp, peer)
            ),
            "origin page",
        ),
        Some(_) => (
            format!("Refresh: 1; url={path}\r\nRetry-After: 1\r\n"),
            "keep waiting",
        ),
        None => (
            format!(
                "Set-Cookie: waiting_room={}; path=/; max-age=7200\r\nRefresh: 1; url={path}\r\n",
                token("wait", 1_000, peer)
            ),
            "start waiting",
        ),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
         Connection: close\r\n{head}\r\n{body}",
        body.len()
    );
}

#[test]
fn a_crowd_waits_follows_refresh_shares_its_jar_and_stops_by_itself() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    {
        let seen = Arc::clone(&seen);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&seen);
                thread::spawn(move || serve(stream, &seen));
            }
        });
    }
    let dir = std::env::temp_dir().join(format!("crowd-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("crowd.json");
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"allow_percentage": "1"}"#).unwrap();
    {
        // The "controller" writes once, two seconds in.
        let config = config.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_secs(2));
            let tmp = config.with_extension("tmp");
            std::fs::write(&tmp, r#"{"allow_percentage": "2.5"}"#).unwrap();
            std::fs::rename(tmp, config).unwrap();
        });
    }

    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_crowd"))
        .args(["--room", &format!("http://{addr}")])
        .args(["--people", "20", "--tabs", "3", "--over", "1"])
        .args([
            "--tab-spread",
            "1",
            "--browse",
            "2",
            "--browse-gap",
            "0.1..0.2",
        ])
        .args(["--duration", "8", "--first-address", "127.0.3.1"])
        .arg("--json")
        .arg(&json)
        .arg("--watch-config")
        .arg(&config)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(took >= Duration::from_secs(8), "stopped early: {took:?}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let totals = &report["totals"];
    assert_eq!(totals["arrived"], 20, "{report}");
    assert_eq!(totals["people_admitted"], 20, "{report}");
    // One allow token a person, whichever of their tabs won it.
    assert_eq!(totals["new_sessions"], 20, "{report}");
    assert_eq!(totals["errors"], 0, "{report}");
    let minutes = report["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 1);
    assert!(minutes[0]["seconds"].as_f64().unwrap() >= 8.0);

    let seen = seen.lock().unwrap();
    let expected: BTreeSet<IpAddr> = (1..=20).map(|d| IpAddr::from([127, 0, 3, d])).collect();
    let peers: BTreeSet<IpAddr> = seen.requests.keys().copied().collect();
    assert_eq!(peers, expected, "each person from their own address");
    let requests: usize = seen.requests.values().map(Vec::len).sum();
    assert_eq!(totals["requests"].as_u64(), Some(requests as u64));
    for (peer, cookies) in &seen.requests {
        // At most as many cookie-less requests as tabs (each tab's first, before the
        // jar held anything); every other request carries the person's cookie.
        let without = cookies.iter().filter(|c| c.is_none()).count();
        assert!((1..=3).contains(&without), "{peer}: {cookies:?}");
        // Every tab ended in the session, and browsed two pages in it.
        let allowed = cookies
            .iter()
            .flatten()
            .filter(|c| {
                String::from_utf8(STANDARD.decode(c).unwrap())
                    .unwrap()
                    .starts_with("dec=allow")
            })
            .count();
        assert!(
            allowed >= 3 * 2,
            "{peer}: {allowed} requests with the allow token"
        );
    }

    // The watched config: the value at the start, then the write.
    let writes: Vec<&str> = report["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["allow_percentage"].as_str().unwrap())
        .collect();
    assert_eq!(writes, ["1", "2.5"]);
    assert!(stdout.contains("new sessions"), "{stdout}");
    assert!(stdout.contains("allow_percentage=2.5"), "{stdout}");
    // Never a cookie in the output.
    assert!(
        !stdout.contains("ZGVj") && !stderr.contains("ZGVj"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_room_off_the_loopback_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_crowd"))
        .args(["--room", "http://192.0.2.1:7676", "--duration", "1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a loopback address"));
}
