//! The room's cookie as the crowd reads it: the `waiting_room` value in a
//! `Set-Cookie` or `Cookie` header, decoded from standard base64 into its fields
//! (`dec=allow&exp=…&uid=…&kid=…&sig=…`, and `arr=…` for a FIFO place).
//!
//! The crowd never checks a signature (it has no key) and never prints a cookie or a
//! signature: it keeps only what it counts, the decision, the expiry and the visitor.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The room's cookie name.
pub const COOKIE_NAME: &str = "waiting_room";

/// The decision a token carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dec {
    /// An admitted session.
    Allow,
    /// A waiting visitor.
    Wait,
}

/// What the crowd keeps of a decoded token: no key id, no signature.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token {
    /// `dec`.
    pub dec: Dec,
    /// `exp`, Unix seconds.
    pub exp: u64,
    /// `uid`, the visitor's address as the room saw it.
    pub uid: String,
}

impl Token {
    /// What identifies a session: the visitor and the expiry its allow token was
    /// issued with (two tabs admitted in the same second share one).
    pub fn session(&self) -> Option<(String, u64)> {
        (self.dec == Dec::Allow).then(|| (self.uid.clone(), self.exp))
    }
}

/// Decodes a cookie value (optionally in double quotes). `None` for anything that is
/// not standard base64 of `&`-separated `name=value` fields with a known `dec`, a
/// decimal `exp`, a non-empty `uid` and a `sig`: the room's deletion value
/// `deleted`, a foreign cookie, garbage. A field given twice is refused, as the room
/// refuses it.
pub fn decode(value: &str) -> Option<Token> {
    let value = value.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    let bytes = STANDARD.decode(value).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let (mut dec, mut exp, mut uid, mut sig) = (None, None, None, None);
    for field in text.split('&') {
        let (name, value) = field.split_once('=')?;
        let slot = match name {
            "dec" => &mut dec,
            "exp" => &mut exp,
            "uid" => &mut uid,
            "sig" => &mut sig,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return None;
        }
    }
    let dec = match dec? {
        "allow" => Dec::Allow,
        "wait" => Dec::Wait,
        _ => return None,
    };
    let exp = exp?;
    if exp.is_empty() || !exp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let uid = uid.filter(|u| !u.is_empty())?;
    sig.filter(|s| !s.is_empty())?;
    Some(Token {
        dec,
        exp: exp.parse().ok()?,
        uid: uid.to_string(),
    })
}

/// The room's cookie value a `Set-Cookie` header sets, if it names the room's cookie
/// (whatever the value: the deletion's `deleted` too).
pub fn from_set_cookie(header: &str) -> Option<&str> {
    let pair = header.split(';').next()?;
    let (name, value) = pair.split_once('=')?;
    (name.trim() == COOKIE_NAME).then(|| value.trim())
}

/// The room's cookie value in a `Cookie` request header (`a=1; waiting_room=…`).
pub fn from_cookie_header(header: &str) -> Option<&str> {
    header.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name.trim() == COOKIE_NAME).then(|| value.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(fields: &str) -> String {
        STANDARD.encode(fields)
    }

    #[test]
    fn an_allow_token_decodes_to_its_session() {
        let value = encode("dec=allow&exp=1795353610&uid=127.0.1.7&kid=key1&sig=0a1b2c");
        let token = decode(&value).unwrap();
        assert_eq!(
            token,
            Token {
                dec: Dec::Allow,
                exp: 1_795_353_610,
                uid: "127.0.1.7".into()
            }
        );
        assert_eq!(
            token.session(),
            Some(("127.0.1.7".to_string(), 1_795_353_610))
        );
        // Quoted, as RFC 6265 allows.
        assert_eq!(decode(&format!("\"{value}\"")), Some(token));
    }

    #[test]
    fn a_wait_token_is_no_session() {
        let token = decode(&encode(
            "dec=wait&exp=60&uid=127.0.1.7&kid=key1&sig=ff&arr=1000",
        ))
        .unwrap();
        assert_eq!(token.dec, Dec::Wait);
        assert_eq!(token.session(), None);
    }

    #[test]
    fn an_ipv6_prefix_uid_decodes() {
        let token = decode(&encode(
            "dec=allow&exp=9&uid=2001:db8:1:2::/64&kid=key1&sig=aa",
        ))
        .unwrap();
        assert_eq!(token.uid, "2001:db8:1:2::/64");
    }

    #[test]
    fn what_is_not_a_token_decodes_to_nothing() {
        for bad in [
            "deleted".to_string(),
            String::new(),
            "%%%".to_string(),
            encode("dec=allow&exp=9&uid=1.2.3.4&kid=key1"), // no sig
            encode("dec=allow&exp=9&uid=1.2.3.4&kid=key1&sig="),
            encode("dec=deny&exp=9&uid=1.2.3.4&kid=key1&sig=aa"),
            encode("dec=ALLOW&exp=9&uid=1.2.3.4&kid=key1&sig=aa"),
            encode("dec=allow&exp=-9&uid=1.2.3.4&kid=key1&sig=aa"),
            encode("dec=allow&exp=&uid=1.2.3.4&kid=key1&sig=aa"),
            encode("dec=allow&exp=99999999999999999999&uid=1.2.3.4&kid=key1&sig=aa"),
            encode("dec=allow&exp=9&uid=&kid=key1&sig=aa"),
            encode("dec=allow&dec=allow&exp=9&uid=1.2.3.4&kid=key1&sig=aa"),
            encode("dec=allow&exp=9&uid=1.2.3.4&kid=key1&sig=aa&junk"),
            "ZGVjPWFsbG93".to_string() + "!", // not base64
        ] {
            assert_eq!(decode(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_room_cookie_is_found_in_either_header() {
        let set = "waiting_room=ZGVj; path=/; max-age=7200; HttpOnly; SameSite=Lax";
        assert_eq!(from_set_cookie(set), Some("ZGVj"));
        assert_eq!(from_set_cookie("demo_origin=1; path=/"), None);
        assert_eq!(from_set_cookie("waiting_roomx=1"), None);
        assert_eq!(
            from_set_cookie("waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT"),
            Some("deleted")
        );
        // Base64 padding survives: only the first `=` splits.
        assert_eq!(from_set_cookie("waiting_room=YQ==; path=/"), Some("YQ=="));
        assert_eq!(
            from_cookie_header("demo_origin=1; waiting_room=YQ=="),
            Some("YQ==")
        );
        assert_eq!(from_cookie_header("demo_origin=1"), None);
    }
}
