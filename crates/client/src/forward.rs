//! rmcp's [`StreamableHttpClient`] written once for the HTTP clients that
//! wrap another: [`crate::http::RetryingHttp`] (time limits, retries) around
//! our own client over reqwest ([`crate::streamable::Streamable`]), and
//! [`crate::auth::OAuthHttp`] (authorize and send again) around rmcp's
//! `AuthClient`. Each says only what it does around one request
//! ([`Layer::run`]) and, if anything, to what comes back ([`Layer::posted`],
//! [`Layer::streamed`]); [`Forward`] passes every method of the trait,
//! the event-size-limited ones included, through that.
//!
//! What a layer wraps is an [`Exchange`]: an exchange's outcome, as rmcp
//! wants it, together with the response's status and headers ([`Answer`])
//! where the client below knows them. Only the innermost does; a client
//! that is only an rmcp one ([`Unseen`]) answers without them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use futures::stream::BoxStream;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

pub(crate) type HttpError = StreamableHttpError<reqwest::Error>;
pub(crate) type SseItem = Result<sse_stream::Sse, sse_stream::Error>;
pub(crate) type SseStream = BoxStream<'static, SseItem>;

/// The response to one request, as far as the layers above need it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Whether a failure status came with no JSON-RPC message in its body:
    /// the sign, on a session's first POST, of a URL that does not speak
    /// Streamable HTTP.
    pub refused_bare: bool,
    /// The local address of the connection it came on, by which the
    /// trace finds whether that connection was opened for it
    /// ([`crate::connection::reach_at`]).
    pub local: Option<std::net::SocketAddr>,
}

/// One exchange: what it means to rmcp, and the response it had, if one
/// came and the client below tells.
pub struct Exchanged<T> {
    pub outcome: Result<T, HttpError>,
    pub answer: Option<Answer>,
}

/// A client a [`Layer`] wraps: rmcp's three exchanges, with their answers.
pub trait Exchange: Send + Sync + 'static {
    fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Exchanged<StreamableHttpPostResponse>> + Send;

    fn get(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Exchanged<SseStream>> + Send;

    fn delete(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Exchanged<()>> + Send;
}

/// An rmcp client as an [`Exchange`] whose answers are not seen.
#[derive(Debug, Clone)]
pub struct Unseen<C>(pub C);

impl<C> Exchange for Unseen<C>
where
    C: StreamableHttpClient<Error = reqwest::Error> + Sync,
{
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Exchanged<StreamableHttpPostResponse> {
        let outcome = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_token,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        Exchanged {
            outcome,
            answer: None,
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
        let outcome = self
            .0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_token,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        Exchanged {
            outcome,
            answer: None,
        }
    }

    async fn delete(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Exchanged<()> {
        let outcome = self
            .0
            .delete_session(uri, session_id, auth_token, custom_headers)
            .await;
        Exchanged {
            outcome,
            answer: None,
        }
    }
}

/// What a wrapping HTTP client does around the client it wraps.
pub trait Layer: Clone + Send + Sync + 'static {
    type Inner: Exchange;

    fn inner(&self) -> &Self::Inner;

    /// Runs one request; `call` sends it afresh each time it is called.
    fn run<T, F, Fut>(&self, call: F) -> impl Future<Output = Exchanged<T>> + Send
    where
        T: Send,
        F: Fn() -> Fut + Send,
        Fut: Future<Output = Exchanged<T>> + Send;

    /// What becomes of the outcome of the POST `post`.
    fn posted(
        &self,
        _post: &Request<'_>,
        response: Exchanged<StreamableHttpPostResponse>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        response.outcome
    }

    /// What becomes of the stream of the GET `get`.
    fn streamed(
        &self,
        _get: &Request<'_>,
        stream: Exchanged<SseStream>,
    ) -> Result<SseStream, HttpError> {
        stream.outcome
    }
}

/// What one POST or GET asked for, as handed to the client.
pub struct Request<'a> {
    /// The message a POST carried; `None` for a GET.
    pub message: Option<&'a ClientJsonRpcMessage>,
    pub session_id: Option<&'a Arc<str>>,
    /// The `Last-Event-ID` a GET resumes after; `None` when it opens the
    /// session's stream.
    pub last_event_id: Option<&'a str>,
    /// Whether a bearer token went with it (its value is nobody's business
    /// here).
    pub authorized: bool,
    pub custom_headers: &'a HashMap<HeaderName, HeaderValue>,
    /// When it was first sent (before any retry).
    pub sent_at: Instant,
}

/// A [`Layer`] as an rmcp [`StreamableHttpClient`].
#[derive(Debug, Clone)]
pub struct Forward<L>(pub(crate) L);

impl<L: Layer> StreamableHttpClient for Forward<L> {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            usize::MAX,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let sent_at = Instant::now();
        let response = self
            .0
            .run(|| {
                self.0.inner().post(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        let post = Request {
            message: Some(&message),
            session_id: session_id.as_ref(),
            last_event_id: None,
            authorized: auth_header.is_some(),
            custom_headers: &custom_headers,
            sent_at,
        };
        self.0.posted(&post, response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.0
            .run(|| {
                self.0.inner().delete(
                    uri.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                )
            })
            .await
            .outcome
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseStream, HttpError> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            usize::MAX,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<SseStream, HttpError> {
        let sent_at = Instant::now();
        let stream = self
            .0
            .run(|| {
                self.0.inner().get(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        let get = Request {
            message: None,
            session_id: session_id.as_ref(),
            last_event_id: last_event_id.as_deref(),
            authorized: auth_header.is_some(),
            custom_headers: &custom_headers,
            sent_at,
        };
        self.0.streamed(&get, stream)
    }
}
