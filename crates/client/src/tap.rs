//! A transport wrapper that sees every message of a session, whatever the
//! transport underneath: it notes when the connection ends (a child that
//! exits, a stream that closes), which is how supervision learns that a
//! server went away without a request having to fail first; and, with
//! `--trace`, it hands each message to the [`Tracer`] (one line per
//! message, nexo-trace's format). Untraced, a message is not serialized
//! here at all.

use std::sync::Arc;

use nexo_trace::{Direction, Observed, Side, Tracer};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::watch;

/// Whether a session's connection has ended; shared by the tap, which sets
/// it, and whoever waits on it.
pub(crate) type Ended = Arc<watch::Sender<bool>>;

pub(crate) struct Tap<T> {
    inner: T,
    ended: Ended,
    trace: Option<Traced>,
}

/// Where a traced session's messages go, and what its lines say of it.
#[derive(Clone)]
pub(crate) struct Traced {
    pub(crate) tracer: Tracer,
    pub(crate) server: Arc<str>,
    pub(crate) transport: &'static str,
    /// An id for this connection, unique in the process.
    pub(crate) session: Arc<str>,
}

impl Traced {
    fn record(&self, direction: Direction, message: &impl serde::Serialize) {
        let Ok(bytes) = serde_json::to_vec(message) else {
            return;
        };
        self.tracer.record(Observed {
            server: &self.server,
            transport: self.transport,
            session: Some(&self.session),
            side: Side::Client,
            direction,
            message: &bytes,
            http: None,
        });
    }
}

impl<T> Tap<T> {
    pub(crate) fn new(inner: T, ended: Ended, trace: Option<Traced>) -> Self {
        Self {
            inner,
            ended,
            trace,
        }
    }
}

impl<T> Transport<RoleClient> for Tap<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(trace) = &self.trace {
            trace.record(Direction::Sent, &item);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        match (&message, &self.trace) {
            (None, _) => {
                self.ended.send_replace(true);
            }
            (Some(message), Some(trace)) => trace.record(Direction::Received, message),
            (Some(_), None) => {}
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.inner.close().await;
        self.ended.send_replace(true);
        closed
    }
}
