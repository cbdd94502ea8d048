//! The LLM providers the chat talks to: a provider-neutral conversation
//! ([`Message`], [`Content`], [`ToolDefinition`], [`Usage`],
//! [`StopReason`]) and one streaming call, [`Provider::stream`], that sends
//! a [`Request`] and gives a [`Reply`]: [`Event`]s as they arrive (text
//! deltas, tool calls started, their argument deltas and the finished
//! calls, usage, the stop reason), then the assembled [`Answer`]. It knows
//! nothing of MCP: tools are names, descriptions and JSON schemas.
//!
//! Two wire formats: the Anthropic Messages API ([`anthropic`]) and OpenAI
//! Chat Completions ([`openai`]), which also reaches Ollama, vLLM,
//! llama.cpp and LM Studio through a base URL. The clients are our own,
//! typed on serde_json: no crate fits both. async-openai (the best kept)
//! covers OpenAI only, builds its own reqwest and retries internally with
//! the `backoff` crate, so `Retry-After` and the failure kinds we give hints
//! for are out of reach; the Anthropic crates are small one-person
//! projects. Each wire format is a few hundred lines over reqwest and
//! `sse-stream`, which the workspace already builds.
//!
//! [`Provider`] is a struct dispatching on [`ProviderKind`] rather than a
//! trait: the set of wire formats is closed and chosen at run time, so an
//! enum keeps the provider a plain `Clone` value with no boxed futures, and
//! tests need no trait to substitute: the scripted provider
//! (`nexo-scripted-llm`) stands in on the wire.
//!
//! Around the call ([`wire`]): 429, 503, 529 and `overloaded_error`
//! retried with exponential backoff honouring `Retry-After`; a refused key
//! or an unknown model a [`ProviderError`] with a hint; a stream that ends
//! before its final event, malformed data or an oversized answer an error.
//! Choosing a provider from settings, the environment or a local Ollama is
//! [`select`]'s; tool calls a local model wrote as text are
//! [`text_call`]'s.

mod anthropic;
mod openai;
pub mod pricing;
mod select;
mod text_call;
mod wire;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
pub use nexo_client::config::ProviderKind;
use nexo_client::secret::Secret;
use serde_json::Value;

use crate::error::ProviderError;

pub use select::{
    ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MODEL, DEFAULT_ANTHROPIC_URL,
    DEFAULT_OLLAMA_URL, DEFAULT_OPENAI_MODEL, DEFAULT_OPENAI_URL, OLLAMA_HOST, OPENAI_API_KEY,
    OPENAI_BASE_URL, Settings, VARIABLES, how_to_configure, list_models, select,
};
pub use text_call::tool_calls_in_text;

/// Who said a message. Tool results travel in user messages, as both APIs
/// see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Content>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Content::Text(text.into())],
        }
    }

    /// The results of an answer's tool calls, in one user message.
    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self {
            role: Role::User,
            content: results.into_iter().map(Content::ToolResult).collect(),
        }
    }

    /// The tool calls this message asks for.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|content| match content {
            Content::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// Its text parts, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|content| match content {
                Content::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    Text(String),
    /// In user messages (OpenAI-compatible servers may refuse images the
    /// model cannot see).
    Image(Image),
    /// In assistant messages.
    ToolCall(ToolCall),
    /// In user messages, answering a [`ToolCall`] of the answer before.
    ToolResult(ToolResult),
}

/// An image, base64-encoded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, which its result must name.
    pub id: String,
    pub name: String,
    /// Always a JSON object.
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] answered.
    pub call_id: String,
    pub content: Vec<ResultPart>,
    /// The tool failed; the model reads why and may correct itself.
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultPart {
    Text(String),
    Image(Image),
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// A JSON schema of type `object`, already in a form the provider takes.
    pub input_schema: Value,
}

/// Tokens an answer used, as the provider counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache, where it says.
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the prompt cache (Anthropic).
    pub cache_write_tokens: Option<u64>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    /// It waits for the results of its tool calls.
    ToolUse,
    MaxTokens,
    StopSequence,
    /// Another reason, as the provider named it (`refusal`,
    /// `content_filter`, `pause_turn`, ...).
    Other(String),
}

/// What is sent: the conversation so far, the tools, the system prompt
/// and the most tokens the answer may take.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub system: Option<&'a str>,
    pub messages: &'a [Message],
    pub tools: &'a [ToolDefinition],
    pub max_tokens: u32,
}

