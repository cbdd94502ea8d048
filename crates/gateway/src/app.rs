//! The serving gateway put together: the policies (reloaded when their
//! files change), the audit log, the federated upstreams, and one
//! nexo-serve HTTP application per endpoint behind one listener: `/mcp`
//! (and the legacy SSE transport at `/sse`) for everything, `/mcp/NAME`
//! for each virtual server (Streamable HTTP, both eras). Each application
//! keeps nexo-serve's `Origin` and `Host` checks (loopback origins only
//! unless `--allow-origin` says otherwise), CORS and body limit. `GET
//! /metrics` serves the Prometheus metrics behind the same checks.
//!
//! Before any endpoint sees a request, [`crate::auth`] checks its
//! credential (when `auth` is configured): the Protected Resource Metadata
//! is answered here, a request without a valid credential gets its
//! challenge, and a valid one goes on with the [`Authenticated`] identity
//! in its extensions and without its `Authorization` header. When some
//! tool needs scopes of its own (`toolScopes`), a POST's body is read
//! here as well, and a `tools/call` of such a tool by a token without them
//! gets the step-up challenge (403, [`crate::auth::Rejection::ToolScope`]).
//! Without `auth`, [`Gateway::serve`] refuses an address that is not
//! loopback.
//!
//! With `redis` in the settings (crate::shared), the rate limits' buckets
//! and the 2025-era sessions are kept there for every instance: each
//! application hands rmcp the session store, and a request a session
//! answered pushes that session's expiry back ([`RedisSessions::touch`]).
//!
//! [`Prepared::load`] reads what can be wrong in files before any upstream
//! starts; [`Prepared::start`] takes the running hub.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures::future::BoxFuture;
use nexo_client::hub::Hub;
use nexo_serve::metrics::Refused;
use nexo_serve::{
    HostPolicy, HttpApp, HttpOptions, MCP_PATH, OriginPolicy, ServeOptions, SharedSessions,
};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::auth::{Auth, Authenticated, Naming};
use crate::error::StartError;
use crate::exchange::Exchanges;
use crate::federation::Federation;
use crate::limits::{Limits, SWEEP_EVERY};
use crate::metrics::{METRICS_PATH, Metrics};
use crate::otlp::Spans;
use crate::policy::{PolicyHandle, Resolver};
use crate::server::{GatewayServer, Shared};
use crate::settings::{AuthSettings, Settings, TokenExchange};
use crate::shared::{Redis, RedisSessions};
use crate::view::{Offer, View};

/// How the gateway names itself and its tool scope rules in messages.
const GATEWAY: Naming = Naming {
    noun: "gateway",
    tool_scope_rule: "auth.oauth.toolScopes[{}]",
};

/// The gateway's files, read and checked; no upstream started yet.
#[derive(Debug)]
pub struct Prepared {
    settings: Settings,
    policy: Arc<PolicyHandle>,
    /// Each virtual server's own policy, by the server's name.
    policies: HashMap<String, Arc<PolicyHandle>>,
    audit: AuditLog,
    metrics: Metrics,
    /// The Redis instances share, connected on first use.
    redis: Option<Arc<Redis>>,
    /// Where spans go, when `otlp` is configured.
    spans: Option<Spans>,
    /// What fetches an OAuth issuer's metadata and key set.
    http: reqwest::Client,
}

/// How long the gateway gives a connection to an OAuth issuer.
const ISSUER_FETCH_CONNECT: std::time::Duration = std::time::Duration::from_secs(5);

impl Prepared {
    /// Loads every policy the settings name, opens the audit log and sets
    /// up the connection to the shared Redis (on the tokio runtime).
    pub fn load(settings: Settings) -> Result<Self, StartError> {
        let policy = Arc::new(PolicyHandle::load(&settings.policy)?);
        let mut policies = HashMap::new();
        for server in settings.virtual_servers.values() {
            if let Some(path) = &server.policy {
                policies.insert(server.name.clone(), Arc::new(PolicyHandle::load(path)?));
            }
        }
        let audit = AuditLog::open(&settings.audit)?;
        let metrics = Metrics::new();
        let redis = settings
            .redis
            .as_ref()
            .map(|redis| Redis::new(redis, metrics.redis_errors()))
            .transpose()
            .map_err(StartError::Redis)?;
        let spans = settings
            .otlp
            .as_ref()
            .map(Spans::new)
            .transpose()
            .map_err(StartError::Otlp)?;
        let http = nexo_client::http::client_builder(ISSUER_FETCH_CONNECT)
            .build()
            .map_err(|error| {
                StartError::Serve(nexo_serve::ServeError::Access(format!(
                    "cannot build the HTTP client that fetches the issuer's keys: {error}"
                )))
            })?;
        Ok(Self {
            settings,
            policy,
            policies,
            audit,
            metrics,
            redis,
            spans,
            http,
        })
    }

