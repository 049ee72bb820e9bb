//! A lower bound: the least an admitted visitor's request must do, written flat,
//! with none of the room's structure (no settings, no decision table, no verdict).
//! Timed beside its floor, it says how close to the floor any implementation of
//! the same design can come: the token is the VCL's (base64 text with a hex
//! HMAC-SHA256), the origin must not see the room's cookie, a sliding session is
//! renewed once less than half of it is left, and every request leaves one log line.
//!
//! It is a yardstick, not a second room (it shares only the crates and the digit
//! writer, `Decimal`, with the room): it reads only well-formed allow tokens
//! (fields in the VCL's order, no `adm` or `arr`) in the header's last cookie,
//! serves sliding sessions with the default cookie attributes, and gives up on
//! anything else.
//! Tests check that it does the room's work on the `allow-kept` and
//! `allow-renewal` cases (the same log line, origin `Cookie` header and
//! `Set-Cookie`) and refuses forged and tampered tokens.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use waiting_room::decimal::Decimal;

/// The room's settings this request needs, as plain values.
#[derive(Debug, Clone, Copy)]
pub struct Room<'a> {
    /// The percentage as the log line writes it.
    pub percentage: &'a str,
    /// `allow_period_timeout`, seconds.
    pub session: u64,
    /// The cookie's `max-age`, seconds.
    pub cookie_lifetime: u64,
    /// The key new tokens are signed with.
    pub active_key: &'a str,
}

impl<'a> Room<'a> {
    /// The values from the room's settings; `percentage` is their percentage as text.
    pub fn of(settings: &'a waiting_room::config::Settings, percentage: &'a str) -> Room<'a> {
        Room {
            percentage,
            session: settings.allow_period_timeout,
            cookie_lifetime: settings.cookie_lifetime,
            active_key: &settings.active_key,
        }
    }
}

/// What the request leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The origin's `Cookie` header: the visitor's other cookies (`None`: none left).
    pub origin_cookie: Option<String>,
    /// The renewed token's `Set-Cookie`, when the session was due for renewal.
    pub set_cookie: Option<String>,
    /// The request's log line.
    pub log_line: String,
}

const COOKIE: &str = "waiting_room=";
const SIG: &[u8] = b"&sig=0x";
const HEX_SIG_LEN: usize = 64;
const HEX: &[u8; 16] = b"0123456789abcdef";
/// Room for any token text the room signs here (the uid and kid are bounded).
const MAX_TEXT: usize = 512;

/// Admits the request when its `Cookie` header holds a valid, unexpired allow
/// token for `uid` signed with one of `keys`, renewing it when the room would;
/// `None` otherwise.
pub fn admit(
    header: &str,
    uid: &str,
    now: u64,
    path: &str,
    room: Room<'_>,
    keys: &HashMap<String, String>,
) -> Option<Admitted> {
    // The room's cookie, last in the header (anything else is given up on): its
    // name at the start or after `;` or a space, nothing after its value.
    let start = header.find(COOKIE)?;
    let before = &header[..start];
    if !(before.is_empty() || before.ends_with([';', ' '])) {
        return None;
    }
    let value = &header[start + COOKIE.len()..];
    if value.contains(';') {
        return None;
    }
    let before = before.trim_end_matches([' ', ';']);
    let origin_cookie = (!before.is_empty()).then(|| before.to_string());

    let mut decoded = [0u8; 768];
    let len = STANDARD.decode_slice(value, &mut decoded).ok()?;
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
    if dec != "allow" || token_uid != uid || now > exp || uid.len() + room.active_key.len() > 300 {
        return None;
    }
    // Keyed once: the renewal signs with the state that verified.
    let keyed = Hmac::<Sha256>::new_from_slice(keys.get(kid)?.as_bytes()).ok()?;
    let mut mac = keyed.clone();
    mac.update(signed);
    mac.verify_slice(&sig).ok()?;

    // As the room renews a sliding session: another key is active, less than half
    // of the session is left, or more than all of it (the timeout was lowered).
    let left = exp - now;
    let renew =
        kid != room.active_key || left.saturating_mul(2) < room.session || left > room.session;
    let exp = if renew {
        now.saturating_add(room.session)
    } else {
        exp
    };
    let set_cookie = match renew {
        false => None,
        // Signed with the active key: the token's own, keyed once, or another,
        // looked up and keyed now (a rotation).
        true => {
            let signing = match kid == room.active_key {
                true => keyed,
                false => {
                    Hmac::<Sha256>::new_from_slice(keys.get(room.active_key)?.as_bytes()).ok()?
                }
            };
            let value = set_cookie(signing, exp, uid, room.active_key, room.cookie_lifetime);
            Some(value)
        }
    };

    let mut log_line = String::with_capacity(128);
    log_line.push_str("waitingroom t=");
    log_line.push_str(Decimal::new(now).as_str());
    log_line.push_str(" decision=allow uid=");
    log_line.push_str(uid);
    log_line.push_str(" p=");
    log_line.push_str(room.percentage);
    log_line.push_str(if renew {
        " session=renewed exp="
    } else {
        " session=kept exp="
    });
    log_line.push_str(Decimal::new(exp).as_str());
    log_line.push_str(" path=");
    log_line.push_str(path);
    Some(Admitted {
        origin_cookie,
        set_cookie,
        log_line,
    })
}

