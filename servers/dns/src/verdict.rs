//! What the recursive resolver's failure to answer a question means, told
//! apart the way a network engineer would: a validating resolver that
//! answers SERVFAIL but answers the same question with checking disabled
//! (CD) judged the data bogus (broken DNSSEC: the domain is gone for every
//! validating resolver); SERVFAIL with CD as well means it could not get
//! an answer at all; REFUSED is a refusal; silence is silence. Each is one
//! finding, so that the tools report the cause once and draw nothing else
//! from the missing answer. A nonexistent domain is said here too, once,
//! for every tool.

use std::net::SocketAddr;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use crate::findings::{Hallazgo, Tipo};
use crate::name::show;
use crate::net::{Failed, Net, rcode_text};
use crate::query::QueryError;

/// Why the resolver gave no answer.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// SERVFAIL, but an answer with CD: the data failed validation.
    Bogus,
    /// SERVFAIL with CD as well.
    ServFail,
    /// REFUSED, or another code that is not an answer (NOTIMP, FORMERR).
    Refused(ResponseCode),
    /// No answer: a timeout or a network error.
    Silent(QueryError),
}

impl Net {
    /// Why the resolver gave no answer to `failed`: a SERVFAIL is asked
    /// again with CD to tell a validation failure from the rest.
    pub async fn judge(&self, failed: &Failed) -> Verdict {
        match &failed.result {
            Err(QueryError::Refused(_)) => Verdict::Refused(ResponseCode::Refused),
            Err(error) => Verdict::Silent(error.clone()),
            Ok(answer) if answer.rcode == ResponseCode::ServFail => {
                match self
                    .unchecked_at(self.resolver, &failed.name, failed.rtype)
                    .await
                {
                    Ok(unchecked) if unchecked.is_answer() => Verdict::Bogus,
                    _ => Verdict::ServFail,
                }
            }
            Ok(answer) => Verdict::Refused(answer.rcode),
        }
    }
}

impl Verdict {
    /// The one finding that says why `resolver` failed for `name`.
    pub fn finding(
        &self,
        resolver: SocketAddr,
        name: &Name,
        rtype: RecordType,
        after: &str,
    ) -> Hallazgo {
        let asked = format!("{} {rtype}", show(name));
        let (tipo, what) = match self {
            Verdict::Bogus => (
                Tipo::DnssecBogus,
                format!(
                    "the resolver {resolver} answers SERVFAIL for {asked} but answers it with \
                     checking disabled (CD): it judges the DNSSEC data bogus, so the name is \
                     unreachable through every validating resolver; estado_dnssec tells why"
                ),
            ),
            Verdict::ServFail => (
                Tipo::ResolutorServfail,
                format!(
                    "the resolver {resolver} answers SERVFAIL for {asked}, with checking disabled \
                     too: not a DNSSEC failure, it gets no usable answer from the zone's servers"
                ),
            ),
            Verdict::Refused(rcode) => (
                Tipo::ResolutorRechaza,
                format!(
                    "the resolver {resolver} answers {} for {asked}: it does not resolve for \
                     this client",
                    rcode_text(*rcode)
                ),
            ),
            Verdict::Silent(error) => (
                Tipo::ResolutorSinRespuesta,
                format!("the resolver {resolver} gave no answer for {asked}: {error}"),
            ),
        };
        let detalle = if after.is_empty() {
            what
        } else {
            format!("{what}; {after}")
        };
        tipo.hallazgo(detalle)
    }
}

/// `dominio_inexistente`, said by the resolver at `resolver`.
pub fn nonexistent(resolver: SocketAddr, name: &Name) -> Hallazgo {
    Tipo::DominioInexistente.hallazgo(format!(
        "the resolver {resolver} answers NXDOMAIN for {}",
        show(name)
    ))
}

/// `dominio_inexistente`, said by the servers of `zone` (the resolver gave
/// no answer).
pub fn nonexistent_at(zone: &Name, name: &Name) -> Hallazgo {
    Tipo::DominioInexistente.hallazgo(format!(
        "the servers of {} answer NXDOMAIN for {}",
        show(zone),
        show(name)
    ))
}
