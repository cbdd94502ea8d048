//! The tools: their list, as `tools/list` returns it, and the bodies of
//! those that answer at once or talk to the client while they run (content
//! of every kind, log messages, progress, and, on a 2025-era session,
//! sampling and elicitation requests sent to the client). The tools that
//! answer with an `input_required` result live in [`crate::mrtr`].

#![expect(
    deprecated,
    reason = "logging, sampling and roots are deprecated by SEP-2577 but still part of the \
              2025 revisions this fixture serves"
)]

use std::sync::LazyLock;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    CreateMessageRequestParams, ElicitRequestParams, JsonObject, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ResourceContents, SamplingMessage,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use crate::app;
use crate::fixtures;
use crate::mrtr;
use crate::server::{Change, Everything};

/// The name the fixture's log messages carry.
const LOGGER: &str = "nexo-everything";
/// The pause between a tool's log or progress messages.
const STEP: Duration = Duration::from_millis(50);

/// Every tool, in a fixed order.
pub static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let empty = || json!({ "type": "object", "properties": {} });
    let mut tools = vec![
        tool("test_simple_text", "Answers with one text content", empty()),
        tool(
            "test_image_content",
            "Answers with one PNG image content",
            empty(),
        ),
        tool(
            "test_audio_content",
            "Answers with one WAV audio content",
            empty(),
        ),
        tool(
            "test_embedded_resource",
            "Answers with one embedded text resource",
            empty(),
        ),
        tool(
            "test_multiple_content_types",
            "Answers with text, image and embedded resource contents",
            empty(),
        ),
        tool(
            "test_tool_with_logging",
            "Sends three log messages while it runs",
            empty(),
        ),
        tool(
            "test_logging_tool",
            "Sends a log message, only when the request asked for log messages",
            empty(),
        ),
        tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100 to the request's progress token",
            empty(),
        ),
        tool(
            "test_error_handling",
            "Always fails with a tool error",
            empty(),
        ),
        tool(
            "test_sampling",
            "Asks the client's model to answer a prompt (a 2025-era session)",
            json!({
                "type": "object",
                "properties": { "prompt": { "type": "string", "description": "The prompt to send to the model" } },
                "required": ["prompt"]
            }),
        ),
        tool(
            "test_elicitation",
            "Asks the user for a response (a 2025-era session)",
            json!({
                "type": "object",
                "properties": { "message": { "type": "string", "description": "The message to show the user" } },
                "required": ["message"]
            }),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user to fill a form whose fields all have defaults (SEP-1034)",
            empty(),
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Asks the user to pick from every enum form of SEP-1330",
            empty(),
        ),
        tool(
            "json_schema_2020_12_tool",
            "Takes arguments described with JSON Schema 2020-12 keywords (SEP-1613, SEP-2106)",
            fixtures::json_schema_2020_12(),
        ),
        tool(
            "test_header_echo",
            "Echoes its `region` argument, which clients also send as the Mcp-Param-Region header (SEP-2243)",
            json!({
                "type": "object",
                "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
                "required": ["region"]
            }),
        ),
        tool(
            "test_trigger_tool_change",
            "Announces that the tool list changed",
            empty(),
        ),
        tool(
            "test_trigger_prompt_change",
            "Announces that the prompt list changed",
            empty(),
        ),
    ];
    tools.extend(app::tools());
    tools.extend(
        mrtr::TOOLS
            .iter()
            .map(|(name, description)| tool(name, description, empty())),
    );
    tools
});

/// The tools [`Everything`] offers, as `tools/list` returns them.
pub fn list() -> Vec<Tool> {
    TOOLS.clone()
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let schema = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, schema)
}

/// The error for a tool this server does not have: rmcp's routers' wording
/// (`tool not found`, which the other bundled servers give), then the name
/// asked for and the tools there are, in the message and in `data`.
pub fn not_found(name: &str) -> McpError {
    let available: Vec<&str> = TOOLS.iter().map(|tool| tool.name.as_ref()).collect();
    McpError::invalid_params(
        format!(
            "tool not found: `{name}`; this server's tools are {}",
            available.join(", ")
        ),
        Some(json!({ "name": name, "available": available })),
    )
}