/// One step of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    TextDelta(String),
    /// The model began a tool call; `index` counts the answer's tool calls
    /// from 0, whatever the wire format numbers.
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of a tool call's JSON arguments (pieces split anywhere).
    ToolCallArguments {
        index: usize,
        fragment: String,
    },
    ToolCallFinished {
        index: usize,
        call: ToolCall,
    },
    Usage(Usage),
    Stop(StopReason),
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The assistant's message: its text, then its tool calls in order.
    pub message: Message,
    pub usage: Usage,
    pub stop: StopReason,
}

/// How often and how long a busy provider is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub max_tries: u32,
    /// The wait after the first refusal without `Retry-After`; it doubles.
    pub first_delay: Duration,
    /// The longest wait; a `Retry-After` asking for more ends the retries.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_tries: 4,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Everything a [`Provider`] is made from.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub model: String,
    /// Anthropic's without `/v1` (`https://api.anthropic.com`); OpenAI's
    /// with it (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`),
    /// as each SDK takes it.
    pub base_url: String,
    /// Optional for OpenAI-compatible local servers.
    pub api_key: Option<Secret>,
    pub retry: RetryPolicy,
}

/// A configured model, ready to answer.
#[derive(Debug, Clone)]
pub struct Provider {
    config: ProviderConfig,
    http: reqwest::Client,
}

impl Provider {
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let http = wire::client(&config)?;
        Ok(Self { config, http })
    }

    pub fn kind(&self) -> ProviderKind {
        self.config.kind
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    pub fn base_url(&self) -> &str {
        &self.config.base_url
    }

    /// What `usage` cost in US dollars at the model's list prices, if
    /// nexo knows them ([`pricing`]).
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        pricing::cost(
            self.model(),
            usage,
            self.config.kind == ProviderKind::OpenAi,
        )
    }

    /// Sends `request` and starts reading the streamed answer. Busy
    /// answers are retried here; once this returns, the answer is on its
    /// way and a failure ends it with an error.
    pub async fn stream(&self, request: &Request<'_>) -> Result<Reply, ProviderError> {
        let config = &self.config;
        let (url, headers, body, decoder) = match config.kind {
            ProviderKind::Anthropic => (
                format!("{}/v1/messages", trimmed(&config.base_url)),
                anthropic::headers(config.api_key.as_ref())?,
                anthropic::body(&config.model, request),
                Decoder::Anthropic(anthropic::Decoder::default()),
            ),
            ProviderKind::OpenAi => (
                format!("{}/chat/completions", trimmed(&config.base_url)),
                openai::headers(config.api_key.as_ref())?,
                openai::body(&config.model, request),
                Decoder::OpenAi(openai::Decoder::default()),
            ),
        };
        let events = wire::post_stream(&self.http, config, &url, headers, &body).await?;
        Ok(Reply {
            kind: config.kind,
            events,
            decoder,
            pending: VecDeque::new(),
            assembler: Assembler::default(),
            ended: false,
        })
    }

    /// One whole answer, its events dropped.
    pub async fn complete(&self, request: &Request<'_>) -> Result<Answer, ProviderError> {
        self.stream(request).await?.finish().await
    }
}

fn trimmed(base: &str) -> &str {
    base.trim_end_matches('/')
}

/// A streamed answer: read [`Reply::next`] until `None`, then take the
/// [`Answer`] with [`Reply::finish`] (which also reads whatever is left).
pub struct Reply {
    kind: ProviderKind,
    events: BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
    decoder: Decoder,
    pending: VecDeque<Event>,
    assembler: Assembler,
    ended: bool,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("kind", &self.kind)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Reply {
    /// The next event, or `None` once the answer is complete.
    pub async fn next(&mut self) -> Result<Option<Event>, ProviderError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.assembler.apply(&event);
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match self.events.next().await {
                None => {
                    self.decoder.end(&mut self.pending)?;
                    self.ended = true;
                }
                Some(Err(error)) => return Err(wire::stream_error(self.kind, error)),
                Some(Ok(sse)) => {
                    if self.decoder.feed(&sse, &mut self.pending)? {
                        self.ended = true;
                    }
                }
            }
        }
    }

    /// The whole answer, once every event is read.
    pub async fn finish(mut self) -> Result<Answer, ProviderError> {
        while self.next().await?.is_some() {}
        self.assembler.answer(self.kind)
    }
}

/// The wire format's reader of SSE events.
enum Decoder {
    Anthropic(anthropic::Decoder),
    OpenAi(openai::Decoder),
}

