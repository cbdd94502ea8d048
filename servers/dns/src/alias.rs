//! Where an alias leads. A resolver follows a CNAME chain for the asker and
//! answers with the records, and the response code, of the chain's last
//! name (RFC 1034 3.6.2, RFC 6604 section 3): NXDOMAIN after a CNAME says
//! that the target does not exist, not the name asked, which exists and
//! is an alias (the subdomain-takeover case). The tools read the chain the
//! answers hold, ask on from where a server stopped following it (an
//! authoritative server gives its own zone's part of a chain only), and
//! say where the chain breaks: at a name that does not exist or has no
//! address (`cname_colgante`), in a loop (`cname_bucle`), or at a name
//! nobody gives an answer for, neither the resolver nor its zone's servers
//! (`cname_destino_sin_respuesta`).

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use crate::findings::{Hallazgo, Tipo};
use crate::net::{Net, rcode_text};
use crate::query::{Answer, Chain, MAX_CHAIN};

/// Where a chain breaks.
#[derive(Debug, Clone)]
pub enum Break {
    /// Its last name does not exist (NXDOMAIN).
    Missing,
    /// Its last name exists and has no address (NOERROR, no A or AAAA).
    NoAddress,
    /// It comes back to a name it has passed.
    Loop,
    /// Nobody answers for its last name: the response code or the error
    /// the resolver gave, and its zone's servers gave nothing better.
    Unanswered(String),
}

/// A broken chain: the chain as far as it was read, and where it breaks.
#[derive(Debug, Clone)]
pub struct Broken {
    pub chain: Chain,
    pub at: Break,
}

impl Broken {
    /// The finding that says where the chain breaks.
    pub fn finding(&self) -> Hallazgo {
        let chain = self.chain.describe();
        match &self.at {
            Break::Missing => {
                Tipo::CnameColgante.hallazgo(format!("{chain}, which does not exist (NXDOMAIN)"))
            }
            Break::NoAddress => Tipo::CnameColgante.hallazgo(format!(
                "{chain}, which has no address (NOERROR, no A or AAAA)"
            )),
            Break::Loop => Tipo::CnameBucle.hallazgo(format!(
                "{chain}: the chain {}, so the name never resolves",
                if self.chain.links() > MAX_CHAIN {
                    format!("runs past {MAX_CHAIN} links")
                } else {
                    "comes back to a name it has passed".to_owned()
                }
            )),
            Break::Unanswered(why) => Tipo::CnameDestinoSinRespuesta.hallazgo(format!(
                "{chain}, for which neither the resolver ({why}) nor the servers of its zone give \
                 an answer: the name does not resolve while they fail"
            )),
        }
    }
}

/// A question asked while following a chain and its answer.
type Said = (Name, Answer);

/// Whether the answers hold data of the chain's last name: the address
/// asked for, or the MX or TXT records a mail check asked for.
fn resolves(said: &[Said], chain: &Chain) -> bool {
    said.iter().any(|(_, answer)| {
        answer
            .answers
            .iter()
            .any(|record| record.record_type() != RecordType::CNAME && record.name == *chain.end())
    })
}

/// Whether the answers, read from the name each was asked about, say the
/// chain's end does not exist.
fn end_denied(said: &[Said], chain: &Chain) -> bool {
    said.iter().any(|(asked, answer)| {
        answer.rcode == ResponseCode::NXDomain && answer.chain(asked).end() == chain.end()
    })
}

/// The chain `answers` (about `owner`: its A and AAAA answers, or its
/// CNAME answer) hold from `owner`, followed to where it ends or breaks.
/// `None` when `owner` is no alias in them, or its chain ends in data
/// (an address; for a mail check, its MX or TXT records too). Each round
/// asks the chain's last name for A and AAAA (the resolver, else that
/// name's own servers), as the resolver would have.
pub async fn follow(net: &Net, owner: &Name, answers: &[&Answer]) -> Option<Broken> {
    let mut chain = Chain::start(owner);
    for answer in answers {
        let mut read = Chain::start(owner);
        read.follow(answer);
        if read.links() > chain.links() {
            chain = read;
        }
    }
    if !chain.is_alias() {
        return None;
    }
    let mut said: Vec<Said> = answers
        .iter()
        .map(|answer| (owner.clone(), (*answer).clone()))
        .collect();
    // Each round reads at least one more link, and a chain is read to
    // MAX_CHAIN links at most before it counts as a loop.
    for _ in 0..=MAX_CHAIN {
        if resolves(&said, &chain) {
            return None;
        }
        if chain.looped() {
            return Some(Broken {
                chain,
                at: Break::Loop,
            });
        }
        if end_denied(&said, &chain) {
            return Some(Broken {
                chain,
                at: Break::Missing,
            });
        }
        let end = chain.end().clone();
        let (a, aaaa) = tokio::join!(
            net.lookup(&end, RecordType::A),
            net.lookup(&end, RecordType::AAAA)
        );
        let why = match &a {
            Ok(answer) => rcode_text(answer.rcode),
            Err(error) => error.to_string(),
        };
        said = [a, aaaa]
            .into_iter()
            .flatten()
            .filter(Answer::is_answer)
            .map(|answer| (end.clone(), answer))
            .collect();
        if said.is_empty() {
            return Some(Broken {
                chain,
                at: Break::Unanswered(why),
            });
        }
        let before = chain.links();
        for (_, answer) in &said {
            chain.follow(answer);
        }
        if chain.links() == before {
            // The answers are about the last name itself.
            if resolves(&said, &chain) {
                return None;
            }
            let at = if end_denied(&said, &chain) {
                Break::Missing
            } else {
                Break::NoAddress
            };
            return Some(Broken { chain, at });
        }
    }
    Some(Broken {
        chain,
        at: Break::Loop,
    })
}
