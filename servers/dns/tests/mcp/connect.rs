//! An rmcp client of a [`Dns`] handler served in-process over a
//! `tokio::io::duplex` pipe, as a host would call it. Shared by the tests
//! and the benchmark (`examples/bench_tools.rs` includes this file).

use nexo_dns::Dns;
use rmcp::{RoleClient, ServiceExt, service::RunningService};

pub type Client = RunningService<RoleClient, ()>;

/// Serves `dns` on one end of a pipe and returns a client on the other.
pub async fn connect(dns: Dns) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let (server_io, client_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(server) = dns.serve(server_io).await {
            let _ = server.waiting().await;
        }
    });
    Ok(().serve(client_io).await?)
}
