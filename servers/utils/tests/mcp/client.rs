//! Through rmcp's client: the tool list with schemas and annotations, each
//! tool, and tool errors.

use nexo_testkit::{Error, call_tool, connect, contains, only_text};
use nexo_utils::{Utils, tools};
use serde_json::json;

use crate::{SHA256_HOLA, is_rfc3339_with_offset, text_schema};

#[tokio::test]
async fn lists_the_seed_tools_with_schemas_and_annotations() -> Result<(), Error> {
    let client = connect(Utils::new()).await?;
    let info = client
        .peer_info()
        .ok_or("no server info after initialize")?;
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("nexo-utils")
    );

    let listed = client.list_all_tools().await?;
    assert_eq!(listed, tools(), "tools() is what tools/list returns");
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["calc", "echo", "sha256", "time"]);

    let string = json!({ "type": "string" });
    let calc_schema = json!({
        "type": "object",
        "properties": { "result": string, "value": { "type": "number" } },
        "required": ["result", "value"],
    });
    let time_schema = json!({
        "type": "object",
        "properties": { "result": string, "timezone": string, "offset": string },
        "required": ["result", "timezone", "offset"],
    });
    for (tool, argument, required, output, idempotent) in [
        ("calc", "expression", true, calc_schema, true),
        ("echo", "text", true, text_schema(), true),
        ("sha256", "text", true, text_schema(), true),
        ("time", "timezone", false, time_schema, false),
    ] {
        let found = listed.iter().find(|t| t.name == tool).ok_or(tool)?;
        let found = serde_json::to_value(found)?;
        let expected = json!({
            "inputSchema": { "type": "object" },
            "outputSchema": output,
            "annotations": {
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": idempotent,
                "openWorldHint": false,
            },
        });
        assert!(contains(&found, &expected), "{tool}: {found:#}");
        let input = &found["inputSchema"];
        let properties = input["properties"].as_object().ok_or(tool)?;
        assert_eq!(properties.len(), 1, "{tool} takes only `{argument}`");
        assert!(
            properties[argument]["description"].is_string(),
            "{tool}: {argument} described"
        );
        assert_eq!(properties[argument]["type"], "string", "{tool}");
        assert_eq!(properties[argument].get("default"), None, "{tool}");
        let required_names = input.get("required").cloned().unwrap_or(json!([]));
        let expected_required = if required {
            json!([argument])
        } else {
            json!([])
        };
        assert_eq!(required_names, expected_required, "{tool}");
        assert!(
            found["description"].as_str().is_some_and(|d| d.len() > 20),
            "{tool} described"
        );
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn each_tool_returns_text_and_structured_result() -> Result<(), Error> {
    let client = connect(Utils::new()).await?;

    let result = call_tool(&client, "sha256", json!({ "text": "hola" })).await?;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(only_text(&result), Some(SHA256_HOLA));
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": SHA256_HOLA }))
    );

    let result = call_tool(&client, "echo", json!({ "text": "hola, mundo ñ" })).await?;
    assert_eq!(only_text(&result), Some("hola, mundo ñ"));
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": "hola, mundo ñ" }))
    );

    let result = call_tool(&client, "calc", json!({ "expression": "2 * (3 + 4) ^ 2" })).await?;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(only_text(&result), Some("98"));
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": "98", "value": 98 }))
    );

    let result = call_tool(&client, "calc", json!({ "expression": "0.1 + 0.2" })).await?;
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": "0.3", "value": 0.3 }))
    );

    let result = call_tool(&client, "time", json!({ "timezone": "Asia/Kolkata" })).await?;
    assert_eq!(result.is_error, Some(false));
    let structured = result.structured_content.clone().ok_or("no structure")?;
    let time = only_text(&result).ok_or("no text")?;
    assert!(is_rfc3339_with_offset(time, "+05:30"), "{time}");
    assert_eq!(
        structured,
        json!({ "result": time, "timezone": "Asia/Kolkata", "offset": "+05:30" })
    );

    let result = call_tool(&client, "time", json!({})).await?;
    let time = only_text(&result).ok_or("no text")?;
    assert!(is_rfc3339_with_offset(time, "+00:00"), "{time}");
    assert_eq!(
        result.structured_content.ok_or("no structure")?["timezone"],
        "UTC"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn bad_input_is_a_tool_error_saying_what_and_where() -> Result<(), Error> {
    let client = connect(Utils::new()).await?;
    for (tool, arguments, message) in [
        (
            "calc",
            json!({ "expression": "1 / (2 - 2)" }),
            "division by zero (the `/` at position 3)",
        ),
        (
            "calc",
            json!({ "expression": "sqrt(-4)" }),
            "the square root of a negative number (-4) has no real result (the `sqrt` at \
             position 1)",
        ),
        (
            "calc",
            json!({ "expression": "10 ^ 400" }),
            "overflow: the result is too large for a 64-bit float (the `^` at position 4)",
        ),
        (
            "calc",
            json!({ "expression": "import os" }),
            "unknown name `import` at position 1 (constants: pi, e; functions: abs, ceil, \
             floor, max, min, round, sqrt)",
        ),
        (
            "calc",
            json!({ "expression": "1".repeat(1001) }),
            "the expression is 1001 characters long; the limit is 1000",
        ),
        (
            "time",
            json!({ "timezone": "Mars/Olympus" }),
            "unknown time zone `Mars/Olympus`: give an IANA time zone name such as \
             `Europe/Madrid`, `America/New_York` or `UTC`",
        ),
    ] {
        let result = call_tool(&client, tool, arguments).await?;
        assert_eq!(result.is_error, Some(true), "{tool}: {result:?}");
        assert_eq!(
            result.structured_content, None,
            "an error need not fit the output schema"
        );
        assert_eq!(only_text(&result), Some(message), "{tool}");
    }
    client.cancel().await?;
    Ok(())
}
