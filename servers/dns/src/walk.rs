//! Finding a zone cut without trusting a resolver that failed: the walk
//! down from the servers of the deepest ancestor the resolver does answer
//! for (its NS set; the root's when it answers for nothing deeper, the
//! configured root hints when it answers nothing at all), following
//! referrals to the zone that holds the name. Each step asks every server
//! of the current zone at once for the name's NS records and takes the
//! first answer. A referral (NS records for a name between the current
//! zone and the domain) moves one zone down, with the addresses from its
//! glue, else from the resolver; any other answer comes from the zone that
//! holds the name (its SOA names the apex when the name is not one). When
//! the servers a referral names do not answer, the cut is that
//! delegation's: the tools then find the servers lame.
//!
//! The cut keeps what the tools need besides the zone: the parent's
//! servers (where the DS and the delegation are read) and the NS set the
//! parent delegates to.

use std::collections::BTreeSet;
use std::net::IpAddr;

use futures::future::join_all;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use crate::name::show;
use crate::net::{NameServer, Net, address_of, ns_hosts, soa_owner};
use crate::query::Answer;

/// Referrals followed at most: deeper than any real name.
const MAX_STEPS: usize = 32;

/// Where a name's zone starts, and who serves it.
#[derive(Debug, Clone)]
pub struct Cut {
    /// The zone that holds the name.
    pub zone: Name,
    /// The zone's servers as the delegation names them, with their
    /// addresses.
    pub servers: Vec<NameServer>,
    /// The parent zone and its servers' addresses, when the walk came
    /// down through it.
    pub parent: Option<(Name, Vec<IpAddr>)>,
    /// The NS set the parent delegates the zone to.
    pub delegated: BTreeSet<Name>,
    /// The zone's servers answer NXDOMAIN for the name.
    pub nxdomain: bool,
}

impl Cut {
    /// Every address of the zone's servers, each once.
    pub fn addresses(&self) -> Vec<IpAddr> {
        addresses(&self.servers)
    }
}

/// Why no zone cut was found.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WalkError {
    #[error("no server of {0} answered the question for {1}")]
    NoAnswer(String, String),
    #[error("no server of {0} has an address")]
    NoAddress(String),
    #[error("more than {MAX_STEPS} referrals")]
    TooDeep,
}

fn addresses(servers: &[NameServer]) -> Vec<IpAddr> {
    servers
        .iter()
        .flat_map(|server| server.addresses.iter().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl Net {
    /// Walks down to the zone that holds `name`.
    pub async fn walk(&self, name: &Name) -> Result<Cut, WalkError> {
        let (mut zone, mut servers) = self.walk_start(name).await;
        let mut parent = None;
        let mut delegated: BTreeSet<Name> = servers.iter().map(|s| s.host.clone()).collect();
        for _ in 0..MAX_STEPS {
            let at = addresses(&servers);
            if at.is_empty() {
                return Err(WalkError::NoAddress(show(&zone)));
            }
            // A referral, or an answer from a server that holds the name's
            // zone: a lame server's empty answer without the AA flag is
            // neither.
            let useful = |answer: &Answer| {
                answer.is_authoritative_answer() || delegation_below(answer, &zone, name).is_some()
            };
            let Some(answer) = self
                .first_good(&at, name, RecordType::NS, false, useful)
                .await
            else {
                // Servers a parent delegated to that do not answer: the
                // cut is the delegation's, and the tools find them lame.
                if parent.is_some() {
                    return Ok(Cut {
                        zone,
                        servers,
                        parent,
                        delegated,
                        nxdomain: false,
                    });
                }
                return Err(WalkError::NoAnswer(show(&zone), show(name)));
            };
            if let Some(child) = delegation_below(&answer, &zone, name) {
                let hosts = ns_hosts(&answer, &child);
                servers = self.delegated_servers(&answer, &hosts).await;
                parent = Some((zone, at));
                delegated = hosts;
                zone = child;
                continue;
            }
            // The servers of `zone` answered for the name itself; a server
            // may hold a zone below `zone` too, which its SOA then names.
            let apex = soa_owner(&answer)
                .filter(|owner| zone.zone_of(owner) && owner.zone_of(name))
                .unwrap_or(zone);
            return Ok(Cut {
                zone: apex,
                servers,
                parent,
                delegated,
                nxdomain: answer.denies(name),
            });
        }
        Err(WalkError::TooDeep)
    }

    /// The deepest proper ancestor of `name` whose NS set the resolver
    /// gives (all asked at once), with its servers; the root hints when it
    /// gives none.
    async fn walk_start(&self, name: &Name) -> (Name, Vec<NameServer>) {
        let mut ancestors = Vec::new();
        let mut ancestor = name.clone();
        while !ancestor.is_root() {
            ancestor = ancestor.base_name();
            ancestors.push(ancestor.clone());
        }
        let answers = join_all(
            ancestors
                .iter()
                .map(|ancestor| self.recursive(ancestor, RecordType::NS)),
        )
        .await;
        for (ancestor, answer) in ancestors.iter().zip(answers) {
            let Ok(answer) = answer else { continue };
            if answer.rcode != ResponseCode::NoError {
                continue;
            }
            let hosts = ns_hosts(&answer, ancestor);
            if hosts.is_empty() {
                continue;
            }
            let servers = self.delegated_servers(&answer, &hosts).await;
            if servers.iter().any(|server| !server.addresses.is_empty()) {
                return (ancestor.clone(), servers);
            }
        }
        let roots = NameServer {
            host: Name::root(),
            addresses: self.roots.clone(),
        };
        (Name::root(), vec![roots])
    }

    /// The servers `hosts` names, with the addresses `answer` carries for
    /// them (glue), else those the resolver gives (a walk does not walk
    /// again for a glueless server: when the resolver cannot give its
    /// address either, that server is left without one).
    async fn delegated_servers(&self, answer: &Answer, hosts: &BTreeSet<Name>) -> Vec<NameServer> {
        join_all(hosts.iter().map(|host| async move {
            let glue: Vec<IpAddr> = answer
                .additionals
                .iter()
                .filter(|record| record.name.to_lowercase() == *host)
                .filter_map(address_of)
                .collect();
            let addresses = if glue.is_empty() {
                self.resolved_addresses(host).await
            } else {
                glue
            };
            NameServer {
                host: host.clone(),
                addresses,
            }
        }))
        .await
    }
}

/// The deepest name with NS records in `answer` strictly below `zone` and
/// at or above `name`: the zone a referral hands the walk down to.
fn delegation_below(answer: &Answer, zone: &Name, name: &Name) -> Option<Name> {
    answer
        .answers
        .iter()
        .chain(&answer.authorities)
        .filter(|record| record.record_type() == RecordType::NS)
        .map(|record| record.name.to_lowercase())
        .filter(|owner| owner != zone && zone.zone_of(owner) && owner.zone_of(name))
        .max_by_key(Name::num_labels)
}
