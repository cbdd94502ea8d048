//! Through rmcp's client: the tool list, a conversion, and a tool error.

use nexo_morse::{Morse, tools};
use nexo_testkit::{Error, call_tool, connect, contains, only_text};
use serde_json::json;

use crate::{SOS_PRUEBA, result_schema};

#[tokio::test]
async fn lists_the_seed_tools_with_schemas_and_annotations() -> Result<(), Error> {
    let client = connect(Morse::new()).await?;
    let info = client
        .peer_info()
        .ok_or("no server info after initialize")?;
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("nexo-morse")
    );

    let listed = client.list_all_tools().await?;
    assert_eq!(listed, tools(), "tools() is what tools/list returns");
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["demorse", "echo", "morse"]);

    for (tool, argument) in [("echo", "texto"), ("morse", "texto"), ("demorse", "codigo")] {
        let found = listed.iter().find(|t| t.name == tool).ok_or(tool)?;
        let found = serde_json::to_value(found)?;
        let expected = json!({
            "inputSchema": {
                "type": "object",
                "properties": { argument: { "type": "string" } },
                "required": [argument],
            },
            "outputSchema": result_schema(),
            "annotations": {
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false,
            },
        });
        assert!(contains(&found, &expected), "{tool}: {found:#}");
        let properties = found["inputSchema"]["properties"].as_object().ok_or(tool)?;
        assert_eq!(properties.len(), 1, "{tool} takes only `{argument}`");
        assert!(
            properties[argument]["description"].is_string(),
            "{tool}: {argument} described"
        );
        assert!(
            found["description"].as_str().is_some_and(|d| d.len() > 20),
            "{tool} described"
        );
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn morse_returns_text_and_structured_result() -> Result<(), Error> {
    let client = connect(Morse::new()).await?;
    let result = call_tool(&client, "morse", json!({ "texto": "SOS prueba" })).await?;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(only_text(&result), Some(SOS_PRUEBA));
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": SOS_PRUEBA }))
    );

    let result = call_tool(
        &client,
        "demorse",
        json!({ "codigo": SOS_PRUEBA.replace('/', "|") }),
    )
    .await?;
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": "SOS PRUEBA" }))
    );

    let result = call_tool(&client, "echo", json!({ "texto": "hola" })).await?;
    assert_eq!(only_text(&result), Some("echo: hola"));
    assert_eq!(
        result.structured_content,
        Some(json!({ "result": "echo: hola" }))
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn unconvertible_input_is_a_tool_error_naming_it() -> Result<(), Error> {
    let client = connect(Morse::new()).await?;
    let result = call_tool(&client, "morse", json!({ "texto": "5 € #1" })).await?;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.structured_content, None,
        "an error need not fit the output schema"
    );
    let message = only_text(&result).ok_or("no text content")?;
    assert!(
        message.starts_with("cannot encode: '€', '#' ("),
        "{message}"
    );

    let result = call_tool(&client, "demorse", json!({ "codigo": "... ........ ..." })).await?;
    assert_eq!(result.is_error, Some(true));
    let message = only_text(&result).ok_or("no text content")?;
    assert!(
        message.starts_with("cannot decode: '........' ("),
        "{message}"
    );
    client.cancel().await?;
    Ok(())
}
