//! Who may talk to the server: `Origin` and `Host` (403 for strangers, the
//! DNS-rebinding defence), CORS answers for allowed browsers, `--allow-origin
//! '*'` and an explicit list of origins.

use axum::body::Body;
use axum::http::Method;

use crate::{INITIALIZE, Reply, application, post, request, send};

fn assert_forbidden(reply: &Reply) {
    assert_eq!(reply.status, 403, "{reply:#?}");
    assert_eq!(
        reply.header("access-control-allow-origin"),
        None,
        "{reply:#?}"
    );
    assert_eq!(reply.json()["error"]["code"], -32600, "{reply:#?}");
}

fn get_health(headers: &[(&str, &str)]) -> axum::http::Request<Body> {
    request(Method::GET, "/", headers, Body::empty())
}

#[tokio::test]
async fn a_foreign_origin_is_refused() {
    let app = application(&[], 4096);
    let origin = ("Origin", "http://evil.example");
    assert_forbidden(&send(&app, post(INITIALIZE, &[origin])).await);
    assert_forbidden(&send(&app, get_health(&[origin])).await);
}

#[tokio::test]
async fn a_loopback_origin_is_served_with_cors_headers() {
    let app = application(&[], 4096);
    let origin = "http://localhost:3000";
    let reply = send(&app, post(INITIALIZE, &[("Origin", origin)])).await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert_eq!(
        reply.json()["result"]["serverInfo"]["name"],
        "serve-fixture"
    );
    assert_eq!(reply.header("access-control-allow-origin"), Some(origin));
    let exposed = reply.listed("access-control-expose-headers");
    assert!(
        exposed.contains(&"mcp-session-id".to_owned()),
        "a browser must be able to read the session id: {exposed:?}"
    );
    assert!(reply.listed("vary").contains(&"origin".to_owned()));

    // Without Origin (not a browser), no CORS grant, but caches still learn
    // that the answer depends on the origin.
    let plain = send(&app, post(INITIALIZE, &[])).await;
    assert_eq!(plain.status, 200, "{plain:#?}");
    assert_eq!(plain.header("access-control-allow-origin"), None);
    assert!(plain.listed("vary").contains(&"origin".to_owned()));
}

#[tokio::test]
async fn a_preflight_from_an_allowed_origin_gets_cors_headers() {
    let app = application(&[], 4096);
    let origin = "http://localhost:3000";
    let preflight = request(
        Method::OPTIONS,
        "/mcp",
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "content-type, mcp-session-id, mcp-protocol-version",
            ),
        ],
        Body::empty(),
    );
    let reply = send(&app, preflight).await;
    assert!(reply.status.is_success(), "{reply:#?}");
    assert_eq!(reply.header("access-control-allow-origin"), Some(origin));
    let methods = reply.listed("access-control-allow-methods");
    for method in ["post", "get", "delete"] {
        assert!(methods.contains(&method.to_owned()), "{methods:?}");
    }
    let headers = reply.listed("access-control-allow-headers");
    for header in ["content-type", "mcp-session-id", "mcp-protocol-version"] {
        assert!(headers.contains(&header.to_owned()), "{headers:?}");
    }
}

#[tokio::test]
async fn a_preflight_from_a_foreign_origin_is_refused() {
    let app = application(&[], 4096);
    let preflight = request(
        Method::OPTIONS,
        "/mcp",
        &[
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        Body::empty(),
    );
    assert_forbidden(&send(&app, preflight).await);
}

#[tokio::test]
async fn a_foreign_host_is_refused() {
    let app = application(&[], 4096);
    for host in ["evil.example", "evil.example:8000"] {
        let reply = send(&app, get_health(&[("Host", host)])).await;
        assert_forbidden(&reply);
    }
    for host in ["localhost:8000", "127.0.0.1:8000", "localhost"] {
        let reply = send(&app, get_health(&[("Host", host)])).await;
        assert_eq!(reply.status, 200, "Host: {host}: {reply:#?}");
    }
}

#[tokio::test]
async fn allow_origin_star_allows_any_origin() {
    let app = application(&["*"], 4096);
    let origin = ("Origin", "http://evil.example");
    let reply = send(&app, post(INITIALIZE, &[origin])).await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert_eq!(
        reply.json()["result"]["serverInfo"]["name"],
        "serve-fixture"
    );
    assert!(reply.header("access-control-allow-origin").is_some());
    let health = send(&app, get_health(&[origin])).await;
    assert_eq!(health.status, 200, "{health:#?}");
}

#[tokio::test]
async fn an_allowed_origin_list_replaces_the_loopback_default() {
    let app = application(&["https://app.example.com"], 4096);
    let listed = send(&app, get_health(&[("Origin", "https://app.example.com")])).await;
    assert_eq!(listed.status, 200, "{listed:#?}");
    assert_eq!(
        listed.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    assert_forbidden(&send(&app, get_health(&[("Origin", "http://localhost:3000")])).await);
    assert_forbidden(&send(&app, get_health(&[("Origin", "http://evil.example")])).await);
}
