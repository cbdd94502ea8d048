//! Tool calls a local model printed as text instead of using the tools
//! API: the whole answer a JSON call (`{"name": "server__tool",
//! "arguments": {...}}`, `"parameters"` as Llama writes it, or OpenAI's
//! `{"function": {"name", "arguments"}}` with arguments as a JSON string),
//! a list of calls, or the same inside ```json fences or
//! `<tool_call>...</tool_call>` tags (Qwen, Hermes), prose around the
//! blocks allowed. Every call must name a known tool and carry an object
//! of arguments; a call object with other keys, an unknown name or a block
//! that is not wholly a call makes the text no call at all.

use serde_json::{Map, Value};

use super::ToolCall;

/// The tool calls `text` holds, for tools `known` says exist; empty when
/// the text is not, in full, such calls.
pub fn tool_calls_in_text(text: &str, known: impl Fn(&str) -> bool) -> Vec<ToolCall> {
    let blocks = blocks(text);
    let mut calls = Vec::new();
    for block in &blocks {
        let Ok(value) = serde_json::from_str::<Value>(block.trim()) else {
            return Vec::new();
        };
        let objects = match value {
            Value::Array(items) => items,
            object @ Value::Object(_) => vec![object],
            _ => return Vec::new(),
        };
        for object in objects {
            let Some((name, arguments)) = call(object) else {
                return Vec::new();
            };
            if !known(&name) {
                return Vec::new();
            }
            calls.push(ToolCall {
                id: format!("text_call_{}", calls.len() + 1),
                name,
                arguments,
            });
        }
    }
    calls
}

/// The candidate blocks: the `<tool_call>` tags' bodies, else the fenced
/// blocks, else the whole text.
fn blocks(text: &str) -> Vec<&str> {
    let tagged = between(text, "<tool_call>", "</tool_call>");
    if !tagged.is_empty() {
        return tagged;
    }
    let fenced: Vec<&str> = between(text, "```", "```")
        .into_iter()
        .map(|block| {
            // The info string (`json`, `tool_call`) ends at the line break.
            match block.split_once('\n') {
                Some((info, body)) if !info.trim_start().starts_with(['{', '[']) => body,
                _ => block,
            }
        })
        .collect();
    if !fenced.is_empty() {
        return fenced;
    }
    vec![text]
}

/// Every piece of `text` between `open` and the next `close`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else {
            break;
        };
        found.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    found
}

/// The name and arguments of one call object, in any of its shapes.
fn call(value: Value) -> Option<(String, Value)> {
    let Value::Object(mut object) = value else {
        return None;
    };
    if let Some(Value::Object(function)) = object.remove("function") {
        // `{"type": "function", "id": ..., "function": {...}}`
        if object.keys().any(|key| key != "type" && key != "id") {
            return None;
        }
        return call(Value::Object(function));
    }
    if object.keys().any(|key| {
        !matches!(
            key.as_str(),
            "name" | "arguments" | "parameters" | "type" | "id"
        )
    }) {
        return None;
    }
    let Some(Value::String(name)) = object.remove("name") else {
        return None;
    };
    let arguments = match (object.remove("arguments"), object.remove("parameters")) {
        (Some(arguments), None) | (None, Some(arguments)) => arguments,
        (None, None) => Value::Object(Map::new()),
        (Some(_), Some(_)) => return None,
    };
    let arguments = match arguments {
        Value::String(text) => serde_json::from_str(&text).ok()?,
        other => other,
    };
    arguments.is_object().then_some((name, arguments))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn known(name: &str) -> bool {
        matches!(name, "utils__echo" | "utils__time")
    }

    fn found(text: &str) -> Vec<(String, Value)> {
        tool_calls_in_text(text, known)
            .into_iter()
            .map(|call| (call.name, call.arguments))
            .collect()
    }

    #[test]
    fn calls_in_their_usual_shapes_are_recognised() {
        let echo = vec![("utils__echo".to_owned(), json!({"text": "hi"}))];
        for text in [
            r#"{"name": "utils__echo", "arguments": {"text": "hi"}}"#,
            r#"  {"name": "utils__echo", "parameters": {"text": "hi"}}  "#,
            r#"{"type": "function", "function": {"name": "utils__echo", "arguments": "{\"text\": \"hi\"}"}}"#,
            "Calling it:\n```json\n{\"name\": \"utils__echo\", \"arguments\": {\"text\": \"hi\"}}\n```",
            "<tool_call>\n{\"name\": \"utils__echo\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>",
        ] {
            assert_eq!(found(text), echo, "{text}");
        }
        let two = found(
            "<tool_call>{\"name\": \"utils__echo\", \"arguments\": {\"text\": \"a\"}}</tool_call>\
             <tool_call>{\"name\": \"utils__time\"}</tool_call>",
        );
        assert_eq!(two.len(), 2);
        assert_eq!(two[1], ("utils__time".to_owned(), json!({})));
    }

    #[test]
    fn unknown_tools_and_partial_matches_are_not_calls() {
        for text in [
            r#"{"name": "shell__exec", "arguments": {"cmd": "rm -rf /"}}"#,
            r#"{"name": "utils__ech", "arguments": {}}"#,
            r#"{"name": "utils__echo", "arguments": {"text": "hi"}, "note": "x"}"#,
            r#"{"name": "utils__echo", "arguments": "not json"}"#,
            r#"{"name": "utils__echo", "arguments": [1]}"#,
            r#"I would call {"name": "utils__echo", "arguments": {}} now"#,
            r#"{"name": "utils__echo", "arguments": {"text": "#,
            "<tool_call>{\"name\": \"utils__echo\"}</tool_call><tool_call>{\"name\": \"nope\"}</tool_call>",
            "The answer is 42.",
        ] {
            assert!(found(text).is_empty(), "{text}");
        }
    }
}
