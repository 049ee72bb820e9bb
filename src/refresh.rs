//! When a waiting page tells the browser to come back (`Refresh`, `Retry-After`).
//!
//! The VCL refreshes every visitor every 30 s on one global grid, so a crowd that
//! arrived together comes back together, forever. By default this program instead
//! aims each refresh at the moment the visitor's token becomes eligible for its draw,
//! plus a stable per-visitor phase derived from the uid (so devices behind one IP
//! still move together, sharing one outcome). A crowd that arrived in the same
//! second is spread over a whole slot.

/// How waiting pages schedule the next visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshMode {
    /// At the visitor's next draw, plus their phase (the default).
    Eligible,
    /// Every `wait_period_duration` seconds, on the VCL's global grid.
    Fixed,
}

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

/// Seconds until the visitor should come back, given when their wait token expires.
/// Never 0: a browser told to refresh at once would hammer the edge.
pub fn refresh_after(
    mode: RefreshMode,
    now: u64,
    wait_exp: u64,
    uid: &str,
    wait_period_duration: u64,
) -> u64 {
    match mode {
        RefreshMode::Fixed => wait_period_duration,
        RefreshMode::Eligible => wait_exp
            .saturating_add(1)
            .saturating_sub(now)
            .saturating_add(phase(uid, wait_period_duration))
            .max(1),
    }
}

/// FNV-1a, 64-bit: a fixed, platform-independent hash (not a secret: a phase
/// only spreads load, it grants nothing).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_mode_is_the_vcl_period() {
        assert_eq!(
            refresh_after(RefreshMode::Fixed, 1000, 1060, "192.0.2.1", 30),
            30
        );
    }

    #[test]
    fn eligible_mode_aims_at_the_draw_plus_the_phase() {
        let uid = "192.0.2.1";
        let phase = phase(uid, 30);
        assert_eq!(
            refresh_after(RefreshMode::Eligible, 1000, 1060, uid, 30),
            61 + phase
        );
        // An already eligible token: come back after the phase, never at once.
        assert_eq!(
            refresh_after(RefreshMode::Eligible, 2000, 1060, uid, 30),
            phase.max(1)
        );
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

    #[test]
    fn fnv1a_known_answers() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
