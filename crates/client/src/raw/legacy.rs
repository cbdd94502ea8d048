//! Raw JSON-RPC over the deprecated HTTP+SSE transport of 2024-11-05, for
//! `nexo bench` and `nexo check`: a [`LegacyLink`] opens the session's
//! stream with a GET, reads its first event (`endpoint`, or seed 001's
//! `connect`) with [`crate::legacy_sse::read_event`], POSTs each message
//! there (wrapped as the dialect wants) and matches the answers that come
//! back on the stream by id, so several can be in flight. What else comes
//! on the stream goes to the [`Observer`], as with a [`super::RawChild`]:
//! the server's requests (whose answers the link POSTs back at once),
//! notifications, data that is no JSON-RPC, answers nobody awaits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::oneshot;
use url::Url;

use super::{Answer, LinkError, Observer, Pending, WireId, dispatch};
use crate::legacy_sse::{Endpoint, Event, read_event};

/// The most of a refused POST's body kept for its error.
const BODY_PREVIEW: usize = 300;

/// Why a legacy stream gave no session.
#[derive(Debug)]
pub enum OpenError {
    Link(LinkError),
    /// The endpoint names another origin: the event's data, and the URL
    /// it names (the session is not opened: the target's headers would
    /// go with every POST).
    Foreign {
        data: String,
        named: String,
    },
}

/// A POST the server accepted.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub status: u16,
    pub body: String,
}

