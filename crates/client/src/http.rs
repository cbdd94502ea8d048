//! The HTTP client under rmcp's Streamable HTTP transport: our own client
//! over reqwest ([`Streamable`]), plus a time limit on each exchange, retries of 429/503 that honour
//! `Retry-After`, and tolerant SSE reading (a `data: [DONE]` line, as seed
//! 000's server sent, and events of unknown types are skipped). It also
//! reports when a session's server-to-client stream has been answered
//! ([`StandaloneStream`]), so that requests can wait for it.
//!
//! Every reqwest client of the crate (this one, the legacy SSE transport's,
//! the headless authorization agent's) starts from `client_builder`. The
//! status of each exchange is the response's, as [`Streamable`] hands it
//! up ([`crate::forward::Answer`]).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use rmcp::transport::streamable_http_client::{StreamableHttpError, StreamableHttpPostResponse};
use tokio::sync::watch;

use crate::forward::{Answer, Exchanged, Forward, HttpError, Layer, Request, SseItem, SseStream};
use crate::streamable::Streamable;
use crate::tap::Traced;
use crate::wire::WireTrace;

/// How many times one message is sent before a 429/503 is final.
pub const MAX_TRIES: u32 = 3;
/// The wait between tries when the server gives no `Retry-After`.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(1500);
/// How much longer than the session's time limit one HTTP attempt may take.
pub const BACKSTOP_MARGIN: Duration = Duration::from_secs(2);
/// The longest `Retry-After` honoured; a longer one ends the retries.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// A reqwest client with nexo's time limit and retry policy.
pub type RetryingHttp = Forward<Retrying>;

/// What [`RetryingHttp`] does around reqwest (see [`Layer`]).
#[derive(Clone, Debug)]
pub struct Retrying {
    inner: Streamable,
    timeout: Duration,
    standalone: Arc<watch::Sender<StandaloneStream>>,
    /// The HTTP status that refused a POST made before any session existed,
    /// when it carried no JSON-RPC answer: the sign of a server that does
    /// not speak Streamable HTTP at this URL.
    refused: Arc<OnceLock<u16>>,
    /// Where each exchange's messages are traced (`--trace`).
    trace: Option<WireTrace>,
}

/// Where a session's standalone stream (the `GET` that rmcp opens once the
/// server has handed out a session id) stands. A server that sends requests
/// of its own without tying them to one of ours may drop them while that
/// stream is not open yet, so the first requests wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandaloneStream {
    /// No session id yet: there is no stream to wait for.
    NotExpected,
    /// The server gave a session id; the `GET` has not been answered.
    Opening,
    /// The `GET` was answered, with a stream or with a refusal.
    Settled,
}

/// Makes ring the process's TLS crypto provider, once, before any HTTP client
/// is built (ours, or the ones rmcp's OAuth code builds): the workspace
/// builds rustls without a default provider.
pub fn install_tls_provider() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // Err means another provider was installed first; that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What every HTTP client of nexo is built from (this crate's, the LLM
/// providers', the gateway's token exchange): ring as the TLS
/// provider, nexo's `User-Agent`, at most `connect_timeout` to open a
/// connection, each connection's cost noted for the trace
/// ([`crate::connection`]), and the one TLS configuration ([`crate::tls`]: the
/// platform's trust, `--cacert`, and TLS secrets written to the file
/// `SSLKEYLOGFILE` names, so that a capture can be decrypted in Wireshark;
/// README, "Decrypting HTTPS in Wireshark").
pub fn client_builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    install_tls_provider();
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("nexo/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(std::sync::Arc::new(crate::connection::TimedResolver))
        .connector_layer(crate::connection::TimedConnect);
    match crate::tls::client_config() {
        Some(config) => builder.tls_backend_preconfigured(config.as_ref().clone()),
        None => builder.tls_sslkeylogfile(true),
    }
}

