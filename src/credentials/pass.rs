//! Signed passes: staff, partners and monitoring go through a room without
//! waiting. `wrctl pass mint` makes one; nothing is stored.
//!
//! ```text
//! text  = "pass=1&room=" + room + "&iat=" + iat + "&exp=" + exp + "&kid=" + kid
//! sig   = lowercase_hex(HMAC-SHA256(room's key, text))
//! pass  = base64url_without_padding(text + "&sig=" + sig)
//! ```
//!
//! `room` is the room's name (empty for the service room) and the room's key is
//! the one its tokens use ([`crate::credentials::keys::SigningKey::for_room`]), so a pass
//! admits to its own room only. A pass is refused after `exp`, when it was
//! issued (`iat`) before the room's `passes_not_before`, and when its key is no
//! longer in the key store.
//!
//! It is presented in the `Waiting-Room-Pass` header (probes), in the room's pass
//! cookie ([`cookie_names::pass`]: `waiting_pass`, or `waiting_pass_<room>`), or once in a link's
//! `waiting_pass` query parameter, which sets the cookie and redirects to the
//! same URL without it.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;

use crate::credentials::cookie_names;
use crate::credentials::keys::{KeyStore, SigningKey, Unread};
use crate::credentials::token;
use crate::settings::room::Room;

/// The request header a probe presents its pass in.
pub const HEADER: &str = "waiting-room-pass";
/// The query parameter of a pass link: the name of the service room's pass cookie.
pub const QUERY_PARAMETER: &str = cookie_names::PASS;
/// Longest pass accepted, in bytes of its text form.
pub const MAX_LEN: usize = 600;

/// What a pass says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassClaims {
    /// The room's name; empty for the service room.
    pub room: String,
    /// Issued at, Unix seconds.
    pub iat: u64,
    /// Valid until, Unix seconds.
    pub exp: u64,
    /// Id of the signing key.
    pub kid: String,
}

impl PassClaims {
    fn text(&self) -> String {
        format!(
            "pass=1&room={}&iat={}&exp={}&kid={}",
            self.room, self.iat, self.exp, self.kid
        )
    }

    /// The pass, signed with `key` (the room's key).
    pub fn mint(&self, key: &SigningKey) -> String {
        let text = self.text();
        let mut mac = key.mac();
        mac.update(text.as_bytes());
        let sig = hex::encode(mac.finalize().into_bytes());
        URL_SAFE_NO_PAD.encode(format!("{text}&sig={sig}"))
    }
}

/// Why a pass was refused (logged as `pass_refused=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassRefusal {
    /// Not a pass at all.
    Malformed,
    /// A pass of another room.
    OtherRoom,
    /// Its key is not in the store.
    UnknownKey,
    /// Its key's read failed: the request waits for a read that works.
    UnreadableKey,
    /// Its key was not read: the request's reads are kept for its token and its
    /// page ([`KeyStore::spare`]).
    NoReadsLeft,
    /// The signature does not match.
    BadSignature,
    /// Past its `exp`.
    Expired,
    /// Issued before `passes_not_before`.
    Revoked,
}

impl fmt::Display for PassRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PassRefusal::Malformed => "malformed",
            PassRefusal::OtherRoom => "other-room",
            PassRefusal::UnknownKey => "unknown-key",
            PassRefusal::UnreadableKey => "unreadable-key",
            PassRefusal::NoReadsLeft => "no-reads-left",
            PassRefusal::BadSignature => "bad-signature",
            PassRefusal::Expired => "expired",
            PassRefusal::Revoked => "revoked",
        })
    }
}

