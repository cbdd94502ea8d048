//! OpenAI Chat Completions (`POST {base}/chat/completions`, a Bearer key
//! that local servers do without), as OpenAI, Ollama, vLLM, llama.cpp and
//! LM Studio speak it: the request body built from the neutral
//! conversation (`stream: true`, `stream_options.include_usage`), and the
//! reader of its `chat.completion.chunk`s (content deltas, tool calls in
//! `tool_calls[index]` fragments, the `finish_reason`, a last chunk with
//! the usage, `data: [DONE]`).
//!
//! Where the API has no place for something: a tool result's error flag
//! becomes an `error: ` prefix on its text, and the images a tool returned
//! (a `tool` message takes text only) follow the results in a user
//! message. `max_tokens` is sent rather than `max_completion_tokens`, the
//! one every compatible server reads.

use std::collections::VecDeque;

use nexo_client::secret::Secret;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::wire::data_json;
use super::{
    Calls, Content, Event, Image, Message, ProviderError, ProviderKind, Request, ResultPart, Role,
    StopReason, Usage,
};

const KIND: ProviderKind = ProviderKind::OpenAi;

pub(super) fn headers(key: Option<&Secret>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key.filter(|key| !key.expose().is_empty()) {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
            .map_err(|_| ProviderError::BadKey)?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

pub(super) fn body(model: &str, request: &Request<'_>) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = request.system.filter(|system| !system.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages {
        match message.role {
            Role::Assistant => messages.push(assistant(message)),
            Role::User => user(message, &mut messages),
        }
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description,
                    "parameters": tool.input_schema}})
            })
            .collect();
    }
    body
}

fn image_part(image: &Image) -> Value {
    json!({"type": "image_url",
           "image_url": {"url": format!("data:{};base64,{}", image.media_type, image.data)}})
}

fn assistant(message: &Message) -> Value {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({"id": call.id, "type": "function",
                   "function": {"name": call.name, "arguments": call.arguments.to_string()}})
        })
        .collect();
    let mut value = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { json!(text) },
    });
    if !calls.is_empty() {
        value["tool_calls"] = json!(calls);
    }
    value
}

/// A user message: its tool results as `tool` messages first (they must
/// follow the assistant's calls), then its own text and images.
fn user(message: &Message, out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    let mut result_images = Vec::new();
    for content in &message.content {
        match content {
            Content::Text(text) => parts.push(json!({"type": "text", "text": text})),
            Content::Image(image) => parts.push(image_part(image)),
            Content::ToolResult(result) => {
                let mut text = String::new();
                for part in &result.content {
                    match part {
                        ResultPart::Text(part) => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(part);
                        }
                        ResultPart::Image(image) => result_images.push((&result.call_id, image)),
                    }
                }
                if result.is_error {
                    text = format!("error: {text}");
                }
                out.push(json!({"role": "tool", "tool_call_id": result.call_id, "content": text}));
            }
            // A user message carries no tool calls.
            Content::ToolCall(_) => {}
        }
    }
    if !result_images.is_empty() {
        let mut images = Vec::new();
        for (call_id, image) in result_images {
            images.push(
                json!({"type": "text", "text": format!("image returned by tool call {call_id}:")}),
            );
            images.push(image_part(image));
        }
        out.push(json!({"role": "user", "content": images}));
    }
    match parts.as_slice() {
        [] => {}
        [only] if only["type"] == "text" => {
            out.push(json!({"role": "user", "content": only["text"]}));
        }
        _ => out.push(json!({"role": "user", "content": parts})),
    }
}

/// Reads a stream of completion chunks into [`Event`]s.
#[derive(Default)]
pub(super) struct Decoder {
    calls: Calls,
    /// The `finish_reason`, once given.
    finish: Option<String>,
    /// Whether any tool call was made.
    called: bool,
}

impl Decoder {
    /// Reads one event; `true` after `data: [DONE]`.
    pub(super) fn feed(
        &mut self,
        sse: &sse_stream::Sse,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ProviderError> {
        let Some(data) = sse
            .data
            .as_deref()
            .map(str::trim)
            .filter(|data| !data.is_empty())
        else {
            return Ok(false);
        };
        if data == "[DONE]" {
            self.complete(out)?;
            return Ok(true);
        }
        let chunk = data_json(KIND, data)?;
        if let Some(error) = chunk.get("error") {
            let field = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or_default();
            return Err(ProviderError::InStream {
                provider: KIND,
                kind: field("type").to_owned(),
                message: match error {
                    Value::String(text) => text.clone(),
                    _ => field("message").to_owned(),
                },
            });
        }
        if let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
        {
            self.choice(choice, out)?;
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            out.push_back(Event::Usage(read_usage(usage)));
        }
        Ok(false)
    }

    fn choice(&mut self, choice: &Value, out: &mut VecDeque<Event>) -> Result<(), ProviderError> {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            out.push_back(Event::TextDelta(text.to_owned()));
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.tool_call(call, out)?;
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
            self.calls.finish_all(out)?;
        }
        Ok(())
    }

    fn tool_call(&mut self, call: &Value, out: &mut VecDeque<Event>) -> Result<(), ProviderError> {
        let key = call
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|index| usize::try_from(index).ok())
            .unwrap_or(0);
        let function = call.get("function").unwrap_or(&Value::Null);
        if !self.calls.is_open(key) {
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name.is_empty() {
                return Err(ProviderError::Malformed {
                    provider: KIND,
                    detail: format!("tool call {key} began without a name"),
                });
            }
            // Some local servers give no id; the result must name one.
            let id = match call.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("call_{key}"),
            };
            self.called = true;
            out.push_back(self.calls.start(key, id, name.to_owned()));
        }
        if let Some(fragment) = function.get("arguments").and_then(Value::as_str) {
            out.extend(self.calls.append(KIND, key, fragment)?);
        }
        Ok(())
    }

    fn complete(&mut self, out: &mut VecDeque<Event>) -> Result<(), ProviderError> {
        self.calls.finish_all(out)?;
        let stop = match self.finish.take().as_deref() {
            // Ollama says `stop` after tool calls.
            Some("stop") | None if self.called => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.push_back(Event::Stop(stop));
        Ok(())
    }

    /// The stream ended without `[DONE]`: the answer stands if its
    /// `finish_reason` came (a server that leaves `[DONE]` out), else it
    /// was cut short.
    pub(super) fn end(&mut self, out: &mut VecDeque<Event>) -> Result<(), ProviderError> {
        if self.finish.is_none() {
            return Err(ProviderError::Truncated { provider: KIND });
        }
        tracing::debug!("the answer ended without `[DONE]` after its finish reason");
        self.complete(out)
    }
}

fn read_usage(usage: &Value) -> Usage {
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
    Usage {
        input_tokens: count("/prompt_tokens").unwrap_or(0),
        output_tokens: count("/completion_tokens").unwrap_or(0),
        cache_read_tokens: count("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: None,
    }
}
