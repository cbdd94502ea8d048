//! The deprecated HTTP+SSE transport of 2024-11-05, probed like the others.
//! [`SseLink`] is its raw wire, nexo-client's [`LegacyLink`]: a GET opens
//! the session's stream, whose first `endpoint` event names where each
//! message is POSTed; the POST is answered 202 and the answer comes back
//! on the stream, matched by id. Seed 001's dialect (a `connect` event,
//! wrapped messages) is spoken too. The session
//! itself runs the same probes as any other (errors, definitions,
//! poisoning, resources); [`run`] adds what is the transport's own: a POST
//! answered with anything but 202, an endpoint on another origin, an
//! unknown session id on the POST URL served, a foreign `Origin` served.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexo_client::legacy_sse::Endpoint;
use nexo_client::raw::Observer;
use nexo_client::raw::legacy::{Accepted, LegacyLink};
use reqwest::header::HeaderValue;
use serde_json::{Value, json};
use url::Url;

use crate::Run;
use crate::finding::{Finding, Group, Severity, trim};
use crate::link::{HttpLink, Link, LinkError, RawReply};

/// What came on the stream besides answers.
#[derive(Default)]
struct Seen {
    notifications: Vec<Value>,
    requests: Vec<Value>,
    /// POSTs accepted with another 2xx than 202 (status, body).
    statuses: Vec<(u16, String)>,
}

/// What the checker keeps of the stream: the server's notifications and
/// requests (answered as every link answers them).
#[derive(Default)]
struct Watch(Mutex<Seen>);

impl Observer for Watch {
    fn request(&self, request: &Value) -> Value {
        if let Ok(mut seen) = self.0.lock() {
            seen.requests.push(request.clone());
        }
        crate::link::answer_server_request(request)
    }

    fn notification(&self, message: Value) {
        if let Ok(mut seen) = self.0.lock() {
            seen.notifications.push(message);
        }
    }
}

/// One legacy session: nexo-client's raw link ([`LegacyLink`]), with what
/// the probes keep of it.
pub struct SseLink {
    link: LegacyLink,
    /// The probes' own POSTs (a foreign `Origin`, an unknown session) go
    /// through an HTTP link whose URL is the endpoint.
    pub http: Box<HttpLink>,
    watch: Arc<Watch>,
    next_id: AtomicU64,
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
        let watch = Arc::new(Watch::default());
        let target_headers = headers
            .iter()
            .map(|header| (header.name().clone(), header.value().clone()))
            .collect();
        let link = LegacyLink::open(
            &stream,
            target_headers,
            timeout,
            Arc::clone(&watch) as Arc<dyn Observer>,
        )
        .await
        .map_err(|error| match error {
            nexo_client::raw::legacy::OpenError::Link(error) => OpenError::Link(error),
            nexo_client::raw::legacy::OpenError::Foreign { data, named } => {
                OpenError::Foreign(data, named)
            }
        })?;
        let http = HttpLink::new(link.endpoint().url().as_str(), headers, timeout)
            .map(Box::new)
            .map_err(|message| OpenError::Link(LinkError::Transport(message)))?;
        Ok(Self {
            link,
            http,
            watch,
            next_id: AtomicU64::new(1),
        })
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The first event's data as the server sent it.
    pub fn endpoint_event(&self) -> &str {
        self.link.endpoint_event()
    }

    fn endpoint(&self) -> &Endpoint {
        self.link.endpoint()
    }

    /// POSTs `message` and waits for its answer on the stream.
    pub async fn send(&self, message: &Value) -> Result<Value, LinkError> {
        let ((answer, _), accepted) = self.link.send(message).await?;
        self.keep(&accepted);
        Ok(answer)
    }

    /// POSTs a message; any 2xx is taken (another than 202 is kept for the
    /// transport probe).
    pub async fn post(&self, message: &Value) -> Result<(), LinkError> {
        let accepted = self.link.post(message).await?;
        self.keep(&accepted);
        Ok(())
    }

    fn keep(&self, accepted: &Accepted) {
        if accepted.status != 202
            && let Ok(mut seen) = self.watch.0.lock()
        {
            seen.statuses
                .push((accepted.status, trim(&accepted.body, 200)));
        }
    }

    pub fn notifications(&self) -> Vec<Value> {
        self.watch
            .0
            .lock()
            .map(|seen| seen.notifications.clone())
            .unwrap_or_default()
    }

    pub fn requests(&self) -> Vec<Value> {
        self.watch
            .0
            .lock()
            .map(|seen| seen.requests.clone())
            .unwrap_or_default()
    }

    fn statuses(&self) -> Vec<(u16, String)> {
        self.watch
            .0
            .lock()
            .map(|seen| seen.statuses.clone())
            .unwrap_or_default()
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
        format!("endpoint `{}`", sse.endpoint_event()),
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
    if let Some(unknown) = sse.endpoint().with_session("nexo-check-no-such-session") {
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
            sse.endpoint().url(),
            headers,
            ping(sse.endpoint(), sse.next_id()),
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
