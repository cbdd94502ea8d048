//! What stands before `nexo serve --http`'s application ([`crate::app`])
//! when it is exposed: authentication ([`crate::auth`]), the rate limits
//! ([`crate::limits`]) and the metrics ([`crate::metrics`]) at `GET
//! /metrics`, one tower service ([`Guarded`]) in front of the other.
//!
//! In order, for each request: `/metrics` is answered (behind the
//! `Origin` and `Host` checks); a request whose `Origin` or `Host` is
//! refused is counted and left to the application, which refuses it; the
//! Protected Resource Metadata is answered; a request without a valid
//! credential gets its challenge (401, 403), and a valid one goes on with
//! [`Authenticated`] in its extensions and without its `Authorization`
//! header. A POST's messages are then read: a `tools/call` whose tool
//! needs scopes the token lacks gets the step-up challenge (403
//! `insufficient_scope`), and a `tools/call`, `prompts/get` or
//! `resources/read` past a rate limit gets 429 with `Retry-After` and a
//! JSON-RPC error (-32029). On the legacy SSE transport no status can
//! answer a call (its answer travels on the stream), so the refusal rides
//! in the request's extensions ([`CallRefusal`]) and is sent on the stream
//! as a tool error instead. Every request with a method is counted by
//! method, tool and outcome, with its latency (to the end of its answer's
//! stream when it is answered on one); every refusal by reason;
//! and every refused tool call is written to the tool-call log
//! ([`CallLogger`], `--log`) with its reason and the caller's subject.
//!
//! A POST's message is read by the same envelope reader the application
//! uses ([`inbound::inspect`]), so the guard never counts or limits a
//! method other than the one the application serves.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use futures::StreamExt as _;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::auth::{Auth, Rejection};
use crate::body::read_body;
use crate::calllog::{CallLogger, PendingCall};
use crate::inbound::{self, ToolCall};
use crate::legacy_sse::MESSAGES_PATH;
use crate::limits::{Caller, Limited, Limits, SWEEP_EVERY};
use crate::metrics::{Counted, METRICS_PATH, Metrics, Refused};
use crate::policy::{HostPolicy, OriginPolicy};
use crate::{MCP_PATH, http};

/// The JSON-RPC error code of a request a rate limit refused (-32029, for
/// HTTP's 429), as the gateway's.
pub const LIMITED: i32 = -32029;
/// The JSON-RPC error code of a call denied for want of scopes, as the
/// gateway's policy denials.
pub const DENIED: i32 = -32001;
/// Where a refused call's details go in a tool error's `_meta`.
pub const META_KEY: &str = "dev.nexo/serve";

/// What guards a server.
#[derive(Debug)]
pub struct Guard {
    pub auth: Arc<Auth>,
    pub limits: Limits,
    pub metrics: Metrics,
    /// The server's name, the `server` label of the metrics.
    pub server: String,
    /// The tool-call log, where refused calls are written too.
    pub log: Option<CallLogger>,
}

/// A tool call refused where no HTTP status can answer it (legacy SSE):
/// the transport answers it with this tool error.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRefusal {
    pub message: String,
    pub code: i32,
    pub data: Value,
}

impl CallRefusal {
    /// The `result` of the refused call: a tool error naming why.
    pub fn result(&self) -> Value {
        json!({
            "content": [{"type": "text", "text": self.message}],
            "isError": true,
            "_meta": {META_KEY: {"code": self.code, "data": self.data}},
        })
    }
}

/// `inner` behind `guard`.
pub struct Guarded<T> {
    inner: T,
    state: Arc<State>,
}

impl<T: Clone> Clone for Guarded<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            state: self.state.clone(),
        }
    }
}

struct State {
    guard: Arc<Guard>,
    origins: OriginPolicy,
    hosts: HostPolicy,
    max_body: usize,
}

impl Guard {
    /// Puts `inner` behind this guard, with the application's `Origin` and
    /// `Host` policies and body limit.
    pub fn wrap<T>(
        self: &Arc<Self>,
        inner: T,
        origins: OriginPolicy,
        hosts: HostPolicy,
        max_body: usize,
    ) -> Guarded<T> {
        Guarded {
            inner,
            state: Arc::new(State {
                guard: self.clone(),
                origins,
                hosts,
                max_body,
            }),
        }
    }

    /// Drops the rate limits' keys whose bucket is full again, every
    /// [`SWEEP_EVERY`], for as long as the guard lives elsewhere.
    pub fn sweep(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let guard = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_EVERY);
            loop {
                every.tick().await;
                let Some(guard) = guard.upgrade() else {
                    return;
                };
                guard.limits.sweep();
            }
        })
    }
}

