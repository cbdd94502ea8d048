//! The `--log FILE` tool-call log, shared by every transport: a call is noted
//! when its request arrives and written when its response leaves, with the
//! caller's subject when authentication established one. A call the guard
//! refuses ([`crate::guard`]: authentication, scopes, rate limits) is
//! written when its refusal leaves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nexo_trace::{ToolCallLog, ToolCallRecord};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};

use crate::auth::Authenticated;
use crate::inbound::ToolCall;

/// Writes one [`ToolCallRecord`] per finished tool call.
#[derive(Clone, Debug)]
pub struct CallLogger {
    log: Arc<ToolCallLog>,
    server: Arc<str>,
}

/// A tool call whose response has not left yet.
#[derive(Debug)]
pub struct PendingCall {
    pub call: ToolCall,
    pub started: Instant,
    /// Who called, when the server authenticates.
    pub subject: Option<String>,
}

impl PendingCall {
    /// `call`, made now by whoever `extensions` say authenticated.
    pub fn new(call: ToolCall, extensions: &http::Extensions) -> Self {
        Self {
            call,
            started: Instant::now(),
            subject: extensions
                .get::<Authenticated>()
                .and_then(|found| found.subject.clone()),
        }
    }
}

impl CallLogger {
    pub fn new(log: ToolCallLog, server: &str) -> Self {
        Self {
            log: Arc::new(log),
            server: server.into(),
        }
    }

    /// Records a call whose JSON-RPC response (`response` bytes) just left.
    pub fn finish(&self, pending: &PendingCall, response: &[u8]) {
        let record = ToolCallRecord::now(
            &self.server,
            &pending.call.tool,
            pending.call.argument_bytes,
            pending.started.elapsed(),
            response.len(),
            response_is_error(response),
        )
        .by(pending.subject.as_deref());
        self.write(&record);
    }

    /// Records a call refused for `reason` (`auth`, `scope`, `rate`), whose
    /// refusal of `refusal_bytes` just left.
    pub fn refused(&self, pending: &PendingCall, reason: &'static str, refusal_bytes: usize) {
        let mut record = ToolCallRecord::now(
            &self.server,
            &pending.call.tool,
            pending.call.argument_bytes,
            pending.started.elapsed(),
            refusal_bytes,
            true,
        )
        .by(pending.subject.as_deref());
        record.refused = Some(reason);
        self.write(&record);
    }

    fn write(&self, record: &ToolCallRecord) {
        if let Err(error) = self.log.record(record) {
            tracing::warn!(%error, "cannot write the tool-call log");
        }
    }
}

/// The tool calls in flight on one message-based connection (stdio, a legacy
/// SSE session), matched to their responses by request id.
#[derive(Clone, Debug)]
pub struct CallTap {
    logger: CallLogger,
    pending: Arc<Mutex<HashMap<RequestId, PendingCall>>>,
}

impl CallTap {
    pub fn new(logger: CallLogger) -> Self {
        Self {
            logger,
            pending: Arc::default(),
        }
    }

    /// Notes `message` if it is a `tools/call` request.
    pub fn request(&self, message: &ClientJsonRpcMessage) {
        let ClientJsonRpcMessage::Request(request) = message else {
            return;
        };
        let ClientRequest::CallToolRequest(call) = &request.request else {
            return;
        };
        let argument_bytes = call
            .params
            .arguments
            .as_ref()
            .and_then(|arguments| serde_json::to_string(arguments).ok())
            .map_or(0, |text| text.len());
        // A legacy SSE message carries the HTTP request it came in.
        let empty = http::Extensions::new();
        let extensions = call
            .extensions
            .get::<http::request::Parts>()
            .map_or(&empty, |parts| &parts.extensions);
        let call = ToolCall {
            tool: call.params.name.to_string(),
            argument_bytes,
        };
        let pending = PendingCall::new(call, extensions);
        if let Ok(mut calls) = self.pending.lock() {
            calls.insert(request.id.clone(), pending);
        }
    }

    /// Logs the call `message` answers, if any; `encoded` is what was sent.
    pub fn response(&self, message: &ServerJsonRpcMessage, encoded: &[u8]) {
        let id = match message {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let finished = id.and_then(|id| self.pending.lock().ok()?.remove(id));
        if let Some(pending) = finished {
            self.logger.finish(&pending, encoded);
        }
    }
}

/// True for a JSON-RPC error response and for a tool result with `isError`.
fn response_is_error(response: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Outcome {
        #[serde(default)]
        error: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        result: Option<ResultFlag>,
    }
    #[derive(serde::Deserialize)]
    struct ResultFlag {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_slice::<Outcome>(response).is_ok_and(|outcome| {
        outcome.error.is_some() || outcome.result.and_then(|r| r.is_error) == Some(true)
    })
}

#[cfg(test)]
mod tests {
    use super::response_is_error;

    #[test]
    fn errors_are_told_apart_from_results() {
        assert!(response_is_error(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#
        ));
        assert!(response_is_error(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#
        ));
        assert!(!response_is_error(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}"#
        ));
        assert!(!response_is_error(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#
        ));
    }
}
