//! `estado_dnssec`: a zone's DNSSEC chain at its last link. The DS set is
//! asked of the parent zone's own servers; the DNSKEY set and the signed
//! SOA of the zone's servers, with EDNS0 and the DO bit (TCP when the UDP
//! answer is truncated). The RRSIG over the SOA is verified with
//! hickory-proto's DNSSEC code against the zone's keys, its validity window
//! checked against the clock, and the algorithms against RFC 8624.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData, DS, RRSIG};
use hickory_proto::dnssec::{Algorithm, DigestType, PublicKey, Verifier};
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use schemars::JsonSchema;
use serde::Serialize;

use crate::findings::{Hallazgo, Tipo};
use crate::name::show;
use crate::net::{Net, ns_hosts};
use crate::query::Answer;

/// A signature expiring sooner than this is flagged.
const EXPIRY_WARNING_SECS: u64 = 3 * 24 * 3600;

/// One DNSKEY.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Clave {
    pub key_tag: u16,
    pub algoritmo: String,
    pub flags: u16,
    /// Secure entry point (a key-signing key).
    pub sep: bool,
}

/// One DS record at the parent.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegistroDs {
    pub key_tag: u16,
    pub algoritmo: String,
    pub digest: String,
    /// It matches a DNSKEY of the zone (key tag, algorithm and digest).
    pub coincide: bool,
}

/// One RRSIG over the SOA.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Firma {
    pub key_tag: u16,
    pub algoritmo: String,
    /// Signature inception and expiration, seconds since the Unix epoch.
    pub inicio: u32,
    pub expira: u32,
    /// The signature verifies against the DNSKEY it names.
    pub verifica: bool,
}

/// The result of `estado_dnssec`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Dnssec {
    pub dominio: String,
    pub zona: String,
    pub tiene_ds_en_padre: bool,
    pub ds: Vec<RegistroDs>,
    /// The zone's DNSKEY algorithms, by mnemonic (`ECDSAP256SHA256`...).
    pub dnskey_algoritmos: Vec<String>,
    pub dnskeys: Vec<Clave>,
    pub firmas_soa: Vec<Firma>,
    /// true: an RRSIG over the SOA verifies and is within its validity
    /// window; false: the zone is signed but none does; null: the zone is
    /// unsigned or could not be reached.
    pub soa_firmada_valida: Option<bool>,
    pub detalles: Vec<String>,
    pub hallazgos: Vec<Hallazgo>,
}

fn algorithm_name(algorithm: Algorithm) -> String {
    match algorithm {
        Algorithm::Unknown(number) => format!("ALG{number}"),
        known => known.as_str().to_owned(),
    }
}

/// RFC 8624 section 3.1: MUST NOT sign with these (1 RSAMD5, 3 DSA,
/// 6 DSA-NSEC3-SHA1, 12 ECC-GOST); NOT RECOMMENDED: 5 RSASHA1 and
/// 7 RSASHA1-NSEC3-SHA1.
fn algorithm_finding(algorithm: Algorithm, what: &str) -> Option<Hallazgo> {
    match u8::from(algorithm) {
        1 | 3 | 6 | 12 => Some(Tipo::AlgoritmoProhibido.hallazgo(format!(
            "{what} uses algorithm {} ({}), which RFC 8624 says MUST NOT be used",
            u8::from(algorithm),
            algorithm_name(algorithm)
        ))),
        5 | 7 => Some(Tipo::AlgoritmoObsoleto.hallazgo(format!(
            "{what} uses algorithm {} ({}), NOT RECOMMENDED by RFC 8624",
            u8::from(algorithm),
            algorithm_name(algorithm)
        ))),
        _ => None,
    }
}

