//! The gateway's Prometheus metrics, served at `GET /metrics`: those of
//! every nexo HTTP server ([`nexo_serve::metrics`], one definition shared
//! with `nexo serve`: `requests_total`, `request_latency_seconds`,
//! `rate_limited_total`, `refused_total`) and the gateway's own, all
//! prefixed `nexo_gateway_`. A guarded request is counted once, when its
//! audit line is written (outcome as the audit log's). The gateway's own:
//!
//! - `added_latency_seconds{method}` and
//!   `upstream_latency_seconds{server}`: what the gateway added to a
//!   request and what its upstream took;
//! - `redis_errors_total{purpose}`: commands to the shared Redis
//!   (crate::shared) that failed, for `rate_limits` or `sessions`;
//! - `upstream_up{server}` (1 or 0) and `upstream_restarts_total{server}`,
//!   read from the hub when scraped.
//!
//! [`Metrics::render`] gives the text; the application (crate::app) serves
//! it with [`nexo_serve::metrics::endpoint`].

use std::time::Duration;

use nexo_client::hub::{ServerStatus, State};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

pub use nexo_serve::metrics::{CONTENT_TYPE, METRICS_PATH};
use nexo_serve::metrics::{Refused, latency_histogram};

use crate::audit::Outcome;
use crate::limits::Scope;
use crate::policy::Verdict;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PurposeLabels {
    purpose: &'static str,
}

/// The count of failed Redis commands, handed to crate::shared.
#[derive(Debug, Clone, Default)]
pub struct RedisErrors(Family<PurposeLabels, Counter>);

impl RedisErrors {
    /// Counts one failed command made for `purpose`.
    pub fn count(&self, purpose: &'static str) {
        self.0.get_or_create(&PurposeLabels { purpose }).inc();
    }
}

/// One request as counted.
#[derive(Debug, Clone, Copy)]
pub struct Counted<'a> {
    pub method: &'a str,
    pub server: &'a str,
    pub tool: Option<&'a str>,
    pub verdict: Verdict,
    pub outcome: Outcome,
    /// From the request's arrival to its answer.
    pub total: Duration,
    /// What the upstream took, when it was asked.
    pub upstream: Option<Duration>,
}

/// Every metric, registered once.
pub struct Metrics {
    common: nexo_serve::metrics::Metrics,
    added: Family<MethodLabels, Histogram>,
    upstream: Family<ServerLabels, Histogram>,
    redis_errors: RedisErrors,
    up: Family<ServerLabels, Gauge>,
    restarts: Family<ServerLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut common = nexo_serve::metrics::Metrics::new("nexo_gateway");
        let registry = common.registry_mut();
        let added = Family::<MethodLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "added_latency_seconds",
            "Time the gateway added to a request (policy, detectors, audit), upstream excluded",
            added.clone(),
        );
        let upstream = Family::<ServerLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "upstream_latency_seconds",
            "Time an upstream took to answer a forwarded request",
            upstream.clone(),
        );
        let redis_errors = RedisErrors::default();
        registry.register(
            "redis_errors",
            "Commands to the shared Redis that failed, by what they were for",
            redis_errors.0.clone(),
        );
        let up = Family::<ServerLabels, Gauge>::default();
        registry.register(
            "upstream_up",
            "Whether an upstream is connected (1) or not (0)",
            up.clone(),
        );
        let restarts = Family::<ServerLabels, Counter>::default();
        registry.register(
            "upstream_restarts",
            "How many times an upstream was connected again",
            restarts.clone(),
        );
        Self {
            common,
            added,
            upstream,
            redis_errors,
            up,
            restarts,
        }
    }

    /// Counts one request that ended.
    pub fn count(&self, counted: &Counted<'_>) {
        self.common.count(&nexo_serve::metrics::Counted {
            method: counted.method,
            server: counted.server,
            tool: counted.tool,
            decision: verdict_name(counted.verdict),
            outcome: outcome_name(counted.outcome),
            latency: counted.total,
        });
        let upstream = counted.upstream.unwrap_or_default();
        self.added
            .get_or_create(&MethodLabels {
                method: counted.method.to_owned(),
            })
            .observe(counted.total.saturating_sub(upstream).as_secs_f64());
        if let Some(upstream) = counted.upstream {
            self.upstream
                .get_or_create(&ServerLabels {
                    server: counted.server.to_owned(),
                })
                .observe(upstream.as_secs_f64());
        }
    }

    /// Counts a request a rate limit refused (its request is counted by
    /// [`Metrics::count`] as well).
    pub fn limited(&self, scope: Scope) {
        self.common.limited(scope);
    }

    /// Counts a request refused before the gateway's server saw it.
    pub fn refused(&self, reason: Refused) {
        self.common.refused(reason);
    }

    /// Where failed Redis commands are counted.
    pub fn redis_errors(&self) -> RedisErrors {
        self.redis_errors.clone()
    }

    /// The text of every metric, the upstreams' health read from
    /// `upstreams` first.
    pub fn render(&self, upstreams: &[ServerStatus]) -> String {
        for status in upstreams {
            let labels = ServerLabels {
                server: status.name.clone(),
            };
            self.up
                .get_or_create(&labels)
                .set(i64::from(status.state == State::Connected));
            let restarts = self.restarts.get_or_create(&labels);
            let known = restarts.get();
            let now = u64::from(status.restarts);
            if now > known {
                restarts.inc_by(now - known);
            }
        }
        self.common.render()
    }
}

pub(crate) fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Redact => "redact",
    }
}

pub(crate) fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Ok => "ok",
        Outcome::Error => "error",
        Outcome::Denied => "denied",
        Outcome::Blocked => "blocked",
        Outcome::Failed => "failed",
        Outcome::Limited => "limited",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_request_shows_in_the_text() {
        let metrics = Metrics::new();
        metrics.count(&Counted {
            method: "tools/call",
            server: "utils",
            tool: Some("echo"),
            verdict: Verdict::Allow,
            outcome: Outcome::Ok,
            total: Duration::from_millis(3),
            upstream: Some(Duration::from_millis(2)),
        });
        metrics.limited(Scope::Identity);
        metrics.redis_errors().count("sessions");
        let text = metrics.render(&[]);
        assert!(
            text.contains("nexo_gateway_redis_errors_total{purpose=\"sessions\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "nexo_gateway_requests_total{method=\"tools/call\",server=\"utils\",\
                 tool=\"echo\",decision=\"allow\",outcome=\"ok\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("nexo_gateway_rate_limited_total{limit=\"rateLimits.perIdentity\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("nexo_gateway_upstream_latency_seconds_count{server=\"utils\"} 1"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