/// One legacy session: its stream, read by a task of its own, and where
/// messages are POSTed.
pub struct LegacyLink {
    http: reqwest::Client,
    /// The target's own headers, sent with the GET and every POST.
    headers: HeaderMap,
    endpoint: Endpoint,
    /// The first event's data as the server sent it.
    endpoint_event: String,
    pending: Pending,
    timeout: Duration,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for LegacyLink {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl LegacyLink {
    /// Opens the stream at `url` with the target's own `headers` (sent
    /// with every request of the session) and waits (at most `timeout`, the
    /// limit of every exchange too) for the event that names where to POST.
    pub async fn open(
        url: &Url,
        headers: HeaderMap,
        timeout: Duration,
        observer: Arc<dyn Observer>,
    ) -> Result<Self, OpenError> {
        let transport = |message: String| OpenError::Link(LinkError::Transport(message));
        // The stream stays open for the session: no overall time limit.
        let http = crate::http::client_builder(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| transport(format!("cannot build an HTTP client: {error}")))?;
        let get = http
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send();
        let response = tokio::time::timeout(timeout, get)
            .await
            .map_err(|_| OpenError::Link(LinkError::Timeout))?
            .map_err(|error| transport(format!("cannot reach `{url}`: {error}")))?;
        let status = response.status().as_u16();
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if status != 200 || !is_stream {
            return Err(OpenError::Link(LinkError::Http {
                status,
                body: "the GET opened no event stream".to_owned(),
                www_authenticate: response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned),
            }));
        }
        let mut events = Box::pin(crate::sse::events(Box::pin(response.bytes_stream())));
        let mut heard = false;
        let (endpoint_event, endpoint) = loop {
            let next =
                tokio::time::timeout(timeout, events.next())
                    .await
                    .map_err(|_| match heard {
                        true => OpenError::Link(LinkError::Timeout),
                        // A buffering proxy's doing, as the client explains it.
                        false => {
                            transport(crate::SseError::Silent(timeout.as_secs_f64()).to_string())
                        }
                    })?;
            heard = true;
            let event = match next {
                None | Some(Err(sse_stream::Error::Body(_))) => {
                    return Err(OpenError::Link(LinkError::Ended(
                        "the stream ended before its `endpoint` event".to_owned(),
                    )));
                }
                Some(Ok(event)) => event,
                Some(Err(_)) => continue,
            };
            let data = event.data.unwrap_or_default();
            match read_event(url, event.event.as_deref(), &data) {
                Ok(Event::Endpoint(endpoint)) => break (data, endpoint),
                Ok(_) => {}
                Err(crate::SseError::ForeignEndpoint(named)) => {
                    return Err(OpenError::Foreign { data, named });
                }
                Err(error) => return Err(transport(error.to_string())),
            }
        };
        let pending: Pending = Arc::default();
        let reader = {
            let pending = Arc::clone(&pending);
            let poster = Poster {
                http: http.clone(),
                headers: headers.clone(),
                endpoint: endpoint.clone(),
                timeout,
            };
            let stream = url.clone();
            tokio::spawn(async move {
                while let Some(event) = events.next().await {
                    let event = match event {
                        Ok(event) => event,
                        Err(sse_stream::Error::Body(_)) => break,
                        Err(_) => continue,
                    };
                    let data = event.data.unwrap_or_default();
                    match read_event(&stream, event.event.as_deref(), &data) {
                        Ok(Event::Message(message)) => {
                            let at = Instant::now();
                            if let Some(answer) = dispatch(message, at, &pending, observer.as_ref())
                            {
                                let _ = poster.post(&answer).await;
                            }
                        }
                        Ok(Event::Unreadable(_)) => observer.stray(data.as_bytes()),
                        Ok(Event::Endpoint(_) | Event::Skipped) | Err(_) => {}
                    }
                }
                if let Ok(mut pending) = pending.lock() {
                    pending.clear();
                }
            })
        };
        Ok(Self {
            http,
            headers,
            endpoint,
            endpoint_event,
            pending,
            timeout,
            reader,
        })
    }

    /// Where, and in which dialect, messages are POSTed.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The first event's data as the server sent it (`endpoint`, or seed
    /// 001's `connect`).
    pub fn endpoint_event(&self) -> &str {
        &self.endpoint_event
    }

    /// The target's own headers, which every request of the session carries.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// Whether the stream is still read (requests can go on the session).
    pub fn is_open(&self) -> bool {
        !self.reader.is_finished()
    }

    /// POSTs the request `message` and waits (at most the link's time
    /// limit) for its answer on the stream; with the POST's acceptance.
    pub async fn send(&self, message: &Value) -> Result<(Answer, Accepted), LinkError> {
        let id = WireId::of(message.get("id").unwrap_or(&Value::Null));
        let (waiter, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), waiter);
        }
        let accepted = match self.post(message).await {
            Ok(accepted) => accepted,
            Err(error) => {
                self.forget(&id);
                return Err(error);
            }
        };
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(answer)) => Ok((answer, accepted)),
            Ok(Err(_)) => Err(LinkError::Ended("the stream closed".to_owned())),
            Err(_) => {
                self.forget(&id);
                Err(LinkError::Timeout)
            }
        }
    }

    /// Stops waiting for `id`.
    fn forget(&self, id: &WireId) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(id);
        }
    }

    /// POSTs `message` (a notification, or an answer) to the endpoint.
    pub async fn post(&self, message: &Value) -> Result<Accepted, LinkError> {
        Poster {
            http: self.http.clone(),
            headers: self.headers.clone(),
            endpoint: self.endpoint.clone(),
            timeout: self.timeout,
        }
        .post(message)
        .await
    }
}

/// What POSTs a message of the session: the reader task has one of its own
/// for the answers to the server's requests.
struct Poster {
    http: reqwest::Client,
    headers: HeaderMap,
    endpoint: Endpoint,
    timeout: Duration,
}