impl Decoder {
    /// Reads one SSE event into `out`; `true` when it was the final one.
    fn feed(
        &mut self,
        sse: &sse_stream::Sse,
        out: &mut VecDeque<Event>,
    ) -> Result<bool, ProviderError> {
        match self {
            Self::Anthropic(decoder) => decoder.feed(sse, out),
            Self::OpenAi(decoder) => decoder.feed(sse, out),
        }
    }

    /// The stream ended without its final event: an error, unless the
    /// format allows it.
    fn end(&mut self, out: &mut VecDeque<Event>) -> Result<(), ProviderError> {
        match self {
            Self::Anthropic(_) => Err(ProviderError::Truncated {
                provider: ProviderKind::Anthropic,
            }),
            Self::OpenAi(decoder) => decoder.end(out),
        }
    }
}

/// Builds the [`Answer`] from the events a reply hands out.
#[derive(Default)]
struct Assembler {
    content: Vec<Content>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl Assembler {
    fn apply(&mut self, event: &Event) {
        match event {
            Event::TextDelta(delta) => match self.content.last_mut() {
                Some(Content::Text(text)) => text.push_str(delta),
                _ => self.content.push(Content::Text(delta.clone())),
            },
            Event::ToolCallFinished { call, .. } => {
                self.content.push(Content::ToolCall(call.clone()));
            }
            Event::Usage(usage) => self.usage = *usage,
            Event::Stop(reason) => self.stop = Some(reason.clone()),
            Event::ToolCallStarted { .. } | Event::ToolCallArguments { .. } => {}
        }
    }

    fn answer(self, kind: ProviderKind) -> Result<Answer, ProviderError> {
        let Some(stop) = self.stop else {
            return Err(ProviderError::Truncated { provider: kind });
        };
        Ok(Answer {
            message: Message {
                role: Role::Assistant,
                content: self.content,
            },
            usage: self.usage,
            stop,
        })
    }
}

/// The tool calls of an answer as they stream in, keyed by the wire
/// format's own number for each (Anthropic's content block index,
/// OpenAI's `tool_calls[index]`).
#[derive(Default)]
struct Calls {
    open: BTreeMap<usize, OpenCall>,
    started: usize,
}

struct OpenCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

impl Calls {
    fn is_open(&self, key: usize) -> bool {
        self.open.contains_key(&key)
    }

    fn start(&mut self, key: usize, id: String, name: String) -> Event {
        let index = self.started;
        self.started += 1;
        self.open.insert(
            key,
            OpenCall {
                index,
                id: id.clone(),
                name: name.clone(),
                arguments: String::new(),
            },
        );
        Event::ToolCallStarted { index, id, name }
    }

    /// Adds a piece of arguments; `None` for an empty piece.
    fn append(
        &mut self,
        kind: ProviderKind,
        key: usize,
        fragment: &str,
    ) -> Result<Option<Event>, ProviderError> {
        let Some(call) = self.open.get_mut(&key) else {
            return Err(ProviderError::Malformed {
                provider: kind,
                detail: format!("arguments for tool call {key}, which was never started"),
            });
        };
        if fragment.is_empty() {
            return Ok(None);
        }
        call.arguments.push_str(fragment);
        Ok(Some(Event::ToolCallArguments {
            index: call.index,
            fragment: fragment.to_owned(),
        }))
    }

    fn finish(&mut self, key: usize) -> Result<Option<Event>, ProviderError> {
        let Some(call) = self.open.remove(&key) else {
            return Ok(None);
        };
        let arguments = if call.arguments.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(object @ Value::Object(_)) => object,
                Ok(_) => {
                    return Err(ProviderError::BadArguments {
                        tool: call.name,
                        detail: "they are JSON but not an object".to_owned(),
                    });
                }
                Err(error) => {
                    return Err(ProviderError::BadArguments {
                        tool: call.name,
                        detail: error.to_string(),
                    });
                }
            }
        };
        Ok(Some(Event::ToolCallFinished {
            index: call.index,
            call: ToolCall {
                id: call.id,
                name: call.name,
                arguments,
            },
        }))
    }

    /// Finishes every open call, in the order they were started.
    fn finish_all(&mut self, out: &mut VecDeque<Event>) -> Result<(), ProviderError> {
        let mut keys: Vec<(usize, usize)> = self
            .open
            .iter()
            .map(|(key, call)| (call.index, *key))
            .collect();
        keys.sort_unstable();
        for (_, key) in keys {
            out.extend(self.finish(key)?);
        }
        Ok(())
    }
}
