//! `uid_ipv6_prefix`: how many bits of an IPv6 client's address make its uid.
//! [`crate::credentials::uid`] cuts the address to them.

/// Shortest accepted `uid_ipv6_prefix`: a /32 is a whole provider's allocation,
/// and anything shorter would put unrelated people in one place.
pub const MIN_IPV6_PREFIX: u8 = 32;
/// The whole address (the default).
pub const FULL_IPV6_PREFIX: u8 = 128;
