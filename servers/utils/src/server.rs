//! The MCP face of the crate: [`Utils`], an rmcp [`ServerHandler`] with the
//! `time`, `sha256`, `echo` and `calc` tools of seed 001, and [`tools`], their
//! list.
//!
//! Every successful result carries the plain result as its text content and
//! `{"result": <text>, ...}` as structured content, matching the output
//! schema each tool declares: `time` adds the zone's name and offset, `calc`
//! the result as a JSON number. A zone that does not exist or an expression
//! that cannot be computed is a tool error (`isError: true`) whose only
//! content is a message saying what is wrong and where; the spec asks for
//! structured content that fits the schema on success only.

use std::sync::{Arc, LazyLock};

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::schema_for_output, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Tool},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{calc, clock};

/// The tool router, built once per process: every [`Utils`] shares it, so
/// creating a handler per session or per request costs one reference count.
static ROUTER: LazyLock<Arc<ToolRouter<Utils>>> = LazyLock::new(|| Arc::new(Utils::tool_router()));

/// The utilities server: an rmcp [`ServerHandler`] offering `time`,
/// `sha256`, `echo` and `calc`. Cheap to create and to clone; whoever runs it
/// chooses the transport.
#[derive(Debug, Clone)]
pub struct Utils {
    tool_router: Arc<ToolRouter<Utils>>,
}

impl Utils {
    /// A handler for one connection or session.
    pub fn new() -> Self {
        Self {
            tool_router: Arc::clone(&ROUTER),
        }
    }
}

impl Default for Utils {
    fn default() -> Self {
        Self::new()
    }
}

/// The tools [`Utils`] offers, sorted by name, as `tools/list` returns them.
pub fn tools() -> Vec<Tool> {
    ROUTER.list_all()
}

/// Arguments of `time`.
#[derive(Debug, Deserialize, JsonSchema)]
struct TimeArgs {
    /// IANA time zone name, such as `Europe/Madrid` or `America/New_York`
    /// (case is ignored). Default: UTC.
    // Declared as a plain optional string (not `["string", "null"]`, and
    // without a `"default": null` that a string cannot be), which every
    // client renders; an explicit null is still accepted as UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    timezone: Option<String>,
}

/// Arguments of `sha256`.
#[derive(Debug, Deserialize, JsonSchema)]
struct Sha256Args {
    /// Any text; its UTF-8 bytes are hashed.
    text: String,
}

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// Any text; it comes back unchanged.
    text: String,
}

/// Arguments of `calc`.
#[derive(Debug, Deserialize, JsonSchema)]
struct CalcArgs {
    /// An arithmetic expression such as `2 * (3 + 4) ^ 2 / sqrt(16)`, at most
    /// 1000 characters.
    expression: String,
}

/// The structured result of `sha256` and `echo`; only its schema is used
/// ([`reply`] writes the same shape).
#[derive(Debug, Serialize, JsonSchema)]
struct TextOutput {
    /// The tool's result, the same text as the text content.
    result: String,
}

/// The structured result of `time`.
#[derive(Debug, Serialize, JsonSchema)]
struct TimeOutput {
    /// The current time, RFC 3339 to the second with the zone's offset,
    /// e.g. `2025-06-01T14:03:07+02:00`; the same text as the text content.
    result: String,
    /// The time zone's IANA name, e.g. `Europe/Madrid`.
    timezone: String,
    /// The zone's offset from UTC now, e.g. `+02:00`.
    offset: String,
}

/// The structured result of `calc`.
#[derive(Debug, Serialize, JsonSchema)]
struct CalcOutput {
    /// The result as text, the same as the text content: integers without
    /// `.0`, other values to 15 significant digits.
    result: String,
    /// The same result as a JSON number.
    value: f64,
}

/// A successful result: `text` as text content, `structured` (which holds
/// `{"result": text}` and perhaps more) as structured content.
fn reply(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A tool error whose only content is the message.
fn failure(error: &impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

/// The SHA-256 digest of `text`'s UTF-8 bytes, as 64 lower-case hex digits.
fn sha256_hex(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    Sha256::digest(text.as_bytes())
        .iter()
        .flat_map(|byte| [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0x0f)]])
        .map(char::from)
        .collect()
}

/// The structured content of `calc` for a result written as `text`: the
/// text itself read as a JSON number (so `3` stays an integer on the wire).
fn calc_output(text: String, value: f64) -> Value {
    let number = serde_json::from_str::<serde_json::Number>(&text)
        .map(Value::Number)
        .unwrap_or_else(|_| json!(value));
    json!({ "result": text, "value": number })
}

