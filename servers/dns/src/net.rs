//! The questions every tool asks, on top of [`query::ask`]: of the recursive
//! resolver, of a zone's authoritative servers (at the configured port), and
//! the small walks built from them (a host's addresses, a zone's servers, the
//! zone that encloses a name).
//!
//! A [`Net`] serves one tool call ([`Net::for_call`]): it remembers that the
//! resolver did not answer or refused (and asks it nothing more in that
//! call, rather than waiting out the timeout question after question), and
//! the zone cuts it found by walking down from the parents' servers
//! (`walk.rs`). [`Net::lookup`] is the resolver's answer when it gives
//! one, and otherwise the answer of the name's own authoritative servers:
//! a resolver that fails (SERVFAIL on bogus DNSSEC, REFUSED, silence) hides
//! nothing of the zone's data from the tools.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::join_all;
use futures::stream::FuturesUnordered;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use crate::query::{self, Answer, Ask, QueryError};
use crate::walk::Cut;

/// The root servers' IPv4 addresses (a.root-servers.net to
/// m.root-servers.net, IANA's root hints): where a walk starts when the
/// resolver names no zone above the domain, not even the root.
pub const ROOT_HINTS: [Ipv4Addr; 13] = [
    Ipv4Addr::new(198, 41, 0, 4),
    Ipv4Addr::new(170, 247, 170, 2),
    Ipv4Addr::new(192, 33, 4, 12),
    Ipv4Addr::new(199, 7, 91, 13),
    Ipv4Addr::new(192, 203, 230, 10),
    Ipv4Addr::new(192, 5, 5, 241),
    Ipv4Addr::new(192, 112, 36, 4),
    Ipv4Addr::new(198, 97, 190, 53),
    Ipv4Addr::new(192, 36, 148, 17),
    Ipv4Addr::new(192, 58, 128, 30),
    Ipv4Addr::new(193, 0, 14, 129),
    Ipv4Addr::new(199, 7, 83, 42),
    Ipv4Addr::new(202, 12, 27, 33),
];

/// Where and how to ask, and what one call has learnt so far.
#[derive(Debug, Clone)]
pub struct Net {
    /// The recursive resolver.
    pub resolver: SocketAddr,
    /// The port authoritative servers are asked on (53 but in test beds).
    pub auth_port: u16,
    /// How long to wait for each answer.
    pub timeout: Duration,
    /// The root servers a walk starts from when the resolver names none.
    pub roots: Vec<IpAddr>,
    call: Arc<Call>,
}

/// What one tool call has learnt about the resolver and the zone cuts.
#[derive(Debug, Default)]
struct Call {
    /// Why the resolver is not asked again in this call: it did not
    /// answer, or refused.
    resolver_down: Mutex<Option<QueryError>>,
    /// Zone cuts found by walking, deepest last.
    cuts: tokio::sync::Mutex<Vec<Cut>>,
}

/// A host as the resolver sees it: its addresses and, when it is an alias,
/// the target of its CNAME.
#[derive(Debug, Clone)]
pub struct Host {
    pub addresses: Vec<IpAddr>,
    pub alias: Option<Name>,
}

/// A name server of a zone: its name and addresses.
#[derive(Debug, Clone)]
pub struct NameServer {
    pub host: Name,
    pub addresses: Vec<IpAddr>,
}

impl Net {
    /// How to reach `resolver` and authoritative servers on `auth_port`.
    pub fn new(
        resolver: SocketAddr,
        auth_port: u16,
        timeout: Duration,
        roots: Vec<IpAddr>,
    ) -> Self {
        Self {
            resolver,
            auth_port,
            timeout,
            roots,
            call: Arc::default(),
        }
    }

    /// The same, for a new call: nothing learnt yet.
    pub fn for_call(&self) -> Self {
        Self {
            call: Arc::default(),
            ..self.clone()
        }
    }

