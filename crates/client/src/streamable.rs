//! The innermost Streamable HTTP client: one POST, GET or DELETE over
//! reqwest, doing what rmcp 3.9's `impl StreamableHttpClient for
//! reqwest::Client` does, and handing back beside the outcome the
//! response's status and headers ([`Answer`]), which rmcp's drops. Those
//! are how the layers above know the status (the trace, the refusal that
//! starts `--transport auto`'s fallback); none of them reads it from an
//! error's text.
//!
//! Written here rather than wrapped because rmcp's keeps the response to
//! itself, and the pieces it is built from (the bounded body reader, the
//! SSE event-size limit, the custom-header check, the scope of a
//! challenge) are private to rmcp. Each is carried over behaviour for
//! behaviour, and so are the errors rmcp's worker acts on:
//!
//! - Every POST and GET sends `Accept: text/event-stream, application/json`;
//!   the session goes in `Mcp-Session-Id`, a resumed GET's last event in
//!   `Last-Event-Id`, the token as a bearer `Authorization`. Custom headers
//!   (the user's, `MCP-Protocol-Version`, `Mcp-Method`) are added unless
//!   they name `Accept`, `Mcp-Session-Id` or `Last-Event-Id`
//!   ([`StreamableHttpError::ReservedHeaderConflict`]).
//! - A 401 or 403 with `WWW-Authenticate` is `AuthRequired` or
//!   `InsufficientScope` (with the challenge's `scope`), which the OAuth
//!   layer acts on; a 429 or 5xx is `HttpStatus` with `Retry-After`
//!   (a POST's JSON 5xx is read first, for a JSON-RPC error it may hold).
//! - POST: 202 and 204 are `Accepted`, and so is an empty 2xx to a
//!   notification or response; a 404 on a session is `SessionExpired`, on
//!   which rmcp's worker sets up a new session; another failure's body is
//!   read (at most 64 KiB) for a JSON-RPC error, a rejected
//!   `server/discover` becomes a JSON-RPC error (so that rmcp falls back to
//!   `initialize`), and anything else is `UnexpectedServerResponse`
//!   (`HTTP <status>: <body>`). An SSE answer is a stream of events each at
//!   most the transport's event size; a JSON one is read (at most 16 MiB)
//!   and parsed, an unusable one being `Accepted` for a notification and an
//!   error for a request; any other content type is `UnexpectedContentType`.
//! - GET: 405 is `ServerDoesNotSupportSse` (the server offers no stream);
//!   any other failure is reqwest's status error; the answer must be SSE
//!   (or JSON) and is read as a bounded event stream.
//! - DELETE of the session: a 405 is success (the server does not end
//!   sessions that way); another failure is reqwest's status error.
//!
//! rmcp's worker stops resuming a stream whose event was over the size
//! limit by recognising rmcp's own (private) error type, which ours cannot
//! be; so once one of a client's streams has had an oversized event, the
//! client refuses to resume any (a GET with `Last-Event-Id`) with
//! `ServerDoesNotSupportSse`, which the worker takes as final: a server
//! cannot make it download oversized events again and again.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use http::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
    JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
    StreamableHttpPostResponse,
};

use crate::forward::{Answer, Exchange, Exchanged, HttpError, SseStream};

/// What every POST and GET accepts.
pub(crate) const ACCEPTED_TYPES: &str = "text/event-stream, application/json";
/// The longest successful JSON body read (rmcp's limit).
const MAX_JSON_RESPONSE_SIZE: usize = 16 * 1024 * 1024;
/// The longest failure body read (rmcp's limit).
const MAX_ERROR_RESPONSE_SIZE: usize = 64 * 1024;
/// The longest `Retry-After` value kept (rmcp's limit).
const MAX_RETRY_AFTER_BYTES: usize = 128;
/// How much of an unusable JSON body an error shows.
const BODY_PREVIEW_LEN: usize = 256;
/// Headers a custom header may not replace.
const RESERVED_HEADERS: [&str; 3] = ["accept", HEADER_SESSION_ID, HEADER_LAST_EVENT_ID];

