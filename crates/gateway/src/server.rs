//! The gateway as an MCP server: an rmcp [`ServerHandler`] that nexo-serve
//! hosts at each endpoint, answering from the upstreams through
//! [`crate::federation`] and guarding every request on the way.
//!
//! Each `tools/call`, `prompts/get` and `resources/read` becomes a policy
//! [`Request`] (the identity is what [`crate::auth`] established, and the client's
//! address), decided by
//! the endpoint's policy in force; a denial is answered naming the rule, a
//! redaction rewrites the arguments before they leave. The detectors then
//! read the arguments (block, redact or flag) and, on the way back, the
//! result. `tools/list` leaves out the tools the identity could never call
//! and those whose description a detector blocks. One audit line is
//! written per decision, with its latency and outcome ([`Guard`]), and
//! counted in the metrics (crate::metrics). Before the policy, a request is
//! taken from its rate limits (crate::limits): past one, it is refused and
//! audited as `limited`. A forwarded request carries the W3C trace context
//! in its `_meta` (crate::tracecontext).
//!
//! The 2026-07-28 primitives pass through (README.md says why each goes
//! as it does): `input_required` rounds and their `requestState` untouched,
//! the client's capabilities declared upstream; tasks under federated ids
//! (`tasks/get`, `tasks/update`, `tasks/cancel` reach their upstream, a
//! finished task's result read by the detectors); `completion/complete`
//! by the prompt's or resource's federated name; list results with their
//! cache hints, private when cut for the caller.
//!
//! A list change an upstream announces reaches every client: 2025-era
//! sessions by a notification on their session, 2026-07-28 clients on
//! their `subscriptions/listen` streams.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use nexo_client::Secret;
use nexo_client::hub::{Change, Changed};
use nexo_hint::Hinted;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ClientCapabilities, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InputRequiredResult,
    InputResponses, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ServerCapabilities, ServerConfig,
    SubscriptionFilter, TaskPayload, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::audit::{AuditLog, Entry, Outcome};
use crate::auth::{Auth, Authenticated, MissingScopes, Rejection};
use crate::detect::{Finding, Place};
use crate::federation::Federation;
use crate::limits::{Exceeded, Limited, Limits, Unchecked};
use crate::metrics::{Counted, Metrics, outcome_name, verdict_name};
use crate::otlp::{Attribute, Finished, Spans};
use crate::policy::{Decision, Identity, Policy, Request, Resolver, Verdict};
use crate::refusal::Refusal;
use crate::tracecontext::{self, Span};
use crate::view::View;

/// How long a 2026-07-28 client may keep a list (`ttlMs`): a list change
/// of an upstream is announced to it, and a tool a reloaded policy hides
/// meanwhile is still refused when called.
const LIST_TTL_MS: u64 = 60_000;
/// How many list changes a slow client may fall behind by.
const CHANGE_BACKLOG: usize = 64;
/// How often a 2025-era session's forwarder checks that its client is
/// still there, when no change comes.
const SESSION_CHECK: Duration = Duration::from_secs(15);

/// A list a client may be told changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Tools,
    Prompts,
    Resources,
}

/// What every endpoint shares.
pub struct Shared {
    pub federation: Federation,
    pub audit: AuditLog,
    pub resolver: Arc<dyn Resolver>,
    pub limits: Limits,
    pub metrics: Metrics,
    /// For the scopes each tool needs.
    pub auth: Arc<Auth>,
    /// Where each request's span goes, when OTLP is configured.
    pub spans: Option<Spans>,
    /// The tool definitions a detector flagged, already audited
    /// ([`GatewayServer::first_sighting`]).
    sighted: std::sync::Mutex<std::collections::HashSet<[u8; 32]>>,
    changes: broadcast::Sender<List>,
}

/// How many flagged tool definitions are remembered before the memory is
/// cleared (and each audited once more).
const MAX_SIGHTED: usize = 10_000;

impl std::fmt::Debug for Shared {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Shared")
            .field("federation", &self.federation)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub fn new(
        federation: Federation,
        audit: AuditLog,
        resolver: Arc<dyn Resolver>,
        limits: Limits,
        metrics: Metrics,
        auth: Arc<Auth>,
        spans: Option<Spans>,
    ) -> Arc<Self> {
        Arc::new(Self {
            federation,
            audit,
            resolver,
            limits,
            metrics,
            auth,
            spans,
            sighted: std::sync::Mutex::default(),
            changes: broadcast::channel(CHANGE_BACKLOG).0,
        })
    }

