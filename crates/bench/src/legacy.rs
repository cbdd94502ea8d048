//! The deprecated HTTP+SSE transport of 2024-11-05 as the generator
//! speaks it (`--transport sse`): a GET opens the session's stream on a
//! connection of its own, whose first event, `endpoint`, names where to
//! POST; each JSON-RPC message is POSTed there on a second keep-alive
//! connection (202 Accepted) and its answer comes back on the stream. A
//! reader task splits the stream into events, which nexo-client's
//! [`legacy_sse::read_event`] reads (so the endpoint is resolved and held
//! to the stream's origin as the client does, and seed 001's dialect, a
//! `connect` event and wrapped messages, is spoken too); the link waits for the
//! one whose id it sent, answering requests of the server's from the
//! scenario on the way and skipping notifications and answers to
//! requests given up on. The time to the first event is when the answer
//! came, the POST's 202 being no event.

use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{Method, StatusCode};
use http_body_util::{BodyDataStream, BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use nexo_client::legacy_sse::{self, Event};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::check::{ErrorClass, Failed};
use crate::http::{Endpoint, Reply};
use crate::wire;

/// One legacy session: its stream and where to POST.
pub struct LegacyLink {
    stream: Endpoint,
    session: Option<Session>,
}

struct Session {
    post: Endpoint,
    /// What the stream named: where to POST, and whether to wrap.
    endpoint: legacy_sse::Endpoint,
    sender: SendRequest<Full<Bytes>>,
    messages: mpsc::UnboundedReceiver<Value>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn transport(message: impl Into<String>) -> Failed {
    Failed::new(ErrorClass::Transport, message)
}

impl LegacyLink {
    pub fn new(stream: Endpoint) -> Self {
        Self {
            stream,
            session: None,
        }
    }

    /// Forgets the session (after a failure or a timeout); the next
    /// request opens another stream.
    pub fn reset(&mut self) {
        self.session = None;
    }

    /// Opens the stream and reads its `endpoint` event.
    async fn open(&mut self) -> Result<&mut Session, Failed> {
        if self.session.is_some() {
            if self.is_open() {
                return self.session.as_mut().ok_or_else(|| transport("no session"));
            }
            // A new stream would be a new session, not yet begun.
            self.session = None;
            return Err(transport("the session's SSE stream ended"));
        }
        let mut get = self.stream.connect().await?;
        let request = self
            .stream
            .request(Method::GET)
            .header(ACCEPT, "text/event-stream")
            .body(Full::new(Bytes::new()))
            .map_err(|error| transport(format!("request: {error}")))?;
        let response = get
            .send_request(request)
            .await
            .map_err(|error| transport(format!("{error}")))?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(Failed::new(
                ErrorClass::Http(status.as_u16()),
                format!("HTTP {status} to the SSE stream's GET"),
            ));
        }
        let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel();
        let (messages_tx, messages) = mpsc::unbounded_channel();
        let body = response.into_body();
        let stream_url = self.stream.url.clone();
        let reader = tokio::spawn(async move {
            // The GET's connection lives as long as its stream is read.
            let _get = get;
            let mut endpoint_tx = Some(endpoint_tx);
            let mut events = Box::pin(nexo_client::sse::events(BodyDataStream::new(body)));
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(sse_stream::Error::Body(_)) => return,
                    Err(_) => continue,
                };
                let data = event.data.unwrap_or_default();
                match legacy_sse::read_event(&stream_url, event.event.as_deref(), &data) {
                    Ok(Event::Message(message)) => {
                        if messages_tx.send(message).is_err() {
                            return;
                        }
                    }
                    Ok(Event::Endpoint(endpoint)) => {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(Ok(endpoint));
                        }
                    }
                    Err(error) => {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(Err(error));
                        }
                    }
                    Ok(Event::Unreadable(_) | Event::Skipped) => {}
                }
            }
        });
        let endpoint = endpoint_rx
            .await
            .map_err(|_| transport("the SSE stream ended before its `endpoint` event"))?
            .map_err(|error| transport(error.to_string()))?;
        let post = self
            .stream
            .at(endpoint.url())
            .map_err(|error| transport(error.to_string()))?;
        let sender = post.connect().await?;
        Ok(self.session.insert(Session {
            post,
            endpoint,
            sender,
            messages,
            reader,
        }))
    }

    /// POSTs `message` and, for a request, waits for its answer on the
    /// stream.
    pub async fn exchange(
        &mut self,
        message: &Value,
        id: Option<u64>,
        answers: Option<&Map<String, Value>>,
    ) -> Result<Reply, Failed> {
        let session = self.open().await?;
        session.post(message).await?;
        let Some(id) = id else {
            return Ok(Reply {
                message: Value::Null,
                first_event: None,
            });
        };
        loop {
            let Some(message) = session.messages.recv().await else {
                return Err(transport("the SSE stream ended without the answer"));
            };
            if crate::answers::is_request(&message) {
                let response = crate::answers::respond(&message, answers);
                session.post(&response).await?;
            } else if message.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(Reply {
                    message,
                    first_event: Some(Instant::now()),
                });
            }
        }
    }

    /// Begins the session: `initialize`, then `initialized`.
    pub async fn initialize(&mut self, id: u64, capabilities: &Value) -> Result<(), Failed> {
        self.reset();
        let reply = self
            .exchange(&wire::initialize(id, capabilities), Some(id), None)
            .await?;
        crate::check::answer(&reply.message, id, "initialize", &[])?;
        self.exchange(&wire::initialized(), None, None).await?;
        Ok(())
    }

    /// A session is begun and its stream still read: requests can go on
    /// it (else the link begins another with [`LegacyLink::initialize`]).
    pub fn is_open(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|session| !session.reader.is_finished() && !session.sender.is_closed())
    }
}

impl Session {
    async fn post(&mut self, message: &Value) -> Result<(), Failed> {
        let request = self
            .post
            .request(Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(
                serde_json::to_vec(&self.endpoint.body(message.clone())).unwrap_or_default(),
            )))
            .map_err(|error| transport(format!("request: {error}")))?;
        self.sender
            .ready()
            .await
            .map_err(|error| transport(format!("connection: {error}")))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|error| transport(format!("{error}")))?;
        let status = response.status();
        let _ = response.into_body().collect().await;
        if status.is_success() {
            Ok(())
        } else {
            Err(Failed::new(
                ErrorClass::Http(status.as_u16()),
                format!("HTTP {status} to a POST of the legacy session"),
            ))
        }
    }
}
