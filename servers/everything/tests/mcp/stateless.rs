//! 2026-07-28 per-request messages: Multi Round-Trip Requests with sealed
//! `requestState`, capability checks, log levels, resource errors.

use nexo_everything::Everything;
use nexo_testkit::{Error, Exchange, Wire};
use serde_json::{Value, json};

use crate::only_text;

/// The `_meta` every 2026-07-28 request carries, with `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "wire-test", "version": "0" }
    })
}

fn all_capabilities() -> Value {
    json!({ "sampling": {}, "elicitation": {}, "roots": {} })
}

/// Calls `tool` with `extra` params merged in, declaring every capability.
async fn call(wire: &mut Wire, tool: &str, extra: Value) -> Result<Exchange, Error> {
    let mut params = json!({ "name": tool, "arguments": {}, "_meta": meta(all_capabilities()) });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    wire.request("tools/call", params).await
}

fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

#[tokio::test]
async fn elicitation_takes_two_rounds() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    let first = call(
        &mut wire,
        "test_input_required_result_elicitation",
        json!({}),
    )
    .await?;
    let first = first.result()?;
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(
        first["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = first["requestState"].as_str().ok_or("no requestState")?;

    let second = call(
        &mut wire,
        "test_input_required_result_elicitation",
        json!({
            "inputResponses": { "user_name": accept(json!({ "name": "Alice" })), "extra": 1 },
            "requestState": state
        }),
    )
    .await?;
    assert_eq!(second.result()?["resultType"], "complete");
    assert_eq!(only_text(second.result()?), Some("Hello, Alice!"));
    Ok(())
}

#[tokio::test]
async fn malformed_or_missing_answers_are_asked_again() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    for responses in [
        json!({ "user_name": 12345 }),
        json!(null),
        json!({ "wrong": accept(json!({})) }),
    ] {
        let again = call(
            &mut wire,
            "test_input_required_result_elicitation",
            json!({ "inputResponses": responses }),
        )
        .await?;
        assert_eq!(
            again.result()?["resultType"],
            "input_required",
            "{responses}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_tampered_request_state_is_refused() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    let first = call(
        &mut wire,
        "test_input_required_result_tampered_state",
        json!({}),
    )
    .await?;
    let state = first.result()?["requestState"]
        .as_str()
        .ok_or("no requestState")?;
    let answers = json!({ "confirm": accept(json!({ "ok": true })) });

    let tampered = call(
        &mut wire,
        "test_input_required_result_tampered_state",
        json!({ "inputResponses": answers, "requestState": format!("{state}-TAMPERED") }),
    )
    .await?;
    assert_eq!(tampered.error_code(), Some(-32602));

    // A state sealed for one tool is no good for another.
    let replayed = call(
        &mut wire,
        "test_input_required_result_request_state",
        json!({ "inputResponses": answers, "requestState": state }),
    )
    .await?;
    assert_eq!(replayed.error_code(), Some(-32602));

    let honest = call(
        &mut wire,
        "test_input_required_result_tampered_state",
        json!({ "inputResponses": answers, "requestState": state }),
    )
    .await?;
    assert_eq!(honest.result()?["resultType"], "complete");
    Ok(())
}

#[tokio::test]
async fn multi_round_carries_the_name_in_its_state() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    let tool = "test_input_required_result_multi_round";
    let first = call(&mut wire, tool, json!({})).await?;
    let state = first.result()?["requestState"].clone();
    let unanswered = call(&mut wire, tool, json!({ "requestState": state })).await?;
    let unanswered = unanswered.result()?;
    assert!(
        unanswered["inputRequests"].get("step1").is_some(),
        "round 1 without an answer is asked again: {unanswered}"
    );
    let second = call(
        &mut wire,
        tool,
        json!({ "inputResponses": { "step1": accept(json!({ "name": "Ada" })) }, "requestState": state }),
    )
    .await?;
    let second = second.result()?;
    assert_eq!(second["resultType"], "input_required");
    assert!(second["inputRequests"].get("step2").is_some());
    let again = call(
        &mut wire,
        tool,
        json!({ "requestState": second["requestState"] }),
    )
    .await?;
    let again = again.result()?;
    assert!(
        again["inputRequests"].get("step2").is_some(),
        "round 2 without an answer is asked again: {again}"
    );
    let third = call(
        &mut wire,
        tool,
        json!({
            "inputResponses": { "step2": accept(json!({ "color": "green" })) },
            "requestState": again["requestState"]
        }),
    )
    .await?;
    assert_eq!(
        only_text(third.result()?),
        Some("Multi-round complete for Ada who likes green")
    );
    Ok(())
}

#[tokio::test]
async fn capabilities_the_client_lacks_are_named() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    let refused = wire
        .request(
            "tools/call",
            json!({ "name": "test_missing_capability", "arguments": {}, "_meta": meta(json!({})) }),
        )
        .await?;
    assert_eq!(refused.error_code(), Some(-32021));
    assert_eq!(
        refused.response["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );

    let sampling_only = wire
        .request(
            "tools/call",
            json!({
                "name": "test_input_required_result_capabilities",
                "arguments": {},
                "_meta": meta(json!({ "sampling": {} }))
            }),
        )
        .await?;
    let requests = sampling_only.result()?["inputRequests"]
        .as_object()
        .ok_or("no inputRequests")?;
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, ["sample_input"]);
    Ok(())
}

#[tokio::test]
async fn log_messages_only_with_a_log_level() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    let silent = call(&mut wire, "test_logging_tool", json!({})).await?;
    assert!(silent.notifications().is_empty(), "{:?}", silent.before);

    let mut with_level = meta(json!({}));
    with_level["io.modelcontextprotocol/logLevel"] = json!("debug");
    let logged = wire
        .request(
            "tools/call",
            json!({ "name": "test_logging_tool", "arguments": {}, "_meta": with_level }),
        )
        .await?;
    assert_eq!(logged.notifications(), ["notifications/message"]);
    Ok(())
}

#[tokio::test]
async fn prompts_and_resources_in_the_new_era() -> Result<(), Error> {
    let mut wire = Wire::open(Everything::new());
    let missing = wire
        .request(
            "resources/read",
            json!({ "uri": "test://nowhere", "_meta": meta(json!({})) }),
        )
        .await?;
    assert_eq!(missing.error_code(), Some(-32602));
    assert_eq!(missing.response["error"]["data"]["uri"], "test://nowhere");

    let read = wire
        .request(
            "resources/read",
            json!({ "uri": "test://static-text", "_meta": meta(json!({})) }),
        )
        .await?;
    assert!(
        read.result()?.get("ttlMs").is_some(),
        "cache hints are filled in"
    );

    let asked = wire
        .request(
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt", "_meta": meta(all_capabilities()) }),
        )
        .await?;
    assert_eq!(asked.result()?["resultType"], "input_required");
    let rendered = wire
        .request(
            "prompts/get",
            json!({
                "name": "test_input_required_result_prompt",
                "_meta": meta(all_capabilities()),
                "inputResponses": { "user_context": accept(json!({ "context": "tests" })) }
            }),
        )
        .await?;
    assert_eq!(
        rendered.result()?["messages"][0]["content"]["text"],
        "Prompt with context: tests"
    );
    Ok(())
}