    /// Passes the upstreams' list changes on to the clients, for as long
    /// as `self` lives elsewhere. A reconnected upstream counts as a tools
    /// change only when its tools differ from those it had.
    pub fn forward_changes(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let shared = Arc::downgrade(self);
        let mut upstream = self.federation.changes();
        let mut last = self.federation.tools();
        tokio::spawn(async move {
            loop {
                let changed = match upstream.recv().await {
                    Ok(changed) => changed,
                    Err(broadcast::error::RecvError::Lagged(_)) => Changed {
                        server: String::new(),
                        change: Change::Tools,
                    },
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                let list = match changed.change {
                    Change::Prompts => Some(List::Prompts),
                    Change::Resources => Some(List::Resources),
                    Change::Tools | Change::Connected => {
                        let now = shared.federation.tools();
                        let differs = now != last;
                        last = now;
                        differs.then_some(List::Tools)
                    }
                };
                if let Some(list) = list {
                    tracing::debug!(server = %changed.server, ?list, "an upstream's list changed");
                    // No receiver means no client to tell.
                    let _ = shared.changes.send(list);
                }
            }
        })
    }
}

/// One endpoint: the shared upstreams seen through one [`View`].
#[derive(Debug, Clone)]
pub struct GatewayServer {
    shared: Arc<Shared>,
    view: Arc<View>,
}

impl GatewayServer {
    pub fn new(shared: Arc<Shared>, view: Arc<View>) -> Self {
        Self { shared, view }
    }

    fn federation(&self) -> &Federation {
        &self.shared.federation
    }

    /// Decides `request` by the endpoint's policy in force.
    async fn guard(&self, request: Request, started: Instant, span: &Span) -> Guard<'_> {
        let policy = self.view.policy.current();
        let decision = match self.scope_refusal(&request) {
            Some(refusal) => refusal,
            None => {
                policy
                    .evaluate(&request, self.shared.resolver.as_ref())
                    .await
            }
        };
        Guard::new(&self.shared, policy, request, decision, started).in_span(span)
    }

    /// Takes `request` from its rate limits (the tool's, for a tool call,
    /// by its federated name); past one, or when one cannot be checked,
    /// the refusal, audited and counted.
    async fn limit(&self, request: &Request, started: Instant, span: &Span) -> Result<(), Refusal> {
        let tool = match (&request.method[..], &request.tool) {
            ("tools/call", Some(tool)) => Some(nexo_client::namespace::join(&request.server, tool)),
            _ => None,
        };
        let Err(limited) = self
            .shared
            .limits
            .check(&request.identity, tool.as_deref())
            .await
        else {
            return Ok(());
        };
        let (decision, refusal) = match limited {
            Limited::Exceeded(exceeded) => {
                self.shared.metrics.limited(exceeded.scope);
                (
                    limited_decision(&exceeded),
                    Refusal::Limited(Box::new(exceeded)),
                )
            }
            Limited::Unchecked(unchecked) => (
                unchecked_decision(&unchecked),
                Refusal::Unchecked(unchecked),
            ),
        };
        let mut guard = Guard::new(
            &self.shared,
            self.view.policy.current(),
            request.clone(),
            decision,
            started,
        )
        .in_span(span);
        guard.finish(Outcome::Limited);
        Err(refusal)
    }

    /// A denial when the tool called needs scopes (`toolScopes`) the
    /// identity lacks.
    fn scope_refusal(&self, request: &Request) -> Option<Decision> {
        let tool = request
            .tool
            .as_deref()
            .filter(|_| request.method == "tools/call")?;
        let missing = self.missing_scopes(&request.identity, &request.server, tool)?;
        Some(scope_decision(&missing))
    }

    fn missing_scopes(
        &self,
        identity: &Identity,
        server: &str,
        tool: &str,
    ) -> Option<MissingScopes> {
        let federated = nexo_client::namespace::join(server, tool);
        self.shared
            .auth
            .missing_tool_scopes(&identity.scopes, &federated)
    }

    /// The step-up challenge for a `tools/call` of `name` (as this endpoint
    /// offers it) whose tool needs scopes the caller (`parts`) lacks: the
    /// refusal audited and counted, for the HTTP layer to answer with 403.
    pub fn step_up(
        &self,
        parts: &http::request::Parts,
        name: &str,
        arguments: Value,
    ) -> Option<Rejection> {
        let (server, tool) = self.view.resolve_tool(self.federation(), name)?;
        let identity = identity_from_parts(Some(parts));
        let missing = self.missing_scopes(&identity, &server, &tool)?;
        let mut guard = Guard::new(
            &self.shared,
            self.view.policy.current(),
            Request {
                identity,
                server,
                method: "tools/call".to_owned(),
                tool: Some(tool),
                arguments,
            },
            scope_decision(&missing),
            Instant::now(),
        );
        guard.finish(Outcome::Denied);
        Some(Rejection::ToolScope {
            tool: name.to_owned(),
            missing,
        })
    }

    fn unknown(&self, what: &'static str, name: &str) -> Refusal {
        Refusal::Unknown {
            what,
            name: name.to_owned(),
            endpoint: self.view.path(),
        }
    }