impl RetryingHttp {
    /// A client for a session whose exchanges are each limited to
    /// `timeout`. Its own per-attempt limit is a backstop a little longer
    /// ([`BACKSTOP_MARGIN`]), so that the session's limit, which reports a
    /// timeout, always fires first: a lower layer giving up at the same
    /// moment ended the session's transport instead, and the same silent
    /// server was reported as a closed channel or a timeout at random.
    /// With `trace`, every message it carries is traced ([`crate::wire`]).
    pub(crate) fn new(timeout: Duration, trace: Option<Traced>) -> Result<Self, reqwest::Error> {
        let timeout = timeout + BACKSTOP_MARGIN;
        let inner = Streamable::new(client_builder(timeout).build()?);
        let (standalone, _) = watch::channel(StandaloneStream::NotExpected);
        Ok(Forward(Retrying {
            inner,
            timeout,
            standalone: Arc::new(standalone),
            refused: Arc::default(),
            trace: trace.map(WireTrace),
        }))
    }

    /// Follows the session's standalone stream (see [`StandaloneStream`]).
    pub fn standalone_stream(&self) -> watch::Receiver<StandaloneStream> {
        self.0.standalone.subscribe()
    }

    /// The status of the first session-less POST refused without a JSON-RPC
    /// answer (404 or 405 from a server that only speaks the legacy
    /// HTTP+SSE transport, say).
    pub fn refused_status(&self) -> Option<u16> {
        self.0.refused.get().copied()
    }
}

impl Layer for Retrying {
    type Inner = Streamable;

    fn inner(&self) -> &Streamable {
        &self.inner
    }

    /// Runs `attempt` until it succeeds, fails for good, or runs out of tries.
    async fn run<T, F, Fut>(&self, attempt: F) -> Exchanged<T>
    where
        T: Send,
        F: Fn() -> Fut + Send,
        Fut: Future<Output = Exchanged<T>> + Send,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            let exchanged = match tokio::time::timeout(self.timeout, attempt()).await {
                Ok(exchanged) => exchanged,
                Err(_) => Exchanged {
                    outcome: Err(StreamableHttpError::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer within {:.1} s", self.timeout.as_secs_f64()),
                    ))),
                    answer: None,
                },
            };
            let delay = match &exchanged.outcome {
                Err(StreamableHttpError::HttpStatus(status))
                    if matches!(status.status, 429 | 503) && tries < MAX_TRIES =>
                {
                    retry_delay(status.retry_after.as_deref()).map(|delay| (status.status, delay))
                }
                _ => None,
            };
            let Some((status, delay)) = delay else {
                return exchanged;
            };
            tracing::info!(status, ?delay, tries, "server busy; retrying");
            tokio::time::sleep(delay).await;
        }
    }

    fn posted(
        &self,
        post: &Request<'_>,
        response: Exchanged<StreamableHttpPostResponse>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let Exchanged { outcome, answer } = response;
        if post.session_id.is_none()
            && let Some(status) = refusal_status(answer.as_ref())
        {
            let _ = self.refused.set(status);
        }
        let response = outcome;
        if let Ok(
            StreamableHttpPostResponse::Json(_, Some(_))
            | StreamableHttpPostResponse::Sse(_, Some(_)),
        ) = &response
        {
            self.standalone.send_if_modified(|state| {
                let first_session = *state == StandaloneStream::NotExpected;
                if first_session {
                    *state = StandaloneStream::Opening;
                }
                first_session
            });
        }
        let response = match response {
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                Ok(StreamableHttpPostResponse::Sse(tolerant(stream), session))
            }
            other => other,
        };
        match &self.trace {
            Some(trace) => trace.posted(post, answer.as_ref(), response),
            None => response,
        }
    }

    fn streamed(
        &self,
        get: &Request<'_>,
        stream: Exchanged<SseStream>,
    ) -> Result<SseStream, HttpError> {
        if get.last_event_id.is_none() {
            self.standalone.send_replace(StandaloneStream::Settled);
        }
        let Exchanged { outcome, answer } = stream;
        let stream = tolerant(outcome?);
        Ok(match &self.trace {
            Some(trace) => trace.streamed(get, answer.as_ref(), stream),
            None => stream,
        })
    }
}

