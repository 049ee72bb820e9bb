//! FIFO mode: a visitor's place in the line (their arrival, or in the pre-queue a
//! place drawn in the line's first second), admission at the cutoff, and the
//! token a response carries.

use hmac::Mac as _;

use crate::admission::log_words::{Decision, Transition};
use crate::admission::random_mode::classify;
use crate::admission::session::{Due, allow_token};
use crate::credentials::keys::KeyStore;
use crate::credentials::token::{SignedToken, TokenKind};
use crate::settings::config::Settings;

/// FIFO mode: when the visitor's place lapses and the token the response must
/// carry. A newcomer gets a place at their arrival; a held place is re-issued
/// (same place, a new hold) only when less than half its hold remains, or when
/// the place is not the token's own.
pub(crate) fn fifo_due(
    (now, now_ms): (u64, u64),
    uid: &str,
    (decision, transition): (Decision, Option<Transition>),
    held: Option<&SignedToken>,
    kept_place: Option<u64>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> (Option<u64>, Option<Due>) {
    let hold_end = fifo_hold_end(now, settings);
    match decision {
        Decision::Wait => {
            let held = held.map(|t| &t.claims);
            // Also when the place is not the token's own (a lottery ticket joining,
            // a place moved behind the pre-queue), when the hold is longer than the
            // settings give (they were mistyped, then mended), or when another key
            // signed it (a rotation moves places on, as it does sessions).
            let reissue = held.is_some_and(|c| {
                c.arr != kept_place
                    || c.exp.saturating_sub(now).saturating_mul(2) < settings.fifo_hold
                    || c.exp > hold_end
                    || c.kid != settings.active_key
            });
            match (reissue, kept_place) {
                (true, Some(arr)) => (Some(hold_end), Some(Due::fifo_wait(hold_end, arr))),
                _ => (held.map(|c| c.exp), None),
            }
        }
        Decision::Anon | Decision::ReWait => {
            let arr = arrival(now_ms, uid, settings, keys);
            (Some(hold_end), Some(Due::fifo_wait(hold_end, arr)))
        }
        Decision::Allow => (None, allow_token(now, held, transition, settings)),
        Decision::Deny => (None, None),
    }
}

/// FIFO: an allow token as in random mode; a place at or before the cutoff is
/// admitted, a place whose hold ended arrives anew, any other waits. A lottery
/// wait token (five fields) joins the line within its redeem window. Returns the
/// place the token holds or joins at, if any.
pub(crate) fn classify_fifo(
    now: u64,
    token: &SignedToken,
    settings: &Settings,
    keys: &impl KeyStore,
) -> (Decision, Option<Transition>, Option<u64>) {
    let claims = &token.claims;
    if claims.dec == TokenKind::Allow {
        let (decision, transition) = classify(now, token, settings);
        return (decision, transition, None);
    }
    let place = fifo_place(now, token, settings, keys);
    let admitted =
        matches!((place, settings.fifo_cutoff), (Some(arr), Some(cutoff)) if arr <= cutoff);
    let (decision, transition) = match claims.arr {
        Some(_) if now > claims.exp => (Decision::Anon, Some(Transition::HoldExpired)),
        Some(_) if admitted => (Decision::Allow, Some(Transition::CutoffReached)),
        Some(_) => (Decision::Wait, None),
        None if place.is_none() => (Decision::Anon, Some(Transition::RedeemWindowPassed)),
        None if admitted => (Decision::Allow, Some(Transition::CutoffReached)),
        None => (Decision::Wait, Some(Transition::JoinedLine)),
    };
    (decision, transition, place)
}

/// FIFO: a valid wait token's place in the line: its `arr`, or for a lottery
/// wait token within its redeem window, `(exp - 2d) · 1000` (on the VCL's grid,
/// the start of the slot it was handed out in). With a pre-queue, no place comes
/// before the line opens: an earlier one (a token from before `queue_opens_at`
/// was set, a lottery ticket joining) is the address's pre-queue place. `None`
/// for a lottery token past its redeem window.
fn fifo_place(
    now: u64,
    token: &SignedToken,
    settings: &Settings,
    keys: &impl KeyStore,
) -> Option<u64> {
    let claims = &token.claims;
    let place = match claims.arr {
        Some(arr) => arr,
        None if now > claims.exp.saturating_add(settings.redeem_window()) => return None,
        None => claims
            .exp
            .saturating_sub(settings.wait_period_duration.saturating_mul(2))
            .saturating_mul(1000),
    };
    Some(match settings.queue_opens_at {
        Some(opens) if place < opens.saturating_mul(1000) => {
            prequeue_place(opens, &claims.uid, settings, keys)
        }
        _ => place,
    })
}

/// FIFO: when a place held at `now` lapses: `fifo_hold` seconds after now, or
/// after the line opens for a visitor in the pre-queue.
fn fifo_hold_end(now: u64, settings: &Settings) -> u64 {
    now.max(settings.queue_opens_at.unwrap_or(0))
        .saturating_add(settings.fifo_hold)
}

/// FIFO: the place of a visitor arriving at `now_ms`: that time; or in the
/// pre-queue (before `queue_opens_at`), their pre-queue place in the line's first
/// second; or in that first second, its end, behind the whole pre-queue (racing
/// the opening gains nothing over coming early).
fn arrival(now_ms: u64, uid: &str, settings: &Settings, keys: &impl KeyStore) -> u64 {
    let Some(opens) = settings.queue_opens_at else {
        return now_ms;
    };
    let opens_ms = opens.saturating_mul(1000);
    if now_ms >= opens_ms {
        return now_ms.max(opens_ms.saturating_add(1000));
    }
    prequeue_place(opens, uid, settings, keys)
}

/// FIFO: the pre-queue place of `uid`: the line's opening second plus an offset
/// of 0–999 ms keyed by the active signing key, the address and the opening time.
/// The same address gets the same place however often it clears its cookies, and
/// nobody can compute theirs without the key. An IPv6 visitor's offset is their
/// /64's, whatever `uid_ipv6_prefix` says, so that trying the many addresses of
/// one network for an early offset gains nothing. A key rotation during the
/// pre-queue draws new offsets for addresses that come back without their token.
fn prequeue_place(opens: u64, uid: &str, settings: &Settings, keys: &impl KeyStore) -> u64 {
    let network = uid
        .parse::<std::net::Ipv6Addr>()
        .ok()
        .map(|ip| crate::credentials::uid::uid_of(ip.into(), 64));
    let offset = prequeue_offset(
        keys,
        &settings.active_key,
        network.as_deref().unwrap_or(uid),
        opens,
    );
    opens.saturating_mul(1000).saturating_add(offset)
}

/// The pre-queue offset of `uid` for a line opening at `opens`: 0–999 ms from
/// the HMAC of `prequeue&uid=…&opens=…` under the key `kid` (0 when it names
/// no usable key: then no token is issued anyway).
fn prequeue_offset(keys: &impl KeyStore, kid: &str, uid: &str, opens: u64) -> u64 {
    let Ok(Some(key)) = keys.key(kid) else {
        return 0;
    };
    let mut mac = key.mac();
    mac.update(format!("prequeue&uid={uid}&opens={opens}").as_bytes());
    let digest = mac.finalize().into_bytes();
    u64::from(u32::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3],
    ])) % 1000
}
