//! Unsigned integers as decimal text without `fmt`'s machinery, for the hot path's
//! log line, token text and `Set-Cookie` (and path-bench's lower bound).

/// The decimal digits of a `u64`, held on the stack.
pub struct Decimal {
    digits: [u8; 20],
    start: usize,
}

impl Decimal {
    /// `n` in decimal.
    pub fn new(mut n: u64) -> Decimal {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Decimal { digits, start }
    }

    /// The digits, as ASCII bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }

    /// The digits, as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII digits were written.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_display_writes() {
        for n in [0, 1, 9, 10, 99, 1_700_000_023, u64::MAX] {
            assert_eq!(Decimal::new(n).as_str(), n.to_string());
        }
    }
}