    /// How each upstream of `tokenExchange` trades the caller's token.
    pub fn token_exchange(&self) -> &std::collections::BTreeMap<String, TokenExchange> {
        &self.settings.token_exchange
    }

    /// The gateway over `hub`'s servers, named `servers` in the
    /// configuration's order, those of `exchanges` called with each
    /// caller's traded token; the policies are checked for changes from now
    /// on (on the tokio runtime).
    pub fn start(
        self,
        hub: Hub,
        servers: Vec<String>,
        exchanges: Exchanges,
        resolver: Arc<dyn Resolver>,
    ) -> Gateway {
        let every = self.settings.policy_check;
        let mut watchers = vec![self.policy.watch(every)];
        watchers.extend(self.policies.values().map(|policy| policy.watch(every)));
        let limits = Limits::new(&self.settings.rate_limits, self.redis.as_ref());
        let sessions =
            self.redis
                .as_ref()
                .zip(self.settings.redis.as_ref())
                .map(|(redis, settings)| {
                    Arc::new(RedisSessions::new(redis.clone(), settings.session_ttl))
                });
        let auth = Auth::new(&self.settings.auth, GATEWAY, self.http);
        let shared = Shared::new(
            Federation::new(hub, servers, exchanges),
            self.audit,
            resolver,
            limits,
            self.metrics,
            auth.clone(),
            self.spans,
        );
        watchers.push(shared.forward_changes());
        watchers.push(sweep(&shared, sessions.clone()));
        let main = Arc::new(View {
            offer: Offer::All,
            policy: self.policy.clone(),
        });
        let virtual_servers = self
            .settings
            .virtual_servers
            .into_values()
            .map(|server| {
                let policy = self
                    .policies
                    .get(&server.name)
                    .cloned()
                    .unwrap_or_else(|| self.policy.clone());
                (
                    server.name.clone(),
                    Arc::new(View {
                        offer: Offer::Virtual(server),
                        policy,
                    }),
                )
            })
            .collect();
        Gateway {
            open_by_choice: self.settings.auth == AuthSettings::None,
            auth,
            sessions,
            shared,
            main,
            virtual_servers,
            watchers,
        }
    }
}

/// Drops the rate limits' keys whose bucket is full again, the callers'
/// upstream sessions whose traded token ran out, and the sessions unused
/// for a TTL, every [`SWEEP_EVERY`], for as long as `shared` lives
/// elsewhere.
fn sweep(
    shared: &Arc<Shared>,
    sessions: Option<Arc<RedisSessions>>,
) -> tokio::task::JoinHandle<()> {
    let shared = Arc::downgrade(shared);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        loop {
            every.tick().await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            shared.limits.sweep();
            shared.federation.sweep();
            if let Some(sessions) = &sessions {
                sessions.sweep();
            }
        }
    })
}

/// The running gateway.
#[derive(Debug)]
pub struct Gateway {
    auth: Arc<Auth>,
    /// The 2025-era sessions in the shared Redis.
    sessions: Option<Arc<RedisSessions>>,
    /// `"auth": "none"`: open on any address.
    open_by_choice: bool,
    shared: Arc<Shared>,
    main: Arc<View>,
    virtual_servers: Vec<(String, Arc<View>)>,
    watchers: Vec<tokio::task::JoinHandle<()>>,
}

impl Gateway {
    /// The virtual servers' names, each served at `/mcp/NAME`.
    pub fn virtual_servers(&self) -> impl Iterator<Item = &str> {
        self.virtual_servers.iter().map(|(name, _)| name.as_str())
    }

