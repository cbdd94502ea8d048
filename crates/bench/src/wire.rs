//! The JSON-RPC messages the generator writes, by era: a 2025-era
//! `initialize` and requests in a session; 2026-07-28 requests carrying
//! their own `_meta` (protocol version, client info and capabilities) and,
//! over HTTP, the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//! headers. Built by hand (no SDK types) so that the generator adds as
//! little as possible to what it measures, from nexo-client's
//! [`nexo_client::era`], where every raw link builds them.

use nexo_client::era::{self, REVISION_2025};
use serde_json::Value;

use crate::plan::Protocol;

pub use nexo_client::era::initialized;

/// Who the generator says it is.
pub fn client_info() -> Value {
    era::client_info("nexo-bench")
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
    let params = match (protocol, params) {
        (Protocol::Stateless2026, params) => {
            era::stateless_params(params, &client_info(), capabilities)
        }
        (Protocol::Sessions2025, Value::Null) => Value::Object(Default::default()),
        (Protocol::Sessions2025, params) => params,
    };
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2025-era `initialize`, declaring `capabilities`.
pub fn initialize(id: u64, capabilities: &Value) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": era::initialize_params(REVISION_2025, &client_info(), capabilities),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            era::REVISION_2026
        );
        let plain = request(3, "ping", Value::Null, Protocol::Sessions2025, &json!({}));
        assert_eq!(plain["params"], json!({}));
    }
}
