//! When a new wait token expires: the draw grid.
//!
//! By default every address (uid) has a grid of its own: the points
//! `o(uid) + k · 2d`, with the offset `o(uid) = FNV-1a-64(uid) mod 2d` (`d` =
//! `wait_period_duration`). A new wait token expires at the first point of its
//! address's grid at least `d` seconds ahead, so a newcomer waits one to three
//! periods and a loser who comes back at once draws again exactly `2d` later.
//! At each point an address can hold only one token (same fields, same signature,
//! same draw), so every device behind it shares every draw whenever it arrived;
//! and since the offsets spread addresses evenly over `2d`, so do the draws.
//!
//! The VCL's global grid (`draw_grid = global`) ends every token on a multiple of
//! `d`: `floor(now / d) · d + 2d`. Devices behind one address that join in
//! different slots then hold different tokens and draw independently, and a
//! crowd that arrived together draws together.

use crate::settings::draw_grid::DrawGrid;

/// The expiry of a wait token handed to `uid` at `now` on `grid`, for a wait
/// period of `d` seconds (a 0 is taken as 1).
pub fn wait_expiry(grid: DrawGrid, now: u64, uid: &str, d: u64) -> u64 {
    match grid {
        DrawGrid::Address => address_expiry(now, uid, d),
        DrawGrid::Global => global_expiry(now, d),
    }
}

/// The VCL's rule: `floor(now / d) · d + 2d`, so every request from one client
/// within one slot gets the same token.
pub fn global_expiry(now: u64, d: u64) -> u64 {
    let d = d.max(1);
    (now / d * d).saturating_add(d.saturating_mul(2))
}

/// The first point of `uid`'s grid at or after `now + d`.
pub fn address_expiry(now: u64, uid: &str, d: u64) -> u64 {
    let d = d.max(1);
    let period = d.saturating_mul(2);
    let earliest = now.saturating_add(d);
    let offset = address_offset(uid, d);
    // Seconds from `earliest` to the next point (no sum that could overflow).
    let at = earliest % period;
    let ahead = if offset >= at {
        offset - at
    } else {
        period - (at - offset)
    };
    earliest.saturating_add(ahead)
}

/// `o(uid)`: where in each draw period of `2d` seconds the address draws,
/// `FNV-1a-64(uid) mod 2d`.
pub fn address_offset(uid: &str, d: u64) -> u64 {
    fnv1a(uid.as_bytes()) % d.max(1).saturating_mul(2)
}

/// FNV-1a, 64-bit: a fixed, platform-independent hash. Not a secret: where an
/// address draws spreads load, it grants nothing (every point of a grid draws at
/// the same percentage).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_known_answers() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn address_offsets_known_answers() {
        // Pinned: a change here moves every address's draws (and the docs' examples).
        assert_eq!(fnv1a(b"192.0.2.10") % 60, address_offset("192.0.2.10", 30));
        let pinned: Vec<u64> = ["192.0.2.10", "192.0.2.11", "2001:db8::1", "2001:db8::/64"]
            .iter()
            .map(|uid| address_offset(uid, 30))
            .collect();
        assert_eq!(pinned, PINNED_OFFSETS);
    }

    const PINNED_OFFSETS: [u64; 4] = [56, 27, 27, 3];

    #[test]
    fn a_new_token_ends_on_its_grid_one_to_three_periods_ahead() {
        for uid in ["192.0.2.10", "198.51.100.7", "2001:db8::1"] {
            let offset = address_offset(uid, 30);
            for now in 1_700_000_000..1_700_000_200 {
                let exp = address_expiry(now, uid, 30);
                assert_eq!(exp % 60, offset, "{uid} at {now}");
                assert!((now + 30..now + 90).contains(&exp), "{uid} at {now}: {exp}");
            }
        }
    }

    #[test]
    fn a_loser_back_at_once_draws_again_two_periods_later() {
        let uid = "192.0.2.10";
        let exp = address_expiry(1_700_000_000, uid, 30);
        for back in 1..=30 {
            assert_eq!(address_expiry(exp + back, uid, 30), exp + 60);
        }
    }

    #[test]
    fn devices_behind_one_address_share_every_point() {
        // Two devices joining 50 s apart: the later one's first point is a point
        // the first device also reaches by losing, so they hold the same token there.
        let uid = "203.0.113.5";
        let first = address_expiry(1_700_000_000, uid, 30);
        let second = address_expiry(1_700_000_050, uid, 30);
        assert_eq!((second - first) % 60, 0);
    }

    #[test]
    fn offsets_spread_addresses_evenly_over_the_draw_period() {
        let counts = (0..6000).fold([0u32; 60], |mut counts, i| {
            counts[address_offset(
                &format!("10.{}.{}.{}", i / 65536, i / 256 % 256, i % 256),
                30,
            ) as usize] += 1;
            counts
        });
        // 100 a second expected; a binomial 99.99 % band is about ±40.
        assert!(
            counts.iter().all(|&n| (60..=140).contains(&n)),
            "{counts:?}"
        );
    }

    #[test]
    fn the_global_grid_is_the_vcl_slot_rule() {
        assert_eq!(global_expiry(1_700_000_023, 30), 1_700_000_070);
        assert_eq!(global_expiry(1_700_000_040, 30), 1_700_000_100);
        assert_eq!(
            wait_expiry(DrawGrid::Global, 1_700_000_023, "any", 30),
            1_700_000_070
        );
        // A zero period is taken as one second, never a division by zero.
        assert_eq!(global_expiry(5, 0), 7);
        assert_eq!(address_expiry(5, "x", 0) % 2, address_offset("x", 0));
        // Periods far beyond any setting: still a point of the grid, no overflow.
        let d = u64::MAX / 4;
        let exp = address_expiry(7, "192.0.2.10", d);
        assert!(exp >= 7 + d);
        assert_eq!(exp % (2 * d), address_offset("192.0.2.10", d));
        assert!(address_expiry(7, "192.0.2.10", u64::MAX / 2) >= u64::MAX / 2);
    }
}
