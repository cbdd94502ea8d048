//! Keeping a long conversation inside the model's context window. Before
//! each request the conversation's size is estimated (about four bytes a
//! token, as both providers' tokenizers average on English and JSON); when
//! it would not leave room for the answer, the oldest tool results are
//! shortened first (to a short head and a note), those of earlier steps of
//! the turn under way included, then, if that is not enough, the oldest
//! exchanges are left out, whole: the model never sees a tool call without
//! its result. What was done is returned, for the
//! person to be told.

use crate::provider::{Content, Message, ResultPart, Role, ToolDefinition};

/// The context window of a model nexo does not know, in tokens: small
/// enough for the local models people run (set `contextWindow` for more).
pub const DEFAULT_WINDOW: u64 = 32_000;
/// Bytes of an old tool result kept when it is shortened.
const KEPT_HEAD: usize = 200;
/// What an image costs, in tokens (a mid-sized screenshot).
const IMAGE_TOKENS: u64 = 1_600;

/// Model name prefixes and their context windows, in tokens; the longest
/// prefix that matches wins.
const WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
];

/// The context window of `model`, in tokens.
pub fn window_of(model: &str) -> u64 {
    let model = model.rsplit('/').next().unwrap_or(model);
    WINDOWS
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_WINDOW, |(_, window)| *window)
}

/// What [`fit`] did to the conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fitted {
    /// Old tool results shortened.
    pub shortened: usize,
    /// Old messages left out.
    pub dropped: usize,
    /// The estimate before and after, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

impl Fitted {
    pub fn changed(&self) -> bool {
        self.shortened > 0 || self.dropped > 0
    }
}

