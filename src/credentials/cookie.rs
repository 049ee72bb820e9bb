//! The `Cookie` request header and the `Set-Cookie` attributes, in one place.

use crate::credentials::cookie_names;
use crate::settings::config::{SameSite, SecureWhen, Settings};

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

/// The `Set-Cookie` value that deletes the cookie `name` ([`DELETE_COOKIE`] for
/// the service room's).
pub fn delete_cookie(name: &str) -> String {
    format!("{name}=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT")
}

/// The `Set-Cookie` value that stores `token` in the cookie `name` with `attributes`.
pub(crate) fn set_cookie(name: &str, token: &str, attributes: &Attributes) -> String {
    let mut value = format!("{name}={token}; path=/; max-age={}", attributes.max_age);
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

/// The value of the first cookie `name` (a room's) in a `Cookie` header, without
/// the optional double quotes RFC 6265 allows around it. An empty value counts as
/// no cookie. Later duplicates are ignored: browsers send the most specific cookie first.
pub fn find<'h>(header: &'h str, name: &str) -> Option<&'h str> {
    let value = pairs(header).find_map(|(n, value)| (n == name).then_some(value))?;
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

/// Whether `name` is a room's cookie: the service room's or its pass cookie, or
/// one of `room_cookies` (the named rooms').
fn is_room_cookie(name: &str, room_cookies: &[String]) -> bool {
    name == cookie_names::TOKEN
        || name == cookie_names::PASS
        || name == cookie_names::TOLL
        || room_cookies.iter().any(|c| c == name)
}

/// Whether the header holds a room's cookie at all (even an empty one).
pub fn has_room_cookie(header: &str, room_cookies: &[String]) -> bool {
    header
        .split(';')
        .any(|part| is_room_cookie(name_of(part), room_cookies))
}

/// The `Cookie` header with every room's cookie removed and the others left
/// exactly as sent; `None` when nothing else remains.
pub fn without_room_cookie(header: &str, room_cookies: &[String]) -> Option<String> {
    let kept: Vec<&str> = header
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty() && !is_room_cookie(name_of(part), room_cookies))
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
        assert_eq!(
            find("a=1; waiting_room=abc=; b=2", cookie_names::TOKEN),
            Some("abc=")
        );
        assert_eq!(find("waiting_room=x", cookie_names::TOKEN), Some("x"));
        assert_eq!(find("a=1;waiting_room=y", cookie_names::TOKEN), Some("y"));
        assert_eq!(find("a=1; b=2", cookie_names::TOKEN), None);
        assert_eq!(
            find("xwaiting_room=1; waiting_roomx=2", cookie_names::TOKEN),
            None
        );
        assert_eq!(find("", cookie_names::TOKEN), None);
    }

    #[test]
    fn empty_and_quoted_values() {
        assert_eq!(find("waiting_room=", cookie_names::TOKEN), None);
        assert_eq!(find("waiting_room=; a=1", cookie_names::TOKEN), None);
        assert_eq!(find("waiting_room=\"\"", cookie_names::TOKEN), None);
        assert_eq!(
            find("waiting_room=\"abc=\"", cookie_names::TOKEN),
            Some("abc=")
        );
        assert_eq!(
            find("waiting_room=\"abc", cookie_names::TOKEN),
            Some("\"abc")
        );
        assert_eq!(find("waiting_room", cookie_names::TOKEN), None);
    }

    #[test]
    fn long_and_odd_headers_never_panic() {
        let long = format!("{}; waiting_room=x", "a=b; ".repeat(20_000));
        assert_eq!(find(&long, cookie_names::TOKEN), Some("x"));
        assert_eq!(
            without_room_cookie(&long, &[])
                .unwrap()
                .matches("a=b")
                .count(),
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
            let _ = find(odd, cookie_names::TOKEN);
            let _ = without_room_cookie(odd, &[]);
        }
        assert_eq!(find("waiting_room==", cookie_names::TOKEN), Some("="));
    }

    #[test]
    fn first_room_cookie_wins() {
        assert_eq!(
            find(
                "waiting_room=first; waiting_room=second",
                cookie_names::TOKEN
            ),
            Some("first")
        );
    }

    #[test]
    fn strips_every_room_cookie_and_keeps_the_rest_intact() {
        assert_eq!(
            without_room_cookie("a=1; waiting_room=abc; b=x=y; waiting_room=d", &[]).as_deref(),
            Some("a=1; b=x=y")
        );
        assert_eq!(without_room_cookie("waiting_room=abc", &[]), None);
        assert_eq!(without_room_cookie(" ; waiting_room=abc;", &[]), None);
        assert_eq!(without_room_cookie("a=1", &[]).as_deref(), Some("a=1"));
        assert_eq!(
            without_room_cookie("waiting_roomx=1", &[]).as_deref(),
            Some("waiting_roomx=1")
        );
    }

    #[test]
    fn detects_the_room_cookie_even_empty() {
        assert!(has_room_cookie("a=1; waiting_room=", &[]));
        assert!(has_room_cookie("waiting_room", &[]));
        assert!(!has_room_cookie("a=1; waiting_roomx=2", &[]));
        assert!(!has_room_cookie("", &[]));
    }

    #[test]
    fn each_room_has_its_cookie_and_none_reaches_the_origin() {
        let rooms = vec!["waiting_room_drops".to_string()];
        let header = "a=1; waiting_room_drops=d; waiting_room=s; waiting_room_other=o";
        assert_eq!(find(header, "waiting_room_drops"), Some("d"));
        assert_eq!(find(header, cookie_names::TOKEN), Some("s"));
        assert!(has_room_cookie("waiting_room_drops=", &rooms));
        assert!(!has_room_cookie("waiting_room_drops=", &[]));
        // Only the service's rooms' cookies are removed.
        assert_eq!(
            without_room_cookie(header, &rooms).as_deref(),
            Some("a=1; waiting_room_other=o")
        );
        assert_eq!(delete_cookie(cookie_names::TOKEN), DELETE_COOKIE);
        assert_eq!(
            set_cookie("waiting_room_drops", "v", &attributes(&[], false)),
            "waiting_room_drops=v; path=/; max-age=7200; HttpOnly; SameSite=Lax"
        );
    }

    fn attributes(pairs: &[(&str, &str)], tls: bool) -> Attributes {
        let map: std::collections::HashMap<&str, &str> = pairs.iter().copied().collect();
        let settings = Settings::from_lookup(|k| map.get(k).map(|v| v.to_string()));
        Attributes::new(&settings, tls)
    }

    #[test]
    fn default_cookie_is_httponly_lax_and_secure_over_tls() {
        assert_eq!(
            set_cookie(cookie_names::TOKEN, "T0s=", &attributes(&[], false)),
            "waiting_room=T0s=; path=/; max-age=7200; HttpOnly; SameSite=Lax"
        );
        assert_eq!(
            set_cookie(
                cookie_names::TOKEN,
                "T0s=",
                &attributes(&[("cookie_lifetime", "60")], true)
            ),
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
            set_cookie(cookie_names::TOKEN, "v", &attributes(&vcl_like, true)),
            "waiting_room=v; path=/; max-age=7200; SameSite=Strict"
        );
        let embedded = [("cookie_samesite", "none"), ("cookie_secure", "always")];
        assert_eq!(
            set_cookie(cookie_names::TOKEN, "v", &attributes(&embedded, false)),
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
