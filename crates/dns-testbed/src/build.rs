//! From [`Zone`] descriptions to zone handlers and the role of every
//! address ([`Plan`]): the root and `test.` zones with their delegations
//! and DS records, each child zone as each of its servers serves it, the
//! resolvers' views, and the signatures (Ed25519 keys made here, RRSIGs
//! over the SOA and DNSKEY RRsets, broken on purpose where a [`Signing`]
//! says so).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::dnssec::crypto::Ed25519SigningKey;
use hickory_server::proto::dnssec::rdata::{DNSKEY, DNSSECRData, DS, RRSIG};
use hickory_server::proto::dnssec::{
    Algorithm, DigestType, DnssecSigner, PublicKey, PublicKeyBuf, SigningKey,
};
use hickory_server::proto::rr::{DNSClass, LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::proto::serialize::txt::Parser;
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, ZoneHandler, ZoneType};
use time::OffsetDateTime;

use crate::bed::{Error, RESOLVER, RESOLVER2};
use crate::spec::{DsKind, Serves, SigDefect, Signing, Zone};

/// The root's servers, `a.root.test` and `b.root.test`.
pub const ROOT: [Ipv4Addr; 2] = [Ipv4Addr::new(127, 53, 3, 1), Ipv4Addr::new(127, 53, 4, 1)];
/// The TLD's servers, `ns1.test` and `ns2.test`.
pub const TLD: [Ipv4Addr; 2] = [Ipv4Addr::new(127, 53, 1, 1), Ipv4Addr::new(127, 53, 2, 1)];

/// Zones by origin, as one server serves them.
pub type Zones = Vec<(Name, Arc<dyn ZoneHandler>)>;

/// What listens at an address.
pub enum Role {
    /// A DNS server holding these zones (none: it refuses everything).
    Serve(Zones),
    /// A socket that never answers.
    Silent,
}

/// Every address the bed listens on, and what it does there.
pub struct Plan {
    pub roles: BTreeMap<Ipv4Addr, Role>,
}

fn name(text: &str) -> Result<Name, Error> {
    Ok(Name::from_ascii(text)?)
}

/// A zone handler from zone-file text.
fn handler(origin: &Name, text: &str) -> Result<InMemoryZoneHandler<TokioRuntimeProvider>, Error> {
    let (origin, records) = Parser::new(text, None, Some(origin.clone())).parse()?;
    Ok(InMemoryZoneHandler::new(
        origin,
        records,
        ZoneType::Primary,
        AxfrPolicy::Deny,
        None,
    )?)
}

/// The SOA and NS lines of a child zone, with the servers' A records.
fn head(zone: &Zone, serial: u32) -> String {
    let first = zone.servers.first().map_or("ns1", |ns| ns.host);
    let mut text = format!("@ 3600 IN SOA {first} hostmaster {serial} 7200 3600 1209600 3600\n");
    for ns in &zone.servers {
        text.push_str(&format!("@ 3600 IN NS {}\n", ns.host));
        if let Some(ip) = ns.ip {
            text.push_str(&format!("{} 3600 IN A {ip}\n", ns.host));
        }
    }
    text
}

/// A zone's keys and how to sign with them.
struct Keys {
    signers: Vec<DnssecSigner>,
    dnskeys: Vec<DNSKEY>,
    signing: Signing,
}

fn ed25519() -> Result<Ed25519SigningKey, Error> {
    let pkcs8 = Ed25519SigningKey::generate_pkcs8()?;
    Ok(Ed25519SigningKey::from_pkcs8(&pkcs8)?)
}

fn keys(origin: &Name, signing: &Signing) -> Result<Keys, Error> {
    let window = signing.window;
    let duration = Duration::from_secs(u64::try_from(window.expiration - window.inception)?);
    let mut signers = Vec::new();
    let mut dnskeys = Vec::new();
    for index in 0..signing.keys {
        let key = ed25519()?;
        let flags = if index == 0 { 257 } else { 256 };
        let dnskey = DNSKEY::with_flags(flags, key.to_public_key()?);
        dnskeys.push(dnskey.clone());
        signers.push(DnssecSigner::new(
            dnskey,
            Box::new(key),
            origin.clone(),
            duration,
        ));
    }
    for algorithm in &signing.unused_keys {
        let mut material = vec![3, 1, 0, 1];
        material.extend((0..128_u8).map(|byte| byte.wrapping_mul(37) ^ algorithm));
        let key = PublicKeyBuf::new(material, Algorithm::from_u8(*algorithm));
        dnskeys.push(DNSKEY::with_flags(256, key));
    }
    Ok(Keys {
        signers,
        dnskeys,
        signing: signing.clone(),
    })
}

