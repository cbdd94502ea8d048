//! Running the bed: one port free on every address of the [`Plan`], a
//! hickory-server on each serving address (UDP and TCP, wrapped to count
//! the questions), a bound but unread socket on each silent one, all on a
//! thread with its own tokio runtime until the [`Bed`] is dropped; and, when
//! asked for, a validating resolver ([`crate::validator`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::NetError;
use hickory_server::net::runtime::Time;
use hickory_server::proto::op::{Edns, Header, HeaderCounts, Metadata, ResponseCode};
use hickory_server::proto::rr::{LowerName, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::{Catalog, MessageResponseBuilder};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::oneshot;

use crate::build::{Delegation, Denial, Plan, Role, Zones, plan};
use crate::spec::Zone;
use crate::validator::Validator;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The bed's recursive resolver: it holds every zone as it really is.
pub const RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 1);
/// A second resolver, which sees some zones differently.
pub const RESOLVER2: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 2);
/// A validating resolver (BIND's `named`), in a bed started with
/// [`Bed::validating`]: it recurses from the bed's root, with the root's
/// key as its trust anchor, and answers SERVFAIL for data it judges bogus.
/// It is on 127.0.0.1 because `named` listens only on addresses an
/// interface carries, and the other 127.x addresses are not assigned.
pub const VALIDATOR: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// The address the validating resolver's own questions leave from: the
/// bed does not count them ([`Bed::queries`]).
pub const VALIDATOR_SOURCE: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 5);
/// An address where nothing listens.
pub const NOBODY: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 99);

/// How many ports to try before giving up.
const PORT_TRIES: usize = 50;