/// reqwest, speaking Streamable HTTP (see the module comment).
#[derive(Debug, Clone)]
pub struct Streamable {
    http: reqwest::Client,
    /// One of this client's streams had an event over the size limit.
    oversized: Arc<AtomicBool>,
}

impl Streamable {
    pub(crate) fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            oversized: Arc::default(),
        }
    }
}

impl Exchange for Streamable {
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Exchanged<StreamableHttpPostResponse> {
        let mut request = self.http.post(uri.as_ref()).header(ACCEPT, ACCEPTED_TYPES);
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let request = match with_custom_headers(request, custom_headers) {
            Ok(request) => request,
            Err(error) => return Exchanged::unanswered(error),
        };
        let session_was_attached = session_id.is_some();
        let request = match &session_id {
            Some(session) => request.header(HEADER_SESSION_ID, session.as_ref()),
            None => request,
        };
        let response = match request.json(&message).send().await {
            Ok(response) => response,
            Err(error) => return Exchanged::unanswered(error.into()),
        };
        let mut answer = Answer::of(&response);
        let outcome = posted(
            response,
            &message,
            session_was_attached,
            max_sse_event_size,
            &mut answer,
            &self.oversized,
        )
        .await;
        Exchanged {
            outcome,
            answer: Some(answer),
        }
    }

