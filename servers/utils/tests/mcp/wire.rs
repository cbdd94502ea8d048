//! Raw JSON-RPC lines in and out, checking the exact shape on the wire.

use std::time::Duration;

use nexo_utils::Utils;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

use crate::{SHA256_HOLA, contains, is_rfc3339_with_offset, text_schema};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The client end of a pipe to a [`Utils`], spoken line by line.
struct Wire {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

impl Wire {
    /// Connects and goes through `initialize` with `protocol_version`,
    /// returning the initialize result.
    async fn initialize(protocol_version: &str) -> Result<(Self, Value), Error> {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(server) = Utils::new().serve(server_io).await {
                let _ = server.waiting().await;
            }
        });
        let (reader, writer) = tokio::io::split(client_io);
        let mut wire = Self {
            reader: BufReader::new(reader),
            writer,
        };
        let result = wire
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": protocol_version,
                    "capabilities": {},
                    "clientInfo": { "name": "wire-test", "version": "0" },
                }),
            )
            .await?;
        wire.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok((wire, result))
    }

    async fn send(&mut self, message: Value) -> Result<(), Error> {
        let mut line = serde_json::to_vec(&message)?;
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        Ok(())
    }

    /// Sends a request and returns the `result` of its response.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Result<Value, Error> {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line)).await??;
        let mut response: Value = serde_json::from_str(&line)?;
        if response["id"] != json!(id) {
            return Err(format!("expected the response to {id}, got {line}").into());
        }
        Ok(response
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| format!("no result in {line}"))?)
    }

    async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Result<Value, Error> {
        self.request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }
}

#[tokio::test]
async fn initialize_offers_tools_only() -> Result<(), Error> {
    let (_wire, result) = Wire::initialize("2025-06-18").await?;
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
    let (mut wire, _) = Wire::initialize("2025-06-18").await?;

    let list = wire.request(1, "tools/list", json!({})).await?;
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

    let result = wire.call(2, "sha256", json!({ "text": "hola" })).await?;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": SHA256_HOLA }],
            "structuredContent": { "result": SHA256_HOLA },
            "isError": false,
        })
    );

    let result = wire.call(3, "echo", json!({ "text": "" })).await?;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "" }],
            "structuredContent": { "result": "" },
            "isError": false,
        })
    );

    let result = wire
        .call(4, "calc", json!({ "expression": "-2^2 + max(1, 7) % 4" }))
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
        .call(5, "time", json!({ "timezone": "europe/madrid" }))
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

    let result = wire.call(6, "calc", json!({ "expression": "2 +" })).await?;
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
    let (mut wire, _) = Wire::initialize("2025-06-18").await?;
    let result = wire
        .request(1, "tools/call", json!({ "name": "time" }))
        .await?;
    assert_eq!(result["isError"], false, "{result:#}");
    assert_eq!(result["structuredContent"]["timezone"], "UTC");
    let result = wire.call(2, "time", json!({ "timezone": null })).await?;
    assert_eq!(
        result["structuredContent"]["offset"], "+00:00",
        "{result:#}"
    );
    Ok(())
}

#[tokio::test]
async fn a_missing_or_mistyped_argument_is_a_tool_error() -> Result<(), Error> {
    let (mut wire, _) = Wire::initialize("2025-06-18").await?;
    for (id, tool, arguments, named) in [
        (1, "calc", json!({ "text": "1 + 1" }), "expression"),
        (2, "sha256", json!({}), "text"),
        (3, "echo", json!({ "text": 5 }), "string"),
        (4, "time", json!({ "timezone": 2 }), "string"),
    ] {
        let result = wire.call(id, tool, arguments).await?;
        assert_eq!(result["isError"], true, "{tool}: {result:#}");
        let message = result["content"][0]["text"].as_str().ok_or("no text")?;
        assert!(message.contains(named), "{tool}: {message}");
    }
    Ok(())
}
