//! The era probe of a stdio session, sent before rmcp takes the child
//! over: `server/discover` first, and its answer awaited for as long as
//! the start-up allowance ([`crate::ConnectOptions::startup`]) rather
//! than rmcp's fixed 10 s, so that which era a session speaks does not
//! depend on how long the server takes to start (`npx -y` or `uvx` on a
//! cold cache, `docker run`, a JVM). A discover result means 2026-07-28
//! (rmcp then discovers again, and negotiates); an error the 2026-07-28
//! revision defines means the same; any other error means a 2025-era
//! server, which the `initialize` handshake follows on the same child.
//! What the server sent before its answer (a log notification, a ping) is
//! handed to rmcp afterwards, in order.

use std::collections::VecDeque;

use rmcp::RoleClient;
use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams,
    ErrorCode, ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;

use crate::Era;

/// The id of the probe.
const PROBE_ID: &str = "nexo-era-probe";

/// What the probe learnt: the era to speak, and the messages that came
/// before the probe's answer.
pub(crate) struct Probed {
    pub(crate) era: Era,
    pub(crate) early: VecDeque<ServerJsonRpcMessage>,
}

/// Sends `server/discover` on `transport` and waits for its answer. It
/// never fails: a transport that cannot send or that closes means
/// `initialize`, whose handshake then reports the failure as it would
/// have. The caller bounds the wait.
pub(crate) async fn probe<T: Transport<RoleClient>>(
    transport: &mut T,
    info: &ClientConfig,
) -> Probed {
    // A string, which none of rmcp's own (numbered) requests can be: the
    // trace then pairs each request with its one answer.
    let id = RequestId::String(PROBE_ID.into());
    let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
    discover
        .extensions
        .insert(RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            info.client_info.clone(),
            info.capabilities.clone(),
        ));
    let mut early = VecDeque::new();
    let request =
        ClientJsonRpcMessage::request(ClientRequest::DiscoverRequest(discover), id.clone());
    if transport.send(request).await.is_err() {
        return Probed {
            era: Era::Initialize,
            early,
        };
    }
    while let Some(message) = transport.receive().await {
        if crate::legacy_sse::answered_id(&message) == Some(&id) {
            return Probed {
                era: era_of(&message),
                early,
            };
        }
        early.push_back(message);
    }
    Probed {
        era: Era::Initialize,
        early,
    }
}

/// The era a server's answer to `server/discover` shows.
fn era_of(answer: &ServerJsonRpcMessage) -> Era {
    match answer {
        ServerJsonRpcMessage::Response(response)
            if matches!(response.result, ServerResult::DiscoverResult(_)) =>
        {
            Era::Discover
        }
        ServerJsonRpcMessage::Error(error) if is_modern_refusal(error.error.code) => Era::Discover,
        _ => Era::Initialize,
    }
}

/// The errors only a 2026-07-28 server gives `server/discover`: rmcp's
/// discover handshake negotiates the version or reports the refusal.
fn is_modern_refusal(code: ErrorCode) -> bool {
    [
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ErrorCode::HEADER_MISMATCH,
    ]
    .contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(message: serde_json::Value) -> ServerJsonRpcMessage {
        let mut message = message;
        message["jsonrpc"] = "2.0".into();
        message["id"] = PROBE_ID.into();
        serde_json::from_value(message).unwrap_or_else(|error| panic!("{error}"))
    }

    fn error(code: ErrorCode) -> ServerJsonRpcMessage {
        answer(serde_json::json!({"error": {"code": code.0, "message": "no"}}))
    }

    #[test]
    fn the_answer_to_the_probe_chooses_the_era() {
        let discovered = answer(serde_json::json!({"result": {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {},
            "ttlMs": 0,
            "cacheScope": "public"
        }}));
        assert_eq!(era_of(&discovered), Era::Discover);
        assert_eq!(
            era_of(&error(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)),
            Era::Discover
        );
        assert_eq!(era_of(&error(ErrorCode::METHOD_NOT_FOUND)), Era::Initialize);
        // The Python SDK's "Session not initialized" and the like.
        assert_eq!(era_of(&error(ErrorCode::INVALID_PARAMS)), Era::Initialize);
        let empty = answer(serde_json::json!({"result": {}}));
        assert_eq!(era_of(&empty), Era::Initialize);
    }
}
