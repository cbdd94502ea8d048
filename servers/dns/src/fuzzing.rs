//! Mail policy records under a fuzzer (`fuzz/fuzz_targets/mail_records.rs`
//! calls [`mail_records`]; the committed corpus is replayed by this
//! module's test). The invariants: an SPF record parses without panicking,
//! what it parses to, printed back as SPF, parses to the same terms, and
//! each term's qualifier, name and value are what a reading of RFC 7208
//! written here finds, and a record with `redirect` or `exp` twice does not
//! parse; a DMARC record is read without panicking, and the
//! tags it keeps (`p`, `sp`, `pct`, `adkim`, `aspf`) are what a reading of
//! RFC 7489 written here finds. And [`spf_lookups`]: an SPF evaluation
//! over a zone held in memory reports the 10-lookup and 2-void limits of
//! RFC 7208 exactly when a reference evaluation counts past them.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::rdata::{A, MX, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use crate::findings::Tipo;
use crate::mail::{SpfLookup, Termino, check_dmarc, check_spf, parse_spf};
use crate::query::{Answer, QueryError};

/// One term as SPF writes it.
fn print(term: &Termino) -> String {
    if term.calificador.is_empty() {
        format!("{}={}", term.tipo, term.valor)
    } else if term.valor.is_empty() || term.valor.starts_with('/') {
        format!("{}{}{}", term.calificador, term.tipo, term.valor)
    } else {
        format!("{}{}:{}", term.calificador, term.tipo, term.valor)
    }
}

/// One fuzz input: the text of a TXT record, read as SPF and as DMARC.
pub fn mail_records(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let record = format!("v=spf1 {text}");
    // RFC 7208 6: a record with `redirect` or `exp` twice is a permanent
    // error, never a record to follow.
    let modifiers: Vec<String> = record
        .split_ascii_whitespace()
        .skip(1)
        .map(reference_term)
        .filter(|(qualifier, _, _)| qualifier.is_empty())
        .map(|(_, name, _)| name)
        .collect();
    let twice = ["redirect", "exp"]
        .iter()
        .any(|modifier| modifiers.iter().filter(|name| name == modifier).count() > 1);
    if twice {
        assert!(parse_spf(&record).is_err(), "{record:?} parsed");
    }
    if let Ok(terms) = parse_spf(&record) {
        let printed: Vec<String> = terms.iter().map(print).collect();
        let again = parse_spf(&format!("v=spf1 {}", printed.join(" ")))
            .unwrap_or_else(|error| panic!("{record:?} printed as {printed:?} fails: {error}"));
        assert_eq!(again, terms, "{record:?} printed as {printed:?}");
        for (term, written) in terms.iter().zip(record.split_ascii_whitespace().skip(1)) {
            let (qualifier, name, value) = reference_term(written);
            assert_eq!(
                (
                    term.calificador.as_str(),
                    term.tipo.as_str(),
                    term.valor.as_str()
                ),
                (qualifier, name.as_str(), value),
                "{written:?} in {record:?}"
            );
        }
    }
    let mut findings = Vec::new();
    let dmarc = check_dmarc(
        &[format!("v=DMARC1; {text}"), text.to_string()],
        &mut findings,
    );
    let expected = reference_dmarc(&format!("v=DMARC1; {text}"));
    let read = [
        ("p", dmarc.p.clone()),
        ("sp", dmarc.sp.clone()),
        ("pct", dmarc.pct.map(|pct| pct.to_string())),
        ("adkim", dmarc.adkim.clone()),
        ("aspf", dmarc.aspf.clone()),
    ];
    for (tag, value) in read {
        if let Some(expected) = expected.get(tag) {
            assert_eq!(&value, expected, "`{tag}` of {text:?}");
        }
    }
}

/// One SPF term as RFC 7208 (section 4.6.1, 5, 6) writes it: a modifier
/// `name=value` (a name of letters, digits, `-`, `_`, `.`, starting with a
/// letter, no qualifier); else a mechanism with its qualifier (`+` when
/// none is written), its name in lower case, and what follows the one `:`
/// after it, or its CIDR length from the `/`.
fn reference_term(term: &str) -> (&str, String, &str) {
    if let Some((name, value)) = term.split_once('=') {
        let mut chars = name.chars();
        if chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return ("", name.to_ascii_lowercase(), value);
        }
    }
    let (qualifier, rest) = match term.get(..1) {
        Some(q @ ("+" | "-" | "~" | "?")) => (q, &term[1..]),
        _ => ("+", term),
    };
    let end = rest.find([':', '/']).unwrap_or(rest.len());
    let (name, after) = rest.split_at(end);
    let value = after.strip_prefix(':').unwrap_or(after);
    (qualifier, name.to_ascii_lowercase(), value)
}

