//! An MCP App (the `io.modelcontextprotocol/ui` extension, 2026-01-26) for
//! hosts to test against: `test_app` shows a counter in the interface
//! `ui://everything/counter`, whose button calls `test_app_add`, a tool
//! for the app alone (its visibility lacks `model`). A host that does not
//! draw apps gets the count as text.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, MetaObject,
    Resource, ResourceContents, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

/// The extension's identifier.
const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The type of an app's document.
pub const MIME: &str = "text/html;profile=mcp-app";
/// The counter's interface.
pub const URI: &str = "ui://everything/counter";

/// The app's tools: the counter (for the model and the app) and its
/// increment (for the app alone).
pub fn tools() -> Vec<Tool> {
    let schema = |schema: Value| match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    let count = json!({
        "type": "object",
        "properties": { "count": { "type": "integer", "description": "The count to start from", "default": 0 } }
    });
    let mut show = Tool::new(
        "test_app",
        "Shows a counter in an MCP App; hosts that draw no apps get the count as text",
        schema(count.clone()),
    );
    show.meta = Some(ui_meta(&["model", "app"]));
    show.annotations = Some(ToolAnnotations::new().read_only(true).open_world(false));
    let mut add = Tool::new(
        "test_app_add",
        "Adds one to the counter (called by the counter's app, never offered to the model)",
        schema(count),
    );
    add.meta = Some(ui_meta(&["app"]));
    vec![show, add]
}

fn ui_meta(visibility: &[&str]) -> MetaObject {
    let Value::Object(meta) = json!({"ui": {"resourceUri": URI, "visibility": visibility}}) else {
        unreachable!("a JSON object literal")
    };
    MetaObject(meta)
}

/// The app's resource, as listed.
pub fn resource() -> Resource {
    Resource::new(URI, "counter")
        .with_title("Counter app")
        .with_description("The interface of test_app (an MCP App)")
        .with_mime_type(MIME)
}

/// The app's document: no outside origin asked for, a border preferred.
pub fn read() -> ResourceContents {
    let Value::Object(meta) = json!({"ui": {"csp": {}, "prefersBorder": true}}) else {
        unreachable!("a JSON object literal")
    };
    ResourceContents::text(include_str!("app.html"), URI)
        .with_mime_type(MIME)
        .with_meta(MetaObject(meta))
}

/// Runs `test_app` or `test_app_add`; `None` for any other tool.
pub fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, McpError>> {
    let add = match request.name.as_ref() {
        "test_app" => 0,
        "test_app_add" => 1,
        _ => return None,
    };
    let start = request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get("count"))
        .map_or(Some(0), Value::as_i64);
    let Some(count) = start.and_then(|start| start.checked_add(add)) else {
        return Some(Err(McpError::invalid_params(
            "`count` must be an integer (and not the largest one)",
            None,
        )));
    };
    let drawn = host_draws_apps(context);
    let text = if drawn {
        format!("count: {count} (shown in the counter app)")
    } else {
        format!("count: {count}")
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({"count": count, "hostDrawsApps": drawn}));
    Some(Ok(result.into()))
}

/// Whether the client declared that it draws MCP Apps' HTML, on its
/// session or (2026-07-28) in the request's own `_meta`.
fn host_draws_apps(context: &RequestContext<RoleServer>) -> bool {
    let capabilities = context.meta.client_capabilities().or_else(|| {
        context
            .peer
            .peer_info()
            .map(|info| info.capabilities.clone())
    });
    capabilities
        .and_then(|capabilities| capabilities.extensions)
        .and_then(|extensions| extensions.get(EXTENSION).cloned())
        .and_then(|settings| settings.get("mimeTypes").cloned())
        .and_then(|types| types.as_array().cloned())
        .is_some_and(|types| types.iter().any(|mime| mime == MIME))
}
