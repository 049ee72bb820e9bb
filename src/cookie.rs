//! The `Cookie` request header and the `Set-Cookie` attributes, in one place.

use crate::config::{SameSite, SecureWhen, Settings};
use crate::token::COOKIE_NAME;

/// The `Set-Cookie` value that deletes the waiting-room cookie (as the VCL does).
pub const DELETE_COOKIE: &str =
    "waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT";

/// The attributes of the cookie the room sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attributes {
    /// `max-age`, seconds.
    pub max_age: u64,
    /// `HttpOnly`: scripts cannot read the token.
    pub http_only: bool,
    /// `SameSite`.
    pub same_site: SameSite,
    /// `Secure`: sent over TLS only.
    pub secure: bool,
}

impl Attributes {
    /// The attributes for a request over TLS (`tls`) or not. `SameSite=None` is only
    /// valid with `Secure` (browsers drop the cookie otherwise), so without `Secure`
    /// it becomes `Lax`.
    pub fn new(settings: &Settings, tls: bool) -> Attributes {
        let secure = match settings.cookie_secure {
            SecureWhen::Auto => tls,
            SecureWhen::Always => true,
            SecureWhen::Never => false,
        };
        let same_site = match settings.cookie_samesite {
            SameSite::None if !secure => SameSite::Lax,
            other => other,
        };
        Attributes {
            max_age: settings.cookie_lifetime,
            http_only: settings.cookie_httponly,
            same_site,
            secure,
        }
    }
}

/// The `Set-Cookie` value that stores `token` with `attributes`.
pub fn set_cookie(token: &str, attributes: &Attributes) -> String {
    let mut value = format!(
        "{COOKIE_NAME}={token}; path=/; max-age={}",
        attributes.max_age
    );
    if attributes.http_only {
        value.push_str("; HttpOnly");
    }
    value.push_str(match attributes.same_site {
        SameSite::Lax => "; SameSite=Lax",
        SameSite::Strict => "; SameSite=Strict",
        SameSite::None => "; SameSite=None",
    });
    if attributes.secure {
        value.push_str("; Secure");
    }
    value
}

/// The value of the first waiting-room cookie in a `Cookie` header, without the
/// optional double quotes RFC 6265 allows around it. An empty value counts as no
/// cookie. Later duplicates are ignored: browsers send the most specific cookie first.
pub fn find(header: &str) -> Option<&str> {
    let value = pairs(header).find_map(|(name, value)| (name == COOKIE_NAME).then_some(value))?;
    unquoted(value)
}

/// A cookie value without the optional double quotes; `None` when empty.
fn unquoted(value: &str) -> Option<&str> {
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    (!value.is_empty()).then_some(value)
}

/// Whether the header holds a waiting-room cookie at all (even an empty one).
pub fn has_room_cookie(header: &str) -> bool {
    header.split(';').any(|part| name_of(part) == COOKIE_NAME)
}

/// The `Cookie` header with every waiting-room cookie removed and the others left
/// exactly as sent; `None` when nothing else remains.
pub fn without_room_cookie(header: &str) -> Option<String> {
    let mut kept = String::with_capacity(header.len());
    for part in header.split(';').map(str::trim) {
        if !part.is_empty() && name_of(part) != COOKIE_NAME {
            if !kept.is_empty() {
                kept.push_str("; ");
            }
            kept.push_str(part);
        }
    }
    (!kept.is_empty()).then_some(kept)
}

/// A `Cookie` header read once: the room's cookie in it and the cookies the origin
/// gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The room's cookie value, as [`find`] reads it.
    pub room_cookie: Option<&'a str>,
    /// `None` when the header holds no room cookie (see [`has_room_cookie`]);
    /// otherwise the header without it, as [`without_room_cookie`] writes it.
    pub without_room_cookie: Option<Option<String>>,
}

