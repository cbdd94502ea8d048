//! The bed every test shares (started on first use, alive until the test
//! binary exits), rmcp clients of a [`Dns`] handler that asks it, and small
//! helpers to call a tool and read its findings.

use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;
use std::time::Duration;

use nexo_dns::{Dns, DnsOptions};
use nexo_dns_testbed::{Bed, ROOT_SERVERS, zones};
use nexo_testkit::{Client, call_tool, connect};
use serde_json::Value;

pub use nexo_testkit::Error;

/// How long the handler waits for each answer: long enough for a loaded
/// machine, short enough that the zone with a silent server stays quick.
const TIMEOUT: Duration = Duration::from_secs(2);

static BED: LazyLock<Result<Bed, String>> =
    LazyLock::new(|| Bed::validating(zones::standard()).map_err(|error| error.to_string()));

/// The standard bed, with its validating resolver.
pub fn bed() -> Result<&'static Bed, Error> {
    BED.as_ref().map_err(|error| error.clone().into())
}

/// A client of a handler whose recursive resolver is `resolver`.
pub async fn client_of(resolver: SocketAddr) -> Result<Client, Error> {
    client_with(resolver, TIMEOUT).await
}

/// A client of a handler asking `resolver`, waiting `timeout` for each
/// answer.
pub async fn client_with(resolver: SocketAddr, timeout: Duration) -> Result<Client, Error> {
    let dns = Dns::new(options(bed()?, resolver, timeout))?;
    connect(dns).await
}

/// How a handler asks `bed`: `resolver`, the bed's servers' port, the
/// bed's root servers as root hints, no call log.
pub fn options(bed: &Bed, resolver: SocketAddr, timeout: Duration) -> DnsOptions {
    DnsOptions {
        resolver: Some(resolver),
        auth_port: bed.port(),
        timeout,
        log: None,
        roots: ROOT_SERVERS.map(IpAddr::V4).to_vec(),
    }
}

/// A client of a handler that asks the bed's resolver.
pub async fn client() -> Result<Client, Error> {
    client_of(bed()?.resolver()).await
}

/// The structured result of a successful call.
pub async fn structured(client: &Client, tool: &str, arguments: Value) -> Result<Value, Error> {
    let result = call_tool(client, tool, arguments).await?;
    if result.is_error == Some(true) {
        return Err(format!("{tool} failed: {result:?}").into());
    }
    result
        .structured_content
        .ok_or_else(|| format!("{tool}: no structured content").into())
}

/// The finding codes of a result, sorted, each once.
pub fn codes(result: &Value) -> Vec<String> {
    let mut codes: Vec<String> = result["hallazgos"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|h| h["tipo"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    codes.sort();
    codes.dedup();
    codes
}
