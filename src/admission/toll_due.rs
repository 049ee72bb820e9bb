//! The bot toll a token owes ([`crate::bots::toll`]) or the external challenge it
//! must pass ([`crate::bots::challenge`]): whether this request pays it, and what
//! the next token owes.

use crate::admission::log_words::Decision;
use crate::bots::challenge::{self, BotChallenge, Outcome, Verifier};
use crate::bots::toll;
use crate::credentials::token::{SignedToken, TokenKind};
use crate::settings::config::Settings;

/// A bot toll to pay: the challenge (the signature of the wait token the visitor
/// holds after the response) and the bits it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TollDue {
    /// The wait token's signature.
    pub signature: [u8; 32],
    /// Leading zero bits the solution's hash needs.
    pub bits: u8,
}

/// The bot toll of the token presented ([`crate::bots::toll`], [`crate::bots::challenge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Toll {
    /// Bits it owes now (0: nothing, or not a wait token).
    pub(crate) owed: u8,
    /// Whether it had paid before (`toll=0`).
    settled: bool,
    /// Whether the request's toll cookie pays what it owes.
    pub(crate) paid: bool,
    /// The external challenge's verification, if one was made.
    pub(crate) checked: Option<Outcome>,
}

impl Toll {
    /// The toll of `token` in a room with `settings`, paid by the request's toll
    /// cookie or verified by `verifier`; `draw_due`: whether its
    /// draw or admission is due now (the only time a challenge is verified).
    pub(crate) fn judge(
        token: Option<&SignedToken>,
        settings: &Settings,
        toll_cookie: Option<&str>,
        verifier: Option<&dyn Verifier>,
        draw_due: bool,
    ) -> Toll {
        let mut toll = Toll {
            owed: 0,
            settled: false,
            paid: false,
            checked: None,
        };
        let Some(token) = token.filter(|t| t.claims.dec == TokenKind::Wait) else {
            return toll;
        };
        toll.owed = toll::owed(token.claims.toll, settings.toll_bits());
        toll.settled = token.claims.toll == Some(0);
        if toll.owed == 0 {
            return toll;
        }
        let cookie = toll_cookie;
        toll.paid = match &settings.bot_challenge {
            // One SHA-256, only for a nonce that parses.
            BotChallenge::Off => cookie
                .and_then(toll::parse_nonce)
                .is_some_and(|nonce| toll::solves(token.signature(), nonce, toll.owed)),
            // Mended by the operator, not by the visitor: held meanwhile.
            BotChallenge::Unreadable => false,
            // One call to the provider, only when due and for a token of its shape.
            BotChallenge::On(room) => {
                let provider_token =
                    cookie.and_then(|raw| challenge::validate_token(room.provider, raw));
                match (verifier, provider_token) {
                    (Some(verifier), Some(provider_token)) if draw_due => {
                        let outcome = verifier.verify(provider_token, token.signature());
                        let admits = outcome.admits(room.when_down);
                        toll.checked = Some(outcome);
                        admits
                    }
                    _ => false,
                }
            }
        };
        toll
    }

    /// What a visitor who waits on with the token they hold (no token due) still
    /// owes after the response: its toll, unless paid now.
    pub(crate) fn still_owed(
        &self,
        decision: Decision,
        token_due: bool,
        held: Option<&SignedToken>,
    ) -> Option<TollDue> {
        let held = held.filter(|_| decision == Decision::Wait && !token_due && !self.paid)?;
        (self.owed > 0).then(|| TollDue {
            signature: *held.signature(),
            bits: self.owed,
        })
    }

    /// Whether a draw or an admission must wait for payment.
    pub(crate) fn unpaid(&self) -> bool {
        self.owed > 0 && !self.paid
    }

    /// The `toll` field of the wait token the visitor gets next: none while the
    /// room asks none; `0` once paid; else what the room asks.
    pub(crate) fn successor(&self, room_bits: u8) -> Option<u8> {
        match room_bits {
            0 => None,
            _ if self.settled || self.paid => Some(0),
            bits => Some(bits),
        }
    }
}
