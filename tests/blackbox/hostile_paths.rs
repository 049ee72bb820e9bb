//! Hostile request paths against the readings of common origins
//! (`test-support/src/origins.rs`): the room bypasses a path only when every
//! origin reads it inside the bypass prefix, and places it in a room only when
//! every origin reads it into that room; else it refuses it. Each target is what a
//! client puts on the request line; the room decides on the SDK's parse of it and
//! forwards exactly that (`tests/blackbox/hardening.rs` checks the forwarding through Viceroy).

use test_support::invariants::{Routed, path_is_held};

fn room(name: &str) -> Routed {
    Routed::Room(name.to_string())
}

#[test]
fn hostile_paths_never_reach_a_weaker_room() {
    use Routed::{Bypassed, Outside, Refused};
    let table = [
        // Plain paths keep their meaning: the check costs legitimate visitors nothing.
        ("/events/static/app.css", Bypassed),
        ("/events/static//app.css", Bypassed),
        ("/events/static/./app.css", Bypassed),
        ("/events/1", room("service")),
        ("/checkout", room("service")),
        ("/drops/1", room("drops")),
        ("/about", Outside),
        ("//about", Outside),
        ("/Events", Outside),
        // Dot segments and backslashes: the SDK resolves them, and the origin
        // receives the resolved path, so all readings agree.
        ("/events/static//../checkout1", Bypassed),
        ("/events/static/a\\b", Bypassed),
        ("/events/static/../../checkout", room("service")),
        ("/drops/..\\checkout", room("service")),
        ("/events/static/%2e%2e/checkout", room("service")),
        // Encoded separators: decoded by some origins, not by others.
        ("/events/static/..%2fcheckout", room("service")),
        ("/events/static/..%2Fcheckout", room("service")),
        ("/events/static/..%5ccheckout", room("service")),
        ("/events/static/%2e%2e%2fcheckout", room("service")),
        ("/events/static/%252e%252e/checkout", room("service")),
        ("/events/static;x/../../checkout", room("service")),
        ("/events/static/..;/checkout", room("service")),
        ("/drops/..%2fcheckout", Refused),
        ("/drops/%2e%2e%2fevents", Refused),
        ("/x/..%2fevents", Refused),
        ("/x/..%2f..%2fcheckout", Refused),
        ("/%63heckout", Refused),
        ("/%2fcheckout", Refused),
        ("/checkout%2f..%2fabout", Refused),
        ("/drops;x/..%2fevents", Refused),
        // Repeated slashes: merged by nginx and Apache, kept by others.
        ("//checkout", Refused),
        ("///events/1", Refused),
        ("/x//../checkout", Outside),
        ("/drops//../checkout", room("drops")),
    ];
    let mut wrong = Vec::new();
    for (target, expected) in table {
        // Asserts the invariant against every origin model.
        let routed = path_is_held(target);
        if routed != expected {
            wrong.push(format!("{target:?}: {routed:?}, expected {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The opt-out of the real-nginx check: with this set to `1` it passes without running.
const SKIP_NGINX: &str = "WAITING_ROOM_SKIP_NGINX";

/// The nginx models hold against the real server: Debian's nginx, with
/// `merge_slashes` on and off, echoing the path it routes on (`$uri`) for the path
/// the room forwards of each hostile target. Where nginx refuses a path (a `..`
/// above the root) the model may read anything: the room then judged on a reading
/// nginx never serves, which is only stricter.
#[test]
fn the_nginx_models_read_as_real_nginx_does() {
    use std::io::{Read as _, Write as _};
    use std::process::{Command, Stdio};
    use test_support::invariants::route;
    use test_support::origins::Origin;

    if std::env::var(SKIP_NGINX).is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED on request ({SKIP_NGINX}=1): real nginx not tried");
        return;
    }
    let nginx = std::env::var("NGINX").unwrap_or_else(|_| "/usr/sbin/nginx".into());
    assert!(
        std::path::Path::new(&nginx).exists(),
        "{nginx} is missing: run scripts/setup.sh (it installs Debian's nginx-light), or set \
         {SKIP_NGINX}=1 to skip this check"
    );
    let dir = std::env::temp_dir().join(format!("waiting-room-nginx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Both ports taken before either is let go, so the two differ.
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (first, second) = (bind(), bind());
    let port = |l: &std::net::TcpListener| l.local_addr().unwrap().port();
    let (merged, kept) = (port(&first), port(&second));
    drop((first, second));
    let d = dir.display();
    let conf = format!(
        "daemon off; master_process off; pid {d}/nginx.pid; error_log {d}/error.log; events {{}}\n\
         http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d};\n\
         fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
         server {{ listen 127.0.0.1:{merged}; merge_slashes on; location / {{ return 200 \"$uri\\n\"; }} }}\n\
         server {{ listen 127.0.0.1:{kept}; merge_slashes off; location / {{ return 200 \"$uri\\n\"; }} }} }}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let mut server = Command::new(&nginx)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{nginx}: {e}"));
    // One process (`master_process off`), so stopping it leaves no worker behind.
    let ask = |port: u16, path: &str| -> Option<(u16, String)> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        let limit = Some(std::time::Duration::from_secs(5));
        stream.set_read_timeout(limit).ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let status = answer.get(9..12)?.parse().ok()?;
        let body = answer.split_once("\r\n\r\n")?.1.trim_end().to_string();
        Some((status, body))
    };
    // nginx is up when it answers.
    let started = std::time::Instant::now();
    while ask(merged, "/").is_none() || ask(kept, "/").is_none() {
        assert!(started.elapsed().as_secs() < 10, "nginx did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let targets = [
        "/events/static/..%2fcheckout",
        "/events/static/%252e%252e/checkout",
        "/drops/..%5ccheckout",
        "/events/static;x/../../checkout",
        "/%63heckout",
        "/checkout%2f..%2fabout",
        "/a/%2e%2e%2fb",
        "//x//../y",
        "//checkout",
        "/x/%2F%2Fy/..%2f..%2fz",
        "/events/static/..;/checkout",
    ];
    let mut wrong = Vec::new();
    let mut compared = 0;
    for target in targets {
        let (forwarded, _) = route(target);
        for (port, model) in [(merged, Origin::Nginx), (kept, Origin::NginxKeepSlashes)] {
            match ask(port, &forwarded) {
                Some((200, real)) => {
                    compared += 1;
                    let modelled = model.read(&forwarded).unwrap_or_default();
                    if modelled != real {
                        wrong.push(format!(
                            "{forwarded:?}: nginx {real:?}, {model:?} {modelled:?}"
                        ));
                    }
                }
                Some((400, _)) => {}
                other => wrong.push(format!("{forwarded:?}: nginx answered {other:?}")),
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(compared >= 16, "only {compared} readings compared");
}
