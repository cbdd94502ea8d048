//! Every answer checked: the HTTP status, the JSON-RPC shape and id, a
//! tool's `isError`, and the run's own expectations (a JSON pointer's
//! value, a regular expression over the result). A failed check is an
//! [`ErrorClass`], counted and timed apart from the answers that passed.

use std::fmt;

use regex::Regex;
use serde_json::Value;

use crate::BenchError;

/// Why one request failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    /// The connection or the child process failed, or the answer was not
    /// JSON-RPC at all.
    Transport,
    /// An HTTP status other than 200 (202 for a notification).
    Http(u16),
    /// A JSON-RPC error answer, by code.
    JsonRpc(i64),
    /// A tool's result with `isError: true`.
    ToolError,
    /// An answer that broke the protocol (wrong id, no result) or an
    /// expectation of the run.
    Mismatch,
    /// No answer within the request timeout.
    Timeout,
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorClass::Transport => f.write_str("transport"),
            ErrorClass::Http(status) => write!(f, "http_{status}"),
            ErrorClass::JsonRpc(code) => write!(f, "jsonrpc_{code}"),
            ErrorClass::ToolError => f.write_str("tool_error"),
            ErrorClass::Mismatch => f.write_str("mismatch"),
            ErrorClass::Timeout => f.write_str("timeout"),
        }
    }
}

/// A failed request: its class and what was seen.
#[derive(Debug, Clone)]
pub struct Failed {
    pub class: ErrorClass,
    pub message: String,
}

impl Failed {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
        }
    }
}

/// One expectation on a result.
#[derive(Debug, Clone)]
pub enum Expect {
    /// The value at a JSON pointer into the result equals this one
    /// (`--expect /structuredContent/result=...`).
    Pointer { pointer: String, value: Value },
    /// The result, as compact JSON, matches this expression
    /// (`--expect-regex`).
    Regex(Regex),
    /// A tool's `structuredContent` matches the `outputSchema` it lists
    /// (`--expect-schema`, a step's `expect_output_schema`).
    Schema(OutputSchema),
}

/// A tool's output schema, compiled once for the run.
#[derive(Clone)]
pub struct OutputSchema {
    pub tool: String,
    validator: std::sync::Arc<jsonschema::Validator>,
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OutputSchema({})", self.tool)
    }
}

impl OutputSchema {
    /// Compiles `schema`, the output schema `tool` lists (no remote `$ref`
    /// is fetched).
    pub fn new(tool: &str, schema: &Value) -> Result<Self, BenchError> {
        let validator = jsonschema::validator_for(schema).map_err(|error| {
            BenchError::usage(
                format!("the output schema of `{tool}` is not a valid JSON Schema: {error}"),
                None,
            )
        })?;
        Ok(Self {
            tool: tool.to_owned(),
            validator: std::sync::Arc::new(validator),
        })
    }
}

impl Expect {
    /// Reads `POINTER=VALUE`: VALUE as JSON where it is JSON, else as a
    /// string.
    pub fn pointer(text: &str) -> Result<Self, BenchError> {
        let Some((pointer, value)) = nexo_client::arguments::split_pair(text, '=') else {
            return Err(BenchError::usage(
                format!("`{text}` is not of the form POINTER=VALUE"),
                Some("for example `--expect /structuredContent/result=SOS`".to_owned()),
            ));
        };
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(BenchError::usage(
                format!("`{pointer}` is not a JSON pointer"),
                Some("a JSON pointer starts with `/`: `/content/0/text`".to_owned()),
            ));
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        Ok(Self::Pointer {
            pointer: pointer.to_owned(),
            value,
        })
    }

    pub fn regex(text: &str) -> Result<Self, BenchError> {
        Regex::new(text).map(Self::Regex).map_err(|error| {
            BenchError::usage(
                format!("`{text}` is not a regular expression: {error}"),
                None,
            )
        })
    }

