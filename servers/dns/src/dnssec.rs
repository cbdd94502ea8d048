//! `estado_dnssec`: a zone's DNSSEC chain at its last link, checked as a
//! validating resolver checks it. The zone is found from the resolver's NS
//! answers, or, when the resolver gives none (a validating resolver answers
//! SERVFAIL for a bogus zone), by walking down from the parent's servers.
//! The DS set is asked of the parent zone's own servers; the DNSKEY set
//! and the signed SOA of the zone's servers, with EDNS0 and the DO bit
//! (TCP when the UDP answer is truncated). Every DS is matched against the
//! keys (key tag, algorithm, digest); the RRSIGs over the DNSKEY set and
//! the SOA are verified with hickory-proto's DNSSEC code and their
//! validity windows checked against the clock (an expired signature still
//! verifies, and is still invalid); the chain holds when a key a DS names
//! signs the DNSKEY set and a key of that set signs the SOA, validly.
//! Algorithms are checked against RFC 8624.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData, DS, RRSIG};
use hickory_proto::dnssec::{Algorithm, DigestType, PublicKey, Verifier};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use schemars::JsonSchema;
use serde::Serialize;

use crate::findings::{Hallazgo, Tipo};
use crate::name::show;
use crate::net::Net;
use crate::query::{Answer, EDNS_PAYLOAD};
use crate::verdict;

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

/// One RRSIG over the SOA or the DNSKEY set.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Firma {
    pub key_tag: u16,
    pub algoritmo: String,
    /// Signature inception and expiration, seconds since the Unix epoch.
    pub inicio: u32,
    pub expira: u32,
    /// The signature verifies against the DNSKEY it names.
    pub verifica: bool,
    /// Now is within its validity window.
    pub vigente: bool,
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
    /// The RRSIGs over the DNSKEY set.
    pub firmas_dnskey: Vec<Firma>,
    /// true: an RRSIG over the SOA verifies and is within its validity
    /// window; false: the zone is signed (or its parent has a DS for it)
    /// but none does; null: the zone is unsigned or could not be reached.
    pub soa_firmada_valida: Option<bool>,
    /// true: the chain of trust holds from the parent's DS through the
    /// DNSKEY set to the SOA (what a validating resolver checks); false: it
    /// breaks (`detalles` says where); null: the parent has no DS for the
    /// zone, or the zone could not be reached.
    pub cadena_valida: Option<bool>,
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