/// Estimated tokens of text of `bytes` bytes.
fn tokens_of_bytes(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

fn message_tokens(message: &Message) -> u64 {
    let content: u64 = message
        .content
        .iter()
        .map(|content| match content {
            Content::Text(text) => tokens_of_bytes(text.len()),
            Content::Image(_) => IMAGE_TOKENS,
            Content::ToolCall(call) => {
                tokens_of_bytes(call.name.len() + call.arguments.to_string().len())
            }
            Content::ToolResult(result) => result
                .content
                .iter()
                .map(|part| match part {
                    ResultPart::Text(text) => tokens_of_bytes(text.len()),
                    ResultPart::Image(_) => IMAGE_TOKENS,
                })
                .sum(),
        })
        .sum();
    // The role and the framing of each part.
    content + 4
}

/// Estimated tokens of a request: the system prompt, the tools and the
/// conversation.
pub fn estimate(system: Option<&str>, tools: &[ToolDefinition], messages: &[Message]) -> u64 {
    let fixed = tokens_of_bytes(system.map_or(0, str::len))
        + tools
            .iter()
            .map(|tool| {
                tokens_of_bytes(
                    tool.name.len() + tool.description.len() + tool.input_schema.to_string().len(),
                )
            })
            .sum::<u64>();
    fixed + messages.iter().map(message_tokens).sum::<u64>()
}

/// Makes `messages` fit in `budget` tokens beside `fixed` ones (the
/// system prompt and tools): shortens old tool results, oldest first, then
/// leaves out the oldest exchanges before the turn under way. The newest
/// tool results (those the model is about to read) are never shortened,
/// and the turn under way (from the person's last message) never left out.
pub fn fit(messages: &mut Vec<Message>, fixed: u64, budget: u64) -> Fitted {
    let total = |messages: &[Message]| fixed + messages.iter().map(message_tokens).sum::<u64>();
    let before = total(messages);
    let mut fitted = Fitted {
        tokens_before: before,
        tokens_after: before,
        ..Fitted::default()
    };
    if before <= budget {
        return fitted;
    }
    // Every result but the newest (the one the model is about to read).
    let newest = messages
        .iter()
        .rposition(|message| {
            message
                .content
                .iter()
                .any(|content| matches!(content, Content::ToolResult(_)))
        })
        .unwrap_or(usize::MAX);
    for index in 0..messages.len() {
        if total(messages) <= budget {
            break;
        }
        if index == newest {
            continue;
        }
        for content in &mut messages[index].content {
            if let Content::ToolResult(result) = content
                && shorten(&mut result.content)
            {
                fitted.shortened += 1;
            }
        }
    }
    // Whole exchanges, up to the next message of the person's own, so that
    // no result is left without its call.
    while total(messages) > budget {
        let current = current_turn(messages);
        let Some(next) = (1..=current).find(|&index| is_persons(&messages[index])) else {
            break;
        };
        messages.drain(..next);
        fitted.dropped += next;
    }
    fitted.tokens_after = total(messages);
    fitted
}

/// A message the person wrote (not only tool results).
fn is_persons(message: &Message) -> bool {
    message.role == Role::User
        && message
            .content
            .iter()
            .any(|content| !matches!(content, Content::ToolResult(_)))
}

/// Where the turn under way starts: the last message of the person's own.
fn current_turn(messages: &[Message]) -> usize {
    messages.iter().rposition(is_persons).unwrap_or(0)
}

/// Shortens one result to its head and a note; `false` when it is short
/// already.
fn shorten(parts: &mut Vec<ResultPart>) -> bool {
    let text: String = parts
        .iter()
        .filter_map(|part| match part {
            ResultPart::Text(text) => Some(text.as_str()),
            ResultPart::Image(_) => None,
        })
        .collect();
    let images = parts.len()
        - parts
            .iter()
            .filter(|part| matches!(part, ResultPart::Text(_)))
            .count();
    if text.len() <= KEPT_HEAD * 2 && images == 0 {
        return false;
    }
    let mut head_end = KEPT_HEAD.min(text.len());
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    *parts = vec![ResultPart::Text(format!(
        "{}\n[nexo: shortened to keep the conversation inside the context window; it was {} bytes{}]",
        &text[..head_end],
        text.len(),
        if images > 0 { " and images" } else { "" }
    ))];
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ToolCall, ToolResult};
    use serde_json::json;

    fn exchange(n: usize, result_bytes: usize) -> Vec<Message> {
        vec![
            Message::user(format!("question {n}")),
            Message {
                role: Role::Assistant,
                content: vec![Content::ToolCall(ToolCall {
                    id: format!("call_{n}"),
                    name: "files__read".into(),
                    arguments: json!({"path": "a"}),
                })],
            },
            Message::tool_results(vec![ToolResult {
                call_id: format!("call_{n}"),
                content: vec![ResultPart::Text("x".repeat(result_bytes))],
                is_error: false,
            }]),
            Message {
                role: Role::Assistant,
                content: vec![Content::Text(format!("answer {n}"))],
            },
        ]
    }

    fn result_len(message: &Message) -> usize {
        match &message.content[0] {
            Content::ToolResult(result) => match &result.content[0] {
                ResultPart::Text(text) => text.len(),
                ResultPart::Image(_) => 0,
            },
            _ => 0,
        }
    }

    #[test]
    fn old_tool_results_are_shortened_first_oldest_first() {
        let mut messages: Vec<Message> = (0..3).flat_map(|n| exchange(n, 40_000)).collect();
        messages.push(Message::user("now"));
        // About 30k tokens, 10k of them each result: 15k fit when the first
        // two are shortened.
        let fitted = fit(&mut messages, 100, 15_000);
        assert_eq!(fitted.shortened, 2, "{fitted:?}");
        assert_eq!(fitted.dropped, 0);
        assert!(
            fitted.tokens_after <= 15_000 && fitted.tokens_before > 30_000,
            "{fitted:?}"
        );
        assert!(result_len(&messages[2]) < 400);
        assert!(result_len(&messages[6]) < 400);
        assert_eq!(result_len(&messages[10]), 40_000);
    }

    #[test]
    fn then_whole_exchanges_go_and_the_turn_under_way_stays() {
        let mut messages: Vec<Message> = (0..3).flat_map(|n| exchange(n, 4_000)).collect();
        messages.extend(exchange(3, 40_000).into_iter().take(3));
        let fitted = fit(&mut messages, 0, 10_200);
        assert_eq!(fitted.shortened, 3, "{fitted:?}");
        assert!(
            fitted.dropped > 0 && fitted.dropped.is_multiple_of(4),
            "{fitted:?}"
        );
        assert!(is_persons(&messages[0]));
        // The turn under way is whole: its call and its long result.
        let last = messages.len() - 1;
        assert_eq!(result_len(&messages[last]), 40_000);
        assert!(matches!(
            messages[last - 1].content[0],
            Content::ToolCall(_)
        ));
    }

    #[test]
    fn a_conversation_that_fits_is_left_alone() {
        let mut messages = exchange(0, 100);
        let before = messages.clone();
        let fitted = fit(&mut messages, 0, 1_000);
        assert!(!fitted.changed());
        assert_eq!(messages, before);
    }

    #[test]
    fn windows_of_known_models() {
        assert_eq!(window_of("claude-sonnet-4-5"), 200_000);
        assert_eq!(window_of("gpt-4.1-mini"), 1_047_576);
        assert_eq!(window_of("llama3.2"), DEFAULT_WINDOW);
    }
}
