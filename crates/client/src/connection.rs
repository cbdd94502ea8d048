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
//! task-local. The first response of a connection takes its costs; later
//! ones find none and are on a reused connection.
//!
//! reqwest's connector does TCP and TLS in one step that nothing can look
//! into, so for `https` the connect is both together: the trace does not
//! tell the TCP connect from the TLS handshake (`nexo doctor` times them
//! apart, over connections of its own).

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use hyper_util::client::legacy::connect::{Connection, HttpInfo};

/// What opening one connection cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Resolving the host's name; `None` for an IP address.
    pub dns_us: Option<u64>,
    /// TCP connect, and the TLS handshake over `https`.
    pub connect_us: u64,
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

tokio::task_local! {
    /// Microseconds the connect being timed spent resolving the name.
    static RESOLVING: Cell<Option<u64>>;
}

/// How the connection of a response came to be, from the `HttpInfo` the
/// response carries; `None` when it carries none.
pub fn reach_of(response: &reqwest::Response) -> Option<Reach> {
    let local = response.extensions().get::<HttpInfo>()?.local_addr();
    let opened = OPENED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&local);
    Some(opened.map_or(Reach::Reused, Reach::New))
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
        Box::pin(RESOLVING.scope(Cell::new(None), async move {
            let connection = connecting.await?;
            let dns_us = RESOLVING.with(Cell::get);
            let total_us = micros(started);
            let mut extensions = http::Extensions::new();
            connection.connected().get_extras(&mut extensions);
            if let Some(info) = extensions.get::<HttpInfo>() {
                let opened = Opened {
                    dns_us,
                    connect_us: total_us.saturating_sub(dns_us.unwrap_or(0)),
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
            let _ = RESOLVING.try_with(|resolving| resolving.set(Some(micros(started))));
            let addresses: Vec<SocketAddr> = addresses?.collect();
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
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
            reaches.push(reach_of(&response));
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
        match reach_of(&by_address) {
            Some(Reach::New(opened)) => assert_eq!(opened.dns_us, None),
            other => panic!("a new address took no new connection: {other:?}"),
        }
    }
}