impl<T> tower::Service<Request> for Guarded<T>
where
    T: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    T::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let state = self.state.clone();
        let inner = self.inner.clone();
        Box::pin(async move {
            // The guard's own answers (challenges, metadata, 429s) reach a
            // browser's script as the application's do.
            let origin = request.headers().get(header::ORIGIN).cloned();
            let mut response = state.handle(inner, request).await;
            if origin.is_some() {
                crate::policy::add_cors_headers(
                    response.headers_mut(),
                    &state.origins,
                    origin.as_ref(),
                );
            }
            Ok(response)
        })
    }
}

/// What a POST asks, read before the application sees it.
#[derive(Debug, Default)]
struct Asked {
    /// The message's method, for the metrics.
    method: Option<String>,
    /// The tool called, for the metrics, the scopes and the log.
    call: Option<ToolCall>,
    /// The request id, for a refusal's JSON-RPC error.
    id: Value,
}

impl Asked {
    /// What the message `body` asks; nothing when the application will
    /// refuse it as unreadable.
    fn read(body: &[u8]) -> Self {
        let Ok(envelope) = inbound::inspect(body) else {
            return Self::default();
        };
        Self {
            call: envelope.tool_call(),
            method: envelope.method.as_deref().map(str::to_owned),
            id: envelope
                .id
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_default(),
        }
    }

    fn tool(&self) -> Option<&str> {
        self.call.as_ref().map(|call| call.tool.as_str())
    }
}