impl Poster {
    async fn post(&self, message: &Value) -> Result<Accepted, LinkError> {
        let body = self.endpoint.body(message.clone()).to_string();
        let request = self
            .http
            .post(self.endpoint.url().clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .send();
        let response = tokio::time::timeout(self.timeout, request)
            .await
            .map_err(|_| LinkError::Timeout)?
            .map_err(|error| {
                LinkError::Transport(format!("cannot reach `{}`: {error}", self.endpoint.url()))
            })?;
        let status = response.status().as_u16();
        let www_authenticate = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = tokio::time::timeout(self.timeout, response.text())
            .await
            .map_err(|_| LinkError::Timeout)?
            .unwrap_or_default();
        let body: String = body.trim().chars().take(BODY_PREVIEW).collect();
        if (200..300).contains(&status) {
            Ok(Accepted { status, body })
        } else {
            Err(LinkError::Http {
                status,
                body,
                www_authenticate,
            })
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen {
        requests: Mutex<Vec<Value>>,
        notifications: Mutex<Vec<Value>>,
    }

    impl Observer for Seen {
        fn request(&self, request: &Value) -> Value {
            self.requests.lock().unwrap().push(request.clone());
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        }
        fn notification(&self, message: Value) {
            self.notifications.lock().unwrap().push(message);
        }
    }

    #[derive(Clone, Default)]
    struct Fake {
        stream: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>,
        posted: Arc<Mutex<Vec<Value>>>,
    }

    /// A seed 001 server: a `connect` event, wrapped POSTs; each request
    /// is answered on the stream after a notification and a request of
    /// the server's own, two requests in the reverse order they came.
    async fn seed_001() -> Url {
        use axum::routing::{get, post};
        let fake = Fake::default();
        let open = |axum::extract::State(fake): axum::extract::State<Fake>| async move {
            let (sender, events) = tokio::sync::mpsc::unbounded_channel::<String>();
            sender
                .send("event: connect\ndata: {\"connectionId\":\"c-1\"}\n\n".to_owned())
                .unwrap();
            *fake.stream.lock().unwrap() = Some(sender);
            let body = futures::stream::unfold(events, |mut events| async move {
                let event = events.recv().await?;
                Some((Ok::<_, std::convert::Infallible>(event), events))
            });
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from_stream(body))
                .unwrap()
        };
        let receive = |axum::extract::State(fake): axum::extract::State<Fake>, body: String| async move {
            let wrapped: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(wrapped["connectionId"], "c-1");
            let message = wrapped["message"].clone();
            let mut posted = fake.posted.lock().unwrap();
            posted.push(message.clone());
            let stream = fake.stream.lock().unwrap();
            let send = |value: Value| {
                let event = format!("event: message\ndata: {value}\n\n");
                stream.as_ref().unwrap().send(event).unwrap();
            };
            let requests: Vec<&Value> = posted
                .iter()
                .filter(|posted| posted.get("method").is_some() && posted.get("id").is_some())
                .collect();
            if message.get("method").is_some() && requests.len() == 2 {
                send(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}));
                send(json!({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}));
                for request in requests.iter().rev() {
                    send(
                        json!({"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["id"]}}),
                    );
                }
            }
            axum::http::StatusCode::ACCEPTED
        };
        let app = axum::Router::new()
            .route("/sse", get(open))
            .route("/sse/message", post(receive))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Url::parse(&format!("http://127.0.0.1:{port}/sse")).unwrap()
    }

    #[tokio::test]
    async fn answers_are_matched_by_id_and_the_rest_observed() {
        let url = seed_001().await;
        let seen = Arc::new(Seen::default());
        let link = LegacyLink::open(
            &url,
            HeaderMap::new(),
            Duration::from_secs(10),
            Arc::clone(&seen) as Arc<dyn Observer>,
        )
        .await
        .unwrap();
        assert_eq!(link.endpoint().session().as_deref(), Some("c-1"));
        let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let (one, two) = (ping(1), ping(2));
        let (first, second) = tokio::join!(link.send(&one), link.send(&two));
        assert_eq!(first.unwrap().0.0["result"]["echo"], 1);
        assert_eq!(second.unwrap().0.0["result"]["echo"], 2);
        assert_eq!(seen.notifications.lock().unwrap().len(), 1);
        assert_eq!(seen.requests.lock().unwrap()[0]["id"], "s1");
    }
}
