//! A scripted LLM provider on 127.0.0.1 for tests: no model can run here,
//! so this server plays one, speaking the Anthropic Messages API
//! (`POST /v1/messages`) and OpenAI Chat Completions (`POST
//! /v1/chat/completions`, also at `/chat/completions`) exactly as the real
//! services do, streaming (SSE) and not. It depends on no nexo crate: what
//! it proves about the wire format holds for any client, and the official
//! Python SDKs are pointed at it in `tests/` to prove that.
//!
//! Every request takes the next turn of a [`Script`], whichever API it
//! came through, and is recorded (headers and JSON body) for assertions:
//! [`ScriptedLlm::requests`], or `GET /scripted/requests` on the binary.
//! With no turn left, a request gets a 500 that says so. `GET /v1/models`
//! (and `/models`) lists the script's `models` in the format of the API
//! the request's headers name (`anthropic-version`: Anthropic's; else
//! OpenAI's, which Ollama, vLLM and LM Studio also serve).
//!
//! # Script format (JSON)
//!
//! ```json
//! {
//!   "chunk_chars": 5,
//!   "models": ["scripted-model"],
//!   "turns": [
//!     {"reply": {"text": "Hello there"}},
//!     {"reply": {"text": "Let me look.",
//!                "tool_calls": [{"id": "call_1", "name": "utils__echo", "arguments": {"text": "hi"}},
//!                               {"id": "call_2", "name": "utils__time", "arguments": {}}],
//!                "usage": {"input_tokens": 20, "output_tokens": 9, "cache_read_tokens": 4}}},
//!     {"error": {"status": 429, "headers": {"retry-after": "1"}}},
//!     {"error": {"status": 404, "body": {"error": {"message": "no", "type": "x", "code": "model_not_found"}}}},
//!     {"reply": {"text": "cut short", "cut_after": 3}},
//!     {"raw": {"status": 200, "content_type": "text/event-stream", "body": "data: {oops\n\n"}}
//!   ]
//! }
//! ```
//!
//! - `reply`: an answer with `text` (may be empty) and any number of
//!   `tool_calls` (`id`, `name`, `arguments` object), streamed in deltas of
//!   `chunk_chars` characters (default 5, so tool arguments are split in
//!   the middle of JSON tokens). `usage` defaults to 12 input and 7 output
//!   tokens. `cut_after: N` ends a streamed answer after its first N SSE
//!   events, before its final event, as a dropped connection would.
//! - `error`: an HTTP error with `status`, `headers` and a JSON `body`; with
//!   no body, the body the real API sends for that status (Anthropic's
//!   `{"type": "error", "error": {"type": "overloaded_error", ...}}` for a
//!   529, OpenAI's `{"error": {"code": "model_not_found", ...}}` for a
//!   404, ...).
//! - `raw`: any status, content type and body, sent as given (malformed
//!   streams).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// What the provider answers, turn by turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Script {
    pub turns: Vec<Turn>,
    /// The size, in characters, of each streamed text or argument delta.
    #[serde(default = "default_chunk_chars")]
    pub chunk_chars: usize,
    /// What `GET /v1/models` lists.
    #[serde(default = "default_models")]
    pub models: Vec<String>,
}

fn default_chunk_chars() -> usize {
    5
}

fn default_models() -> Vec<String> {
    vec!["scripted-model".to_owned()]
}

impl Script {
    pub fn new(turns: Vec<Turn>) -> Self {
        Self {
            turns,
            chunk_chars: default_chunk_chars(),
            models: default_models(),
        }
    }
}

/// One answer of the script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Turn {
    Reply(Reply),
    Error(HttpError),
    Raw(Raw),
}

impl Turn {
    /// A reply with text only.
    pub fn text(text: &str) -> Self {
        Self::Reply(Reply {
            text: text.to_owned(),
            ..Reply::default()
        })
    }

    /// A reply asking for these tool calls.
    pub fn tool_calls(calls: Vec<Call>) -> Self {
        Self::Reply(Reply {
            tool_calls: calls,
            ..Reply::default()
        })
    }

