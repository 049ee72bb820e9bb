//! The classifier: from the clock, the client, its cookie, the settings and the
//! keys to a decision and the cookie to send back (DESIGN.md section 2, steps 4–5).

use crate::config::Settings;
use crate::keys::KeyStore;
use crate::lottery;
use crate::token::{self, Claims, Dec, Malformed, Presented};

/// The room's decision for one protected request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Forward to the origin.
    Allow,
    /// Closed (`allow_percentage = 0`): waiting will not help.
    Deny,
    /// Unknown visitor: starts waiting.
    Anon,
    /// Waiting, token not yet expired.
    Wait,
    /// Waited, lost the lottery: waits again.
    ReWait,
}

impl Decision {
    /// The VCL's name for the decision, used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Anon => "anon",
            Decision::Wait => "wait",
            Decision::ReWait => "re-wait",
        }
    }
}

/// Why a presented cookie was not honoured (for the log; the visitor just sees `anon`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Not a canonical token.
    Malformed(Malformed),
    /// Signed for another client.
    UidMismatch {
        /// The uid the token names (validated to IP-address characters).
        token_uid: String,
    },
    /// Its key id names no usable key (never in the store, or revoked).
    UnknownKey {
        /// The key id the token names (validated to visible ASCII).
        kid: String,
    },
    /// The signature does not match.
    BadSignature,
}

impl Rejection {
    /// `reason=… detail` text for a log line.
    pub fn describe(&self) -> String {
        match self {
            Rejection::Malformed(m) => format!("malformed:{}", m.as_str()),
            Rejection::UidMismatch { token_uid } => format!("uid-mismatch token_uid={token_uid}"),
            Rejection::UnknownKey { kid } => format!("unknown-key kid={kid}"),
            Rejection::BadSignature => "bad-signature".to_string(),
        }
    }
}

/// What happened to a valid token on the way to the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// An expired allow token: the session timed out.
    SessionExpired,
    /// An expired wait token that won the lottery.
    LotteryWon,
    /// An expired wait token that lost the lottery.
    LotteryLost,
}

/// What to do with the visitor's cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CookieAction {
    /// Leave it alone.
    Keep,
    /// Set the cookie to this token (the cookie value).
    Set(String),
    /// Delete it.
    Delete,
}

/// The outcome for one protected request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// What to do with the cookie.
    pub cookie: CookieAction,
    /// Why a presented cookie was ignored, if it was.
    pub rejection: Option<Rejection>,
    /// How a valid, expired token changed state, if it did.
    pub transition: Option<Transition>,
    /// True when a token was due but `active_key` names no usable key, so none was issued.
    pub signing_key_missing: bool,
    /// For a waiting visitor (`anon`, `wait`, `re-wait`): when their wait token
    /// expires, so their next draw comes at `wait_exp + 1`.
    pub wait_exp: Option<u64>,
}

/// Decides for a request at `now` (Unix seconds) from client `uid`, carrying the
/// waiting-room cookie value `cookie` (if any).
pub fn decide(
    now: u64,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> Verdict {
    let percentage = settings.allow_percentage;
    let mut rejection = None;
    let mut transition = None;
    let mut held_exp = None;

    let decision = if percentage >= 100 {
        Decision::Allow
    } else if percentage == 0 {
        Decision::Deny
    } else {
        match cookie.map(|value| validate(value, uid, keys)) {
            None => Decision::Anon,
            Some(Err(why)) => {
                rejection = Some(why);
                Decision::Anon
            }
            Some(Ok(token)) => {
                let (decision, change) = classify(now, &token, percentage);
                transition = change;
                held_exp = Some(token.claims.exp);
                decision
            }
        }
    };

    let new_wait_exp = wait_expiry(now, settings.wait_period_duration);
    let (cookie, signing_key_missing) =
        cookie_for(decision, now, new_wait_exp, uid, settings, keys);
    let wait_exp = match decision {
        Decision::Wait => held_exp,
        Decision::Anon | Decision::ReWait => Some(new_wait_exp),
        Decision::Allow | Decision::Deny => None,
    };
    Verdict {
        decision,
        cookie,
        rejection,
        transition,
        signing_key_missing,
        wait_exp,
    }
}

/// Decodes `value` and checks, in the VCL's order, the uid, the key and the signature.
fn validate(value: &str, uid: &str, keys: &impl KeyStore) -> Result<Presented, Rejection> {
    let token = token::decode(value).map_err(Rejection::Malformed)?;
    if token.claims.uid != uid {
        return Err(Rejection::UidMismatch {
            token_uid: token.claims.uid,
        });
    }
    let Some(key) = keys.key(&token.claims.kid) else {
        return Err(Rejection::UnknownKey {
            kid: token.claims.kid,
        });
    };
    if !token.verify(&key) {
        return Err(Rejection::BadSignature);
    }
    Ok(token)
}

/// A valid token keeps its decision until `now` is strictly after its expiry.
fn classify(now: u64, token: &Presented, percentage: u8) -> (Decision, Option<Transition>) {
    let expired = now > token.claims.exp;
    match (token.claims.dec, expired) {
        (Dec::Wait, false) => (Decision::Wait, None),
        (Dec::Allow, false) => (Decision::Allow, None),
        (Dec::Allow, true) => (Decision::Anon, Some(Transition::SessionExpired)),
        (Dec::Wait, true) if lottery::wins(token.lottery_seed(), percentage) => {
            (Decision::Allow, Some(Transition::LotteryWon))
        }
        (Dec::Wait, true) => (Decision::ReWait, Some(Transition::LotteryLost)),
    }
}

/// The cookie a decision calls for, and whether one was due but could not be signed.
/// `new_wait_exp` is the expiry a new wait token gets now.
fn cookie_for(
    decision: Decision,
    now: u64,
    new_wait_exp: u64,
    uid: &str,
    settings: &Settings,
    keys: &impl KeyStore,
) -> (CookieAction, bool) {
    let (dec, exp) = match decision {
        Decision::Wait => return (CookieAction::Keep, false),
        Decision::Deny => return (CookieAction::Delete, false),
        Decision::Allow => (
            Dec::Allow,
            now.saturating_add(settings.allow_period_timeout),
        ),
        Decision::Anon | Decision::ReWait => (Dec::Wait, new_wait_exp),
    };
    // A key id no token can carry would mint tokens that never read back,
    // stranding every visitor: such a key is as unusable as a missing one.
    let readable = token::is_valid_kid(&settings.active_key);
    let Some(key) = keys.key(&settings.active_key).filter(|_| readable) else {
        return (CookieAction::Keep, true);
    };
    let claims = Claims {
        dec,
        exp,
        uid: uid.to_string(),
        kid: settings.active_key.clone(),
    };
    (CookieAction::Set(claims.mint(&key)), false)
}

/// Wait expiry on a slot boundary: `floor(now / d) * d + 2d`, so every request
/// from one client within one slot gets the same token (and the same draw).
/// `d` is at least 1 (see [`Settings`]); a 0 is treated as 1 all the same.
pub fn wait_expiry(now: u64, d: u64) -> u64 {
    let d = d.max(1);
    (now / d * d).saturating_add(d.saturating_mul(2))
}
