//! A 2025-era session begun on one application and continued on another
//! that shares its session store (two instances behind a load balancer,
//! their store in memory here): served under the same id after rmcp
//! replays the handshake; without the store, the same request is a 404.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use nexo_serve::SharedSessions;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use super::{INITIALIZE, application, application_sharing, post, send};

/// Sessions by id, in memory.
#[derive(Default)]
struct Memory(Mutex<HashMap<String, SessionState>>);

#[async_trait::async_trait]
impl SessionStore for Memory {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(self.0.lock().unwrap().get(id).cloned())
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.0.lock().unwrap().insert(id.to_owned(), state.clone());
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.0.lock().unwrap().remove(id);
        Ok(())
    }
}

#[tokio::test]
async fn a_session_moves_to_an_application_sharing_its_store() {
    let store = Arc::new(Memory::default());
    let first = application_sharing(SharedSessions(store.clone()));
    let second = application_sharing(SharedSessions(store.clone()));
    let alone = application(&[], nexo_serve::DEFAULT_MAX_BODY);

    let begun = send(&first, post(INITIALIZE, &[])).await;
    assert_eq!(begun.status, StatusCode::OK, "{begun:#?}");
    let id = begun.header("mcp-session-id").unwrap().to_owned();
    assert!(store.0.lock().unwrap().contains_key(&id));
    let in_session = [
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let initialized = send(
        &first,
        post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            &in_session,
        ),
    )
    .await;
    assert_eq!(initialized.status, StatusCode::ACCEPTED, "{initialized:#?}");

    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"moved"}}}"#;
    let moved = send(&second, post(call, &in_session)).await;
    assert_eq!(moved.status, StatusCode::OK, "{moved:#?}");
    assert_eq!(moved.json()["result"]["content"][0]["text"], "moved");

    let lost = send(&alone, post(call, &in_session)).await;
    assert_eq!(lost.status, StatusCode::NOT_FOUND, "{lost:#?}");
}
