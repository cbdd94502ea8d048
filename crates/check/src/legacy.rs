//! The deprecated HTTP+SSE transport of 2024-11-05, probed like the others.
//! [`SseLink`] is its raw wire: a GET opens the session's stream, whose
//! first `endpoint` event names where each message is POSTed; the POST is
//! answered 202 and the answer comes back on the stream, matched by id.
//! The stream is read by nexo-client's [`legacy_sse::read_event`], so seed
//! 001's dialect (a `connect` event, wrapped messages) is spoken too. The session
//! itself runs the same probes as any other (errors, definitions,
//! poisoning, resources); [`run`] adds what is the transport's own: a POST
//! answered with anything but 202, an endpoint on another origin, an
//! unknown session id on the POST URL served, a foreign `Origin` served.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use nexo_client::legacy_sse::{self, Endpoint, Event};
use nexo_client::raw::WireId;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use url::Url;

use crate::Run;
use crate::finding::{Finding, Group, Severity, trim};
use crate::link::{HttpLink, Link, LinkError, RawReply};

type Pending = Arc<Mutex<HashMap<WireId, oneshot::Sender<Value>>>>;

/// What came on the stream besides answers.
#[derive(Default)]
struct Seen {
    notifications: Vec<Value>,
    requests: Vec<Value>,
    /// POSTs accepted with another 2xx than 202 (status, body).
    statuses: Vec<(u16, String)>,
}

/// One legacy session: its stream, read by a task of its own, and the
/// URL messages are POSTed to.
pub struct SseLink {
    /// The POSTs go through an HTTP link whose URL is the endpoint.
    pub http: Arc<HttpLink>,
    /// The first event's data as the server sent it (`endpoint`, or seed
    /// 001's `connect`).
    pub endpoint_event: String,
    /// Where, and in which dialect, messages are POSTed.
    endpoint: Endpoint,
    pending: Pending,
    seen: Arc<Mutex<Seen>>,
    next_id: AtomicU64,
    timeout: Duration,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseLink {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Why a legacy stream gave no session.
pub enum OpenError {
    Link(LinkError),
    /// The endpoint names another origin: the data, and the URL it names.
    Foreign(String, String),
}

impl SseLink {
    /// Opens the stream at `url` and waits for its `endpoint` event.
    pub async fn open(
        url: &str,
        headers: &[nexo_client::Header],
        timeout: Duration,
    ) -> Result<Self, OpenError> {
        let stream = Url::parse(url).map_err(|error| {
            OpenError::Link(LinkError::Transport(format!(
                "`{url}` is not a URL: {error}"
            )))
        })?;
        // The stream stays open for the session: no overall time limit.
        let client = nexo_client::http::client_builder(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| {
                OpenError::Link(LinkError::Transport(format!(
                    "cannot build an HTTP client: {error}"
                )))
            })?;
        let mut extra = HeaderMap::new();
        for header in headers {
            extra.insert(header.name().clone(), header.value().clone());
        }
        extra.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let response =
            tokio::time::timeout(timeout, client.get(stream.clone()).headers(extra).send())
                .await
                .map_err(|_| OpenError::Link(LinkError::Timeout))?
                .map_err(|error| {
                    OpenError::Link(LinkError::Transport(format!(
                        "cannot reach `{stream}`: {error}"
                    )))
                })?;
        let status = response.status().as_u16();
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if status != 200 || !is_sse {
            return Err(OpenError::Link(LinkError::Http {
                status,
                body: "the GET opened no event stream".to_owned(),
                www_authenticate: None,
            }));
        }
        let mut events = Box::pin(nexo_client::sse::events(Box::pin(response.bytes_stream())));
        let (endpoint_event, endpoint) = loop {
            let next = tokio::time::timeout(timeout, events.next())
                .await
                .map_err(|_| OpenError::Link(LinkError::Timeout))?;
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
            match legacy_sse::read_event(&stream, event.event.as_deref(), &data) {
                Ok(Event::Endpoint(endpoint)) => break (data, endpoint),
                Ok(_) => {}
                Err(nexo_client::SseError::ForeignEndpoint(named)) => {
                    return Err(OpenError::Foreign(data, named));
                }
                Err(error) => {
                    return Err(OpenError::Link(LinkError::Transport(error.to_string())));
                }
            }
        };
        let http = Arc::new(
            HttpLink::new(endpoint.url().as_str(), headers, timeout)
                .map_err(|message| OpenError::Link(LinkError::Transport(message)))?,
        );
        let pending: Pending = Arc::default();
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let reader = {
            let pending = Arc::clone(&pending);
            let seen = Arc::clone(&seen);
            let http = Arc::clone(&http);
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                while let Some(event) = events.next().await {
                    let Ok(event) = event else { continue };
                    let data = event.data.unwrap_or_default();
                    if let Ok(Event::Message(message)) =
                        legacy_sse::read_event(&stream, event.event.as_deref(), &data)
                    {
                        read(&message, &pending, &seen, &http, &endpoint).await;
                    }
                }
                if let Ok(mut pending) = pending.lock() {
                    pending.clear();
                }
            })
        };
        Ok(Self {
            http,
            endpoint_event,
            endpoint,
            pending,
            seen,
            next_id: AtomicU64::new(1),
            timeout,
            reader,
        })
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// POSTs `message` and waits for its answer on the stream.
    pub async fn send(&self, message: &Value) -> Result<Value, LinkError> {
        let id = WireId::of(message.get("id").unwrap_or(&Value::Null));
        let (waiter, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), waiter);
        }
        if let Err(error) = self.post(message).await {
            self.forget(&id);
            return Err(error);
        }
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(LinkError::Ended("the stream closed".to_owned())),
            Err(_) => {
                self.forget(&id);
                Err(LinkError::Timeout)
            }
        }
    }

    fn forget(&self, id: &WireId) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(id);
        }
    }

    /// POSTs a message; any 2xx is taken (another than 202 is kept for the
    /// transport probe).
    pub async fn post(&self, message: &Value) -> Result<(), LinkError> {
        post(&self.http, &self.endpoint, message, &self.seen).await
    }

    pub fn notifications(&self) -> Vec<Value> {
        self.seen
            .lock()
            .map(|seen| seen.notifications.clone())
            .unwrap_or_default()
    }

    pub fn requests(&self) -> Vec<Value> {
        self.seen
            .lock()
            .map(|seen| seen.requests.clone())
            .unwrap_or_default()
    }

    fn statuses(&self) -> Vec<(u16, String)> {
        self.seen
            .lock()
            .map(|seen| seen.statuses.clone())
            .unwrap_or_default()
    }
}

