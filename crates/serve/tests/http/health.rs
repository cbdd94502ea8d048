//! The health document of seed 000 at `GET /`.

use axum::body::Body;
use axum::http::Method;

use crate::{application, request, send};

#[tokio::test]
async fn health_document_is_seed_000s() {
    let app = application(&[], 4096);
    let reply = send(&app, request(Method::GET, "/", &[], Body::empty())).await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert!(
        reply
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("application/json")),
        "{reply:#?}"
    );
    // The raw body, so that the key order of the seed is checked too.
    assert_eq!(
        reply.body,
        r#"{"ok":true,"kind":"mcp-streamable-http","mount":"/mcp","tools":["echo(text)"]}"#
    );
}
