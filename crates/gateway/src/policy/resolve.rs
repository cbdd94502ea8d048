//! Name resolution for the URL matcher: a host name is refused when it
//! resolves to an address the policy does not allow. The [`Resolver`] trait
//! lets tests answer from a table ([`StaticResolver`]); the gateway asks the
//! system's name servers through hickory ([`SystemResolver`]).
//!
//! What the gateway resolves is not necessarily what the upstream will
//! connect to (the answer may change in between: DNS rebinding). The check
//! stops every name that resolves to a private address now; an upstream that
//! fetches URLs should still refuse private addresses itself.

use std::collections::HashMap;
use std::net::IpAddr;

use hickory_resolver::TokioResolver;

/// Answers which addresses a host name has.
#[async_trait::async_trait]
pub trait Resolver: Send + Sync {
    /// The addresses of `host` (a name, never an address literal), or why
    /// there are none, worded for a person.
    async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String>;
}

/// Names answered from a fixed table; any other name fails to resolve.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    pub fn new() -> Self {
        Self::default()
    }

    /// `host` resolves to `addresses` (case and a trailing dot ignored).
    #[must_use]
    pub fn with(mut self, host: &str, addresses: &[IpAddr]) -> Self {
        self.names.insert(key(host), addresses.to_vec());
        self
    }
}

fn key(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[async_trait::async_trait]
impl Resolver for StaticResolver {
    async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        match self.names.get(&key(host)) {
            Some(addresses) if !addresses.is_empty() => Ok(addresses.clone()),
            _ => Err(format!("`{host}` has no address")),
        }
    }
}

/// The system's name servers (`/etc/resolv.conf`), asked through hickory,
/// whose cache keeps repeated names cheap.
pub struct SystemResolver {
    resolver: TokioResolver,
}

impl std::fmt::Debug for SystemResolver {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SystemResolver")
    }
}

impl SystemResolver {
    /// Reads the system's resolver configuration; fails, with the reason,
    /// when there is none to read.
    pub fn from_system() -> Result<Self, String> {
        let resolver = TokioResolver::builder_tokio()
            .and_then(|builder| builder.build())
            .map_err(|error| format!("cannot read the system's resolver configuration: {error}"))?;
        Ok(Self { resolver })
    }
}

#[async_trait::async_trait]
impl Resolver for SystemResolver {
    async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        let answer = self.resolver.lookup_ip(host).await.map_err(|error| {
            if error.is_nx_domain() {
                format!("`{host}` does not exist")
            } else if error.is_no_records_found() {
                format!("`{host}` has no address")
            } else {
                format!("`{host}` does not resolve: the name servers gave no answer")
            }
        })?;
        let addresses: Vec<IpAddr> = answer.iter().collect();
        if addresses.is_empty() {
            return Err(format!("`{host}` has no address"));
        }
        Ok(addresses)
    }
}