    /// The HTTP application; cancelling `shutdown` ends every session.
    /// With a shared Redis, each endpoint's sessions are kept there as
    /// well (any `sessions` in `http` gives way to it).
    pub fn app(&self, http: &HttpOptions, shutdown: &CancellationToken) -> GatewayApp {
        let app = |view: &Arc<View>| {
            let mut http = http.clone();
            if let Some(sessions) = &self.sessions {
                http.sessions = Some(SharedSessions(Arc::new(sessions.at(&view.path()))));
            }
            let server = GatewayServer::new(self.shared.clone(), view.clone());
            Endpoint {
                app: nexo_serve::app(server.clone(), http, shutdown.child_token()),
                server,
            }
        };
        GatewayApp {
            sessions: self.sessions.clone(),
            max_body: http.max_body,
            metrics: Arc::new(MetricsEndpoint {
                shared: self.shared.clone(),
                origins: http.origins.clone(),
                hosts: http.hosts.clone(),
            }),
            auth: self.auth.clone(),
            main: app(&self.main),
            virtual_servers: Arc::new(
                self.virtual_servers
                    .iter()
                    .map(|(name, view)| (name.clone(), app(view)))
                    .collect(),
            ),
        }
    }

    /// Serves on `addr` until SIGINT or SIGTERM (nexo-serve's
    /// [`nexo_serve::serve_service`]), then ends every upstream.
    pub async fn serve(
        self,
        addr: SocketAddr,
        options: &ServeOptions,
        on_listening: impl FnOnce(SocketAddr),
    ) -> Result<(), StartError> {
        if self.auth.is_open() && !self.open_by_choice && !addr.ip().is_loopback() {
            return Err(StartError::OpenOnNetwork { addr });
        }
        let logger = options.logger()?;
        let trace = options.tracer()?;
        let served = nexo_serve::serve_service(
            addr,
            options.tls.as_ref(),
            |bound, shutdown| {
                let http = HttpOptions {
                    origins: OriginPolicy::new(&options.allow_origins),
                    hosts: HostPolicy::new(&options.allow_hosts, bound.ip()),
                    max_body: options.max_body,
                    tools: Vec::new(),
                    logger,
                    trace: trace.clone(),
                    sessions: None,
                };
                self.app(&http, &shutdown)
            },
            on_listening,
        )
        .await;
        if let Some(trace) = trace {
            trace.flush();
        }
        self.close().await;
        served.map_err(StartError::from)
    }

    /// Whether requests are let in without a credential.
    pub fn is_open(&self) -> bool {
        self.auth.is_open()
    }

    /// Stops watching the policies and ends every upstream.
    pub async fn close(self) {
        for watcher in &self.watchers {
            watcher.abort();
        }
        let Self { shared, .. } = self;
        if let Some(spans) = &shared.spans {
            // The last batch is sent (within the export time limit).
            spans.shutdown().await;
        }
        match Arc::try_unwrap(shared) {
            Ok(shared) => shared.federation.close().await,
            Err(_) => {
                tracing::debug!("sessions still hold the upstreams; they end with the process")
            }
        }
    }
}

/// `GET /metrics`, behind the same `Origin` and `Host` checks as `/mcp`
/// (it names every tool called).
struct MetricsEndpoint {
    shared: Arc<Shared>,
    origins: OriginPolicy,
    hosts: HostPolicy,
}

impl MetricsEndpoint {
    fn answer(&self, request: &Request) -> Response {
        nexo_serve::metrics::endpoint(request, &self.origins, &self.hosts, || {
            self.shared
                .metrics
                .render(&self.shared.federation.hub().status())
        })
    }
}

/// Every endpoint behind one service: `/mcp/NAME` goes to the virtual
/// server NAME (its path made `/mcp` for nexo-serve), the rest to `/mcp`'s
/// application.
#[derive(Clone)]
pub struct GatewayApp {
    /// Told of each request a shared session answered.
    sessions: Option<Arc<RedisSessions>>,
    metrics: Arc<MetricsEndpoint>,
    auth: Arc<Auth>,
    /// The largest body read for the step-up check (nexo-serve's limit).
    max_body: usize,
    main: Endpoint,
    virtual_servers: Arc<HashMap<String, Endpoint>>,
}

/// One endpoint's application and the server inside it.
#[derive(Clone)]
struct Endpoint {
    app: HttpApp<GatewayServer>,
    server: GatewayServer,
}

