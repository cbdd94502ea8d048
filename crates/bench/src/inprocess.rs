//! A bundled server run in this process (`--builtin`), reached through
//! nexo-client's in-process transport: messages cross a channel, with no
//! socket and no serialization. There is no wire to write raw JSON-RPC on,
//! so requests go through the client's session; its typed results are
//! turned back into the JSON answer the other links read, so that every
//! answer passes the same checks.

use std::time::Instant;

use nexo_client::{ClientError, ConnectOptions, Era, Session, Target};
use serde_json::{Map, Value, json};

use crate::BenchError;
use crate::check::{ErrorClass, Failed};
use crate::http::Reply;
use crate::plan::Protocol;

/// One in-process session.
pub struct InProcessLink {
    session: Session,
}

impl InProcessLink {
    /// Starts a copy of the server and begins a session with it.
    pub async fn connect(
        target: &Target,
        protocol: Protocol,
        timeout: std::time::Duration,
    ) -> Result<Self, BenchError> {
        let options = ConnectOptions {
            timeout,
            era: match protocol {
                Protocol::Sessions2025 => Era::Initialize,
                Protocol::Stateless2026 => Era::Discover,
            },
            ..ConnectOptions::default()
        };
        let session = nexo_client::connect(target, &options)
            .await
            .map_err(|error| BenchError::Unreachable {
                message: error.to_string(),
            })?;
        Ok(Self { session })
    }

    /// Sends `method` with `params` and gives back its answer as request
    /// `id`'s JSON-RPC response.
    pub async fn exchange(&self, method: &str, params: &Value, id: u64) -> Result<Reply, Failed> {
        let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
        let arguments = || {
            params
                .get("arguments")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(Map::new)
        };
        let result = match method {
            "tools/call" => encode(self.session.call_tool(text("name"), arguments()).await),
            "tools/list" => self
                .session
                .list_tools()
                .await
                .map(|tools| json!({"tools": tools})),
            "resources/read" => encode(self.session.read_resource(text("uri")).await),
            "resources/list" => self
                .session
                .list_resources()
                .await
                .map(|resources| json!({"resources": resources})),
            "prompts/get" => encode(self.session.get_prompt(text("name"), arguments()).await),
            "prompts/list" => self
                .session
                .list_prompts()
                .await
                .map(|prompts| json!({"prompts": prompts})),
            other => {
                return Err(Failed::new(
                    ErrorClass::Mismatch,
                    format!(
                        "`{other}` is not sent in-process; bench the server over stdio or HTTP"
                    ),
                ));
            }
        };
        let now = Instant::now();
        match result {
            Ok(result) => Ok(Reply {
                message: json!({"jsonrpc": "2.0", "id": id, "result": result}),
                first_event: Some(now),
            }),
            Err(ClientError::Rpc { code, message, .. }) => Ok(Reply {
                message: json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
                first_event: Some(now),
            }),
            Err(error @ (ClientError::Timeout { .. } | ClientError::Overran { .. })) => {
                Err(Failed::new(ErrorClass::Timeout, error.to_string()))
            }
            Err(error @ (ClientError::UnknownTool { .. } | ClientError::Tool { .. })) => {
                Err(Failed::new(ErrorClass::ToolError, error.to_string()))
            }
            Err(error) => Err(Failed::new(ErrorClass::Transport, error.to_string())),
        }
    }

    pub async fn close(self) {
        self.session.close().await;
    }
}

fn encode<T: serde::Serialize>(result: Result<T, ClientError>) -> Result<Value, ClientError> {
    result.map(|value| serde_json::to_value(value).unwrap_or(Value::Null))
}