    /// A `tools/call`, decided and passed on, declaring the client's
    /// `capabilities` to the upstream (so that it asks the client only for
    /// what it can answer, and starts a task only for a client that
    /// follows tasks). Its Multi Round-Trip Request fields
    /// (`inputResponses`, `requestState`) go upstream untouched, and an
    /// `input_required` answer comes back untouched: each round is a
    /// request of its own, decided and audited. A task the upstream starts
    /// reaches the client under its federated id.
    async fn call(
        &self,
        params: CallToolRequestParams,
        identity: Identity,
        (trace, span): (MetaObject, Span),
        capabilities: Option<ClientCapabilities>,
        caller: Option<&Secret>,
    ) -> Result<CallToolResponse, Refusal> {
        let started = Instant::now();
        let Some((server, tool)) = self.view.resolve_tool(self.federation(), &params.name) else {
            return Err(self.unknown("tool", &params.name));
        };
        let request = Request {
            identity,
            server: server.clone(),
            method: "tools/call".to_owned(),
            tool: Some(tool.clone()),
            arguments: Value::Object(params.arguments.unwrap_or_default()),
        };
        self.limit(&request, started, &span).await?;
        let mut guard = self.guard(request, started, &span).await;
        let arguments = guard.admit()?;
        let mut upstream = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
        upstream.meta = Some(rmcp::model::RequestMetaObject(trace));
        upstream.input_responses = guard.admit_responses(params.input_responses)?;
        upstream.request_state = params.request_state;
        let asked = Instant::now();
        let answer = self
            .federation()
            .call_tool_once(&server, upstream, capabilities, caller)
            .await;
        guard.upstream = Some(asked.elapsed());
        let result = match answer {
            Ok(CallToolResponse::Complete(result)) => result,
            Ok(CallToolResponse::Task(mut created)) => {
                created.task.task_id = self
                    .federation()
                    .qualify_task(&server, &created.task.task_id);
                guard.finish(Outcome::Ok);
                return Ok(CallToolResponse::Task(created));
            }
            Ok(CallToolResponse::InputRequired(asked)) => {
                let asked = guard.inspect_input_requests(asked)?;
                guard.finish(Outcome::Ok);
                return Ok(CallToolResponse::InputRequired(asked));
            }
            Ok(other) => {
                guard.finish(Outcome::Ok);
                return Ok(other);
            }
            Err(failure) => return Err(guard.failed(Refusal::upstream(failure))),
        };
        let result: CallToolResult = guard.inspect_result(result)?;
        let outcome = if result.is_error == Some(true) {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        guard.finish(outcome);
        Ok(CallToolResponse::Complete(result))
    }

    /// A finished task's result after the detectors read it, as a tool
    /// call's result is read; audited when they found something.
    fn inspect_task_result(
        &self,
        identity: Identity,
        server: String,
        task: &str,
        result: JsonObject,
    ) -> Result<JsonObject, Refusal> {
        let policy = self.view.policy.current();
        let mut guard = Guard::new(
            &self.shared,
            policy,
            Request {
                identity,
                server,
                method: "tasks/get".to_owned(),
                tool: None,
                arguments: serde_json::json!({ "taskId": task }),
            },
            Decision {
                verdict: Verdict::Allow,
                rule: None,
                reason: "the result of a task the policy let start".to_owned(),
                evidence: Vec::new(),
                redactions: Vec::new(),
                arguments: None,
            },
            Instant::now(),
        );
        let inspected = guard.inspect_result(result)?;
        if !guard.findings.is_empty() {
            guard.finish(Outcome::Ok);
        }
        Ok(inspected)
    }

    /// The upstream and its own id of the task a client names, or the
    /// refusal.
    /// The upstream and upstream id of a federated task id, when this
    /// endpoint offers anything of that upstream (a virtual server reaches
    /// no other upstream's tasks).
    fn task<'t>(&self, task: &'t str) -> Result<(String, &'t str), ErrorData> {
        self.federation()
            .resolve_task(task)
            .filter(|(server, _)| self.view.offers_anything_of(server))
            .ok_or_else(|| self.unknown("task", task).to_error())
    }