/// Reads `header` in one pass: what [`find`], [`has_room_cookie`] and
/// [`without_room_cookie`] say of it, with the kept cookies only copied when there
/// is a room cookie to remove.
pub fn split(header: &str) -> Split<'_> {
    let mut room_cookie = None;
    let mut first_pair_seen = false;
    let mut kept: Option<String> = None;
    for part in header.split(';') {
        let (name, value) = match part.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value)),
            None => (part.trim(), None),
        };
        if name == COOKIE_NAME {
            if kept.is_none() {
                // The first room cookie: copy the cookies before it.
                let before = &header[..part.as_ptr() as usize - header.as_ptr() as usize];
                kept = Some(String::with_capacity(header.len()));
                for earlier in before.split(';') {
                    push_kept(&mut kept, earlier.trim());
                }
            }
            if let Some(value) = value.filter(|_| !first_pair_seen) {
                first_pair_seen = true;
                room_cookie = unquoted(value.trim());
            }
        } else if kept.is_some() {
            push_kept(&mut kept, part.trim());
        }
    }
    Split {
        room_cookie,
        without_room_cookie: kept.map(|kept| (!kept.is_empty()).then_some(kept)),
    }
}

/// Appends a kept cookie (`part`, trimmed) to the header being written.
fn push_kept(kept: &mut Option<String>, part: &str) {
    if let (Some(kept), false) = (kept, part.is_empty()) {
        if !kept.is_empty() {
            kept.push_str("; ");
        }
        kept.push_str(part);
    }
}

fn pairs(header: &str) -> impl Iterator<Item = (&str, &str)> {
    header.split(';').filter_map(|part| {
        let (name, value) = part.split_once('=')?;
        Some((name.trim(), value.trim()))
    })
}

