//! The black-box tests, one binary, a module per area: the built wasm in Viceroy in
//! front of a real demo origin (every module but `hostile_paths`, which holds the
//! room's reading of a path to real nginx's, and `wasm_size`, which weighs the wasm).
//! A missing Viceroy or wasm fails the first test that needs it in one line naming
//! how to get it (test-support's `room::missing`). One area:
//! `cargo nextest run --test blackbox rooms::`.

// `support::` in every module, as in the native tests' `use test_support as support`.
extern crate test_support as support;

mod basics;
mod capacity;
mod challenge;
mod controller;
mod fail_safe;
mod faults;
mod fifo;
mod hardening;
mod hostile_paths;
mod load;
mod login;
mod needs;
mod origin_live;
mod real_crowd;
mod rooms;
mod toll;
mod wasm_size;

use demo_origin::ORIGIN_MARKER;
use support::{mint, viceroy_room::KEY1, viceroy_room::Room, viceroy_room::now};
use waiting_room::admission::lottery;
use waiting_room::settings::percentage::Percentage;

// What the built-in pages say, as the modules look for them.
const START_PAGE: &str = "You are in the waiting room";
const KEEP_PAGE: &str = "Thanks for waiting";
const DENY_PAGE: &str = "closed right now";
const UNAVAILABLE_PAGE: &str = "We will be right back";

/// The `Cookie` header the origin saw, from its echo of the request head.
fn origin_saw_cookie(body: &str) -> Option<String> {
    assert!(body.contains(ORIGIN_MARKER), "not the origin:\n{body}");
    body.lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        })
        .map(|(_, v)| v.trim().to_string())
}

/// The keys a log line names after `ALERT=unreadable:` (none: empty).
fn unreadable(line: &str) -> Vec<String> {
    line.split(' ')
        .find_map(|field| field.strip_prefix("ALERT=unreadable:"))
        .map(|keys| keys.split(',').map(str::to_string).collect())
        .unwrap_or_default()
}

/// Checks the room's last log line holds every one of `has`.
fn assert_logged(room: &Room, has: &[&str]) {
    assert_logged_but_not(room, has, &[]);
}

/// Checks the room's last log line holds every one of `has` and none of `lacks`.
fn assert_logged_but_not(room: &Room, has: &[&str], lacks: &[&str]) {
    let line = room.last_log_line();
    for part in has {
        assert!(line.contains(part), "no {part:?} in {line}");
    }
    for part in lacks {
        assert!(!line.contains(part), "{part:?} in {line}");
    }
}

/// Whether key1's wait token for `uid` expiring at `exp` wins its draw at `percent` %.
fn wait_token_wins(exp: u64, uid: &str, percent: u8) -> bool {
    let text = format!("dec=wait&exp={exp}&uid={uid}&kid=key1");
    let seed = mint::seed(&mint::vcl_sig(KEY1, &text));
    lottery::wins(seed, Percentage::whole(percent))
}

/// The latest `exp` in `exps` whose wait token for `uid` wins its draw at `percent` %.
fn winning_exp(exps: std::ops::Range<u64>, uid: &str, percent: u8) -> Option<u64> {
    exps.rev().find(|&exp| wait_token_wins(exp, uid, percent))
}

/// A wait token for 127.0.0.`visitor` owing `toll`, due for its draw, that wins
/// (or loses) at 50 %; with its challenge.
fn due_token(visitor: u8, toll: u8, win: bool) -> (String, String) {
    let uid = format!("127.0.0.{visitor}");
    (2..26)
        .map(|ago| mint::mint_toll(KEY1, now() - ago, &uid, "key1", toll))
        .find(|(_, sig)| {
            let seed = mint::seed(&format!("0x{sig}"));
            lottery::wins(seed, Percentage::whole(50)) == win
        })
        .expect("one of 24 tokens (all alike once in 2^24)")
}
