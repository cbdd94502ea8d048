//! A transport wrapper that sees every message of a session, whatever the
//! transport underneath: it notes when the connection ends (a child that
//! exits, a stream that closes), which is how supervision learns that a
//! server went away without a request having to fail first.

use std::sync::Arc;

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
}

impl<T> Tap<T> {
    pub(crate) fn new(inner: T, ended: Ended) -> Self {
        Self { inner, ended }
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
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if message.is_none() {
            self.ended.send_replace(true);
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.inner.close().await;
        self.ended.send_replace(true);
        closed
    }
}