fn name_of(part: &str) -> &str {
    part.split_once('=').map_or(part, |(name, _)| name).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_room_cookie_among_others() {
        assert_eq!(find("a=1; waiting_room=abc=; b=2"), Some("abc="));
        assert_eq!(find("waiting_room=x"), Some("x"));
        assert_eq!(find("a=1;waiting_room=y"), Some("y"));
        assert_eq!(find("a=1; b=2"), None);
        assert_eq!(find("xwaiting_room=1; waiting_roomx=2"), None);
        assert_eq!(find(""), None);
    }

    #[test]
    fn empty_and_quoted_values() {
        assert_eq!(find("waiting_room="), None);
        assert_eq!(find("waiting_room=; a=1"), None);
        assert_eq!(find("waiting_room=\"\""), None);
        assert_eq!(find("waiting_room=\"abc=\""), Some("abc="));
        assert_eq!(find("waiting_room=\"abc"), Some("\"abc"));
        assert_eq!(find("waiting_room"), None);
    }

    #[test]
    fn long_and_odd_headers_never_panic() {
        let long = format!("{}; waiting_room=x", "a=b; ".repeat(20_000));
        assert_eq!(find(&long), Some("x"));
        assert_eq!(
            without_room_cookie(&long).unwrap().matches("a=b").count(),
            20_000
        );
        for odd in [
            ";;;",
            "=",
            "==;=",
            "waiting_room==",
            "\u{fffd}=\u{fffd}",
            " ; ; ",
        ] {
            let _ = find(odd);
            let _ = without_room_cookie(odd);
        }
        assert_eq!(find("waiting_room=="), Some("="));
    }

    #[test]
    fn first_room_cookie_wins() {
        assert_eq!(
            find("waiting_room=first; waiting_room=second"),
            Some("first")
        );
    }

    #[test]
    fn strips_every_room_cookie_and_keeps_the_rest_intact() {
        assert_eq!(
            without_room_cookie("a=1; waiting_room=abc; b=x=y; waiting_room=d").as_deref(),
            Some("a=1; b=x=y")
        );
        assert_eq!(without_room_cookie("waiting_room=abc"), None);
        assert_eq!(without_room_cookie(" ; waiting_room=abc;"), None);
        assert_eq!(without_room_cookie("a=1").as_deref(), Some("a=1"));
        assert_eq!(
            without_room_cookie("waiting_roomx=1").as_deref(),
            Some("waiting_roomx=1")
        );
    }

    #[test]
    fn strips_as_the_join_of_the_kept_parts() {
        for header in [
            "a=1; waiting_room=abc; b=x=y; waiting_room=d",
            " a ;;b; ; waiting_room ; c=; =d",
            ";;;",
            "",
            "waiting_room",
            "a=1;waiting_room=2;b=3",
        ] {
            let kept: Vec<&str> = header
                .split(';')
                .map(str::trim)
                .filter(|part| !part.is_empty() && name_of(part) != COOKIE_NAME)
                .collect();
            let want = (!kept.is_empty()).then(|| kept.join("; "));
            assert_eq!(without_room_cookie(header), want, "{header:?}");
        }
    }

    #[test]
    fn split_reads_as_find_has_room_cookie_and_without_room_cookie() {
        let mut headers: Vec<String> = [
            "a=1; waiting_room=abc; b=x=y; waiting_room=d",
            " a ;;b; ; waiting_room ; c=; =d",
            "waiting_room; waiting_room=x; a=1",
            "waiting_room=; waiting_room=x",
            "waiting_room=\"\"; b",
            "waiting_room=\"q\" ; b=2 ;",
            " waiting_room = v ;a",
            "theme=dark; waiting_room=ZGVj",
            "xwaiting_room=1; waiting_roomx=2",
            "a=1; b=2",
            ";;;",
            "=",
            "==;=",
            "",
            " ; ; ",
            "\u{fffd}=\u{fffd}; waiting_room=\u{fffd}",
        ]
        .map(String::from)
        .to_vec();
        // Every arrangement of a few parts.
        let parts = [
            "a=1",
            "waiting_room=x",
            " waiting_room",
            "",
            " b = 2 ",
            "waiting_room=\"\"",
        ];
        for i in 0..parts.len() {
            for j in 0..parts.len() {
                for k in 0..parts.len() {
                    headers.push(format!("{};{}; {}", parts[i], parts[j], parts[k]));
                }
            }
        }
        for header in &headers {
            let split = split(header);
            assert_eq!(split.room_cookie, find(header), "{header:?}");
            assert_eq!(
                split.without_room_cookie,
                has_room_cookie(header).then(|| without_room_cookie(header)),
                "{header:?}"
            );
        }
    }

    #[test]
    fn detects_the_room_cookie_even_empty() {
        assert!(has_room_cookie("a=1; waiting_room="));
        assert!(has_room_cookie("waiting_room"));
        assert!(!has_room_cookie("a=1; waiting_roomx=2"));
        assert!(!has_room_cookie(""));
    }

    fn attributes(pairs: &[(&str, &str)], tls: bool) -> Attributes {
        let map: std::collections::HashMap<&str, &str> = pairs.iter().copied().collect();
        let settings = Settings::from_lookup(|k| map.get(k).map(|v| v.to_string()));
        Attributes::new(&settings, tls)
    }

    #[test]
    fn default_cookie_is_httponly_lax_and_secure_over_tls() {
        assert_eq!(
            set_cookie("T0s=", &attributes(&[], false)),
            "waiting_room=T0s=; path=/; max-age=7200; HttpOnly; SameSite=Lax"
        );
        assert_eq!(
            set_cookie("T0s=", &attributes(&[("cookie_lifetime", "60")], true)),
            "waiting_room=T0s=; path=/; max-age=60; HttpOnly; SameSite=Lax; Secure"
        );
    }

    #[test]
    fn cookie_attributes_are_configurable() {
        let vcl_like = [
            ("cookie_httponly", "false"),
            ("cookie_samesite", "strict"),
            ("cookie_secure", "never"),
        ];
        assert_eq!(
            set_cookie("v", &attributes(&vcl_like, true)),
            "waiting_room=v; path=/; max-age=7200; SameSite=Strict"
        );
        let embedded = [("cookie_samesite", "none"), ("cookie_secure", "always")];
        assert_eq!(
            set_cookie("v", &attributes(&embedded, false)),
            "waiting_room=v; path=/; max-age=7200; HttpOnly; SameSite=None; Secure"
        );
    }

    #[test]
    fn samesite_none_without_secure_becomes_lax() {
        let a = attributes(&[("cookie_samesite", "none")], false);
        assert_eq!((a.same_site, a.secure), (SameSite::Lax, false));
        let a = attributes(&[("cookie_samesite", "none")], true);
        assert_eq!((a.same_site, a.secure), (SameSite::None, true));
    }
}