impl tower::Service<Request> for GatewayApp {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if self.auth.is_open() {
            return self.route(request);
        }
        let mut this = self.clone();
        Box::pin(async move {
            let auth = this.auth.clone();
            // The answers given here reach a browser's script as the
            // application's do (an origin the policy refuses is not named).
            let origin = request.headers().get(http::header::ORIGIN).cloned();
            let origins = this.metrics.origins.clone();
            let cors = |mut response: Response| {
                if origin.is_some() {
                    nexo_serve::add_cors_headers(response.headers_mut(), &origins, origin.as_ref());
                }
                Ok(response)
            };
            if request.method() == http::Method::GET
                && let Some(metadata) = auth.metadata(request.uri().path())
            {
                return cors(metadata);
            }
            // A browser's preflight carries no credential.
            if request.method() != http::Method::OPTIONS {
                match auth.check(request.headers()).await {
                    Ok(found) => {
                        request.headers_mut().remove(http::header::AUTHORIZATION);
                        if let Some(found) = found {
                            request.extensions_mut().insert::<Authenticated>(found);
                        }
                    }
                    Err(rejection) => {
                        this.metrics.shared.metrics.refused(rejection.refused());
                        return cors(auth.challenge(&rejection));
                    }
                }
            }
            if auth.has_tool_scopes()
                && request.method() == http::Method::POST
                && let Some(endpoint) = this.endpoint(request.uri().path())
            {
                request = match step_up(&endpoint.server, &auth, request, this.max_body).await {
                    Ok(request) => request,
                    Err(challenge) => {
                        this.metrics.shared.metrics.refused(
                            if challenge.status() == http::StatusCode::FORBIDDEN {
                                Refused::Scope
                            } else {
                                Refused::Size
                            },
                        );
                        return cors(challenge);
                    }
                };
            }
            this.route(request).await
        })
    }
}

/// `request` again, its body read; or the step-up challenge when it calls
/// a tool whose scopes the caller lacks (see [`GatewayServer::step_up`]).
async fn step_up(
    server: &GatewayServer,
    auth: &Auth,
    request: Request,
    max_body: usize,
) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        let mut response = Response::new(axum::body::Body::from(format!(
            "the request body could not be read whole within {max_body} bytes; send a smaller \
             request, or start the gateway with a larger `--max-body`\n"
        )));
        *response.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
        return Err(response);
    };
    for (name, arguments) in nexo_serve::guard::tool_calls(&parts.headers, &bytes) {
        if let Some(rejection) = server.step_up(&parts, &name, arguments) {
            return Err(auth.challenge(&rejection));
        }
    }
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}

impl GatewayApp {
    /// The endpoint serving `path`: `/mcp` or a virtual server's.
    fn endpoint(&self, path: &str) -> Option<&Endpoint> {
        if path == MCP_PATH {
            return Some(&self.main);
        }
        let name = path.strip_prefix(MCP_PATH)?.strip_prefix('/')?;
        self.virtual_servers.get(name)
    }

    /// Hands `request` to its endpoint's application; a request that a
    /// shared session answered pushes that session's expiry back.
    fn route(&mut self, mut request: Request) -> BoxFuture<'static, Result<Response, Infallible>> {
        // Behind authentication when it is configured: it names every tool.
        if request.uri().path() == METRICS_PATH {
            let response = self.metrics.answer(&request);
            return Box::pin(async move { Ok(response) });
        }
        let virtual_server = request
            .uri()
            .path()
            .strip_prefix(MCP_PATH)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|name| self.virtual_servers.get_key_value(name))
            .map(|(name, endpoint)| (name.clone(), endpoint.app.clone()));
        let touched = self.sessions.clone().and_then(|sessions| {
            let id = request
                .headers()
                .get(rmcp::transport::common::http_header::HEADER_SESSION_ID)?
                .to_str()
                .ok()?
                .to_owned();
            let endpoint = match &virtual_server {
                Some((name, _)) => format!("{MCP_PATH}/{name}"),
                None => MCP_PATH.to_owned(),
            };
            (request.method() != http::Method::DELETE).then_some((sessions, endpoint, id))
        });
        let answered = match virtual_server {
            Some((_, mut app)) => {
                let path_and_query = match request.uri().query() {
                    Some(query) => format!("{MCP_PATH}?{query}"),
                    None => MCP_PATH.to_owned(),
                };
                if let Ok(uri) = path_and_query.parse() {
                    *request.uri_mut() = uri;
                }
                tower::Service::call(&mut app, request)
            }
            None => tower::Service::call(&mut self.main.app, request),
        };
        let Some((sessions, endpoint, id)) = touched else {
            return answered;
        };
        Box::pin(async move {
            let response = answered.await?;
            if response.status().is_success() {
                sessions.touch(&endpoint, &id);
            }
            Ok(response)
        })
    }
}
