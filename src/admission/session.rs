//! An admitted visitor's session: the allow token a new session gets, when a
//! running one is renewed, and when it ends.

use crate::admission::log_words::Transition;
use crate::credentials::token::{Claims, SignedToken, TokenKind};
use crate::settings::config::{SessionMode, Settings};

/// A token the response must carry: its kind, expiry and, for fixed sessions,
/// admission time (the visitor's uid and the active key complete it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    pub(crate) kind: TokenKind,
    pub(crate) exp: u64,
    pub(crate) adm: Option<u64>,
    pub(crate) arr: Option<u64>,
}

impl Due {
    pub(crate) fn wait(exp: u64) -> Due {
        Due {
            kind: TokenKind::Wait,
            exp,
            adm: None,
            arr: None,
        }
    }

    pub(crate) fn fifo_wait(exp: u64, arr: u64) -> Due {
        Due {
            kind: TokenKind::Wait,
            exp,
            adm: None,
            arr: Some(arr),
        }
    }

    fn allow(exp: u64, adm: Option<u64>) -> Due {
        Due {
            kind: TokenKind::Allow,
            exp,
            adm,
            arr: None,
        }
    }
}

/// The allow token an admitted visitor gets, or `None` to keep
/// the one they have (lazy renewal).
///
/// A new session gets a token: sliding sessions until
/// `start + allow_period_timeout`, fixed sessions the same with `adm = start`,
/// where `start` is [`session_start`]: for a session a wait token starts, a
/// second derived from that token alone, so every presentation of one win gets
/// the same bytes. A running session keeps its token unless it is due
/// ([`renewal_due`]); a sliding session is then renewed to
/// `now + allow_period_timeout`, a fixed one keeps its admission time. A
/// VCL-format allow token in a fixed session (no admission time) is never
/// renewed, so it ends at its own expiry.
pub(crate) fn allow_token(
    now: u64,
    held: Option<&SignedToken>,
    transition: Option<Transition>,
    settings: &Settings,
) -> Option<Due> {
    let timeout = settings.allow_period_timeout;
    let fixed = settings.session_mode == SessionMode::Fixed;
    let running = held
        .filter(|t| t.claims.dec == TokenKind::Allow && now <= session_end(&t.claims, settings));
    let Some(token) = running else {
        let start = session_start(now, held, transition, settings);
        return Some(Due::allow(
            start.saturating_add(timeout),
            fixed.then_some(start),
        ));
    };
    if !renewal_due(now, &token.claims, settings) {
        return None;
    }
    if fixed {
        let adm = token.claims.adm?;
        return Some(Due::allow(adm.saturating_add(timeout), Some(adm)));
    }
    Some(Due::allow(now.saturating_add(timeout), None))
}

/// When a new session starts (its allow token ends `allow_period_timeout` later;
/// a fixed session's token carries it as `adm`): for a session a wait token
/// starts, a second derived from the token alone, so that every presentation of
/// one win (tabs, devices behind the address, retries, a draw repeated after a
/// lost response) gets the byte-identical allow token, and counts as one session:
///
/// - a won draw (after paying the bot toll or passing the challenge too): the
///   draw's first second, `exp + 1`. Drawn at `now` in `exp + 1 ..= exp +
///   redeem_window`, so the session ends up to `redeem_window - 1` seconds
///   before `now + allow_period_timeout`, never after;
/// - a FIFO place admitted by the cutoff: its hold's start, `exp - fifo_hold`
///   (the second its token was issued, or the line's opening for a pre-queue
///   place). Its hold had not ended, so the session ends up to `fifo_hold`
///   seconds before `now + allow_period_timeout`, never after;
/// - a lottery wait token admitted by a FIFO cutoff: its place, `exp - 2d`
///   (within its redeem window: up to `2d + redeem_window` seconds before).
///
/// A derived second is used only when it is not after `now` and leaves at least
/// half of `allow_period_timeout` (so lazy renewal never re-issues the token at
/// once); otherwise, as for a session without a wait token (a room open at
/// 100 %), the session starts `now`. With the defaults (`redeem_window` 30,
/// `fifo_hold` 300, `allow_period_timeout` 3600) every won draw and every
/// admitted place derives.
fn session_start(
    now: u64,
    held: Option<&SignedToken>,
    transition: Option<Transition>,
    settings: &Settings,
) -> u64 {
    let wait = held.map(|t| &t.claims).filter(|c| c.dec == TokenKind::Wait);
    let derived = match (transition, wait) {
        (Some(Transition::LotteryWon), Some(claims)) => claims.exp.checked_add(1),
        (Some(Transition::CutoffReached), Some(claims)) => match claims.arr {
            Some(_) => claims.exp.checked_sub(settings.fifo_hold),
            None => claims
                .exp
                .checked_sub(settings.wait_period_duration.saturating_mul(2)),
        },
        _ => None,
    };
    derived
        .filter(|&start| {
            start <= now && (now - start).saturating_mul(2) <= settings.allow_period_timeout
        })
        .unwrap_or(now)
}

/// Whether a live allow token must be re-issued: it was signed by a key other than
/// `active_key` (a rotation moves sessions on), or, in a sliding session, less than
/// half of `allow_period_timeout` remains (the session slides) or more than the
/// whole timeout remains (the timeout was lowered). Otherwise the visitor keeps it:
/// one HMAC instead of two, and the origin's response goes back untouched.
fn renewal_due(now: u64, claims: &Claims, settings: &Settings) -> bool {
    if claims.kid != settings.active_key {
        return true;
    }
    let timeout = settings.allow_period_timeout;
    let remaining = claims.exp.saturating_sub(now);
    settings.session_mode == SessionMode::Sliding
        && (remaining.saturating_mul(2) < timeout || remaining > timeout)
}

/// When an allow token's session ends: its `exp`, or, for a fixed session that
/// carries its admission time, `adm + allow_period_timeout` (so a live change of
/// the timeout applies to running sessions).
pub(crate) fn session_end(claims: &Claims, settings: &Settings) -> u64 {
    match (settings.session_mode, claims.adm) {
        (SessionMode::Fixed, Some(adm)) => adm.saturating_add(settings.allow_period_timeout),
        _ => claims.exp,
    }
}