/// Whether validators compute the digest of `ds` (SHA-1, SHA-256, SHA-384):
/// a DS of another digest type is ignored, never a mismatch.
fn digest_checkable(ds: &DS) -> bool {
    matches!(u8::from(ds.digest_type()), 1 | 2 | 4)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A signature time (seconds since the epoch) as an RFC 3339 date.
fn date(seconds: u32) -> String {
    jiff::Timestamp::from_second(i64::from(seconds))
        .map(|time| time.to_string())
        .unwrap_or_else(|_| seconds.to_string())
}

/// Verifies `signature` over an `rrset` of `zone` with the key it
/// names. Key tags are 16-bit hashes and may collide, so every key with the
/// tag and algorithm is tried (RFC 4035 5.3.1); the error says why none
/// verifies.
fn verify(zone: &Name, signature: &RRSIG, rrset: &[Record], keys: &[DNSKEY]) -> Result<(), String> {
    let input = signature.input();
    let named = keys.iter().filter(|key| {
        key.calculate_key_tag().ok() == Some(input.key_tag)
            && key.public_key().algorithm() == input.algorithm
    });
    let mut failures = Vec::new();
    for key in named {
        match key.verify_rrsig(zone, DNSClass::IN, signature, rrset.iter()) {
            Ok(()) => return Ok(()),
            Err(error) => failures.push(error.to_string()),
        }
    }
    if failures.is_empty() {
        Err(format!(
            "the RRSIG names key {} ({}), which is not in the DNSKEY set",
            input.key_tag,
            algorithm_name(input.algorithm)
        ))
    } else {
        Err(format!(
            "the RRSIG by key {} does not verify: {}",
            input.key_tag,
            failures.join("; ")
        ))
    }
}

/// Where the zone is and who serves it.
struct Located {
    zone: Name,
    /// The zone's server addresses.
    servers: Vec<IpAddr>,
    /// The parent's server addresses, when the walk came through them.
    parent_servers: Option<Vec<IpAddr>>,
}

/// The zone that holds `name`: from the resolver, else walked down to. A
/// finding and `None` when the domain does not exist or cannot be found.
async fn locate(net: &Net, name: &Name, result: &mut Dnssec) -> Option<Located> {
    let failed = match net.zone_ns(name).await {
        Ok(Some(found)) if found.nxdomain => {
            result
                .hallazgos
                .push(verdict::nonexistent(net.resolver, name));
            return None;
        }
        Ok(Some(found)) => {
            return Some(Located {
                servers: net.server_addresses(found.hosts).await,
                zone: found.zone,
                parent_servers: None,
            });
        }
        Ok(None) => {
            return Some(Located {
                zone: name.clone(),
                servers: Vec::new(),
                parent_servers: None,
            });
        }
        Err(failed) => failed,
    };
    let (verdict, cut) = tokio::join!(net.judge(&failed), net.cut(name));
    let after = match &cut {
        Ok(_) => {
            "the zone and its keys were found by walking down from its parent's servers".to_owned()
        }
        Err(error) => format!("walking down from the parent zone's servers failed too: {error}"),
    };
    result
        .hallazgos
        .push(verdict.finding(net.resolver, &failed.name, failed.rtype, &after));
    match cut {
        Ok(cut) if cut.nxdomain => {
            result
                .hallazgos
                .push(verdict::nonexistent_at(&cut.zone, name));
            None
        }
        Ok(cut) => Some(Located {
            servers: cut.addresses(),
            zone: cut.zone,
            parent_servers: cut.parent.map(|(_, servers)| servers),
        }),
        Err(error) => {
            result
                .detalles
                .push(format!("the zone was not found: {error}"));
            None
        }
    }
}

/// The RRSIGs over `rtype` in `answer`.
fn signatures(answer: &Answer, zone: &Name, rtype: RecordType) -> Vec<RRSIG> {
    answer
        .rdata(zone, RecordType::RRSIG)
        .filter_map(|data| match data {
            RData::DNSSEC(DNSSECRData::RRSIG(sig)) if sig.input().type_covered == rtype => {
                Some(sig.clone())
            }
            _ => None,
        })
        .collect()
}

/// Checks each of `signatures` over the `rrset` of `zone` (`what` names it
/// in messages): verified against `keys`, its window against `now`. The
/// findings and details go into `result`; the signatures come back checked.
fn check_signatures(
    what: &str,
    zone: &Name,
    signatures: &[RRSIG],
    rrset: &[Record],
    keys: &[DNSKEY],
    now: u64,
    result: &mut Dnssec,
) -> Vec<Firma> {
    let mut checked = Vec::new();
    for signature in signatures {
        let input = signature.input();
        let tag = input.key_tag;
        let verifies = match verify(zone, signature, rrset, keys) {
            Ok(()) => true,
            Err(why) => {
                result.detalles.push(format!("{what}: {why}"));
                false
            }
        };
        let (inception, expiration) = (input.sig_inception.get(), input.sig_expiration.get());
        let expired = u64::from(expiration) < now;
        let future = u64::from(inception) > now;
        if !verifies {
            result.hallazgos.push(Tipo::RrsigInvalida.hallazgo(format!(
                "the RRSIG over {what} of {} by key {tag} does not verify",
                show(zone)
            )));
        }
        if expired {
            result.hallazgos.push(Tipo::RrsigExpirada.hallazgo(format!(
                "the RRSIG over {what} of {} by key {tag} expired on {} ({} s ago)",
                show(zone),
                date(expiration),
                now - u64::from(expiration)
            )));
        } else if future {
            result.hallazgos.push(Tipo::RrsigFutura.hallazgo(format!(
                "the RRSIG over {what} of {} by key {tag} is valid only from {} (in {} s)",
                show(zone),
                date(inception),
                u64::from(inception) - now
            )));
        } else if u64::from(expiration) < now + EXPIRY_WARNING_SECS {
            result
                .hallazgos
                .push(Tipo::RrsigExpiraPronto.hallazgo(format!(
                    "the RRSIG over {what} of {} by key {tag} expires on {} (in {} s)",
                    show(zone),
                    date(expiration),
                    u64::from(expiration) - now
                )));
        }
        let state = match (verifies, expired, future) {
            (false, _, _) => "does not verify",
            (true, true, _) => "verifies but has expired",
            (true, _, true) => "verifies but is not valid yet",
            (true, false, false) => "verifies",
        };
        result.detalles.push(format!(
            "{what} signed by key {tag} ({}), valid from {} to {}: {state}",
            algorithm_name(input.algorithm),
            date(inception),
            date(expiration)
        ));
        checked.push(Firma {
            key_tag: tag,
            algoritmo: algorithm_name(input.algorithm),
            inicio: inception,
            expira: expiration,
            verifica: verifies,
            vigente: !expired && !future,
        });
    }
    checked
}

pub async fn estado_dnssec(net: &Net, name: &Name) -> Dnssec {
    let mut result = Dnssec {
        dominio: show(name),
        zona: show(name),
        tiene_ds_en_padre: false,
        ds: Vec::new(),
        dnskey_algoritmos: Vec::new(),
        dnskeys: Vec::new(),
        firmas_soa: Vec::new(),
        firmas_dnskey: Vec::new(),
        soa_firmada_valida: None,
        cadena_valida: None,
        detalles: Vec::new(),
        hallazgos: Vec::new(),
    };
    // The zone and its servers; then the zone's keys and signed SOA from
    // its servers while the parent's servers are asked for the DS.
    let Some(Located {
        zone,
        servers,
        parent_servers,
    }) = locate(net, name, &mut result).await
    else {
        return result;
    };
    result.zona = show(&zone);
    if &zone != name {
        result
            .detalles
            .push(format!("{} is inside the zone {}", show(name), show(&zone)));
    }
    let good = Answer::is_authoritative_answer;
    let parent_ds = async {
        let parent_servers = match parent_servers {
            Some(known) => known,
            None => net
                .parent_servers(&zone)
                .await
                .map(|(_, servers)| servers)
                .unwrap_or_default(),
        };
        let answer = net
            .first_good(&parent_servers, &zone, RecordType::DS, true, good)
            .await;
        (parent_servers, answer)
    };
    let zone_side = async {
        tokio::join!(
            net.first_good(&servers, &zone, RecordType::DNSKEY, true, good),
            net.first_good(&servers, &zone, RecordType::SOA, true, good),
        )
    };
    let ((parent_servers, ds_answer), (dnskey_answer, soa_answer)) =
        tokio::join!(parent_ds, zone_side);

    let over_tcp: Vec<String> = [
        (RecordType::DS, &ds_answer),
        (RecordType::DNSKEY, &dnskey_answer),
        (RecordType::SOA, &soa_answer),
    ]
    .into_iter()
    .filter(|(_, answer)| answer.as_ref().is_some_and(|answer| answer.via_tcp))
    .map(|(rtype, _)| rtype.to_string())
    .collect();
    if !over_tcp.is_empty() {
        result.hallazgos.push(Tipo::TcpNecesario.hallazgo(format!(
            "the {} answers of {} were truncated over UDP (EDNS0, {EDNS_PAYLOAD} bytes) and fetched over TCP",
            over_tcp.join(", "),
            show(&zone)
        )));
    }

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
        result.detalles.push(if parent_servers.is_empty() {
            "the parent zone's servers could not be found; DS unknown".to_owned()
        } else {
            "no parent server answered the DS question".to_owned()
        });
    }
    result.tiene_ds_en_padre = !ds_set.is_empty();

    // DNSKEY of the zone.
    let Some(dnskey_answer) = dnskey_answer else {
        result
            .detalles
            .push("no authoritative server of the zone answered".to_owned());
        result
            .hallazgos
            .push(Tipo::DnssecSinRespuesta.hallazgo(format!(
                "no server of {} answered the DNSKEY question",
                show(&zone)
            )));
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
            result.hallazgos.push(found);
        }
        result.dnskeys.push(Clave {
            key_tag,
            algoritmo: algorithm_name(algorithm),
            flags: key.flags(),
            sep: key.secure_entry_point(),
        });
    }
    result.dnskey_algoritmos = algorithms.into_iter().collect();

    // Each DS against the keys: the keys a DS names start the chain.
    let parent_name = show(&zone.base_name());
    let mut named_keys: Vec<DNSKEY> = Vec::new();
    for ds in &ds_set {
        let matched = keys
            .iter()
            .find(|key| ds.covers(&zone, key).unwrap_or(false));
        if let Some(found) = digest_finding(ds.digest_type(), ds.key_tag()) {
            result.hallazgos.push(found);
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
            result.hallazgos.push(found);
        }
        let digest = format!("{:?}", ds.digest_type());
        result.detalles.push(match matched {
            None if !digest_checkable(ds) => format!(
                "DS {} ({}, digest type {}) at {parent_name}: a digest type validators do not \
                 implement, so they ignore it",
                ds.key_tag(),
                algorithm_name(ds.algorithm()),
                u8::from(ds.digest_type())
            ),
            Some(key) => format!(
                "DS {} ({}, {digest}) at {parent_name}: matches the DNSKEY {} (flags {})",
                ds.key_tag(),
                algorithm_name(ds.algorithm()),
                ds.key_tag(),
                key.flags()
            ),
            None => format!(
                "DS {} ({}, {digest}) at {parent_name}: matches no DNSKEY of the zone",
                ds.key_tag(),
                algorithm_name(ds.algorithm())
            ),
        });
        if let Some(key) = matched {
            named_keys.push(key.clone());
        }
        result.ds.push(RegistroDs {
            key_tag: ds.key_tag(),
            algoritmo: algorithm_name(ds.algorithm()),
            digest,
            coincide: matched.is_some(),
        });
    }

    match (ds_set.is_empty(), keys.is_empty()) {
        (true, true) => {
            result
                .detalles
                .push("the zone is not signed: no DS at the parent and no DNSKEY".to_owned());
            result
                .hallazgos
                .push(Tipo::DnssecNoFirmado.hallazgo(format!(
                    "{} has no DNSKEY and its parent no DS",
                    show(&zone)
                )));
            return result;
        }
        (false, true) => result.hallazgos.push(Tipo::DsSinDnskey.hallazgo(format!(
            "the parent publishes {} DS records for {} but the zone has no DNSKEY",
            ds_set.len(),
            show(&zone)
        ))),
        (true, false) => {
            if ds_answer.is_some() {
                result.hallazgos.push(Tipo::DnskeySinDs.hallazgo(format!(
                    "{} is signed but its parent has no DS record",
                    show(&zone)
                )));
            }
        }
        (false, false) => {
            if named_keys.is_empty() {
                result.hallazgos.push(Tipo::DsNoCoincide.hallazgo(format!(
                    "no DS of {} at the parent matches a DNSKEY of the zone",
                    show(&zone)
                )));
            } else {
                for ds in result
                    .ds
                    .iter()
                    .zip(&ds_set)
                    .filter(|(shown, ds)| !shown.coincide && digest_checkable(ds))
                    .map(|(shown, _)| shown)
                {
                    result.hallazgos.push(Tipo::DsHuerfano.hallazgo(format!(
                        "the DS {} ({}) of {} at the parent matches no DNSKEY of the zone; \
                         another DS does",
                        ds.key_tag,
                        ds.algoritmo,
                        show(&zone)
                    )));
                }
            }
        }
    }

    // The DNSKEY set's signatures: a key a DS names must sign it.
    let now = now();
    let dnskey_rrset: Vec<Record> = dnskey_answer
        .records(&zone, RecordType::DNSKEY)
        .cloned()
        .collect();
    let dnskey_signatures = signatures(&dnskey_answer, &zone, RecordType::DNSKEY);
    result.firmas_dnskey = check_signatures(
        "the DNSKEY set",
        &zone,
        &dnskey_signatures,
        &dnskey_rrset,
        &keys,
        now,
        &mut result,
    );
    let named_tags: BTreeSet<(u16, u8)> = named_keys
        .iter()
        .filter_map(|key| {
            let tag = key.calculate_key_tag().ok()?;
            Some((tag, u8::from(key.public_key().algorithm())))
        })
        .collect();
    let by_named_key = |firma: &&Firma| {
        dnskey_signatures.iter().any(|signature| {
            let input = signature.input();
            input.key_tag == firma.key_tag
                && named_tags.contains(&(input.key_tag, u8::from(input.algorithm)))
        })
    };
    let keys_trusted = result
        .firmas_dnskey
        .iter()
        .filter(by_named_key)
        .any(|firma| firma.verifica && firma.vigente);
    if !named_keys.is_empty() && !result.firmas_dnskey.iter().any(|f| by_named_key(&f)) {
        let tags: Vec<String> = named_tags.iter().map(|(tag, _)| tag.to_string()).collect();
        result
            .hallazgos
            .push(Tipo::DnskeySinFirmaDs.hallazgo(format!(
                "the DNSKEY set of {} is not signed by the key the DS names ({}): the chain of \
             trust from {parent_name} breaks there",
                show(&zone),
                tags.join(", ")
            )));
    }

    // The RRSIG over the SOA.
    let Some(soa_answer) = soa_answer else {
        result
            .detalles
            .push("no authoritative server answered the SOA question".to_owned());
        return result;
    };
    let soa: Vec<Record> = soa_answer
        .records(&zone, RecordType::SOA)
        .cloned()
        .collect();
    let soa_signatures = signatures(&soa_answer, &zone, RecordType::SOA);
    if soa_signatures.is_empty() {
        // Signed, or said to be by a DS at the parent (an unsigned zone
        // without DS has returned above), yet nothing signs the SOA.
        if keys.is_empty() {
            result
                .detalles
                .push("the SOA carries no RRSIG and the zone has no DNSKEY".to_owned());
        } else {
            result.detalles.push("the SOA carries no RRSIG".to_owned());
            result.hallazgos.push(Tipo::RrsigAusente.hallazgo(format!(
                "the SOA of {} is not signed although the zone has DNSKEYs",
                show(&zone)
            )));
        }
        result.soa_firmada_valida = Some(false);
        result.cadena_valida = (!ds_set.is_empty()).then_some(false);
        return result;
    }
    result.firmas_soa = check_signatures(
        "the SOA",
        &zone,
        &soa_signatures,
        &soa,
        &keys,
        now,
        &mut result,
    );
    let soa_valid = result
        .firmas_soa
        .iter()
        .any(|firma| firma.verifica && firma.vigente);
    result.soa_firmada_valida = Some(soa_valid);
    if !ds_set.is_empty() {
        let holds = !named_keys.is_empty() && keys_trusted && soa_valid;
        result.cadena_valida = Some(holds);
        result.detalles.push(if holds {
            format!(
                "chain of trust: a DS at {parent_name} names a key that validly signs the DNSKEY \
                 set, and a key of that set validly signs the SOA: it holds"
            )
        } else if named_keys.is_empty() {
            "chain of trust: breaks at the DS, which names no key of the zone".to_owned()
        } else if !keys_trusted {
            "chain of trust: breaks at the DNSKEY set, which no key a DS names validly signs"
                .to_owned()
        } else {
            "chain of trust: breaks at the SOA, which no key of the set validly signs".to_owned()
        });
    }
    result
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use hickory_proto::dnssec::crypto::Ed25519SigningKey;
    use hickory_proto::dnssec::{DnssecSigner, SigningKey};
    use hickory_proto::rr::RecordSet;
    use hickory_proto::rr::rdata::SOA;

    use super::*;

    fn dnskey(key: &Ed25519SigningKey) -> DNSKEY {
        DNSKEY::with_flags(257, key.to_public_key().unwrap())
    }

    /// Two Ed25519 keys with the same key tag: about 300 keys are made
    /// before two share one of the 65,536 tags.
    fn colliding_keys() -> (Ed25519SigningKey, Ed25519SigningKey) {
        let mut seen = BTreeMap::new();
        loop {
            let pkcs8 = Ed25519SigningKey::generate_pkcs8().unwrap();
            let key = Ed25519SigningKey::from_pkcs8(&pkcs8).unwrap();
            let tag = dnskey(&key).calculate_key_tag().unwrap();
            if let Some(first) = seen.remove(&tag) {
                return (first, key);
            }
            seen.insert(tag, key);
        }
    }

    #[test]
    fn issue_6_a_signature_verifies_with_any_key_of_its_tag() {
        let zone = Name::from_ascii("collide.test.").unwrap();
        let soa = Record::from_rdata(
            zone.clone(),
            3600,
            RData::SOA(SOA::new(
                Name::from_ascii("ns1.collide.test.").unwrap(),
                Name::from_ascii("hostmaster.collide.test.").unwrap(),
                1,
                7200,
                3600,
                1_209_600,
                3600,
            )),
        );
        let mut rrset = RecordSet::new(zone.clone(), RecordType::SOA, 0);
        rrset.insert(soa.clone(), 0);
        let (first, second) = colliding_keys();
        let keys = [dnskey(&first), dnskey(&second)];
        let signer = DnssecSigner::new(
            keys[1].clone(),
            Box::new(second),
            zone.clone(),
            Duration::from_secs(86_400),
        );
        let now = time::OffsetDateTime::now_utc();
        let signature = RRSIG::from_rrset(&rrset, DNSClass::IN, now, &signer).unwrap();
        let soa = [soa];
        assert_eq!(verify(&zone, &signature, &soa, &keys), Ok(()));
        let only_first = verify(&zone, &signature, &soa, &keys[..1]).unwrap_err();
        assert!(only_first.contains("does not verify"), "{only_first}");
        let none = verify(&zone, &signature, &soa, &[]).unwrap_err();
        assert!(none.contains("not in the DNSKEY set"), "{none}");
    }
}
