//! Which addresses are not the public internet.
//!
//! A name in an allowed pattern may resolve to anything: an attacker who
//! controls a domain's DNS can point it at `127.0.0.1`, at the cloud
//! metadata service (`169.254.169.254`) or at the office network, and
//! change the answer between a check and a connect (DNS rebinding). So the
//! host resolves the name itself, checks every address here, and connects
//! to an address it checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kind of non-public range `ip` is in, or `None` for a public unicast
/// address. IPv4 addresses carried inside IPv6 (mapped, compatible, NAT64,
/// 6to4) are judged by the IPv4 address.
pub(crate) fn private_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => v6_range(v6),
    }
}

fn v4_range(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified (\"this network\", 0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) => "private (RFC 1918)",
        (172, 16..=31, _) => "private (RFC 1918)",
        (192, 168, _) => "private (RFC 1918)",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared address space (CGNAT, RFC 6598)",
        (192, 0, 0) => "IETF protocol assignments",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) if ip == Ipv4Addr::BROADCAST => "broadcast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    })
}

fn v6_range(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return v4_range(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_loopback() => "loopback",
        0xfc00..=0xfdff => "unique local (ULA)",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xff00..=0xffff => "multicast",
        0x2001 if s[1] == 0x0db8 => "documentation",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only",
        // Everything else outside 2000::/3 is unassigned or special.
        0x0000..=0x1fff | 0x4000..=0xfbff => "reserved",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address carries, for the forms that reach it:
/// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, except
/// `::` and `::1`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:ab:cd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str) -> Option<&'static str> {
        private_range(text.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
            "::ffff:8.8.8.8",
            "2002:0808:0808::1",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }

    #[test]
    fn every_local_or_private_range_is_named() {
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "CGNAT"),
            ("255.255.255.255", "broadcast"),
            ("224.0.0.1", "multicast"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fd00::1", "ULA"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:0001::", "loopback"),
            ("2001:db8::1", "documentation"),
        ] {
            let found = range(ip).unwrap_or_else(|| panic!("{ip} passed"));
            assert!(found.contains(kind), "{ip}: {found}");
        }
    }
}