    /// Asks the recursive resolver, unless it already failed to answer or
    /// refused in this call: then that failure again, at once.
    pub async fn recursive(&self, name: &Name, rtype: RecordType) -> Result<Answer, QueryError> {
        if let Some(down) = self.resolver_down() {
            return Err(down);
        }
        let result = self.recursive_at(self.resolver, name, rtype).await;
        let down = match &result {
            Err(error) => Some(error.clone()),
            Ok(answer) if answer.rcode == ResponseCode::Refused => {
                Some(QueryError::Refused(self.resolver))
            }
            Ok(_) => None,
        };
        if let (Some(down), Ok(mut remembered)) = (down, self.call.resolver_down.lock()) {
            remembered.get_or_insert(down);
        }
        result
    }

    /// Why the resolver is no longer asked in this call, if it is not.
    fn resolver_down(&self) -> Option<QueryError> {
        self.call.resolver_down.lock().ok()?.clone()
    }

    /// Asks the resolver at `server`.
    pub async fn recursive_at(
        &self,
        server: SocketAddr,
        name: &Name,
        rtype: RecordType,
    ) -> Result<Answer, QueryError> {
        self.ask_resolver(server, name, rtype, false).await
    }

    /// Asks the resolver at `server` with checking disabled (CD): a
    /// validating resolver then answers with data it judges bogus.
    pub async fn unchecked_at(
        &self,
        server: SocketAddr,
        name: &Name,
        rtype: RecordType,
    ) -> Result<Answer, QueryError> {
        self.ask_resolver(server, name, rtype, true).await
    }

    async fn ask_resolver(
        &self,
        server: SocketAddr,
        name: &Name,
        rtype: RecordType,
        checking_disabled: bool,
    ) -> Result<Answer, QueryError> {
        let how = Ask {
            recursive: true,
            dnssec: false,
            checking_disabled,
            timeout: self.timeout,
        };
        query::ask(server, name, rtype, how).await
    }

    /// The resolver's answer, or, when it gives none (SERVFAIL, REFUSED,
    /// silence), the answer of the authoritative servers of the zone that
    /// holds `name`, found by walking down from its parents' servers.
    pub async fn lookup(&self, name: &Name, rtype: RecordType) -> Result<Answer, QueryError> {
        let first = self.recursive(name, rtype).await;
        self.lookup_after(name, rtype, first).await
    }

    /// [`Net::lookup`] when the resolver was already asked and said `first`.
    pub async fn lookup_after(
        &self,
        name: &Name,
        rtype: RecordType,
        first: Result<Answer, QueryError>,
    ) -> Result<Answer, QueryError> {
        if first.as_ref().is_ok_and(Answer::is_answer) {
            return first;
        }
        let answer = self.answer_after(name, rtype, first).await?;
        Ok(self.complete(name, rtype, answer).await)
    }

    /// A CNAME chain followed where `answer`, from a zone's own servers,
    /// stops short of its end, as a resolver would have followed it: an
    /// authoritative server gives its own zone's part of a chain only. The
    /// answers of each next name are added to `answer`, whose code becomes
    /// theirs (it is about the chain's last name); a name nobody answers for
    /// ends the chain where it is.
    async fn complete(&self, name: &Name, rtype: RecordType, mut answer: Answer) -> Answer {
        // Each round reads one more name of the chain at least.
        for _ in 0..=crate::query::MAX_CHAIN {
            let chain = answer.chain(name);
            let stopped = chain.is_alias()
                && !chain.looped()
                && answer.rcode == ResponseCode::NoError
                && answer.resolved(name, rtype).next().is_none();
            if !stopped {
                break;
            }
            let end = chain.end().clone();
            let first = self.recursive(&end, rtype).await;
            match self.answer_after(&end, rtype, first).await {
                Ok(next) if next.is_answer() => {
                    answer.rcode = next.rcode;
                    answer.answers.extend(next.answers);
                }
                _ => break,
            }
            // The end answered with no more of the chain: NODATA there.
            if answer.chain(name).links() == chain.links() {
                break;
            }
        }
        answer
    }