    /// A `prompts/get`, decided and passed on; its Multi Round-Trip
    /// Request rounds pass through as a tool call's do ([`Self::call`]).
    async fn prompt(
        &self,
        params: GetPromptRequestParams,
        identity: Identity,
        (trace, span): (MetaObject, Span),
        capabilities: Option<ClientCapabilities>,
        caller: Option<&Secret>,
    ) -> Result<GetPromptResponse, Refusal> {
        let started = Instant::now();
        let Some((server, prompt)) = self
            .view
            .resolve_prompt(self.federation(), &params.name)
            .await
        else {
            return Err(self.unknown("prompt", &params.name));
        };
        let request = Request {
            identity,
            server: server.clone(),
            method: "prompts/get".to_owned(),
            tool: Some(prompt.clone()),
            arguments: Value::Object(params.arguments.unwrap_or_default()),
        };
        self.limit(&request, started, &span).await?;
        let mut guard = self.guard(request, started, &span).await;
        let arguments = guard.admit()?;
        let mut upstream = GetPromptRequestParams::new(prompt).with_arguments(arguments);
        upstream.meta = Some(rmcp::model::RequestMetaObject(trace));
        upstream.input_responses = guard.admit_responses(params.input_responses)?;
        upstream.request_state = params.request_state;
        let asked = Instant::now();
        let answer = self
            .federation()
            .get_prompt(&server, upstream, capabilities, caller)
            .await;
        guard.upstream = Some(asked.elapsed());
        let result = match answer {
            Ok(GetPromptResponse::Complete(result)) => result,
            Ok(GetPromptResponse::InputRequired(asked)) => {
                let asked = guard.inspect_input_requests(asked)?;
                guard.finish(Outcome::Ok);
                return Ok(GetPromptResponse::InputRequired(asked));
            }
            Ok(other) => {
                guard.finish(Outcome::Ok);
                return Ok(other);
            }
            Err(failure) => return Err(guard.failed(Refusal::upstream(failure))),
        };
        let result = guard.inspect_result(result)?;
        guard.finish(Outcome::Ok);
        Ok(GetPromptResponse::Complete(result))
    }

    /// A `resources/read`, decided and passed on; its Multi Round-Trip
    /// Request rounds pass through as a tool call's do ([`Self::call`]).
    async fn read(
        &self,
        params: ReadResourceRequestParams,
        identity: Identity,
        (trace, span): (MetaObject, Span),
        capabilities: Option<ClientCapabilities>,
        caller: Option<&Secret>,
    ) -> Result<ReadResourceResponse, Refusal> {
        let started = Instant::now();
        let Some((server, uri)) = self.view.resolve_uri(self.federation(), &params.uri) else {
            return Err(self.unknown("resource", &params.uri));
        };
        let request = Request {
            identity,
            server: server.clone(),
            method: "resources/read".to_owned(),
            tool: None,
            arguments: serde_json::json!({ "uri": uri }),
        };
        self.limit(&request, started, &span).await?;
        let mut guard = self.guard(request, started, &span).await;
        let arguments = guard.admit()?;
        // A redact rule may have rewritten the URI itself.
        let uri = arguments
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or(&uri)
            .to_owned();
        let mut upstream = ReadResourceRequestParams::new(uri);
        upstream.meta = Some(rmcp::model::RequestMetaObject(trace));
        upstream.input_responses = guard.admit_responses(params.input_responses)?;
        upstream.request_state = params.request_state;
        let asked = Instant::now();
        let answer = self
            .federation()
            .read_resource(&server, upstream, capabilities, caller)
            .await;
        guard.upstream = Some(asked.elapsed());
        let mut result = match answer {
            Ok(ReadResourceResponse::Complete(result)) => result,
            Ok(ReadResourceResponse::InputRequired(asked)) => {
                let asked = guard.inspect_input_requests(asked)?;
                guard.finish(Outcome::Ok);
                return Ok(ReadResourceResponse::InputRequired(asked));
            }
            Ok(other) => {
                guard.finish(Outcome::Ok);
                return Ok(other);
            }
            Err(failure) => return Err(guard.failed(Refusal::upstream(failure))),
        };
        for contents in &mut result.contents {
            let uri = match contents {
                rmcp::model::ResourceContents::TextResourceContents { uri, .. }
                | rmcp::model::ResourceContents::BlobResourceContents { uri, .. } => uri,
                _ => continue,
            };
            if let Some(address) = self.federation().qualify_uri(&server, uri) {
                *uri = address;
            }
        }
        let result = guard.inspect_result(result)?;
        guard.finish(Outcome::Ok);
        Ok(ReadResourceResponse::Complete(result))
    }

    /// The tools `identity` may see, their descriptions inspected, and
    /// whether any was left out for this identity (rather than for all).
    /// Whether this endpoint sees `tool` of `server`, as defined now, with
    /// a detector finding for the first time: a flagged or blocked
    /// description is audited once, not on every list (again when the
    /// upstream changes it, or the policy's verdict on it changes).
    fn first_sighting(&self, server: &str, tool: &Tool, blocked: bool) -> bool {
        use sha2::Digest;
        let mut digest = sha2::Sha256::new();
        digest.update(self.view.path().as_bytes());
        digest.update([0, u8::from(blocked)]);
        digest.update(server.as_bytes());
        digest.update([0]);
        digest.update(serde_json::to_vec(tool).unwrap_or_default());
        let mut sighted = self
            .shared
            .sighted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if sighted.len() >= MAX_SIGHTED {
            sighted.clear();
        }
        sighted.insert(digest.finalize().into())
    }

