//! Bypass rules of a room: requests that go straight to the origin although the
//! room applies to their path. Staff and monitoring by address
//! (`bypass_addresses`, IPv4 and IPv6 CIDR), static assets and health checks by
//! path (`bypass_paths`, prefixes inside the room); signed passes are in
//! [`crate::credentials::pass`].
//!
//! A rule that does not parse is ignored alone (the key is named in
//! `config_fallback`); so is a rule that would bypass a whole part of the room
//! (an address block of prefix length 0, a path that is a prefix of one of the
//! room's own): a mistake must never become "everyone bypasses".

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::settings::path_readings::readings;

/// An address block: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Whether the block is so wide it is probably a mistake: shorter than a /8
    /// (IPv4) or a /16 (IPv6). The room still applies it; `wrctl config check` warns.
    pub fn is_very_wide(&self) -> bool {
        match self.network {
            IpAddr::V4(_) => self.bits < 8,
            IpAddr::V6(_) => self.bits < 16,
        }
    }

    /// Whether `ip` is in the block (an IPv4 address mapped into IPv6 counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u128::from(u32::from(ip)), self.bits, 32) == u128::from(u32::from(net))
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                masked(u128::from(ip), self.bits, 128) == u128::from(net)
            }
            _ => false,
        }
    }
}

/// `value`'s top `bits` of `width`, the rest zero.
fn masked(value: u128, bits: u8, width: u32) -> u128 {
    let keep = u32::from(bits).min(width);
    let mask = if keep == 0 {
        0
    } else {
        (u128::MAX >> (128 - width)) & !((1u128 << (width - keep)) - 1)
    };
    value & mask
}

/// Why an address block was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCidr;

impl FromStr for Cidr {
    type Err = BadCidr;

    /// `192.0.2.0/24`, `2001:db8::/32`, or a single address. The block must be
    /// written at its network address (`192.0.2.1/24` is refused: it says two
    /// things), and prefix length 0 is refused (it holds everyone).
    fn from_str(text: &str) -> Result<Cidr, BadCidr> {
        let text = text.trim();
        let (addr, bits) = match text.split_once('/') {
            Some((addr, bits)) => (addr, Some(bits)),
            None => (text, None),
        };
        let network: IpAddr = addr.parse().map_err(|_| BadCidr)?;
        let width: u32 = if network.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => width as u8,
            Some(bits) if bits.bytes().all(|b| b.is_ascii_digit()) && !bits.is_empty() => {
                bits.parse::<u8>().map_err(|_| BadCidr)?
            }
            Some(_) => return Err(BadCidr),
        };
        if bits == 0 || u32::from(bits) > width {
            return Err(BadCidr);
        }
        let cidr = Cidr { network, bits };
        (cidr.contains(network) && cidr.network_bits() == cidr.address_bits())
            .then_some(cidr)
            .ok_or(BadCidr)
    }
}

impl Cidr {
    fn address_bits(&self) -> u128 {
        match self.network {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }

    fn network_bits(&self) -> u128 {
        let width = if self.network.is_ipv4() { 32 } else { 128 };
        masked(self.address_bits(), self.bits, width)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.bits)
    }
}

/// Why a request in the room bypasses it, if it does: `bypass-path` (every
/// reading of `path` an origin may give is inside the prefix,
/// [`crate::settings::path_readings`]) or `bypass-address` (by the connection's address
/// `ip`, never a header).
pub fn bypass_scope(
    ip: Option<IpAddr>,
    path: &str,
    bypass_paths: &[String],
    bypass_addresses: &[Cidr],
) -> Option<&'static str> {
    // Inside the prefix on every reading an origin may give the path.
    let readings = readings(path);
    let by_path = bypass_paths.iter().any(|p| {
        readings
            .iter()
            .all(|path| path.starts_with(p.as_str()) && plain(&path[p.len()..]))
    });
    if by_path {
        return Some("bypass-path");
    }
    let ip = ip?;
    bypass_addresses
        .iter()
        .any(|block| block.contains(ip))
        .then_some("bypass-address")
}

