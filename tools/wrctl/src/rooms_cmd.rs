//! `wrctl rooms`: the rooms of a config store, and which room a URL falls in.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use waiting_room::settings::config::ROOMS;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::room::{Index, Room, host_of};
use waiting_room::settings::room_settings::{ROOM_FALLBACK, Remembered};

use crate::clock::unix_now;
use crate::config_check::{Store, parse_store};

/// The options of `wrctl rooms`.
#[derive(Debug, Clone, Args)]
pub struct RoomsArgs {
    /// The config store (a JSON object of string values, e.g. local/config.json).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// URLs to place: which room each falls in.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
}

/// `wrctl rooms CONFIG [URL…]`.
pub fn rooms(args: RoomsArgs) -> ExitCode {
    let store = match std::fs::read_to_string(&args.config)
        .map_err(|e| e.to_string())
        .and_then(|text| parse_store(&text))
    {
        Ok(store) => store,
        Err(e) => {
            eprintln!("wrctl: {}: {e}", args.config.display());
            return ExitCode::from(2);
        }
    };
    let service =
        RequestContext::from_store(&Remembered::new(|key: &str| store.get(key).cloned())).settings;
    println!(
        "service room: {}, paths {}",
        if service.enabled { "on" } else { "off" },
        service.protected_paths.join(",")
    );
    let index = store
        .get(ROOMS)
        .map(|raw| Index::parse(raw))
        .unwrap_or_default();
    for scope in &index.rooms {
        let hosts = if scope.hosts.is_empty() {
            "every host".to_string()
        } else {
            scope.hosts.join(",")
        };
        println!(
            "room {}: {hosts}, paths {}",
            scope.name,
            scope.paths.join(",")
        );
    }
    for problem in &index.problems {
        eprintln!("error: {problem}");
    }
    for url in &args.urls {
        println!("{url}: {}", place(&store, url, unix_now()));
    }
    if index.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Which room the edge puts a request for `url` in at `now`.
pub fn place(store: &Store, url: &str, now: u64) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (host, path) = match rest.find('/') {
        Some(i) if !url.starts_with('/') => (Some(host_of(&rest[..i])), &rest[i..]),
        _ if url.starts_with('/') => (None, url),
        _ => (Some(host_of(rest)), "/"),
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let lookup = Remembered::new(|key: &str| store.get(key).cloned());
    let context = RequestContext::for_request(&lookup, host.as_deref(), path, now);
    let settings = &context.settings;
    let room = match &context.room {
        Room::Service => "the service room".to_string(),
        Room::Named(name) => format!("room {name}"),
    };
    let applies = settings.protects(path);
    let bypassed = settings
        .bypass_paths
        .iter()
        .any(|p| path.starts_with(p.as_str()));
    if context.fallbacks.contains(&ROOM_FALLBACK) {
        return format!("{room}, whose value is missing or unreadable: it holds everyone");
    }
    match (&context.room, applies) {
        (Room::Service, false) => "no room: straight to the origin".into(),
        (_, false) => format!("{room}, which is off: straight to the origin"),
        (_, true) if bypassed => format!("{room}, a bypass path: straight to the origin"),
        (_, true) => match &context.event {
            Some(event) => format!("{room}, during event {event}"),
            None => room,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(pairs: &[(&str, &str)]) -> Store {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_url_falls_in_the_room_the_edge_picks() {
        let s = store(&[
            ("enabled", "true"),
            ("protected_paths", "/checkout"),
            (
                "rooms",
                r#"{"drops": {"paths": ["/drops/"]}, "shop": {"hosts": ["shop.example"], "paths": ["/drops/vip/"]}}"#,
            ),
            (
                "room.drops",
                r#"{"enabled": true, "bypass_paths": "/drops/static/"}"#,
            ),
        ]);
        assert_eq!(
            place(&s, "/drops/static/a.css", 0),
            "room drops, a bypass path: straight to the origin"
        );
        assert_eq!(place(&s, "https://www.example/drops/1?x", 0), "room drops");
        assert_eq!(
            place(&s, "https://shop.example:443/drops/vip/1", 0),
            "room shop, whose value is missing or unreadable: it holds everyone"
        );
        assert_eq!(
            place(&s, "https://www.example/drops/vip/1", 0),
            "room drops"
        );
        assert_eq!(place(&s, "/checkout/pay", 0), "the service room");
        assert_eq!(
            place(&s, "https://www.example/about", 0),
            "no room: straight to the origin"
        );
        assert_eq!(
            place(&s, "www.example", 0),
            "no room: straight to the origin"
        );
    }
}