/// The `Set-Cookie` of a new allow token: its text and signature written into one
/// buffer, base64-encoded straight into the header value.
fn set_cookie(keyed: Hmac<Sha256>, exp: u64, uid: &str, kid: &str, max_age: u64) -> String {
    let mut text = [0u8; MAX_TEXT];
    let mut len = 0;
    let mut push = |bytes: &[u8], text: &mut [u8; MAX_TEXT]| {
        text[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
        len
    };
    push(b"dec=allow&exp=", &mut text);
    push(Decimal::new(exp).as_bytes(), &mut text);
    push(b"&uid=", &mut text);
    push(uid.as_bytes(), &mut text);
    push(b"&kid=", &mut text);
    let signed_len = push(kid.as_bytes(), &mut text);
    let mut mac = keyed;
    mac.update(&text[..signed_len]);
    let tag = mac.finalize().into_bytes();
    push(SIG, &mut text);
    for byte in tag {
        push(
            &[HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]],
            &mut text,
        );
    }
    let mut value = String::with_capacity(COOKIE.len() + 4 * len / 3 + 100);
    value.push_str(COOKIE);
    STANDARD.encode_string(&text[..len], &mut value);
    value.push_str("; path=/; max-age=");
    value.push_str(Decimal::new(max_age).as_str());
    value.push_str("; HttpOnly; SameSite=Lax");
    value
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
    use waiting_room::config::Settings;
    use waiting_room::{OriginCookie, Visit};

    fn run(case: &cases::Case, header: &str, uid: &str) -> Option<Admitted> {
        let percentage = case.settings().allow_percentage.to_string();
        let room = Room::of(case.settings(), &percentage);
        admit(header, uid, case.now, PATH, room, case.keys())
    }

    /// The same work as the room on its cases: the same log line, `Cookie` header
    /// for the origin and `Set-Cookie` (none on a kept session).
    #[test]
    fn does_the_rooms_work_on_its_cases() {
        for name in crate::timing::LEAST_CASES {
            let case = cases::build(name).unwrap();
            let plan = case.plan();
            let header = case.cookie_header().unwrap();
            let admitted = run(&case, header, UID).expect("admitted");
            assert_eq!(admitted.log_line, plan.log_line, "{name}");
            assert_eq!(admitted.set_cookie, plan.set_cookie, "{name}");
            let origin = match plan.origin_cookie {
                OriginCookie::Replace(others) => Some(others),
                OriginCookie::Remove => None,
                OriginCookie::AsSent => panic!("the room's cookie must go"),
            };
            assert_eq!(admitted.origin_cookie, origin, "{name}");
            assert_eq!(origin.as_deref(), Some("theme=dark"), "{name}");
        }
        let renewed = run(&cases::build("allow-renewal").unwrap(), "", UID);
        assert_eq!(renewed, None, "no cookie, no admission");
    }

    /// The renewals the cases do not take: a rotation (signed with the new key)
    /// and a lowered timeout, each as the room renews them.
    #[test]
    fn renews_as_the_room_does_on_a_rotation_and_a_lowered_timeout() {
        let case = cases::build("allow-kept").unwrap();
        let header = case.cookie_header().unwrap();
        let mut keys = case.keys().clone();
        keys.insert(
            "key2".to_string(),
            "a second key of at least 32 bytes".to_string(),
        );
        let rotated = Settings {
            active_key: "key2".to_string(),
            ..case.settings().clone()
        };
        let lowered = Settings {
            allow_period_timeout: 600,
            ..case.settings().clone()
        };
        for settings in [rotated, lowered] {
            let visit = Visit {
                now: case.now,
                uid: UID,
                path: PATH,
                path_and_query: PATH,
                cookie_header: Some(header),
                ..Visit::default()
            };
            let plan = waiting_room::plan(&visit, &settings, &keys);
            let percentage = settings.allow_percentage.to_string();
            let room = Room::of(&settings, &percentage);
            let admitted = admit(header, UID, case.now, PATH, room, &keys).unwrap();
            assert!(plan.set_cookie.is_some(), "{settings:?}");
            assert_eq!(admitted.set_cookie, plan.set_cookie);
            assert_eq!(admitted.log_line, plan.log_line);
        }
    }

    /// Only the room's own cookie, last in the header: a longer name holding the
    /// same token is no admission, and a cookie after it is given up on.
    #[test]
    fn reads_only_the_rooms_cookie_last_in_the_header() {
        let case = cases::build("allow-kept").unwrap();
        let token = case.cookie().unwrap();
        for header in [
            format!("my_{COOKIE}{token}"),
            format!("theme=dark; my_{COOKIE}{token}"),
            format!("{COOKIE}{token}; theme=dark"),
        ] {
            assert_eq!(run(&case, &header, UID), None, "{header}");
        }
        let alone = run(&case, &format!("{COOKIE}{token}"), UID).unwrap();
        assert_eq!(alone.origin_cookie, None);
    }

    /// It verifies the token: a forged one, one for another address and every
    /// one-character change of the signature are refused.
    #[test]
    fn refuses_what_the_room_refuses() {
        let case = cases::build("allow-kept").unwrap();
        let header = case.cookie_header().unwrap();
        assert!(run(&case, header, "192.0.2.11").is_none());
        let forged = cases::build("forged-token").unwrap();
        assert!(run(&case, forged.cookie_header().unwrap(), UID).is_none());

        let text = STANDARD.decode(case.cookie().unwrap()).unwrap();
        let sig_at = text.len() - HEX_SIG_LEN;
        for at in sig_at..text.len() {
            let mut tampered = text.clone();
            tampered[at] = if tampered[at] == b'0' { b'1' } else { b'0' };
            let header = format!("theme=dark; {COOKIE}{}", STANDARD.encode(&tampered));
            assert!(run(&case, &header, UID).is_none(), "signature digit {at}");
        }
    }
}
