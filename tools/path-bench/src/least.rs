//! A lower bound: the least an admitted visitor's request with a young allow token
//! must do, written flat, with none of the room's structure (no settings, no
//! decision table, no verdict). Timed beside its floor, it says how close to the
//! floor any implementation of the same design can come: the token is the VCL's
//! (base64 text with a hex HMAC-SHA256), the origin must not see the room's
//! cookie, and every request leaves one log line.
//!
//! It is a yardstick, not a second room (it shares only the crates and the digit
//! writer, `Decimal`, with the room): it reads only the well-formed token of
//! the `allow-kept` case (fields in the VCL's order, no `adm` or `arr`) and gives
//! up on anything else. A test checks that it does the room's work on that case
//! (the same log line and origin `Cookie` header) and refuses a forged token.

use std::collections::HashMap;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use waiting_room::decimal::Decimal;

/// What the request leads to: the origin's `Cookie` header (`None`: none left)
/// and the log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The visitor's other cookies.
    pub origin_cookie: Option<String>,
    /// The request's log line.
    pub log_line: String,
}

const COOKIE: &str = "waiting_room=";
const SIG: &[u8] = b"&sig=0x";
const HEX_SIG_LEN: usize = 64;

/// Admits the request when its `Cookie` header holds a valid, unexpired allow
/// token for `uid` signed with one of `keys`; `None` otherwise. `percentage` is
/// the room's percentage as the log line writes it.
pub fn allow_kept(
    header: &str,
    uid: &str,
    now: u64,
    percentage: &str,
    path: &str,
    keys: &HashMap<String, String>,
) -> Option<Admitted> {
    let start = header.find(COOKIE)?;
    let rest = &header[start + COOKIE.len()..];
    let value = &rest[..rest.find(';').unwrap_or(rest.len())];
    let before = header[..start].trim_end_matches([' ', ';']);
    let origin_cookie = (!before.is_empty()).then(|| before.to_string());

    let mut decoded = [0u8; 768];
    let len = base64_decode(value, &mut decoded)?;
    let text = &decoded[..len];
    let signed_len = len.checked_sub(SIG.len() + HEX_SIG_LEN)?;
    let (signed, sig_field) = text.split_at(signed_len);
    let hex = sig_field.strip_prefix(SIG)?;
    let mut sig = [0u8; 32];
    for (byte, pair) in sig.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }

    let mut fields = std::str::from_utf8(signed).ok()?.split('&');
    let mut field = |name: &str| fields.next()?.strip_prefix(name);
    let dec = field("dec=")?;
    let exp = field("exp=")?;
    let token_uid = field("uid=")?;
    let kid = field("kid=")?;
    let exp: u64 = exp.parse().ok()?;
    if dec != "allow" || token_uid != uid || now > exp {
        return None;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(keys.get(kid)?.as_bytes()).ok()?;
    mac.update(signed);
    mac.verify_slice(&sig).ok()?;

    let mut log_line = String::with_capacity(128);
    log_line.push_str("waitingroom t=");
    log_line.push_str(Decimal::new(now).as_str());
    log_line.push_str(" decision=allow uid=");
    log_line.push_str(uid);
    log_line.push_str(" p=");
    log_line.push_str(percentage);
    log_line.push_str(" session=kept exp=");
    log_line.push_str(Decimal::new(exp).as_str());
    log_line.push_str(" path=");
    log_line.push_str(path);
    Some(Admitted {
        origin_cookie,
        log_line,
    })
}

fn base64_decode(value: &str, out: &mut [u8]) -> Option<usize> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode_slice(value, out)
        .ok()
}

fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{self, PATH, UID};
    use waiting_room::OriginCookie;

    fn run(case: &cases::Case, header: &str, uid: &str) -> Option<Admitted> {
        let percentage = case.settings().allow_percentage.to_string();
        allow_kept(header, uid, case.now, &percentage, PATH, case.keys())
    }

    /// The same work as the room on its case: the same log line, the same
    /// `Cookie` header for the origin.
    #[test]
    fn does_the_rooms_work_on_its_case() {
        let case = cases::build(crate::timing::LEAST_CASE).unwrap();
        let plan = case.plan();
        let header = case.cookie_header().unwrap();
        let admitted = run(&case, header, UID).expect("admitted");
        assert_eq!(admitted.log_line, plan.log_line);
        let origin = match plan.origin_cookie {
            OriginCookie::Replace(others) => Some(others),
            OriginCookie::Remove => None,
            OriginCookie::AsSent => panic!("the room's cookie must go"),
        };
        assert_eq!(admitted.origin_cookie, origin);
        assert_eq!(origin.as_deref(), Some("theme=dark"));
    }

    /// It verifies the token: a forged one, one for another address and every
    /// one-character change of the signature are refused.
    #[test]
    fn refuses_what_the_room_refuses() {
        let case = cases::build(crate::timing::LEAST_CASE).unwrap();
        let header = case.cookie_header().unwrap();
        assert!(run(&case, header, "192.0.2.11").is_none());
        let forged = cases::build("forged-token").unwrap();
        assert!(run(&case, forged.cookie_header().unwrap(), UID).is_none());

        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let text = engine.decode(case.cookie().unwrap()).unwrap();
        let sig_at = text.len() - HEX_SIG_LEN;
        for at in sig_at..text.len() {
            let mut tampered = text.clone();
            tampered[at] = if tampered[at] == b'0' { b'1' } else { b'0' };
            let header = format!("theme=dark; {COOKIE}{}", engine.encode(&tampered));
            assert!(run(&case, &header, UID).is_none(), "signature digit {at}");
        }
    }
}