    async fn get(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Exchanged<SseStream> {
        if last_event_id.is_some() && self.oversized.load(Ordering::Relaxed) {
            tracing::warn!("not resuming the stream: one of its events was over the size limit");
            return Exchanged::unanswered(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let mut request = self.http.get(uri.as_ref()).header(ACCEPT, ACCEPTED_TYPES);
        if let Some(session) = session_id {
            request = request.header(HEADER_SESSION_ID, session.as_ref());
        }
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let request = match with_custom_headers(request, custom_headers) {
            Ok(request) => request,
            Err(error) => return Exchanged::unanswered(error),
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Exchanged::unanswered(error.into()),
        };
        let answer = Answer::of(&response);
        Exchanged {
            outcome: streamed(response, max_sse_event_size, &self.oversized),
            answer: Some(answer),
        }
    }

    async fn delete(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Exchanged<()> {
        let mut request = self.http.delete(uri.as_ref());
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        let request = match with_custom_headers(request, custom_headers) {
            Ok(request) => request,
            Err(error) => return Exchanged::unanswered(error),
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Exchanged::unanswered(error.into()),
        };
        let answer = Answer::of(&response);
        let outcome = if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            tracing::debug!("this server does not end sessions with DELETE");
            Ok(())
        } else {
            response.error_for_status().map(drop).map_err(Into::into)
        };
        Exchanged {
            outcome,
            answer: Some(answer),
        }
    }
}

impl Answer {
    fn of(response: &reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            refused_bare: false,
            local: crate::connection::local_address(response),
        }
    }
}

impl<T> Exchanged<T> {
    /// An exchange that failed before any response came.
    fn unanswered(error: HttpError) -> Self {
        Self {
            outcome: Err(error),
            answer: None,
        }
    }
}

/// What the answer to a POST of `message` means to rmcp; `answer.refused_bare`
/// is set where a failure status came with no JSON-RPC message.
async fn posted(
    response: reqwest::Response,
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    max_sse_event_size: usize,
    answer: &mut Answer,
    oversized: &Arc<AtomicBool>,
) -> Result<StreamableHttpPostResponse, HttpError> {
    let status = response.status();
    if let Some(challenge) = challenge(&response)? {
        return Err(challenge);
    }
    if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    if status == StatusCode::NOT_FOUND && session_was_attached {
        return Err(StreamableHttpError::SessionExpired);
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let is_json = content_type
        .as_deref()
        .is_some_and(|value| value.starts_with(JSON_MIME_TYPE));
    // Rate limits and non-JSON failures end here, unread; a JSON 5xx is
    // read for the JSON-RPC error it may hold.
    let status_error = match (http_status_error(status, response.headers()), is_json) {
        (Some(error), is_json) if !is_json || status == StatusCode::TOO_MANY_REQUESTS => {
            return Err(error.into());
        }
        (error, _) => error,
    };
    let content_length = response.content_length();
    let session_id = response
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let expects_no_answer = matches!(
        message,
        ClientJsonRpcMessage::Notification(_)
            | ClientJsonRpcMessage::Response(_)
            | ClientJsonRpcMessage::Error(_)
    );
    // The specification asks for 202, but some servers send an empty 200.
    if status.is_success() && content_length == Some(0) && expects_no_answer {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    if !status.is_success() {
        let body = match failure_body(response, content_length).await {
            Ok(body) => body,
            Err(error @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                return Err(status_error.map(StreamableHttpError::from).unwrap_or(error));
            }
            Err(_) => "<failed to read response body>".to_owned(),
        };
        // Before the JSON-RPC error below, which would hand rmcp a
        // rejection of `server/discover` it cannot pair with its request.
        if let Some((response, bare)) =
            discover_rejection(message, session_was_attached, status, &body)
        {
            answer.refused_bare = bare;
            return Ok(response);
        }
        // A 401 or 403 without a challenge keeps its status rather than
        // passing as an ordinary JSON-RPC error.
        let is_auth_failure = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        if !is_auth_failure && is_json {
            match json_rpc_error(&body) {
                Some(error) => return Ok(StreamableHttpPostResponse::Json(error, session_id)),
                None => tracing::warn!("HTTP {status}: the JSON body is no JSON-RPC error"),
            }
        }
        if let Some(error) = status_error {
            return Err(error.into());
        }
        answer.refused_bare = true;
        return Err(unexpected_status(status, &body));
    }
    match content_type.as_deref() {
        Some(kind) if kind.starts_with(EVENT_STREAM_MIME_TYPE) => {
            Ok(StreamableHttpPostResponse::Sse(
                bounded_events(response.bytes_stream(), max_sse_event_size, oversized),
                session_id,
            ))
        }
        Some(kind) if kind.starts_with(JSON_MIME_TYPE) => {
            let body = bounded_body(
                response.bytes_stream(),
                content_length,
                MAX_JSON_RESPONSE_SIZE,
            )
            .await?;
            match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, session_id)),
                // Nothing waits for an answer to these; a request's would
                // otherwise be awaited for ever.
                Err(error) if expects_no_answer => {
                    tracing::warn!(
                        "the JSON answer is no JSON-RPC message; taken as accepted: {error}"
                    );
                    Ok(StreamableHttpPostResponse::Accepted)
                }
                Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!(
                        "could not parse JSON response as ServerJsonRpcMessage: {error}: {}",
                        preview(&body)
                    ),
                ))),
            }
        }
        _ => {
            tracing::error!("unexpected content type: {content_type:?}");
            Err(StreamableHttpError::UnexpectedContentType(content_type))
        }
    }
}

/// What the answer to a GET means to rmcp.
fn streamed(
    response: reqwest::Response,
    max_sse_event_size: usize,
    oversized: &Arc<AtomicBool>,
) -> Result<SseStream, HttpError> {
    if response.status() == StatusCode::METHOD_NOT_ALLOWED {
        return Err(StreamableHttpError::ServerDoesNotSupportSse);
    }
    if let Some(challenge) = challenge(&response)? {
        return Err(challenge);
    }
    if let Some(error) = http_status_error(response.status(), response.headers()) {
        return Err(error.into());
    }
    let response = response.error_for_status()?;
    match response.headers().get(CONTENT_TYPE) {
        Some(kind)
            if kind
                .as_bytes()
                .starts_with(EVENT_STREAM_MIME_TYPE.as_bytes())
                || kind.as_bytes().starts_with(JSON_MIME_TYPE.as_bytes()) => {}
        Some(kind) => {
            return Err(StreamableHttpError::UnexpectedContentType(Some(
                String::from_utf8_lossy(kind.as_bytes()).into_owned(),
            )));
        }
        None => return Err(StreamableHttpError::UnexpectedContentType(None)),
    }
    Ok(bounded_events(
        response.bytes_stream(),
        max_sse_event_size,
        oversized,
    ))
}

