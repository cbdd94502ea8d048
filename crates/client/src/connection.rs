//! What opening each HTTP connection cost, for the trace (issue 39, point
//! 7): the name resolution and the connect (TCP, and TLS for `https`) of a
//! new connection, and whether a response came on one the pool had kept.
//! Seed 000's students read these from Wireshark by hand.
//!
//! reqwest opens connections inside its pool, where no request is in
//! sight, so the costs are noted per connection and found again from the
//! response: [`TimedConnect`] (a connector layer) times each connect and
//! files it under the connection's local address, which every response
//! carries (hyper's `HttpInfo`); [`TimedResolver`] times the name
//! resolution the connect starts with, telling the connect through a
//! task-local. The first response of a connection that a trace records
//! takes its costs; later ones find none and are on a reused connection.
//! Untraced, a response only notes its local address: no lookup.
//!
//! reqwest's connector does TCP and TLS in one step, so the moment between
//! them is taken from rustls: as it writes the ClientHello, right after the
//! TCP connect, it asks the session cache for a key-exchange hint
//! ([`TimedSessions`], rustls' own in-memory cache, which nexo's TLS
//! configuration uses), and that call marks the handshake's start.

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use rustls::pki_types::ServerName;

/// What opening one connection cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Resolving the host's name; `None` for an IP address.
    pub dns_us: Option<u64>,
    /// The TCP connect.
    pub connect_us: u64,
    /// The TLS handshake, over `https`.
    pub tls_us: Option<u64>,
}

/// How a response's connection came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Opened for this exchange, at this cost.
    New(Opened),
    /// Kept by the pool from an earlier exchange.
    Reused,
}

/// Connections opened and not yet answered on, by local address. Bounded:
/// a connection the pool opened and never used must not keep an entry
/// forever.
static OPENED: LazyLock<Mutex<HashMap<SocketAddr, Opened>>> = LazyLock::new(Mutex::default);

/// The most connections remembered before the oldest are forgotten.
const MAX_OPENED: usize = 1024;

/// What the connect being timed has noted so far.
#[derive(Debug, Clone, Copy, Default)]
struct Stamps {
    /// Microseconds spent resolving the name.
    dns_us: Option<u64>,
    /// When the TLS handshake started.
    tls_started: Option<Instant>,
}

tokio::task_local! {
    static CONNECTING: Cell<Stamps>;
}

/// Notes `change` on the connect being timed, if one is.
fn note(change: impl FnOnce(&mut Stamps)) {
    let _ = CONNECTING.try_with(|stamps| {
        let mut noted = stamps.get();
        change(&mut noted);
        stamps.set(noted);
    });
}

/// The local address of the connection `response` came on (from the
/// `HttpInfo` it carries), which [`reach_at`] looks the connection up by;
/// `None` when it carries none. Cheap: taken for every response, looked up
/// only for the ones a trace records.
pub fn local_address(response: &reqwest::Response) -> Option<SocketAddr> {
    Some(response.extensions().get::<HttpInfo>()?.local_addr())
}

/// How the connection at `local` came to be: the first look at a new one
/// takes its costs, and later ones find it reused.
pub fn reach_at(local: SocketAddr) -> Reach {
    let opened = OPENED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&local);
    opened.map_or(Reach::Reused, Reach::New)
}

/// The connector layer that times each connect ([`crate::http::client_builder`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct TimedConnect;

impl<S> tower::Layer<S> for TimedConnect {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timed(inner)
    }
}

/// A connector timed by [`TimedConnect`].
#[derive(Debug, Clone)]
pub struct Timed<S>(S);

impl<S, Request> tower::Service<Request> for Timed<S>
where
    S: tower::Service<Request> + Send,
    S::Future: Send + 'static,
    S::Response: Connection + Send,
    S::Error: Send,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let started = Instant::now();
        let connecting = self.0.call(request);
        Box::pin(CONNECTING.scope(Cell::default(), async move {
            let connection = connecting.await?;
            let stamps = CONNECTING.with(Cell::get);
            let total_us = micros(started);
            let tls_us = stamps.tls_started.map(micros);
            let mut extensions = http::Extensions::new();
            connection.connected().get_extras(&mut extensions);
            if let Some(info) = extensions.get::<HttpInfo>() {
                let before = stamps.dns_us.unwrap_or(0) + tls_us.unwrap_or(0);
                let opened = Opened {
                    dns_us: stamps.dns_us,
                    connect_us: total_us.saturating_sub(before),
                    tls_us,
                };
                let mut all = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
                if all.len() >= MAX_OPENED {
                    all.clear();
                }
                all.insert(info.local_addr(), opened);
            }
            Ok(connection)
        }))
    }
}

/// Name resolution by the system's resolver (getaddrinfo, as reqwest's
/// own), timed for the connect that asked for it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimedResolver;

impl reqwest::dns::Resolve for TimedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let started = Instant::now();
            let addresses = tokio::net::lookup_host((host.as_str(), 0)).await;
            note(|stamps| stamps.dns_us = Some(micros(started)));
            let addresses: Vec<SocketAddr> = addresses?.collect();
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// rustls' in-memory TLS session cache, noting the start of each
/// handshake (see the module comment); nexo's TLS configuration uses it.
#[derive(Debug)]
pub struct TimedSessions(rustls::client::ClientSessionMemoryCache);

impl TimedSessions {
    /// As many sessions as rustls keeps by default.
    pub fn new() -> Self {
        Self(rustls::client::ClientSessionMemoryCache::new(256))
    }
}

impl Default for TimedSessions {
    fn default() -> Self {
        Self::new()
    }
}

impl rustls::client::ClientSessionStore for TimedSessions {
    fn set_kx_hint(&self, server: ServerName<'static>, group: rustls::NamedGroup) {
        self.0.set_kx_hint(server, group);
    }

    /// Asked as the ClientHello is written: the handshake starts.
    fn kx_hint(&self, server: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        note(|stamps| {
            stamps.tls_started.get_or_insert_with(Instant::now);
        });
        self.0.kx_hint(server)
    }

    fn set_tls12_session(
        &self,
        server: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.0.set_tls12_session(server, value);
    }

    fn tls12_session(
        &self,
        server: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.0.tls12_session(server)
    }

    fn remove_tls12_session(&self, server: &ServerName<'static>) {
        self.0.remove_tls12_session(server);
    }

    fn insert_tls13_ticket(
        &self,
        server: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.0.insert_tls13_ticket(server, value);
    }

    fn take_tls13_ticket(
        &self,
        server: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        self.0.take_tls13_ticket(server)
    }
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    /// A new connection's first response takes its costs (a resolved name
    /// among them); the next response on it is on a reused connection.
    #[tokio::test]
    async fn the_first_response_of_a_connection_takes_its_costs() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = crate::http::client_builder(std::time::Duration::from_secs(5))
            .build()
            .unwrap();
        let mut reaches = Vec::new();
        for _ in 0..2 {
            let response = client
                .get(format!("http://localhost:{port}/"))
                .send()
                .await
                .unwrap();
            reaches.push(local_address(&response).map(reach_at));
            response.text().await.unwrap();
        }
        match reaches[0] {
            Some(Reach::New(opened)) => assert!(opened.dns_us.is_some(), "{opened:?}"),
            other => panic!("the first response's connection was not new: {other:?}"),
        }
        assert_eq!(reaches[1], Some(Reach::Reused));
        let by_address = client
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .unwrap();
        match local_address(&by_address).map(reach_at) {
            Some(Reach::New(opened)) => assert_eq!(opened.dns_us, None),
            other => panic!("a new address took no new connection: {other:?}"),
        }
    }
}
