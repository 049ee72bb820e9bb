//! The `Cookie` request header and the `Set-Cookie` attributes, in one place.

use crate::config::{SameSite, SecureWhen, Settings};
use crate::token::COOKIE_NAME;

/// The `Set-Cookie` value that deletes the waiting-room cookie (as the VCL does).
pub const DELETE_COOKIE: &str =
    "waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT";

/// The attributes of the cookie the room sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// `max-age`, seconds.
    pub(crate) max_age: u64,
    /// `HttpOnly`: scripts cannot read the token.
    pub(crate) http_only: bool,
    /// `SameSite`.
    pub(crate) same_site: SameSite,
    /// `Secure`: sent over TLS only.
    pub(crate) secure: bool,
}

impl Attributes {
    /// The attributes for a request over TLS (`tls`) or not. `SameSite=None` is only
    /// valid with `Secure` (browsers drop the cookie otherwise), so without `Secure`
    /// it becomes `Lax`.
    pub(crate) fn new(settings: &Settings, tls: bool) -> Attributes {
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
pub(crate) fn set_cookie(token: &str, attributes: &Attributes) -> String {
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
    let kept: Vec<&str> = header
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty() && name_of(part) != COOKIE_NAME)
        .collect();
    (!kept.is_empty()).then(|| kept.join("; "))
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
