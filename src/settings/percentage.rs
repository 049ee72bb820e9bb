//! `allow_percentage` as an exact number: whole millionths of the crowd, so that
//! `"0.5"` is half a percent and every whole-number setting draws exactly as the
//! VCL's integer percentage did.
//!
//! Text form (settings, logs, pages): optional spaces, an optional sign, digits,
//! and optionally `.` followed by digits (`0.75`, `12.5`, `0.0001`; `.5` and `5.`
//! are not numbers). Fraction digits beyond the fourth are dropped (toward zero),
//! and the value is clamped to 0–100, so `-5` is 0 and `250` is 100.

use std::fmt;
use std::str::FromStr;

/// A percentage of 0–100 in steps of 0.0001 %, held as millionths (0..=1,000,000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Percentage(u32);

/// Millionths in one percent.
pub(crate) const MICROS_PER_PERCENT: u32 = 10_000;
/// Fraction digits kept.
const DECIMALS: usize = 4;

impl Percentage {
    /// Nobody.
    pub const ZERO: Percentage = Percentage(0);
    /// Everybody.
    pub const HUNDRED: Percentage = Percentage(100 * MICROS_PER_PERCENT);
    /// The smallest step above zero, 0.0001 %.
    pub const STEP: Percentage = Percentage(1);

    /// A whole percentage (clamped to 100).
    pub const fn whole(percent: u8) -> Percentage {
        let percent = if percent > 100 { 100 } else { percent };
        Percentage(percent as u32 * MICROS_PER_PERCENT)
    }

    /// From millionths (clamped to 1,000,000).
    pub fn from_micros(micros: u32) -> Percentage {
        Percentage(micros.min(Self::HUNDRED.0))
    }

    /// The nearest percentage to `fraction` (0.0–1.0 of the crowd), rounded down to
    /// a whole step and clamped; NaN is zero.
    pub fn from_fraction(fraction: f64) -> Percentage {
        let micros = (fraction * f64::from(Self::HUNDRED.0)).floor();
        // `as` saturates (NaN → 0), then the clamp applies.
        Percentage::from_micros(micros as u32)
    }

    /// Millionths of the crowd: 0..=1,000,000.
    pub fn micros(self) -> u32 {
        self.0
    }

    /// The share of the crowd, 0.0–1.0.
    pub fn fraction(self) -> f64 {
        f64::from(self.0) / f64::from(Self::HUNDRED.0)
    }

    /// Whether nobody is admitted.
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Whether everybody is admitted.
    pub fn is_hundred(self) -> bool {
        self == Self::HUNDRED
    }
}

/// Why a text is not a percentage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAPercentage;

impl fmt::Display for NotAPercentage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a percentage: expected digits with an optional sign and up to four decimals, e.g. 12.5")
    }
}

impl std::error::Error for NotAPercentage {}

impl FromStr for Percentage {
    type Err = NotAPercentage;

    /// Parses the text form described in the module docs, clamping to 0–100.
    fn from_str(raw: &str) -> Result<Percentage, NotAPercentage> {
        let text = raw.trim();
        let (negative, unsigned) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (whole, fraction) = match unsigned.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (unsigned, None),
        };
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(whole) || !fraction.is_none_or(all_digits) {
            return Err(NotAPercentage);
        }
        if negative {
            return Ok(Percentage::ZERO);
        }
        // Any whole part beyond three digits (after leading zeros) is over 100.
        let significant = whole.trim_start_matches('0');
        if significant.len() > 3 {
            return Ok(Percentage::HUNDRED);
        }
        let whole: u32 = significant.parse().unwrap_or(0);
        let mut micros = whole.saturating_mul(MICROS_PER_PERCENT);
        let mut scale = MICROS_PER_PERCENT;
        for digit in fraction.unwrap_or("").bytes().take(DECIMALS) {
            scale /= 10;
            micros += u32::from(digit - b'0') * scale;
        }
        Ok(Percentage::from_micros(micros))
    }
}

impl fmt::Display for Percentage {
    /// The shortest exact text: `50`, `12.5`, `0.0001`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / MICROS_PER_PERCENT;
        let fraction = self.0 % MICROS_PER_PERCENT;
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{fraction:04}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Option<Percentage> {
        raw.parse().ok()
    }

    #[test]
    fn whole_numbers_are_whole_percent() {
        for p in 0..=100u8 {
            assert_eq!(parse(&p.to_string()), Some(Percentage::whole(p)));
            assert_eq!(Percentage::whole(p).micros(), u32::from(p) * 10_000);
        }
    }

    #[test]
    fn decimals_to_four_places_then_toward_zero() {
        for (raw, micros) in [
            ("0.5", 5_000),
            ("12.5", 125_000),
            ("0.0001", 1),
            ("0.00019", 1),
            ("0.00009", 0),
            ("99.99999", 999_999),
            ("  7.25 ", 72_500),
            ("+3.0", 30_000),
            ("0.75", 7_500),
            ("007.5", 75_000),
            ("100.0", 1_000_000),
            ("100.5", 1_000_000),
        ] {
            assert_eq!(parse(raw).map(Percentage::micros), Some(micros), "{raw:?}");
        }
    }

    #[test]
    fn clamps_to_zero_and_hundred() {
        for (raw, want) in [
            ("-5", Percentage::ZERO),
            ("-0.5", Percentage::ZERO),
            ("-99999999999999999999999", Percentage::ZERO),
            ("250", Percentage::HUNDRED),
            ("99999999999999999999999.5", Percentage::HUNDRED),
            ("0000000000000000000000050", Percentage::whole(50)),
        ] {
            assert_eq!(parse(raw), Some(want), "{raw:?}");
        }
    }

    #[test]
    fn text_that_is_not_a_number_is_refused() {
        for raw in [
            "", " ", ".5", "5.", "abc", "50%", "1e3", "1,5", "--5", "+-5", "5 5", "0x10", ". ",
            "½", "5.5.5", "-", "+",
        ] {
            assert_eq!(parse(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn displays_the_shortest_exact_text_and_reads_back() {
        for (micros, text) in [
            (0, "0"),
            (1, "0.0001"),
            (5_000, "0.5"),
            (125_000, "12.5"),
            (500_000, "50"),
            (999_999, "99.9999"),
            (1_000_000, "100"),
            (12_340, "1.234"),
        ] {
            let p = Percentage::from_micros(micros);
            assert_eq!(p.to_string(), text);
            assert_eq!(parse(text), Some(p));
        }
    }

    #[test]
    fn from_fraction_rounds_down_and_clamps() {
        assert_eq!(
            Percentage::from_fraction(0.125),
            Percentage::from_micros(125_000)
        );
        assert_eq!(Percentage::from_fraction(2.0), Percentage::HUNDRED);
        assert_eq!(Percentage::from_fraction(-1.0), Percentage::ZERO);
        assert_eq!(Percentage::from_fraction(f64::NAN), Percentage::ZERO);
        assert_eq!(Percentage::from_fraction(0.0000009), Percentage::ZERO);
    }
}
