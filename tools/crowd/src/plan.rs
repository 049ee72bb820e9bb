//! When people come, and the uniform ranges the crowd draws its pauses from.

use rand::RngExt as _;
use rand::rngs::StdRng;

/// How the people arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Arrival {
    /// All at random moments within the window: a flash crowd.
    Flash,
    /// Evenly over the window (each in its own slice of it, at a random moment).
    Spread,
}

/// Each person's arrival, seconds from the start: `n` moments in `[0, over)`.
pub fn arrivals(n: usize, arrival: Arrival, over: f64, rng: &mut StdRng) -> Vec<f64> {
    let over = over.max(0.0);
    (0..n)
        .map(|i| match arrival {
            Arrival::Flash => uniform(rng, (0.0, over)),
            Arrival::Spread => {
                let slice = over / n as f64;
                i as f64 * slice + uniform(rng, (0.0, slice))
            }
        })
        .collect()
}

/// A draw from `U(a, b)` (`a` when the range is empty).
pub fn uniform(rng: &mut StdRng, (a, b): (f64, f64)) -> f64 {
    if b > a { rng.random_range(a..b) } else { a }
}

/// Parses `A..B` (seconds, `0 ≤ A ≤ B`), or a single `A` for `A..A`.
pub fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let number = |s: &str| -> Result<f64, String> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not a number of seconds"))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(format!("{s:?} is not a number of seconds"))
        }
    };
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let a = number(text)?;
            (a, a)
        }
    };
    if a > b {
        return Err(format!("{text:?}: {a} is above {b}"));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng as _;

    #[test]
    fn a_flash_comes_within_the_window_and_a_spread_covers_it() {
        let mut rng = StdRng::seed_from_u64(7);
        let flash = arrivals(1000, Arrival::Flash, 10.0, &mut rng);
        assert!(flash.iter().all(|t| (0.0..10.0).contains(t)));
        let spread = arrivals(600, Arrival::Spread, 300.0, &mut rng);
        assert!(spread.windows(2).all(|w| w[0] <= w[1]));
        // Each minute of the window gets its fifth of the people.
        for m in 0..5 {
            let n = spread
                .iter()
                .filter(|t| (m as f64 * 60.0..(m + 1) as f64 * 60.0).contains(*t))
                .count();
            assert_eq!(n, 120, "minute {m}");
        }
        assert_eq!(arrivals(3, Arrival::Flash, 0.0, &mut rng), [0.0; 3]);
    }

    #[test]
    fn ranges_parse() {
        assert_eq!(parse_range("3..6"), Ok((3.0, 6.0)));
        assert_eq!(parse_range("2.5"), Ok((2.5, 2.5)));
        assert_eq!(parse_range(" 0 .. 1 "), Ok((0.0, 1.0)));
        for bad in ["6..3", "a..b", "-1..2", "1..", "inf", "NaN"] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..100 {
            let v = uniform(&mut rng, (3.0, 6.0));
            assert!((3.0..6.0).contains(&v));
        }
        assert_eq!(uniform(&mut rng, (4.0, 4.0)), 4.0);
    }
}
