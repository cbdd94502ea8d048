//! The JSON-RPC messages the generator writes, by era: a 2025-era
//! `initialize` and requests in a session; 2026-07-28 requests carrying
//! their own `_meta` (protocol version, client info and capabilities) and,
//! over HTTP, the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//! headers. Built by hand (no SDK types) so that the generator adds as
//! little as possible to what it measures.

use serde_json::{Value, json};

use crate::plan::Protocol;

/// The revision a 2025-era session asks for.
pub const REVISION_2025: &str = "2025-11-25";
/// The stateless revision.
pub const REVISION_2026: &str = "2026-07-28";

/// Who the generator says it is.
pub fn client_info() -> Value {
    json!({"name": "nexo-bench", "version": env!("CARGO_PKG_VERSION")})
}

/// A request: `id`, `method`, `params`, with the 2026-07-28 `_meta` added
/// to the params when the era asks for it (declaring `capabilities`).
pub fn request(
    id: u64,
    method: &str,
    params: Value,
    protocol: Protocol,
    capabilities: &Value,
) -> Value {
    let mut params = match params {
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    if protocol == Protocol::Stateless2026
        && let Value::Object(object) = &mut params
    {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(meta) = meta {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".to_owned(),
                Value::from(REVISION_2026),
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".to_owned(),
                client_info(),
            );
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".to_owned(),
                capabilities.clone(),
            );
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2025-era `initialize`, declaring `capabilities`.
pub fn initialize(id: u64, capabilities: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": REVISION_2025,
            "capabilities": capabilities,
            "clientInfo": client_info(),
        }
    })
}

/// The notification that ends a 2025-era handshake.
pub fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stateless_requests_carry_meta() {
        let message = request(
            3,
            "tools/call",
            json!({"name": "echo"}),
            Protocol::Stateless2026,
            &json!({}),
        );
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            REVISION_2026
        );
        let plain = request(3, "ping", Value::Null, Protocol::Sessions2025, &json!({}));
        assert_eq!(plain["params"], json!({}));
    }
}