/// The error of an exchange refused with `status` and `body`, written
/// `HTTP <status>: <body>` as rmcp writes it: people read it in errors, and
/// the OAuth layer, above rmcp's `AuthClient`, reads a bare 401 from it
/// ([`status_of_unexpected`]).
fn unexpected_status(status: StatusCode, body: &str) -> HttpError {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP {status}: {body}")))
}

/// The status [`unexpected_status`] wrote into `message`.
pub(crate) fn status_of_unexpected(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("HTTP ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits != 3 {
        return None;
    }
    rest.get(..3)?.parse().ok()
}

/// The `AuthRequired` of a 401, or the `InsufficientScope` of a 403, that
/// came with a challenge.
fn challenge(response: &reqwest::Response) -> Result<Option<HttpError>, HttpError> {
    let status = response.status();
    if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        return Ok(None);
    }
    let Some(header) = response.headers().get(WWW_AUTHENTICATE) else {
        return Ok(None);
    };
    let header = header.to_str().map_err(|_| {
        StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed(
            "invalid www-authenticate header value",
        ))
    })?;
    Ok(Some(if status == StatusCode::UNAUTHORIZED {
        StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_owned()))
    } else {
        StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
            header.to_owned(),
            scope_of(header),
        ))
    }))
}

/// The `scope=` of a challenge, quoted or not (as rmcp reads it).
fn scope_of(header: &str) -> Option<String> {
    let start = header.to_ascii_lowercase().find("scope=")? + "scope=".len();
    let value = header.get(start..)?;
    if let Some(quoted) = value.strip_prefix('"') {
        return quoted
            .find('"')
            .and_then(|end| quoted.get(..end))
            .map(str::to_owned);
    }
    let end = value
        .find(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .unwrap_or(value.len());
    value
        .get(..end)
        .filter(|scope| !scope.is_empty())
        .map(str::to_owned)
}

/// A 429 or 5xx as rmcp's `HttpStatus`, with a short enough `Retry-After`.
fn http_status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(RETRY_AFTER)
        .filter(|value| value.as_bytes().len() <= MAX_RETRY_AFTER_BYTES)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

fn with_custom_headers(
    mut request: reqwest::RequestBuilder,
    headers: HashMap<HeaderName, HeaderValue>,
) -> Result<reqwest::RequestBuilder, HttpError> {
    for (name, value) in headers {
        let reserved = RESERVED_HEADERS
            .iter()
            .any(|reserved| name.as_str().eq_ignore_ascii_case(reserved));
        // rmcp's worker sends the protocol version this way once initialized.
        if reserved
            && !name
                .as_str()
                .eq_ignore_ascii_case(HEADER_MCP_PROTOCOL_VERSION)
        {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        request = request.header(name, value);
    }
    Ok(request)
}

/// A failure's body, at most [`MAX_ERROR_RESPONSE_SIZE`], decoded as
/// reqwest decodes text (the charset of `Content-Type`, a BOM).
async fn failure_body(
    response: reqwest::Response,
    content_length: Option<u64>,
) -> Result<String, HttpError> {
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let body = bounded_body(
        response.bytes_stream(),
        content_length,
        MAX_ERROR_RESPONSE_SIZE,
    )
    .await?;
    let mut buffered = http::Response::new(body);
    if let Some(content_type) = content_type {
        buffered.headers_mut().insert(CONTENT_TYPE, content_type);
    }
    Ok(reqwest::Response::from(buffered)
        .text()
        .await
        .unwrap_or_else(|_| "<failed to read response body>".to_owned()))
}

/// A body read whole, but never past `max_size` bytes.
async fn bounded_body(
    stream: impl Stream<Item = Result<Bytes, reqwest::Error>>,
    content_length: Option<u64>,
    max_size: usize,
) -> Result<Vec<u8>, HttpError> {
    if content_length.is_some_and(|length| length > max_size as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
    }
    futures::pin_mut!(stream);
    let mut body = Vec::new();
    while let Some(chunk) = stream.try_next().await? {
        if chunk.len() > max_size - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `body` as a JSON-RPC error, if it is one.
fn json_rpc_error(body: &str) -> Option<ServerJsonRpcMessage> {
    match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(message @ ServerJsonRpcMessage::Error(_)) => Some(message),
        _ => None,
    }
}

/// A session-less `server/discover` refused with a 4xx other than 401/403,
/// as the JSON-RPC error rmcp takes as "no 2026 server here"; with whether
/// the body held no JSON-RPC error of the server's own.
fn discover_rejection(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    status: StatusCode,
    body: &str,
) -> Option<(StreamableHttpPostResponse, bool)> {
    if session_was_attached
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let (error, bare) = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(error)) => (error.error, false),
        _ => (
            ErrorData::invalid_request(
                format!("server/discover rejected with HTTP {status}: {body}"),
                None,
            ),
            true,
        ),
    };
    let response = StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    );
    Some((response, bare))
}

