//! Who opens a session, for the cap's per-client share.

use std::net::{IpAddr, SocketAddr};

/// Who opens a session: the peer's address, an IPv6 one cut to its /64
/// (one host's usual allocation, so rotating addresses within it does not
/// make more clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(in crate::mcp::server) struct ClientKey(IpAddr);

impl ClientKey {
    pub(in crate::mcp::server) fn of(peer: SocketAddr) -> Self {
        let ip = match peer.ip() {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None if v6.is_loopback() => IpAddr::V6(v6),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    IpAddr::V6(prefix.into())
                }
            },
            v4 => v4,
        };
        Self(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_its_address_and_an_ipv6_one_its_64() {
        let key = |s: &str| ClientKey::of(s.parse().unwrap());
        assert_eq!(key("10.0.0.1:1"), key("10.0.0.1:2"));
        assert_ne!(key("10.0.0.1:1"), key("10.0.0.2:1"));
        assert_eq!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:2:ffff::9]:2"));
        assert_ne!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:3::1]:1"));
        assert_eq!(key("[::ffff:10.0.0.1]:1"), key("10.0.0.1:1"));
        assert_ne!(key("[::1]:1"), key("[::2]:1"));
    }
}