/// The wait a `Retry-After` value asks for: delay-seconds or an HTTP date;
/// `None` when it asks for longer than we are willing to wait.
fn retry_delay(retry_after: Option<&str>) -> Option<Duration> {
    let Some(value) = retry_after.map(str::trim) else {
        return Some(DEFAULT_RETRY_DELAY);
    };
    let delay = if let Ok(seconds) = value.parse::<u64>() {
        Duration::from_secs(seconds)
    } else if let Ok(when) = httpdate_delay(value) {
        when
    } else {
        DEFAULT_RETRY_DELAY
    };
    (delay <= MAX_RETRY_DELAY).then_some(delay)
}

/// The time until an RFC 9110 HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn httpdate_delay(value: &str) -> Result<Duration, ()> {
    let when = jiff::fmt::rfc2822::parse(value).map_err(|_| ())?;
    let now = jiff::Timestamp::now();
    let span = when.timestamp().as_second() - now.as_second();
    Ok(Duration::from_secs(u64::try_from(span).unwrap_or(0)))
}

/// The status of a POST refused with a 4xx and no JSON-RPC message (as
/// a server that only speaks the legacy HTTP+SSE transport refuses it).
fn refusal_status(answer: Option<&Answer>) -> Option<u16> {
    answer
        .filter(|answer| answer.refused_bare && answer.status.is_client_error())
        .map(|answer| answer.status.as_u16())
}