/// The DS records the parent publishes for a zone signed with `keys`.
fn ds_records(origin: &Name, keys: &Keys) -> Result<Vec<Record>, Error> {
    let first = keys
        .signers
        .first()
        .ok_or("a signed zone needs at least one key")?
        .key()
        .to_public_key()?;
    let mut records = Vec::new();
    for kind in &keys.signing.ds {
        let ds = match kind {
            DsKind::Sha256 => DS::from_key(&first, origin, DigestType::SHA256)?,
            DsKind::Sha1 => DS::from_key(&first, origin, DigestType::SHA1)?,
            DsKind::Gost => {
                let tag = DNSKEY::from_key(&first).calculate_key_tag()?;
                DS::new(tag, first.algorithm(), DigestType::from(3), vec![0xab; 32])
            }
            DsKind::OtherKey => {
                DS::from_key(&ed25519()?.to_public_key()?, origin, DigestType::SHA256)?
            }
        };
        records.push(Record::from_rdata(
            origin.clone(),
            3600,
            RData::DNSSEC(DNSSECRData::DS(ds)),
        ));
    }
    Ok(records)
}

/// Publishes the DNSKEYs and signs the SOA and DNSKEY RRsets with every
/// key, as the zone's [`SigDefect`] allows.
fn sign(
    handler: &mut InMemoryZoneHandler<TokioRuntimeProvider>,
    origin: &Name,
    keys: &Keys,
    serial: u32,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let defect = keys.signing.defect;
    if defect == Some(SigDefect::KeysUnpublished) {
        return Ok(());
    }
    for dnskey in &keys.dnskeys {
        let record = Record::from_rdata(
            origin.clone(),
            3600,
            RData::DNSSEC(DNSSECRData::DNSKEY(dnskey.clone())),
        );
        handler.upsert_mut(record, serial);
    }
    let inception = now + time::Duration::seconds(keys.signing.window.inception);
    let mut types = vec![RecordType::DNSKEY];
    if defect != Some(SigDefect::SoaUnsigned) {
        types.push(RecordType::SOA);
    }
    for rtype in types {
        let key = RrKey::new(LowerName::new(origin), rtype);
        let records = handler.records_get_mut();
        let Some(rrset) = records.get_mut(&key) else {
            return Err(format!("no {rtype} to sign").into());
        };
        let mut signatures = Vec::new();
        for signer in &keys.signers {
            let rrsig = RRSIG::from_rrset(rrset, DNSClass::IN, inception, signer)?;
            let rrsig =
                if rtype == RecordType::SOA && defect == Some(SigDefect::SoaSignatureCorrupt) {
                    let mut bytes = rrsig.sig().to_vec();
                    if let Some(byte) = bytes.first_mut() {
                        *byte ^= 1;
                    }
                    RRSIG::from_sig(rrsig.input().clone(), bytes)
                } else {
                    rrsig
                };
            signatures.push(Record::from_rdata(
                origin.clone(),
                rrset.ttl(),
                RData::DNSSEC(DNSSECRData::RRSIG(rrsig)),
            ));
        }
        let rrset = Arc::make_mut(rrset);
        for signature in signatures {
            rrset.insert_rrsig(signature);
        }
    }
    Ok(())
}

/// One copy of a child zone: its head at `serial`, then `records`, signed
/// when the zone is.
fn child_copy(
    zone: &Zone,
    origin: &Name,
    keys: Option<&Keys>,
    serial: u32,
    records: &str,
    now: OffsetDateTime,
) -> Result<Arc<dyn ZoneHandler>, Error> {
    let text = format!("{}{records}", head(zone, serial));
    let mut copy = handler(origin, &text)?;
    if let Some(keys) = keys {
        sign(&mut copy, origin, keys, serial, now)?;
    }
    Ok(Arc::new(copy))
}

fn serve(roles: &mut BTreeMap<Ipv4Addr, Role>, ip: Ipv4Addr) -> Result<&mut Zones, Error> {
    match roles.entry(ip).or_insert_with(|| Role::Serve(Vec::new())) {
        Role::Serve(zones) => Ok(zones),
        Role::Silent => Err(format!("{ip} is silent for one zone and serves another").into()),
    }
}

const ROOT_ZONE: &str = "\
@ 3600 IN SOA a.root.test. hostmaster.test. 1 7200 3600 1209600 3600
@ 3600 IN NS a.root.test.
@ 3600 IN NS b.root.test.
test. 3600 IN NS ns1.test.
test. 3600 IN NS ns2.test.
";