async fn post(
    http: &HttpLink,
    endpoint: &Endpoint,
    message: &Value,
    seen: &Mutex<Seen>,
) -> Result<(), LinkError> {
    let body = endpoint.body(message.clone()).to_string().into_bytes();
    let reply = http
        .raw(
            reqwest::Method::POST,
            endpoint.url(),
            http.base_headers(),
            Some(body),
        )
        .await?;
    if reply.status != 202
        && (200..300).contains(&reply.status)
        && let Ok(mut seen) = seen.lock()
    {
        seen.statuses
            .push((reply.status, trim(reply.body.trim(), 200)));
    }
    if (200..300).contains(&reply.status) {
        Ok(())
    } else {
        Err(LinkError::Http {
            status: reply.status,
            body: trim(reply.body.trim(), 300),
            www_authenticate: reply.header("www-authenticate").map(str::to_owned),
        })
    }
}

/// One message of the stream: an answer to its waiter, a request of the
/// server's answered by a POST, a notification kept.
async fn read(
    message: &Value,
    pending: &Pending,
    seen: &Mutex<Seen>,
    http: &HttpLink,
    endpoint: &Endpoint,
) {
    match (message.get("id"), message.get("method")) {
        (Some(_), Some(_)) => {
            if let Ok(mut seen) = seen.lock() {
                seen.requests.push(message.clone());
            }
            let answer = crate::link::answer_server_request(message);
            let _ = post(http, endpoint, &answer, seen).await;
        }
        (Some(id), None) => {
            let waiter = pending
                .lock()
                .ok()
                .and_then(|mut pending| pending.remove(&WireId::of(id)));
            if let Some(waiter) = waiter {
                let _ = waiter.send(message.clone());
            }
        }
        (None, _) => {
            if let Ok(mut seen) = seen.lock() {
                seen.notifications.push(message.clone());
            }
        }
    }
}

