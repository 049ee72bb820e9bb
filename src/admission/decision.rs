//! The classifier: from the clock, the client, its cookie, the settings and the
//! keys to a decision and the cookie to send back.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::str::FromStr;

use hmac::Mac as _;

use crate::admission::ceiling::{self, Ceiling, PopCounts};
use crate::admission::grid;
use crate::admission::lottery;
use crate::bots::challenge::{self, BotChallenge, Outcome, Verifier};
use crate::bots::toll;
use crate::credentials::keys::{KeyRead, KeyStore, is_storable_kid};
use crate::credentials::token::{self, Claims, Malformed, SignedToken, TokenKind};
use crate::settings::config::{QueueingMethod, SessionMode, Settings};

/// Defines an enum whose every value has one word in the log and the JSON: its
/// `ALL` values in order, `name()`, `Display` and `FromStr` (which the controller
/// runs on every line, so it compares text and allocates nothing).
macro_rules! log_words {
    ($(#[$meta:meta])* pub enum $name:ident {
        $($(#[$doc:meta])* $value:ident = $word:literal,)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$doc])* $value,)*
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: [$name; [$($word),*].len()] = [$($name::$value),*];

            /// The word for it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $($name::$value => $word,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(word: &str) -> Result<$name, UnknownWord> {
                $name::ALL.into_iter().find(|v| v.name() == word).ok_or(UnknownWord)
            }
        }
    };
}

log_words! {
    /// The room's decision for one protected request.
    pub enum Decision {
        /// Forward to the origin.
        Allow = "allow",
        /// Closed (`allow_percentage = 0`): waiting will not help.
        Deny = "deny",
        /// Unknown visitor: starts waiting.
        Anon = "anon",
        /// Waiting, token not yet expired.
        Wait = "wait",
        /// Waited, lost the lottery: waits again.
        ReWait = "re-wait",
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
    /// Its key's read failed: the token is neither honoured nor replaced.
    UnreadableKey {
        /// The key id the token names.
        kid: String,
    },
    /// The signature does not match.
    BadSignature,
}

impl fmt::Display for Rejection {
    /// The reason and its detail, as a log line says it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Malformed(m) => write!(f, "malformed:{m}"),
            Rejection::UidMismatch { token_uid } => write!(f, "uid-mismatch token_uid={token_uid}"),
            Rejection::UnknownKey { kid } => write!(f, "unknown-key kid={kid}"),
            Rejection::UnreadableKey { kid } => write!(f, "unreadable-key kid={kid}"),
            Rejection::BadSignature => f.write_str("bad-signature"),
        }
    }
}

log_words! {
    /// What happened to a valid token on the way to the decision.
    pub enum Transition {
        /// An expired allow token: the session timed out.
        SessionExpired = "session-expired",
        /// An expired wait token that won the lottery.
        LotteryWon = "lottery-won",
        /// An expired wait token that lost the lottery.
        LotteryLost = "lottery-lost",
        /// A new session (a won draw, or a room open at 100 %) while the POP had
        /// started `pop_new_sessions_per_minute` in the last minute: held, the
        /// visitor waits on with a new wait token, as after a loss ([`crate::admission::ceiling`]).
        CeilingReached = "ceiling-reached",
        /// A wait token due for its draw while the room holds everyone (`queue_all`):
        /// not drawn, it waits on with a new wait token.
        QueueAll = "queue-all",
        /// A wait token presented after its redeem window: it re-waits without a draw,
        /// so a copy of a winning token cannot be replayed for new sessions forever.
        /// (In FIFO mode the visitor arrives anew.)
        RedeemWindowPassed = "redeem-window-passed",
        /// FIFO: a waiting visitor whose arrival is at or before `fifo_cutoff`: admitted.
        CutoffReached = "cutoff-reached",
        /// FIFO: a place whose hold ended: the visitor arrives anew.
        HoldExpired = "hold-expired",
        /// FIFO: a lottery wait token joined the line (at `exp - 2d`).
        JoinedLine = "joined-line",
        /// A FIFO place presented in random mode: it waits for its address's next
        /// draw, without a draw of its own.
        LeftLine = "left-line",
        /// A wait token due for its draw (random) or admission (FIFO) whose bot toll
        /// is unpaid: held, without a draw. In random mode it waits on with a new
        /// wait token, which owes the toll again; in FIFO mode it keeps its place.
        TollUnpaid = "toll-unpaid",
    }
}

