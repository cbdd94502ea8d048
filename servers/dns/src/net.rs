//! The questions every tool asks, on top of [`query::ask`]: of the recursive
//! resolver, of a zone's authoritative servers (at the configured port), and
//! the small walks built from them (a host's addresses, a zone's servers, the
//! zone that encloses a name).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures::StreamExt;
use futures::future::join_all;
use futures::stream::FuturesUnordered;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, RecordType};

use crate::query::{self, Answer, Ask, QueryError};

/// Where and how to ask.
#[derive(Debug, Clone)]
pub struct Net {
    /// The recursive resolver.
    pub resolver: SocketAddr,
    /// The port authoritative servers are asked on (53 but in test beds).
    pub auth_port: u16,
    /// How long to wait for each answer.
    pub timeout: Duration,
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
    /// Asks the recursive resolver.
    pub async fn recursive(&self, name: &Name, rtype: RecordType) -> Result<Answer, QueryError> {
        self.recursive_at(self.resolver, name, rtype).await
    }

    /// Asks the resolver at `server`.
    pub async fn recursive_at(
        &self,
        server: SocketAddr,
        name: &Name,
        rtype: RecordType,
    ) -> Result<Answer, QueryError> {
        let how = Ask {
            recursive: true,
            dnssec: false,
            timeout: self.timeout,
        };
        query::ask(server, name, rtype, how).await
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
            timeout: self.timeout,
        };
        query::ask(SocketAddr::new(address, self.auth_port), name, rtype, how).await
    }

    /// The addresses of `host` (A and AAAA, asked together), following
    /// CNAMEs as the resolver does, and its CNAME target, which those
    /// answers carry when it is an alias. No addresses when there are none
    /// or the resolver fails.
    pub async fn host(&self, host: &Name) -> Host {
        let (a, aaaa) = tokio::join!(
            self.recursive(host, RecordType::A),
            self.recursive(host, RecordType::AAAA)
        );
        let answers: Vec<Answer> = [a, aaaa].into_iter().flatten().collect();
        let alias = answers.iter().find_map(|answer| answer.alias_target(host));
        let addresses = answers
            .iter()
            .flat_map(|answer| &answer.answers)
            .filter_map(|record| match &record.data {
                RData::A(a) => Some(IpAddr::V4(a.0)),
                RData::AAAA(aaaa) => Some(IpAddr::V6(aaaa.0)),
                _ => None,
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Host { addresses, alias }
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
        let (parent, hosts) = self.zone_ns(&zone.base_name()).await.ok()??;
        Some((parent, self.server_addresses(hosts).await))
    }

    /// The zone that holds `name` (the nearest enclosing zone cut), from the
    /// SOA the resolver gives: in the answer when `name` is itself a zone
    /// apex, in the authority section otherwise. It walks up only past
    /// answers without an SOA: a resolver that does not answer is not asked
    /// again, label after label, each time waiting out the timeout.
    pub async fn enclosing_zone(&self, name: &Name) -> Option<Name> {
        let mut candidate = name.clone();
        loop {
            let answer = self.recursive(&candidate, RecordType::SOA).await.ok()?;
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
    /// `Ok(None)` when no zone is found; an error when the resolver does not
    /// answer (then it is not asked again, label after label).
    pub async fn zone_ns(&self, name: &Name) -> Result<Option<(Name, BTreeSet<Name>)>, QueryError> {
        let mut candidate = name.clone();
        loop {
            let answer = self.recursive(&candidate, RecordType::NS).await?;
            let hosts = ns_hosts(&answer, &candidate);
            if !hosts.is_empty() {
                return Ok(Some((candidate, hosts)));
            }
            if let Some(zone) = soa_owner(&answer) {
                if zone == candidate {
                    return Ok(Some((zone, hosts)));
                }
                let answer = self.recursive(&zone, RecordType::NS).await?;
                let hosts = ns_hosts(&answer, &zone);
                return Ok(Some((zone, hosts)));
            }
            if candidate.is_root() {
                return Ok(None);
            }
            candidate = candidate.base_name();
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

/// A response code for people: `NXDOMAIN`, `SERVFAIL`...
pub fn rcode_text(rcode: ResponseCode) -> String {
    rcode.to_str().to_uppercase()
}