    fn visible_tools(&self, identity: &Identity) -> (Vec<Tool>, bool) {
        let policy = self.view.policy.current();
        let mut tools = Vec::new();
        let mut filtered = false;
        for offered in self.view.tools(self.federation()) {
            if !policy.tool_visible(identity, &offered.server, &offered.upstream)
                || self
                    .missing_scopes(identity, &offered.server, &offered.upstream)
                    .is_some()
            {
                filtered = true;
                continue;
            }
            let Ok(mut value) = serde_json::to_value(&offered.item) else {
                continue;
            };
            let inspection = policy.detectors().inspect(Place::Descriptions, &mut value);
            if !inspection.findings.is_empty() {
                let blocked = inspection.blocked();
                if self.first_sighting(&offered.server, &offered.item, blocked) {
                    write(
                        &self.shared.audit,
                        Entry {
                            identity: identity.clone(),
                            server: offered.server.clone(),
                            method: "tools/list".to_owned(),
                            tool: Some(offered.upstream.clone()),
                            arguments: Value::Object(JsonObject::new()),
                            redacted: None,
                            verdict: Verdict::Allow,
                            rule: None,
                            reason: if blocked {
                                "the tool's description holds what a detector blocks; the tool is \
                             left out of the list"
                                    .to_owned()
                            } else {
                                "the tool's description holds what a detector flags".to_owned()
                            },
                            findings: inspection.findings.clone(),
                            latency: Duration::ZERO,
                            outcome: if blocked {
                                Outcome::Blocked
                            } else {
                                Outcome::Ok
                            },
                        },
                    );
                }
                if blocked {
                    continue;
                }
            }
            match serde_json::from_value::<Tool>(value) {
                Ok(tool) => tools.push(tool),
                Err(error) => {
                    tracing::warn!(tool = %offered.item.name, %error, "a redacted tool no longer reads as a tool");
                }
            }
        }
        (tools, filtered)
    }
}

/// The trace context to send upstream (crate::tracecontext): from the
/// request's `_meta` (rmcp hands it in the parameters or the context),
/// else its HTTP `traceparent` header, else a new trace.
fn trace_of(
    params: Option<&rmcp::model::RequestMetaObject>,
    context: &RequestContext<RoleServer>,
) -> (MetaObject, Span) {
    let meta = match params {
        Some(meta) if meta.0.0.contains_key(tracecontext::TRACEPARENT) => &meta.0,
        _ => &context.meta.0,
    };
    let headers = context
        .extensions
        .get::<http::request::Parts>()
        .map(|parts| &parts.headers);
    tracecontext::upstream_meta(meta, headers)
}

/// The caller's OAuth token, for an upstream of token exchange.
fn caller_of(extensions: &rmcp::model::Extensions) -> Option<Secret> {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Authenticated>())
        .and_then(|authenticated| authenticated.token.as_ref())
        .map(|token| Secret::new(token.expose()))
}

/// The client's identity: what authentication established (see
/// [`crate::app::GatewayApp`]) and its address.
fn identity_of(extensions: &rmcp::model::Extensions) -> Identity {
    identity_from_parts(extensions.get::<http::request::Parts>())
}

/// The identity of the HTTP request `parts`, if there is one.
fn identity_from_parts(parts: Option<&http::request::Parts>) -> Identity {
    let client = parts
        .and_then(|parts| {
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<SocketAddr>>()
        })
        .map(|info| info.0.ip());
    let authenticated = parts
        .and_then(|parts| parts.extensions.get::<Authenticated>())
        .cloned()
        .unwrap_or_default();
    Identity {
        subject: authenticated.subject,
        scopes: authenticated.scopes,
        client,
    }
}

/// One decided request on its way: what the policy said, what was
/// forwarded, what the detectors found; written to the audit log once,
/// when the request ends.
struct Guard<'a> {
    audit: &'a AuditLog,
    metrics: &'a Metrics,
    spans: Option<&'a Spans>,
    /// The gateway's span of the request, exported with `spans`.
    span: Option<Span>,
    policy: Arc<Policy>,
    request: Request,
    decision: Decision,
    /// The arguments as forwarded, when they differ from those received.
    forwarded: Option<Value>,
    findings: Vec<Finding>,
    started: Instant,
    /// What the upstream took, once asked.
    upstream: Option<Duration>,
}

impl<'a> Guard<'a> {
    fn new(
        shared: &'a Shared,
        policy: Arc<Policy>,
        request: Request,
        decision: Decision,
        started: Instant,
    ) -> Self {
        Self {
            audit: &shared.audit,
            metrics: &shared.metrics,
            spans: shared.spans.as_ref(),
            span: None,
            policy,
            request,
            decision,
            forwarded: None,
            findings: Vec::new(),
            started,
            upstream: None,
        }
    }

    /// The same guard, its span `span`.
    fn in_span(mut self, span: &Span) -> Self {
        self.span = Some(span.clone());
        self
    }

