//! The visitor's identity: the connection's address as text, or for IPv6 its
//! network prefix.
//!
//! IPv6 clients often change their address within their network (privacy
//! addresses rotate daily or per connection), which would void their token and
//! their place. `uid_ipv6_prefix = 64` binds a token to the /64 instead: the uid
//! is the prefix, compressed, with its length (`2001:db8:1:2::/64`). IPv4 addresses
//! are always whole. The default, 128, is the VCL's behaviour: the whole address.

use std::net::{IpAddr, Ipv6Addr};

use crate::settings::uid_ipv6_prefix::FULL_IPV6_PREFIX;

/// The uid of a client at `ip`, binding IPv6 clients to their `ipv6_prefix`-bit
/// network (`128`: the whole address, the VCL's text).
pub fn uid_of(ip: IpAddr, ipv6_prefix: u8) -> String {
    match ip {
        IpAddr::V6(v6) if ipv6_prefix < FULL_IPV6_PREFIX && is_ipv6_network(ip) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(ipv6_prefix))
                .unwrap_or(0);
            format!("{}/{ipv6_prefix}", Ipv6Addr::from(u128::from(v6) & mask))
        }
        other => other.to_string(),
    }
}

/// Whether `uid_ipv6_prefix` applies to a client at `ip`: an IPv6 address that is
/// not an IPv4 address mapped into IPv6 (those are whole, as IPv4 is).
fn is_ipv6_network(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uid(text: &str, prefix: u8) -> String {
        uid_of(text.parse().unwrap(), prefix)
    }

    #[test]
    fn the_prefix_applies_to_ipv6_networks_only() {
        for (text, applies) in [
            ("192.0.2.10", false),
            ("::ffff:192.0.2.10", false),
            ("2001:db8::1", true),
            ("::1", true),
        ] {
            assert_eq!(is_ipv6_network(text.parse().unwrap()), applies, "{text}");
        }
    }

    #[test]
    fn the_default_is_the_whole_address_as_the_vcl_writes_it() {
        assert_eq!(uid("192.0.2.10", 128), "192.0.2.10");
        assert_eq!(uid("2001:db8::1", 128), "2001:db8::1");
        assert_eq!(
            uid("2001:0db8:0000:0000:0000:0000:0000:0001", 128),
            "2001:db8::1"
        );
    }

    #[test]
    fn a_prefix_binds_ipv6_to_its_network_and_names_the_length() {
        assert_eq!(
            uid("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64),
            "2001:db8:1:2::/64"
        );
        assert_eq!(uid("2001:db8:1:2::9", 64), "2001:db8:1:2::/64");
        assert_eq!(uid("2001:db8:1:3::9", 64), "2001:db8:1:3::/64");
        assert_eq!(uid("2001:db8:1:2ff::9", 56), "2001:db8:1:200::/56");
        assert_eq!(uid("2001:db8:ffff::1", 48), "2001:db8:ffff::/48");
        assert_eq!(uid("2001:db8::1", 32), "2001:db8::/32");
        // Lengths the settings refuse still say what they mask.
        assert_eq!(uid("2001:db8::1", 1), "::/1");
        assert_eq!(uid("ffff::1", 1), "8000::/1");
        assert_eq!(uid("2001:db8::1", 0), "::/0");
    }

    #[test]
    fn ipv4_and_mapped_ipv4_stay_whole() {
        assert_eq!(uid("192.0.2.10", 64), "192.0.2.10");
        assert_eq!(uid("::ffff:192.0.2.10", 64), "::ffff:192.0.2.10");
    }

    #[test]
    fn the_longest_prefix_uid_fits_a_token() {
        let longest = uid("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 127);
        assert_eq!(longest, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127");
        assert!(longest.len() <= crate::credentials::token::MAX_UID_LEN);
    }
}