    /// An HTTP error with the API's own body for `status`.
    pub fn error(status: u16, headers: &[(&str, &str)]) -> Self {
        Self::Error(HttpError {
            status,
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            body: None,
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reply {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<Call>,
    #[serde(default)]
    pub usage: Usage,
    /// Ends the stream after this many SSE events, before its final one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_after: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl Call {
    pub fn new(id: &str, name: &str, arguments: Value) -> Self {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Self {
            input_tokens: 12,
            output_tokens: 7,
            cache_read_tokens: 0,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpError {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The JSON body; the API's own for `status` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    #[serde(default = "ok_status")]
    pub status: u16,
    #[serde(default = "event_stream")]
    pub content_type: String,
    pub body: String,
}

fn ok_status() -> u16 {
    200
}

fn event_stream() -> String {
    "text/event-stream".to_owned()
}

/// One request the provider received.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// Which wire format a request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
}

struct Shared {
    turns: Mutex<VecDeque<Turn>>,
    chunk_chars: usize,
    models: Vec<String>,
    requests: Mutex<Vec<Recorded>>,
}

/// The running provider; stopped by [`ScriptedLlm::stop`] or when dropped.
pub struct ScriptedLlm {
    url: String,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ScriptedLlm {
    /// Serves `script` on 127.0.0.1 at a port of the system's choosing.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            turns: Mutex::new(script.turns.into()),
            chunk_chars: script.chunk_chars.max(1),
            models: script.models,
            requests: Mutex::default(),
        });
        let app = Router::new()
            .route("/v1/messages", post(anthropic))
            .route("/v1/chat/completions", post(openai))
            .route("/chat/completions", post(openai))
            .route("/v1/models", get(models))
            .route("/models", get(models))
            .route("/scripted/requests", get(requests))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // An error ends the server; the test sees its requests fail.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            url,
            shared,
            shutdown: Some(shutdown),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`: Anthropic's base URL; OpenAI's is this
    /// followed by `/v1`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many turns of the script are still to be played.
    pub fn turns_left(&self) -> usize {
        self.shared
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Stops serving and waits until the server is gone.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn requests(State(shared): State<Arc<Shared>>) -> Response {
    let recorded = shared
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    axum::Json(recorded).into_response()
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let body = if headers.contains_key("anthropic-version") {
        let data: Vec<Value> = shared
            .models
            .iter()
            .map(|id| {
                json!({"type": "model", "id": id, "display_name": id,
                       "created_at": "2025-01-01T00:00:00Z"})
            })
            .collect();
        json!({"data": data, "has_more": false,
               "first_id": shared.models.first(), "last_id": shared.models.last()})
    } else {
        let data: Vec<Value> = shared
            .models
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "scripted"}))
            .collect();
        json!({"object": "list", "data": data})
    };
    axum::Json(body).into_response()
}

async fn anthropic(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    answer(&shared, Api::Anthropic, "/v1/messages", &headers, &body)
}

async fn openai(
    State(shared): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&shared, Api::OpenAi, uri.path(), &headers, &body)
}

fn answer(shared: &Shared, api: Api, path: &str, headers: &HeaderMap, body: &[u8]) -> Response {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    shared
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Recorded {
            path: path.to_owned(),
            headers: headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: request.clone(),
        });
    if !request.is_object() {
        return error_response(
            api,
            400,
            &BTreeMap::new(),
            None,
            "the body is not a JSON object",
        );
    }
    let turn = shared
        .turns
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop_front();
    let Some(turn) = turn else {
        return error_response(
            api,
            500,
            &BTreeMap::new(),
            None,
            "the script has no turn left",
        );
    };
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted")
        .to_owned();
    let stream = request.get("stream") == Some(&Value::Bool(true));
    match turn {
        Turn::Error(error) => error_response(
            api,
            error.status,
            &error.headers,
            error.body,
            &default_message(api, error.status, &model),
        ),
        Turn::Raw(raw) => {
            let status = StatusCode::from_u16(raw.status).unwrap_or(StatusCode::OK);
            let mut response = (status, raw.body).into_response();
            if let Ok(kind) = HeaderValue::from_str(&raw.content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, kind);
            }
            response
        }
        Turn::Reply(reply) if stream => {
            let include_usage = request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let mut events = match api {
                Api::Anthropic => anthropic_events(&reply, &model, shared.chunk_chars),
                Api::OpenAi => openai_events(&reply, &model, shared.chunk_chars, include_usage),
            };
            if let Some(cut) = reply.cut_after {
                events.truncate(cut);
            }
            let chunks = events
                .into_iter()
                .map(Ok::<Bytes, std::convert::Infallible>);
            let mut response = Body::from_stream(futures::stream::iter(chunks)).into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            );
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
        Turn::Reply(reply) => {
            let body = match api {
                Api::Anthropic => anthropic_message(&reply, &model),
                Api::OpenAi => openai_completion(&reply, &model),
            };
            axum::Json(body).into_response()
        }
    }
}

/// `text` in pieces of `size` characters (at least one piece, maybe empty).
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

fn arguments_text(call: &Call) -> String {
    serde_json::to_string(&call.arguments).unwrap_or_else(|_| "{}".to_owned())
}

fn sse(event: Option<&str>, data: &str) -> Bytes {
    match event {
        Some(event) => Bytes::from(format!("event: {event}\ndata: {data}\n\n")),
        None => Bytes::from(format!("data: {data}\n\n")),
    }
}

fn anthropic_usage(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cache_read_tokens,
    })
}

fn anthropic_stop(reply: &Reply) -> &'static str {
    if reply.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// A streamed Messages answer: `message_start`, a `ping`, each content
/// block's start, deltas and stop, `message_delta` and `message_stop`.
fn anthropic_events(reply: &Reply, model: &str, size: usize) -> Vec<Bytes> {
    let event = |name: &str, data: Value| sse(Some(name), &data.to_string());
    let mut start_usage = anthropic_usage(&reply.usage);
    start_usage["output_tokens"] = json!(1);
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage,
            }}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !reply.text.is_empty() {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(&reply.text, size) {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in &reply.tool_calls {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        ));
        // The API's first argument delta is empty.
        let mut fragments = vec![String::new()];
        fragments.extend(pieces(&arguments_text(call), size));
        for fragment in fragments {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    events.push(event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": anthropic_stop(reply), "stop_sequence": null},
               "usage": {"output_tokens": reply.usage.output_tokens}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events
}

fn anthropic_message(reply: &Reply, model: &str) -> Value {
    let mut content = Vec::new();
    if !reply.text.is_empty() {
        content.push(json!({"type": "text", "text": reply.text}));
    }
    for call in &reply.tool_calls {
        content.push(
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}),
        );
    }
    json!({
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": anthropic_stop(reply), "stop_sequence": null,
        "usage": anthropic_usage(&reply.usage),
    })
}

fn openai_usage(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    })
}

fn openai_finish(reply: &Reply) -> &'static str {
    if reply.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// A streamed completion: `chat.completion.chunk`s carrying the role, the
/// content deltas, each tool call's `id`/`name` then its argument
/// fragments under `tool_calls[index]`, the `finish_reason`, a last chunk
/// with no choices and the usage (when `stream_options.include_usage`),
/// and `data: [DONE]`.
fn openai_events(reply: &Reply, model: &str, size: usize, include_usage: bool) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut chunk = json!({
            "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage {
            chunk["usage"] = Value::Null;
        }
        sse(None, &chunk.to_string())
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    if !reply.text.is_empty() {
        for piece in pieces(&reply.text, size) {
            events.push(chunk(json!({"content": piece}), None));
        }
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
        for fragment in pieces(&arguments_text(call), size) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                None,
            ));
        }
    }
    events.push(chunk(json!({}), Some(openai_finish(reply))));
    if include_usage {
        let last = json!({
            "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "system_fingerprint": "fp_scripted", "choices": [],
            "usage": openai_usage(&reply.usage),
        });
        events.push(sse(None, &last.to_string()));
    }
    events.push(sse(None, "[DONE]"));
    events
}

fn openai_completion(reply: &Reply, model: &str) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() { Value::Null } else { json!(reply.text) },
        "refusal": null,
    });
    if !reply.tool_calls.is_empty() {
        message["tool_calls"] = reply
            .tool_calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function",
                       "function": {"name": call.name, "arguments": arguments_text(call)}})
            })
            .collect();
    }
    json!({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 1_700_000_000,
        "model": model, "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": openai_finish(reply)}],
        "usage": openai_usage(&reply.usage),
    })
}

fn default_message(api: Api, status: u16, model: &str) -> String {
    match (api, status) {
        (Api::Anthropic, 401) => "invalid x-api-key".to_owned(),
        (Api::OpenAi, 401) => "Incorrect API key provided. You can find your API key at \
                               https://platform.openai.com/account/api-keys."
            .to_owned(),
        (Api::Anthropic, 404) => format!("model: {model}"),
        (Api::OpenAi, 404) => {
            format!("The model `{model}` does not exist or you do not have access to it.")
        }
        (_, 429) => "Rate limit exceeded; please retry after the time given".to_owned(),
        (_, 529) => "Overloaded".to_owned(),
        (_, 503) => "The service is temporarily unavailable".to_owned(),
        _ => format!("scripted error {status}"),
    }
}

/// The `type` (and, for OpenAI, `code`) each API gives an error of `status`.
fn error_kind(api: Api, status: u16) -> (&'static str, Option<&'static str>) {
    match (api, status) {
        (Api::Anthropic, 400) => ("invalid_request_error", None),
        (Api::Anthropic, 401) => ("authentication_error", None),
        (Api::Anthropic, 403) => ("permission_error", None),
        (Api::Anthropic, 404) => ("not_found_error", None),
        (Api::Anthropic, 413) => ("request_too_large", None),
        (Api::Anthropic, 429) => ("rate_limit_error", None),
        (Api::Anthropic, 529) => ("overloaded_error", None),
        (Api::Anthropic, _) => ("api_error", None),
        (Api::OpenAi, 401) => ("invalid_request_error", Some("invalid_api_key")),
        (Api::OpenAi, 404) => ("invalid_request_error", Some("model_not_found")),
        (Api::OpenAi, 429) => ("requests", Some("rate_limit_exceeded")),
        (Api::OpenAi, 400..500) => ("invalid_request_error", None),
        (Api::OpenAi, _) => ("server_error", None),
    }
}

fn error_response(
    api: Api,
    status: u16,
    headers: &BTreeMap<String, String>,
    body: Option<Value>,
    message: &str,
) -> Response {
    let body = body.unwrap_or_else(|| {
        let (kind, code) = error_kind(api, status);
        match api {
            Api::Anthropic => {
                json!({"type": "error", "error": {"type": kind, "message": message}})
            }
            Api::OpenAi => {
                json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
            }
        }
    });
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(body)).into_response();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}
