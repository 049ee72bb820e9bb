//! One real request per decision path, and the HMAC work each must do at minimum.

use std::collections::HashMap;
use std::hint::black_box;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use waiting_room::admission::decision::{
    self, CookieAction, Decision, Rejection, Transition, Verdict,
};
use waiting_room::credentials::cookie_names;
use waiting_room::credentials::keys::SigningKey;
use waiting_room::credentials::token::{self, Claims, TokenKind};
use waiting_room::settings::config::Settings;
use waiting_room::settings::context::RequestContext;
use waiting_room::{Plan, Visit, plan};

/// The clock every case is read at (Unix seconds).
pub const NOW: u64 = 1_700_000_023;
/// The visitor's client IP.
pub const UID: &str = "192.0.2.10";
/// The protected path the visitor asks for.
pub const PATH: &str = "/events";
/// The signing key's id and secret (the length of `openssl rand -base64 32`).
const KID: &str = "key1";
const SECRET: &str = "c2VjcmV0LXNpZ25pbmcta2V5LWZvci1iZW5jaG1hcms=";
/// What a forger signs with: a guess, not the key.
const GUESSED_SECRET: &str = "a-guessed-secret-that-is-not-the-key";
/// The room's percentage in every case.
const PERCENTAGE: u8 = 50;

/// The decision paths, by name, in report order.
pub const NAMES: [&str; 7] = [
    "no-cookie",
    "unexpired-wait",
    "expired-wait-won",
    "expired-wait-lost",
    "allow-kept",
    "allow-renewal",
    "forged-token",
];

/// One request that takes one decision path, with everything it needs.
pub struct Case {
    /// The path's name (one of [`NAMES`]).
    pub name: &'static str,
    /// The request's clock.
    pub now: u64,
    /// The `Cookie` header, if the visitor sends one.
    cookie_header: Option<String>,
    context: RequestContext,
    keys: HashMap<String, String>,
    /// The texts the path must MAC at minimum: the token it verifies, the token it signs.
    floor_texts: Vec<String>,
}

impl Case {
    /// The whole per-request core, as the edge runs it.
    pub fn plan(&self) -> Plan {
        let visit = Visit {
            now: self.now,
            millis: 0,
            uid: UID,
            path: PATH,
            path_and_query: PATH,
            cookie_header: self.cookie_header.as_deref(),
            ..Visit::default()
        };
        plan(&visit, &self.context, &self.keys)
    }

    /// The decision alone (no cookie parsing, page choice or log line).
    pub fn decide(&self) -> Verdict {
        decision::decide(
            &decision::Request::new(self.now, UID, self.cookie()),
            &decision::Context::new(&self.context.settings),
            &self.keys,
        )
    }

    /// The floor: HMAC-SHA256 of every text the path must verify or sign, with the
    /// key set up afresh each time (as any verifier or signer must).
    pub fn floor(&self) -> [u8; 32] {
        let mut last = [0u8; 32];
        for text in &self.floor_texts {
            let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes())
                .expect("HMAC accepts keys of any length");
            mac.update(black_box(text.as_bytes()));
            last = mac.finalize().into_bytes().into();
        }
        last
    }

    /// The waiting-room cookie the visitor sends, if any.
    pub fn cookie(&self) -> Option<&str> {
        self.cookie_header.as_deref().and_then(room_cookie)
    }

    /// How many HMAC-SHA256 computations the floor holds.
    pub fn floor_macs(&self) -> usize {
        self.floor_texts.len()
    }
}

/// Every case, in [`NAMES`] order; an error when a case no longer takes its path
/// (the core changed under the benchmark).
pub fn all() -> Result<Vec<Case>, String> {
    NAMES.iter().map(|name| build(name)).collect()
}

/// The case called `name`.
pub fn build(name: &str) -> Result<Case, String> {
    let Some(&name) = NAMES.iter().find(|known| **known == name) else {
        return Err(format!("no case called {name:?}; cases: {NAMES:?}"));
    };
    let wait_exp = waiting_room::admission::grid::global_expiry(NOW, room().wait_period_duration);
    let allow_exp = NOW + room().allow_period_timeout;
    let (now, token, expect) = match name {
        "no-cookie" => (NOW, None, Expect::plain(Decision::Anon)),
        "unexpired-wait" => (
            NOW,
            Some(mint(SECRET, TokenKind::Wait, wait_exp)),
            Expect::plain(Decision::Wait),
        ),
        "expired-wait-won" => expired_wait(Transition::LotteryWon)?,
        "expired-wait-lost" => expired_wait(Transition::LotteryLost)?,
        // A young allow token is kept (lazy renewal: one HMAC); one with less
        // than half of the session left is renewed (two).
        "allow-kept" => (
            NOW,
            Some(mint(SECRET, TokenKind::Allow, allow_exp)),
            Expect::plain(Decision::Allow),
        ),
        "allow-renewal" => (
            NOW,
            Some(mint(SECRET, TokenKind::Allow, NOW + 60)),
            Expect::plain(Decision::Allow),
        ),
        _forged => (
            NOW,
            Some(mint(GUESSED_SECRET, TokenKind::Allow, allow_exp)),
            Expect {
                decision: Decision::Anon,
                transition: None,
                rejection: Some(Rejection::BadSignature),
            },
        ),
    };
    let mut case = Case {
        name,
        now,
        cookie_header: token.map(|value| format!("theme=dark; {}={value}", cookie_names::TOKEN)),
        context: room().into(),
        keys: keys(),
        floor_texts: Vec::new(),
    };
    let verdict = case.decide();
    expect.check(name, &verdict)?;
    case.floor_texts = floor_texts(case.cookie_header.as_deref(), &verdict)?;
    Ok(case)
}