/// Runs the tool `request` names.
pub async fn call(
    server: &Everything,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let text = |text: &str| Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
    let embedded = |uri: &str, mime: &str, text: &str| {
        ContentBlock::resource(ResourceContents::text(text, uri).with_mime_type(mime))
    };
    match request.name.as_ref() {
        "test_simple_text" => text(fixtures::SIMPLE_TEXT),
        "test_image_content" => Ok(CallToolResult::success(vec![ContentBlock::image(
            fixtures::PNG,
            "image/png",
        )])
        .into()),
        "test_audio_content" => Ok(CallToolResult::success(vec![ContentBlock::audio(
            fixtures::WAV,
            "audio/wav",
        )])
        .into()),
        "test_embedded_resource" => Ok(CallToolResult::success(vec![embedded(
            "test://embedded-resource",
            "text/plain",
            fixtures::EMBEDDED_TEXT,
        )])
        .into()),
        "test_multiple_content_types" => Ok(CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(fixtures::PNG, "image/png"),
            embedded(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ])
        .into()),
        "test_tool_with_logging" => {
            for (i, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                log(&context, LoggingLevel::Info, message).await;
            }
            text("Tool with logging executed successfully")
        }
        "test_logging_tool" => {
            log(&context, LoggingLevel::Info, "Logging tool ran").await;
            text("Logging evaluated")
        }
        "test_tool_with_progress" => progress(&context).await,
        "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
        .into()),
        "test_sampling" => sampling(&request, &context).await,
        "test_elicitation" => {
            let message = string_argument(&request, "message")?;
            elicit(
                &context,
                &message,
                elicitation_schema("response"),
                "User response",
            )
            .await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "User name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User age", "default": 30 },
                    "score": { "type": "number", "description": "User score", "default": 95.5 },
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active"
                    },
                    "verified": { "type": "boolean", "description": "Verification status", "default": true }
                },
                "required": []
            });
            elicit(
                &context,
                "Please review and update the form fields with defaults",
                schema,
                "Elicitation completed",
            )
            .await
        }
        "test_elicitation_sep1330_enums" => {
            let options = |titles: [&str; 3]| {
                json!([
                    { "const": "value1", "title": titles[0] },
                    { "const": "value2", "title": titles[1] },
                    { "const": "value3", "title": titles[2] }
                ])
            };
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Select one option",
                        "enum": ["option1", "option2", "option3"]
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": options(["First Option", "Second Option", "Third Option"])
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Select multiple options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": { "anyOf": options(["First Choice", "Second Choice", "Third Choice"]) }
                    }
                },
                "required": []
            });
            elicit(
                &context,
                "Please select options from the enum fields",
                schema,
                "Elicitation completed",
            )
            .await
        }
        "json_schema_2020_12_tool" => {
            let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
            text(&format!(
                "JSON Schema 2020-12 tool called with: {arguments}"
            ))
        }
        "test_header_echo" => {
            let region = string_argument(&request, "region")?;
            text(&format!("region: {region}"))
        }
        "test_trigger_tool_change" => {
            server.announce(Change::Tools, &context).await;
            text("Tool list change announced")
        }
        "test_trigger_prompt_change" => {
            server.announce(Change::Prompts, &context).await;
            text("Prompt list change announced")
        }
        name => match app::call(&request, &context) {
            Some(outcome) => outcome,
            None => mrtr::call(server, name, &request, &context).await,
        },
    }
}

/// Whether `context` is a request of the 2026-07-28 era, which carries its
/// own protocol version (and log level) in `_meta` instead of a session.
pub fn is_per_request(context: &RequestContext<RoleServer>) -> bool {
    context.meta.protocol_version().is_some_and(|version| {
        version.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
    })
}

/// Sends a log message to the client, if it wants one: a 2025-era session
/// always does (this fixture keeps no per-session level), a 2026-07-28
/// request only when its `_meta` names a level at or below `level`.
async fn log(context: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
    if is_per_request(context) {
        let Some(threshold) = context.meta.log_level() else {
            return;
        };
        if (level as u8) < (threshold as u8) {
            return;
        }
    }
    let params =
        LoggingMessageNotificationParam::new(level, Value::from(message)).with_logger(LOGGER);
    if let Err(error) = context.peer.notify_logging_message(params).await {
        tracing::debug!(%error, "cannot send a log message");
    }
}

/// `test_tool_with_progress`: three progress notifications, then the token
/// (or `0` without one) as text.
async fn progress(context: &RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
    let token = context.meta.get_progress_token();
    if let Some(token) = &token {
        for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            let params = ProgressNotificationParam::new(token.clone(), done)
                .with_total(100.0)
                .with_message(format!("Completed step {done} of 100"));
            if let Err(error) = context.peer.notify_progress(params).await {
                tracing::debug!(%error, "cannot send a progress notification");
            }
        }
    }
    let shown = token.map_or_else(|| "0".to_owned(), |token| token.0.to_string());
    Ok(CallToolResult::success(vec![ContentBlock::text(shown)]).into())
}

/// `test_sampling`: asks the client's model, over the session.
async fn sampling(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let prompt = string_argument(request, "prompt")?;
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    let text = match context.peer.create_message(params).await {
        Ok(result) => {
            let answer = result
                .message
                .content
                .into_vec()
                .into_iter()
                .find_map(|block| block.as_text().map(|text| text.text.clone()))
                .unwrap_or_else(|| "No response".to_owned());
            format!("LLM response: {answer}")
        }
        Err(error) => format!("Sampling not supported or error: {error}"),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

/// A form with one required string field.
fn elicitation_schema(field: &str) -> Value {
    let mut properties = JsonObject::new();
    properties.insert(
        field.to_owned(),
        json!({ "type": "string", "description": "User's response" }),
    );
    json!({ "type": "object", "properties": properties, "required": [field] })
}

/// Asks the user to fill `schema`, over the session, and reports the answer
/// as `<prefix>: action=..., content=...`.
async fn elicit(
    context: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    prefix: &str,
) -> Result<CallToolResponse, McpError> {
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .map_err(|error| McpError::internal_error(format!("bad elicitation form: {error}"), None))?;
    let text = match context.peer.create_elicitation(params).await {
        Ok(result) => {
            let action = serde_json::to_value(result.action).unwrap_or(Value::Null);
            let action = action.as_str().unwrap_or("unknown").to_owned();
            let content = result.content.unwrap_or_else(|| json!({}));
            format!("{prefix}: action={action}, content={content}")
        }
        Err(error) => format!("Elicitation not supported or error: {error}"),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

/// A required string argument, or an invalid-params error naming it.
fn string_argument(request: &CallToolRequestParams, name: &str) -> Result<String, McpError> {
    request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get(name))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            McpError::invalid_params(format!("`{name}` must be a string argument"), None)
        })
}
