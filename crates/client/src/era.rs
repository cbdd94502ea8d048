//! The protocol's two eras as raw JSON-RPC, for the links that write
//! messages by hand (`nexo bench`, `nexo check`, `nexo doctor`): the
//! revisions, the 2025-era handshake, the `_meta` a 2026-07-28 request
//! carries in place of a session, and the headers that repeat its method
//! and name over HTTP. The typed session gets the same from rmcp; this is
//! the one place the raw links build them.

use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

/// The 2025-era revision the raw links ask for in `initialize`.
pub const REVISION_2025: &str = "2025-11-25";
/// The stateless revision.
pub const REVISION_2026: &str = "2026-07-28";

/// The header carrying a 2025-era session's id over HTTP.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// The header naming the revision of a request over HTTP.
pub const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The 2026-07-28 header repeating a request's method.
pub const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// The 2026-07-28 header repeating the tool, prompt or resource a request names.
pub const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// Who a raw client says it is: `name` at nexo's version.
pub fn client_info(name: &str) -> Value {
    json!({"name": name, "version": env!("CARGO_PKG_VERSION")})
}

/// A 2025-era `initialize` asking for `revision`.
pub fn initialize_params(revision: &str, client_info: &Value, capabilities: &Value) -> Value {
    json!({
        "protocolVersion": revision,
        "capabilities": capabilities,
        "clientInfo": client_info,
    })
}

/// The notification that ends a 2025-era handshake.
pub fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// `params` (an object, or null for none) with the `_meta` a 2026-07-28
/// request carries: the revision, who the client is and what it can do.
/// Other `_meta` entries are kept.
pub fn stateless_params(params: Value, client_info: &Value, capabilities: &Value) -> Value {
    let mut params = match params {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    if let Value::Object(object) = &mut params {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".to_owned(),
                Value::from(REVISION_2026),
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".to_owned(),
                client_info.clone(),
            );
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".to_owned(),
                capabilities.clone(),
            );
        }
    }
    params
}

/// What the 2026-07-28 headers repeat of `message`: its method, and the
/// `name` (a tool or prompt) or `uri` (a resource) of its params.
pub fn method_and_name(message: &Value) -> (&str, Option<&str>) {
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let name = message
        .get("params")
        .and_then(|params| params.get("name").or_else(|| params.get("uri")))
        .and_then(Value::as_str);
    (method, name)
}

/// The `Mcp-Method` and `Mcp-Name` headers of a 2026-07-28 request over
/// HTTP; a value no header can carry is left out.
pub fn method_headers(
    method: &str,
    name: Option<&str>,
) -> impl Iterator<Item = (HeaderName, HeaderValue)> {
    let method = HeaderValue::from_str(method)
        .ok()
        .map(|value| (METHOD_HEADER, value));
    let name = name
        .and_then(|name| HeaderValue::from_str(name).ok())
        .map(|value| (NAME_HEADER, value));
    method.into_iter().chain(name)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn stateless_requests_carry_meta_and_keep_their_own() {
        let info = client_info("nexo-test");
        let params = stateless_params(
            json!({"name": "echo", "_meta": {"progressToken": 1}}),
            &info,
            &json!({"sampling": {}}),
        );
        let meta = &params["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            REVISION_2026
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "nexo-test"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"sampling": {}})
        );
        assert_eq!(meta["progressToken"], 1);
        let none = stateless_params(Value::Null, &info, &json!({}));
        assert!(none["_meta"].is_object());
    }

    #[test]
    fn headers_repeat_the_method_and_what_it_names() {
        let call = json!({"method": "tools/call", "params": {"name": "echo"}});
        let read = json!({"method": "resources/read", "params": {"uri": "file:///a"}});
        let list = json!({"method": "tools/list"});
        let headers = |message: &Value| {
            let (method, name) = method_and_name(message);
            method_headers(method, name)
                .map(|(key, value)| format!("{key}: {}", value.to_str().unwrap()))
                .collect::<Vec<_>>()
        };
        assert_eq!(headers(&call), ["mcp-method: tools/call", "mcp-name: echo"]);
        assert_eq!(
            headers(&read),
            ["mcp-method: resources/read", "mcp-name: file:///a"]
        );
        assert_eq!(headers(&list), ["mcp-method: tools/list"]);
        let hostile = json!({"method": "tools/call", "params": {"name": "a\nb"}});
        assert_eq!(headers(&hostile), ["mcp-method: tools/call"]);
    }
}