#[tool_router]
impl Utils {
    #[tool(
        title = "Current time",
        description = "The current date and time in an IANA time zone (default UTC), as \
                       RFC 3339 / ISO 8601 to the second with the zone's offset, e.g. \
                       2025-06-01T14:03:07+02:00. An unknown zone is reported as an error.",
        output_schema = schema_for_output::<TimeOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    fn time(&self, Parameters(TimeArgs { timezone }): Parameters<TimeArgs>) -> CallToolResult {
        match clock::now(timezone.as_deref()) {
            Ok(now) => {
                let structured = json!({
                    "result": &now.time,
                    "timezone": now.timezone,
                    "offset": now.offset,
                });
                reply(now.time, structured)
            }
            Err(error) => failure(&error),
        }
    }

    #[tool(
        title = "SHA-256",
        description = "The SHA-256 digest of the text's UTF-8 bytes, as 64 lower-case \
                       hexadecimal digits.",
        output_schema = schema_for_output::<TextOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn sha256(&self, Parameters(Sha256Args { text }): Parameters<Sha256Args>) -> CallToolResult {
        let digest = sha256_hex(&text);
        let structured = json!({ "result": &digest });
        reply(digest, structured)
    }

    #[tool(
        title = "Echo",
        description = "Return the given text unchanged. Useful to check that the server \
                       answers.",
        output_schema = schema_for_output::<TextOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> CallToolResult {
        let structured = json!({ "result": &text });
        reply(text, structured)
    }

    #[tool(
        title = "Calculator",
        description = "Evaluate an arithmetic expression safely (it is parsed, never \
                       executed): numbers such as 2, 0.5 or 1e-3; + - * / % (remainder) and \
                       ^ (power, right-associative; ** also works); unary minus; \
                       parentheses; constants pi and e; functions sqrt, abs, round, floor, \
                       ceil, and min and max of one or more arguments. At most 1000 \
                       characters and 64 nested parentheses. Integers come back without \
                       '.0', other results to 15 significant digits. Division by zero, \
                       overflow and malformed input are reported as errors with the position.",
        output_schema = schema_for_output::<CalcOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn calc(&self, Parameters(CalcArgs { expression }): Parameters<CalcArgs>) -> CallToolResult {
        match calc::evaluate(&expression) {
            Ok(value) => {
                let text = calc::format_number(value);
                let structured = calc_output(text.clone(), value);
                reply(text, structured)
            }
            Err(error) => failure(&error),
        }
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "nexo-utils",
    instructions = "Small utilities: `time` tells the current time in a time zone, `sha256` \
                    hashes text, `echo` answers with its input, `calc` evaluates arithmetic \
                    safely."
)]
impl ServerHandler for Utils {}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_vectors() {
        // FIPS 180-2 appendix B, and the digest of nothing.
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex("ñ"),
            "024bb90888ca89a15a19e9bdd8c712bfb070465fce1ef25e43c170ea44fc5e5f",
            "the UTF-8 bytes c3 b1"
        );
    }

    #[test]
    fn structured_results_have_the_shape_of_their_schemas() {
        let output = calc_output("3".to_owned(), 3.0);
        let expected = serde_json::to_value(CalcOutput {
            result: "3".to_owned(),
            value: 3.0,
        })
        .unwrap();
        assert_eq!(output["result"], expected["result"]);
        assert_eq!(output["value"].as_f64(), expected["value"].as_f64());
        assert_eq!(output.to_string(), r#"{"result":"3","value":3}"#);
        assert_eq!(
            calc_output("1.5e-7".to_owned(), 1.5e-7).to_string(),
            r#"{"result":"1.5e-7","value":1.5e-7}"#
        );

        let now = clock::now(Some("Europe/Madrid")).unwrap();
        let expected = serde_json::to_value(TimeOutput {
            result: now.time.clone(),
            timezone: now.timezone.clone(),
            offset: now.offset.clone(),
        })
        .unwrap();
        let result = Utils::new().time(Parameters(TimeArgs {
            timezone: Some("Europe/Madrid".to_owned()),
        }));
        let structured = result.structured_content.unwrap();
        let keys: Vec<&String> = structured.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            expected.as_object().unwrap().keys().collect::<Vec<_>>()
        );
        assert_eq!(structured["timezone"], "Europe/Madrid");
    }

    #[test]
    fn handlers_share_one_router() {
        let (a, b) = (Utils::new(), Utils::default());
        assert!(Arc::ptr_eq(&a.tool_router, &b.tool_router));
        assert!(Arc::ptr_eq(&a.tool_router, &a.clone().tool_router));
    }

    #[test]
    fn server_info_names_the_server_and_offers_tools_only() {
        let info = Utils::new().get_info();
        assert_eq!(info.server_info.name, "nexo-utils");
        assert_eq!(info.server_info.version, env!("CARGO_PKG_VERSION"));
        assert!(info.instructions.is_some_and(|i| !i.contains('\n')));
        let capabilities = serde_json::to_value(&info.capabilities).unwrap();
        let names: Vec<&String> = capabilities.as_object().unwrap().keys().collect();
        assert_eq!(names, ["tools"]);
    }
}