/// Running servers; dropped, they stop.
pub struct Bed {
    port: u16,
    validating: bool,
    queries: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Bed {
    /// Starts servers for the root, `test.` and `zones`, and returns once
    /// every one listens.
    pub fn start(zones: Vec<Zone>) -> Result<Self, Error> {
        Self::start_with(zones, Duration::ZERO, false)
    }

    /// Like [`Bed::start`], with a validating resolver at [`VALIDATOR`]
    /// (BIND's `named`, which must be installed).
    pub fn validating(zones: Vec<Zone>) -> Result<Self, Error> {
        Self::start_with(zones, Duration::ZERO, true)
    }

    /// Like [`Bed::start`], every server holding each answer back for
    /// `delay`: a network whose round trip is `delay`, so that a benchmark
    /// can tell how many round trips one after another a call costs.
    pub fn start_delayed(zones: Vec<Zone>, delay: Duration) -> Result<Self, Error> {
        Self::start_with(zones, delay, false)
    }

    fn start_with(zones: Vec<Zone>, delay: Duration, validating: bool) -> Result<Self, Error> {
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
                    match run(&zones, counter, delay, validating).await {
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
            validating,
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

    /// The validating resolver's address, in a bed started with
    /// [`Bed::validating`].
    pub fn validator(&self) -> Option<SocketAddr> {
        self.validating.then(|| self.at(VALIDATOR))
    }

    /// How many questions the servers have received so far (over UDP and
    /// TCP; silent and dead servers count none, and neither do the
    /// validating resolver's own questions).
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

/// A catalog that counts the questions it answers, answers each after
/// `delay`, and gives the referrals of its zone cuts and the signed denials
/// of names its zones lack itself (see [`Delegation`] and [`Denial`]).
struct Counted {
    catalog: Catalog,
    /// The zones the catalog holds.
    held: Vec<LowerName>,
    referrals: Vec<Delegation>,
    denials: Vec<Denial>,
    queries: Arc<AtomicU64>,
    delay: Duration,
}

impl Counted {
    /// The deepest zone cut a question falls at or below, unless it asks
    /// for the DS at the cut (which the parent answers) or a zone the
    /// server holds lies below the cut and holds the name.
    fn referral(&self, request: &Request) -> Option<&Delegation> {
        let query = request.queries.queries().first()?;
        let name = query.name();
        self.referrals
            .iter()
            .filter(|delegation| delegation.cut.zone_of(name))
            .filter(|delegation| !(query.query_type() == RecordType::DS && delegation.cut == *name))
            .filter(|delegation| {
                !self
                    .held
                    .iter()
                    .any(|zone| zone.zone_of(name) && delegation.cut.zone_of(zone))
            })
            .max_by_key(|delegation| delegation.cut.num_labels())
    }
}

impl Counted {
    /// The authority section of an NXDOMAIN answer, for a question with
    /// the DO bit about a name a signed zone of this server lacks.
    fn denial(&self, request: &Request) -> Option<Vec<Record>> {
        if !dnssec_ok(request) {
            return None;
        }
        let name = request.queries.queries().first()?.name();
        self.denials
            .iter()
            .filter(|denial| denial.origin.zone_of(name))
            .max_by_key(|denial| denial.origin.num_labels())?
            .nxdomain(name)
    }
}

fn dnssec_ok(request: &Request) -> bool {
    request
        .edns
        .as_ref()
        .is_some_and(|edns| edns.flags().dnssec_ok)
}

/// The EDNS of an answer to `request`, if it has one.
fn answer_edns(request: &Request) -> Option<Edns> {
    request.edns.as_ref().map(|asked| {
        let mut edns = Edns::new();
        edns.set_dnssec_ok(dnssec_ok(request));
        edns.set_max_payload(asked.max_payload().max(512));
        edns
    })
}

/// Sends an authoritative NXDOMAIN with `authorities`.
async fn deny<R: ResponseHandler>(
    request: &Request,
    authorities: &[Record],
    mut response_handle: R,
) -> ResponseInfo {
    let mut metadata = Metadata::response_from_request(&request.metadata);
    metadata.authoritative = true;
    metadata.response_code = ResponseCode::NXDomain;
    let edns = answer_edns(request);
    let response = MessageResponseBuilder::new(&request.queries, edns.as_ref()).build(
        metadata,
        std::iter::empty(),
        authorities.iter(),
        std::iter::empty(),
        std::iter::empty(),
    );
    send(response_handle.send_response(response).await, metadata)
}

/// What became of a response sent: its info, or, when the asker is gone
/// or the socket failed, the metadata it had.
fn send(sent: Result<ResponseInfo, NetError>, metadata: Metadata) -> ResponseInfo {
    sent.unwrap_or_else(|_| {
        ResponseInfo::from(Header {
            metadata,
            counts: HeaderCounts::default(),
        })
    })
}

/// Sends `delegation` as a referral: no AA flag, the NS set (and with the
/// DO bit the DS set or the proof there is none) in the authority section,
/// the glue in the additional one.
async fn refer<R: ResponseHandler>(
    request: &Request,
    delegation: &Delegation,
    mut response_handle: R,
) -> ResponseInfo {
    let mut metadata = Metadata::response_from_request(&request.metadata);
    metadata.authoritative = false;
    let edns = answer_edns(request);
    let proof: &[Record] = if dnssec_ok(request) {
        &delegation.proof
    } else {
        &[]
    };
    let response = MessageResponseBuilder::new(&request.queries, edns.as_ref()).build(
        metadata,
        std::iter::empty(),
        delegation.ns.iter().chain(proof),
        std::iter::empty(),
        delegation.glue.iter(),
    );
    send(response_handle.send_response(response).await, metadata)
}

#[async_trait::async_trait]
impl RequestHandler for Counted {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        response_handle: R,
    ) -> ResponseInfo {
        if request.src().ip() != IpAddr::V4(VALIDATOR_SOURCE) {
            self.queries.fetch_add(1, Ordering::Relaxed);
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if let Some(delegation) = self.referral(request) {
            return refer(request, delegation, response_handle).await;
        }
        if let Some(authorities) = self.denial(request) {
            return deny(request, &authorities, response_handle).await;
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
    _validator: Option<Validator>,
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

/// Binds every address of the plan, and `reserved` (kept free for a
/// process of its own, which binds it once these sockets are dropped), on
/// one port, trying ports until one is free everywhere.
async fn bind_all(
    plan: &Plan,
    reserved: &[Ipv4Addr],
) -> Result<(u16, Vec<(UdpSocket, TcpListener)>), Error> {
    for _ in 0..PORT_TRIES {
        let probe = std::net::UdpSocket::bind((RESOLVER, 0))?;
        let port = probe.local_addr()?.port();
        drop(probe);
        let mut sockets = Vec::new();
        for ip in plan.roles.keys().chain(reserved) {
            match bind(*ip, port).await {
                Ok(pair) => sockets.push(pair),
                Err(_) => break,
            }
        }
        if sockets.len() == plan.roles.len() + reserved.len() {
            sockets.truncate(plan.roles.len());
            return Ok((port, sockets));
        }
    }
    Err("no port is free on every address of the test bed".into())
}

async fn run(
    zones: &[Zone],
    queries: Arc<AtomicU64>,
    delay: Duration,
    validating: bool,
) -> Result<Running, Error> {
    let plan = plan(zones)?;
    let reserved: &[Ipv4Addr] = if validating { &[VALIDATOR] } else { &[] };
    let (port, sockets) = bind_all(&plan, reserved).await?;
    let mut servers = Vec::new();
    let mut silent = Vec::new();
    for ((ip, role), (udp, tcp)) in plan.roles.iter().zip(sockets) {
        match role {
            Role::Serve(zones) => {
                let mut server = Server::new(Counted {
                    catalog: catalog_of(zones),
                    held: zones
                        .iter()
                        .map(|(origin, _)| LowerName::new(origin))
                        .collect(),
                    referrals: plan.referrals.get(ip).cloned().unwrap_or_default(),
                    denials: plan.denials.get(ip).cloned().unwrap_or_default(),
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
    let validator = if validating {
        let anchor = plan.trust_anchor.clone();
        let address = SocketAddr::new(IpAddr::V4(VALIDATOR), port);
        let hints = crate::build::ROOT.map(|ip| SocketAddr::new(IpAddr::V4(ip), port));
        Some(
            tokio::task::spawn_blocking(move || Validator::start(address, &hints, &anchor))
                .await??,
        )
    } else {
        None
    };
    Ok(Running {
        port,
        _servers: servers,
        _silent: silent,
        _validator: validator,
    })
}
