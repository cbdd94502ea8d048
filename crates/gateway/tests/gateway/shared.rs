//! What instances share through Redis (a real `redis-server` on loopback,
//! nexo-testkit's [`RedisServer`]): the same limits, checked through one
//! assertion function, refuse alike in memory and in Redis; the session
//! store keeps, finds and forgets a session; and a Redis that does not
//! answer is refused or let through as `whenDown` says.

use std::sync::Arc;
use std::time::Duration;

use nexo_gateway::limits::{Exceeded, LimitSettings, Limited, Limits, Scope, Unchecked};
use nexo_gateway::metrics::Metrics;
use nexo_gateway::policy::Identity;
use nexo_gateway::shared::{Redis, RedisSessions, RedisSettings};
use nexo_testkit::RedisServer;
use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore};
use serde_json::json;

fn client(address: &str) -> Identity {
    Identity {
        client: Some(address.parse().unwrap()),
        ..Identity::default()
    }
}

fn redis(url: &str, when_down: &str, metrics: &Metrics) -> Arc<Redis> {
    let settings =
        RedisSettings::read(&json!({"url": url, "prefix": "test:", "whenDown": when_down}))
            .unwrap();
    Redis::new(&settings, metrics.redis_errors()).unwrap()
}

fn exceeded(checked: Result<(), Limited>) -> Exceeded {
    match checked {
        Err(Limited::Exceeded(exceeded)) => exceeded,
        other => panic!("not exceeded: {other:?}"),
    }
}

/// 100/min with a burst of 2 for each identity, 1/min with the same burst
/// on `utils__calc`: what both kinds of buckets must do.
async fn refuses_as_governor_does(limits: &Limits) {
    let one = client("10.0.0.1");
    limits.check(&one, None).await.unwrap();
    limits.check(&one, None).await.unwrap();
    let refused = exceeded(limits.check(&one, None).await);
    assert_eq!(refused.scope, Scope::Identity);
    assert_eq!(refused.key, "10.0.0.1");
    assert_eq!(refused.rate, "100/min");
    // Two at once used the burst: the next one is due 0.6 s after them.
    assert!(
        refused.retry_after > Duration::from_millis(400)
            && refused.retry_after <= Duration::from_millis(600),
        "{refused:?}"
    );
    limits.check(&client("10.0.0.2"), None).await.unwrap();
    for from in ["10.0.0.3", "10.0.0.4"] {
        limits
            .check(&client(from), Some("utils__calc"))
            .await
            .unwrap();
    }
    let refused = exceeded(limits.check(&client("10.0.0.5"), Some("utils__calc")).await);
    assert_eq!(refused.scope, Scope::Tool);
    assert_eq!(refused.key, "utils__calc");
    assert!(refused.retry_after > Duration::from_secs(50), "{refused:?}");
    // The tool refused it before the caller's own limit was used.
    limits.check(&client("10.0.0.5"), None).await.unwrap();
    limits.check(&client("10.0.0.5"), None).await.unwrap();
}

fn settings() -> LimitSettings {
    LimitSettings::read(&json!({
        "perIdentity": "100/min",
        "perTool": {"utils__calc": "1/min"},
        "burst": 2
    }))
    .unwrap()
}

#[tokio::test]
async fn limits_refuse_alike_in_memory_and_in_redis() {
    refuses_as_governor_does(&Limits::new(&settings(), None)).await;
    let server = RedisServer::start();
    let metrics = Metrics::new();
    let shared = redis(&server.url(), "refuse", &metrics);
    refuses_as_governor_does(&Limits::new(&settings(), Some(&shared))).await;
    // Another instance's limits over the same Redis share the buckets.
    let other = Limits::new(&settings(), Some(&shared));
    let refused = exceeded(other.check(&client("10.0.0.1"), None).await);
    assert_eq!(refused.scope, Scope::Identity);
    assert!(!metrics.render(&[]).contains("redis_errors_total{"));
}

#[tokio::test]
async fn sessions_are_kept_found_and_forgotten() {
    let server = RedisServer::start();
    let metrics = Metrics::new();
    let all = Arc::new(RedisSessions::new(
        redis(&server.url(), "refuse", &metrics),
        Duration::from_secs(60),
    ));
    let sessions = all.at("/mcp");
    assert!(sessions.load("s-1").await.unwrap().is_none());
    let params = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("e2e", "1"),
    );
    sessions
        .store("s-1", &SessionState::new(params))
        .await
        .unwrap();
    let found = sessions.load("s-1").await.unwrap().unwrap();
    assert_eq!(found.initialize_params.client_info.name, "e2e");
    assert!(sessions.load("s-2").await.unwrap().is_none());
    // Another endpoint's sessions are its own.
    assert!(all.at("/mcp/ro").load("s-1").await.unwrap().is_none());
    sessions.delete("s-1").await.unwrap();
    assert!(sessions.load("s-1").await.unwrap().is_none());
}

#[tokio::test]
async fn a_redis_that_does_not_answer_is_refused_or_let_through() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let metrics = Metrics::new();
    let refusing = Limits::new(&settings(), Some(&redis(&url, "refuse", &metrics)));
    match refusing.check(&client("10.0.0.1"), None).await {
        Err(Limited::Unchecked(Unchecked { scope })) => assert_eq!(scope, Scope::Identity),
        other => panic!("not unchecked: {other:?}"),
    }
    let allowing = Limits::new(&settings(), Some(&redis(&url, "allow", &metrics)));
    allowing
        .check(&client("10.0.0.1"), Some("utils__calc"))
        .await
        .unwrap();
    let sessions = Arc::new(RedisSessions::new(
        redis(&url, "refuse", &metrics),
        Duration::from_secs(60),
    ));
    assert!(sessions.at("/mcp").load("s-1").await.unwrap().is_none());
    let text = metrics.render(&[]);
    assert!(
        text.contains("nexo_gateway_redis_errors_total{purpose=\"rate_limits\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("nexo_gateway_redis_errors_total{purpose=\"sessions\"} 1"),
        "{text}"
    );
}
