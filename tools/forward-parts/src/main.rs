//! Forwards every request to backend `origin` after doing the parts of the room's
//! platform work chosen by cargo features: `config` reads the room's settings for the
//! request as the room does (`Settings::for_request`), `keys` opens the signing keys as the
//! room does and reads the active one, `log` writes one line of the room's shape to
//! its log endpoint, `request` reads the request's parts the room reads and rewrites
//! its `Cookie` header, and reads and removes the origin's release header.
//! `scripts/viceroy-parts.sh` builds the variants and sets each
//! against the forward-only program and the room (BENCHMARKS.md, section 1).

#[cfg(target_arch = "wasm32")]
#[fastly::main]
fn main(mut req: fastly::Request) -> Result<fastly::Response, fastly::Error> {
    use waiting_room::resources::{CONFIG_STORE, KEY_STORE};
    // Bytes read, so that no read can be optimised away.
    let mut read = 0;
    // The client's address and the path, read once as the room reads them.
    let (client_ip, path) = if cfg!(any(feature = "config", feature = "request")) {
        (req.get_client_ip_addr(), req.get_path().to_string())
    } else {
        (None, String::new())
    };
    if cfg!(feature = "config") {
        // The keys the room reads for this request, as it reads them.
        let store = fastly::ConfigStore::try_open(CONFIG_STORE).ok();
        let settings = waiting_room::config::Settings::for_request(
            |key| store.as_ref()?.try_get(key).ok().flatten(),
            &path,
            client_ip.is_some_and(waiting_room::uid::is_ipv6_network),
        );
        read += settings.protected_paths.len();
    }
    if cfg!(feature = "keys") {
        read += match fastly::SecretStore::open(KEY_STORE) {
            Ok(store) => store.get("key1").map_or(0, |s| s.plaintext().len()),
            Err(_) => fastly::ConfigStore::try_open(KEY_STORE)
                .ok()
                .and_then(|store| store.try_get("key1").ok().flatten())
                .map_or(0, |v| v.len()),
        };
    }
    if cfg!(feature = "log")
        && let Ok(mut endpoint) = fastly::log::Endpoint::try_from_name("waitingroom_log")
    {
        use std::io::Write as _;
        // One write, as the room's: each write to an endpoint is a line and a host
        // call (`write!` would split the text at its argument).
        let line = format!(
            "waitingroom t=1795353010 decision=allow uid=127.0.0.1 p=50 session=kept exp=1795356610 path=/events read={read}"
        );
        let _ = endpoint.write_all(line.as_bytes());
    }
    if cfg!(feature = "request") {
        use fastly::http::header::{ACCEPT, ACCEPT_LANGUAGE, COOKIE};
        read += client_ip.map_or(0, |ip| ip.to_string().len());
        let cookies = req.get_header_all_str_lossy(COOKIE).join("; ");
        read += path.len() + req.get_query_str().map_or(0, str::len);
        read += req.get_header_str_lossy(ACCEPT).map_or(0, |v| v.len());
        read += req
            .get_header_str_lossy(ACCEPT_LANGUAGE)
            .map_or(0, |v| v.len());
        read += usize::from(req.get_tls_protocol_bytes().is_some());
        // The room forwards the visitor's other cookies without its own.
        match cookies.split_once("; ") {
            Some((others, _)) => req.set_header(COOKIE, others),
            None => drop(req.remove_header(COOKIE)),
        }
    }
    let mut resp = req.send("origin")?;
    if cfg!(feature = "request") {
        // As the room: read the release header, remove it only when it is there.
        let release = waiting_room::answer::RELEASE_HEADER;
        if let Some(value) = resp.get_header_str_lossy(release) {
            read += value.len();
            resp.remove_header(release);
        }
    }
    std::hint::black_box(read);
    Ok(resp)
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "forward-parts runs inside Fastly Compute: \
         `cargo build --release --target wasm32-wasip1 -p forward-parts --features config,keys,log`"
    );
    std::process::exit(2);
}