    fn check(&self, result: &Value) -> Result<(), String> {
        match self {
            Expect::Pointer { pointer, value } => match result.pointer(pointer) {
                Some(found) if found == value => Ok(()),
                Some(found) => Err(format!("{pointer} is {found}, expected {value}")),
                None => Err(format!("the result has no {pointer}")),
            },
            Expect::Regex(regex) => {
                let text = result.to_string();
                if regex.is_match(&text) {
                    Ok(())
                } else {
                    Err(format!("the result does not match /{}/", regex.as_str()))
                }
            }
            Expect::Schema(schema) => {
                let Some(structured) = result.get("structuredContent") else {
                    return Err(format!(
                        "`{}` lists an output schema but its result has no structuredContent",
                        schema.tool
                    ));
                };
                match schema.validator.iter_errors(structured).next() {
                    None => Ok(()),
                    Some(error) => {
                        let at = error.instance_path().to_string();
                        let at = if at.is_empty() { "/".to_owned() } else { at };
                        Err(format!(
                            "structuredContent breaks the output schema of `{}` at `{at}`: {error}",
                            schema.tool
                        ))
                    }
                }
            }
        }
    }
}

/// Checks a JSON-RPC answer to request `id`; gives back the result.
pub fn answer<'a>(
    message: &'a Value,
    id: u64,
    method: &str,
    expect: &[Expect],
) -> Result<&'a Value, Failed> {
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Failed::new(
            ErrorClass::Mismatch,
            "the answer is not JSON-RPC 2.0",
        ));
    }
    if message.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(Failed::new(
            ErrorClass::Mismatch,
            format!(
                "answer id {} to request {id}",
                message.get("id").unwrap_or(&Value::Null)
            ),
        ));
    }
    if let Some(error) = message.get("error") {
        let code = error
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or_default();
        let text = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(Failed::new(
            ErrorClass::JsonRpc(code),
            format!("JSON-RPC error {code}: {text}"),
        ));
    }
    let Some(result) = message.get("result") else {
        return Err(Failed::new(
            ErrorClass::Mismatch,
            "the answer has neither result nor error",
        ));
    };
    if method == "tools/call" && result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("no text");
        return Err(Failed::new(
            ErrorClass::ToolError,
            format!("the tool reported an error: {text}"),
        ));
    }
    for expectation in expect {
        expectation
            .check(result)
            .map_err(|message| Failed::new(ErrorClass::Mismatch, message))?;
    }
    Ok(result)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_classified() {
        let ok = json!({"jsonrpc": "2.0", "id": 4, "result": {"content": [], "structuredContent": {"result": "SOS"}}});
        let expect = vec![Expect::pointer("/structuredContent/result=SOS").unwrap()];
        assert!(answer(&ok, 4, "tools/call", &expect).is_ok());
        let other = vec![Expect::pointer("/structuredContent/result=\"X\"").unwrap()];
        assert_eq!(
            answer(&ok, 4, "tools/call", &other).unwrap_err().class,
            ErrorClass::Mismatch
        );
        assert_eq!(
            answer(&ok, 5, "tools/call", &[]).unwrap_err().class,
            ErrorClass::Mismatch
        );
        let tool = json!({"jsonrpc": "2.0", "id": 1, "result": {"isError": true, "content": [{"type": "text", "text": "no"}]}});
        assert_eq!(
            answer(&tool, 1, "tools/call", &[]).unwrap_err().class,
            ErrorClass::ToolError
        );
        let rpc = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}});
        let failed = answer(&rpc, 1, "ping", &[]).unwrap_err();
        assert_eq!(failed.class.to_string(), "jsonrpc_-32601");
        let regex = vec![Expect::regex("S.S").unwrap()];
        assert!(answer(&ok, 4, "tools/call", &regex).is_ok());
        let schema = json!({"type": "object", "properties": {"result": {"type": "integer"}}});
        let schema = vec![Expect::Schema(OutputSchema::new("x", &schema).unwrap())];
        let failed = answer(&ok, 4, "tools/call", &schema).unwrap_err();
        assert_eq!(failed.class, ErrorClass::Mismatch);
        assert!(failed.message.contains("/result"), "{}", failed.message);
    }
}
