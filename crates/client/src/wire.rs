//! The trace of a Streamable HTTP session, written where its HTTP exchanges
//! are seen (the layer above the innermost client, [`crate::http::Retrying`])
//! rather than by the session's tap: only there are the method, the status,
//! the headers and the `Mcp-Session-Id` known, and only there are the
//! messages rmcp sends on its own seen (the `initialize` and `initialized`
//! it sends again when the server has forgotten the session, with the 404
//! that started it).
//!
//! - A POSTed message: written once the POST is answered (after any
//!   retries), with the time it was first sent, the method and headers of
//!   the request, the status of the response (a `404` for a session the
//!   server no longer knows), and the connection it went over: opened for
//!   it, with what resolving the name and connecting took, or reused
//!   ([`crate::connection`]).
//! - Messages received: each one of a JSON answer, and each `message` event
//!   of an SSE stream (a POST's answer, the session's GET stream) as it is
//!   read, with the request's method and the response's status and headers.
//!
//! Status and headers are the response's own, as the innermost client
//! ([`crate::streamable`]) hands them up; an exchange that had no response
//! (refused connection, time limit) has no status. A message's session is
//! the `Mcp-Session-Id` it carried or that came with its answer; an
//! `initialize` before the answer has none. Credential headers are
//! redacted by the trace writer (`nexo_trace::is_credential_header`:
//! `Set-Cookie`, `Authorization` and the like); the bearer token never
//! reaches this module.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use nexo_trace::{ConnectionCost, Direction, HttpInfo, REDACTED};
use rmcp::transport::streamable_http_client::StreamableHttpPostResponse;

use crate::connection::Reach;
use crate::forward::{Answer, HttpError, Request, SseStream};
use crate::streamable::ACCEPTED_TYPES;
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
    /// Records the POST `post` and what came back (`answer`, the response,
    /// if one came); an SSE answer is recorded event by event as it is read.
    pub(crate) fn posted(
        &self,
        post: &Request<'_>,
        answer: Option<&Answer>,
        response: Result<StreamableHttpPostResponse, HttpError>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let status = answer.map(|answer| answer.status.as_u16());
        if let Some(message) = post.message {
            let mut request = HttpInfo::request(&Method::POST, &request_headers(post));
            request.status = status;
            request.connection = answer
                .and_then(|answer| answer.local)
                .map(|local| cost(crate::connection::reach_at(local)));
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
            (session, response_info(Method::POST, answer))
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

    /// Records each message of the stream the GET `get` opened, answered
    /// with `answer`.
    pub(crate) fn streamed(
        &self,
        get: &Request<'_>,
        answer: Option<&Answer>,
        stream: SseStream,
    ) -> SseStream {
        let info = response_info(Method::GET, answer);
        self.events(stream, get.session_id.cloned(), info)
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

/// What a request's record shows of the connection it went over.
fn cost(reach: Reach) -> ConnectionCost {
    match reach {
        Reach::New(opened) => ConnectionCost {
            reused: false,
            dns_us: opened.dns_us,
            connect_us: Some(opened.connect_us),
            tls_us: opened.tls_us,
        },
        Reach::Reused => ConnectionCost {
            reused: true,
            dns_us: None,
            connect_us: None,
            tls_us: None,
        },
    }
}

/// What a received message's record shows of the exchange: the request's
/// method, and the response's status and headers.
fn response_info(method: Method, answer: Option<&Answer>) -> HttpInfo {
    let mut info = match answer {
        Some(answer) => HttpInfo::response(answer.status, &answer.headers),
        None => HttpInfo::default(),
    };
    info.method = Some(method.to_string());
    info
}

/// The headers sent for `request`: `Accept` (and a POST's
/// `Content-Type`), the custom ones (the user's, the protocol version,
/// `Mcp-Method`), the session, the event a GET resumes after, and the
/// bearer token (as [`REDACTED`]: its value never gets here).
fn request_headers(request: &Request<'_>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static(ACCEPTED_TYPES));
    if request.message.is_some() {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    headers.extend(
        request
            .custom_headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    if request.authorized {
        headers.insert(AUTHORIZATION, HeaderValue::from_static(REDACTED));
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
