//! The `Refresh` header as a browser reads it: `<seconds>` or
//! `<seconds>; url=<url>` (also `,` for `;`, `URL` in any case, the url in quotes).

use std::time::Duration;

/// A parsed `Refresh` header.
#[derive(Debug, Clone, PartialEq)]
pub struct Refresh {
    /// How long to wait before coming back.
    pub after: Duration,
    /// Where to come back to (as written: relative or absolute); `None` for the
    /// same address.
    pub url: Option<String>,
}

/// Parses a `Refresh` header value; `None` when it does not start with a number of
/// seconds (a browser ignores such a header).
pub fn parse(header: &str) -> Option<Refresh> {
    let header = header.trim();
    let end = header.find([';', ',']).unwrap_or(header.len());
    let (seconds, rest) = header.split_at(end);
    let seconds = seconds.trim();
    // Digits, optionally with a fraction (browsers read the integer part).
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let after = Duration::from_secs(whole.parse().unwrap_or(u64::MAX));
    let rest = rest.get(1..).unwrap_or("").trim();
    let url = match rest.get(..3) {
        Some(name) if name.eq_ignore_ascii_case("url") => {
            let value = rest[3..].trim_start();
            match value.strip_prefix('=') {
                Some(value) => value.trim(),
                None => rest,
            }
        }
        _ => rest,
    };
    let url = unquote(url);
    Some(Refresh {
        after,
        url: (!url.is_empty()).then(|| url.to_string()),
    })
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote) {
            return inner.strip_suffix(quote).unwrap_or(inner);
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refresh(secs: u64, url: Option<&str>) -> Option<Refresh> {
        Some(Refresh {
            after: Duration::from_secs(secs),
            url: url.map(String::from),
        })
    }

    #[test]
    fn the_rooms_header_parses() {
        assert_eq!(parse("12; url=/events"), refresh(12, Some("/events")));
        assert_eq!(
            parse("30; url=/events/a?b=1"),
            refresh(30, Some("/events/a?b=1"))
        );
        assert_eq!(parse("0; url=/events"), refresh(0, Some("/events")));
    }

    #[test]
    fn the_forms_browsers_accept_parse() {
        assert_eq!(parse("5"), refresh(5, None));
        assert_eq!(parse(" 5 "), refresh(5, None));
        assert_eq!(parse("5;url=/x"), refresh(5, Some("/x")));
        assert_eq!(parse("5; URL = /x"), refresh(5, Some("/x")));
        assert_eq!(parse("5, url=/x"), refresh(5, Some("/x")));
        assert_eq!(parse("5; url='/x?a=b'"), refresh(5, Some("/x?a=b")));
        assert_eq!(parse("5; url=\"/x\""), refresh(5, Some("/x")));
        assert_eq!(
            parse("5; http://127.0.0.1:7676/x"),
            refresh(5, Some("http://127.0.0.1:7676/x"))
        );
        assert_eq!(parse("2.75; url=/x"), refresh(2, Some("/x")));
        assert_eq!(parse("5;"), refresh(5, None));
        assert_eq!(parse("5; url="), refresh(5, None));
        // A url that merely starts with the letters u, r, l.
        assert_eq!(parse("5; urlish"), refresh(5, Some("urlish")));
    }

    #[test]
    fn what_is_not_a_refresh_is_none() {
        for bad in [
            "",
            "soon",
            "-1; url=/x",
            "; url=/x",
            "1e3",
            "5x; url=/x",
            ".5",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_huge_delay_saturates() {
        assert_eq!(
            parse("99999999999999999999999").unwrap().after,
            Duration::from_secs(u64::MAX)
        );
    }
}
