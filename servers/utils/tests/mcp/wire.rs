//! Raw JSON-RPC lines in and out, checking the exact shape on the wire.

use nexo_testkit::{Error, Wire, contains};
use nexo_utils::Utils;
use serde_json::{Value, json};

use crate::{SHA256_HOLA, is_rfc3339_with_offset, text_schema};

/// A pipe to a fresh [`Utils`] past `initialize` with `protocol_version`,
/// and the initialize result.
async fn initialize(protocol_version: &str) -> Result<(Wire, Value), Error> {
    Wire::initialize(Utils::new(), protocol_version, json!({})).await
}

#[tokio::test]
async fn initialize_offers_tools_only() -> Result<(), Error> {
    let (_wire, result) = initialize("2025-06-18").await?;
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "nexo-utils");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(result["instructions"].is_string());
    let capabilities = result["capabilities"]
        .as_object()
        .ok_or("no capabilities")?;
    assert_eq!(capabilities.keys().collect::<Vec<_>>(), ["tools"]);
    Ok(())
}

#[tokio::test]
async fn results_on_the_wire() -> Result<(), Error> {
    let (mut wire, _) = initialize("2025-06-18").await?;

    let list = wire.result("tools/list", json!({})).await?;
    let tools = list["tools"].as_array().ok_or("no tools")?;
    assert_eq!(tools.len(), 4);
    for tool in tools {
        assert!(
            contains(
                &tool["outputSchema"]["properties"],
                &text_schema()["properties"]
            ),
            "every result has a string `result`: {tool:#}"
        );
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool:#}");
    }

    let result = wire.call_tool("sha256", json!({ "text": "hola" })).await?;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": SHA256_HOLA }],
            "structuredContent": { "result": SHA256_HOLA },
            "isError": false,
        })
    );

    let result = wire.call_tool("echo", json!({ "text": "" })).await?;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "" }],
            "structuredContent": { "result": "" },
            "isError": false,
        })
    );

    let result = wire
        .call_tool("calc", json!({ "expression": "-2^2 + max(1, 7) % 4" }))
        .await?;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "-1" }],
            "structuredContent": { "result": "-1", "value": -1 },
            "isError": false,
        })
    );

    let result = wire
        .call_tool("time", json!({ "timezone": "europe/madrid" }))
        .await?;
    assert_eq!(result["isError"], false);
    let time = result["content"][0]["text"].as_str().ok_or("no text")?;
    let offset = result["structuredContent"]["offset"]
        .as_str()
        .ok_or("no offset")?;
    assert!(["+01:00", "+02:00"].contains(&offset), "{result:#}");
    assert!(is_rfc3339_with_offset(time, offset), "{time}");
    assert_eq!(result["structuredContent"]["timezone"], "Europe/Madrid");
    assert_eq!(result["structuredContent"]["result"], time);

    let result = wire
        .call_tool("calc", json!({ "expression": "2 +" }))
        .await?;
    assert_eq!(
        result,
        json!({
            "content": [{
                "type": "text",
                "text": "expected a number, a name or `(` at position 4, found the end of the \
                         expression",
            }],
            "isError": true,
        })
    );
    Ok(())
}

#[tokio::test]
async fn time_takes_no_arguments_at_all() -> Result<(), Error> {
    let (mut wire, _) = initialize("2025-06-18").await?;
    let result = wire.result("tools/call", json!({ "name": "time" })).await?;
    assert_eq!(result["isError"], false, "{result:#}");
    assert_eq!(result["structuredContent"]["timezone"], "UTC");
    let result = wire.call_tool("time", json!({ "timezone": null })).await?;
    assert_eq!(
        result["structuredContent"]["offset"], "+00:00",
        "{result:#}"
    );
    Ok(())
}

#[tokio::test]
async fn a_missing_or_mistyped_argument_is_a_tool_error() -> Result<(), Error> {
    let (mut wire, _) = initialize("2025-06-18").await?;
    for (tool, arguments, named) in [
        ("calc", json!({ "text": "1 + 1" }), "expression"),
        ("sha256", json!({}), "text"),
        ("echo", json!({ "text": 5 }), "string"),
        ("time", json!({ "timezone": 2 }), "string"),
    ] {
        let result = wire.call_tool(tool, arguments).await?;
        assert_eq!(result["isError"], true, "{tool}: {result:#}");
        let message = result["content"][0]["text"].as_str().ok_or("no text")?;
        assert!(message.contains(named), "{tool}: {message}");
    }
    Ok(())
}