    /// The resolver's answer `first` when it is one, else the answer of the
    /// servers of the zone that holds `name`.
    async fn answer_after(
        &self,
        name: &Name,
        rtype: RecordType,
        first: Result<Answer, QueryError>,
    ) -> Result<Answer, QueryError> {
        if first.as_ref().is_ok_and(Answer::is_answer) {
            return first;
        }
        let Ok(known) = self.cut(name).await else {
            return first;
        };
        if let Some(answer) = self.ask_zone(&known, name, rtype).await {
            return Ok(answer);
        }
        // The cut this call knew may lie above a deeper one: walk anew.
        match self.walk(name).await {
            Ok(cut) if cut.zone != known.zone => {
                let answer = self.ask_zone(&cut, name, rtype).await;
                self.call.cuts.lock().await.push(cut);
                match answer {
                    Some(answer) => Ok(answer),
                    None => first,
                }
            }
            _ => first,
        }
    }

    /// The first authoritative answer of the servers of `cut`.
    async fn ask_zone(&self, cut: &Cut, name: &Name, rtype: RecordType) -> Option<Answer> {
        self.first_good(
            &cut.addresses(),
            name,
            rtype,
            false,
            Answer::is_authoritative_answer,
        )
        .await
    }

    /// The zone cut above `name`: one this call found already, else a new
    /// walk.
    pub async fn cut(&self, name: &Name) -> Result<Cut, crate::walk::WalkError> {
        let mut cuts = self.call.cuts.lock().await;
        if let Some(known) = cuts
            .iter()
            .filter(|cut| cut.zone.zone_of(name) && !cut.nxdomain)
            .max_by_key(|cut| cut.zone.num_labels())
        {
            return Ok(known.clone());
        }
        let cut = self.walk(name).await?;
        cuts.push(cut.clone());
        Ok(cut)
    }

    /// Asks an authoritative server at `address`, with or without DNSSEC
    /// records.
    pub async fn authoritative(
        &self,
        address: IpAddr,
        name: &Name,
        rtype: RecordType,
        dnssec: bool,
    ) -> Result<Answer, QueryError> {
        let how = Ask {
            recursive: false,
            dnssec,
            checking_disabled: dnssec,
            timeout: self.timeout,
        };
        query::ask(SocketAddr::new(address, self.auth_port), name, rtype, how).await
    }

    /// The addresses of `host` (A and AAAA, asked together), following
    /// CNAMEs as the resolver does, and its CNAME target, which those
    /// answers carry when it is an alias. No addresses when there are none
    /// or neither the resolver nor the host's zone answers.
    pub async fn host(&self, host: &Name) -> Host {
        let (a, aaaa) = tokio::join!(
            self.lookup(host, RecordType::A),
            self.lookup(host, RecordType::AAAA)
        );
        let answers: Vec<Answer> = [a, aaaa].into_iter().flatten().collect();
        let alias = answers.iter().find_map(|answer| answer.alias_target(host));
        let addresses = answers
            .iter()
            .flat_map(|answer| &answer.answers)
            .filter_map(address_of)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Host { addresses, alias }
    }

