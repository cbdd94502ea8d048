//! rmcp's [`StreamableHttpClient`] written once for the HTTP clients that
//! wrap another: [`crate::http::RetryingHttp`] (time limits, retries) around
//! reqwest, and [`crate::auth::OAuthHttp`] (authorize and send again) around
//! rmcp's `AuthClient`. Each says only what it does around one request
//! ([`Layer::run`]) and, if anything, to what comes back ([`Layer::posted`],
//! [`Layer::streamed`]); [`Forward`] passes every method of the trait,
//! the event-size-limited ones included, through that.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

pub(crate) type HttpError = StreamableHttpError<reqwest::Error>;
pub(crate) type SseItem = Result<sse_stream::Sse, sse_stream::Error>;
pub(crate) type SseStream = BoxStream<'static, SseItem>;

/// What a wrapping HTTP client does around the client it wraps.
pub trait Layer: Clone + Send + Sync + 'static {
    type Inner: StreamableHttpClient<Error = reqwest::Error> + Sync;

    fn inner(&self) -> &Self::Inner;

    /// Runs one request; `call` sends it afresh each time it is called.
    fn run<T, F, Fut>(&self, call: F) -> impl Future<Output = Result<T, HttpError>> + Send
    where
        T: Send,
        F: Fn() -> Fut + Send,
        Fut: Future<Output = Result<T, HttpError>> + Send;

    /// What becomes of a POST's outcome; `session_id` is the one it carried.
    fn posted(
        &self,
        _session_id: Option<&Arc<str>>,
        response: Result<StreamableHttpPostResponse, HttpError>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        response
    }

    /// What becomes of a GET's stream; `opening` when it resumes nothing.
    fn streamed(
        &self,
        _opening: bool,
        stream: Result<SseStream, HttpError>,
    ) -> Result<SseStream, HttpError> {
        stream
    }
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
        let response = self
            .0
            .run(|| {
                self.0.inner().post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        self.0.posted(session_id.as_ref(), response)
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
                self.0.inner().delete_session(
                    uri.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                )
            })
            .await
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
        let opening = last_event_id.is_none();
        let stream = self
            .0
            .run(|| {
                self.0.inner().get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        self.0.streamed(opening, stream)
    }
}