log_words! {
    /// What an admitted request does to the visitor's session.
    pub enum Session {
        /// A new session: the lottery was won, or the room admits everyone and the
        /// visitor held no live allow token.
        New = "new",
        /// A live session, with a renewed allow token.
        Renewed = "renewed",
        /// A live session whose allow token is kept as it is.
        Kept = "kept",
    }
}

/// A word that names none of an enum's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownWord;

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown word")
    }
}

impl std::error::Error for UnknownWord {}

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
    /// True when a signing key or the challenge's secret it rested on could not be
    /// read: the verdict stands only for a live session ([`Verdict::stands_unread`]).
    pub unread: bool,
    /// For a waiting visitor (`anon`, `wait`, `re-wait`): when their wait token
    /// expires: in random mode their next draw comes at `wait_exp + 1`; in FIFO
    /// mode it is the end of their place's hold.
    pub wait_exp: Option<u64>,
    /// FIFO: the visitor's place, Unix milliseconds of arrival: the one held after
    /// this response, or the one just admitted.
    pub arr: Option<u64>,
    /// For an admitted visitor: whether this request starts, renews or keeps a session.
    pub session: Option<Session>,
    /// The expiry of the token the visitor holds after this response (the one set,
    /// or the one kept), Unix seconds; `None` when they hold none (deny).
    pub exp: Option<u64>,
    /// The id of a key shorter than [`MIN_STRONG_KEY_LEN`](crate::credentials::keys::MIN_STRONG_KEY_LEN)
    /// bytes that this request used (to verify or to sign), if any: logged as weak.
    pub weak_key: Option<String>,
    /// A new session the POP must count against its ceiling, by its
    /// [`draw_key`](crate::admission::ceiling::draw_key) (`None`: nothing to count).
    pub pop_count: Option<String>,
    /// The bot toll the visitor owes after this response, if any ([`crate::bots::toll`]).
    pub toll: Option<TollDue>,
    /// Whether this request paid the toll its token owed.
    pub toll_paid: bool,
    /// The external challenge's verification, when this request made one
    /// ([`crate::bots::challenge`]): its outcome is the toll's payment.
    pub challenge: Option<Outcome>,
}

impl Verdict {
    /// Whether the verdict stands though a read it may rest on failed: it forwards
    /// a visitor on the live session they brought, granting nothing new.
    pub fn stands_unread(&self) -> bool {
        self.decision == Decision::Allow
            && matches!(self.session, Some(Session::Kept | Session::Renewed))
    }
}

/// Whether `cookie` holds a live session of `uid`: a valid allow token before its
/// own expiry. While a read the decision rests on fails, the one visitor the room
/// lets on, with no draw and the token left as it is.
pub fn live_session(now: u64, uid: &str, cookie: Option<&str>, keys: &impl KeyStore) -> bool {
    cookie
        .and_then(|value| validate(value, uid, keys).ok())
        .is_some_and(|token| token.claims.dec == TokenKind::Allow && now <= token.claims.exp)
}

/// A bot toll to pay: the challenge (the signature of the wait token the visitor
/// holds after the response) and the bits it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TollDue {
    /// The wait token's signature.
    pub signature: [u8; 32],
    /// Leading zero bits the solution's hash needs.
    pub bits: u8,
}

/// What a request brings besides its cookie.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The POP's counts of new sessions, for `pop_new_sessions_per_minute`
    /// ([`crate::admission::ceiling`]; `None`: not counted).
    pub pop: Option<&'a dyn PopCounts>,
    /// The value of the room's toll cookie ([`crate::credentials::cookie_names::toll`]), if any:
    /// a nonce, or under an external challenge the provider's token.
    pub toll_nonce: Option<&'a str>,
    /// The edge's verifier of the room's external challenge, asked only when a
    /// draw or an admission is due (`None`: a challenged room's draws come unpaid).
    pub challenge: Option<&'a dyn Verifier>,
}

