//! Reading what a client sent before rmcp sees it: syntax and shape checks
//! that give JSON-RPC errors (-32700, -32600) instead of dropped lines or
//! plain-text HTTP errors, and the leniency DESIGN.md asks for (an
//! `initialize` without `clientInfo` or `capabilities`, as seed 000's client
//! sent, is completed rather than refused). A request whose numeric id has
//! a fractional part is refused here: rmcp would answer it with another id.
//!
//! The common case costs one borrowing parse: [`inspect`] reads only the
//! envelope (`method`, `id`, raw `params`) and rewrites the message only when
//! leniency applies.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::id_scan::IdScanner;

/// JSON-RPC error codes this module answers with.
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const INVALID_PARAMS: i32 = -32602;

/// The `clientInfo` put into an `initialize` that came without one.
const ANONYMOUS_CLIENT: &str = r#"{"name":"unnamed-client","version":"0.0.0"}"#;

/// What the envelope of one inbound message says.
#[derive(Debug)]
pub struct Inbound<'a> {
    pub method: Option<Cow<'a, str>>,
    /// The raw `id`, when the message has one (requests and responses).
    pub id: Option<&'a RawValue>,
    /// The raw `params`, read further only when asked ([`Inbound::tool_call`]).
    params: Option<&'a RawValue>,
    /// The message to pass on, when leniency rewrote it.
    pub rewritten: Option<Vec<u8>>,
}

impl Inbound<'_> {
    /// `params.name` and the byte length of `params.arguments`, when this is
    /// a `tools/call`. Parsed on demand: only the tool-call log needs it.
    pub fn tool_call(&self) -> Option<ToolCall> {
        if self.method.as_deref() != Some("tools/call") {
            return None;
        }
        let call = serde_json::from_str::<CallParams<'_>>(self.params?.get()).ok()?;
        Some(ToolCall {
            tool: call.name.into_owned(),
            argument_bytes: call.arguments.map_or(0, |raw| raw.get().len()),
        })
    }
}

/// The parts of a `tools/call` the tool-call log records.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub tool: String,
    pub argument_bytes: usize,
}

/// Why an inbound message cannot be served, as a JSON-RPC error to send back.
#[derive(Debug)]
pub struct Rejection {
    pub code: i32,
    pub message: String,
    /// The request id to answer, when it could be read.
    pub id: Option<Box<RawValue>>,
}

impl Rejection {
    /// The JSON-RPC error response for this rejection (`"id": null` when the
    /// id could not be found, as JSON-RPC 2.0 requires).
    pub fn to_response(&self) -> Vec<u8> {
        let id = self.id.as_deref().map_or("null", RawValue::get);
        let message = serde_json::Value::String(self.message.clone());
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{},"message":{message}}}}}"#,
            self.code
        )
        .into_bytes()
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// Reads the envelope of one message; `Err` is the error to send back.
pub fn inspect(bytes: &[u8]) -> Result<Inbound<'_>, Rejection> {
    // JSON is UTF-8 throughout; the envelope's reader checks only the
    // strings it keeps, so the rest is checked here (a fast scan).
    if let Err(error) = std::str::from_utf8(bytes) {
        let mut scanner = IdScanner::new();
        scanner.feed(bytes);
        return Err(Rejection {
            code: PARSE_ERROR,
            message: format!("parse error: the message is not UTF-8 text ({error})"),
            id: scanner.finish(),
        });
    }
    // A struct also deserializes from an array, field by field: `[]` or
    // `["ping", 1]` must not pass for a message.
    let object = bytes
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|first| *first == b'{');
    let envelope: Envelope<'_> = if object {
        serde_json::from_slice(bytes)
    } else {
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .and_then(|_| Err(serde::de::Error::custom("not an object")))
    }
    .map_err(|error| {
        // Malformed JSON, or valid JSON of the wrong shape: the id may still
        // be readable before the fault, and a client waiting for that id
        // then fails at once. JSON-RPC 2.0 asks for `null` only when the
        // id cannot be detected.
        let mut scanner = IdScanner::new();
        scanner.feed(bytes);
        let id = scanner.finish();
        // The envelope's reader stops at the first fault it meets: valid
        // JSON of the wrong shape may hide a syntax fault further on (bad
        // UTF-8 in a string of a batch), which makes it a parse error. Its
        // own error does not decide: a number beyond an f64 where a string
        // belongs (`"method": -0.5e2223`) is reported as out of range, a
        // syntax error, though the text is JSON of the wrong shape.
        let malformed = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err();
        if malformed {
            Rejection {
                code: PARSE_ERROR,
                message: format!("parse error: {error}"),
                id,
            }
        } else {
            Rejection {
                code: INVALID_REQUEST,
                message: "invalid request: expected one JSON-RPC 2.0 message object".into(),
                id,
            }
        }
    })?;
    // rmcp reads a numeric id through an `f64` when it is written with a
    // point or an exponent, and answers with the integer it rounds to:
    // `9999.999999999999999` would be answered as `10000`, an id the
    // client never sent (found by the `stdio_served` fuzz target).
    if envelope.method.is_some()
        && let Some(id) = envelope.id
        && has_fraction(id.get())
    {
        return Err(Rejection {
            code: INVALID_REQUEST,
            message: "invalid request: the id has a fractional part; \
                      an id is a string or an integer"
                .into(),
            id: Some(id.to_owned()),
        });
    }
    let rewritten = match envelope.method.as_deref() {
        Some("initialize") => complete_initialize(bytes),
        _ => None,
    };
    Ok(Inbound {
        method: envelope.method,
        id: envelope.id,
        params: envelope.params,
        rewritten,
    })
}