/// The finding for an endpoint on another origin (the session is not
/// opened: the target's headers would go with every POST).
pub(crate) fn foreign_endpoint(stream: &str, data: &str, named: &str) -> Finding {
    Finding::new(
        "legacy-endpoint-foreign",
        Severity::Error,
        Group::Http,
        format!("the `endpoint` event names `{named}`, on another origin than the stream"),
        "spec 2024-11-05, transports (HTTP with SSE): the endpoint is where the client POSTs, with its credentials; clients refuse another origin",
        "send a relative endpoint (`/messages?sessionId=...`) or one on the stream's own origin",
    )
    .evidence(format!("→ GET {stream} (Accept: text/event-stream)\n← event: endpoint\n  data: {}", trim(data, 200)))
    .subject(named.to_owned())
}

/// The probes of the legacy transport itself, on the session's endpoint.
pub(crate) async fn run(run: &mut Run) {
    let link = Arc::clone(&run.link);
    let Link::Sse(sse) = &*link else {
        return;
    };
    if !run.runs(Group::Http) {
        return;
    }
    run.probe(
        "legacy-sse-transport",
        Group::Http,
        "ran",
        format!("endpoint `{}`", sse.endpoint_event),
    );
    if let Some((status, body)) = sse.statuses().first() {
        run.push(
            Finding::new(
                "legacy-post-status",
                Severity::Warning,
                Group::Http,
                format!("a POST to the endpoint is answered HTTP {status}, not 202 Accepted"),
                "spec 2024-11-05, transports (HTTP with SSE): the answer travels on the stream; the POST is only accepted",
                "answer each POSTed message with 202 Accepted and send the JSON-RPC answer as a `message` event",
            )
            .evidence(format!("→ POST {}\n← HTTP {status}: {body}", sse.http.url)),
        );
    }
    let http = &sse.http;
    let ping = |endpoint: &Endpoint, id: u64| {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        Some(endpoint.body(ping).to_string().into_bytes())
    };
    // The same endpoint with a session id no one was given.
    if let Some(unknown) = sse.endpoint.with_session("nexo-check-no-such-session") {
        let reply = http
            .raw(
                reqwest::Method::POST,
                unknown.url(),
                http.base_headers(),
                ping(&unknown, sse.next_id()),
            )
            .await;
        if let Ok(accepted) = &reply
            && (200..300).contains(&accepted.status)
        {
            run.push(
                Finding::new(
                    "legacy-unknown-session-accepted",
                    Severity::Error,
                    Group::Http,
                    "a POST for a session id no stream was given is accepted",
                    "spec 2024-11-05, transports (HTTP with SSE): messages belong to the session whose stream is open; an unknown one has nowhere to be answered",
                    "answer a POST whose session id is unknown with 404 Not Found",
                )
                .evidence(describe(unknown.url(), "with an unknown session id", &reply))
                .subject("sessionId"),
            );
        }
    }
    let mut headers = http.base_headers();
    headers.insert("origin", HeaderValue::from_static("http://evil.example"));
    let reply = http
        .raw(
            reqwest::Method::POST,
            sse.endpoint.url(),
            headers,
            ping(&sse.endpoint, sse.next_id()),
        )
        .await;
    if let Ok(accepted) = &reply
        && (200..300).contains(&accepted.status)
    {
        run.push(
            Finding::new(
                "origin-not-validated",
                Severity::Error,
                Group::Http,
                "a POST from `Origin: http://evil.example` is accepted (DNS rebinding)",
                "spec 2024-11-05 and 2025-11-25, transports (security warning): servers MUST validate Origin; footgun 3",
                "refuse requests whose Origin is not one you serve with 403 Forbidden, on the stream's GET and on the POSTs",
            )
            .evidence(describe(&http.url, "with Origin: http://evil.example", &reply))
            .subject("Origin"),
        );
    }
}

fn describe(url: &Url, changed: &str, reply: &Result<RawReply, LinkError>) -> String {
    let answer = match reply {
        Ok(reply) => reply.describe(),
        Err(error) => format!("({error})"),
    };
    format!("→ POST {url} {changed}\n← {answer}")
}