/// Decides for a request at `now` (Unix seconds) from client `uid`, carrying the
/// waiting-room cookie value `cookie` (if any): [`decide_at`] at the second's
/// first millisecond.
pub fn decide(
    now: u64,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> Verdict {
    decide_at(now, 0, uid, cookie, settings, keys)
}

/// Decides for a request at `now` Unix seconds and `millis` milliseconds past
/// them (FIFO places are kept to the millisecond; everything else reads whole
/// seconds) from client `uid`, carrying the waiting-room cookie value `cookie`
/// (if any).
pub fn decide_at(
    now: u64,
    millis: u16,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> Verdict {
    decide_with(now, millis, uid, cookie, settings, keys, Context::default())
}

/// [`decide_at`] with what else the request brings: the POP's counts and the
/// toll cookie.
pub fn decide_with(
    now: u64,
    millis: u16,
    uid: &str,
    cookie: Option<&str>,
    settings: &Settings,
    keys: &impl KeyStore,
    context: Context<'_>,
) -> Verdict {
    let now_ms = now
        .saturating_mul(1000)
        .saturating_add(u64::from(millis.min(999)));
    let keys = &Noting::new(keys);
    let percentage = settings.percentage_at(now);
    // Holding everyone: nobody is drawn (below), and in FIFO mode nobody is past
    // the cutoff; live sessions go on.
    let queue_all = settings.queue_all;
    let holding;
    let settings = if queue_all && settings.fifo_cutoff.is_some() {
        holding = Settings {
            fifo_cutoff: None,
            ..settings.clone()
        };
        &holding
    } else {
        settings
    };
    // A closed room ignores the cookie. At 100 % the VCL ignores it too; here it is
    // read so that a session's renewal is told from a new admission (the
    // controller counts new sessions) and a fixed session keeps its admission time.
    let (token, rejection) = match cookie.filter(|_| queue_all || !percentage.is_zero()) {
        None => (None, None),
        Some(value) => match validate(value, uid, keys) {
            Ok(token) => (Some(token), None),
            Err(why) => (None, Some(why)),
        },
    };

    let fifo = settings.queueing_method == QueueingMethod::Fifo;
    // FIFO: the place the visitor keeps or joins at (a newcomer's is drawn below).
    let (decision, transition, kept_place) = if queue_all {
        match &token {
            None => (Decision::Anon, None, None),
            Some(token) if fifo => classify_fifo(now, token, settings, keys),
            Some(token) => {
                let (decision, transition) = classify(now, token, settings);
                match transition {
                    Some(Transition::LotteryWon | Transition::LotteryLost) => {
                        (Decision::ReWait, Some(Transition::QueueAll), None)
                    }
                    _ => (decision, transition, None),
                }
            }
        }
    } else if percentage.is_hundred() {
        (Decision::Allow, None, None)
    } else if percentage.is_zero() {
        (Decision::Deny, None, None)
    } else {
        match &token {
            None => (Decision::Anon, None, None),
            Some(token) if fifo => classify_fifo(now, token, settings, keys),
            Some(token) => {
                let (decision, transition) = classify(now, token, settings);
                (decision, transition, None)
            }
        }
    };
    // The bot toll: a draw or an admission that comes unpaid is held.
    let draw_due = matches!(
        transition,
        Some(Transition::LotteryWon | Transition::LotteryLost | Transition::CutoffReached)
    );
    let toll = Toll::judge(token.as_ref(), settings, &context, draw_due);
    let (decision, transition) = match transition {
        Some(Transition::LotteryWon | Transition::LotteryLost) if toll.unpaid() => {
            (Decision::ReWait, Some(Transition::TollUnpaid))
        }
        Some(Transition::CutoffReached) if toll.unpaid() => {
            (Decision::Wait, Some(Transition::TollUnpaid))
        }
        _ => (decision, transition),
    };
    let held_session = token
        .as_ref()
        .filter(|t| t.claims.dec == TokenKind::Allow && now <= session_end(&t.claims, settings));
    let new_session = decision == Decision::Allow && held_session.is_none();
    let (decision, transition, pop_count) = if new_session && !fifo {
        at_the_ceiling(
            now,
            uid,
            token.as_ref(),
            settings,
            context.pop,
            (decision, transition),
        )
    } else {
        (decision, transition, None)
    };
    let (wait_exp, due) = if fifo {
        fifo_due(
            (now, now_ms),
            uid,
            (decision, transition),
            token.as_ref(),
            kept_place,
            settings,
            keys,
        )
    } else {
        lottery_due(now, uid, decision, token.as_ref(), settings, transition)
    };
    let arr = match (decision, due) {
        (Decision::Allow, _) if transition == Some(Transition::CutoffReached) => kept_place,
        (Decision::Allow | Decision::Deny, _) => None,
        (_, Some(due)) => due.arr,
        (_, None) => kept_place,
    };
    let session = (decision == Decision::Allow).then_some(match (held_session, due) {
        (None, _) => Session::New,
        (Some(_), Some(_)) => Session::Renewed,
        (Some(_), None) => Session::Kept,
    });
    let exp = match (decision, due, held_session) {
        (Decision::Allow, Some(due), _) => Some(due.exp),
        (Decision::Allow, None, Some(held)) => Some(session_end(&held.claims, settings)),
        _ => wait_exp,
    };
    let successor_toll = toll.successor(settings.toll_bits());
    // The toll owed after the response: the held token's, unless paid now, or
    // the new wait token's.
    let mut toll_due = match (decision, due, &token) {
        (Decision::Wait, None, Some(held)) if toll.owed > 0 && !toll.paid => Some(TollDue {
            signature: *held.signature(),
            bits: toll.owed,
        }),
        _ => None,
    };
    let (cookie, signing_key_missing) = match (decision, due) {
        (Decision::Deny, _) => (CookieAction::Delete, false),
        (_, None) => (CookieAction::Keep, false),
        // A key id no store can hold would mint tokens that never verify,
        // stranding every visitor: such a key is as unusable as a missing one,
        // known without a read.
        (_, Some(due)) => match is_storable_kid(&settings.active_key)
            .then(|| keys.key(&settings.active_key).ok().flatten())
            .flatten()
        {
            None => (CookieAction::Keep, true),
            // (`exp` above still names the token due: the log says when the
            // visitor's place would end, and the alert says none was issued.)
            Some(key) => {
                let claims = Claims {
                    dec: due.kind,
                    exp: due.exp,
                    uid: uid.to_string(),
                    kid: settings.active_key.clone(),
                    adm: due.adm,
                    arr: due.arr,
                    toll: successor_toll.filter(|_| due.kind == TokenKind::Wait),
                };
                let (value, signature) = claims.mint_with_signature(&key);
                toll_due = claims
                    .toll
                    .filter(|bits| *bits > 0)
                    .map(|bits| TollDue { signature, bits });
                (CookieAction::Set(value), false)
            }
        },
    };
    Verdict {
        decision,
        cookie,
        rejection,
        transition,
        signing_key_missing,
        unread: keys.failed.get() || matches!(toll.checked, Some(Outcome::Unread)),
        wait_exp,
        arr,
        session,
        exp,
        weak_key: keys.weak.take(),
        pop_count,
        toll: toll_due,
        toll_paid: toll.paid,
        challenge: toll.checked,
    }
}

/// The bot toll of the token presented ([`crate::bots::toll`], [`crate::bots::challenge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Toll {
    /// Bits it owes now (0: nothing, or not a wait token).
    owed: u8,
    /// Whether it had paid before (`toll=0`).
    settled: bool,
    /// Whether the request's toll cookie pays what it owes.
    paid: bool,
    /// The external challenge's verification, if one was made.
    checked: Option<Outcome>,
}

impl Toll {
    /// The toll of `token` in a room with `settings`; `draw_due`: whether its
    /// draw or admission is due now (the only time a challenge is verified).
    fn judge(
        token: Option<&SignedToken>,
        settings: &Settings,
        context: &Context<'_>,
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
        let cookie = context.toll_nonce;
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
                match (context.challenge, provider_token) {
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

    /// Whether a draw or an admission must wait for payment.
    fn unpaid(&self) -> bool {
        self.owed > 0 && !self.paid
    }

    /// The `toll` field of the wait token the visitor gets next: none while the
    /// room asks none; `0` once paid; else what the room asks.
    fn successor(&self, room_bits: u8) -> Option<u8> {
        match room_bits {
            0 => None,
            _ if self.settled || self.paid => Some(0),
            bits => Some(bits),
        }
    }
}

/// The POP's ceiling on a new session (a won draw, or a visitor a room open at
/// 100 % lets in): `admitted` stands, with the session to count, or the visitor
/// waits on with a new wait token ([`crate::admission::ceiling`]).
fn at_the_ceiling(
    now: u64,
    uid: &str,
    token: Option<&SignedToken>,
    settings: &Settings,
    pop: Option<&dyn PopCounts>,
    admitted: (Decision, Option<Transition>),
) -> (Decision, Option<Transition>, Option<String>) {
    let wait = token.filter(|t| t.claims.dec == TokenKind::Wait);
    let end = wait.map_or(now, |t| t.claims.exp);
    match ceiling::judge(settings.pop_new_sessions_per_minute, pop, now, uid, end) {
        Ceiling::Admit(count) => (admitted.0, admitted.1, count),
        Ceiling::Hold if wait.is_some() => {
            (Decision::ReWait, Some(Transition::CeilingReached), None)
        }
        Ceiling::Hold => (Decision::Anon, Some(Transition::CeilingReached), None),
    }
}

/// Decodes `value` and checks, in the VCL's order, the uid, the key and
/// the signature.
fn validate(value: &str, uid: &str, keys: &impl KeyStore) -> Result<SignedToken, Rejection> {
    let token = token::decode(value).map_err(Rejection::Malformed)?;
    if token.claims.uid != uid {
        return Err(Rejection::UidMismatch {
            token_uid: token.claims.uid.clone(),
        });
    }
    let key = match keys.key(&token.claims.kid) {
        Ok(Some(key)) => key,
        Ok(None) => {
            return Err(Rejection::UnknownKey {
                kid: token.claims.kid.clone(),
            });
        }
        Err(_) => {
            return Err(Rejection::UnreadableKey {
                kid: token.claims.kid.clone(),
            });
        }
    };
    if !token.verify(&key) {
        return Err(Rejection::BadSignature);
    }
    Ok(token)
}

/// When an allow token's session ends: its `exp`, or, for a fixed session that
/// carries its admission time, `adm + allow_period_timeout` (so a live change of
/// the timeout applies to running sessions).
fn session_end(claims: &Claims, settings: &Settings) -> u64 {
    match (settings.session_mode, claims.adm) {
        (SessionMode::Fixed, Some(adm)) => adm.saturating_add(settings.allow_period_timeout),
        _ => claims.exp,
    }
}

/// A valid token keeps its decision until `now` is strictly after its expiry; an
/// expired wait token draws only within `redeem_window` seconds of its expiry.
fn classify(now: u64, token: &SignedToken, settings: &Settings) -> (Decision, Option<Transition>) {
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
fn lottery_due(
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

/// FIFO mode: when the visitor's place lapses and the token the response must
/// carry. A newcomer gets a place at their arrival; a held place is re-issued
/// (same place, a new hold) only when less than half its hold remains, or when
/// the place is not the token's own.
fn fifo_due(
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
fn classify_fifo(
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

/// A token the response must carry: its kind, expiry and, for fixed sessions,
/// admission time (the visitor's uid and the active key complete it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Due {
    kind: TokenKind,
    exp: u64,
    adm: Option<u64>,
    arr: Option<u64>,
}

impl Due {
    fn wait(exp: u64) -> Due {
        Due {
            kind: TokenKind::Wait,
            exp,
            adm: None,
            arr: None,
        }
    }

    fn fifo_wait(exp: u64, arr: u64) -> Due {
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
fn allow_token(
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

/// The key store as one request uses it: notes the first weak key it hands out
/// (to verify or to sign), for the log, and whether a read failed.
struct Noting<'s, K> {
    store: &'s K,
    weak: RefCell<Option<String>>,
    failed: Cell<bool>,
}

impl<'s, K: KeyStore> Noting<'s, K> {
    fn new(store: &'s K) -> Self {
        Noting {
            store,
            weak: RefCell::new(None),
            failed: Cell::new(false),
        }
    }
}

impl<K: KeyStore> KeyStore for Noting<'_, K> {
    fn key(&self, kid: &str) -> KeyRead {
        let key = self.store.key(kid);
        match &key {
            Ok(Some(key)) if key.is_weak() => {
                self.weak
                    .borrow_mut()
                    .get_or_insert_with(|| kid.to_string());
            }
            Err(_) => self.failed.set(true),
            Ok(_) => {}
        }
        key
    }
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
