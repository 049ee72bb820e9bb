//! Hostile request paths against the readings of common origins
//! (`test-support/src/origins.rs`): the room bypasses a path only when every
//! origin reads it inside the bypass prefix, and places it in a room only when
//! every origin reads it into that room; else it refuses it. Each target is what a
//! client puts on the request line; the room decides on the SDK's parse of it and
//! forwards exactly that (`tests/hardening.rs` checks the forwarding through Viceroy).

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
