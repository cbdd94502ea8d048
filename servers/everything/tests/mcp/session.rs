//! A 2025-11-25 session: content of every kind, log and progress
//! notifications, sampling and elicitation requests sent to the client,
//! resources and subscriptions, list-change announcements.

use nexo_testkit::Error;
use serde_json::{Value, json};

use crate::{only_text, session};

fn call(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

#[tokio::test]
async fn content_tools_answer_with_each_content_type() -> Result<(), Error> {
    let mut wire = session(json!({})).await?;
    let text = wire
        .request("tools/call", call("test_simple_text", json!({})))
        .await?;
    assert_eq!(
        only_text(text.result()?),
        Some("This is a simple text response for testing.")
    );
    let image = wire
        .request("tools/call", call("test_image_content", json!({})))
        .await?;
    assert_eq!(image.result()?["content"][0]["type"], "image");
    assert_eq!(image.result()?["content"][0]["mimeType"], "image/png");
    let audio = wire
        .request("tools/call", call("test_audio_content", json!({})))
        .await?;
    assert_eq!(audio.result()?["content"][0]["mimeType"], "audio/wav");
    let mixed = wire
        .request("tools/call", call("test_multiple_content_types", json!({})))
        .await?;
    let kinds: Vec<&Value> = mixed.result()?["content"]
        .as_array()
        .ok_or("no content")?
        .iter()
        .map(|block| &block["type"])
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let resource = &mixed.result()?["content"][2]["resource"];
    assert_eq!(resource["uri"], "test://mixed-content-resource");
    assert_eq!(resource["mimeType"], "application/json");
    let error = wire
        .request("tools/call", call("test_error_handling", json!({})))
        .await?;
    assert_eq!(error.result()?["isError"], true);
    Ok(())
}

#[tokio::test]
async fn logging_and_progress_arrive_before_the_result() -> Result<(), Error> {
    let mut wire = session(json!({})).await?;
    let logged = wire
        .request("tools/call", call("test_tool_with_logging", json!({})))
        .await?;
    assert_eq!(logged.notifications(), ["notifications/message"; 3]);
    assert_eq!(logged.before[0]["params"]["level"], "info");

    let mut params = call("test_tool_with_progress", json!({}));
    params["_meta"] = json!({ "progressToken": "tok-1" });
    let progressed = wire.request("tools/call", params).await?;
    assert_eq!(progressed.notifications(), ["notifications/progress"; 3]);
    let steps: Vec<&Value> = progressed
        .before
        .iter()
        .map(|message| &message["params"]["progress"])
        .collect();
    assert_eq!(steps, [&json!(0.0), &json!(50.0), &json!(100.0)]);
    assert_eq!(progressed.before[2]["params"]["progressToken"], "tok-1");
    assert_eq!(only_text(progressed.result()?), Some("tok-1"));
    Ok(())
}

#[tokio::test]
async fn sampling_and_elicitation_go_to_the_client() -> Result<(), Error> {
    let mut wire = session(json!({ "sampling": {}, "elicitation": { "form": {} } })).await?;
    let sampled = wire
        .request_answering(
            "tools/call",
            call("test_sampling", json!({ "prompt": "Capital of France?" })),
            |method, params| {
                assert_eq!(method, "sampling/createMessage");
                assert_eq!(
                    params["messages"][0]["content"]["text"],
                    "Capital of France?"
                );
                json!({
                    "role": "assistant",
                    "content": { "type": "text", "text": "Paris" },
                    "model": "test-model",
                    "stopReason": "endTurn"
                })
            },
        )
        .await?;
    assert_eq!(only_text(sampled.result()?), Some("LLM response: Paris"));

    let elicited = wire
        .request_answering(
            "tools/call",
            call("test_elicitation_sep1330_enums", json!({})),
            |method, params| {
                assert_eq!(method, "elicitation/create");
                let properties = &params["requestedSchema"]["properties"];
                assert_eq!(properties["legacyEnum"]["enumNames"][0], "Option One");
                assert_eq!(properties["titledSingle"]["oneOf"][1]["const"], "value2");
                assert_eq!(
                    properties["titledMulti"]["items"]["anyOf"][2]["title"],
                    "Third Choice"
                );
                json!({ "action": "accept", "content": { "untitledSingle": "option1" } })
            },
        )
        .await?;
    assert_eq!(
        only_text(elicited.result()?),
        Some(r#"Elicitation completed: action=accept, content={"untitledSingle":"option1"}"#)
    );
    Ok(())
}

#[tokio::test]
async fn resources_templates_and_subscriptions() -> Result<(), Error> {
    let mut wire = session(json!({})).await?;
    let read = wire
        .request(
            "resources/read",
            json!({ "uri": "test://template/42/data" }),
        )
        .await?;
    let contents = &read.result()?["contents"][0];
    assert_eq!(contents["uri"], "test://template/42/data");
    let body: Value = serde_json::from_str(contents["text"].as_str().ok_or("no text")?)?;
    assert_eq!(
        body,
        json!({ "id": "42", "templateTest": true, "data": "Data for ID: 42" })
    );

    let missing = wire
        .request("resources/read", json!({ "uri": "test://nowhere" }))
        .await?;
    assert_eq!(
        missing.error_code(),
        Some(-32002),
        "2025 keeps RESOURCE_NOT_FOUND"
    );
    assert_eq!(missing.response["error"]["data"]["uri"], "test://nowhere");

    let subscribed = wire
        .request(
            "resources/subscribe",
            json!({ "uri": "test://watched-resource" }),
        )
        .await?;
    assert_eq!(subscribed.result()?, &json!({}));
    let refused = wire
        .request("resources/subscribe", json!({ "uri": "test://nowhere" }))
        .await?;
    assert!(refused.error_code().is_some());
    Ok(())
}

#[tokio::test]
async fn list_changes_are_announced_to_the_session() -> Result<(), Error> {
    let mut wire = session(json!({})).await?;
    let tools = wire
        .request("tools/call", call("test_trigger_tool_change", json!({})))
        .await?;
    assert_eq!(tools.notifications(), ["notifications/tools/list_changed"]);
    let prompts = wire
        .request("tools/call", call("test_trigger_prompt_change", json!({})))
        .await?;
    assert_eq!(
        prompts.notifications(),
        ["notifications/prompts/list_changed"]
    );
    Ok(())
}

#[tokio::test]
async fn input_required_is_refused_to_a_2025_session() -> Result<(), Error> {
    let mut wire = session(json!({ "elicitation": {} })).await?;
    let refused = wire
        .request(
            "tools/call",
            call("test_input_required_result_elicitation", json!({})),
        )
        .await?;
    assert!(refused.error_code().is_some(), "{:?}", refused.response);
    Ok(())
}

#[tokio::test]
async fn issue_15_an_unknown_tool_is_not_found_and_the_tools_are_named() -> Result<(), Error> {
    let mut wire = session(json!({})).await?;
    let unknown = wire
        .request("tools/call", call("test_no_such_tool", json!({})))
        .await?;
    assert_eq!(unknown.error_code(), Some(-32602), "{:?}", unknown.response);
    let error = &unknown.response["error"];
    let message = error["message"].as_str().ok_or("no message")?;
    assert!(
        message.starts_with("tool not found: `test_no_such_tool`"),
        "the wording of rmcp's routers, which the other servers use: {message}"
    );
    assert!(message.contains("test_simple_text"), "{message}");
    let available = error["data"]["available"].as_array().ok_or("no list")?;
    assert!(
        available.contains(&json!("test_tool_with_progress")),
        "{error}"
    );
    Ok(())
}
