//! From [`Zone`] descriptions to zone handlers and the role of every
//! address ([`Plan`]): the root and `test.` zones with their delegations
//! and DS records, each child zone as each of its servers serves it, the
//! resolvers' views, and the signatures. The root and `test.` are signed,
//! so that a validating resolver with the root's key as its trust anchor
//! can follow the chain; a signed zone gets Ed25519 keys made here, an NSEC
//! chain, and RRSIGs over every RRset it is authoritative for, broken on
//! purpose where its [`Signing`] says so.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use hickory_server::dnssec::NxProofKind;
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::dnssec::crypto::Ed25519SigningKey;
use hickory_server::proto::dnssec::rdata::{DNSKEY, DNSSECRData, DS, NSEC, RRSIG};
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

/// A zone cut in a parent zone: what the parent's servers answer for any
/// name at or below it (but the DS at the cut), a referral. hickory-server
/// answers some of these questions itself, wrongly for a validating
/// resolver (an NS question at the cut as an authoritative answer, an SOA
/// question below it with the parent's NS set added and the AA flag set),
/// so the bed's parent servers answer them from this instead.
#[derive(Clone)]
pub struct Delegation {
    pub cut: LowerName,
    /// The NS set, unsigned: the parent is not authoritative for it.
    pub ns: Vec<Record>,
    /// The DS set and its RRSIGs, or the NSEC record and RRSIG that prove
    /// there is none (sent to askers that set the DO bit).
    pub proof: Vec<Record>,
    /// The addresses of name servers below the cut.
    pub glue: Vec<Record>,
}

/// What the servers of a signed zone need to deny a name that does not
/// exist: hickory-server proves the absence of a wildcard at the name's
/// parent rather than at its closest encloser (RFC 4035 section 3.1.3.2),
/// which a validator rejects for a name two labels below the nearest
/// existing one (`_smtp._tls.<zone>`), so the bed's servers build these
/// NXDOMAIN answers themselves.
#[derive(Clone)]
pub struct Denial {
    pub origin: LowerName,
    /// Every owner name of the zone (a name with descendants exists too:
    /// an empty non-terminal).
    owners: BTreeSet<LowerName>,
    /// Each NSEC record with its RRSIGs, in canonical order of owner.
    nsecs: Vec<(LowerName, Vec<Record>)>,
    /// The SOA with its RRSIGs.
    soa: Vec<Record>,
}

impl Denial {
    fn of(handler: &mut Handler, origin: &Name) -> Self {
        let records = handler.records_get_mut();
        let apex = LowerName::new(origin);
        let owners = records.keys().map(|key| key.name.clone()).collect();
        let nsecs = records
            .iter()
            .filter(|(key, _)| key.record_type == RecordType::NSEC)
            .map(|(key, rrset)| (key.name.clone(), rrset.records(true).cloned().collect()))
            .collect();
        let soa = records
            .get(&RrKey::new(apex.clone(), RecordType::SOA))
            .map(|rrset| rrset.records(true).cloned().collect())
            .unwrap_or_default();
        Self {
            origin: apex,
            owners,
            nsecs,
            soa,
        }
    }

    fn exists(&self, name: &LowerName) -> bool {
        self.owners.iter().any(|owner| name.zone_of(owner))
    }

    /// The NSEC whose owner is the last at or before `name`.
    fn covering(&self, name: &LowerName) -> Option<&(LowerName, Vec<Record>)> {
        self.nsecs.iter().rev().find(|(owner, _)| owner <= name)
    }

    /// The authority section of an NXDOMAIN answer for `name`: the SOA,
    /// the NSEC that covers the name and the one that covers the wildcard
    /// at its closest encloser, with their RRSIGs; `None` when the name
    /// exists or is outside the zone.
    pub fn nxdomain(&self, name: &LowerName) -> Option<Vec<Record>> {
        if !self.origin.zone_of(name) || self.exists(name) {
            return None;
        }
        let mut encloser = name.base_name();
        while !self.exists(&encloser) && encloser != self.origin {
            encloser = encloser.base_name();
        }
        let wildcard = LowerName::new(&Name::from(encloser).prepend_label("*").ok()?);
        let mut records = self.soa.clone();
        let near = self.covering(name)?;
        records.extend(near.1.iter().cloned());
        if let Some(far) = self.covering(&wildcard)
            && far.0 != near.0
        {
            records.extend(far.1.iter().cloned());
        }
        Some(records)
    }
}

