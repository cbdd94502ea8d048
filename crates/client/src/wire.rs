//! The trace of a Streamable HTTP session, written where its HTTP exchanges
//! are seen (the innermost client layer, [`crate::http::Retrying`]) rather
//! than by the session's tap: only there are the method, the status, the
//! headers and the `Mcp-Session-Id` known, and only there are the messages
//! rmcp sends on its own seen (the `initialize` and `initialized` it sends
//! again when the server has forgotten the session, with the 404 that
//! started it).
//!
//! - A POSTed message: written once the POST is answered, with the time it
//!   was first sent, the method and headers of the request, and the status
//!   of its answer (a `404` for a session the server no longer knows).
//! - Messages received: each one of a JSON answer, and each `message` event
//!   of an SSE stream (a POST's answer, the session's GET stream) as it is
//!   read, with the request's method and the answer's status.
//!
//! rmcp hands the client's layers the outcome of an exchange, not the
//! response: the status is read from that outcome (200 for a stream or a
//! message, 202 for an accepted notification, the status of an error) and
//! left out where it cannot be told (a JSON-RPC error in a JSON body may
//! come with any status). Of the response's headers only `Mcp-Session-Id`
//! is handed on. A message's session is the `Mcp-Session-Id` it carried or
//! that came with its answer; an `initialize` before the answer has none.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use nexo_trace::{Direction, HttpInfo, REDACTED};
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_client::{StreamableHttpError, StreamableHttpPostResponse};

use crate::forward::{HttpError, Request, SseStream};
use crate::tap::Traced;

/// The header that names the session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Records what one Streamable HTTP client exchanges.
#[derive(Clone)]
pub(crate) struct WireTrace(pub(crate) Traced);

impl std::fmt::Debug for WireTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireTrace")
            .field("server", &self.0.server)
            .finish_non_exhaustive()
    }
}

impl WireTrace {
    /// Records the POST `post` and what came back; an SSE answer is
    /// recorded event by event as it is read.
    pub(crate) fn posted(
        &self,
        post: &Request<'_>,
        response: Result<StreamableHttpPostResponse, HttpError>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let status = match &response {
            Ok(StreamableHttpPostResponse::Accepted) => Some(202),
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(_), _)) => None,
            Ok(StreamableHttpPostResponse::Json(..) | StreamableHttpPostResponse::Sse(..)) => {
                Some(200)
            }
            Ok(_) => None,
            Err(error) => error_status(error),
        };
        if let Some(message) = post.message {
            let mut request = HttpInfo::request(&Method::POST, &request_headers(post));
            request.status = status;
            let session = post.session_id.map(|id| &**id);
            self.0.record(
                Direction::Sent,
                message,
                session,
                Some(&request),
                post.sent_at,
            );
        }
        let answered = |given: &Option<String>| {
            let session: Option<Arc<str>> = given
                .as_deref()
                .map(Arc::from)
                .or_else(|| post.session_id.cloned());
            let info = HttpInfo {
                status,
                method: Some(Method::POST.to_string()),
                headers: given
                    .iter()
                    .map(|id| (SESSION_HEADER.to_owned(), id.clone()))
                    .collect(),
            };
            (session, info)
        };
        match response {
            Ok(StreamableHttpPostResponse::Json(message, given)) => {
                let (session, info) = answered(&given);
                self.0.record(
                    Direction::Received,
                    &message,
                    session.as_deref(),
                    Some(&info),
                    Instant::now(),
                );
                Ok(StreamableHttpPostResponse::Json(message, given))
            }
            Ok(StreamableHttpPostResponse::Sse(stream, given)) => {
                let (session, info) = answered(&given);
                let stream = self.events(stream, session, info);
                Ok(StreamableHttpPostResponse::Sse(stream, given))
            }
            other => other,
        }
    }

    /// Records each message of the stream the GET `get` opened.
    pub(crate) fn streamed(
        &self,
        get: &Request<'_>,
        stream: Result<SseStream, HttpError>,
    ) -> Result<SseStream, HttpError> {
        let info = HttpInfo {
            status: Some(200),
            method: Some(Method::GET.to_string()),
            headers: Vec::new(),
        };
        Ok(self.events(stream?, get.session_id.cloned(), info))
    }

    /// `stream`, with each message event recorded as it is read.
    fn events(&self, stream: SseStream, session: Option<Arc<str>>, info: HttpInfo) -> SseStream {
        let trace = self.0.clone();
        stream
            .inspect(move |item| {
                let Ok(event) = item else {
                    return;
                };
                let is_message = event.event.as_deref().is_none_or(|kind| kind == "message");
                let data = event.data.as_deref().map(str::trim).unwrap_or_default();
                if is_message && !data.is_empty() {
                    trace.record_bytes(
                        Direction::Received,
                        data.as_bytes(),
                        session.as_deref(),
                        Some(&info),
                        Instant::now(),
                    );
                }
            })
            .boxed()
    }
}

/// The headers handed to reqwest for `request`: the custom ones (the
/// user's, the protocol version, `Mcp-Method`), the session, the event a
/// GET resumes after, and the bearer token (as [`REDACTED`]: its value
/// never gets here).
fn request_headers(request: &Request<'_>) -> HeaderMap {
    let mut headers: HeaderMap = request
        .custom_headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if request.authorized {
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_static(REDACTED),
        );
    }
    if let Some(value) = request
        .session_id
        .and_then(|id| HeaderValue::from_str(id).ok())
    {
        headers.insert(HeaderName::from_static(SESSION_HEADER), value);
    }
    if let Some(value) = request
        .last_event_id
        .and_then(|id| HeaderValue::from_str(id).ok())
    {
        headers.insert(HeaderName::from_static("last-event-id"), value);
    }
    headers
}

/// The status of a failed exchange, where rmcp kept it.
fn error_status(error: &HttpError) -> Option<u16> {
    match error {
        StreamableHttpError::SessionExpired => Some(404),
        StreamableHttpError::HttpStatus(status) => Some(status.status),
        StreamableHttpError::AuthRequired(_) => Some(401),
        StreamableHttpError::InsufficientScope(_) => Some(403),
        StreamableHttpError::UnexpectedServerResponse(message) => {
            crate::http::status_in_message(message)
        }
        StreamableHttpError::Client(error) => error.status().map(|status| status.as_u16()),
        _ => None,
    }
}