/// The start of an unusable body, for an error message.
fn preview(body: &[u8]) -> Cow<'static, str> {
    if body.is_empty() {
        return Cow::Borrowed("<empty>");
    }
    let text = String::from_utf8_lossy(body);
    let mut end = text.len().min(BODY_PREVIEW_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(text[..end].to_owned())
}

/// Why an event stream ended early.
#[derive(Debug, thiserror::Error)]
enum EventStreamError {
    #[error(transparent)]
    Body(reqwest::Error),
    #[error("SSE event exceeded the maximum size of {max_size} bytes")]
    EventTooLarge { max_size: usize },
}

/// The SSE events of `bytes`, ending with an error at the first event
/// longer than `max_event_size` (counted as rmcp counts it: the data an
/// event keeps, comments left out, a newline per joined line), which sets
/// `oversized`.
fn bounded_events(
    bytes: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    max_event_size: usize,
    oversized: &Arc<AtomicBool>,
) -> SseStream {
    let oversized = oversized.clone();
    let checked = bytes.scan(
        (EventSize::new(max_event_size), false),
        move |(size, failed), chunk| {
            if *failed {
                return std::future::ready(None);
            }
            let item = match chunk {
                Ok(chunk) if size.observe(&chunk) => Ok(chunk),
                Ok(_) => {
                    *failed = true;
                    oversized.store(true, Ordering::Relaxed);
                    Err(EventStreamError::EventTooLarge {
                        max_size: size.max_size,
                    })
                }
                Err(error) => {
                    *failed = true;
                    Err(EventStreamError::Body(error))
                }
            };
            std::future::ready(Some(item))
        },
    );
    crate::sse::events(Box::pin(checked)).boxed()
}

/// How much of the current SSE event has been read.
#[derive(Debug)]
struct EventSize {
    max_size: usize,
    /// The event's lines so far.
    kept: usize,
    /// The line being read.
    line: usize,
    line_is_comment: bool,
    after_cr: bool,
}

impl EventSize {
    fn new(max_size: usize) -> Self {
        Self {
            max_size,
            kept: 0,
            line: 0,
            line_is_comment: false,
            after_cr: false,
        }
    }

