//! The Anthropic Messages API (`POST {base}/v1/messages`, `x-api-key`,
//! `anthropic-version: 2023-06-01`): the request body built from the
//! neutral conversation, and the reader of its SSE answer (`message_start`,
//! `content_block_start`/`_delta`/`_stop` with `text_delta` and
//! `input_json_delta`, `message_delta` with the stop reason and usage,
//! `message_stop`; `ping` and event types added later are skipped; `error`
//! ends the answer).

use std::collections::VecDeque;

use nexo_client::secret::Secret;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::wire::data_json;
use super::{
    Calls, Content, Event, Image, Message, ProviderError, ProviderKind, Request, ResultPart, Role,
    StopReason, Usage,
};

const KIND: ProviderKind = ProviderKind::Anthropic;
const VERSION: &str = "2023-06-01";

pub(super) fn headers(key: Option<&Secret>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert("anthropic-version", HeaderValue::from_static(VERSION));
    let Some(key) = key else {
        return Err(ProviderError::MissingKey { provider: KIND });
    };
    let mut value = HeaderValue::from_str(key.expose()).map_err(|_| ProviderError::BadKey)?;
    value.set_sensitive(true);
    headers.insert("x-api-key", value);
    Ok(headers)
}

pub(super) fn body(model: &str, request: &Request<'_>) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "messages": request.messages.iter().map(message).collect::<Vec<_>>(),
    });
    if let Some(system) = request.system.filter(|system| !system.is_empty()) {
        body["system"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                       "input_schema": tool.input_schema})
            })
            .collect();
    }
    body
}

fn image(image: &Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}})
}

fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let content: Vec<Value> = message
        .content
        .iter()
        // The API refuses empty text blocks.
        .filter(|content| !matches!(content, Content::Text(text) if text.is_empty()))
        .map(|content| match content {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Image(picture) => image(picture),
            Content::ToolCall(call) => json!({"type": "tool_use", "id": call.id,
                                              "name": call.name, "input": call.arguments}),
            Content::ToolResult(result) => {
                let parts: Vec<Value> = result
                    .content
                    .iter()
                    .map(|part| match part {
                        ResultPart::Text(text) => json!({"type": "text", "text": text}),
                        ResultPart::Image(picture) => image(picture),
                    })
                    .collect();
                json!({"type": "tool_result", "tool_use_id": result.call_id,
                       "content": parts, "is_error": result.is_error})
            }
        })
        .collect();
    json!({"role": role, "content": content})
}

/// Reads a Messages stream into [`Event`]s.
#[derive(Default)]
pub(super) struct Decoder {
    calls: Calls,
    usage: Usage,
    stop: Option<StopReason>,
}

fn count(value: &Value, field: &str) -> Option<u64> {
    value.get(field).and_then(Value::as_u64)
}

fn block_index(data: &Value) -> Result<usize, ProviderError> {
    data.get("index")
        .and_then(Value::as_u64)
        .and_then(|index| usize::try_from(index).ok())
        .ok_or_else(|| ProviderError::Malformed {
            provider: KIND,
            detail: "a content block event without its `index`".to_owned(),
        })
}

fn text_field<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or_default()
}

impl Decoder {
    fn read_usage(&mut self, usage: &Value) {
        if let Some(input) = count(usage, "input_tokens") {
            self.usage.input_tokens = input;
        }
        if let Some(output) = count(usage, "output_tokens") {
            self.usage.output_tokens = output;
        }
        if let Some(read) = count(usage, "cache_read_input_tokens") {
            self.usage.cache_read_tokens = Some(read);
        }
        if let Some(written) = count(usage, "cache_creation_input_tokens") {
            self.usage.cache_write_tokens = Some(written);
        }
    }

    /// Reads one event; `true` after `message_stop`.
    pub(super) fn feed(
        &mut self,
        sse: &sse_stream::Sse,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ProviderError> {
        let Some(data) = sse.data.as_deref().filter(|data| !data.trim().is_empty()) else {
            return Ok(false);
        };
        let data = data_json(KIND, data)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(sse.event.as_deref())
            .unwrap_or_default();
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let index = block_index(&data)?;
                let block = data.get("content_block").unwrap_or(&Value::Null);
                match text_field(block, "type") {
                    "text" => {
                        let text = text_field(block, "text");
                        if !text.is_empty() {
                            out.push_back(Event::TextDelta(text.to_owned()));
                        }
                    }
                    "tool_use" => {
                        let name = text_field(block, "name");
                        if name.is_empty() {
                            return Err(ProviderError::Malformed {
                                provider: KIND,
                                detail: "a `tool_use` block without a name".to_owned(),
                            });
                        }
                        let id = text_field(block, "id").to_owned();
                        out.push_back(self.calls.start(index, id, name.to_owned()));
                    }
                    // Thinking, server tools and blocks added later.
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = block_index(&data)?;
                let delta = data.get("delta").unwrap_or(&Value::Null);
                match text_field(delta, "type") {
                    "text_delta" => {
                        let text = text_field(delta, "text");
                        if !text.is_empty() {
                            out.push_back(Event::TextDelta(text.to_owned()));
                        }
                    }
                    "input_json_delta" => {
                        let fragment = text_field(delta, "partial_json");
                        out.extend(self.calls.append(KIND, index, fragment)?);
                    }
                    // thinking_delta, signature_delta, citations_delta, ...
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = block_index(&data)?;
                if self.calls.is_open(index) {
                    out.extend(self.calls.finish(index)?);
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => {
                self.calls.finish_all(out)?;
                out.push_back(Event::Usage(self.usage));
                let stop = self.stop.take().ok_or(ProviderError::Malformed {
                    provider: KIND,
                    detail: "`message_stop` came without a stop reason".to_owned(),
                })?;
                out.push_back(Event::Stop(stop));
                return Ok(true);
            }
            "error" => {
                let error = data.get("error").unwrap_or(&Value::Null);
                return Err(ProviderError::InStream {
                    provider: KIND,
                    kind: text_field(error, "type").to_owned(),
                    message: text_field(error, "message").to_owned(),
                });
            }
            // `ping`, and event types the API may add.
            _ => {}
        }
        Ok(false)
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        other => StopReason::Other(other.to_owned()),
    }
}
