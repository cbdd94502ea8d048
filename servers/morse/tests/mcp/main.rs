//! The Morse handler driven through rmcp in-process, over a `tokio::io::duplex`
//! pair: once with rmcp's own client ([`client`]) and once with raw JSON-RPC
//! lines ([`wire`]), so that a bug shared by rmcp's client and server cannot
//! hide.

mod client;
mod wire;

/// The seed's example, encoded.
const SOS_PRUEBA: &str = "... --- ... / .--. .-. ..- . -... .-";

/// The output schema every tool declares, in the seed's contract.
fn result_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": { "result": { "type": "string" } },
        "required": ["result"],
    })
}