/// Drops SSE events that carry no JSON-RPC message: `data: [DONE]` and
/// events of types other than `message`.
fn tolerant(stream: BoxStream<'static, SseItem>) -> BoxStream<'static, SseItem> {
    stream
        .filter(|item| {
            let keep = match item {
                Ok(event) => {
                    let done = event.data.as_deref().map(str::trim) == Some("[DONE]");
                    let foreign = event
                        .event
                        .as_deref()
                        .is_some_and(|kind| kind != "message" && event.data.is_some());
                    !done && !foreign
                }
                Err(_) => true,
            };
            std::future::ready(keep)
        })
        .boxed()
}

/// A server on 127.0.0.1 that answers every request with one fixed
/// refusal, so that tests read the errors rmcp really makes of it.
#[cfg(test)]
pub(crate) mod refusing {
    use axum::http::{HeaderName, StatusCode};
    use axum::response::IntoResponse;

    /// Serves `status`, `headers` and a plain-text `body`; gives the URL.
    pub async fn serve(
        status: u16,
        headers: &'static [(&'static str, &'static str)],
        body: &'static str,
    ) -> String {
        let Ok(status) = StatusCode::from_u16(status) else {
            panic!("no HTTP status {status}");
        };
        let refuse = move || async move {
            let headers: Vec<(HeaderName, &str)> = headers
                .iter()
                .filter_map(|(name, value)| Some((HeaderName::try_from(*name).ok()?, *value)))
                .collect();
            let mut response = (status, body).into_response();
            for (name, value) in headers {
                if let Ok(value) = value.parse() {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        };
        let app = axum::Router::new().fallback(refuse);
        let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
            panic!("cannot bind 127.0.0.1:0");
        };
        let Ok(address) = listener.local_addr() else {
            panic!("no local address");
        };
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}/mcp")
    }

    /// A first message of each era, as rmcp sends it.
    pub fn first_message(method: &str) -> rmcp::model::ClientJsonRpcMessage {
        let params = if method == "initialize" {
            serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}
            })
        } else {
            serde_json::json!({})
        };
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        match serde_json::from_value(message) {
            Ok(message) => message,
            Err(error) => panic!("`{method}` is no client message: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rmcp::transport::streamable_http_client::StreamableHttpClient;

    use super::*;

    /// Issue 15, point 6: the status of a first POST refused without a
    /// JSON-RPC answer, which decides `--transport auto`'s fallback, is the
    /// response's own (issue 16: no longer read from rmcp's message text).
    #[tokio::test]
    async fn issue_15_refusal_statuses_come_from_real_refusals_on_the_wire() {
        let cases = [
            ("initialize", 404, Some(404)),
            ("initialize", 405, Some(405)),
            ("server/discover", 400, Some(400)),
            ("server/discover", 404, Some(404)),
            ("initialize", 502, None),
        ];
        for (method, status, expected) in cases {
            let url = refusing::serve(status, &[("content-type", "text/plain")], "no").await;
            let Ok(client) = RetryingHttp::new(Duration::from_secs(10), None) else {
                panic!("cannot build the client");
            };
            let response = client
                .post_message(
                    url.into(),
                    refusing::first_message(method),
                    None,
                    None,
                    HashMap::new(),
                )
                .await;
            assert_eq!(
                client.refused_status(),
                expected,
                "{method} refused with {status}: {response:?}"
            );
        }
    }

    /// A trace written into memory.
    #[derive(Clone, Default)]
    struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut lines) = self.0.lock() {
                lines.extend_from_slice(bytes);
            }
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Issue 16: the trace shows each response's own status and headers,
    /// where rmcp's outcome alone would have said 202 for a 204, and
    /// nothing for a JSON-RPC error that came with a 400.
    #[tokio::test]
    async fn issue_16_traced_statuses_and_headers_are_the_responses() {
        use nexo_trace::{TraceOptions, Tracer};
        let lines = Lines::default();
        let tracer = Tracer::to_writer(lines.clone(), TraceOptions::default());
        let traced = || Traced {
            tracer: tracer.clone(),
            server: "refusing".into(),
            transport: "streamable-http",
        };
        let accepted = refusing::serve(204, &[], "").await;
        let error = refusing::serve(
            400,
            &[
                ("content-type", "application/json"),
                ("set-cookie", "sid=c00k1e"),
            ],
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}"#,
        )
        .await;
        let notification: rmcp::model::ClientJsonRpcMessage = match serde_json::from_value(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ) {
            Ok(message) => message,
            Err(error) => panic!("no notification: {error}"),
        };
        for (url, message) in [
            (accepted, notification),
            (error, refusing::first_message("tools/list")),
        ] {
            let Ok(client) = RetryingHttp::new(Duration::from_secs(10), Some(traced())) else {
                panic!("cannot build the client");
            };
            let response = client
                .post_message(
                    url.into(),
                    message,
                    Some("s-1".into()),
                    None,
                    HashMap::new(),
                )
                .await;
            assert!(response.is_ok(), "{response:?}");
        }
        if let Err(error) = tracer.flush() {
            panic!("cannot flush the trace: {error}");
        }
        let text = match lines.0.lock() {
            Ok(lines) => String::from_utf8_lossy(&lines).into_owned(),
            Err(_) => panic!("the trace's lock is poisoned"),
        };
        assert!(!text.contains("c00k1e"), "{text}");
        let records: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let statuses: Vec<(&str, &serde_json::Value)> = records
            .iter()
            .map(|record| {
                (
                    record["direction"].as_str().unwrap_or_default(),
                    &record["http"]["status"],
                )
            })
            .collect();
        assert_eq!(
            statuses,
            [
                ("out", &serde_json::json!(204)),
                ("out", &serde_json::json!(400)),
                ("in", &serde_json::json!(400)),
            ],
            "{text}"
        );
        let answer = &records[2]["http"]["headers"];
        assert_eq!(answer["content-type"], "application/json", "{text}");
        assert_eq!(answer["set-cookie"], nexo_trace::REDACTED, "{text}");
        assert_eq!(records[2]["http"]["method"], "POST", "{text}");
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(retry_delay(None), Some(DEFAULT_RETRY_DELAY));
        assert_eq!(retry_delay(Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(retry_delay(Some("3600")), None);
        assert_eq!(retry_delay(Some("soon")), Some(DEFAULT_RETRY_DELAY));
        assert_eq!(
            retry_delay(Some("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
    }
}
