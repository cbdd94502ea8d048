//! `correo_politicas`: a domain's mail policies. MX (with null MX, RFC
//! 7505, and each host's addresses and CNAME, the latter read from the
//! address answers), SPF (RFC 7208: the record
//! parsed into terms, and every DNS-querying term counted recursively
//! through `include` and `redirect` against the limit of 10, with void
//! lookups), DMARC (RFC 7489's tags), and MTA-STS (RFC 8461) and TLS-RPT
//! (RFC 8460) records. Every question of one level is asked at once.

use futures::future::join_all;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, RecordType};
use schemars::JsonSchema;
use serde::Serialize;

use crate::alias;
use crate::findings::{Hallazgo, Tipo};
use crate::name::show;
use crate::net::{Failed, Host, Net};
use crate::query::{Answer, QueryError};
use crate::verdict::{self, Verdict};

/// RFC 7208 4.6.4: at most 10 DNS-querying terms.
const SPF_LOOKUP_LIMIT: usize = 10;
/// RFC 7208 4.6.4: at most 2 void lookups.
const SPF_VOID_LIMIT: usize = 2;
/// Evaluation stops following includes past this many lookups, so that a
/// loop or a huge tree cannot keep the tool busy.
const SPF_HARD_STOP: usize = 30;

/// One MX record.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Mx {
    pub preferencia: u16,
    pub host: String,
    pub direcciones: Vec<String>,
    /// The CNAME target, when the host is an alias (which it must not be).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cname: Option<String>,
}

/// One SPF term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Termino {
    /// `+`, `-`, `~` or `?` for mechanisms; empty for modifiers.
    pub calificador: String,
    /// The mechanism or modifier: `include`, `a`, `ip4`, `redirect`...
    pub tipo: String,
    /// What follows `:` or `=`, if anything.
    pub valor: String,
}

/// The SPF analysis.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Spf {
    /// The apex's SPF record (the first, when there are several).
    pub registro: Option<String>,
    /// How many `v=spf1` records the apex has.
    pub cantidad: usize,
    pub terminos: Vec<Termino>,
    /// DNS-querying terms counted through includes and redirects.
    pub consultas_dns: usize,
    /// Lookups that found nothing.
    pub consultas_vacias: usize,
    /// Domains reached through `include` and `redirect`.
    pub incluidos: Vec<String>,
}

/// The DMARC analysis.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Dmarc {
    pub registro: Option<String>,
    pub cantidad: usize,
    pub p: Option<String>,
    pub sp: Option<String>,
    pub pct: Option<u8>,
    pub rua: Vec<String>,
    pub ruf: Vec<String>,
    pub adkim: Option<String>,
    pub aspf: Option<String>,
}

/// The result of `correo_politicas`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Correo {
    pub dominio: String,
    pub mx: Vec<Mx>,
    pub spf: Spf,
    pub dmarc: Dmarc,
    /// The `_mta-sts` TXT record, if any.
    pub mta_sts: Option<String>,
    /// The `_smtp._tls` TXT record, if any.
    pub tls_rpt: Option<String>,
    pub hallazgos: Vec<Hallazgo>,
}

/// The TXT strings where `name` leads (each record's strings joined, read
/// at the end of its CNAME chain), or none.
fn txts(answer: &Answer, name: &Name) -> Vec<String> {
    answer
        .resolved(name, RecordType::TXT)
        .filter_map(|data| match data {
            RData::TXT(txt) => Some(
                txt.txt_data
                    .iter()
                    .map(|part| String::from_utf8_lossy(part).into_owned())
                    .collect::<String>(),
            ),
            _ => None,
        })
        .collect()
}

/// The records among `texts` that start with `tag` (case-insensitive),
/// followed by a space, `;` or nothing.
fn tagged(texts: &[String], tag: &str) -> Vec<String> {
    texts
        .iter()
        .filter(|text| {
            let lower = text.trim_start().to_ascii_lowercase();
            lower.strip_prefix(tag).is_some_and(|rest| {
                rest.is_empty() || rest.starts_with(' ') || rest.starts_with(';')
            })
        })
        .map(|text| text.trim().to_owned())
        .collect()
}