/// A pass checked for `room` at `now`: its claims and the short id the log shows
/// (the signature's first 8 hex digits), or why it is refused. `keys` are the
/// room's keys.
pub fn check(
    value: &str,
    room: &Room,
    keys: &impl KeyStore,
    now: u64,
    not_before: Option<u64>,
) -> Result<(PassClaims, String), PassRefusal> {
    let (claims, text, sig) = decode(value).ok_or(PassRefusal::Malformed)?;
    let own = room.name().map_or("", |name| name.as_str());
    if claims.room != own {
        return Err(PassRefusal::OtherRoom);
    }
    let key = match keys.spare(&claims.kid) {
        Ok(Some(key)) => key,
        Ok(None) => return Err(PassRefusal::UnknownKey),
        Err(Unread::Failed) => return Err(PassRefusal::UnreadableKey),
        Err(Unread::NoReadsLeft) => return Err(PassRefusal::NoReadsLeft),
    };
    let mut mac = key.mac();
    mac.update(text.as_bytes());
    mac.verify_slice(&sig)
        .map_err(|_| PassRefusal::BadSignature)?;
    if now > claims.exp {
        return Err(PassRefusal::Expired);
    }
    if not_before.is_some_and(|nb| claims.iat < nb) {
        return Err(PassRefusal::Revoked);
    }
    let id = hex::encode(&sig[..4]);
    Ok((claims, id))
}

