//! What a client sends, under a fuzzer (the targets in `fuzz/fuzz_targets`
//! call these; the committed corpora are replayed by this module's tests):
//!
//! - [`origin_and_host`]: the `Origin` and `Host` checks never admit what
//!   a ten-line reference, written from the rules alone, refuses, and never
//!   refuse what it admits. The first line of the input is the header's
//!   value, the others the `--allow-origin` (and `--allow-host`) values;
//!   with none, loopback only.
//! - [`inbound`]: one JSON-RPC message as it arrives (a stdio line, an HTTP
//!   body): malformed JSON is answered -32700 and valid JSON of the wrong
//!   shape -32600, each answer a well-formed response carrying the request's
//!   id when it can be read and `null` otherwise; the push scanner that
//!   finds that id gives the same answer however the bytes are split, and
//!   the id JSON itself holds; an `initialize` completed by leniency is
//!   still an object; and a message rmcp reads, in either direction and
//!   either era, is written back as JSON that reads as the same message.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::Value;

use crate::id_scan::{IdScanner, MAX_ID_BYTES};
use crate::inbound::{INVALID_REQUEST, PARSE_ERROR, inspect};
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

/// One fuzz input: the bytes of one inbound message.
pub fn inbound(data: &[u8]) {
    // Valid JSON: UTF-8, and syntax (numbers beyond an f64 included).
    let valid = std::str::from_utf8(data).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
    let object = data.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{');
    let parsed = serde_json::from_slice::<Value>(data);
    match inspect(data) {
        Err(rejection) => {
            let expected = if valid { INVALID_REQUEST } else { PARSE_ERROR };
            assert_eq!(
                rejection.code,
                expected,
                "{:?}",
                String::from_utf8_lossy(data)
            );
            let answer: Value = serde_json::from_slice(&rejection.to_response())
                .unwrap_or_else(|error| panic!("the answer is not JSON: {error}"));
            assert_eq!(answer["jsonrpc"], "2.0");
            assert_eq!(answer["error"]["code"], expected);
            let id = &answer["id"];
            assert!(id.is_null() || id.is_string() || id.is_number(), "{id}");
        }
        Ok(message) => {
            assert!(
                valid && object,
                "accepted as a message: {:?}",
                String::from_utf8_lossy(data)
            );
            if let Some(rewritten) = &message.rewritten {
                let completed: Value = serde_json::from_slice(rewritten)
                    .unwrap_or_else(|error| panic!("a completed initialize is not JSON: {error}"));
                assert!(completed["params"]["clientInfo"].is_object(), "{completed}");
                assert!(
                    completed["params"]["capabilities"].is_object(),
                    "{completed}"
                );
            }
        }
    }
    scanner_agrees(data, parsed.ok().as_ref());
    round_trips::<ClientJsonRpcMessage>(data);
    round_trips::<ServerJsonRpcMessage>(data);
}

/// The id scanner: the same answer for any split of the bytes, and the
/// message's own top-level id when the JSON holds one (once) that fits.
fn scanner_agrees(data: &[u8], parsed: Option<&Value>) {
    let whole = {
        let mut scanner = IdScanner::new();
        scanner.feed(data);
        scanner.finish().map(|id| id.get().to_owned())
    };
    // Chunk sizes taken from the bytes themselves: 1 to 8.
    let mut chunked = IdScanner::new();
    let mut rest = data;
    let mut sizes = data.iter().cycle();
    while !rest.is_empty() {
        let size = (usize::from(*sizes.next().unwrap_or(&0)) % 8 + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        chunked.feed(chunk);
        rest = tail;
    }
    let chunked = chunked.finish().map(|id| id.get().to_owned());
    assert_eq!(whole, chunked, "{:?}", String::from_utf8_lossy(data));
    let Some(Value::Object(object)) = parsed else {
        return;
    };
    let mentions = data.windows(4).filter(|window| window == b"\"id\"").count();
    let Some(id) = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
    else {
        return;
    };
    if mentions != 1 || id.to_string().len() > MAX_ID_BYTES {
        return;
    }
    let found: Option<Value> = whole
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw).ok());
    assert_eq!(
        found.as_ref(),
        Some(id),
        "{:?}",
        String::from_utf8_lossy(data)
    );
}

/// A message rmcp reads is written back as JSON that reads as the same
/// message.
fn round_trips<M: serde::Serialize + serde::de::DeserializeOwned>(data: &[u8]) {
    let Ok(message) = serde_json::from_slice::<M>(data) else {
        return;
    };
    let written = serde_json::to_value(&message)
        .unwrap_or_else(|error| panic!("a message read cannot be written: {error}"));
    let again: M = serde_json::from_value(written.clone())
        .unwrap_or_else(|error| panic!("{written} was written but cannot be read: {error}"));
    let rewritten = serde_json::to_value(&again)
        .unwrap_or_else(|error| panic!("a message read cannot be written: {error}"));
    assert_eq!(written, rewritten);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_inbound_messages_pass() {
        nexo_testkit::replay("inbound", super::inbound);
    }

    #[test]
    fn the_committed_fuzz_inputs_pass() {
        nexo_testkit::replay("origin", super::origin_and_host);
    }
}
