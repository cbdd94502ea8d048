//! Through rmcp's client: the listings match what the crate exports.

use nexo_everything::{Everything, tools};
use nexo_testkit::{Error, connect};

#[tokio::test]
async fn listings_are_complete() -> Result<(), Error> {
    let client = connect(Everything::new()).await?;
    let info = client.peer_info().ok_or("no server info")?;
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("nexo-everything")
    );
    let listed = client.list_all_tools().await?;
    assert_eq!(listed, tools(), "tools() is what tools/list returns");
    let schema = listed
        .iter()
        .find(|tool| tool.name == "json_schema_2020_12_tool")
        .ok_or("no json_schema_2020_12_tool")?;
    for keyword in [
        "$schema",
        "$defs",
        "allOf",
        "if",
        "then",
        "else",
        "additionalProperties",
    ] {
        assert!(
            schema.input_schema.contains_key(keyword),
            "{keyword} was dropped"
        );
    }

    let resources = client.list_all_resources().await?;
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
            "ui://everything/counter"
        ]
    );
    let templates = client.list_all_resource_templates().await?;
    assert_eq!(templates[0].uri_template, "test://template/{id}/data");
    let prompts = client.list_all_prompts().await?;
    assert!(
        prompts
            .iter()
            .any(|p| p.name == "test_prompt_with_arguments")
    );
    client.cancel().await?;
    Ok(())
}
