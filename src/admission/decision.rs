//! The decision for one request in a room: from the clock, the visitor, their
//! cookie, the settings and the keys to a [`Verdict`] and the cookie to send back.
//! [`decide`] is the one entry point; the modes ([`crate::admission::random_mode`],
//! [`crate::admission::fifo_mode`]), the session ([`crate::admission::session`])
//! and the toll ([`crate::admission::toll_due`]) are its steps.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt;

use crate::admission::ceiling::{self, Ceiling, PopCounts};
use crate::admission::fifo_mode::{classify_fifo, fifo_due};
use crate::admission::random_mode::{classify, lottery_due};
use crate::admission::session::{Due, session_end};
use crate::admission::toll_due::Toll;
use crate::bots::challenge::{Outcome, Verifier};
use crate::credentials::keys::{KeyRead, KeyStore, is_storable_kid};
use crate::credentials::token::{self, Claims, Malformed, SignedToken, TokenKind};
use crate::settings::config::{QueueingMethod, Settings};

pub use crate::admission::log_words::{Decision, Session, Transition, UnknownWord};
pub use crate::admission::toll_due::TollDue;

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

/// A request as the decision sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Unix seconds.
    pub now: u64,
    /// Milliseconds past `now` (FIFO places are kept to the millisecond; everything
    /// else reads whole seconds).
    pub millis: u16,
    /// The visitor's identity.
    pub uid: &'a str,
    /// The value of the room's cookie, if any.
    pub cookie: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// A request at `now`'s first millisecond.
    pub fn new(now: u64, uid: &'a str, cookie: Option<&'a str>) -> Request<'a> {
        Request {
            now,
            millis: 0,
            uid,
            cookie,
        }
    }
}

/// The room a request is decided in: its settings, and what else the request
/// brings besides its cookie.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The room's settings.
    pub settings: &'a Settings,
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

impl<'a> Context<'a> {
    /// A room with `settings`, with no POP counts, toll cookie or verifier.
    pub fn new(settings: &'a Settings) -> Context<'a> {
        Context {
            settings,
            pop: None,
            toll_nonce: None,
            challenge: None,
        }
    }
}

/// Decides for `request` in the room of `context`, with the signing `keys`.
pub fn decide(request: &Request<'_>, context: &Context<'_>, keys: &impl KeyStore) -> Verdict {
    let Request { now, uid, .. } = *request;
    let keys = &Noting::new(keys);
    let holding = holding_everyone(context.settings);
    let settings = holding.as_ref();
    let (token, rejection) = read_token(request, settings, keys);
    let token = token.as_ref();
    // The live session the visitor brings, if any.
    let held_session = token
        .filter(|t| t.claims.dec == TokenKind::Allow && now <= session_end(&t.claims, settings));
    let judged = judge(
        now,
        uid,
        token,
        held_session.is_some(),
        settings,
        context,
        keys,
    );
    let Judged {
        decision,
        transition,
        kept_place,
        ..
    } = judged;
    let (wait_exp, due) = if settings.queueing_method == QueueingMethod::Fifo {
        let now_ms = now
            .saturating_mul(1000)
            .saturating_add(u64::from(request.millis.min(999)));
        let judged = (decision, transition);
        fifo_due(
            (now, now_ms),
            uid,
            judged,
            token,
            kept_place,
            settings,
            keys,
        )
    } else {
        lottery_due(now, uid, decision, token, settings, transition)
    };
    let toll = &judged.toll;
    let successor_toll = toll.successor(settings.toll_bits());
    let issued = issue(decision, due, uid, settings, keys, successor_toll);
    Verdict {
        decision,
        cookie: issued.cookie,
        rejection,
        transition,
        signing_key_missing: issued.signing_key_missing,
        unread: keys.failed.get() || matches!(toll.checked, Some(Outcome::Unread)),
        wait_exp,
        arr: match (decision, due) {
            (Decision::Allow, _) if transition == Some(Transition::CutoffReached) => kept_place,
            (Decision::Allow | Decision::Deny, _) => None,
            (_, Some(due)) => due.arr,
            (_, None) => kept_place,
        },
        session: (decision == Decision::Allow).then_some(match (held_session, due) {
            (None, _) => Session::New,
            (Some(_), Some(_)) => Session::Renewed,
            (Some(_), None) => Session::Kept,
        }),
        exp: match (decision, due, held_session) {
            (Decision::Allow, Some(due), _) => Some(due.exp),
            (Decision::Allow, None, Some(held)) => Some(session_end(&held.claims, settings)),
            _ => wait_exp,
        },
        weak_key: keys.weak.take(),
        pop_count: judged.pop_count,
        // The toll owed after the response: the new wait token's, or the held one's.
        toll: issued
            .toll
            .or(toll.still_owed(decision, due.is_some(), token)),
        toll_paid: toll.paid,
        challenge: judged.toll.checked,
    }
}

/// The decision on the visitor's token, before the token the response carries.
struct Judged {
    decision: Decision,
    transition: Option<Transition>,
    /// FIFO: the place the visitor keeps or joins at.
    kept_place: Option<u64>,
    toll: Toll,
    /// A new session the POP must count.
    pop_count: Option<String>,
}

/// Classifies the token, then holds a draw or an admission whose bot toll is
/// unpaid, then a new session past the POP's ceiling (random mode); `held_session`:
/// whether the token is a live session's.
fn judge(
    now: u64,
    uid: &str,
    token: Option<&SignedToken>,
    held_session: bool,
    settings: &Settings,
    context: &Context<'_>,
    keys: &impl KeyStore,
) -> Judged {
    let (decision, transition, kept_place) = classify_request(now, token, settings, keys);
    let draw_due = matches!(
        transition,
        Some(Transition::LotteryWon | Transition::LotteryLost | Transition::CutoffReached)
    );
    let (toll_nonce, verifier) = (context.toll_nonce, context.challenge);
    let toll = Toll::judge(token, settings, toll_nonce, verifier, draw_due);
    let (decision, transition) = match transition {
        Some(Transition::LotteryWon | Transition::LotteryLost) if toll.unpaid() => {
            (Decision::ReWait, Some(Transition::TollUnpaid))
        }
        Some(Transition::CutoffReached) if toll.unpaid() => {
            (Decision::Wait, Some(Transition::TollUnpaid))
        }
        _ => (decision, transition),
    };
    let fifo = settings.queueing_method == QueueingMethod::Fifo;
    let new_session = decision == Decision::Allow && !held_session;
    let (decision, transition, pop_count) = if new_session && !fifo {
        at_the_ceiling(
            now,
            uid,
            token,
            settings,
            context.pop,
            (decision, transition),
        )
    } else {
        (decision, transition, None)
    };
    Judged {
        decision,
        transition,
        kept_place,
        toll,
        pop_count,
    }
}

/// The settings as the decision reads them: holding everyone, nobody is drawn
/// ([`classify_request`]), and in FIFO mode nobody is past the cutoff; live
/// sessions go on.
fn holding_everyone(settings: &Settings) -> Cow<'_, Settings> {
    match settings {
        s if s.queue_all && s.fifo_cutoff.is_some() => Cow::Owned(Settings {
            fifo_cutoff: None,
            ..s.clone()
        }),
        s => Cow::Borrowed(s),
    }
}

