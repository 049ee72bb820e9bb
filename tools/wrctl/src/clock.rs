//! Every date `wrctl` reads or writes, with the `time` crate: the wall clock, UTC
//! times for the controller's lines and for people, and the time options
//! operators give (RFC 3339 or Unix seconds, read by the room's own
//! [`waiting_room::settings::unix_time`], as the room reads its settings).

use time::OffsetDateTime;
use time::format_description::BorrowedFormatItem;
use time::macros::{datetime, format_description};
use waiting_room::pages::view::human_duration;
use waiting_room::settings::unix_time;

/// `2023-11-14T22:13:20Z`: RFC 3339 in UTC, whole seconds.
const RFC3339: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
/// `2023-11-14 22:13:20 UTC`: for people.
const FOR_PEOPLE: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
/// `2023-11-14 22:13:20.123 UTC`: for people, to the millisecond.
const FOR_PEOPLE_MS: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:3] UTC");
/// The last second the formats can write (four-digit years).
const LAST: OffsetDateTime = datetime!(9999-12-31 23:59:59 UTC);

/// The wall clock, Unix seconds (0 before 1970).
pub fn unix_now() -> u64 {
    u64::try_from(OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0)
}

/// `2023-11-14T22:13:20Z` for Unix seconds: the controller's clock text.
pub fn rfc3339(unix: u64) -> String {
    show(unix.saturating_mul(1000), RFC3339)
}

/// `2023-11-14 22:13:20 UTC` for Unix seconds.
pub fn utc(unix: u64) -> String {
    show(unix.saturating_mul(1000), FOR_PEOPLE)
}

/// `2023-11-14 22:13:20.123 UTC` for Unix milliseconds.
pub fn utc_millis(ms: u64) -> String {
    show(ms, FOR_PEOPLE_MS)
}

/// Unix milliseconds `ms` in `format`; past the year 9999, `after` its last second.
fn show(ms: u64, format: &[BorrowedFormatItem<'_>]) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok();
    let text = |t: OffsetDateTime| t.format(format).unwrap_or_default();
    match at {
        Some(t) if t <= LAST => text(t),
        _ => format!("after {}", text(LAST)),
    }
}

/// A time option (clap's value parser): RFC 3339 or Unix seconds.
pub fn seconds_arg(text: &str) -> Result<u64, String> {
    unix_time::parse_seconds(text).ok_or_else(|| {
        format!("{text:?} is neither an RFC 3339 time (2026-05-01T09:00:00Z) nor Unix seconds")
    })
}

/// A time option to the millisecond (clap's value parser): RFC 3339 or Unix
/// milliseconds.
pub fn millis_arg(text: &str) -> Result<u64, String> {
    unix_time::parse_millis(text).ok_or_else(|| {
        format!(
            "{text:?} is neither an RFC 3339 time (2026-05-01T09:00:00.250Z) nor Unix milliseconds"
        )
    })
}

/// `in 5 min`, `12 min ago` or `now`: `t` seen from `now`.
pub fn relative(t: u64, now: u64) -> String {
    match t.cmp(&now) {
        std::cmp::Ordering::Greater => format!("in {}", human_duration(t - now)),
        std::cmp::Ordering::Less => format!("{} ago", human_duration(now - t)),
        std::cmp::Ordering::Equal => "now".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_relative_to_now() {
        assert_eq!(relative(100, 7900), "2 h 10 min ago");
        assert_eq!(relative(100, 400), "5 min ago");
        assert_eq!(relative(400, 100), "in 5 min");
        assert_eq!(relative(5, 5), "now");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(4_102_444_799), "2099-12-31 23:59:59 UTC");
        assert_eq!(utc_millis(1_700_000_000_123), "2023-11-14 22:13:20.123 UTC");
        assert_eq!(utc_millis(5), "1970-01-01 00:00:00.005 UTC");
    }

    #[test]
    fn past_the_year_9999_says_so() {
        assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339(253_402_300_800), "after 9999-12-31T23:59:59Z");
        assert_eq!(utc(u64::MAX), "after 9999-12-31 23:59:59 UTC");
        assert_eq!(utc_millis(u64::MAX), "after 9999-12-31 23:59:59.000 UTC");
    }

    #[test]
    fn time_options_take_rfc3339_or_unix() {
        assert_eq!(seconds_arg("1700000000"), Ok(1_700_000_000));
        assert_eq!(seconds_arg("2023-11-14T22:13:20Z"), Ok(1_700_000_000));
        assert_eq!(seconds_arg("2023-11-15T00:13:20+02:00"), Ok(1_700_000_000));
        assert_eq!(millis_arg("1700000000123"), Ok(1_700_000_000_123));
        assert_eq!(
            millis_arg("2023-11-14T22:13:20.123Z"),
            Ok(1_700_000_000_123)
        );
        assert_eq!(
            millis_arg("2023-11-14T17:13:20.123-05:00"),
            Ok(1_700_000_000_123)
        );
        for bad in ["soon", "", "2023-11-14T22:13:20", "1969-12-31T23:59:59Z"] {
            assert!(
                seconds_arg(bad).is_err_and(|e| e.contains("RFC 3339")),
                "{bad:?}"
            );
            assert!(
                millis_arg(bad).is_err_and(|e| e.contains("RFC 3339")),
                "{bad:?}"
            );
        }
    }
}
