//! The everything handler driven in-process over a `tokio::io::duplex` pair,
//! with raw JSON-RPC lines so that the exact wire shapes the conformance
//! suite checks are what is asserted: a 2025-11-25 session ([`session`])
//! and 2026-07-28 per-request messages ([`stateless`]), plus rmcp's own
//! client for the listings ([`client`]).

mod client;
mod session;
mod stateless;

use nexo_everything::Everything;
use nexo_testkit::{Error, Wire};
use serde_json::Value;

/// A 2025-11-25 session with a fresh server: `initialize` with
/// `capabilities`, then `notifications/initialized`.
async fn session(capabilities: Value) -> Result<Wire, Error> {
    let (wire, init) = Wire::initialize(Everything::new(), "2025-11-25", capabilities).await?;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    Ok(wire)
}

/// The only text content of a tool result.
fn only_text(result: &Value) -> Option<&str> {
    match result["content"].as_array()?.as_slice() {
        [only] if only["type"] == "text" => only["text"].as_str(),
        _ => None,
    }
}
