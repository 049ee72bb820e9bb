//! Random mode: a valid token's decision (a wait token drawn by the lottery once
//! it expires), and the token a response carries.

use crate::admission::log_words::{Decision, Transition};
use crate::admission::session::{Due, allow_token, session_end};
use crate::admission::{grid, lottery};
use crate::credentials::token::{SignedToken, TokenKind};
use crate::settings::config::Settings;

/// A valid token keeps its decision until `now` is strictly after its expiry; an
/// expired wait token draws only within `redeem_window` seconds of its expiry.
pub(crate) fn classify(
    now: u64,
    token: &SignedToken,
    settings: &Settings,
) -> (Decision, Option<Transition>) {
    let exp = token.claims.exp;
    match token.claims.dec {
        TokenKind::Allow if now > session_end(&token.claims, settings) => {
            (Decision::Anon, Some(Transition::SessionExpired))
        }
        TokenKind::Allow => (Decision::Allow, None),
        // A FIFO place is minted per arrival, to the millisecond: drawing each
        // would give one address as many tickets as requests it made in FIFO
        // mode. It moves onto the lottery at its address's next draw instead.
        TokenKind::Wait if token.claims.arr.is_some() => {
            (Decision::ReWait, Some(Transition::LeftLine))
        }
        TokenKind::Wait if now <= exp => (Decision::Wait, None),
        TokenKind::Wait if now > exp.saturating_add(settings.redeem_window()) => {
            (Decision::ReWait, Some(Transition::RedeemWindowPassed))
        }
        TokenKind::Wait if lottery::wins(token.lottery_seed(), settings.percentage_at(now)) => {
            (Decision::Allow, Some(Transition::LotteryWon))
        }
        TokenKind::Wait => (Decision::ReWait, Some(Transition::LotteryLost)),
    }
}

/// Random mode: when the visitor's wait token expires (`None` unless they wait)
/// and the token the response must carry (`None`: keep the cookie as it is).
pub(crate) fn lottery_due(
    now: u64,
    uid: &str,
    decision: Decision,
    held: Option<&SignedToken>,
    settings: &Settings,
    transition: Option<Transition>,
) -> (Option<u64>, Option<Due>) {
    match decision {
        Decision::Wait => (held.map(|t| t.claims.exp), None),
        Decision::Anon | Decision::ReWait => {
            let exp =
                grid::wait_expiry(settings.draw_grid, now, uid, settings.wait_period_duration);
            (Some(exp), Some(Due::wait(exp)))
        }
        Decision::Allow => (None, allow_token(now, held, transition, settings)),
        Decision::Deny => (None, None),
    }
}