/// The visitor's token, if the room reads it: a closed room ignores the cookie. At
/// 100 % the VCL ignores it too; here it is read so that a session's renewal is
/// told from a new admission (the controller counts new sessions) and a fixed
/// session keeps its admission time.
fn read_token(
    request: &Request<'_>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> (Option<SignedToken>, Option<Rejection>) {
    let closed = !settings.queue_all && settings.percentage_at(request.now).is_zero();
    match request.cookie.filter(|_| !closed) {
        None => (None, None),
        Some(value) => match validate(value, request.uid, keys) {
            Ok(token) => (Some(token), None),
            Err(why) => (None, Some(why)),
        },
    }
}

/// The decision before the toll and the ceiling, the transition, and in FIFO mode
/// the place the visitor keeps or joins at (a newcomer's is drawn later).
fn classify_request(
    now: u64,
    token: Option<&SignedToken>,
    settings: &Settings,
    keys: &impl KeyStore,
) -> (Decision, Option<Transition>, Option<u64>) {
    let percentage = settings.percentage_at(now);
    let fifo = settings.queueing_method == QueueingMethod::Fifo;
    if !settings.queue_all && percentage.is_hundred() {
        return (Decision::Allow, None, None);
    }
    if !settings.queue_all && percentage.is_zero() {
        return (Decision::Deny, None, None);
    }
    match token {
        None => (Decision::Anon, None, None),
        Some(token) if fifo => classify_fifo(now, token, settings, keys),
        Some(token) => match classify(now, token, settings) {
            // Holding everyone: a due draw is not drawn.
            (_, Some(Transition::LotteryWon | Transition::LotteryLost)) if settings.queue_all => {
                (Decision::ReWait, Some(Transition::QueueAll), None)
            }
            (decision, transition) => (decision, transition, None),
        },
    }
}

/// What the response does with the cookie: delete it (deny), keep it (no token
/// due), or set the token due, signed with the active key. Also whether a due
/// token could not be signed, and the toll the new wait token owes.
struct Issued {
    cookie: CookieAction,
    signing_key_missing: bool,
    toll: Option<TollDue>,
}

fn issue(
    decision: Decision,
    due: Option<Due>,
    uid: &str,
    settings: &Settings,
    keys: &impl KeyStore,
    successor_toll: Option<u8>,
) -> Issued {
    let issued = |cookie, signing_key_missing, toll| Issued {
        cookie,
        signing_key_missing,
        toll,
    };
    let due = match (decision, due) {
        (Decision::Deny, _) => return issued(CookieAction::Delete, false, None),
        (_, None) => return issued(CookieAction::Keep, false, None),
        (_, Some(due)) => due,
    };
    // A key id no store can hold would mint tokens that never verify, stranding
    // every visitor: such a key is as unusable as a missing one, known without a
    // read. (The verdict's `exp` still names the token due: the log says when the
    // visitor's place would end, and the alert says none was issued.)
    let key = is_storable_kid(&settings.active_key)
        .then(|| keys.key(&settings.active_key).ok().flatten())
        .flatten();
    let Some(key) = key else {
        return issued(CookieAction::Keep, true, None);
    };
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
    let toll = claims
        .toll
        .filter(|bits| *bits > 0)
        .map(|bits| TollDue { signature, bits });
    issued(CookieAction::Set(value), false, toll)
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