    /// The arguments to forward, or the refusal (audited).
    fn admit(&mut self) -> Result<JsonObject, Refusal> {
        if self.decision.verdict == Verdict::Deny {
            let refusal = Refusal::Denied(Box::new(self.decision.clone()));
            self.finish(Outcome::Denied);
            return Err(refusal);
        }
        let mut arguments = self
            .decision
            .arguments
            .clone()
            .unwrap_or_else(|| self.request.arguments.clone());
        let inspection = self
            .policy
            .detectors()
            .inspect(Place::Arguments, &mut arguments);
        self.findings.extend(inspection.findings.iter().cloned());
        if inspection.blocked() {
            let refusal = Refusal::Blocked {
                place: "arguments",
                findings: inspection.findings,
            };
            self.finish(Outcome::Blocked);
            return Err(refusal);
        }
        if arguments != self.request.arguments {
            self.forwarded = Some(arguments.clone());
        }
        match arguments {
            Value::Object(object) => Ok(object),
            _ => Ok(JsonObject::new()),
        }
    }

    /// What the client answered an `input_required` round with, after the
    /// argument detectors read it (redacted where they redact), or the
    /// refusal (audited). Its findings go in the request's audit line,
    /// pointed at under `/inputResponses`.
    fn admit_responses(
        &mut self,
        responses: Option<InputResponses>,
    ) -> Result<Option<InputResponses>, Refusal> {
        let Some(responses) = responses else {
            return Ok(None);
        };
        if !self.policy.detectors().reads(Place::Arguments) {
            return Ok(Some(responses));
        }
        let mut value = Value::Object(responses.into_iter().collect());
        let mut inspection = self
            .policy
            .detectors()
            .inspect(Place::Arguments, &mut value);
        for finding in &mut inspection.findings {
            finding.pointer = format!("/inputResponses{}", finding.pointer);
        }
        self.findings.extend(inspection.findings.iter().cloned());
        if inspection.blocked() {
            let refusal = Refusal::Blocked {
                place: "input responses",
                findings: inspection.findings,
            };
            self.finish(Outcome::Blocked);
            return Err(refusal);
        }
        match value {
            Value::Object(responses) => Ok(Some(responses.into_iter().collect())),
            _ => Ok(None),
        }
    }

    /// `result` after the detectors read it (redacted where they redact),
    /// or the refusal (audited).
    fn inspect_result<T>(&mut self, result: T) -> Result<T, Refusal>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        if !self.policy.detectors().reads(Place::Results) {
            return Ok(result);
        }
        let mut value = serde_json::to_value(&result).unwrap_or(Value::Null);
        let inspection = self.policy.detectors().inspect(Place::Results, &mut value);
        if inspection.findings.is_empty() {
            // Nothing found, so nothing redacted: the result goes on as it came.
            return Ok(result);
        }
        self.findings.extend(inspection.findings.iter().cloned());
        if inspection.blocked() {
            let refusal = Refusal::Blocked {
                place: "result",
                findings: inspection.findings,
            };
            self.finish(Outcome::Blocked);
            return Err(refusal);
        }
        serde_json::from_value(value).map_err(|error| {
            let refusal = Refusal::Blocked {
                place: "result",
                findings: inspection.findings,
            };
            tracing::warn!(%error, "a redacted result no longer reads as one");
            self.finish(Outcome::Blocked);
            refusal
        })
    }

    /// What an `input_required` result asks of the client (a form's
    /// message, a sampling prompt) after the detectors read it as a
    /// result; its `requestState`, opaque and echoed back as it came, is
    /// left untouched.
    fn inspect_input_requests(
        &mut self,
        mut asked: InputRequiredResult,
    ) -> Result<InputRequiredResult, Refusal> {
        if let Some(requests) = asked.input_requests.take() {
            asked.input_requests = Some(self.inspect_result(requests)?);
        }
        Ok(asked)
    }

    /// The upstream failed: audited, and the refusal handed back.
    fn failed(&mut self, refusal: Refusal) -> Refusal {
        let outcome = match refusal {
            Refusal::UpstreamError { .. } => Outcome::Error,
            _ => Outcome::Failed,
        };
        self.finish(outcome);
        refusal
    }

    fn finish(&mut self, outcome: Outcome) {
        let latency = self.started.elapsed();
        self.metrics.count(&Counted {
            method: &self.request.method,
            server: &self.request.server,
            tool: self.request.tool.as_deref(),
            verdict: self.decision.verdict,
            outcome,
            total: latency,
            upstream: self.upstream,
        });
        if let (Some(spans), Some(span)) = (self.spans, &self.span) {
            spans.record(self.finished_span(span, latency, outcome));
        }
        write(
            self.audit,
            Entry {
                identity: self.request.identity.clone(),
                server: self.request.server.clone(),
                method: self.request.method.clone(),
                tool: self.request.tool.clone(),
                arguments: std::mem::take(&mut self.request.arguments),
                redacted: self.forwarded.take(),
                verdict: self.decision.verdict,
                rule: self.decision.rule.clone(),
                reason: self.decision.reason.clone(),
                findings: std::mem::take(&mut self.findings),
                latency,
                outcome,
            },
        );
    }
}