fn sub(label: &str, name: &Name) -> Option<Name> {
    Name::from_ascii(label)
        .and_then(|l| l.append_domain(name))
        .ok()
}

/// The labels under the domain whose TXT records are read.
const POLICY_LABELS: [&str; 3] = ["_dmarc", "_mta-sts", "_smtp._tls"];

/// The questions about the domain itself, in the order their failures are
/// reported: MX and the apex's TXT first, then each of [`POLICY_LABELS`]
/// (a label that would make the name too long is not asked, and reads as
/// no record).
fn questions(name: &Name) -> Vec<(&'static str, Name, RecordType)> {
    let mut asked = vec![
        ("", name.clone(), RecordType::MX),
        ("", name.clone(), RecordType::TXT),
    ];
    for label in POLICY_LABELS {
        if let Some(sub) = sub(label, name) {
            asked.push((label, sub, RecordType::TXT));
        }
    }
    asked
}

/// The TXT strings at `label` under the domain (`""`: the apex), when the
/// question got an answer: nothing is concluded from a question left
/// unanswered (a TXT question that timed out is not an `spf_ausente`). A
/// label not asked holds nothing.
fn answered_txts(
    asked: &[(&'static str, Name, RecordType)],
    results: &[Result<Answer, QueryError>],
    label: &str,
) -> Option<Vec<String>> {
    let Some(((_, owner, _), result)) = asked
        .iter()
        .zip(results)
        .find(|((asked, _, rtype), _)| *asked == label && *rtype == RecordType::TXT)
    else {
        return Some(Vec::new());
    };
    let answer = result.as_ref().ok().filter(|answer| answer.is_answer())?;
    Some(txts(answer, owner))
}

pub async fn correo_politicas(net: &Net, name: &Name) -> Correo {
    let mut hallazgos = Vec::new();
    let asked = questions(name);
    let first = join_all(
        asked
            .iter()
            .map(|(_, owner, rtype)| net.recursive(owner, *rtype)),
    )
    .await;
    let mut empty = Correo {
        dominio: show(name),
        mx: Vec::new(),
        spf: Spf::default(),
        dmarc: Dmarc::default(),
        mta_sts: None,
        tls_rpt: None,
        hallazgos: Vec::new(),
    };
    let apex_nxdomain = |results: &[Result<Answer, QueryError>]| {
        results
            .iter()
            .take(2)
            .flatten()
            .any(|answer| answer.denies(name))
    };
    if apex_nxdomain(&first) {
        empty
            .hallazgos
            .push(verdict::nonexistent(net.resolver, name));
        return empty;
    }
    // What the resolver gave no answer to is reported once, and asked of
    // the domain's own servers instead.
    let failed: Vec<Failed> = asked
        .iter()
        .zip(&first)
        .filter_map(|((_, owner, rtype), result)| Failed::unanswered(owner, *rtype, result))
        .collect();
    let (verdict, results) = tokio::join!(
        async {
            match failed.first() {
                Some(question) => Some(net.judge(question).await),
                None => None,
            }
        },
        join_all(
            asked
                .iter()
                .zip(first)
                .map(|((_, owner, rtype), result)| net.lookup_after(owner, *rtype, result))
        )
    );
    // A domain that is an alias of nothing (or of a loop, or of a name
    // nobody answers for) has no policies to read: that is said, and
    // nothing else; the resolver's SERVFAIL is then about the chain's end.
    // An alias of a name without an address is read through, as senders
    // read it.
    let apex_answers: Vec<&Answer> = results
        .iter()
        .take(2)
        .flatten()
        .filter(|answer| answer.is_answer())
        .collect();
    let broken = alias::follow(net, name, &apex_answers)
        .await
        .filter(|broken| !matches!(broken.at, alias::Break::NoAddress));
    if let (Some(verdict), Some(question)) = (verdict, failed.first())
        && !(broken.is_some() && matches!(verdict, Verdict::ServFail))
    {
        let unanswered: Vec<String> = asked
            .iter()
            .zip(&results)
            .filter(|(_, result)| !result.as_ref().is_ok_and(Answer::is_answer))
            .map(|((_, owner, rtype), _)| format!("{} {rtype}", show(owner)))
            .collect();
        let after = if unanswered.is_empty() {
            "the policies below come from the domain's authoritative servers".to_owned()
        } else {
            format!(
                "the authoritative servers did not answer either for {}, so nothing is concluded \
                 about it",
                unanswered.join(", ")
            )
        };
        hallazgos.push(verdict.finding(net.resolver, &question.name, question.rtype, &after));
    }
    if apex_nxdomain(&results) {
        let zone = net
            .cut(name)
            .await
            .map_or_else(|_| name.clone(), |cut| cut.zone);
        hallazgos.push(verdict::nonexistent_at(&zone, name));
        empty.hallazgos = hallazgos;
        return empty;
    }
    if let Some(broken) = broken {
        hallazgos.push(broken.finding());
        empty.hallazgos = hallazgos;
        return empty;
    }
    let mx_answer = results
        .first()
        .and_then(|result| result.as_ref().ok())
        .filter(|answer| answer.is_answer())
        .cloned();
    let [dmarc, sts, rpt] = POLICY_LABELS;
    let apex_txt = answered_txts(&asked, &results, "");
    let dmarc_txt = answered_txts(&asked, &results, dmarc);
    let sts_txt = answered_txts(&asked, &results, sts);
    let rpt_txt = answered_txts(&asked, &results, rpt);
    let mut spf_findings = Vec::new();
    let ((mx, mx_findings), spf) = tokio::join!(check_mx(net, name, mx_answer), async {
        match &apex_txt {
            Some(apex) => check_spf(net, name, apex, &mut spf_findings).await,
            None => Spf::default(),
        }
    });
    hallazgos.extend(mx_findings);
    hallazgos.extend(spf_findings);
    let dmarc = match &dmarc_txt {
        Some(texts) => check_dmarc(texts, &mut hallazgos),
        None => Dmarc::default(),
    };
    let mta_sts = sts_txt.and_then(|texts| tagged(&texts, "v=stsv1").into_iter().next());
    if let Some(record) = &mta_sts {
        hallazgos.push(Tipo::MtaSts.hallazgo(format!("_mta-sts: {record}")));
    }
    let tls_rpt = rpt_txt.and_then(|texts| tagged(&texts, "v=tlsrptv1").into_iter().next());
    if let Some(record) = &tls_rpt {
        hallazgos.push(Tipo::TlsRpt.hallazgo(format!("_smtp._tls: {record}")));
    }
    Correo {
        mx,
        spf,
        dmarc,
        mta_sts,
        tls_rpt,
        hallazgos,
        ..empty
    }
}

async fn check_mx(net: &Net, name: &Name, answer: Option<Answer>) -> (Vec<Mx>, Vec<Hallazgo>) {
    let mut hallazgos = Vec::new();
    let Some(answer) = answer else {
        return (Vec::new(), hallazgos);
    };
    let mut records: Vec<(u16, Name)> = answer
        .resolved(name, RecordType::MX)
        .filter_map(|data| match data {
            RData::MX(mx) => Some((mx.preference, mx.exchange.to_lowercase())),
            _ => None,
        })
        .collect();
    records.sort();
    if records.is_empty() {
        hallazgos.push(Tipo::MxAusente.hallazgo(format!(
            "{} has no MX records ({})",
            show(name),
            answer.rcode.to_str()
        )));
        return (Vec::new(), hallazgos);
    }
    let null = records.iter().any(|(_, host)| host.is_root());
    if null {
        if records.len() == 1 {
            hallazgos.push(Tipo::MxNulo.hallazgo(format!(
                "{} publishes a null MX: it accepts no mail",
                show(name)
            )));
        } else {
            hallazgos.push(Tipo::MxNuloConOtros.hallazgo(format!(
                "{} publishes a null MX together with {} other MX records",
                show(name),
                records.len() - 1
            )));
        }
    }
    let checked = join_all(records.into_iter().map(|(preference, host)| async move {
        if host.is_root() {
            return (
                Mx {
                    preferencia: preference,
                    host: ".".to_owned(),
                    direcciones: Vec::new(),
                    cname: None,
                },
                Vec::new(),
            );
        }
        let Host { addresses, alias } = net.host(&host).await;
        let cname = alias.as_ref().map(show);
        let mut found = Vec::new();
        if let Some(target) = &cname {
            found.push(Tipo::MxCname.hallazgo(format!(
                "the MX host {} is a CNAME to {target}",
                show(&host)
            )));
        }
        if addresses.is_empty() {
            found.push(Tipo::MxSinDireccion.hallazgo(format!(
                "the MX host {} has no A or AAAA record",
                show(&host)
            )));
        }
        (
            Mx {
                preferencia: preference,
                host: show(&host),
                direcciones: addresses.iter().map(ToString::to_string).collect(),
                cname,
            },
            found,
        )
    }))
    .await;
    let mut mx = Vec::new();
    for (entry, found) in checked {
        mx.push(entry);
        hallazgos.extend(found);
    }
    (mx, hallazgos)
}

/// One parsed SPF term, or why it does not parse.
fn parse_term(term: &str) -> Result<Termino, String> {
    let (qualifier, rest) = match term.chars().next() {
        Some(q @ ('+' | '-' | '~' | '?')) => (q.to_string(), term.get(1..).unwrap_or("")),
        _ => (String::new(), term),
    };
    // A modifier: name=value, the name starting with a letter.
    if let Some((name, value)) = rest.split_once('=') {
        let name_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if qualifier.is_empty() && name_ok && !name.contains(':') {
            return Ok(Termino {
                calificador: String::new(),
                tipo: name.to_ascii_lowercase(),
                valor: value.to_owned(),
            });
        }
    }
    let (mechanism, value) = match rest.find([':', '/']) {
        Some(at) => (
            rest.get(..at).unwrap_or(""),
            // One `:` separates the value: `include::x` names `:x`, which
            // is no domain, not `x`.
            rest.get(at..)
                .map(|value| value.strip_prefix(':').unwrap_or(value))
                .unwrap_or(""),
        ),
        None => (rest, ""),
    };
    let mechanism = mechanism.to_ascii_lowercase();
    let needs_value = matches!(mechanism.as_str(), "include" | "exists" | "ip4" | "ip6");
    let takes_value = needs_value || matches!(mechanism.as_str(), "a" | "mx" | "ptr");
    let known = takes_value || mechanism == "all";
    if !known {
        return Err(format!("unknown mechanism `{term}`"));
    }
    if needs_value && value.is_empty() {
        return Err(format!("`{mechanism}` needs a value (`{term}`)"));
    }
    if !takes_value && !value.is_empty() {
        return Err(format!("`{mechanism}` takes no value (`{term}`)"));
    }
    if mechanism == "ip4"
        && value
            .split('/')
            .next()
            .is_some_and(|ip| ip.parse::<std::net::Ipv4Addr>().is_err())
    {
        return Err(format!("bad IPv4 address in `{term}`"));
    }
    if mechanism == "ip6"
        && value
            .split('/')
            .next()
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_err())
    {
        return Err(format!("bad IPv6 address in `{term}`"));
    }
    Ok(Termino {
        calificador: if qualifier.is_empty() {
            "+".to_owned()
        } else {
            qualifier
        },
        tipo: mechanism,
        valor: value.to_owned(),
    })
}

/// The modifiers a record may hold once each (RFC 7208 6).
const ONCE: [&str; 2] = ["redirect", "exp"];

/// An SPF record's terms (after `v=spf1`), or the first that does not
/// parse. A `redirect` or an `exp` given twice is a permanent error (RFC
/// 7208 6): neither is followed.
pub(crate) fn parse_spf(record: &str) -> Result<Vec<Termino>, String> {
    let terms = record
        .split_ascii_whitespace()
        .skip(1)
        .map(parse_term)
        .collect::<Result<Vec<_>, _>>()?;
    for modifier in ONCE {
        let given = terms
            .iter()
            .filter(|term| term.calificador.is_empty() && term.tipo == modifier)
            .count();
        if given > 1 {
            return Err(format!(
                "the `{modifier}` modifier is given {given} times; RFC 7208 6 allows it once"
            ));
        }
    }
    Ok(terms)
}

/// The domain a querying term names: its value without a CIDR suffix, or
/// the current domain. `None` for values with macros, which need a message
/// to expand.
fn target(term: &Termino, current: &Name) -> Option<Name> {
    let value = term.valor.split('/').next().unwrap_or("");
    if value.is_empty() {
        return Some(current.clone());
    }
    if value.contains('%') {
        return None;
    }
    let mut name = Name::from_ascii(value).ok()?;
    name.set_fqdn(true);
    Some(name.to_lowercase())
}

/// The one DNS question SPF evaluation asks: [`Net`] answers it (the
/// resolver, then the domain's own servers); the fuzzing harness answers
/// from a zone held in memory.
pub(crate) trait SpfLookup: Sync {
    fn lookup(
        &self,
        name: &Name,
        rtype: RecordType,
    ) -> impl Future<Output = Result<Answer, QueryError>> + Send;
}

impl SpfLookup for Net {
    fn lookup(
        &self,
        name: &Name,
        rtype: RecordType,
    ) -> impl Future<Output = Result<Answer, QueryError>> + Send {
        Net::lookup(self, name, rtype)
    }
}

/// Counts of one SPF evaluation.
#[derive(Default)]
struct SpfWalk {
    lookups: usize,
    voids: usize,
    included: Vec<String>,
    errors: Vec<(Tipo, String)>,
}

impl SpfWalk {
    /// Records an error once, however often its domain is reached.
    fn error(&mut self, tipo: Tipo, detail: String) {
        if !self.errors.iter().any(|(_, known)| *known == detail) {
            self.errors.push((tipo, detail));
        }
    }
}

pub(crate) async fn check_spf(
    net: &impl SpfLookup,
    name: &Name,
    apex: &[String],
    hallazgos: &mut Vec<Hallazgo>,
) -> Spf {
    let records = tagged(apex, "v=spf1");
    let mut spf = Spf {
        registro: records.first().cloned(),
        cantidad: records.len(),
        terminos: Vec::new(),
        consultas_dns: 0,
        consultas_vacias: 0,
        incluidos: Vec::new(),
    };
    let Some(record) = records.first() else {
        hallazgos.push(Tipo::SpfAusente.hallazgo(format!(
            "{} has no TXT record starting with v=spf1",
            show(name)
        )));
        return spf;
    };
    if records.len() > 1 {
        hallazgos.push(Tipo::SpfMultiple.hallazgo(format!(
            "{} has {} SPF records: {}",
            show(name),
            records.len(),
            records.join(" | ")
        )));
    }
    let terms = match parse_spf(record) {
        Ok(terms) => terms,
        Err(error) => {
            hallazgos.push(Tipo::SpfSintaxis.hallazgo(format!("{}: {error}", show(name))));
            return spf;
        }
    };
    for term in &terms {
        match (term.tipo.as_str(), term.calificador.as_str()) {
            ("all", "+") => hallazgos.push(Tipo::SpfAllPermisivo.hallazgo(format!(
                "the SPF of {} ends in +all: any host may send as it",
                show(name)
            ))),
            ("all", "?") => hallazgos.push(
                Tipo::SpfAllNeutral.hallazgo(format!("the SPF of {} ends in ?all", show(name))),
            ),
            ("ptr", _) => {
                hallazgos.push(Tipo::SpfPtr.hallazgo(format!("the SPF of {} uses ptr", show(name))))
            }
            _ => {}
        }
    }
    let mut walk = SpfWalk::default();
    walk_terms(net, name, &terms, &mut walk).await;
    spf.terminos = terms;
    spf.consultas_dns = walk.lookups;
    spf.consultas_vacias = walk.voids;
    spf.incluidos = walk.included;
    if walk.lookups > SPF_LOOKUP_LIMIT {
        hallazgos.push(Tipo::SpfDemasiadasConsultas.hallazgo(format!(
            "evaluating the SPF of {} takes {}{} DNS-querying terms; the limit is {SPF_LOOKUP_LIMIT}",
            show(name),
            walk.lookups,
            if walk.lookups >= SPF_HARD_STOP { " or more" } else { "" }
        )));
    }
    if walk.voids > SPF_VOID_LIMIT {
        hallazgos.push(Tipo::SpfConsultasVacias.hallazgo(format!(
            "{} of the SPF lookups of {} find nothing; the limit is {SPF_VOID_LIMIT}",
            walk.voids,
            show(name)
        )));
    }
    for (tipo, detalle) in walk.errors {
        hallazgos.push(tipo.hallazgo(detalle));
    }
    spf
}

/// Whether an answer holds no records of the asked type where `name`
/// leads (a void lookup).
fn is_void(answer: &Answer, name: &Name, rtype: RecordType) -> bool {
    answer.resolved(name, rtype).next().is_none()
}

/// Counts the querying terms of one record and follows its includes and
/// redirect, one level at a time, the lookups of a level asked at once.
async fn walk_terms(net: &impl SpfLookup, current: &Name, terms: &[Termino], walk: &mut SpfWalk) {
    let mut level: Vec<(Name, Vec<Termino>)> = vec![(current.clone(), terms.to_vec())];
    while !level.is_empty() && walk.lookups < SPF_HARD_STOP {
        let mut questions: Vec<(String, Name, RecordType)> = Vec::new();
        for (domain, terms) in &level {
            // RFC 7208 6.1: `redirect` is ignored when the record has an
            // `all`; a modifier spelt like a mechanism (`a=...`) is an
            // unknown modifier, which queries nothing.
            let has_all = terms
                .iter()
                .any(|term| term.tipo == "all" && !term.calificador.is_empty());
            for term in terms {
                let querying = if term.calificador.is_empty() {
                    term.tipo == "redirect" && !has_all
                } else {
                    matches!(
                        term.tipo.as_str(),
                        "include" | "a" | "mx" | "ptr" | "exists"
                    )
                };
                if !querying {
                    continue;
                }
                walk.lookups += 1;
                let Some(target) = target(term, domain) else {
                    continue;
                };
                let rtype = match term.tipo.as_str() {
                    "include" | "redirect" => RecordType::TXT,
                    "mx" => RecordType::MX,
                    "ptr" => continue,
                    _ => RecordType::A,
                };
                questions.push((term.tipo.clone(), target, rtype));
            }
        }
        let answers = join_all(
            questions
                .iter()
                .map(|(_, target, rtype)| SpfLookup::lookup(net, target, *rtype)),
        )
        .await;
        let mut next = Vec::new();
        for ((kind, target, rtype), answer) in questions.into_iter().zip(answers) {
            let Some(answer) = answer.ok().filter(Answer::is_answer) else {
                continue;
            };
            if is_void(&answer, &target, rtype) {
                walk.voids += 1;
            }
            if rtype != RecordType::TXT {
                continue;
            }
            let records = tagged(&txts(&answer, &target), "v=spf1");
            let Some(record) = records.first() else {
                let chain = answer.chain(&target);
                let detail = if !chain.is_alias() {
                    format!("the SPF {kind} of {} has no SPF record", show(&target))
                } else if answer.rcode == ResponseCode::NXDomain {
                    format!(
                        "the SPF {kind} of {}: {}, which does not exist (NXDOMAIN)",
                        show(&target),
                        chain.describe()
                    )
                } else {
                    format!(
                        "the SPF {kind} of {}: {}, which has no SPF record",
                        show(&target),
                        chain.describe()
                    )
                };
                walk.error(Tipo::SpfIncludeFallido, detail);
                continue;
            };
            // A domain reached twice is evaluated twice, and its terms
            // counted twice (RFC 7208 4.6.4): a loop runs into the limit.
            if !walk.included.contains(&show(&target)) {
                walk.included.push(show(&target));
            }
            match parse_spf(record) {
                Ok(terms) => next.push((target, terms)),
                Err(error) => walk.error(
                    Tipo::SpfSintaxis,
                    format!("{} (reached by {kind}): {error}", show(&target)),
                ),
            }
        }
        level = next;
    }
}

pub(crate) fn check_dmarc(texts: &[String], hallazgos: &mut Vec<Hallazgo>) -> Dmarc {
    let records = tagged(texts, "v=dmarc1");
    let mut dmarc = Dmarc {
        registro: records.first().cloned(),
        cantidad: records.len(),
        ..Dmarc::default()
    };
    let Some(record) = records.first() else {
        hallazgos.push(
            Tipo::DmarcAusente
                .hallazgo("no TXT record starting with v=DMARC1 at _dmarc".to_owned()),
        );
        return dmarc;
    };
    if records.len() > 1 {
        hallazgos.push(Tipo::DmarcMultiple.hallazgo(format!(
            "{} DMARC records: {}",
            records.len(),
            records.join(" | ")
        )));
    }
    let mut problems = Vec::new();
    for (index, part) in record
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        let Some((tag, value)) = part.split_once('=') else {
            problems.push(format!("`{part}` is not tag=value"));
            continue;
        };
        let (tag, value) = (tag.trim().to_ascii_lowercase(), value.trim());
        let policy = |value: &str| {
            let lower = value.to_ascii_lowercase();
            matches!(lower.as_str(), "none" | "quarantine" | "reject").then_some(lower)
        };
        let alignment = |value: &str| {
            let lower = value.to_ascii_lowercase();
            matches!(lower.as_str(), "r" | "s").then_some(lower)
        };
        let uris = |value: &str| -> Vec<String> {
            value
                .split(',')
                .map(|u| u.trim().to_owned())
                .filter(|u| !u.is_empty())
                .collect()
        };
        match tag.as_str() {
            "v" if index == 0 => {}
            "v" => problems.push("`v` must be the first tag".to_owned()),
            "p" if index == 1 => match policy(value) {
                Some(p) => dmarc.p = Some(p),
                None => problems.push(format!("p={value} is not none, quarantine or reject")),
            },
            "p" => problems.push("`p` must follow `v` directly".to_owned()),
            "sp" => match policy(value) {
                Some(p) => dmarc.sp = Some(p),
                None => problems.push(format!("sp={value} is not none, quarantine or reject")),
            },
            // RFC 7489 6.3: digits only (`u8` alone takes `+50`).
            "pct" => match value.parse::<u8>() {
                Ok(pct) if pct <= 100 && value.bytes().all(|b| b.is_ascii_digit()) => {
                    dmarc.pct = Some(pct);
                }
                _ => problems.push(format!("pct={value} is not a whole number from 0 to 100")),
            },
            "adkim" => match alignment(value) {
                Some(a) => dmarc.adkim = Some(a),
                None => problems.push(format!("adkim={value} is not r or s")),
            },
            "aspf" => match alignment(value) {
                Some(a) => dmarc.aspf = Some(a),
                None => problems.push(format!("aspf={value} is not r or s")),
            },
            "rua" | "ruf" => {
                let list = uris(value);
                if let Some(bad) = list.iter().find(|u| !u.contains(':')) {
                    problems.push(format!(
                        "{tag}: `{bad}` is not a URI such as mailto:reports@example.com"
                    ));
                }
                if tag == "rua" {
                    dmarc.rua = list;
                } else {
                    dmarc.ruf = list;
                }
            }
            // fo, rf, ri and unknown tags are allowed (RFC 7489 6.3).
            _ => {}
        }
    }
    if dmarc.p.is_none()
        && !problems
            .iter()
            .any(|p| p.starts_with("p=") || p.contains("`p`"))
    {
        problems.push("the required tag `p` is missing".to_owned());
    }
    if !problems.is_empty() {
        hallazgos
            .push(Tipo::DmarcMalFormado.hallazgo(format!("{record}: {}", problems.join("; "))));
    }
    if dmarc.p.as_deref() == Some("none") {
        hallazgos.push(Tipo::DmarcPNone.hallazgo("p=none: failures are only reported".to_owned()));
    }
    if let Some(pct) = dmarc.pct.filter(|pct| *pct < 100) {
        hallazgos.push(Tipo::DmarcPctParcial.hallazgo(format!("pct={pct}")));
    }
    if dmarc.rua.is_empty() && problems.is_empty() {
        hallazgos.push(
            Tipo::DmarcSinRua.hallazgo("no rua: nobody receives aggregate reports".to_owned()),
        );
    }
    dmarc
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn spf_terms_parse() {
        let terms = parse_spf(
            "v=spf1 ip4:192.0.2.0/24 -include:_spf.example.com mx/24 redirect=x.example ~all",
        )
        .unwrap();
        let shown: Vec<(String, String, String)> = terms
            .into_iter()
            .map(|t| (t.calificador, t.tipo, t.valor))
            .collect();
        assert_eq!(
            shown,
            [
                ("+", "ip4", "192.0.2.0/24"),
                ("-", "include", "_spf.example.com"),
                ("+", "mx", "/24"),
                ("", "redirect", "x.example"),
                ("~", "all", ""),
            ]
            .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()))
        );
        assert!(parse_spf("v=spf1 include").is_err());
        assert!(parse_spf("v=spf1 foo:bar").is_err());
        assert!(parse_spf("v=spf1 ip4:300.1.1.1").is_err());
        assert!(parse_spf("v=spf1 all:x").is_err());
    }

    #[test]
    fn issue_22_only_one_colon_separates_a_mechanism_from_its_value() {
        let terms = parse_spf("v=spf1 include::example.com mx:mail.example.com -all").unwrap();
        assert_eq!(terms[0].valor, ":example.com");
        assert_eq!(terms[1].valor, "mail.example.com");
    }

    #[test]
    fn issue_22_a_signed_pct_is_malformed() {
        let mut findings = Vec::new();
        let dmarc = check_dmarc(&["v=DMARC1; p=none; pct=+50".to_owned()], &mut findings);
        assert_eq!(dmarc.pct, None);
        assert!(
            findings
                .iter()
                .any(|finding| finding.detalle.contains("pct=+50 is not a whole number")),
            "{findings:?}"
        );
    }

    #[test]
    fn dmarc_tags_parse_and_problems_are_found() {
        let mut found = Vec::new();
        let dmarc = check_dmarc(
            &[
                "v=DMARC1; p=reject; sp=quarantine; pct=50; rua=mailto:a@example.com; adkim=s"
                    .to_owned(),
            ],
            &mut found,
        );
        assert_eq!(dmarc.p.as_deref(), Some("reject"));
        assert_eq!(dmarc.sp.as_deref(), Some("quarantine"));
        assert_eq!(dmarc.pct, Some(50));
        assert_eq!(dmarc.adkim.as_deref(), Some("s"));
        let codes: Vec<&str> = found.iter().map(|h| h.tipo.as_str()).collect();
        assert_eq!(codes, ["dmarc_pct_parcial"]);

        let mut found = Vec::new();
        check_dmarc(&["v=DMARC1; p=maybe".to_owned()], &mut found);
        assert_eq!(
            found.first().map(|h| h.tipo.as_str()),
            Some("dmarc_mal_formado")
        );
        let mut found = Vec::new();
        check_dmarc(
            &["v=DMARC1; rua=mailto:a@example.com".to_owned()],
            &mut found,
        );
        assert_eq!(
            found.first().map(|h| h.tipo.as_str()),
            Some("dmarc_mal_formado")
        );
    }
}