/// The room every case runs in.
fn room() -> Settings {
    Settings {
        enabled: true,
        allow_percentage: waiting_room::settings::percentage::Percentage::whole(PERCENTAGE),
        ..Settings::default()
    }
}

fn keys() -> HashMap<String, String> {
    HashMap::from([(KID.to_string(), SECRET.to_string())])
}

/// A request one second after a wait token expired, with a token whose draw ends in `want`.
fn expired_wait(want: Transition) -> Result<(u64, Option<String>, Expect), String> {
    let decision = match want {
        Transition::LotteryWon => Decision::Allow,
        _ => Decision::ReWait,
    };
    for back in 1..=1_000 {
        let exp = NOW - back;
        let value = mint(SECRET, TokenKind::Wait, exp);
        let room = room();
        let request = decision::Request::new(exp + 1, UID, Some(&value));
        let verdict = decision::decide(&request, &decision::Context::new(&room), &keys());
        if verdict.transition == Some(want) {
            let expect = Expect {
                decision,
                transition: Some(want),
                rejection: None,
            };
            return Ok((exp + 1, Some(value), expect));
        }
    }
    Err(format!("no token in 1,000 draws ended in {want:?}"))
}

fn mint(secret: &str, dec: TokenKind, exp: u64) -> String {
    let key = SigningKey::new(secret).expect("the secrets here are not empty");
    Claims {
        dec,
        exp,
        uid: UID.to_string(),
        kid: KID.to_string(),
        adm: None,
        arr: None,
        toll: None,
    }
    .mint(&key)
}

fn room_cookie(header: &str) -> Option<&str> {
    waiting_room::credentials::cookie::find(header, waiting_room::credentials::cookie_names::TOKEN)
}

/// The texts a path cannot avoid MACing: the presented token's (to verify it, when
/// it is well formed) and the issued token's (to sign it).
fn floor_texts(cookie_header: Option<&str>, verdict: &Verdict) -> Result<Vec<String>, String> {
    let presented = cookie_header
        .and_then(room_cookie)
        .map(|value| token::decode(value).map(|t| t.claims.string_to_sign()))
        .transpose()
        .map_err(|m| format!("a case token is malformed: {m}"))?;
    let issued = match &verdict.cookie {
        CookieAction::Set(value) => Some(
            token::decode(value)
                .map_err(|m| format!("an issued token is malformed: {m}"))?
                .claims
                .string_to_sign(),
        ),
        CookieAction::Keep | CookieAction::Delete => None,
    };
    Ok(presented.into_iter().chain(issued).collect())
}

/// The path a case must take.
struct Expect {
    decision: Decision,
    transition: Option<Transition>,
    rejection: Option<Rejection>,
}

impl Expect {
    fn plain(decision: Decision) -> Expect {
        Expect {
            decision,
            transition: None,
            rejection: None,
        }
    }

    fn check(&self, name: &str, verdict: &Verdict) -> Result<(), String> {
        let took = (verdict.decision, verdict.transition, &verdict.rejection);
        let want = (self.decision, self.transition, &self.rejection);
        if took == want {
            Ok(())
        } else {
            Err(format!("case {name} took {took:?}, not {want:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_takes_its_path_and_counts_its_macs() {
        let cases = all().unwrap();
        let macs: Vec<(&str, usize)> = cases.iter().map(|c| (c.name, c.floor_macs())).collect();
        assert_eq!(
            macs,
            [
                ("no-cookie", 1),
                ("unexpired-wait", 1),
                ("expired-wait-won", 2),
                ("expired-wait-lost", 2),
                ("allow-kept", 1),
                ("allow-renewal", 2),
                ("forged-token", 2),
            ]
        );
    }

    #[test]
    fn plan_agrees_with_decide() {
        for case in all().unwrap() {
            assert_eq!(case.plan().verdict, Some(case.decide()), "{}", case.name);
        }
    }

    #[test]
    fn unknown_case_is_an_error() {
        assert!(build("nope").is_err());
    }
}
