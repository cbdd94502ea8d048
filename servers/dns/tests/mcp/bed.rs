//! The test bed: real DNS servers (hickory-server, in process) on loopback
//! addresses 127.x.y.z, all on one port chosen at start, serving zones
//! written here in zone-file syntax. One address plays the recursive
//! resolver and holds every zone as it "really" is; the parent zone `test.`
//! has its own two servers; each child zone has its own servers, which may
//! serve a different version of the zone (a stale secondary), or none at all
//! (a lame delegation). Signed zones are signed here with a fresh Ed25519
//! key and signatures whose validity window each test chooses.
//!
//! A [`Bed`] owns its servers: dropping it stops them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::dnssec::crypto::Ed25519SigningKey;
use hickory_server::proto::dnssec::rdata::{DNSKEY, DNSSECRData, DS, RRSIG};
use hickory_server::proto::dnssec::{DigestType, DnssecSigner, SigningKey};
use hickory_server::proto::rr::{DNSClass, LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::proto::serialize::txt::Parser;
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneHandler, ZoneType};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Zones by origin, as one server serves them.
type Zones = Vec<(Name, Arc<dyn ZoneHandler>)>;

/// The address of the bed's recursive resolver.
pub const RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 1);
/// A second resolver with the same view, for propagation tests.
pub const RESOLVER2: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 2);
/// An address where no server listens.
pub const NOBODY: Ipv4Addr = Ipv4Addr::new(127, 53, 0, 99);
const PARENT1: Ipv4Addr = Ipv4Addr::new(127, 53, 1, 1);
const PARENT2: Ipv4Addr = Ipv4Addr::new(127, 53, 2, 1);

/// A zone's validity window for signatures, relative to now, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub inception: i64,
    pub expiration: i64,
}

/// How a child zone is served.
pub struct Child {
    pub label: &'static str,
    /// The zone's records after SOA and NS (which the bed writes), with
    /// `$ORIGIN` set to the zone.
    pub records: &'static str,
    /// Servers: (host label under the zone, address, serial it serves;
    /// `None` for a server that does not run).
    pub servers: Vec<(&'static str, Ipv4Addr, Option<u32>)>,
    /// Sign the zone with signatures valid in this window.
    pub signed: Option<Window>,
}

/// Running servers; dropped, they stop.
pub struct Bed {
    pub port: u16,
    _servers: Vec<Server<Catalog>>,
}

impl Bed {
    pub fn resolver(&self) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(RESOLVER), self.port)
    }

    pub fn at(&self, ip: Ipv4Addr) -> String {
        SocketAddr::new(IpAddr::V4(ip), self.port).to_string()
    }
}

fn name(text: &str) -> Result<Name, Error> {
    Ok(Name::from_ascii(text)?)
}

/// A zone handler from zone-file text.
fn zone(origin: &Name, text: &str) -> Result<InMemoryZoneHandler<TokioRuntimeProvider>, Error> {
    let (origin, records) = Parser::new(text, None, Some(origin.clone())).parse()?;
    Ok(InMemoryZoneHandler::new(
        origin,
        records,
        ZoneType::Primary,
        AxfrPolicy::Deny,
        None,
    )?)
}

