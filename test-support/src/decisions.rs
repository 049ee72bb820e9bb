//! The decision tables' short forms of [`decision::decide`]: a request at a second
//! ([`decide`]) or to the millisecond ([`decide_at`]), in a room with no POP counts,
//! toll cookie or verifier.

use waiting_room::admission::decision::{self, Context, Request, Verdict};
use waiting_room::credentials::keys::KeyStore;
use waiting_room::settings::config::Settings;

/// Decides at `now`'s first millisecond.
pub fn decide(
    now: u64,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> Verdict {
    decide_at(now, 0, uid, cookie, settings, keys)
}

/// Decides at `now` and `millis` milliseconds past it.
pub fn decide_at(
    now: u64,
    millis: u16,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> Verdict {
    let request = Request {
        now,
        millis,
        uid,
        cookie,
    };
    decision::decide(&request, &Context::new(settings), keys)
}
