//! Forwards every request to backend `origin` after doing the parts of the room's
//! platform work chosen by cargo features: `config` reads every settings key the
//! room reads (`waiting_room::config::KEYS`), `keys` opens the signing keys as the
//! room does and reads the active one, `log` writes one line of the room's shape to
//! its log endpoint. `scripts/viceroy-parts.sh` builds the variants and sets each
//! against the forward-only program and the room (BENCHMARKS.md, section 1).

#[cfg(target_arch = "wasm32")]
#[fastly::main]
fn main(req: fastly::Request) -> Result<fastly::Response, fastly::Error> {
    use waiting_room::resources::{CONFIG_STORE, KEY_STORE};
    // Bytes read, so that no read can be optimised away.
    let mut read = 0;
    if cfg!(feature = "config")
        && let Ok(store) = fastly::ConfigStore::try_open(CONFIG_STORE)
    {
        for key in waiting_room::config::KEYS {
            read += store.try_get(key).ok().flatten().map_or(0, |v| v.len());
        }
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
        let _ = write!(
            endpoint,
            "waitingroom t=1795353010 decision=allow uid=127.0.0.1 p=50 session=kept exp=1795356610 path=/events read={read}"
        );
    }
    Ok(req.send("origin")?)
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "forward-parts runs inside Fastly Compute: \
         `cargo build --release --target wasm32-wasip1 -p forward-parts --features config,keys,log`"
    );
    std::process::exit(2);
}