/// RFC 8624 section 3.3: DS digest 1 (SHA-1) MUST NOT be published,
/// 3 (GOST) MUST NOT be used.
fn digest_finding(digest: DigestType, key_tag: u16) -> Option<Hallazgo> {
    match u8::from(digest) {
        1 => Some(Tipo::AlgoritmoObsoleto.hallazgo(format!(
            "the DS for key {key_tag} uses a SHA-1 digest, which RFC 8624 says MUST NOT be published"
        ))),
        3 => Some(Tipo::AlgoritmoProhibido.hallazgo(format!(
            "the DS for key {key_tag} uses a GOST digest, which RFC 8624 says MUST NOT be used"
        ))),
        _ => None,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The first answer from `addresses` that is NOERROR or NXDOMAIN with AA.
async fn first_answer(
    net: &Net,
    addresses: &[IpAddr],
    name: &Name,
    rtype: RecordType,
) -> Option<Answer> {
    let asked = futures::future::join_all(
        addresses
            .iter()
            .map(|ip| net.authoritative(*ip, name, rtype, true)),
    )
    .await;
    asked.into_iter().flatten().find(|answer| {
        answer.authoritative
            && matches!(answer.rcode, ResponseCode::NoError | ResponseCode::NXDomain)
    })
}

fn addresses_of(servers: &[crate::net::NameServer]) -> Vec<IpAddr> {
    servers
        .iter()
        .flat_map(|server| server.addresses.iter().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

pub async fn estado_dnssec(net: &Net, name: &Name) -> Dnssec {
    let mut hallazgos = Vec::new();
    let mut detalles = Vec::new();
    let zone = net
        .enclosing_zone(name)
        .await
        .unwrap_or_else(|| name.clone());
    let mut result = Dnssec {
        dominio: show(name),
        zona: show(&zone),
        tiene_ds_en_padre: false,
        ds: Vec::new(),
        dnskey_algoritmos: Vec::new(),
        dnskeys: Vec::new(),
        firmas_soa: Vec::new(),
        soa_firmada_valida: None,
        detalles: Vec::new(),
        hallazgos: Vec::new(),
    };
    if &zone != name {
        detalles.push(format!("{} is inside the zone {}", show(name), show(&zone)));
    }

    let zone_servers = async {
        let answer = net.recursive(&zone, RecordType::NS).await.ok()?;
        Some(addresses_of(
            &net.name_servers(ns_hosts(&answer, &zone)).await,
        ))
    };
    let parent_servers = async {
        if zone.is_root() {
            return None;
        }
        let parent = net.enclosing_zone(&zone.base_name()).await?;
        let answer = net.recursive(&parent, RecordType::NS).await.ok()?;
        Some(addresses_of(
            &net.name_servers(ns_hosts(&answer, &parent)).await,
        ))
    };
    let (zone_servers, parent_servers) = tokio::join!(zone_servers, parent_servers);
    let zone_servers = zone_servers.unwrap_or_default();
    let parent_servers = parent_servers.unwrap_or_default();

    let (ds_answer, dnskey_answer, soa_answer) = tokio::join!(
        first_answer(net, &parent_servers, &zone, RecordType::DS),
        first_answer(net, &zone_servers, &zone, RecordType::DNSKEY),
        first_answer(net, &zone_servers, &zone, RecordType::SOA),
    );

    // DS at the parent.
    let ds_set: Vec<DS> = ds_answer
        .iter()
        .flat_map(|answer| answer.rdata(&zone, RecordType::DS))
        .filter_map(|data| match data {
            RData::DNSSEC(DNSSECRData::DS(ds)) => Some(ds.clone()),
            _ => None,
        })
        .collect();
    if ds_answer.is_none() {
        detalles.push(if parent_servers.is_empty() {
            "the parent zone's servers could not be found; DS unknown".to_owned()
        } else {
            "no parent server answered the DS question".to_owned()
        });
    }
    result.tiene_ds_en_padre = !ds_set.is_empty();

    // DNSKEY of the zone.
    let Some(dnskey_answer) = dnskey_answer else {
        detalles.push("no authoritative server of the zone answered".to_owned());
        hallazgos.push(Tipo::DnssecSinRespuesta.hallazgo(format!(
            "no server of {} answered the DNSKEY question",
            show(&zone)
        )));
        result.detalles = detalles;
        result.hallazgos = hallazgos;
        return result;
    };
    let keys: Vec<DNSKEY> = dnskey_answer
        .rdata(&zone, RecordType::DNSKEY)
        .filter_map(|data| match data {
            RData::DNSSEC(DNSSECRData::DNSKEY(key)) => Some(key.clone()),
            _ => None,
        })
        .collect();
    let mut algorithms = BTreeSet::new();
    for key in &keys {
        let algorithm = key.public_key().algorithm();
        let key_tag = key.calculate_key_tag().unwrap_or_default();
        algorithms.insert(algorithm_name(algorithm));
        if let Some(found) = algorithm_finding(algorithm, &format!("the DNSKEY {key_tag}")) {
            hallazgos.push(found);
        }
        result.dnskeys.push(Clave {
            key_tag,
            algoritmo: algorithm_name(algorithm),
            flags: key.flags(),
            sep: key.secure_entry_point(),
        });
    }
    result.dnskey_algoritmos = algorithms.into_iter().collect();
    if dnskey_answer.via_tcp {
        hallazgos.push(Tipo::TcpNecesario.hallazgo(format!(
            "the DNSKEY answer of {} was truncated over UDP and fetched over TCP",
            show(&zone)
        )));
    }

    for ds in &ds_set {
        let coincide = keys
            .iter()
            .any(|key| ds.covers(&zone, key).unwrap_or(false));
        if let Some(found) = digest_finding(ds.digest_type(), ds.key_tag()) {
            hallazgos.push(found);
        }
        // A DS whose algorithm no key shares: the keys' findings do not
        // already cover it.
        let shared = keys
            .iter()
            .any(|k| k.public_key().algorithm() == ds.algorithm());
        if !shared
            && let Some(found) =
                algorithm_finding(ds.algorithm(), &format!("the DS {}", ds.key_tag()))
        {
            hallazgos.push(found);
        }
        result.ds.push(RegistroDs {
            key_tag: ds.key_tag(),
            algoritmo: algorithm_name(ds.algorithm()),
            digest: format!("{:?}", ds.digest_type()),
            coincide,
        });
    }

    match (ds_set.is_empty(), keys.is_empty()) {
        (true, true) => {
            detalles.push("the zone is not signed: no DS at the parent and no DNSKEY".to_owned());
            hallazgos.push(Tipo::DnssecNoFirmado.hallazgo(format!(
                "{} has no DNSKEY and its parent no DS",
                show(&zone)
            )));
            result.detalles = detalles;
            result.hallazgos = hallazgos;
            return result;
        }
        (false, true) => hallazgos.push(Tipo::DsSinDnskey.hallazgo(format!(
            "the parent publishes {} DS records for {} but the zone has no DNSKEY",
            ds_set.len(),
            show(&zone)
        ))),
        (true, false) => {
            if ds_answer.is_some() {
                hallazgos.push(Tipo::DnskeySinDs.hallazgo(format!(
                    "{} is signed but its parent has no DS record",
                    show(&zone)
                )));
            }
        }
        (false, false) => {
            if !result.ds.iter().any(|ds| ds.coincide) {
                hallazgos.push(Tipo::DsNoCoincide.hallazgo(format!(
                    "no DS of {} at the parent matches a DNSKEY of the zone",
                    show(&zone)
                )));
            }
        }
    }

    // The RRSIG over the SOA.
    let Some(soa_answer) = soa_answer else {
        detalles.push("no authoritative server answered the SOA question".to_owned());
        result.detalles = detalles;
        result.hallazgos = hallazgos;
        return result;
    };
    let soa: Vec<Record> = soa_answer
        .records(&zone, RecordType::SOA)
        .cloned()
        .collect();
    let signatures: Vec<RRSIG> = soa_answer
        .rdata(&zone, RecordType::RRSIG)
        .filter_map(|data| match data {
            RData::DNSSEC(DNSSECRData::RRSIG(sig))
                if sig.input().type_covered == RecordType::SOA =>
            {
                Some(sig.clone())
            }
            _ => None,
        })
        .collect();
    if signatures.is_empty() {
        if keys.is_empty() {
            detalles.push("the SOA carries no RRSIG and the zone has no DNSKEY".to_owned());
        } else {
            detalles.push("the SOA carries no RRSIG".to_owned());
            hallazgos.push(Tipo::RrsigAusente.hallazgo(format!(
                "the SOA of {} is not signed although the zone has DNSKEYs",
                show(&zone)
            )));
            result.soa_firmada_valida = Some(false);
        }
        result.detalles = detalles;
        result.hallazgos = hallazgos;
        return result;
    }
    let now = now();
    let mut any_valid = false;
    for signature in &signatures {
        let input = signature.input();
        let key = keys.iter().find(|key| {
            key.calculate_key_tag().ok() == Some(input.key_tag)
                && key.public_key().algorithm() == input.algorithm
        });
        let verifies = match key {
            Some(key) => match key.verify_rrsig(&zone, DNSClass::IN, signature, soa.iter()) {
                Ok(()) => true,
                Err(error) => {
                    detalles.push(format!(
                        "the RRSIG by key {} does not verify: {error}",
                        input.key_tag
                    ));
                    false
                }
            },
            None => {
                detalles.push(format!(
                    "the RRSIG names key {} ({}), which is not in the DNSKEY set",
                    input.key_tag,
                    algorithm_name(input.algorithm)
                ));
                false
            }
        };
        let (inception, expiration) = (input.sig_inception.get(), input.sig_expiration.get());
        let expired = u64::from(expiration) < now;
        let future = u64::from(inception) > now;
        if !verifies {
            hallazgos.push(Tipo::RrsigInvalida.hallazgo(format!(
                "the RRSIG over the SOA of {} by key {} does not verify",
                show(&zone),
                input.key_tag
            )));
        }
        if expired {
            hallazgos.push(Tipo::RrsigExpirada.hallazgo(format!(
                "the RRSIG over the SOA of {} by key {} expired {} s ago (at {expiration})",
                show(&zone),
                input.key_tag,
                now - u64::from(expiration)
            )));
        } else if future {
            hallazgos.push(Tipo::RrsigFutura.hallazgo(format!(
                "the RRSIG over the SOA of {} by key {} is valid only from {inception}, in {} s",
                show(&zone),
                input.key_tag,
                u64::from(inception) - now
            )));
        } else if u64::from(expiration) < now + EXPIRY_WARNING_SECS {
            hallazgos.push(Tipo::RrsigExpiraPronto.hallazgo(format!(
                "the RRSIG over the SOA of {} by key {} expires in {} s",
                show(&zone),
                input.key_tag,
                u64::from(expiration) - now
            )));
        }
        if verifies && !expired && !future {
            any_valid = true;
        }
        result.firmas_soa.push(Firma {
            key_tag: input.key_tag,
            algoritmo: algorithm_name(input.algorithm),
            inicio: inception,
            expira: expiration,
            verifica: verifies,
        });
    }
    detalles.push(if any_valid {
        "an RRSIG over the SOA verifies against the DNSKEY set and is within its validity window"
            .to_owned()
    } else {
        "no RRSIG over the SOA both verifies and is within its validity window".to_owned()
    });
    result.soa_firmada_valida = Some(any_valid);
    result.detalles = detalles;
    result.hallazgos = hallazgos;
    result
}
