//! Times as operators write them: Unix seconds (or milliseconds), or an RFC 3339
//! date-time such as `2026-05-01T09:00:00Z` or `2026-05-01T11:00:00+02:00`, read
//! with the `time` crate. The settings that hold a time (`controller_heartbeat`,
//! `fifo_cutoff`, `queue_opens_at`) and `wrctl`'s time options read them here.
//!
//! A number is read first, as before, so the controller's writes cost no more
//! than they did. Anything else that is not RFC 3339, and any time before 1970,
//! reads as `None`: the caller's documented outcome for an unreadable value.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Unix seconds from whole Unix seconds or an RFC 3339 date-time (a fraction of
/// a second is dropped), surrounding spaces ignored; `None` for anything else or
/// a time before 1970.
pub fn parse_seconds(raw: &str) -> Option<u64> {
    let text = raw.trim();
    match text.parse() {
        Ok(secs) => Some(secs),
        Err(_) => u64::try_from(rfc3339(text)?.unix_timestamp()).ok(),
    }
}

/// Unix milliseconds from whole Unix milliseconds or an RFC 3339 date-time (to
/// the millisecond; finer digits are dropped), surrounding spaces ignored;
/// `None` for anything else or a time before 1970.
pub fn parse_millis(raw: &str) -> Option<u64> {
    let text = raw.trim();
    match text.parse() {
        Ok(ms) => Some(ms),
        Err(_) => {
            let nanos = rfc3339(text)?.unix_timestamp_nanos();
            u64::try_from(nanos.div_euclid(1_000_000)).ok()
        }
    }
}

/// An RFC 3339 date-time: `T` (or a space) between date and time, `Z` or a
/// `±hh:mm` offset.
fn rfc3339(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_read_as_before() {
        assert_eq!(parse_seconds("1700000000"), Some(1_700_000_000));
        assert_eq!(parse_seconds(" 0 "), Some(0));
        assert_eq!(parse_seconds("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_millis("1700000000123"), Some(1_700_000_000_123));
    }

    #[test]
    fn rfc3339_in_utc() {
        assert_eq!(parse_seconds("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(parse_seconds("2023-11-14t22:13:20z"), Some(1_700_000_000));
        // RFC 3339 lets a space stand for the `T`.
        assert_eq!(parse_seconds("2023-11-14 22:13:20Z"), Some(1_700_000_000));
        assert_eq!(parse_seconds(" 1970-01-01T00:00:00Z\n"), Some(0));
        assert_eq!(parse_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(
            parse_millis("2023-11-14T22:13:20.123Z"),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_millis("2023-11-14T22:13:20Z"),
            Some(1_700_000_000_000)
        );
    }

    #[test]
    fn rfc3339_with_an_offset() {
        assert_eq!(
            parse_seconds("2023-11-15T00:13:20+02:00"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_seconds("2023-11-14T17:13:20-05:00"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_millis("2023-11-14T23:43:20.5+01:30"),
            Some(1_700_000_000_500)
        );
    }

    #[test]
    fn fractions_below_the_unit_are_dropped() {
        assert_eq!(
            parse_seconds("2023-11-14T22:13:20.999Z"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_millis("2023-11-14T22:13:20.1239Z"),
            Some(1_700_000_000_123)
        );
    }

    #[test]
    fn garbage_is_none() {
        for raw in [
            "",
            "soon",
            "-1",
            "1.5",
            "1700000000s",
            "2023-11-14",
            "2023-11-14 22:13:20",
            "2023-11-14T22:13:20",
            "2023-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2023-11-14T25:00:00Z",
            "Tue, 14 Nov 2023 22:13:20 GMT",
        ] {
            assert_eq!(parse_seconds(raw), None, "{raw:?}");
            assert_eq!(parse_millis(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn out_of_range_is_none() {
        // Before 1970, even by a fraction of a millisecond.
        assert_eq!(parse_seconds("1969-12-31T23:59:59Z"), None);
        assert_eq!(parse_millis("1969-12-31T23:59:59.9995Z"), None);
        assert_eq!(parse_seconds("1970-01-01T00:30:00+01:00"), None);
        // Beyond 64 bits as a number; beyond four digits of year as a date.
        assert_eq!(parse_seconds("18446744073709551616"), None);
        assert_eq!(parse_seconds("10000-01-01T00:00:00Z"), None);
        // The last second RFC 3339 can write.
        assert_eq!(parse_seconds("9999-12-31T23:59:59Z"), Some(253_402_300_799));
    }
}