const TLD_ZONE: &str = "\
@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 3600
@ 3600 IN NS ns1
@ 3600 IN NS ns2
";

/// Builds every zone and decides what listens where.
pub fn plan(zones: &[Zone]) -> Result<Plan, Error> {
    let now = OffsetDateTime::now_utc();
    let root = Name::root();
    let tld = name("test.")?;
    let glue = format!(
        "ns1.test. 3600 IN A {}\nns2.test. 3600 IN A {}\na.root.test. 3600 IN A {}\nb.root.test. 3600 IN A {}\n",
        TLD[0], TLD[1], ROOT[0], ROOT[1]
    );
    let root_zone: Arc<dyn ZoneHandler> = Arc::new(handler(&root, &format!("{ROOT_ZONE}{glue}"))?);

    let mut tld_text = format!("{TLD_ZONE}{glue}");
    let mut truth: Zones = Vec::new();
    let mut second: Zones = Vec::new();
    let mut roles: BTreeMap<Ipv4Addr, Role> = BTreeMap::new();
    let mut nobody = Vec::new();
    let mut ds = Vec::new();
    for zone in zones {
        let origin = name(&format!("{}.test.", zone.label))?;
        for ns in zone.servers.iter().filter(|ns| ns.delegated) {
            tld_text.push_str(&format!(
                "{label} 3600 IN NS {host}.{label}\n",
                label = zone.label,
                host = ns.host
            ));
            if let Some(ip) = ns.ip {
                tld_text.push_str(&format!("{}.{} 3600 IN A {ip}\n", ns.host, zone.label));
            }
        }
        let keys = zone
            .signing
            .as_ref()
            .map(|signing| keys(&origin, signing))
            .transpose()?;
        if let Some(keys) = &keys {
            ds.extend(ds_records(&origin, keys)?);
        }
        let newest = zone
            .servers
            .iter()
            .filter_map(|ns| match ns.serves {
                Serves::Zone { serial, .. } => Some(serial),
                _ => None,
            })
            .max()
            .unwrap_or(1);
        let view = zone.resolver_view.as_deref().unwrap_or(&zone.records);
        let resolved = child_copy(zone, &origin, keys.as_ref(), newest, view, now)?;
        // The second resolver shares the first's copy unless it has a view
        // of its own.
        let resolved2 = match zone.resolver2_view.as_deref() {
            Some(view2) => child_copy(zone, &origin, keys.as_ref(), newest, view2, now)?,
            None => Arc::clone(&resolved),
        };
        truth.push((origin.clone(), resolved));
        second.push((origin.clone(), resolved2));
        for ns in &zone.servers {
            let Some(ip) = ns.ip else { continue };
            match &ns.serves {
                Serves::Zone { serial, records } => {
                    let records = records.as_deref().unwrap_or(&zone.records);
                    let copy = child_copy(zone, &origin, keys.as_ref(), *serial, records, now)?;
                    serve(&mut roles, ip)?.push((origin.clone(), copy));
                }
                Serves::Refuses => {
                    serve(&mut roles, ip)?;
                }
                Serves::Silent => match roles.entry(ip).or_insert(Role::Silent) {
                    Role::Silent => {}
                    Role::Serve(_) => {
                        return Err(
                            format!("{ip} serves one zone and is silent for another").into()
                        );
                    }
                },
                Serves::Nothing => nobody.push(ip),
            }
        }
    }
    if let Some(ip) = nobody.iter().find(|ip| roles.contains_key(ip)) {
        return Err(format!("{ip} must stay dead for one zone but listens for another").into());
    }
    let mut tld_zone = handler(&tld, &tld_text)?;
    for record in ds {
        tld_zone.upsert_mut(record, 1);
    }
    let tld_zone: Arc<dyn ZoneHandler> = Arc::new(tld_zone);
    for zones in [&mut truth, &mut second] {
        zones.push((root.clone(), Arc::clone(&root_zone)));
        zones.push((tld.clone(), Arc::clone(&tld_zone)));
    }
    for ip in ROOT {
        serve(&mut roles, ip)?.push((root.clone(), Arc::clone(&root_zone)));
    }
    for ip in TLD {
        serve(&mut roles, ip)?.push((tld.clone(), Arc::clone(&tld_zone)));
    }
    roles.insert(RESOLVER, Role::Serve(truth));
    roles.insert(RESOLVER2, Role::Serve(second));
    Ok(Plan { roles })
}
