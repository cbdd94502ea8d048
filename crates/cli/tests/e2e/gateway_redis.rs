//! Two `nexo gateway` instances sharing one Redis (Debian's
//! `redis-server`, started on a free 127.0.0.1 port and killed by its PID:
//! nexo-testkit's [`RedisServer`]): a 2025-era session begun on one is served by the other, one
//! identity's rate limit is counted across both, and when Redis goes away
//! each does what its `whenDown` says. Reached over raw Streamable HTTP
//! (2025-06-18) from several loopback addresses, each a different
//! identity.
//!
//! Without `redis-server` the test fails under CI (`CI` set); elsewhere it
//! says why and runs nothing.

use nexo_testkit::RedisServer;
use serde_json::{Value, json};

use crate::gateway_limits::{Session, is_error, sample, text};
use crate::support::{Proc, TempDir};

/// A gateway over the bundled utils server, its limits and sessions in
/// `redis`; stopped when dropped.
struct Gateway {
    _proc: Proc,
    base: String,
}

impl Gateway {
    fn start(dir: &TempDir, name: &str, redis: &Value) -> Self {
        std::fs::write(dir.path().join("policy.toml"), "default = \"allow\"\n").unwrap();
        let config = json!({
            "mcpServers": {"utils": {"builtin": "utils"}},
            "gateway": {
                "policy": "policy.toml",
                "audit": format!("audit-{name}.jsonl"),
                "rateLimits": {"perIdentity": "4/min"},
                "redis": redis,
            },
        });
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, config.to_string()).unwrap();
        let (proc, base) = crate::gateway_serve::start(
            &file,
            &["--timeout", "20"],
            "nexo: gateway for 1 upstream",
        );
        Self { _proc: proc, base }
    }

    async fn metrics(&self) -> String {
        crate::support::http_client()
            .no_proxy()
            .build()
            .unwrap()
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

async fn echo(session: &mut Session, said: &str) -> Value {
    session
        .call("utils__echo", json!({"text": said}), None)
        .await
}

#[tokio::test]
async fn gateway_instances_share_sessions_and_rate_limits_through_redis() {
    let dir = TempDir::new("gateway-redis");
    let mut redis = RedisServer::start();
    // The same Redis and prefix; what each does when it is gone differs.
    let shared = |when_down: &str| {
        json!({"url": redis.url(), "prefix": "e2e:", "whenDown": when_down,
               "sessionTtlSeconds": 60})
    };
    let a = Gateway::start(&dir, "a", &shared("refuse"));
    let b = Gateway::start(&dir, "b", &shared("allow"));

    // A session begun on A is served by B, under the same id.
    let begun = Session::open(&a.base, "127.0.0.2").await;
    let mut moved = begun.at(&b.base);
    let answer = echo(&mut moved, "moved").await;
    assert!(!is_error(&answer), "{answer}");
    assert_eq!(text(&answer), "moved");
    let listed = moved
        .post(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}))
        .await;
    assert_eq!(listed.status, 200, "{listed:#?}");
    assert!(listed.body.contains("utils__echo"), "{listed:#?}");
    // Ended on B, it is gone from the store: unknown to a third instance.
    let ended = moved
        .client
        .delete(&moved.url)
        .header("Mcp-Session-Id", moved.id.clone().unwrap())
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{ended:?}");
    let c = Gateway::start(&dir, "c", &shared("refuse"));
    let gone = begun
        .at(&c.base)
        .post(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
        .await;
    assert_eq!(gone.status, 404, "{gone:#?}");

    // One identity's 4/min is counted across A and B together.
    let mut on_a = Session::open(&a.base, "127.0.0.1").await;
    let mut on_b = Session::open(&b.base, "127.0.0.1").await;
    for n in 0..2 {
        let answer = echo(&mut on_a, &format!("a{n}")).await;
        assert!(!is_error(&answer), "{answer}");
        let answer = echo(&mut on_b, &format!("b{n}")).await;
        assert!(!is_error(&answer), "{answer}");
    }
    for session in [&mut on_a, &mut on_b] {
        let refused = echo(session, "one more").await;
        assert!(is_error(&refused), "{refused}");
        assert!(
            text(&refused).starts_with(
                "rate limited by the gateway (rateLimits.perIdentity): the limit of 4/min for \
                 `127.0.0.1` is used up; retry in "
            ),
            "{refused}"
        );
        let data = &refused["result"]["_meta"]["dev.nexo/gateway"];
        assert_eq!(data["code"], -32029, "{refused}");
        assert!(
            data["data"]["retryAfterSeconds"].as_f64().unwrap() > 1.0,
            "{refused}"
        );
    }
    // Another identity has its own bucket.
    let mut other = Session::open(&b.base, "127.0.0.3").await;
    let answer = echo(&mut other, "mine").await;
    assert!(!is_error(&answer), "{answer}");

    // Redis gone: A refuses what it cannot count, B lets it through, and a
    // session begun on A is unknown to B (its client starts a new one).
    redis.kill();
    let mut late_a = Session::open(&a.base, "127.0.0.4").await;
    let refused = echo(&mut late_a, "no redis").await;
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).starts_with(
            "refused by the gateway (rateLimits.perIdentity): the store its rate limits are \
             kept in does not answer"
        ),
        "{refused}"
    );
    assert!(!text(&refused).contains("127.0.0.1:"), "{refused}");
    let data = &refused["result"]["_meta"]["dev.nexo/gateway"];
    assert_eq!(data["code"], -32004, "{refused}");
    let lost = late_a
        .at(&b.base)
        .post(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        .await;
    assert_eq!(lost.status, 404, "{lost:#?}");
    let mut late_b = Session::open(&b.base, "127.0.0.4").await;
    let answer = echo(&mut late_b, "no redis").await;
    assert!(!is_error(&answer), "{answer}");
    for gateway in [&a, &b] {
        let metrics = gateway.metrics().await;
        assert!(
            sample(&metrics, "nexo_gateway_redis_errors_total", &[]) >= 1.0,
            "{metrics}"
        );
    }
}
