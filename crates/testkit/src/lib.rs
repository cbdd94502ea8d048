//! What the server crates' tests share to drive a handler in-process: any
//! rmcp [`ServerHandler`] served on one end of a `tokio::io::duplex` pipe,
//! with rmcp's own client on the other end ([`connect`], [`call_tool`]) or
//! raw JSON-RPC lines ([`Wire`]), so that a bug shared by rmcp's client and
//! server cannot hide; [`contains`], a JSON subset check for results; and
//! [`Echo`], a one-tool server for the client's own tests; [`Skills`], a
//! server of skills (SEP-2640), some of them tampered with; [`Tasks`], a
//! server whose tools run as tasks (the tasks extension of 2026-07-28);
//! [`RedisServer`], a real `redis-server` on loopback for the tests of what
//! gateway instances share; [`replay`], the fuzz targets' committed inputs
//! run as tests; [`TestCa`], a certificate authority for HTTPS tests;
//! [`AuthServer`], an OAuth authorization server that signs JWTs (dynamic
//! registration, PKCE, approval without anyone asked, key rotation).
//!
//! Dev-only: nexo crates take it as a dev-dependency, never a normal one. It
//! knows no particular server; each server's tests keep their own
//! assertions.

mod echo;
mod fuzz;
mod oauth;
mod redis;
mod skills;
mod tasks;
mod tls;
mod wire;

pub use echo::Echo;
pub use fuzz::{fuzz_inputs, replay};
pub use oauth::{AuthServer, SigningKey};
pub use redis::RedisServer;
pub use skills::{Skills, skill_md};
pub use tasks::{CONFIRM_KEY, Tasks};
pub use tls::{ServerCert, TestCa};
pub use wire::{Exchange, Wire};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RunningService, Service};
use rmcp::{RoleClient, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::DuplexStream;

/// The error of a test or a helper: anything, with its message.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// rmcp's client, declaring no capabilities, connected to a server.
pub type Client = RunningService<RoleClient, ()>;

/// How many bytes the pipe holds in each direction: room for the largest
/// result a bundled server sends.
const PIPE_BYTES: usize = 256 * 1024;

/// Serves `server` on one end of a fresh pipe, on a task of its own, and
/// returns the other end for a client to speak on.
pub fn serve_in_process<S: ServerHandler>(server: S) -> DuplexStream {
    let (server_io, client_io) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        if let Ok(server) = server.serve(server_io).await {
            let _ = server.waiting().await;
        }
    });
    client_io
}

/// rmcp's client connected to `server` over a pipe, past `initialize`.
pub async fn connect<S: ServerHandler>(server: S) -> Result<Client, Error> {
    Ok(().serve(serve_in_process(server)).await?)
}

/// Calls `tool` with `arguments`, which must be a JSON object. Goes through
/// [`RunningService::call_tool`] (not [`rmcp::Peer`]'s), which answers any
/// 2026-07-28 `input_required` rounds with the client's handler.
pub async fn call_tool<H: Service<RoleClient>>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, Error> {
    let Value::Object(arguments) = arguments else {
        return Err("arguments must be an object".into());
    };
    Ok(client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await?)
}

/// The text of a result whose only content block is text.
pub fn only_text(result: &CallToolResult) -> Option<&str> {
    match result.content.as_slice() {
        [only] => only.as_text().map(|t| t.text.as_str()),
        _ => None,
    }
}

/// Whether `actual` holds everything in `expected`: objects key by key
/// (extra keys allowed), everything else equal.
pub fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => expected
            .iter()
            .all(|(key, value)| actual.get(key).is_some_and(|a| contains(a, value))),
        _ => actual == expected,
    }
}
