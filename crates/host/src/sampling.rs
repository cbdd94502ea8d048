//! A server's sampling request (`sampling/createMessage`, a 2025-era
//! feature) as the chat's model sees it, and the model's answer as the
//! server gets it. Text goes both ways; a request's images, audio and
//! tool exchanges are named in the text, not sent.

#![expect(
    deprecated,
    reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
)]

use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, SamplingMessage};
use serde_json::Value;

use crate::provider::{Answer, Content, Message, Role, StopReason};

/// What the server asks the model: its system prompt, its messages (as
/// text), and the most tokens the answer may take.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
}

impl Asked {
    pub fn of(request: &CreateMessageRequestParams) -> Self {
        let messages = request
            .messages
            .iter()
            .map(|message| {
                let wire = serde_json::to_value(message).unwrap_or_default();
                let role = match wire.get("role").and_then(Value::as_str) {
                    Some("assistant") => Role::Assistant,
                    _ => Role::User,
                };
                let blocks = match wire.get("content") {
                    Some(Value::Array(blocks)) => blocks.clone(),
                    Some(block) => vec![block.clone()],
                    None => Vec::new(),
                };
                let text = blocks
                    .iter()
                    .map(|block| match block.get("type").and_then(Value::as_str) {
                        Some("text") => block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        Some(kind) => format!("[{kind} content, not sent]"),
                        None => "[content of no known kind, not sent]".to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                Message {
                    role,
                    content: vec![Content::Text(text)],
                }
            })
            .collect();
        Self {
            system: request.system_prompt.clone(),
            messages,
            max_tokens: request.max_tokens,
        }
    }
}

/// The model's `answer` as the server gets it.
pub fn result(answer: &Answer, model: &str) -> CreateMessageResult {
    let mut result = CreateMessageResult::new(
        SamplingMessage::assistant_text(answer.message.text()),
        model.to_owned(),
    );
    result.stop_reason = Some(
        match &answer.stop {
            StopReason::EndTurn => "endTurn",
            StopReason::MaxTokens => "maxTokens",
            StopReason::StopSequence => "stopSequence",
            StopReason::ToolUse => "toolUse",
            StopReason::Other(other) => other.as_str(),
        }
        .to_owned(),
    );
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_reads_as_text() -> Result<(), serde_json::Error> {
        let request: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarise this."}},
                {"role": "assistant", "content": [{"type": "text", "text": "Which?"}]},
                {"role": "user", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}
            ],
            "systemPrompt": "Be brief.",
            "maxTokens": 100
        }))?;
        let asked = Asked::of(&request);
        assert_eq!(asked.system.as_deref(), Some("Be brief."));
        assert_eq!(asked.max_tokens, 100);
        let texts: Vec<(Role, String)> = asked
            .messages
            .iter()
            .map(|message| (message.role, message.text()))
            .collect();
        assert_eq!(
            texts,
            [
                (Role::User, "Summarise this.".to_owned()),
                (Role::Assistant, "Which?".to_owned()),
                (Role::User, "[image content, not sent]".to_owned()),
            ]
        );
        Ok(())
    }
}