/// The SOA and NS lines of a zone.
fn head(servers: &[(&'static str, Ipv4Addr, Option<u32>)], serial: u32) -> String {
    let first = servers.first().map_or("ns1", |s| s.0);
    let mut text = format!("@ 3600 IN SOA {first} hostmaster {serial} 7200 3600 1209600 3600\n");
    for (host, ip, _) in servers {
        text.push_str(&format!("@ 3600 IN NS {host}\n{host} 3600 IN A {ip}\n"));
    }
    text
}

struct Signing {
    signer: DnssecSigner,
    dnskey: DNSKEY,
    window: Window,
}

fn signing(origin: &Name, window: Window) -> Result<Signing, Error> {
    let pkcs8 = Ed25519SigningKey::generate_pkcs8()?;
    let key = Ed25519SigningKey::from_pkcs8(&pkcs8)?;
    let public = key.to_public_key()?;
    let dnskey = DNSKEY::with_flags(257, public);
    let duration = Duration::from_secs(u64::try_from(window.expiration - window.inception)?);
    let signer = DnssecSigner::new(dnskey.clone(), Box::new(key), origin.clone(), duration);
    Ok(Signing {
        signer,
        dnskey,
        window,
    })
}

/// Adds the DNSKEY and signs the SOA and DNSKEY RRsets.
fn sign(
    handler: &mut InMemoryZoneHandler<TokioRuntimeProvider>,
    origin: &Name,
    signing: &Signing,
    serial: u32,
) -> Result<(), Error> {
    let dnskey = Record::from_rdata(
        origin.clone(),
        3600,
        RData::DNSSEC(DNSSECRData::DNSKEY(signing.dnskey.clone())),
    );
    handler.upsert_mut(dnskey, serial);
    let now = time::OffsetDateTime::now_utc();
    let inception = now + time::Duration::seconds(signing.window.inception);
    for rtype in [RecordType::SOA, RecordType::DNSKEY] {
        let key = RrKey::new(LowerName::new(origin), rtype);
        let records = handler.records_get_mut();
        let Some(rrset) = records.get_mut(&key) else {
            return Err(format!("no {rtype} to sign").into());
        };
        let rrsig = RRSIG::from_rrset(rrset, DNSClass::IN, inception, &signing.signer)?;
        let record = Record::from_rdata(
            origin.clone(),
            rrset.ttl(),
            RData::DNSSEC(DNSSECRData::RRSIG(rrsig)),
        );
        Arc::make_mut(rrset).insert_rrsig(record);
    }
    Ok(())
}

/// Binds UDP and TCP on `ip:port`.
async fn listen(ip: Ipv4Addr, port: u16, catalog: Catalog) -> Result<Server<Catalog>, Error> {
    let address = SocketAddr::new(IpAddr::V4(ip), port);
    let udp = tokio::net::UdpSocket::bind(address).await?;
    let tcp = tokio::net::TcpListener::bind(address).await?;
    let mut server = Server::new(catalog);
    server.register_socket(udp);
    server.register_listener(tcp, Duration::from_secs(5), 65_535);
    Ok(server)
}

/// A port free on every address the bed uses.
async fn free_port(addresses: &[Ipv4Addr]) -> Result<u16, Error> {
    for _ in 0..50 {
        let probe = std::net::UdpSocket::bind((RESOLVER, 0))?;
        let port = probe.local_addr()?.port();
        drop(probe);
        let free = addresses.iter().all(|ip| {
            std::net::UdpSocket::bind((*ip, port)).is_ok()
                && std::net::TcpListener::bind((*ip, port)).is_ok()
        });
        if free {
            return Ok(port);
        }
    }
    Err("no port free on every test address".into())
}

fn catalog_of(zones: &Zones) -> Catalog {
    let mut catalog = Catalog::new();
    for (origin, handler) in zones {
        catalog.upsert(LowerName::new(origin), vec![Arc::clone(handler)]);
    }
    catalog
}

/// Starts the bed: the resolvers, the parent `test.` and `children`.
pub async fn start(children: Vec<Child>) -> Result<Bed, Error> {
    let tld = name("test.")?;
    let mut parent_text = String::from(
        "@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 3600\n\
         @ 3600 IN NS ns1\n@ 3600 IN NS ns2\n",
    );
    parent_text.push_str(&format!(
        "ns1 3600 IN A {PARENT1}\nns2 3600 IN A {PARENT2}\n"
    ));

    let mut truth: Zones = Vec::new();
    let mut per_server: BTreeMap<Ipv4Addr, Zones> = BTreeMap::new();
    let mut ds_records = Vec::new();
    for child in &children {
        let origin = name(&format!("{}.test.", child.label))?;
        for (host, ip, _) in &child.servers {
            parent_text.push_str(&format!(
                "{label} 3600 IN NS {host}.{label}\n{host}.{label} 3600 IN A {ip}\n",
                label = child.label
            ));
        }
        let signing = child
            .signed
            .map(|window| signing(&origin, window))
            .transpose()?;
        if let Some(signing) = &signing {
            let public = signing.signer.key().to_public_key()?;
            let ds = DS::from_key(&public, &origin, DigestType::SHA256)?;
            ds_records.push(Record::from_rdata(
                origin.clone(),
                3600,
                RData::DNSSEC(DNSSECRData::DS(ds)),
            ));
        }
        let build = |serial: u32| -> Result<Arc<dyn ZoneHandler>, Error> {
            let text = format!("{}{}", head(&child.servers, serial), child.records);
            let mut handler = zone(&origin, &text)?;
            if let Some(signing) = &signing {
                sign(&mut handler, &origin, signing, serial)?;
            }
            Ok(Arc::new(handler))
        };
        let newest = child
            .servers
            .iter()
            .filter_map(|(_, _, serial)| *serial)
            .max()
            .unwrap_or(1);
        truth.push((origin.clone(), build(newest)?));
        for (_, ip, serial) in &child.servers {
            if let Some(serial) = serial {
                per_server
                    .entry(*ip)
                    .or_default()
                    .push((origin.clone(), build(*serial)?));
            }
        }
    }
    let mut parent = zone(&tld, &parent_text)?;
    for record in ds_records {
        parent.upsert_mut(record, 1);
    }
    let parent: Arc<dyn ZoneHandler> = Arc::new(parent);
    truth.push((tld.clone(), Arc::clone(&parent)));
    per_server.insert(PARENT1, vec![(tld.clone(), Arc::clone(&parent))]);
    per_server.insert(PARENT2, vec![(tld.clone(), Arc::clone(&parent))]);

    let mut addresses: Vec<Ipv4Addr> = per_server.keys().copied().collect();
    addresses.extend([RESOLVER, RESOLVER2]);
    let port = free_port(&addresses).await?;
    let mut servers = Vec::new();
    for ip in [RESOLVER, RESOLVER2] {
        servers.push(listen(ip, port, catalog_of(&truth)).await?);
    }
    for (ip, zones) in &per_server {
        servers.push(listen(*ip, port, catalog_of(zones)).await?);
    }
    Ok(Bed {
        port,
        _servers: servers,
    })
}
