//! A server run inside this process: any rmcp server handler, spoken to over
//! a pair of message channels. No child process, no socket, no
//! serialization: the messages themselves cross. This is how the bundled
//! servers run in the host by default (`{"builtin": "dns"}`); the caller
//! (the CLI, through nexo-bundled) supplies the handler, so this crate
//! knows no particular server.

use std::fmt;
use std::sync::Arc;

use futures::channel::mpsc;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::sink_stream::SinkStreamTransport;
use rmcp::{ServerHandler, ServiceExt};

/// How many messages may wait in each direction before a sender waits.
const CHANNEL_DEPTH: usize = 64;

/// The client's end of an in-process connection.
pub(crate) type ClientEnd =
    SinkStreamTransport<mpsc::Sender<ClientJsonRpcMessage>, mpsc::Receiver<ServerJsonRpcMessage>>;

type Start = dyn Fn() -> ClientEnd + Send + Sync;

/// A server to run in this process: each connection starts a fresh copy of
/// the handler on a task of its own, which ends when the client's end is
/// dropped.
#[derive(Clone)]
pub struct InProcess {
    name: Arc<str>,
    start: Arc<Start>,
}

impl InProcess {
    /// `server` under `name` (what errors and `nexo servers` show).
    pub fn new<S>(name: &str, server: S) -> Self
    where
        S: ServerHandler + Clone + Send + Sync + 'static,
    {
        let start = move || {
            let (to_server, from_client) = mpsc::channel::<ClientJsonRpcMessage>(CHANNEL_DEPTH);
            let (to_client, from_server) = mpsc::channel::<ServerJsonRpcMessage>(CHANNEL_DEPTH);
            let server = server.clone();
            tokio::spawn(async move {
                let transport = SinkStreamTransport::new(to_client, from_client);
                match server.serve(transport).await {
                    Ok(running) => {
                        let _ = running.waiting().await;
                    }
                    Err(error) => tracing::debug!(%error, "in-process server ended at start"),
                }
            });
            SinkStreamTransport::new(to_server, from_server)
        };
        Self {
            name: name.into(),
            start: Arc::new(start),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts a copy of the server and returns the client's end.
    pub(crate) fn connect(&self) -> ClientEnd {
        (self.start)()
    }
}

impl fmt::Debug for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcess")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