/// Whether the rest of a path after a bypass prefix names nothing but what it says:
/// no `..`, `;` (a path parameter some origins strip), backslash, or encoded dot,
/// slash or backslash, any of which an origin may resolve outside the prefix.
fn plain(rest: &str) -> bool {
    let lower = rest.to_ascii_lowercase();
    !["..", ";", "\\", "%2e", "%2f", "%5c"]
        .iter()
        .any(|bad| lower.contains(bad))
}

/// Whether a bypass path would bypass a whole part of a room protecting
/// `protected` (it is a prefix of one of them): such a rule is ignored.
pub fn covers_the_room(bypass_path: &str, protected: &[String]) -> bool {
    protected.iter().any(|p| p.starts_with(bypass_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Cidr {
        text.parse().unwrap_or_else(|_| panic!("{text}"))
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn blocks_hold_the_addresses_they_say() {
        let v4 = cidr("192.0.2.0/24");
        assert!(v4.contains(ip("192.0.2.0")) && v4.contains(ip("192.0.2.255")));
        assert!(!v4.contains(ip("192.0.3.0")) && !v4.contains(ip("2001:db8::1")));
        assert!(v4.contains(ip("::ffff:192.0.2.9")), "mapped IPv4 is IPv4");
        let v6 = cidr("2001:db8::/32");
        assert!(v6.contains(ip("2001:db8:ffff::1")) && !v6.contains(ip("2001:db9::")));
        let one = cidr("203.0.113.7");
        assert!(one.contains(ip("203.0.113.7")) && !one.contains(ip("203.0.113.8")));
        assert_eq!(one.to_string(), "203.0.113.7/32");
        assert!(cidr("0.0.0.0/1").contains(ip("127.0.0.1")));
        assert!(cidr("::1/128").contains(ip("::1")));
    }

    #[test]
    fn blocks_that_say_too_much_or_nothing_are_refused() {
        for bad in [
            "",
            "/",
            "192.0.2.0/",
            "192.0.2.0/33",
            "2001:db8::/129",
            "0.0.0.0/0",
            "::/0",
            "192.0.2.1/24",
            "192.0.2.0/+8",
            "192.0.2.0/ 8",
            "192.0.2.0/8x",
            "host.example",
            "192.0.2.0/24/1",
            "192.0.2.0/300",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_request_bypasses_by_path_then_by_address() {
        let paths = vec!["/drops/static/".to_string()];
        let blocks = vec![cidr("198.51.100.0/24"), cidr("2001:db8:1::/120")];
        let scope = |addr: &str, path| bypass_scope(addr.parse().ok(), path, &paths, &blocks);
        assert_eq!(
            scope("192.0.2.1", "/drops/static/a.css"),
            Some("bypass-path")
        );
        assert_eq!(scope("198.51.100.9", "/drops/1"), Some("bypass-address"));
        assert_eq!(scope("2001:db8:1::5", "/drops/1"), Some("bypass-address"));
        // The connection's own address, not its network: a /64 uid is no match.
        assert_eq!(scope("2001:db8:1::1:5", "/drops/1"), None);
        assert_eq!(scope("192.0.2.1", "/drops/1"), None);
        assert_eq!(scope("unknown", "/drops/1"), None);
    }

    #[test]
    fn a_bypass_path_never_reaches_outside_its_prefix() {
        let paths = vec!["/drops/static/".to_string()];
        for sneaky in [
            "/drops/static/..;/sneaker",
            "/drops/static/../sneaker",
            "/drops/static/%2e%2e/sneaker",
            "/drops/static/x%2Fsneaker",
            "/drops/static/a;jsessionid=1",
            "/drops/static/..%5csneaker",
        ] {
            assert_eq!(bypass_scope(None, sneaky, &paths, &[]), None, "{sneaky}");
        }
        assert_eq!(
            bypass_scope(None, "/drops/static/app.v2.css", &paths, &[]),
            Some("bypass-path")
        );
    }

    #[test]
    fn a_path_over_a_whole_part_of_the_room_is_a_mistake() {
        let protected = vec!["/drops/".to_string(), "/checkout".to_string()];
        assert!(covers_the_room("/", &protected));
        assert!(covers_the_room("/drops", &protected));
        assert!(covers_the_room("/checkout", &protected));
        assert!(!covers_the_room("/drops/static/", &protected));
    }
}
