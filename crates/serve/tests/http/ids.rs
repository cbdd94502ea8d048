//! Request ids within a session, where rmcp reads the message itself: an id
//! it would round through an `f64` (`9999.999999999999999` to 10000) is
//! refused with the id as the client wrote it, and an integer written in
//! float form (`7.0`) is served as the same number.

use axum::body::Body;
use axum::http::{Method, StatusCode};

use crate::{INITIALIZE, application, request, send};

const BOTH: &str = "application/json, text/event-stream";

fn post_in(session: Option<&str>, body: &str) -> axum::http::Request<Body> {
    let mut headers = vec![("Content-Type", "application/json"), ("Accept", BOTH)];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
        headers.push(("MCP-Protocol-Version", "2025-06-18"));
    }
    request(Method::POST, "/mcp", &headers, Body::from(body.to_owned()))
}

#[tokio::test]
async fn issue_22_an_id_rmcp_would_round_is_refused_as_written_in_a_session() {
    let app = application(&[], nexo_serve::DEFAULT_MAX_BODY);
    let init = send(&app, post_in(None, INITIALIZE)).await;
    assert_eq!(init.status, StatusCode::OK, "{init:#?}");
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = send(&app, post_in(Some(&session), initialized)).await;
    assert!(accepted.status.is_success(), "{accepted:#?}");

    let ping = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    let refused = send(&app, post_in(Some(&session), &ping("9999.999999999999999"))).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{refused:#?}");
    let body = String::from_utf8_lossy(&refused.body);
    assert!(body.contains(r#""id":9999.999999999999999"#), "{body}");
    assert_eq!(refused.json()["error"]["code"], -32600);

    let served = send(&app, post_in(Some(&session), &ping("7.0"))).await;
    assert_eq!(served.status, StatusCode::OK, "{served:#?}");
    let body = String::from_utf8_lossy(&served.body);
    assert!(body.contains(r#""id":7,"#), "{body}");
}
