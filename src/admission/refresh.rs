//! When a waiting page tells the browser to come back (`Refresh`, `Retry-After`).
//!
//! The VCL refreshes every visitor every 30 s on one global grid, so a crowd that
//! arrived together comes back together, forever. By default this program instead
//! aims each refresh at the moment the visitor's token becomes eligible for its
//! draw, `exp + 1`: on the address draw grid ([`crate::admission::grid`]) that moment is
//! already spread per address. On the VCL's global grid a stable per-visitor phase
//! derived from the uid is added (so devices behind one IP still move together,
//! sharing one outcome), spreading a crowd that arrived in the same second over a
//! whole slot.
//!
//! In FIFO mode nothing happens at `exp` (the end of the place's hold): the page
//! comes back every `min(d, fifo_hold / 3)` seconds, at a per-visitor phase, so it
//! sees the cutoff pass soon after it does and never lets the hold lapse.

use crate::admission::grid::fnv1a;
use crate::settings::draw_grid::DrawGrid;
use crate::settings::refresh_mode::RefreshMode;

/// The visitor's stable phase in seconds, in `0..=d-2` for `d = wait_period_duration`
/// (0 when `d < 2`). Staying under `d - 1` keeps a prompt loser's next token in the
/// slot after next, so the phase never costs a visitor a draw.
pub fn phase(uid: &str, wait_period_duration: u64) -> u64 {
    let spread = wait_period_duration.saturating_sub(1);
    if spread == 0 {
        return 0;
    }
    fnv1a(uid.as_bytes()) % spread
}

/// Seconds until the visitor should come back, given when their wait token
/// expires and the grid it expires on. Never 0: a browser told to refresh at once
/// would hammer the edge.
pub fn refresh_after(
    mode: RefreshMode,
    grid: DrawGrid,
    now: u64,
    wait_exp: u64,
    uid: &str,
    wait_period_duration: u64,
) -> u64 {
    let phase = match grid {
        DrawGrid::Address => 0,
        DrawGrid::Global => phase(uid, wait_period_duration),
    };
    match mode {
        RefreshMode::Fixed => wait_period_duration,
        RefreshMode::Eligible => wait_exp
            .saturating_add(1)
            .saturating_sub(now)
            .saturating_add(phase)
            .max(1),
    }
}

/// How often a FIFO waiting page comes back: `min(d, fifo_hold / 3)` seconds, at
/// least 1.
pub fn fifo_period(wait_period_duration: u64, fifo_hold: u64) -> u64 {
    wait_period_duration.min(fifo_hold / 3).max(1)
}

/// Seconds until a FIFO waiting visitor should come back: the next second after
/// `now` on their own grid of period [`fifo_period`] (offset by a hash of the
/// uid), so a crowd polls evenly and each visitor at a steady pace. In 1..=period.
pub fn fifo_refresh_after(now: u64, uid: &str, wait_period_duration: u64, fifo_hold: u64) -> u64 {
    let period = fifo_period(wait_period_duration, fifo_hold);
    let offset = fnv1a(uid.as_bytes()) % period;
    let at = (now % period + period - offset) % period;
    period - at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_mode_is_the_vcl_period() {
        for grid in [DrawGrid::Address, DrawGrid::Global] {
            assert_eq!(
                refresh_after(RefreshMode::Fixed, grid, 1000, 1060, "192.0.2.1", 30),
                30
            );
        }
    }

    #[test]
    fn on_the_address_grid_the_page_comes_back_just_after_the_expiry() {
        let uid = "192.0.2.1";
        assert_eq!(
            refresh_after(
                RefreshMode::Eligible,
                DrawGrid::Address,
                1000,
                1060,
                uid,
                30
            ),
            61
        );
        // An already eligible token: come back in a second, never at once.
        assert_eq!(
            refresh_after(
                RefreshMode::Eligible,
                DrawGrid::Address,
                2000,
                1060,
                uid,
                30
            ),
            1
        );
    }

    #[test]
    fn on_the_global_grid_eligible_mode_adds_the_phase() {
        let uid = "192.0.2.7";
        let phase = phase(uid, 30);
        assert!(phase > 0, "pick a uid with a phase");
        assert_eq!(
            refresh_after(RefreshMode::Eligible, DrawGrid::Global, 1000, 1060, uid, 30),
            61 + phase
        );
        assert_eq!(
            refresh_after(RefreshMode::Eligible, DrawGrid::Global, 2000, 1060, uid, 30),
            phase.max(1)
        );
    }

    #[test]
    fn fifo_pages_come_back_on_a_steady_per_visitor_grid_well_inside_the_hold() {
        assert_eq!(fifo_period(30, 300), 30);
        assert_eq!(fifo_period(30, 60), 20);
        assert_eq!(fifo_period(30, 1), 1);
        let uid = "192.0.2.1";
        // Following the page, the visitor comes back every period exactly.
        let mut now = 1_700_000_000;
        let mut visits = Vec::new();
        for _ in 0..5 {
            let after = fifo_refresh_after(now, uid, 30, 300);
            assert!((1..=30).contains(&after));
            now += after;
            visits.push(now);
        }
        assert!(visits.windows(2).all(|w| w[1] - w[0] == 30), "{visits:?}");
        // A crowd's visits spread over the period.
        let seconds: std::collections::HashSet<u64> = (0..300)
            .map(|i| {
                (1_700_000_000 + fifo_refresh_after(1_700_000_000, &format!("10.0.0.{i}"), 30, 300))
                    % 30
            })
            .collect();
        assert!(seconds.len() >= 25, "{}", seconds.len());
    }

    #[test]
    fn phase_is_stable_bounded_and_spread() {
        assert_eq!(phase("192.0.2.1", 30), phase("192.0.2.1", 30));
        assert_eq!(phase("192.0.2.1", 1), 0);
        assert_eq!(phase("192.0.2.1", 2), 0);
        let phases: Vec<u64> = (0..2000)
            .map(|i| phase(&format!("10.0.{}.{}", i / 256, i % 256), 30))
            .collect();
        assert!(phases.iter().all(|&p| p <= 28));
        // Every second of the slot gets some of a crowd of 2,000, none more than 3x its share.
        for second in 0..=28 {
            let n = phases.iter().filter(|&&p| p == second).count();
            assert!((1..=3 * 2000 / 29).contains(&n), "second {second}: {n}");
        }
    }
}