/// The claims, the signed text and the signature of a pass in its canonical form.
fn decode(value: &str) -> Option<(PassClaims, String, [u8; 32])> {
    if value.len() > MAX_LEN {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(value.trim()).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (signed, sig_hex) = text.rsplit_once("&sig=")?;
    let sig = token::parse_mac_hex(sig_hex)?;
    let rest = signed.strip_prefix("pass=1&room=")?;
    let (room, rest) = rest.split_once("&iat=")?;
    let (iat, rest) = rest.split_once("&exp=")?;
    let (exp, kid) = rest.split_once("&kid=")?;
    let claims = PassClaims {
        room: room.to_string(),
        iat: token::parse_decimal(iat)?,
        exp: token::parse_decimal(exp)?,
        kid: kid.to_string(),
    };
    // Only the canonical text: what `mint` writes for these claims.
    (token::is_valid_kid(kid) && claims.text() == signed).then(|| (claims, signed.to_string(), sig))
}

/// For a link carrying a pass (`…?waiting_pass=…`): the pass, and where to send
/// the visitor once its cookie is set, the same path and query without it (never
/// another host: a path starting `//` is sent to `/`).
pub fn from_link(path_and_query: &str) -> Option<(String, String)> {
    let (path, query) = path_and_query.split_once('?')?;
    let (pass, kept) = split_query(query)?;
    let path = format!("/{}", path.trim_start_matches('/'));
    let location = match kept {
        None => path,
        Some(kept) => format!("{path}?{kept}"),
    };
    Some((pass.to_string(), location))
}

/// A query's first `waiting_pass` value and the query without any (`None` when
/// nothing is left); `None` when it holds no pass. The origin never sees a pass.
pub fn split_query(query: &str) -> Option<(&str, Option<String>)> {
    let prefix = format!("{QUERY_PARAMETER}=");
    let mut pass = None;
    let mut kept = Vec::new();
    for part in query.split('&') {
        match part.strip_prefix(prefix.as_str()) {
            Some(value) => {
                pass.get_or_insert(value);
            }
            None => kept.push(part),
        }
    }
    Some((pass?, (!kept.is_empty()).then(|| kept.join("&"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::keys::RoomKeys;
    use crate::settings::room::RoomName;
    use std::collections::HashMap;

    const SECRET: &str = "a long random secret of 32 bytes or more";

    fn store() -> HashMap<String, String> {
        HashMap::from([("key1".to_string(), SECRET.to_string())])
    }

    fn drops() -> Room {
        Room::Named(RoomName::new("drops").unwrap())
    }

    fn mint_for(room: &Room, iat: u64, exp: u64) -> String {
        let store = store();
        let keys = RoomKeys::new(&store, room.name());
        let claims = PassClaims {
            room: room.name().map_or(String::new(), |n| n.to_string()),
            iat,
            exp,
            kid: "key1".into(),
        };
        claims.mint(&keys.key("key1").unwrap().unwrap())
    }

    fn check_in(
        room: &Room,
        pass: &str,
        now: u64,
        not_before: Option<u64>,
    ) -> Result<String, PassRefusal> {
        let store = store();
        let keys = RoomKeys::new(&store, room.name());
        check(pass, room, &keys, now, not_before).map(|(_, id)| id)
    }

    #[test]
    fn a_pass_admits_to_its_room_until_it_expires() {
        let pass = mint_for(&drops(), 100, 200);
        assert!(!pass.contains(['+', '/', '=']), "URL-safe: {pass}");
        let id = check_in(&drops(), &pass, 150, None).unwrap();
        assert_eq!(id.len(), 8);
        assert_eq!(check_in(&drops(), &pass, 200, None), Ok(id));
        assert_eq!(
            check_in(&drops(), &pass, 201, None),
            Err(PassRefusal::Expired)
        );
        assert_eq!(
            check_in(&Room::Service, &pass, 150, None),
            Err(PassRefusal::OtherRoom)
        );
        let other = Room::Named(RoomName::new("vip").unwrap());
        assert_eq!(
            check_in(&other, &pass, 150, None),
            Err(PassRefusal::OtherRoom)
        );
        let service = mint_for(&Room::Service, 100, 200);
        assert!(check_in(&Room::Service, &service, 150, None).is_ok());
        assert_eq!(
            check_in(&drops(), &service, 150, None),
            Err(PassRefusal::OtherRoom)
        );
    }

    #[test]
    fn passes_issued_before_not_before_are_revoked() {
        let pass = mint_for(&drops(), 100, 200);
        assert!(check_in(&drops(), &pass, 150, Some(100)).is_ok());
        assert_eq!(
            check_in(&drops(), &pass, 150, Some(101)),
            Err(PassRefusal::Revoked)
        );
    }

    #[test]
    fn forged_and_odd_passes_are_refused_without_panic() {
        let pass = mint_for(&drops(), 100, 200);
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(&pass).unwrap()).unwrap();
        // Another room's name in a pass signed for drops: the signature no longer holds.
        let renamed = URL_SAFE_NO_PAD.encode(text.replace("room=drops", "room=vips_"));
        let vips = Room::Named(RoomName::new("vips_").unwrap());
        assert_eq!(
            check_in(&vips, &renamed, 150, None),
            Err(PassRefusal::BadSignature)
        );
        let later = URL_SAFE_NO_PAD.encode(text.replace("exp=200", "exp=900"));
        assert_eq!(
            check_in(&drops(), &later, 150, None),
            Err(PassRefusal::BadSignature)
        );
        let unknown = URL_SAFE_NO_PAD.encode(text.replace("kid=key1", "kid=key9"));
        assert_eq!(
            check_in(&drops(), &unknown, 150, None),
            Err(PassRefusal::UnknownKey)
        );
        for odd in [
            String::new(),
            "x".repeat(MAX_LEN + 1),
            pass[..pass.len() - 2].to_string(),
            URL_SAFE_NO_PAD.encode(text.replace("iat=100", "iat=0100")),
            URL_SAFE_NO_PAD.encode(text.replace("pass=1", "pass=2")),
            URL_SAFE_NO_PAD.encode(format!("{text}&x=1")),
            URL_SAFE_NO_PAD.encode(text.to_uppercase()),
            "%%%".into(),
            URL_SAFE_NO_PAD.encode([0xff, 0xfe]),
        ] {
            assert_eq!(
                check_in(&drops(), &odd, 150, None),
                Err(PassRefusal::Malformed),
                "{odd:?}"
            );
        }
    }

    #[test]
    fn a_link_pass_is_taken_out_of_the_query() {
        assert_eq!(from_link("/drops/1"), None);
        assert_eq!(from_link("/drops/1?a=1"), None);
        assert_eq!(
            from_link("/drops/1?waiting_pass=P"),
            Some(("P".into(), "/drops/1".into()))
        );
        assert_eq!(
            from_link("/drops/1?a=1&waiting_pass=P&b=2&waiting_pass=Q"),
            Some(("P".into(), "/drops/1?a=1&b=2".into()))
        );
        assert_eq!(
            split_query("a=1&waiting_pass=P"),
            Some(("P", Some("a=1".into())))
        );
        assert_eq!(split_query("waiting_pass=P"), Some(("P", None)));
        assert_eq!(split_query("a=1"), None);
        assert_eq!(
            from_link("//evil.example/x?waiting_pass=P"),
            Some(("P".into(), "/evil.example/x".into()))
        );
    }
}
