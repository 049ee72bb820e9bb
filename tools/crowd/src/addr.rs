//! The people's source addresses: one loopback address each, in 127.0.0.0/8
//! (Linux routes all of it to `lo`, and the room sees each connection's source
//! address as the visitor). Host parts `.0` and `.255` are skipped (they look like
//! network and broadcast addresses to tools that assume a /24), and so is 127.0.0.1,
//! the address everything else on the machine uses.

use std::net::Ipv4Addr;

/// The default first address: clear of 127.0.0.x, which other tests use.
pub const DEFAULT_FIRST: Ipv4Addr = Ipv4Addr::new(127, 0, 1, 1);

/// Whether a person may have `addr`.
pub fn usable(addr: Ipv4Addr) -> bool {
    let [a, _, _, d] = addr.octets();
    a == 127 && d != 0 && d != 255 && addr != Ipv4Addr::new(127, 0, 0, 1)
}

/// `n` usable addresses from `first` upwards, or why not (`first` outside
/// 127.0.0.0/8, or too few addresses left in it).
pub fn addresses(first: Ipv4Addr, n: usize) -> Result<Vec<Ipv4Addr>, String> {
    if first.octets()[0] != 127 {
        return Err(format!("{first} is not in 127.0.0.0/8"));
    }
    let mut next = u32::from(first);
    let end = u32::from(Ipv4Addr::new(127, 255, 255, 255));
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        if next > end {
            return Err(format!(
                "only {} usable addresses from {first} to the end of 127.0.0.0/8, {n} wanted",
                out.len()
            ));
        }
        let addr = Ipv4Addr::from(next);
        if usable(addr) {
            out.push(addr);
        }
        next += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_skip_the_network_broadcast_and_the_usual_loopback() {
        let got = addresses(Ipv4Addr::new(127, 0, 0, 0), 4).unwrap();
        assert_eq!(
            got,
            [
                Ipv4Addr::new(127, 0, 0, 2),
                Ipv4Addr::new(127, 0, 0, 3),
                Ipv4Addr::new(127, 0, 0, 4),
                Ipv4Addr::new(127, 0, 0, 5)
            ]
        );
        let got = addresses(Ipv4Addr::new(127, 0, 1, 253), 3).unwrap();
        assert_eq!(
            got,
            [
                Ipv4Addr::new(127, 0, 1, 253),
                Ipv4Addr::new(127, 0, 1, 254),
                Ipv4Addr::new(127, 0, 2, 1)
            ]
        );
        let many = addresses(DEFAULT_FIRST, 2000).unwrap();
        assert!(many.iter().all(|a| usable(*a)));
        let mut unique = many.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 2000);
        assert_eq!(many[253], Ipv4Addr::new(127, 0, 1, 254));
        assert_eq!(many[254], Ipv4Addr::new(127, 0, 2, 1));
    }

    #[test]
    fn addresses_stay_in_the_loopback_range() {
        assert!(addresses(Ipv4Addr::new(10, 0, 0, 1), 1).is_err());
        assert!(addresses(Ipv4Addr::new(127, 255, 255, 250), 5).is_ok());
        assert!(addresses(Ipv4Addr::new(127, 255, 255, 250), 6).is_err());
    }
}