/// Whether `message` may hold a numeric id written with a point or an
/// exponent, which [`inspect`] must see before rmcp reads the message (a
/// cheap scan; the usual ids, integers and strings, need no parse).
pub fn may_hold_a_rounded_id(message: &[u8]) -> bool {
    // A digit followed by a point or an exponent, but for the `"2.0"` every
    // message carries.
    message.windows(2).enumerate().any(|(at, pair)| {
        pair[0].is_ascii_digit()
            && matches!(pair[1], b'.' | b'e' | b'E')
            && message.get(at.wrapping_sub(1)..at + 4) != Some(b"\"2.0\"")
    })
}

/// Whether `id`, a JSON value as written, is a number whose exact value
/// is not an integer (`1.5`, `25e-1`, `1e-400`; not `1.0` or `2.5e1`).
pub(crate) fn has_fraction(id: &str) -> bool {
    let unsigned = id.strip_prefix('-').unwrap_or(id);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        // Only digits after an optional sign: a failure is an overflow.
        Some((mantissa, exponent)) => (
            mantissa,
            exponent
                .parse::<i64>()
                .unwrap_or(if exponent.starts_with('-') {
                    i64::MIN
                } else {
                    i64::MAX
                }),
        ),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = [whole.as_bytes(), fraction.as_bytes()].concat();
    // Where the decimal point falls once the exponent has moved it.
    let point = i128::try_from(whole.len()).unwrap_or(i128::MAX) + i128::from(exponent);
    let first_fraction_digit = usize::try_from(point.max(0)).unwrap_or(usize::MAX);
    digits
        .get(first_fraction_digit..)
        .is_some_and(|after| after.iter().any(|digit| *digit != b'0'))
}

/// Adds the `clientInfo` and `capabilities` an `initialize` left out, so that
/// rmcp can read it; `None` when nothing was missing or the message is not an
/// object we can complete (rmcp then reports the problem itself).
fn complete_initialize(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut message: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes).ok()?;
    let params = message
        .entry("params")
        .or_insert_with(|| serde_json::Value::Object(Default::default()))
        .as_object_mut()?;
    let mut changed = false;
    if !params.contains_key("clientInfo") {
        let anonymous = serde_json::from_str(ANONYMOUS_CLIENT).ok()?;
        params.insert("clientInfo".into(), anonymous);
        changed = true;
    }
    if !params.contains_key("capabilities") {
        params.insert(
            "capabilities".into(),
            serde_json::Value::Object(Default::default()),
        );
        changed = true;
    }
    if !changed {
        return None;
    }
    serde_json::to_vec(&message).ok()
}