/// Every address the bed listens on, and what it does there.
pub struct Plan {
    pub roles: BTreeMap<Ipv4Addr, Role>,
    /// The referrals each parent server gives, by address.
    pub referrals: BTreeMap<Ipv4Addr, Vec<Delegation>>,
    /// The denials of the signed zones each server holds, by address.
    pub denials: BTreeMap<Ipv4Addr, Vec<Denial>>,
    /// The DS of the root's key: a validating resolver's trust anchor.
    pub trust_anchor: DS,
}

fn name(text: &str) -> Result<Name, Error> {
    Ok(Name::from_ascii(text)?)
}

type Handler = InMemoryZoneHandler<TokioRuntimeProvider>;

/// A zone handler from zone-file text; a signed zone's handler answers
/// questions for names and types it lacks with the NSEC records that prove
/// it (which [`secure`] adds).
fn handler(origin: &Name, text: &str, signed: bool) -> Result<Handler, Error> {
    let (origin, records) = Parser::new(text, None, Some(origin.clone())).parse()?;
    Ok(InMemoryZoneHandler::new(
        origin,
        records,
        ZoneType::Primary,
        AxfrPolicy::Deny,
        signed.then_some(NxProofKind::Nsec),
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

/// Publishes the DNSKEYs and signs the zone with every key (see
/// [`secure`]), then breaks the signatures as the zone's [`SigDefect`]
/// says.
fn sign(
    handler: &mut Handler,
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
    secure(handler, origin, &keys.signers, inception, serial)?;
    match defect {
        Some(SigDefect::SoaUnsigned) => rework_rrsigs(handler, origin, RecordType::SOA, |_| None),
        Some(SigDefect::SoaSignatureCorrupt) => {
            rework_rrsigs(handler, origin, RecordType::SOA, |rrsig| {
                let mut bytes = rrsig.sig().to_vec();
                if let Some(byte) = bytes.first_mut() {
                    *byte ^= 1;
                }
                Some(RRSIG::from_sig(rrsig.input().clone(), bytes))
            })
        }
        Some(SigDefect::DnskeyNotSignedByDsKey) => {
            let named = keys
                .dnskeys
                .first()
                .ok_or("a signed zone needs at least one key")?
                .calculate_key_tag()?;
            rework_rrsigs(handler, origin, RecordType::DNSKEY, |rrsig| {
                (rrsig.input().key_tag != named).then(|| rrsig.clone())
            })
        }
        Some(SigDefect::KeysUnpublished) | None => Ok(()),
    }
}

/// Adds the zone's NSEC chain (RFC 4034 section 4) and signs, with every
/// one of `signers`, every RRset the zone is authoritative for: not the NS
/// set of a delegation, nor the glue below it (RFC 4035 section 2.2).
fn secure(
    handler: &mut Handler,
    origin: &Name,
    signers: &[DnssecSigner],
    inception: OffsetDateTime,
    serial: u32,
) -> Result<(), Error> {
    let apex = LowerName::new(origin);
    let owned: Vec<RrKey> = handler.records_get_mut().keys().cloned().collect();
    let cuts: BTreeSet<LowerName> = owned
        .iter()
        .filter(|key| key.record_type == RecordType::NS && key.name != apex)
        .map(|key| key.name.clone())
        .collect();
    let below_cut = |name: &LowerName| cuts.iter().any(|cut| cut.zone_of(name) && cut != name);
    // Owners in canonical order (the order of the handler's map), each
    // with the types it holds.
    let mut owners: Vec<(LowerName, BTreeSet<RecordType>)> = Vec::new();
    for key in owned.iter().filter(|key| !below_cut(&key.name)) {
        match owners.last_mut() {
            Some((owner, types)) if *owner == key.name => {
                types.insert(key.record_type);
            }
            _ => owners.push((key.name.clone(), BTreeSet::from([key.record_type]))),
        }
    }
    for (index, (owner, types)) in owners.iter().enumerate() {
        let next = owners
            .get(index + 1)
            .map_or_else(|| origin.clone(), |(next, _)| Name::from(next.clone()));
        let nsec = NSEC::new_cover_self(next, types.iter().copied());
        let record = Record::from_rdata(
            Name::from(owner.clone()),
            3600,
            RData::DNSSEC(DNSSECRData::NSEC(nsec)),
        );
        handler.upsert_mut(record, serial);
    }
    for (key, rrset) in handler.records_get_mut().iter_mut() {
        let delegation = cuts.contains(&key.name) && key.record_type == RecordType::NS;
        if delegation || below_cut(&key.name) {
            continue;
        }
        let rrset = Arc::make_mut(rrset);
        let mut signatures = Vec::new();
        for signer in signers {
            let rrsig = RRSIG::from_rrset(rrset, DNSClass::IN, inception, signer)?;
            signatures.push(Record::from_rdata(
                rrset.name().clone(),
                rrset.ttl(),
                RData::DNSSEC(DNSSECRData::RRSIG(rrsig)),
            ));
        }
        rrset.set_rrsigs(signatures);
    }
    Ok(())
}

/// The zone cuts of a parent zone, with what a referral to each carries.
fn delegations(handler: &mut Handler, origin: &Name) -> Vec<Delegation> {
    let apex = LowerName::new(origin);
    let records = handler.records_get_mut();
    let cuts: Vec<LowerName> = records
        .keys()
        .filter(|key| key.record_type == RecordType::NS && key.name != apex)
        .map(|key| key.name.clone())
        .collect();
    let rrset = |name: &LowerName, rtype: RecordType, signed: bool| -> Vec<Record> {
        records
            .get(&RrKey::new(name.clone(), rtype))
            .map(|rrset| rrset.records(signed).cloned().collect())
            .unwrap_or_default()
    };
    cuts.iter()
        .map(|cut| {
            let ds = rrset(cut, RecordType::DS, true);
            let proof = if ds.is_empty() {
                rrset(cut, RecordType::NSEC, true)
            } else {
                ds
            };
            let glue = records
                .iter()
                .filter(|(key, _)| cut.zone_of(&key.name) && key.name != *cut)
                .filter(|(key, _)| matches!(key.record_type, RecordType::A | RecordType::AAAA))
                .flat_map(|(_, rrset)| rrset.records_without_rrsigs().cloned())
                .collect();
            Delegation {
                cut: cut.clone(),
                ns: rrset(cut, RecordType::NS, false),
                proof,
                glue,
            }
        })
        .collect()
}

/// Replaces each RRSIG over the `rtype` RRset at the apex with what
/// `change` makes of it (none: removed).
fn rework_rrsigs(
    handler: &mut Handler,
    origin: &Name,
    rtype: RecordType,
    change: impl Fn(&RRSIG) -> Option<RRSIG>,
) -> Result<(), Error> {
    let key = RrKey::new(LowerName::new(origin), rtype);
    let rrset = handler
        .records_get_mut()
        .get_mut(&key)
        .ok_or_else(|| format!("no {rtype} to re-sign"))?;
    let rrset = Arc::make_mut(rrset);
    let reworked = rrset
        .rrsigs()
        .iter()
        .filter_map(|record| match &record.data {
            RData::DNSSEC(DNSSECRData::RRSIG(rrsig)) => change(rrsig).map(|rrsig| {
                Record::from_rdata(
                    record.name.clone(),
                    record.ttl,
                    RData::DNSSEC(DNSSECRData::RRSIG(rrsig)),
                )
            }),
            _ => None,
        })
        .collect();
    rrset.set_rrsigs(reworked);
    Ok(())
}

/// One copy of a child zone: its head at `serial`, then `records`, signed
/// when the zone is (with what its servers need to deny names).
fn child_copy(
    zone: &Zone,
    origin: &Name,
    keys: Option<&Keys>,
    serial: u32,
    records: &str,
    now: OffsetDateTime,
) -> Result<(Arc<dyn ZoneHandler>, Option<Denial>), Error> {
    let text = format!("{}{records}", head(zone, serial));
    let mut copy = handler(origin, &text, keys.is_some())?;
    let mut denial = None;
    if let Some(keys) = keys {
        sign(&mut copy, origin, keys, serial, now)?;
        denial = Some(Denial::of(&mut copy, origin));
    }
    Ok((Arc::new(copy), denial))
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
    let root_keys = keys(&root, &Signing::good())?;
    let tld_keys = keys(&tld, &Signing::good())?;
    let mut root_zone = handler(&root, &format!("{ROOT_ZONE}{glue}"), true)?;
    for record in ds_records(&tld, &tld_keys)? {
        root_zone.upsert_mut(record, 1);
    }
    sign(&mut root_zone, &root, &root_keys, 1, now)?;
    let root_referrals = delegations(&mut root_zone, &root);
    let root_denial = Denial::of(&mut root_zone, &root);
    let root_zone: Arc<dyn ZoneHandler> = Arc::new(root_zone);
    let trust_anchor = match ds_records(&root, &root_keys)?
        .first()
        .map(|record| &record.data)
    {
        Some(RData::DNSSEC(DNSSECRData::DS(ds))) => ds.clone(),
        _ => return Err("the root's key gave no DS".into()),
    };

    let mut tld_text = format!("{TLD_ZONE}{glue}");
    let mut truth: Zones = Vec::new();
    let mut second: Zones = Vec::new();
    let mut roles: BTreeMap<Ipv4Addr, Role> = BTreeMap::new();
    let mut nobody = Vec::new();
    let mut ds = Vec::new();
    let mut denials: BTreeMap<Ipv4Addr, Vec<Denial>> = BTreeMap::new();
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
        let (resolved, _) = child_copy(zone, &origin, keys.as_ref(), newest, view, now)?;
        // The second resolver shares the first's copy unless it has a view
        // of its own.
        let resolved2 = match zone.resolver2_view.as_deref() {
            Some(view2) => child_copy(zone, &origin, keys.as_ref(), newest, view2, now)?.0,
            None => Arc::clone(&resolved),
        };
        truth.push((origin.clone(), resolved));
        second.push((origin.clone(), resolved2));
        for ns in &zone.servers {
            let Some(ip) = ns.ip else { continue };
            match &ns.serves {
                Serves::Zone { serial, records } => {
                    let records = records.as_deref().unwrap_or(&zone.records);
                    let (copy, denial) =
                        child_copy(zone, &origin, keys.as_ref(), *serial, records, now)?;
                    serve(&mut roles, ip)?.push((origin.clone(), copy));
                    denials.entry(ip).or_default().extend(denial);
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
    let mut tld_zone = handler(&tld, &tld_text, true)?;
    for record in ds {
        tld_zone.upsert_mut(record, 1);
    }
    sign(&mut tld_zone, &tld, &tld_keys, 1, now)?;
    let tld_referrals = delegations(&mut tld_zone, &tld);
    let tld_denial = Denial::of(&mut tld_zone, &tld);
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
    let mut referrals = BTreeMap::new();
    for ip in ROOT {
        referrals.insert(ip, root_referrals.clone());
        denials.entry(ip).or_default().push(root_denial.clone());
    }
    for ip in TLD {
        referrals.insert(ip, tld_referrals.clone());
        denials.entry(ip).or_default().push(tld_denial.clone());
    }
    Ok(Plan {
        roles,
        referrals,
        denials,
        trust_anchor,
    })
}
