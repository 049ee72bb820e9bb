//! The one log line each request gets. It never contains a key or a cookie.

use crate::config::Settings;
use crate::decision::{Transition, Verdict};

/// Longest request path copied into a log line, in bytes.
const MAX_LOGGED_PATH: usize = 200;

/// The line for a request the room did not apply to (`scope`: why).
pub fn bypass_line(uid: &str, path: &str, scope: &str) -> String {
    format!(
        "waitingroom decision=bypass scope={scope} uid={uid} path={}",
        clip(path)
    )
}

/// The line for a request the room decided.
pub fn decision_line(uid: &str, path: &str, verdict: &Verdict, settings: &Settings) -> String {
    let mut line = format!(
        "waitingroom decision={} uid={uid} path={} p={}",
        verdict.decision.as_str(),
        clip(path),
        settings.allow_percentage
    );
    if let Some(rejection) = &verdict.rejection {
        line.push_str(" rejected=");
        line.push_str(&rejection.describe());
    }
    if let Some(transition) = verdict.transition {
        line.push_str(match transition {
            Transition::SessionExpired => " transition=session-expired",
            Transition::LotteryWon => " transition=lottery-won",
            Transition::LotteryLost => " transition=lottery-lost",
            Transition::RedeemWindowPassed => " transition=redeem-window-passed",
        });
    }
    if verdict.signing_key_missing {
        line.push_str(" ALERT=active-key-unusable:no-token-issued kid=");
        line.push_str(&settings.active_key.escape_debug().to_string());
    }
    if let Some(kid) = &verdict.weak_key {
        line.push_str(" WARN=weak-key kid=");
        line.push_str(&kid.escape_debug().to_string());
    }
    if !settings.fallbacks.is_empty() {
        line.push_str(" config_fallback=");
        line.push_str(&settings.fallbacks.join(","));
    }
    line
}

/// The path, cut to [`MAX_LOGGED_PATH`] bytes on a character boundary and escaped.
fn clip(path: &str) -> String {
    let mut end = path.len().min(MAX_LOGGED_PATH);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    path[..end].escape_debug().to_string()
}
