//! The Prometheus metrics of an HTTP server, one definition for
//! `nexo serve --http` (prefix `nexo_serve`) and the gateway (prefix
//! `nexo_gateway`, which registers its own families beside these), served
//! at `GET /metrics` in the OpenMetrics text format (prometheus-client:
//! label escaping, histogram buckets and the `# EOF` terminator are its
//! job). The names, after the prefix:
//!
//! - `requests_total{method,server,tool,decision,outcome}`: every counted
//!   request once (decision `allow`, `deny` or `redact`; outcome `ok`,
//!   `error`, `denied`, `blocked`, `failed` or `limited`);
//! - `request_latency_seconds{method}`: from a request's arrival to its
//!   answer;
//! - `rate_limited_total{limit}`: requests a rate limit refused;
//! - `refused_total{reason}`: requests refused before any server saw them
//!   (`auth`, `scope`, `rate`, `origin`, `host`, `size`).
//!
//! [`endpoint`] answers `GET /metrics` behind the same `Origin` and `Host`
//! checks as `/mcp`, because the text names every tool called.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, header};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::limits::Scope;
use crate::policy::{HostPolicy, OriginPolicy};

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    server: String,
    tool: String,
    decision: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// Why a request was refused before any server saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No valid credential (401).
    Auth,
    /// A credential without the scopes asked for (403).
    Scope,
    /// A rate limit (429).
    Rate,
    Origin,
    Host,
    /// A body over the limit (413).
    Size,
}

impl Refused {
    pub fn name(self) -> &'static str {
        match self {
            Refused::Auth => "auth",
            Refused::Scope => "scope",
            Refused::Rate => "rate",
            Refused::Origin => "origin",
            Refused::Host => "host",
            Refused::Size => "size",
        }
    }
}

/// From 100 µs to about 3.3 s, doubling.
pub fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

/// One request as counted.
#[derive(Debug, Clone, Copy)]
pub struct Counted<'a> {
    pub method: &'a str,
    pub server: &'a str,
    pub tool: Option<&'a str>,
    /// `allow`, `deny`, `redact`.
    pub decision: &'static str,
    /// `ok`, `error`, `denied`, `blocked`, `failed`, `limited`.
    pub outcome: &'static str,
    /// From the request's arrival to its answer.
    pub latency: Duration,
}

/// The metrics every HTTP server of nexo has, registered once.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<MethodLabels, Histogram>,
    limited: Family<LimitLabels, Counter>,
    refused: Family<ReasonLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// The metrics, their names prefixed `prefix_`.
    pub fn new(prefix: &str) -> Self {
        let mut registry = Registry::with_prefix(prefix);
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests by method, server, tool, decision and outcome",
            requests.clone(),
        );
        let latency = Family::<MethodLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "request_latency_seconds",
            "Time from a request's arrival to its answer",
            latency.clone(),
        );
        let limited = Family::<LimitLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "Requests refused by a rate limit, by limit",
            limited.clone(),
        );
        let refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "refused",
            "Requests refused before any server saw them (auth, scope, rate, origin, host, size)",
            refused.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            limited,
            refused,
        }
    }

    /// Where a program registers its own metrics beside these.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Counts one request that ended.
    pub fn count(&self, counted: &Counted<'_>) {
        self.requests
            .get_or_create(&RequestLabels {
                method: counted.method.to_owned(),
                server: counted.server.to_owned(),
                tool: counted.tool.unwrap_or_default().to_owned(),
                decision: counted.decision,
                outcome: counted.outcome,
            })
            .inc();
        self.latency
            .get_or_create(&MethodLabels {
                method: counted.method.to_owned(),
            })
            .observe(counted.latency.as_secs_f64());
    }

    /// Counts a request a rate limit refused.
    pub fn limited(&self, scope: Scope) {
        self.limited
            .get_or_create(&LimitLabels {
                limit: scope.name(),
            })
            .inc();
    }

    /// Counts a request refused before any server saw it.
    pub fn refused(&self, reason: Refused) {
        self.refused
            .get_or_create(&ReasonLabels {
                reason: reason.name(),
            })
            .inc();
    }

    /// The metrics as text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(%error, "cannot encode the metrics");
        }
        text
    }
}

/// The answer to a request of [`METRICS_PATH`]: the text `render` gives,
/// for a `GET` with no `Origin` (Prometheus, curl) or an allowed one, and
/// an allowed `Host`.
pub fn endpoint(
    request: &Request,
    origins: &OriginPolicy,
    hosts: &HostPolicy,
    render: impl FnOnce() -> String,
) -> Response {
    let headers = request.headers();
    let origin_refused = headers
        .get(header::ORIGIN)
        .is_some_and(|origin| !origin.to_str().is_ok_and(|o| origins.allows(o)));
    if origin_refused {
        return plain(
            StatusCode::FORBIDDEN,
            "forbidden: origin not allowed; start with `--allow-origin ORIGIN`\n",
        );
    }
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    if host.is_some_and(|host| !hosts.allows(host)) {
        return plain(
            StatusCode::FORBIDDEN,
            "forbidden: host not allowed; start with `--allow-host HOST`\n",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "the metrics are read with GET\n",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let mut response = Response::new(Body::from(render()));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_request_and_a_refusal_show_in_the_text() {
        let metrics = Metrics::new("nexo_serve");
        metrics.count(&Counted {
            method: "tools/call",
            server: "morse",
            tool: Some("encode"),
            decision: "allow",
            outcome: "ok",
            latency: Duration::from_millis(3),
        });
        metrics.refused(Refused::Auth);
        metrics.limited(Scope::Tool);
        let text = metrics.render();
        for line in [
            "nexo_serve_requests_total{method=\"tools/call\",server=\"morse\",tool=\"encode\",\
             decision=\"allow\",outcome=\"ok\"} 1",
            "nexo_serve_refused_total{reason=\"auth\"} 1",
            "nexo_serve_rate_limited_total{limit=\"rateLimits.perTool\"} 1",
            "nexo_serve_request_latency_seconds_count{method=\"tools/call\"} 1",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
