//! A missing Viceroy or wasm fails a black-box test in one line naming what is
//! missing and how to get it (test-support's `room::missing`).

use std::process::Command;

use support::viceroy_room::Room;

/// Set in the child process the test starts, which then starts a room.
const CHILD: &str = "BLACKBOX_NEEDS_CHILD";

#[test]
fn a_missing_viceroy_or_wasm_fails_in_one_line() {
    if std::env::var_os(CHILD).is_some() {
        Room::start(&[]);
        return;
    }
    let build = "cargo build --release --target wasm32-wasip1 -p edge-waiting-room";
    for (var, path, how) in [
        ("VICEROY", "/nonexistent/viceroy", "scripts/setup.sh"),
        ("WAITING_ROOM_WASM", "/nonexistent/room.wasm", build),
    ] {
        // This test again, in a child that starts a room with `var` at a missing path.
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "needs::a_missing_viceroy_or_wasm_fails_in_one_line",
            ])
            .env(CHILD, "1")
            .env(var, path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(path)).collect();
        assert!(!out.status.success() && lines.len() == 1, "{text}");
        assert!(lines[0].contains(how) && lines[0].contains(var), "{text}");
    }
}
