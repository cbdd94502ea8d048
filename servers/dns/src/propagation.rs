//! `propagacion`: the same questions (A, AAAA, NS and TXT) asked of several
//! resolvers at once, each with its own timeout, and where they disagree.
//! A resolver that does not answer is reported and left out of the
//! comparison; it never fails the call.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use futures::future::join_all;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::ResolverError;
use crate::findings::{Hallazgo, Tipo};
use crate::health::show_rdata;
use crate::name::show;
use crate::net::{Net, rcode_text};
use crate::server::parse_address;
use crate::verdict::Verdict;

/// The resolvers asked when the caller names none.
const DEFAULT_RESOLVERS: [&str; 3] = ["1.1.1.1", "8.8.8.8", "9.9.9.9"];
/// The most resolvers one call may ask.
const MAX_RESOLVERS: usize = 20;
/// How many TXT records the sample shows.
const TXT_SAMPLE: usize = 5;

/// The types compared, in the order they are asked.
const TYPES: [RecordType; 4] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::NS,
    RecordType::TXT,
];

/// One resolver's answers, by type; `error` when it could not be asked.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Respuesta {
    /// Per type (`A`, `AAAA`, `NS`, `TXT`): the values, sorted; an error
    /// code such as `NXDOMAIN` appears as the only value `rcode:NXDOMAIN`.
    pub registros: BTreeMap<String, Vec<String>>,
    /// Why the resolver gave no answer (then `registros` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of `propagacion`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Propagacion {
    pub dominio: String,
    /// The resolvers asked, as `IP:PORT`.
    pub resolutores: Vec<String>,
    /// Each resolver's answers, by `IP:PORT`.
    pub respuestas: BTreeMap<String, Respuesta>,
    /// Per type, the resolvers grouped by the answer they gave; a type is
    /// present only when the reachable resolvers disagree.
    pub diferencias: BTreeMap<String, Vec<Grupo>>,
    /// Resolvers that gave no answer.
    pub inalcanzables: Vec<String>,
    pub hallazgos: Vec<Hallazgo>,
}

/// Resolvers that gave the same answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Grupo {
    pub valores: Vec<String>,
    pub resolutores: Vec<String>,
}

/// How an answer that is an error code shows among the values:
/// `rcode:NXDOMAIN`, `rcode:SERVFAIL`...
fn rcode_value(rcode: ResponseCode) -> String {
    format!("rcode:{}", rcode_text(rcode))
}

/// The resolvers to ask: the caller's, or the defaults.
pub fn resolvers(given: Option<&[String]>) -> Result<Vec<SocketAddr>, ResolverError> {
    let texts: Vec<String> = match given {
        Some(list) if !list.is_empty() => list.to_vec(),
        _ => DEFAULT_RESOLVERS.iter().map(|s| (*s).to_owned()).collect(),
    };
    if texts.len() > MAX_RESOLVERS {
        return Err(ResolverError::TooMany(texts.len(), MAX_RESOLVERS));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for text in texts {
        let address = parse_address(&text).ok_or(ResolverError::BadAddress(text))?;
        if seen.insert(address) {
            out.push(address);
        }
    }
    Ok(out)
}

pub async fn propagacion(net: &Net, name: &Name, resolvers: &[SocketAddr]) -> Propagacion {
    let asked = join_all(
        resolvers
            .iter()
            .map(|resolver| ask_one(net, name, *resolver)),
    )
    .await;
    let mut respuestas = BTreeMap::new();
    let mut inalcanzables = Vec::new();
    let mut hallazgos = Vec::new();
    // A resolver that answers SERVFAIL but answers with checking disabled
    // is a validating resolver that judges the data bogus: said once, with
    // the disagreement it causes below.
    let bogus = join_all(
        resolvers
            .iter()
            .zip(&asked)
            .map(|(resolver, respuesta)| async move {
                let failing = TYPES.into_iter().find(|rtype| {
                    respuesta
                        .registros
                        .get(&rtype.to_string())
                        .is_some_and(|values| values.contains(&rcode_value(ResponseCode::ServFail)))
                })?;
                let unchecked = net.unchecked_at(*resolver, name, failing).await.ok()?;
                unchecked.is_answer().then_some((*resolver, failing))
            }),
    )
    .await;
    for (resolver, rtype) in bogus.into_iter().flatten() {
        hallazgos.push(Verdict::Bogus.finding(resolver, name, rtype, ""));
    }
    for (resolver, respuesta) in resolvers.iter().zip(asked) {
        if let Some(error) = &respuesta.error {
            inalcanzables.push(resolver.to_string());
            hallazgos.push(
                Tipo::ResolutorInalcanzable
                    .hallazgo(format!("the resolver {resolver} gave no answer: {error}")),
            );
        }
        respuestas.insert(resolver.to_string(), respuesta);
    }
    let mut diferencias = BTreeMap::new();
    for rtype in TYPES {
        let key = rtype.to_string();
        let mut groups: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
        for (resolver, respuesta) in &respuestas {
            if let Some(values) = respuesta.registros.get(&key) {
                groups
                    .entry(values.clone())
                    .or_default()
                    .push(resolver.clone());
            }
        }
        if groups.len() > 1 {
            let shown: Vec<String> = groups
                .iter()
                .map(|(values, who)| format!("{} say [{}]", who.join(", "), values.join(", ")))
                .collect();
            hallazgos.push(Tipo::RespuestasDistintas.hallazgo(format!(
                "{key} of {}: {}",
                show(name),
                shown.join("; ")
            )));
            let grupos = groups
                .into_iter()
                .map(|(valores, resolutores)| Grupo {
                    valores,
                    resolutores,
                })
                .collect();
            diferencias.insert(key, grupos);
        }
    }
    Propagacion {
        dominio: show(name),
        resolutores: resolvers.iter().map(ToString::to_string).collect(),
        respuestas,
        diferencias,
        inalcanzables,
        hallazgos,
    }
}

/// Every type asked of one resolver at once. The resolver counts as
/// unreachable when no question got an answer.
async fn ask_one(net: &Net, name: &Name, resolver: SocketAddr) -> Respuesta {
    let results = join_all(TYPES.map(|rtype| net.recursive_at(resolver, name, rtype))).await;
    let mut registros = BTreeMap::new();
    let mut error = None;
    for (rtype, result) in TYPES.into_iter().zip(results) {
        match result {
            Ok(answer) => {
                // An alias shows its chain, then what its last name holds
                // (or the code, which is about that name).
                let mut values: Vec<String> = answer
                    .chain(name)
                    .targets()
                    .map(|target| format!("CNAME {}", show(target)))
                    .collect();
                if answer.rcode == ResponseCode::NoError {
                    values.extend(answer.resolved(name, rtype).map(show_rdata));
                } else {
                    values.push(rcode_value(answer.rcode));
                }
                values.sort();
                values.dedup();
                if rtype == RecordType::TXT {
                    values.truncate(TXT_SAMPLE);
                }
                registros.insert(rtype.to_string(), values);
            }
            Err(failure) => {
                error.get_or_insert_with(|| failure.to_string());
            }
        }
    }
    if registros.is_empty() {
        Respuesta { registros, error }
    } else {
        Respuesta {
            registros,
            error: None,
        }
    }
}