impl Guard<'_> {
    /// The request's span as it ends, `latency` after it began.
    fn finished_span<'s>(
        &self,
        span: &'s Span,
        latency: Duration,
        outcome: Outcome,
    ) -> Finished<'s> {
        let request = &self.request;
        let name = match &request.tool {
            Some(tool) => format!(
                "{} {}",
                request.method,
                nexo_client::namespace::join(&request.server, tool)
            ),
            None => format!("{} {}", request.method, request.server),
        };
        let mut attributes = vec![
            Attribute::text("mcp.method.name", request.method.clone()),
            Attribute::text("nexo.gateway.upstream", request.server.clone()),
            Attribute::text("nexo.gateway.decision", verdict_name(self.decision.verdict)),
            Attribute::text("nexo.gateway.outcome", outcome_name(outcome)),
        ];
        if let Some(tool) = &request.tool {
            attributes.push(Attribute::text("gen_ai.tool.name", tool.clone()));
        }
        if let Some(rule) = &self.decision.rule {
            attributes.push(Attribute::text("nexo.gateway.rule", rule.clone()));
        }
        if let Some(subject) = &request.identity.subject {
            attributes.push(Attribute::text("enduser.id", subject.clone()));
        }
        if let Some(client) = request.identity.client {
            attributes.push(Attribute::text("client.address", client.to_string()));
        }
        if let Some(upstream) = self.upstream {
            attributes.push(Attribute::float(
                "nexo.gateway.upstream_ms",
                upstream.as_secs_f64() * 1e3,
            ));
        }
        let ended = SystemTime::now();
        Finished {
            span,
            name,
            started: ended.checked_sub(latency).unwrap_or(ended),
            ended,
            attributes,
            error: (outcome != Outcome::Ok).then(|| match outcome {
                Outcome::Denied | Outcome::Limited => self.decision.reason.clone(),
                _ => outcome_name(outcome).to_owned(),
            }),
        }
    }
}

/// How a call refused for a tool's missing scopes is audited: denied,
/// naming the `toolScopes` pattern as its rule.
fn scope_decision(missing: &MissingScopes) -> Decision {
    let shown: Vec<String> = missing
        .missing
        .iter()
        .map(|scope| format!("`{scope}`"))
        .collect();
    Decision {
        verdict: Verdict::Deny,
        rule: Some(format!("auth.oauth.toolScopes[{}]", missing.pattern)),
        reason: format!(
            "the token lacks the scope{} {} this tool needs; ask the authorization server for a \
             token with {}",
            if missing.missing.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if missing.missing.len() == 1 {
                "it"
            } else {
                "them"
            },
        ),
        evidence: Vec::new(),
        redactions: Vec::new(),
        arguments: None,
    }
}

/// How a rate-limited request is audited: denied by the limit, named as
/// its rule.
fn limited_decision(exceeded: &Exceeded) -> Decision {
    Decision {
        verdict: Verdict::Deny,
        rule: Some(exceeded.scope.name().to_owned()),
        reason: exceeded.message(),
        evidence: Vec::new(),
        redactions: Vec::new(),
        arguments: None,
    }
}

/// How a request whose limit could not be checked is audited: denied by
/// `whenDown`, named as its rule.
fn unchecked_decision(unchecked: &Unchecked) -> Decision {
    Decision {
        verdict: Verdict::Deny,
        rule: Some(Unchecked::RULE.to_owned()),
        reason: unchecked.message(),
        evidence: Vec::new(),
        redactions: Vec::new(),
        arguments: None,
    }
}

/// Appends `entry`; a log that cannot be written is reported, and the
/// request's answer stands.
fn write(audit: &AuditLog, entry: Entry) {
    if let Err(error) = audit.append(entry) {
        tracing::error!(
            "cannot write the audit log: {error}; hint: {}",
            error.hint().map(|hint| hint.terminal()).unwrap_or_default()
        );
    }
}

