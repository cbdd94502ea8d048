//! Running the bed: one port free on every address of the [`Plan`], a
//! hickory-server on each serving address (UDP and TCP, wrapped to count
//! the questions), a bound but unread socket on each silent one, all on a
//! thread with its own tokio runtime until the [`Bed`] is dropped.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::proto::rr::LowerName;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::Catalog;
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::oneshot;

use crate::build::{Plan, Role, Zones, plan};
use crate::spec::Zone;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The bed's recursive resolver: it holds every zone as it really is.
pub const RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 1);
/// A second resolver, which sees some zones differently.
pub const RESOLVER2: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 2);
/// An address where nothing listens.
pub const NOBODY: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 99);

/// How many ports to try before giving up.
const PORT_TRIES: usize = 50;

/// Running servers; dropped, they stop.
pub struct Bed {
    port: u16,
    queries: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Bed {
    /// Starts servers for the root, `test.` and `zones`, and returns once
    /// every one listens.
    pub fn start(zones: Vec<Zone>) -> Result<Self, Error> {
        Self::start_delayed(zones, Duration::ZERO)
    }

    /// Like [`Bed::start`], every server holding each answer back for
    /// `delay`: a network whose round trip is `delay`, so that a benchmark
    /// can tell how many round trips one after another a call costs.
    pub fn start_delayed(zones: Vec<Zone>, delay: Duration) -> Result<Self, Error> {
        let queries = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&queries);
        let (ready, started) = std::sync::mpsc::channel::<Result<u16, String>>();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("dns-testbed".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = ready.send(Err(error.to_string()));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match run(&zones, counter, delay).await {
                        Ok(running) => {
                            let _ = ready.send(Ok(running.port));
                            let _ = stopped.await;
                            drop(running);
                        }
                        Err(error) => {
                            let _ = ready.send(Err(error.to_string()));
                        }
                    }
                });
            })?;
        let port = started
            .recv()
            .map_err(|_| "the test bed's thread ended before it started")??;
        Ok(Self {
            port,
            queries,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Starts [`crate::zones::standard`].
    pub fn standard() -> Result<Self, Error> {
        Self::start(crate::zones::standard())
    }

    /// The port every server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `ip` at the bed's port.
    pub fn at(&self, ip: Ipv4Addr) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(ip), self.port)
    }

    /// The recursive resolver's address.
    pub fn resolver(&self) -> SocketAddr {
        self.at(RESOLVER)
    }

    /// How many questions the servers have received so far (over UDP and
    /// TCP; silent and dead servers count none).
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A catalog that counts the questions it answers, and answers each after
/// `delay`.
struct Counted {
    catalog: Catalog,
    queries: Arc<AtomicU64>,
    delay: Duration,
}

#[async_trait::async_trait]
impl RequestHandler for Counted {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        response_handle: R,
    ) -> ResponseInfo {
        self.queries.fetch_add(1, Ordering::Relaxed);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.catalog
            .handle_request::<R, T>(request, response_handle)
            .await
    }
}

/// What keeps the servers alive.
struct Running {
    port: u16,
    _servers: Vec<Server<Counted>>,
    _silent: Vec<(UdpSocket, TcpListener)>,
}

fn catalog_of(zones: &Zones) -> Catalog {
    let mut catalog = Catalog::new();
    for (origin, handler) in zones {
        catalog.upsert(LowerName::new(origin), vec![Arc::clone(handler)]);
    }
    catalog
}

async fn bind(ip: Ipv4Addr, port: u16) -> std::io::Result<(UdpSocket, TcpListener)> {
    let address = SocketAddr::new(IpAddr::V4(ip), port);
    Ok((
        UdpSocket::bind(address).await?,
        TcpListener::bind(address).await?,
    ))
}

/// Binds every address of the plan on one port, trying ports until one is
/// free everywhere.
async fn bind_all(plan: &Plan) -> Result<(u16, Vec<(UdpSocket, TcpListener)>), Error> {
    for _ in 0..PORT_TRIES {
        let probe = std::net::UdpSocket::bind((RESOLVER, 0))?;
        let port = probe.local_addr()?.port();
        drop(probe);
        let mut sockets = Vec::new();
        for ip in plan.roles.keys() {
            match bind(*ip, port).await {
                Ok(pair) => sockets.push(pair),
                Err(_) => break,
            }
        }
        if sockets.len() == plan.roles.len() {
            return Ok((port, sockets));
        }
    }
    Err("no port is free on every address of the test bed".into())
}

async fn run(zones: &[Zone], queries: Arc<AtomicU64>, delay: Duration) -> Result<Running, Error> {
    let plan = plan(zones)?;
    let (port, sockets) = bind_all(&plan).await?;
    let mut servers = Vec::new();
    let mut silent = Vec::new();
    for (role, (udp, tcp)) in plan.roles.values().zip(sockets) {
        match role {
            Role::Serve(zones) => {
                let mut server = Server::new(Counted {
                    catalog: catalog_of(zones),
                    queries: Arc::clone(&queries),
                    delay,
                });
                server.register_socket(udp);
                server.register_listener(tcp, Duration::from_secs(5), 65_535);
                servers.push(server);
            }
            Role::Silent => silent.push((udp, tcp)),
        }
    }
    Ok(Running {
        port,
        _servers: servers,
        _silent: silent,
    })
}