    /// The addresses of `host` as the resolver alone gives them.
    pub async fn resolved_addresses(&self, host: &Name) -> Vec<IpAddr> {
        let (a, aaaa) = tokio::join!(
            self.recursive(host, RecordType::A),
            self.recursive(host, RecordType::AAAA)
        );
        [a, aaaa]
            .iter()
            .flatten()
            .flat_map(|answer| &answer.answers)
            .filter_map(address_of)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The addresses of `host`, as [`Net::host`] finds them.
    pub async fn addresses(&self, host: &Name) -> Vec<IpAddr> {
        self.host(host).await.addresses
    }

    /// Each of `hosts` with its addresses, resolved concurrently.
    pub async fn name_servers(&self, hosts: impl IntoIterator<Item = Name>) -> Vec<NameServer> {
        join_all(hosts.into_iter().map(|host| async move {
            let addresses = self.addresses(&host).await;
            NameServer { host, addresses }
        }))
        .await
    }

    /// The addresses of `hosts`, each once, sorted.
    pub async fn server_addresses(&self, hosts: impl IntoIterator<Item = Name>) -> Vec<IpAddr> {
        self.name_servers(hosts)
            .await
            .iter()
            .flat_map(|server| server.addresses.iter().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The parent of `zone` and the addresses of its servers: where the
    /// delegation of `zone` (its NS set and DS records) is read. `None`
    /// for the root, or when the parent or its servers cannot be found
    /// (the resolver not answering included).
    pub async fn parent_servers(&self, zone: &Name) -> Option<(Name, Vec<IpAddr>)> {
        if zone.is_root() {
            return None;
        }
        let parent = self.zone_ns(&zone.base_name()).await.ok()??;
        Some((parent.zone, self.server_addresses(parent.hosts).await))
    }

    /// The zone that holds `name` (the nearest enclosing zone cut), from the
    /// SOA the resolver gives: in the answer when `name` is itself a zone
    /// apex, in the authority section otherwise. It walks up only past
    /// answers without an SOA: a resolver that does not answer (or answers
    /// SERVFAIL or REFUSED) is not asked again, label after label.
    pub async fn enclosing_zone(&self, name: &Name) -> Option<Name> {
        let mut candidate = name.clone();
        loop {
            let answer = self
                .recursive(&candidate, RecordType::SOA)
                .await
                .ok()
                .filter(Answer::is_answer)?;
            if let Some(owner) = soa_owner(&answer) {
                return Some(owner);
            }
            if candidate.is_root() {
                return None;
            }
            candidate = candidate.base_name();
        }
    }

    /// The zone that holds `name` and the host names of its NS records. One
    /// question when `name` is a zone apex (its NS records), two otherwise
    /// (the SOA owner in the authority section, then that zone's NS).
    /// `Ok(None)` when no zone is found. When the resolver gives no answer
    /// (silence, or a code other than NOERROR and NXDOMAIN), the failed
    /// question and what it got: nothing is concluded from it, and it is
    /// not asked again label after label.
    pub async fn zone_ns(&self, name: &Name) -> Result<Option<ZoneNs>, Failed> {
        let mut candidate = name.clone();
        let mut nxdomain = None;
        loop {
            let answer = self.answered(&candidate, RecordType::NS).await?;
            let nxdomain = *nxdomain.get_or_insert(answer.denies(&candidate));
            let hosts = ns_hosts(&answer, &candidate);
            if !hosts.is_empty() {
                return Ok(Some(ZoneNs {
                    zone: candidate,
                    hosts,
                    nxdomain,
                }));
            }
            if let Some(zone) = soa_owner(&answer) {
                if zone == candidate {
                    return Ok(Some(ZoneNs {
                        zone,
                        hosts,
                        nxdomain,
                    }));
                }
                let answer = self.answered(&zone, RecordType::NS).await?;
                let hosts = ns_hosts(&answer, &zone);
                return Ok(Some(ZoneNs {
                    zone,
                    hosts,
                    nxdomain,
                }));
            }
            if candidate.is_root() || answer.denies(&candidate) {
                return Ok(None);
            }
            candidate = candidate.base_name();
        }
    }

    /// The resolver's answer (NOERROR or NXDOMAIN), or the question and
    /// what it got instead.
    async fn answered(&self, name: &Name, rtype: RecordType) -> Result<Answer, Failed> {
        match self.recursive(name, rtype).await {
            Ok(answer) if answer.is_answer() => Ok(answer),
            result => Err(Failed {
                name: name.clone(),
                rtype,
                result,
            }),
        }
    }

    /// Asks every one of `addresses` at once (without recursion) and gives
    /// the first answer that `good` accepts, as soon as it arrives: a
    /// server that does not answer costs nothing when another does.
    pub async fn first_good(
        &self,
        addresses: &[IpAddr],
        name: &Name,
        rtype: RecordType,
        dnssec: bool,
        good: impl Fn(&Answer) -> bool,
    ) -> Option<Answer> {
        let mut pending: FuturesUnordered<_> = addresses
            .iter()
            .map(|ip| self.authoritative(*ip, name, rtype, dnssec))
            .collect();
        while let Some(result) = pending.next().await {
            if let Ok(answer) = result
                && good(&answer)
            {
                return Some(answer);
            }
        }
        None
    }
}

/// The zone that holds a name, as the resolver gives it.
#[derive(Debug, Clone)]
pub struct ZoneNs {
    pub zone: Name,
    /// The host names of the zone's NS records.
    pub hosts: BTreeSet<Name>,
    /// The resolver answered NXDOMAIN for the name itself.
    pub nxdomain: bool,
}

/// A question the resolver gave no answer to, and what it got instead.
#[derive(Debug, Clone)]
pub struct Failed {
    pub name: Name,
    pub rtype: RecordType,
    pub result: Result<Answer, QueryError>,
}

impl Failed {
    /// The question, when `result` is no answer (neither NOERROR nor
    /// NXDOMAIN).
    pub fn unanswered(
        name: &Name,
        rtype: RecordType,
        result: &Result<Answer, QueryError>,
    ) -> Option<Self> {
        (!result.as_ref().is_ok_and(Answer::is_answer)).then(|| Self {
            name: name.clone(),
            rtype,
            result: result.clone(),
        })
    }
}

/// The address an A or AAAA record holds.
pub fn address_of(record: &Record) -> Option<IpAddr> {
    match &record.data {
        RData::A(a) => Some(IpAddr::V4(a.0)),
        RData::AAAA(aaaa) => Some(IpAddr::V6(aaaa.0)),
        _ => None,
    }
}

/// The owner of the SOA record in `answer`: the zone apex, found in the
/// answer section when the question was the apex, in the authority section
/// otherwise.
pub fn soa_owner(answer: &Answer) -> Option<Name> {
    answer
        .answers
        .iter()
        .chain(&answer.authorities)
        .find(|record| record.record_type() == RecordType::SOA)
        .map(|record| record.name.to_lowercase())
}

/// The host names of the NS records in `answer` owned by `zone`, from the
/// answer section or, in a referral, the authority section.
pub fn ns_hosts(answer: &Answer, zone: &Name) -> BTreeSet<Name> {
    answer
        .answers
        .iter()
        .chain(&answer.authorities)
        .filter(|record| &record.name.to_lowercase() == zone)
        .filter_map(|record| match &record.data {
            RData::NS(ns) => Some(ns.0.to_lowercase()),
            _ => None,
        })
        .collect()
}

/// A response code by its mnemonic (RFC 1035, RFC 2136): `NXDOMAIN`,
/// `SERVFAIL`..., `RCODE<n>` for the rest.
pub fn rcode_text(rcode: ResponseCode) -> String {
    let mnemonic = match rcode {
        ResponseCode::NoError => "NOERROR",
        ResponseCode::FormErr => "FORMERR",
        ResponseCode::ServFail => "SERVFAIL",
        ResponseCode::NXDomain => "NXDOMAIN",
        ResponseCode::NotImp => "NOTIMP",
        ResponseCode::Refused => "REFUSED",
        ResponseCode::YXDomain => "YXDOMAIN",
        ResponseCode::YXRRSet => "YXRRSET",
        ResponseCode::NXRRSet => "NXRRSET",
        ResponseCode::NotAuth => "NOTAUTH",
        ResponseCode::NotZone => "NOTZONE",
        other => return format!("RCODE{}", u16::from(other)),
    };
    mnemonic.to_owned()
}
