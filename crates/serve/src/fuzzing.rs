//! The HTTP inbound checks under a fuzzer (`fuzz/fuzz_targets/origin.rs`
//! calls [`origin_and_host`]; the committed corpus is replayed by this
//! module's test). The invariant: the `Origin` and `Host` checks never
//! admit what a ten-line reference, written from the rules alone, refuses,
//! and never refuse what it admits.
//!
//! The input: the first line is the header's value, the other lines the
//! `--allow-origin` (and `--allow-host`) values; with none, loopback only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::policy::{HostPolicy, OriginPolicy};

/// One fuzz input, checked against the reference for both headers.
pub fn origin_and_host(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let value = lines.next().unwrap_or_default();
    let allowed: Vec<String> = lines.map(str::to_owned).collect();
    assert_eq!(
        OriginPolicy::new(&allowed).allows(value),
        reference_origin(&allowed, value),
        "Origin {value:?} with --allow-origin {allowed:?}"
    );
    let hosts: Vec<String> = allowed
        .iter()
        .filter(|host| *host != "*")
        .cloned()
        .collect();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    assert_eq!(
        HostPolicy::new(&hosts, loopback).allows(value),
        reference_host(&hosts, value),
        "Host {value:?} with --allow-host {hosts:?}"
    );
}

/// The host of `host[:port]` or `[v6][:port]` (the port 1 to 5 digits,
/// the brackets holding an IPv6 address); `None` when malformed.
fn reference_host_of(authority: &str) -> Option<&str> {
    let digits =
        |port: &str| (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit());
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            inside.parse::<Ipv6Addr>().ok()?;
            (
                inside,
                after
                    .strip_prefix(':')
                    .or((!after.is_empty()).then_some("bad")),
            )
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    (!host.is_empty() && port.is_none_or(digits)).then_some(host)
}

fn reference_loopback(authority: &str) -> bool {
    reference_host_of(authority).is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|a| a.is_loopback())
    })
}

fn reference_origin(allowed: &[String], origin: &str) -> bool {
    if allowed.iter().any(|entry| entry == "*") {
        return true;
    }
    if !allowed.is_empty() {
        return allowed
            .iter()
            .any(|entry| entry.trim_end_matches('/').eq_ignore_ascii_case(origin));
    }
    let lower = origin.to_ascii_lowercase();
    let authority = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    authority.is_some_and(reference_loopback)
}

fn reference_host(allowed: &[String], host: &str) -> bool {
    if allowed.is_empty() {
        return reference_loopback(host);
    }
    let name = reference_host_of(host);
    allowed.iter().any(|entry| {
        entry.eq_ignore_ascii_case(host)
            || name.is_some_and(|name| entry.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_fuzz_inputs_pass() {
        nexo_testkit::replay("origin", super::origin_and_host);
    }
}
