//! The `Cookie` request header and the `Set-Cookie` attributes, in one place.

use crate::token::COOKIE_NAME;

/// The `Set-Cookie` value that deletes the waiting-room cookie (as the VCL does).
pub const DELETE_COOKIE: &str =
    "waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT";

/// The `Set-Cookie` value that stores `token` for `lifetime` seconds.
pub fn set_cookie(token: &str, lifetime: u64) -> String {
    format!("{COOKIE_NAME}={token}; path=/; max-age={lifetime}")
}

/// The value of the first waiting-room cookie in a `Cookie` header.
pub fn find(header: &str) -> Option<&str> {
    pairs(header).find_map(|(name, value)| (name == COOKIE_NAME).then_some(value))
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
    fn set_cookie_has_the_vcl_attributes() {
        assert_eq!(
            set_cookie("T0s=", 7200),
            "waiting_room=T0s=; path=/; max-age=7200"
        );
    }
}