impl State {
    async fn handle<T>(&self, mut inner: T, mut request: Request) -> Response
    where
        T: tower::Service<Request, Response = Response, Error = Infallible>,
    {
        let guard = &self.guard;
        if let Some((_, reason)) = http::refusal(&self.origins, &self.hosts, &request) {
            guard.metrics.refused(reason);
            return call(&mut inner, request).await;
        }
        let mut authenticated = None;
        if !guard.auth.is_open() {
            if request.method() == Method::GET
                && let Some(metadata) = guard.auth.metadata(request.uri().path())
            {
                return metadata;
            }
            // A browser's preflight carries no credential.
            if request.method() != Method::OPTIONS {
                match guard.auth.check(request.headers()).await {
                    Ok(found) => {
                        request.headers_mut().remove(header::AUTHORIZATION);
                        if let Some(found) = found {
                            request.extensions_mut().insert(found.clone());
                            authenticated = Some(found);
                        }
                    }
                    Err(rejection) => {
                        guard.metrics.refused(rejection.refused());
                        let challenge = guard.auth.challenge(&rejection);
                        let challenge_bytes = body_length(&challenge);
                        self.log_refused_at_the_door(request, rejection.refused(), challenge_bytes)
                            .await;
                        return challenge;
                    }
                }
            }
        }
        // Behind authentication when it is configured: it names every tool.
        if request.uri().path() == METRICS_PATH {
            return crate::metrics::endpoint(&request, &self.origins, &self.hosts, || {
                guard.metrics.render()
            });
        }
        let path = request.uri().path();
        let legacy = path == MESSAGES_PATH;
        if request.method() != Method::POST || !(path == MCP_PATH || legacy) {
            return call(&mut inner, request).await;
        }
        let started = Instant::now();
        let (parts, body) = request.into_parts();
        let body = match read_body(&parts.headers, body, self.max_body).await {
            Ok(body) => body,
            Err(refusal) => {
                if refusal.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    guard.metrics.refused(Refused::Size);
                }
                return refusal;
            }
        };
        let asked = Asked::read(&body);
        let pending = asked
            .call
            .clone()
            .map(|call| PendingCall::new(call, &parts.extensions));
        let mut request = Request::from_parts(parts, Body::from(body));
        let caller = Caller {
            subject: authenticated
                .as_ref()
                .and_then(|found| found.subject.clone()),
            client: request
                .extensions()
                .get::<axum::extract::ConnectInfo<SocketAddr>>()
                .map(|info| info.0.ip()),
        };
        let scopes = authenticated.map(|found| found.scopes).unwrap_or_default();
        let scoped_tool = asked
            .tool()
            .filter(|tool| guard.auth.has_tool_scopes() && names_agree(request.headers(), tool));
        let refused = self.refusal(scoped_tool, &asked, &scopes, &caller).await;
        let count = |outcome: &'static str, decision: &'static str| {
            if let Some(method) = &asked.method {
                guard.metrics.count(&Counted {
                    method,
                    server: &guard.server,
                    tool: asked.tool(),
                    decision,
                    outcome,
                    latency: started.elapsed(),
                });
            }
        };
        if let Some(refused) = refused {
            let (outcome, reason) = match refused {
                Refusal::Scope { .. } => ("denied", Refused::Scope),
                Refusal::Limited { .. } => ("limited", Refused::Rate),
            };
            count(outcome, "deny");
            let log = |refusal_bytes: usize| {
                if let (Some(log), Some(pending)) = (&guard.log, &pending) {
                    log.refused(pending, reason.name(), refusal_bytes);
                }
            };
            if !legacy {
                let response = refused.response(&guard.auth, &asked.id);
                log(body_length(&response));
                return response;
            }
            // Answered on the stream, as a tool error.
            let refusal = refused.call_refusal();
            log(refusal.result().to_string().len());
            request.extensions_mut().insert(refusal);
            return call(&mut inner, request).await;
        }
        let response = call(&mut inner, request).await;
        if response.status().is_success() && is_event_stream(&response) {
            // The answer travels on the stream: the request is counted
            // when the stream ends (or its client leaves), not at its
            // headers.
            let Some(method) = asked.method.clone() else {
                return response;
            };
            let ended = CountWhenDropped {
                guard: guard.clone(),
                method,
                tool: asked.tool().map(str::to_owned),
                started,
            };
            return response.map(|body| {
                Body::from_stream(body.into_data_stream().map(move |chunk| {
                    let _counted_at_the_end = &ended;
                    chunk
                }))
            });
        }
        let outcome = if response.status().is_success() {
            "ok"
        } else {
            "error"
        };
        count(outcome, "allow");
        response
    }

    /// Writes a tool call refused by authentication to the tool-call log:
    /// its body is read (within the limit) only for that.
    async fn log_refused_at_the_door(
        &self,
        request: Request,
        reason: Refused,
        challenge_bytes: usize,
    ) {
        let Some(log) = &self.guard.log else {
            return;
        };
        let path = request.uri().path();
        if request.method() != Method::POST || !(path == MCP_PATH || path == MESSAGES_PATH) {
            return;
        }
        let (parts, body) = request.into_parts();
        let Ok(body) = read_body(&parts.headers, body, self.max_body).await else {
            return;
        };
        if let Some(call) = Asked::read(&body).call {
            let pending = PendingCall::new(call, &parts.extensions);
            log.refused(&pending, reason.name(), challenge_bytes);
        }
    }

    /// Why the message of a POST is refused, if it is: the scopes of the
    /// tool it calls (`scoped_tool`) first, then the rate limits.
    async fn refusal(
        &self,
        scoped_tool: Option<&str>,
        asked: &Asked,
        scopes: &[String],
        caller: &Caller,
    ) -> Option<Refusal> {
        let guard = &self.guard;
        if let Some(tool) = scoped_tool
            && let Some(missing) = guard.auth.missing_tool_scopes(scopes, tool)
        {
            guard.metrics.refused(Refused::Scope);
            return Some(Refusal::Scope(Rejection::ToolScope {
                tool: tool.to_owned(),
                missing,
            }));
        }
        if guard.limits.is_empty() {
            return None;
        }
        let limited = matches!(
            asked.method.as_deref(),
            Some("tools/call" | "prompts/get" | "resources/read")
        );
        if !limited {
            return None;
        }
        let checked = guard.limits.check(caller, asked.tool()).await;
        let Err(limited) = checked else {
            return None;
        };
        let (message, retry_after, data) = match limited {
            Limited::Exceeded(exceeded) => {
                guard.metrics.limited(exceeded.scope);
                let data = json!({
                    "limit": exceeded.scope.name(),
                    "rate": exceeded.rate,
                    "key": exceeded.key,
                    "retryAfterSeconds": exceeded.retry_after.as_secs_f64(),
                });
                (exceeded.message(), exceeded.retry_after, data)
            }
            Limited::Unchecked(unchecked) => {
                let data = json!({"limit": unchecked.scope.name()});
                (
                    unchecked.message(),
                    crate::limits::Unchecked::RETRY_AFTER,
                    data,
                )
            }
        };
        guard.metrics.refused(Refused::Rate);
        Some(Refusal::Limited {
            message,
            retry_after,
            data,
        })
    }
}

/// An allowed request answered on an SSE stream, counted when the stream
/// is dropped: at its end, or when its client leaves.
struct CountWhenDropped {
    guard: Arc<Guard>,
    method: String,
    tool: Option<String>,
    started: Instant,
}

impl Drop for CountWhenDropped {
    fn drop(&mut self) {
        self.guard.metrics.count(&Counted {
            method: &self.method,
            server: &self.guard.server,
            tool: self.tool.as_deref(),
            decision: "allow",
            outcome: "ok",
            latency: self.started.elapsed(),
        });
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// Why the guard refused a POST's messages.
enum Refusal {
    Scope(Rejection),
    Limited {
        message: String,
        retry_after: Duration,
        data: Value,
    },
}

impl Refusal {
    /// The HTTP answer: the step-up challenge, or 429 with `Retry-After`.
    fn response(&self, auth: &Auth, id: &Value) -> Response {
        match self {
            Refusal::Scope(rejection) => auth.challenge(rejection),
            Refusal::Limited {
                message,
                retry_after,
                data,
            } => {
                let body = json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": LIMITED, "message": message, "data": data},
                });
                let mut response = Response::new(Body::from(body.to_string()));
                *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                let headers = response.headers_mut();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                if let Ok(value) = HeaderValue::from_str(&seconds.max(1).to_string()) {
                    headers.insert(header::RETRY_AFTER, value);
                }
                response
            }
        }
    }