/// The rejection for a message whose envelope was fine but whose contents
/// rmcp could not read: bad `params` of a request, or no valid message at all.
pub fn unreadable(inbound: &Inbound<'_>, error: &serde_json::Error) -> Rejection {
    let id = inbound.id.map(ToOwned::to_owned);
    if inbound.method.is_some() && id.is_some() {
        Rejection {
            code: INVALID_PARAMS,
            message: format!("invalid params: {error}"),
            id,
        }
    } else {
        Rejection {
            code: INVALID_REQUEST,
            message: format!("invalid request: {error}"),
            id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejection(bytes: &str) -> Rejection {
        match inspect(bytes.as_bytes()) {
            Ok(_) => panic!("{bytes} should be rejected"),
            Err(rejection) => rejection,
        }
    }

    #[test]
    fn issue_15_malformed_json_is_a_parse_error_with_the_id_it_shows() {
        let shown = rejection(r#"{"jsonrpc":"2.0","id":1,"method":"#);
        assert_eq!(shown.code, PARSE_ERROR);
        let response: serde_json::Value =
            serde_json::from_slice(&shown.to_response()).unwrap_or_default();
        assert_eq!(response["id"], 1);
        assert_eq!(response["error"]["code"], PARSE_ERROR);
        // No id before the fault: null, as JSON-RPC 2.0 asks.
        let blind = rejection(r#"{"jsonrpc":"2.0","method":}"#);
        let response: serde_json::Value =
            serde_json::from_slice(&blind.to_response()).unwrap_or_default();
        assert_eq!(response["id"], serde_json::Value::Null);
    }

    #[test]
    fn valid_json_that_is_no_message_is_an_invalid_request() {
        assert_eq!(rejection("[1,2]").code, INVALID_REQUEST);
        assert_eq!(rejection(r#"{"method":7}"#).code, INVALID_REQUEST);
    }

    #[test]
    fn issue_22_an_id_with_a_fraction_is_refused_not_rounded() {
        for id in [
            "9999.999999999999999",
            "1.5",
            "-0.1",
            "1e-400",
            "25e-1",
            "1.00000000000000000001",
            "5e-99999999999999999999",
            // An f64 rounds it to the integral -2000.0 (the inbound fuzz target).
            "-1.9999999999999999999999999999995e3",
        ] {
            let message = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert!(may_hold_a_rounded_id(message.as_bytes()), "{id}");
            let refused = rejection(&message);
            assert_eq!(refused.code, INVALID_REQUEST, "{id}");
            assert_eq!(refused.id.as_deref().map(RawValue::get), Some(id));
        }
        for id in [
            "1", "-0", "1.0", "1e2", "2.5e1", "10e-1", "0e-400", "0.000", r#""1.5""#,
        ] {
            let message = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert!(inspect(message.as_bytes()).is_ok(), "{id}");
        }
        assert!(!may_hold_a_rounded_id(
            br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"e"}}"#
        ));
        // A response's id is not answered, so not refused here.
        assert!(inspect(br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#).is_ok());
    }

    /// Issue 15, point 2: an invalid request answers with its id when the id
    /// can be read, `null` otherwise.
    #[test]
    fn issue_15_an_invalid_request_is_answered_with_its_id() {
        let id = |message: &str| rejection(message).id.map(|raw| raw.get().to_owned());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":5,"method":7}"#).as_deref(),
            Some("5")
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","method":7,"id":"a"}"#).as_deref(),
            Some(r#""a""#)
        );
        assert_eq!(id("[1,2]"), None);
    }

    #[test]
    fn tool_calls_report_name_and_argument_size() -> Result<(), String> {
        let message = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"morse","arguments":{"texto":"SOS"}}}"#;
        let inbound = inspect(message.as_bytes()).map_err(|r| r.message)?;
        let call = inbound.tool_call().ok_or("no tool call")?;
        assert_eq!(call.tool, "morse");
        assert_eq!(call.argument_bytes, r#"{"texto":"SOS"}"#.len());
        Ok(())
    }

    #[test]
    fn seed_000_initialize_gets_client_info() -> Result<(), String> {
        let message = r#"{"jsonrpc":"2.0","id":"uuid-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;
        let inbound = inspect(message.as_bytes()).map_err(|r| r.message)?;
        let rewritten = inbound.rewritten.ok_or("not rewritten")?;
        let value: serde_json::Value =
            serde_json::from_slice(&rewritten).map_err(|e| e.to_string())?;
        assert_eq!(value["params"]["clientInfo"]["name"], "unnamed-client");
        assert_eq!(value["params"]["protocolVersion"], "2025-06-18");
        Ok(())
    }

    #[test]
    fn complete_initialize_is_left_alone() -> Result<(), String> {
        let message = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
        let inbound = inspect(message.as_bytes()).map_err(|r| r.message)?;
        assert!(inbound.rewritten.is_none());
        Ok(())
    }
}