    /// Reads `chunk`; false once the event is over the limit.
    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            let within = match byte {
                b'\r' => {
                    self.after_cr = true;
                    self.end_line()
                }
                b'\n' => self.end_line(),
                _ => {
                    if self.line == 0 {
                        self.line_is_comment = byte == b':';
                    }
                    self.line = self.line.saturating_add(1);
                    self.within()
                }
            };
            if !within {
                return false;
            }
        }
        true
    }

    fn end_line(&mut self) -> bool {
        if self.line == 0 {
            self.kept = 0;
        } else if !self.line_is_comment {
            // The parser joins data lines with a newline.
            self.kept = self.kept.saturating_add(self.line).saturating_add(1);
        }
        self.line = 0;
        self.line_is_comment = false;
        self.within()
    }

    fn within(&self) -> bool {
        self.kept.saturating_add(self.line) <= self.max_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream with an event over the limit ends in an error and marks
    /// its client, which then refuses to resume any stream, without a
    /// request, in the way rmcp's worker takes as final.
    #[tokio::test]
    async fn an_oversized_event_ends_resumption() {
        crate::http::install_tls_provider();
        let client = Streamable::new(reqwest::Client::new());
        let chunks: Vec<Result<Bytes, reqwest::Error>> = vec![
            Ok(Bytes::from_static(b"id: 1\ndata: {}\n\n")),
            Ok(Bytes::from_static(
                b"id: 2\ndata: 0123456789012345678901234567890\n\n",
            )),
        ];
        let mut events = bounded_events(futures::stream::iter(chunks), 16, &client.oversized);
        assert!(events.next().await.is_some_and(|event| event.is_ok()));
        assert!(events.next().await.is_some_and(|event| event.is_err()));
        assert!(client.oversized.load(Ordering::Relaxed));

        // Port 9 (discard) on loopback: nothing is sent, or this would fail
        // with a connection error instead.
        let resumed = client
            .get(
                "http://127.0.0.1:9/mcp".into(),
                Some("session".into()),
                Some("2".to_owned()),
                None,
                HashMap::new(),
                16,
            )
            .await;
        assert!(matches!(
            resumed.outcome,
            Err(StreamableHttpError::ServerDoesNotSupportSse)
        ));
        assert!(resumed.answer.is_none());
    }

    #[test]
    fn event_sizes_are_counted_as_rmcp_counts_them() {
        let mut size = EventSize::new(9);
        assert!(size.observe(b"data: ab\n\n"));
        assert!(size.observe(b":comment\r\n"));
        assert!(!size.observe(b"data: 0123456789"));
        let mut split = EventSize::new(8);
        assert!(split.observe(b"data: a\r"));
        assert!(split.observe(b"\n\ndata: b\n"));
    }

    #[test]
    fn scopes_of_challenges() {
        assert_eq!(
            scope_of(r#"Bearer error="insufficient_scope", scope="a b""#).as_deref(),
            Some("a b")
        );
        assert_eq!(
            scope_of("Bearer Scope=read:data, x=y").as_deref(),
            Some("read:data")
        );
        assert_eq!(scope_of(r#"Bearer scope="open"#), None);
        assert_eq!(scope_of("Bearer scope="), None);
        assert_eq!(scope_of("Bearer"), None);
    }

    #[test]
    fn statuses_read_back_from_unexpected_answers() {
        let written = |status: u16, body: &str| match unexpected_status(
            StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            body,
        ) {
            StreamableHttpError::UnexpectedServerResponse(message) => message.into_owned(),
            other => other.to_string(),
        };
        assert_eq!(status_of_unexpected(&written(401, "{}")), Some(401));
        assert_eq!(status_of_unexpected(&written(404, "")), Some(404));
        assert_eq!(status_of_unexpected("HTTP 4010 x"), None);
        assert_eq!(status_of_unexpected("garbage"), None);
    }

    #[test]
    fn reserved_headers_are_refused_but_the_protocol_version() {
        crate::http::install_tls_provider();
        let client = reqwest::Client::new();
        let with = |name: &'static str| {
            let headers =
                HashMap::from([(HeaderName::from_static(name), HeaderValue::from_static("x"))]);
            with_custom_headers(client.get("http://127.0.0.1:9/"), headers).is_ok()
        };
        assert!(!with("accept"));
        assert!(!with("mcp-session-id"));
        assert!(!with("last-event-id"));
        assert!(with("mcp-protocol-version"));
        assert!(with("x-api-key"));
    }
}
