//! The `Cookie` request header and the `Set-Cookie` attributes, in one place.

use crate::token::COOKIE_NAME;

/// The `Set-Cookie` value that deletes the waiting-room cookie (as the VCL does).
pub const DELETE_COOKIE: &str =
    "waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT";

/// The `Set-Cookie` value that stores `token` for `lifetime` seconds.
pub fn set_cookie(token: &str, lifetime: u64) -> String {
    format!("{COOKIE_NAME}={token}; path=/; max-age={lifetime}")
}

/// The value of the first waiting-room cookie in a `Cookie` header, without the
/// optional double quotes RFC 6265 allows around it. An empty value counts as no
/// cookie. Later duplicates are ignored: browsers send the most specific cookie first.
pub fn find(header: &str) -> Option<&str> {
    let value = pairs(header).find_map(|(name, value)| (name == COOKIE_NAME).then_some(value))?;
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

    #[test]
    fn set_cookie_has_the_vcl_attributes() {
        assert_eq!(
            set_cookie("T0s=", 7200),
            "waiting_room=T0s=; path=/; max-age=7200"
        );
    }
}