/// The tags of a DMARC record (RFC 7489 6.3, 6.4) a reader keeps, read
/// afresh: `p` only as the tag right after `v`, the others when given once;
/// a policy is `none`, `quarantine` or `reject` and an alignment `r` or `s`
/// (any case, kept in lower case), `pct` a whole number of digits, 0 to
/// 100. A tag given twice is left out (the reader may keep either).
fn reference_dmarc(record: &str) -> std::collections::BTreeMap<&'static str, Option<String>> {
    let tags: Vec<(String, &str)> = record
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| match part.split_once('=') {
            Some((tag, value)) => (tag.trim().to_ascii_lowercase(), value.trim()),
            None => (String::new(), part),
        })
        .collect();
    let one_of = |value: &str, allowed: &[&str]| {
        let lower = value.to_ascii_lowercase();
        allowed.contains(&lower.as_str()).then_some(lower)
    };
    let policies = ["none", "quarantine", "reject"];
    let mut expected = std::collections::BTreeMap::new();
    let p = tags
        .get(1)
        .filter(|(tag, _)| tag == "p")
        .and_then(|(_, value)| one_of(value, &policies));
    expected.insert("p", p);
    for tag in ["sp", "pct", "adkim", "aspf"] {
        let given: Vec<&str> = tags
            .iter()
            .filter(|(name, _)| name == tag)
            .map(|(_, value)| *value)
            .collect();
        let value = match given.as_slice() {
            [] => None,
            [value] => match tag {
                "sp" => one_of(value, &policies),
                "pct" => {
                    let digits = value.trim_start_matches('0');
                    (!value.is_empty()
                        && value.bytes().all(|b| b.is_ascii_digit())
                        && digits.len() <= 3)
                        .then(|| digits.parse::<u32>().unwrap_or(0))
                        .filter(|pct| *pct <= 100)
                        .map(|pct| pct.to_string())
                }
                _ => one_of(value, &["r", "s"]),
            },
            _ => continue,
        };
        expected.insert(tag, value);
    }
    expected
}

/// A zone held in memory, built from a fuzz input: the SPF record of the
/// apex (`apex.test`) and of `d1.test`, `d2.test`... one a line (`v=spf1`
/// added). Any other TXT question finds nothing; an A or MX question finds
/// one record when the name's first label starts with `h`, NXDOMAIN when
/// it starts with `n`, and nothing otherwise.
struct MemoryZone {
    records: BTreeMap<Name, String>,
}

impl MemoryZone {
    fn answer(&self, name: &Name, rtype: RecordType) -> Answer {
        let first = name
            .iter()
            .next()
            .and_then(|label| label.first().copied())
            .map(|byte| byte.to_ascii_lowercase());
        let data = match rtype {
            RecordType::TXT => self
                .records
                .get(name)
                .map(|record| RData::TXT(TXT::new(vec![record.clone()]))),
            RecordType::A if first == Some(b'h') => Some(RData::A(A(Ipv4Addr::new(192, 0, 2, 1)))),
            RecordType::MX if first == Some(b'h') => Some(RData::MX(MX::new(10, name.clone()))),
            _ => None,
        };
        let nxdomain = data.is_none() && rtype != RecordType::TXT && first == Some(b'n');
        Answer {
            rcode: if nxdomain {
                ResponseCode::NXDomain
            } else {
                ResponseCode::NoError
            },
            authoritative: true,
            answers: data
                .map(|data| Record::from_rdata(name.clone(), 300, data))
                .into_iter()
                .collect(),
            authorities: Vec::new(),
            additionals: Vec::new(),
            via_tcp: false,
        }
    }
}

impl SpfLookup for MemoryZone {
    fn lookup(
        &self,
        name: &Name,
        rtype: RecordType,
    ) -> impl Future<Output = Result<Answer, QueryError>> + Send {
        std::future::ready(Ok(self.answer(name, rtype)))
    }
}

/// RFC 7208 4.6.4: at most 10 DNS-querying terms, at most 2 void lookups.
const LOOKUP_LIMIT: usize = 10;
const VOID_LIMIT: usize = 2;

