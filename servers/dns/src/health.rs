//! `salud_dns`: a zone's health. The four basic types (A, AAAA, NS, SOA) are
//! asked of the recursive resolver and then of every authoritative server
//! directly (each NS name resolved to all its addresses), all at once; the
//! findings compare what each said. The parent's delegation is read from
//! the parent zone's own servers.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use futures::future::join_all;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, RecordType};
use schemars::JsonSchema;
use serde::Serialize;

use crate::alias;
use crate::findings::{Hallazgo, Tipo};
use crate::name::show;
use crate::net::{Failed, NameServer, Net, ns_hosts, rcode_text, soa_owner};
use crate::query::{Answer, QueryError};
use crate::verdict::{self, Verdict};

/// The types `salud_dns` compares, in output order.
const TYPES: [RecordType; 4] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::NS,
    RecordType::SOA,
];

/// The order in which the resolver's failures are reported: the zone's own
/// questions tell most.
const REPORT_ORDER: [RecordType; 4] = [
    RecordType::SOA,
    RecordType::NS,
    RecordType::A,
    RecordType::AAAA,
];

/// TTLs further apart than this factor are unbalanced.
const TTL_RATIO: u32 = 10;

/// Each type's values, as text, by type name (`A`, `AAAA`, `NS`, `SOA`).
pub type Sets = BTreeMap<String, BTreeSet<String>>;

/// What one authoritative server said.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Servidor {
    pub ns: String,
    pub ip: String,
    /// It answered at least one question.
    pub responde: bool,
    /// Every answer carried the AA flag with NOERROR or NXDOMAIN.
    pub autoritativo: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<u32>,
    pub respuestas: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of `salud_dns`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Salud {
    pub dominio: String,
    pub zona: String,
    pub recursivo: Sets,
    pub autoritativo: Sets,
    pub servidores: Vec<Servidor>,
    pub hallazgos: Vec<Hallazgo>,
}

/// The presentation form of a record's data, names without the final dot.
pub fn show_rdata(data: &RData) -> String {
    match data {
        RData::NS(ns) => show(&ns.0),
        RData::CNAME(cname) => show(&cname.0),
        other => other.to_string(),
    }
}

fn values(answer: &Answer, name: &Name, rtype: RecordType) -> BTreeSet<String> {
    answer.rdata(name, rtype).map(show_rdata).collect()
}

/// A random label that no zone should hold.
fn random_label() -> String {
    format!("nexo-{:016x}", rand::random::<u64>())
}

