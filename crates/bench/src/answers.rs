//! What the server asks the client while a request is served, answered
//! from the scenario (a step's `[step.answers]`, by method): a 2026-07-28
//! `input_required` result's input requests (Multi Round-Trip Requests:
//! the request is sent again with `inputResponses` and the sealed
//! `requestState`), and a 2025-era server's own requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) on the
//! answer's event stream or a legacy SSE stream, answered with a
//! JSON-RPC response. The whole exchange, every round, is one request in
//! the figures. The client capabilities declared are those the answers
//! can serve, and no more.

use serde_json::{Map, Value, json};

use crate::check::{ErrorClass, Failed};

/// Rounds of one request at most before it counts as a failure (rmcp's
/// client stops at the same number).
pub const MAX_ROUNDS: usize = 8;

/// The capability each answerable method needs.
const CAPABILITIES: &[(&str, &str)] = &[
    ("elicitation/create", "elicitation"),
    ("sampling/createMessage", "sampling"),
    ("roots/list", "roots"),
];

/// The client capabilities `answers` serve.
pub fn capabilities<'a>(answers: impl IntoIterator<Item = &'a Map<String, Value>>) -> Value {
    let mut declared = Map::new();
    for answers in answers {
        for (method, capability) in CAPABILITIES {
            if answers.contains_key(*method) {
                declared.insert((*capability).to_owned(), json!({}));
            }
        }
    }
    Value::Object(declared)
}

/// Whether `result` is a 2026-07-28 `input_required` result.
pub fn input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The params of the next round of a request answered `input_required`:
/// `params` with `inputResponses` answered from `answers` and the result's
/// `requestState` carried back.
pub fn next_round(
    params: &Value,
    result: &Value,
    answers: &Map<String, Value>,
) -> Result<Value, Failed> {
    let mut responses = Map::new();
    if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let Some(answer) = answers.get(method) else {
                return Err(unanswered(method));
            };
            responses.insert(key.clone(), answer.clone());
        }
    }
    let mut next = match params {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    next.remove("inputResponses");
    next.remove("requestState");
    if !responses.is_empty() {
        next.insert("inputResponses".to_owned(), Value::Object(responses));
    }
    if let Some(state) = result.get("requestState") {
        next.insert("requestState".to_owned(), state.clone());
    }
    Ok(Value::Object(next))
}

/// Whether `message` is a request of the server's (a method and an id).
pub fn is_request(message: &Value) -> bool {
    message.get("method").is_some() && message.get("id").is_some()
}

/// The JSON-RPC response to the server's `request`: the scenario's answer
/// to its method, or "method not found" when the scenario has none (and
/// the capability was not declared).
pub fn respond(request: &Value, answers: Option<&Map<String, Value>>) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match answers.and_then(|answers| answers.get(method)) {
        Some(answer) => json!({"jsonrpc": "2.0", "id": id, "result": answer}),
        None if method == "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        None => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": format!("the benchmark has no answer to `{method}`")}
        }),
    }
}

fn unanswered(method: &str) -> Failed {
    Failed::new(
        ErrorClass::Mismatch,
        format!(
            "the server asks for `{method}`, which the scenario does not answer (add it to [step.answers])"
        ),
    )
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn rounds_carry_answers_and_state() {
        let answers =
            json!({"elicitation/create": {"action": "accept", "content": {"name": "Ada"}}});
        let answers = answers.as_object().unwrap();
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {"name": {"method": "elicitation/create", "params": {}}},
            "requestState": "sealed"
        });
        assert!(input_required(&result));
        let next = next_round(&json!({"name": "t", "arguments": {}}), &result, answers).unwrap();
        assert_eq!(next["inputResponses"]["name"]["content"]["name"], "Ada");
        assert_eq!(next["requestState"], "sealed");
        assert_eq!(next["name"], "t");
        let sampling = json!({"resultType": "input_required", "inputRequests": {"s": {"method": "sampling/createMessage"}}});
        assert_eq!(
            next_round(&json!({}), &sampling, answers)
                .unwrap_err()
                .class,
            ErrorClass::Mismatch
        );
        assert_eq!(capabilities([answers]), json!({"elicitation": {}}));
        let asked =
            json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": {}});
        assert!(is_request(&asked));
        assert_eq!(respond(&asked, Some(answers))["result"]["action"], "accept");
        assert_eq!(respond(&asked, None)["error"]["code"], -32601);
    }
}