impl ServerHandler for GatewayServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_tasks()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .build();
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "nexo-gateway",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let identity = identity_of(&context.extensions);
        let (tools, filtered) = self.visible_tools(&identity);
        // A list the policy or the token's scopes cut for this caller, or
        // one behind authentication (whose scopes may cut it), is no one
        // else's to reuse.
        let scope = if filtered || !self.shared.auth.is_open() {
            CacheScope::Private
        } else {
            CacheScope::Public
        };
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(scope))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let identity = identity_of(&context.extensions);
        let trace = trace_of(request.meta.as_ref(), &context);
        let capabilities = context.client_capabilities();
        let caller = caller_of(&context.extensions);
        match self
            .call(request, identity, trace, capabilities, caller.as_ref())
            .await
        {
            Ok(response) => Ok(response),
            Err(refusal) => refusal.to_tool_answer().map(Into::into),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let federated = request.task_id.clone();
        let (server, id) = self.task(&federated)?;
        let mut upstream = request;
        upstream.task_id = id.to_owned();
        let mut result = self
            .federation()
            .get_task(&server, upstream, caller_of(&context.extensions).as_ref())
            .await
            .map_err(|failure| Refusal::upstream(failure).to_error())?;
        if let TaskPayload::Completed { result: completed } = &mut result.task.payload {
            let identity = identity_of(&context.extensions);
            *completed = self
                .inspect_task_result(identity, server, &federated, std::mem::take(completed))
                .map_err(|refusal| refusal.to_error())?;
        }
        result.task.task.task_id = federated;
        Ok(result)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (server, id) = self.task(&request.task_id)?;
        let id = id.to_owned();
        let mut upstream = request;
        upstream.task_id = id;
        self.federation()
            .update_task(&server, upstream, caller_of(&context.extensions).as_ref())
            .await
            .map_err(|failure| Refusal::upstream(failure).to_error())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (server, id) = self.task(&request.task_id)?;
        let id = id.to_owned();
        let mut upstream = request;
        upstream.task_id = id;
        self.federation()
            .cancel_task(&server, upstream, caller_of(&context.extensions).as_ref())
            .await
            .map_err(|failure| Refusal::upstream(failure).to_error())
    }

    /// Completion for a prompt's or a resource template's argument, asked
    /// of the upstream that offers it under its own name.
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let mut upstream = request;
        let server = match &mut upstream.r#ref {
            Reference::Prompt(prompt) => {
                let Some((server, name)) = self
                    .view
                    .resolve_prompt(self.federation(), &prompt.name)
                    .await
                else {
                    return Err(self.unknown("prompt", &prompt.name).to_error());
                };
                prompt.name = name;
                server
            }
            Reference::Resource(resource) => {
                let Some((server, uri)) = self.view.resolve_uri(self.federation(), &resource.uri)
                else {
                    return Err(self.unknown("resource", &resource.uri).to_error());
                };
                resource.uri = uri;
                server
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "the gateway completes the arguments of prompts (`ref/prompt`) and \
                     resources (`ref/resource`) only",
                    None,
                ));
            }
        };
        self.federation()
            .complete(&server, upstream, caller_of(&context.extensions).as_ref())
            .await
            .map_err(|failure| Refusal::upstream(failure).to_error())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = self.view.prompts(self.federation()).await;
        Ok(ListPromptsResult::with_all_items(
            prompts.into_iter().map(|offered| offered.item).collect(),
        )
        .with_ttl_ms(LIST_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let identity = identity_of(&context.extensions);
        let trace = trace_of(request.meta.as_ref(), &context);
        let capabilities = context.client_capabilities();
        let caller = caller_of(&context.extensions);
        self.prompt(request, identity, trace, capabilities, caller.as_ref())
            .await
            .map_err(|refusal| refusal.to_error())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self.view.resources(self.federation()).await;
        Ok(ListResourcesResult::with_all_items(
            resources.into_iter().map(|offered| offered.item).collect(),
        )
        .with_ttl_ms(LIST_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = self.view.resource_templates(self.federation()).await;
        Ok(ListResourceTemplatesResult::with_all_items(templates)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let identity = identity_of(&context.extensions);
        let trace = trace_of(request.meta.as_ref(), &context);
        let capabilities = context.client_capabilities();
        let caller = caller_of(&context.extensions);
        self.read(request, identity, trace, capabilities, caller.as_ref())
            .await
            .map_err(|refusal| refusal.to_error())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2025-era session: its client hears of list changes on it.
        let mut changes = self.shared.changes.subscribe();
        let peer = context.peer;
        tokio::spawn(async move {
            let mut check = tokio::time::interval(SESSION_CHECK);
            loop {
                let list = tokio::select! {
                    list = changes.recv() => match list {
                        Ok(list) => list,
                        Err(broadcast::error::RecvError::Lagged(_)) => List::Tools,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    _ = check.tick() => {
                        if peer.is_transport_closed() {
                            return;
                        }
                        continue;
                    }
                };
                let sent = match list {
                    List::Tools => peer.notify_tool_list_changed().await,
                    List::Prompts => peer.notify_prompt_list_changed().await,
                    List::Resources => peer.notify_resource_list_changed().await,
                };
                if sent.is_err() {
                    return;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.clone();
        // Single resources are not followed through the gateway.
        accepted.resource_subscriptions = None;
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.changes.subscribe();
        loop {
            let list = tokio::select! {
                () = context.cancelled() => return Ok(()),
                list = changes.recv() => list,
            };
            let accepted = context.accepted();
            let sent = match list {
                Ok(List::Tools) if accepted.tools_list_changed == Some(true) => {
                    context.sink().notify_tool_list_changed().await
                }
                Ok(List::Prompts) if accepted.prompts_list_changed == Some(true) => {
                    context.sink().notify_prompt_list_changed().await
                }
                Ok(List::Resources) if accepted.resources_list_changed == Some(true) => {
                    context.sink().notify_resource_list_changed().await
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            if sent.is_err() {
                return Ok(());
            }
        }
    }
}