pub async fn salud_dns(net: &Net, name: &Name) -> Salud {
    let mut hallazgos = Vec::new();
    let probe = Name::from_ascii(random_label())
        .and_then(|label| label.append_domain(name))
        .ok();
    let recursive = join_all(TYPES.map(|rtype| net.recursive(name, rtype)));
    let wildcard = async {
        match &probe {
            Some(probe) => Some(net.recursive(probe, RecordType::A).await),
            None => None,
        }
    };
    let www_alias = broken_www(net, name);
    let (recursive, wildcard, www_alias) = tokio::join!(recursive, wildcard, www_alias);
    // The domain's own CNAME, if it is an alias, came in the A and AAAA
    // answers; when the resolver gave none, its zone's servers are asked.
    let apex_answers: Vec<Answer> = join_all(
        TYPES
            .iter()
            .zip(&recursive)
            .filter(|(rtype, _)| matches!(rtype, RecordType::A | RecordType::AAAA))
            .map(|(rtype, result)| net.lookup_after(name, *rtype, result.clone())),
    )
    .await
    .into_iter()
    .flatten()
    .filter(Answer::is_answer)
    .collect();
    let apex_alias = alias::follow(net, name, &apex_answers.iter().collect::<Vec<_>>()).await;

    // What the resolver answered; the questions it gave no answer to, the
    // zone's own (SOA, NS) first, are reported once and draw nothing.
    let mut recursivo = Sets::new();
    for (rtype, result) in TYPES.iter().zip(&recursive) {
        let set = match result {
            Ok(answer) if answer.is_answer() => values(answer, name, *rtype),
            _ => BTreeSet::new(),
        };
        recursivo.insert(rtype.to_string(), set);
    }
    let mut failed: Vec<Failed> = TYPES
        .into_iter()
        .zip(&recursive)
        .filter_map(|(rtype, result)| Failed::unanswered(name, rtype, result))
        .collect();
    failed.sort_by_key(|question| {
        REPORT_ORDER
            .iter()
            .position(|rtype| *rtype == question.rtype)
    });
    let nxdomain = recursive.iter().flatten().any(|answer| answer.denies(name));
    let mut empty = Salud {
        dominio: show(name),
        zona: String::new(),
        recursivo,
        autoritativo: Sets::new(),
        servidores: Vec::new(),
        hallazgos: Vec::new(),
    };
    if nxdomain {
        hallazgos.push(verdict::nonexistent(net.resolver, name));
        empty.hallazgos = hallazgos;
        return empty;
    }

    let Located {
        zone,
        hosts,
        walked,
    } = match locate(
        net,
        name,
        &recursive,
        &failed,
        apex_alias.as_ref(),
        &mut hallazgos,
    )
    .await
    {
        Ok(located) => located,
        Err(zone) => {
            empty.zona = zone.as_ref().map(show).unwrap_or_default();
            hallazgos.extend(aliases(apex_alias, www_alias));
            empty.hallazgos = hallazgos;
            return empty;
        }
    };
    empty.zona = show(&zone);
    let wildcard = match (wildcard, &probe) {
        (Some(first), Some(probe)) => Some(net.lookup_after(probe, RecordType::A, first).await),
        _ => None,
    };
    // A wildcard CNAME to a missing name answers NXDOMAIN, with the CNAME.
    if let Some(Ok(answer)) = wildcard
        && answer.is_answer()
        && probe.as_ref().is_some_and(|probe| !answer.denies(probe))
        && !answer.answers.is_empty()
    {
        let said: Vec<String> = answer.answers.iter().map(|r| show_rdata(&r.data)).collect();
        hallazgos.push(Tipo::Wildcard.hallazgo(format!(
            "the random name {} resolves to {}",
            probe.as_ref().map(show).unwrap_or_default(),
            said.join(", ")
        )));
    }
    hallazgos.extend(aliases(apex_alias, www_alias));
    if hosts.is_empty() {
        hallazgos.push(Tipo::SinNs.hallazgo(format!(
            "the resolver gives no NS records for the zone {}",
            show(&zone)
        )));
        empty.hallazgos = hallazgos;
        return empty;
    }
    // The zone's servers are asked while the parent's delegation is read.
    let (known_servers, known_parent) = match walked {
        Some((servers, parent)) => (Some(servers), Some(parent)),
        None => (None, None),
    };
    let servers_asked = async {
        let servers = match known_servers {
            Some(servers) => servers,
            None => net.name_servers(hosts.iter().cloned()).await,
        };
        let asked = join_all(
            servers
                .iter()
                .flat_map(|server| server.addresses.iter().map(move |ip| (server, *ip)))
                .map(|(server, ip)| ask_server(net, name, server, ip)),
        )
        .await;
        (servers, asked)
    };
    let parent = async {
        match known_parent {
            Some(parent) => parent,
            None => parent_ns(net, &zone).await,
        }
    };
    let ((servers, asked), parent) = tokio::join!(servers_asked, parent);
    check_spread(&servers, &mut hallazgos);
    let servidores: Vec<Servidor> = asked.iter().map(|(servidor, _)| servidor.clone()).collect();
    let good: Vec<&(Servidor, Vec<Option<Answer>>)> = asked
        .iter()
        .filter(|(servidor, _)| servidor.autoritativo)
        .collect();

    for (servidor, _) in &asked {
        if !servidor.responde {
            hallazgos.push(Tipo::DelegacionCojaSinRespuesta.hallazgo(format!(
                "{} ({}) does not answer: {}",
                servidor.ns,
                servidor.ip,
                servidor.error.as_deref().unwrap_or("no answer")
            )));
        } else if !servidor.autoritativo {
            hallazgos.push(Tipo::DelegacionCojaNoAutoritativa.hallazgo(format!(
                "{} ({}) answers but not authoritatively for {}: {}",
                servidor.ns,
                servidor.ip,
                show(&zone),
                servidor.error.as_deref().unwrap_or("no AA flag")
            )));
        }
    }

    // Authoritative answers: union, disagreements, serials, TTLs.
    let mut autoritativo = Sets::new();
    let mut answered: BTreeMap<String, BTreeSet<BTreeSet<String>>> = BTreeMap::new();
    for (index, rtype) in TYPES.iter().enumerate() {
        let key = rtype.to_string();
        let mut union = BTreeSet::new();
        let mut distinct: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        for (servidor, answers) in &good {
            let set: BTreeSet<String> = servidor
                .respuestas
                .get(&key)
                .map(|v| v.iter().cloned().collect())
                .unwrap_or_default();
            if answers.get(index).is_some_and(Option::is_some) {
                distinct.insert(set.clone());
            }
            union.extend(set);
        }
        if *rtype != RecordType::SOA && distinct.len() > 1 {
            let shown: Vec<String> = distinct
                .iter()
                .map(|set| format!("[{}]", set.iter().cloned().collect::<Vec<_>>().join(", ")))
                .collect();
            hallazgos.push(Tipo::AutoritativosDifieren.hallazgo(format!(
                "{key} of {}: the authoritative servers answer {}",
                show(name),
                shown.join(" / ")
            )));
        }
        autoritativo.insert(key.clone(), union);
        answered.insert(key, distinct);
    }
    let serials: BTreeMap<u32, Vec<String>> =
        good.iter().fold(BTreeMap::new(), |mut map, (servidor, _)| {
            if let Some(serial) = servidor.serial {
                map.entry(serial)
                    .or_insert_with(Vec::new)
                    .push(format!("{} ({})", servidor.ns, servidor.ip));
            }
            map
        });
    if serials.len() > 1 {
        let shown: Vec<String> = serials
            .iter()
            .map(|(serial, who)| format!("{serial} at {}", who.join(", ")))
            .collect();
        hallazgos.push(Tipo::SerialSoaDistinto.hallazgo(format!(
            "the SOA serial of {} differs: {}",
            show(&zone),
            shown.join("; ")
        )));
    }
    check_ttls(name, &good, &mut hallazgos);

    // Parent and child NS sets.
    let child: BTreeSet<Name> = good
        .iter()
        .flat_map(|(_, answers)| answers.get(2).and_then(Option::as_ref))
        .flat_map(|answer| ns_hosts(answer, &zone))
        .collect();
    let child = if child.is_empty() {
        hosts.clone()
    } else {
        child
    };
    if let Some((parent_zone, parent_set)) = parent
        && !parent_set.is_empty()
        && parent_set != child
    {
        hallazgos.push(Tipo::NsPadreHijoDistintos.hallazgo(format!(
            "the parent zone {} delegates {} to [{}] but the zone lists [{}]",
            show(&parent_zone),
            show(&zone),
            names(&parent_set),
            names(&child)
        )));
    }

    // Recursive against authoritative: the resolver's answer matches no
    // authoritative server's (when the servers disagree among themselves
    // and the resolver sides with one, the findings above say so).
    if failed.is_empty() {
        for rtype in TYPES {
            let key = rtype.to_string();
            let (Some(rec), Some(auth), Some(sets)) = (
                empty.recursivo.get(&key),
                autoritativo.get(&key),
                answered.get(&key),
            ) else {
                continue;
            };
            if !sets.is_empty() && !sets.contains(rec) {
                hallazgos.push(Tipo::RecursivoDifiere.hallazgo(format!(
                    "{key} of {}: the resolver answers [{}], the authoritative servers [{}]",
                    show(name),
                    rec.iter().cloned().collect::<Vec<_>>().join(", "),
                    auth.iter().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }

    Salud {
        autoritativo,
        servidores,
        hallazgos,
        ..empty
    }
}

/// The zone that holds the domain, the host names of its NS records, and,
/// when it was walked down to, its servers and the parent's delegation.
struct Located {
    zone: Name,
    hosts: BTreeSet<Name>,
    walked: Option<(Vec<NameServer>, Option<Delegation>)>,
}

/// A parent zone and the NS set it delegates the zone to.
type Delegation = (Name, BTreeSet<Name>);

/// Where the domain's zone is: from the resolver when it answered the SOA
/// and NS questions; otherwise walked down from the parent zone's servers,
/// never concluded from the failure. The resolver's finding, if any, goes
/// into `hallazgos`. `Err` ends the call, with the zone when one is known:
/// the walk failed too, or the zone's servers deny the domain. A SERVFAIL
/// for a name whose CNAME chain breaks is about the chain's last name
/// (RFC 6604): `alias` then says it, not the resolver's finding.
async fn locate(
    net: &Net,
    name: &Name,
    recursive: &[Result<Answer, QueryError>],
    failed: &[Failed],
    alias: Option<&alias::Broken>,
    hallazgos: &mut Vec<Hallazgo>,
) -> Result<Located, Option<Name>> {
    let zone_answered = failed
        .iter()
        .all(|question| !matches!(question.rtype, RecordType::SOA | RecordType::NS));
    let walked = async {
        if zone_answered {
            None
        } else {
            Some(net.cut(name).await)
        }
    };
    let (verdict, walked) = tokio::join!(
        async {
            match failed.first() {
                Some(first) => Some(net.judge(first).await),
                None => None,
            }
        },
        walked
    );
    let after = match &walked {
        Some(Ok(cut)) => format!(
            "the zone's data below comes from its authoritative servers, found by walking down \
             from the servers of {}",
            cut.parent
                .as_ref()
                .map_or_else(|| "the root".to_owned(), |(parent, _)| show(parent))
        ),
        Some(Err(error)) => {
            format!("walking down from the parent zone's servers failed too: {error}")
        }
        None => String::new(),
    };
    if let (Some(verdict), Some(first)) = (&verdict, failed.first())
        && !(alias.is_some() && matches!(verdict, Verdict::ServFail))
    {
        hallazgos.push(verdict.finding(net.resolver, &first.name, first.rtype, &after));
    }
    match walked {
        Some(Err(_)) => Err(None),
        Some(Ok(cut)) if cut.nxdomain => {
            hallazgos.push(verdict::nonexistent_at(&cut.zone, name));
            Err(Some(cut.zone))
        }
        Some(Ok(cut)) => {
            let parent = cut
                .parent
                .as_ref()
                .map(|(parent, _)| (parent.clone(), cut.delegated.clone()));
            // A server the referral gave no glue for, and whose address
            // the resolver did not give, is looked up in its own zone.
            let servers = join_all(cut.servers.into_iter().map(|server| async move {
                if !server.addresses.is_empty() {
                    return server;
                }
                let addresses = net.addresses(&server.host).await;
                NameServer {
                    addresses,
                    ..server
                }
            }))
            .await;
            Ok(Located {
                zone: cut.zone,
                hosts: cut.delegated,
                walked: Some((servers, parent)),
            })
        }
        None => {
            // The owner of the SOA the resolver gave, walking up only
            // when its answer held none.
            let zone = match recursive.get(3) {
                Some(Ok(answer)) => match soa_owner(answer) {
                    Some(owner) => Some(owner),
                    None => net.enclosing_zone(&name.base_name()).await,
                },
                _ => None,
            }
            .unwrap_or_else(|| name.clone());
            let ns_answer = if &zone == name {
                recursive.get(2).and_then(|r| r.as_ref().ok()).cloned()
            } else {
                net.recursive(&zone, RecordType::NS)
                    .await
                    .ok()
                    .filter(Answer::is_answer)
            };
            let hosts = ns_answer
                .as_ref()
                .map(|answer| ns_hosts(answer, &zone))
                .unwrap_or_default();
            Ok(Located {
                zone,
                hosts,
                walked: None,
            })
        }
    }
}

fn names(set: &BTreeSet<Name>) -> String {
    set.iter().map(show).collect::<Vec<_>>().join(", ")
}

/// Asks one server the four questions at once.
async fn ask_server(
    net: &Net,
    name: &Name,
    server: &NameServer,
    ip: IpAddr,
) -> (Servidor, Vec<Option<Answer>>) {
    let results: Vec<Result<Answer, QueryError>> =
        join_all(TYPES.map(|rtype| net.authoritative(ip, name, rtype, false))).await;
    let mut respuestas = BTreeMap::new();
    let mut error = None;
    let mut responde = false;
    let mut autoritativo = true;
    let mut serial = None;
    let mut answers = Vec::new();
    for (rtype, result) in TYPES.iter().zip(results) {
        match result {
            Ok(answer) => {
                responde = true;
                if !answer.is_authoritative_answer() {
                    autoritativo = false;
                    error.get_or_insert_with(|| {
                        format!(
                            "{rtype}: {}{}",
                            rcode_text(answer.rcode),
                            if answer.authoritative {
                                ""
                            } else {
                                " without the AA flag"
                            }
                        )
                    });
                }
                if *rtype == RecordType::SOA {
                    serial = answer
                        .rdata(name, RecordType::SOA)
                        .find_map(|data| match data {
                            RData::SOA(soa) => Some(soa.serial),
                            _ => None,
                        });
                }
                respuestas.insert(
                    rtype.to_string(),
                    values(&answer, name, *rtype).into_iter().collect(),
                );
                answers.push(Some(answer));
            }
            Err(failure) => {
                autoritativo = false;
                error.get_or_insert_with(|| format!("{rtype}: {failure}"));
                answers.push(None);
            }
        }
    }
    let servidor = Servidor {
        ns: show(&server.host),
        ip: ip.to_string(),
        responde,
        autoritativo: responde && autoritativo,
        serial,
        respuestas,
        error,
    };
    (servidor, answers)
}

/// The NS set the parent zone delegates `zone` to, asked of all the
/// parent's own servers at once (the first to answer NOERROR is taken: a
/// referral carries no AA flag).
async fn parent_ns(net: &Net, zone: &Name) -> Option<Delegation> {
    let (parent, parent_servers) = net.parent_servers(zone).await?;
    let answer = net
        .first_good(&parent_servers, zone, RecordType::NS, false, |answer| {
            answer.rcode == ResponseCode::NoError
        })
        .await?;
    Some((parent, ns_hosts(&answer, zone)))
}

/// One NS, or every address in one /24 (IPv4) and one /48 (IPv6).
fn check_spread(servers: &[NameServer], hallazgos: &mut Vec<Hallazgo>) {
    for server in servers.iter().filter(|server| server.addresses.is_empty()) {
        hallazgos.push(Tipo::NsSinDireccion.hallazgo(format!(
            "the name server {} has no A or AAAA record",
            show(&server.host)
        )));
    }
    if servers.len() == 1 {
        hallazgos.push(Tipo::NsUnico.hallazgo(format!(
            "the zone has a single name server, {}",
            servers.first().map(|s| show(&s.host)).unwrap_or_default()
        )));
        return;
    }
    let addresses: Vec<IpAddr> = servers
        .iter()
        .flat_map(|s| s.addresses.iter().copied())
        .collect();
    let networks: BTreeSet<String> = addresses
        .iter()
        .map(|ip| match ip {
            IpAddr::V4(v4) => {
                let [a, b, c, _] = v4.octets();
                format!("{a}.{b}.{c}.0/24")
            }
            IpAddr::V6(v6) => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
            }
        })
        .collect();
    let families: BTreeSet<bool> = addresses.iter().map(IpAddr::is_ipv4).collect();
    if addresses.len() > 1 && networks.len() == families.len() {
        hallazgos.push(Tipo::NsMismaRed.hallazgo(format!(
            "every name server address is in {}",
            networks.into_iter().collect::<Vec<_>>().join(" and ")
        )));
    }
}

/// Unbalanced TTLs across the zone's RRsets, and one RRset's TTL differing
/// between servers.
fn check_ttls(
    name: &Name,
    good: &[&(Servidor, Vec<Option<Answer>>)],
    hallazgos: &mut Vec<Hallazgo>,
) {
    let mut per_type: BTreeMap<RecordType, BTreeSet<u32>> = BTreeMap::new();
    for (_, answers) in good {
        for (rtype, answer) in TYPES.iter().zip(answers) {
            let Some(answer) = answer else { continue };
            if let Some(record) = answer.records(name, *rtype).next() {
                per_type.entry(*rtype).or_default().insert(record.ttl);
            }
        }
    }
    for (rtype, ttls) in &per_type {
        if ttls.len() > 1 {
            hallazgos.push(Tipo::TtlInconsistente.hallazgo(format!(
                "{rtype} of {} has TTLs {} on different servers",
                show(name),
                ttls.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let all: Vec<(RecordType, u32)> = per_type
        .iter()
        .flat_map(|(rtype, ttls)| ttls.iter().map(move |ttl| (*rtype, *ttl)))
        .collect();
    let min = all.iter().min_by_key(|(_, ttl)| *ttl);
    let max = all.iter().max_by_key(|(_, ttl)| *ttl);
    if let (Some((min_type, min)), Some((max_type, max))) = (min, max)
        && u64::from(*max) > u64::from(*min) * u64::from(TTL_RATIO)
    {
        hallazgos.push(Tipo::TtlDesbalanceado.hallazgo(format!(
            "TTLs of {} range from {min} s ({min_type}) to {max} s ({max_type})",
            show(name)
        )));
    }
}

/// The findings of the domain's own chain and of its www's, when broken.
fn aliases(apex: Option<alias::Broken>, www: Option<Hallazgo>) -> impl Iterator<Item = Hallazgo> {
    apex.map(|broken| broken.finding()).into_iter().chain(www)
}

/// A broken CNAME chain at `www` under `name`: its CNAME asked (no other
/// question of this call holds it), then followed.
async fn broken_www(net: &Net, name: &Name) -> Option<Hallazgo> {
    let www = Name::from_ascii("www")
        .and_then(|www| www.append_domain(name))
        .ok()?;
    let answer = net
        .lookup(&www, RecordType::CNAME)
        .await
        .ok()
        .filter(Answer::is_answer)?;
    Some(alias::follow(net, &www, &[&answer]).await?.finding())
}