/// One fuzz input: a zone (see [`MemoryZone`]). The SPF evaluation of the
/// apex reports too many DNS-querying terms exactly when a reference
/// evaluation, written from RFC 7208 4.6.4, counts more than 10, and too
/// many void lookups exactly when it counts more than 2 (and finished
/// within the lookup limit, where it stops).
pub fn spf_lookups(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let apex_record = format!("v=spf1 {}", lines.next().unwrap_or_default());
    let Ok(apex) = Name::from_ascii("apex.test.") else {
        return;
    };
    let mut records = BTreeMap::new();
    records.insert(apex.clone(), apex_record.clone());
    for (index, line) in lines.take(16).enumerate() {
        if let Ok(name) = Name::from_ascii(format!("d{}.test.", index + 1)) {
            records.insert(name, format!("v=spf1 {line}"));
        }
    }
    let zone = MemoryZone { records };
    let mut findings = Vec::new();
    futures::executor::block_on(check_spf(
        &zone,
        &apex,
        std::slice::from_ref(&apex_record),
        &mut findings,
    ));
    let reported = |tipo: Tipo| findings.iter().any(|finding| finding.tipo == tipo.code());
    let mut counts = Counts::default();
    counts.evaluate(&zone, &apex, &apex_record);
    assert_eq!(
        reported(Tipo::SpfDemasiadasConsultas),
        counts.lookups > LOOKUP_LIMIT,
        "{} DNS-querying terms by the reference: {findings:?} {:?}",
        counts.lookups,
        zone.records
    );
    if counts.lookups <= LOOKUP_LIMIT {
        assert_eq!(
            reported(Tipo::SpfConsultasVacias),
            counts.voids > VOID_LIMIT,
            "{} void lookups by the reference: {findings:?} {:?}",
            counts.voids,
            zone.records
        );
    }
}

/// What a reference evaluation counts: every DNS-querying term met, as
/// many times as it is met (an `include` of the same domain twice counts
/// both, and a loop runs on past the limit), and every lookup that finds
/// no record. It stops once the count is past the limit.
#[derive(Default)]
struct Counts {
    lookups: usize,
    voids: usize,
}

impl Counts {
    fn evaluate(&mut self, zone: &MemoryZone, domain: &Name, record: &str) {
        // A TXT record is read without the blanks around it.
        let Ok(terms) = parse_spf(record.trim()) else {
            return;
        };
        // RFC 7208 6.1: `redirect` is ignored when the record has the
        // `all` mechanism; a modifier named `all=` is not it (found by a
        // 240 s run: the reference stopped at `all=x redirect=...`).
        let has_all = terms
            .iter()
            .any(|term| term.tipo == "all" && !term.calificador.is_empty());
        for term in &terms {
            if self.lookups > LOOKUP_LIMIT {
                return;
            }
            let rtype = match (term.tipo.as_str(), term.calificador.is_empty()) {
                ("include", false) => RecordType::TXT,
                ("redirect", true) if !has_all => RecordType::TXT,
                ("a" | "exists", false) => RecordType::A,
                ("mx", false) => RecordType::MX,
                ("ptr", false) => {
                    self.lookups += 1;
                    continue;
                }
                _ => continue,
            };
            self.lookups += 1;
            let value = term.valor.split('/').next().unwrap_or_default();
            // A macro needs a message to expand: counted, not asked.
            if value.contains('%') {
                continue;
            }
            let target = if value.is_empty() {
                domain.clone()
            } else {
                match Name::from_ascii(value) {
                    Ok(mut name) => {
                        name.set_fqdn(true);
                        name.to_lowercase()
                    }
                    Err(_) => continue,
                }
            };
            let answer = zone.answer(&target, rtype);
            if answer.answers.is_empty() {
                self.voids += 1;
            }
            if rtype == RecordType::TXT
                && let Some(included) = zone.records.get(&target)
            {
                self.evaluate(zone, &target, included);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_spf_zones_pass() {
        nexo_testkit::replay("spf_lookups", super::spf_lookups);
    }

    /// Issue 22, found by the `spf_lookups` target: a domain included
    /// twice was counted once (and an include loop never reached the
    /// limit), a `redirect` beside `all` (which RFC 7208 6.1 ignores) was
    /// counted and followed, and so were modifiers named `a=` or
    /// `include=`. Each input is in fuzz/regressions/spf_lookups.
    #[test]
    fn issue_22_spf_lookups_are_counted_as_rfc_7208_counts_them() {
        for zone in [
            "include:d1.test include:d1.test -all\na a a a a -all\n",
            "include:d1.test -all\ninclude:d2.test\ninclude:d1.test\n",
            "redirect=d1.test -all\na a a a a a a a a a a\n",
            "a=h.test include=d1.test -all\na a a a a a a a a a a\n",
        ] {
            super::spf_lookups(zone.as_bytes());
        }
    }

    /// The reference counts what RFC 7208 counts.
    #[test]
    fn the_reference_counts_lookups() {
        let zone = super::MemoryZone {
            records: [("d1.test.", "v=spf1 a mx:h.test -all")]
                .into_iter()
                .filter_map(|(name, record)| {
                    Some((super::Name::from_ascii(name).ok()?, record.to_owned()))
                })
                .collect(),
        };
        let mut counts = super::Counts::default();
        let apex = super::Name::from_ascii("apex.test.").unwrap_or_else(|error| panic!("{error}"));
        counts.evaluate(
            &zone,
            &apex,
            "v=spf1 include:d1.test include:d1.test a:n.test ~all",
        );
        assert_eq!((counts.lookups, counts.voids), (7, 3));
    }

    #[test]
    fn the_committed_mail_records_pass() {
        nexo_testkit::replay("mail_records", super::mail_records);
    }
}
