//! Which IP addresses a URL may not reach unless a policy says so
//! (server-side request forgery): loopback, private, link-local, the cloud
//! metadata address, unspecified, carrier-grade NAT, unique-local,
//! multicast, documentation and reserved ranges, and IPv6 addresses that
//! carry one of those IPv4 addresses inside (mapped, compatible, NAT64,
//! 6to4). Also the loose IPv4 spellings (`2130706433`, `0x7f.1`,
//! `0177.0.0.1`) that C's `inet_aton` and many HTTP clients accept.
//!
//! By hand: `std`'s `is_global` is unstable and the stable predicates miss
//! most of these ranges; no maintained crate classifies them all.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public, for the reason a person reads; `None` for
/// a public address.
pub fn non_public(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(address: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = address.octets();
    let class = match (a, b, c) {
        _ if address == Ipv4Addr::new(169, 254, 169, 254) => "the cloud metadata address",
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (100, 64..=127, _) => "carrier-grade NAT (100.64.0.0/10)",
        (169, 254, _) => "link-local",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved (240.0.0.0/4) or broadcast",
        _ => return None,
    };
    Some(class)
}

fn non_public_v6(address: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(address) {
        return non_public_v4(v4).map(|_| "an IPv6 form of a non-public IPv4 address");
    }
    let segments = address.segments();
    let class = match segments[0] {
        _ if address.is_unspecified() => "unspecified",
        _ if address.is_loopback() => "loopback",
        0xfc00..=0xfdff => "unique local (fc00::/7)",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local (deprecated)",
        0xff00..=0xffff => "multicast",
        0x2001 if segments[1] == 0x0db8 => "documentation",
        0x0100 if segments[1..4] == [0, 0, 0] => "discard-only (100::/64)",
        _ => return None,
    };
    Some(class)
}

/// The IPv4 address an IPv6 address stands for: mapped (`::ffff:a.b.c.d`),
/// compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4
/// (`2002:AABB:CCDD::`).
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = address.segments();
    let [.., x, y] = s;
    let tail = Ipv4Addr::new((x >> 8) as u8, x as u8, (y >> 8) as u8, y as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, _, _] if !(address.is_unspecified() || address.is_loopback()) => {
            Some(tail)
        }
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// A host written as an IPv4 address the loose way `inet_aton` reads it:
/// one to four parts, each decimal, octal (a leading `0`) or hexadecimal
/// (`0x`), the last part filling the remaining bytes.
pub fn loose_ipv4(host: &str) -> Option<Ipv4Addr> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        numbers.push(loose_number(part)?);
    }
    let (last, leading) = numbers.split_last()?;
    let mut value: u64 = 0;
    for (index, number) in leading.iter().enumerate() {
        if *number > 255 {
            return None;
        }
        value |= number << (8 * (3 - index));
    }
    let room = 8 * (4 - leading.len());
    if room < 64 && *last >= (1u64 << room) {
        return None;
    }
    value |= last;
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn loose_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return (radix == 16).then_some(0);
    }
    // `from_str_radix` takes a sign too, which `inet_aton` does not: the
    // host `18.+8` is a name, not 18.0.0.8 (found by the `url` fuzz target).
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix)
        .ok()
        .filter(|n| *n <= u64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_named() {
        for text in [
            "127.0.0.1",
            "10.1.2.3",
            "172.20.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.10.1",
            "0.0.0.0",
            "100.100.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:0001::",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            let address: IpAddr = text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            assert!(non_public(address).is_some(), "{text}");
        }
        for text in [
            "93.184.216.34",
            "2606:2800:220:1:248:1893:25c8:1946",
            "8.8.8.8",
        ] {
            let address: IpAddr = text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            assert_eq!(non_public(address), None, "{text}");
        }
    }

    #[test]
    fn loose_spellings_of_loopback_are_read() {
        for text in [
            "2130706433",
            "0x7f000001",
            "0x7f.1",
            "0177.0.0.1",
            "127.1",
            "127.0.0.1.",
        ] {
            assert_eq!(loose_ipv4(text), Some(Ipv4Addr::LOCALHOST), "{text}");
        }
        for text in [
            "example.com",
            "1.2.3.4.5",
            "256.1.1.1",
            "08.1.1.1",
            "",
            "18.+8",
            "0x+7f.1",
            "+127.1",
        ] {
            assert_eq!(loose_ipv4(text), None, "{text}");
        }
    }
}