    /// The refusal as a tool error, for the legacy SSE transport.
    fn call_refusal(&self) -> CallRefusal {
        match self {
            Refusal::Scope(Rejection::ToolScope { tool, missing }) => CallRefusal {
                message: format!(
                    "the tool `{tool}` needs the scope{} {} the token lacks; ask the \
                     authorization server for a token with {}",
                    if missing.missing.len() == 1 { "" } else { "s" },
                    missing.missing.join(" "),
                    missing.needed.join(" "),
                ),
                code: DENIED,
                data: json!({"scopes": missing.needed, "missing": missing.missing}),
            },
            Refusal::Scope(_) => CallRefusal {
                message: "the token lacks a scope this call needs".to_owned(),
                code: DENIED,
                data: Value::Null,
            },
            Refusal::Limited { message, data, .. } => CallRefusal {
                message: message.clone(),
                code: LIMITED,
                data: data.clone(),
            },
        }
    }
}

async fn call<T>(inner: &mut T, request: Request) -> Response
where
    T: tower::Service<Request, Response = Response, Error = Infallible>,
{
    match inner.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The length of a response body built whole (a refusal, a challenge).
fn body_length(response: &Response) -> usize {
    use axum::body::HttpBody as _;
    response
        .body()
        .size_hint()
        .exact()
        .and_then(|length| usize::try_from(length).ok())
        .unwrap_or(0)
}

/// Whether a 2026-07-28 request's `Mcp-Name` header names `tool`, as its
/// body does; a request that disagrees is the application's to refuse
/// (400, -32020), as a header mismatch. Earlier versions have no header.
fn names_agree(headers: &HeaderMap, tool: &str) -> bool {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let standard_headers = header("mcp-protocol-version")
        .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str());
    !standard_headers || header("mcp-name") == Some(tool)
}

/// The tools `body` calls, by name with their arguments: one message or a
/// batch. A 2026-07-28 request whose `Mcp-Name` header is not the tool's
/// name is left to the application, which answers it as a header
/// mismatch.
pub fn tool_calls(headers: &HeaderMap, body: &[u8]) -> Vec<(String, Value)> {
    let messages = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(messages)) => messages,
        Ok(message) => vec![message],
        Err(_) => return Vec::new(),
    };
    messages
        .into_iter()
        .filter(|message| message["method"] == "tools/call")
        .filter_map(|mut message| {
            let name = message["params"]["name"].as_str()?.to_owned();
            names_agree(headers, &name).then(|| (name, message["params"]["arguments"].take()))
        })
        .collect()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn the_tools_a_body_calls_are_found_unless_its_headers_disagree() {
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x","arguments":{"k":1}}},
                         {"jsonrpc":"2.0","id":2,"method":"tools/list"},
                         {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"b__y"}}]"#;
        let calls = tool_calls(&HeaderMap::new(), batch);
        let names: Vec<&str> = calls.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["a__x", "b__y"]);
        assert_eq!(calls[0].1, json!({"k": 1}));

        let one = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__x"}}"#;
        let mut headers = HeaderMap::new();
        headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        headers.insert("mcp-name", "a__other".parse().unwrap());
        // A header mismatch is the application's to answer (400, -32020).
        assert!(tool_calls(&headers, one).is_empty());
        headers.insert("mcp-name", "a__x".parse().unwrap());
        assert_eq!(tool_calls(&headers, one).len(), 1);
        assert!(tool_calls(&headers, b"not json").is_empty());
    }

    #[test]
    fn what_a_post_asks_is_read_as_the_application_reads_it() {
        let asked = Asked::read(
            br#"{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "encode", "arguments": {"text": "sos"}}}"#,
        );
        assert_eq!(asked.method.as_deref(), Some("tools/call"));
        assert_eq!(asked.tool(), Some("encode"));
        assert_eq!(
            asked.call.unwrap().argument_bytes,
            r#"{"text": "sos"}"#.len()
        );
        assert_eq!(asked.id, json!(7));
        // What the application refuses (a batch, not JSON, a method given
        // twice, a method that is not a string) asks nothing: it is
        // neither counted nor limited as a call.
        let nothing: [&[u8]; 5] = [
            b"[]",
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]"#,
            b"null",
            br#"{"method": 7}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"a"}}"#,
        ];
        for body in nothing {
            let none = Asked::read(body);
            assert!(
                none.method.is_none() && none.call.is_none(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
