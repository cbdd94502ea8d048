//! Raw JSON-RPC lines in and out, checking the exact shape on the wire.

use nexo_morse::Morse;
use nexo_testkit::{Error, Wire, contains};
use serde_json::{Value, json};

use crate::{SOS_PRUEBA, result_schema};

/// A pipe to a fresh [`Morse`] past `initialize` with `protocol_version`,
/// and the initialize result.
async fn initialize(protocol_version: &str) -> Result<(Wire, Value), Error> {
    Wire::initialize(Morse::new(), protocol_version, json!({})).await
}

#[tokio::test]
async fn initialize_offers_tools_only() -> Result<(), Error> {
    let (_wire, result) = initialize("2025-06-18").await?;
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "nexo-morse");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(result["instructions"].is_string());
    let capabilities = result["capabilities"]
        .as_object()
        .ok_or("no capabilities")?;
    assert_eq!(capabilities.keys().collect::<Vec<_>>(), ["tools"]);
    Ok(())
}

#[tokio::test]
async fn results_on_the_wire_match_the_seed() -> Result<(), Error> {
    let (mut wire, _) = initialize("2025-06-18").await?;

    let list = wire.result("tools/list", json!({})).await?;
    let tools = list["tools"].as_array().ok_or("no tools")?;
    for tool in tools {
        assert!(
            contains(&tool["outputSchema"], &result_schema()),
            "{tool:#}"
        );
    }

    let result = wire
        .call_tool("morse", json!({ "texto": "SOS prueba" }))
        .await?;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": SOS_PRUEBA }],
            "structuredContent": { "result": SOS_PRUEBA },
            "isError": false,
        })
    );

    let result = wire.call_tool("morse", json!({ "texto": "a#" })).await?;
    assert_eq!(result["isError"], true);
    assert_eq!(result.get("structuredContent"), None);
    let message = result["content"][0]["text"].as_str().ok_or("no text")?;
    assert!(message.starts_with("cannot encode: '#'"), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_missing_argument_is_a_tool_error() -> Result<(), Error> {
    let (mut wire, _) = initialize("2025-06-18").await?;
    let result = wire.call_tool("demorse", json!({ "texto": "..." })).await?;
    assert_eq!(result["isError"], true, "{result:#}");
    let message = result["content"][0]["text"].as_str().ok_or("no text")?;
    assert!(message.contains("codigo"), "{message}");
    Ok(())
}
