//! Mail policy records under a fuzzer (`fuzz/fuzz_targets/mail_records.rs`
//! calls [`mail_records`]; the committed corpus is replayed by this
//! module's test). The invariants: an SPF record parses without panicking,
//! and what it parses to, printed back as SPF, parses to the same terms; a
//! DMARC record is read without panicking, and what it keeps is within
//! its tags' ranges.

use crate::mail::{Termino, check_dmarc, parse_spf};

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
    if let Ok(terms) = parse_spf(&record) {
        let printed: Vec<String> = terms.iter().map(print).collect();
        let again = parse_spf(&format!("v=spf1 {}", printed.join(" ")))
            .unwrap_or_else(|error| panic!("{record:?} printed as {printed:?} fails: {error}"));
        assert_eq!(again, terms, "{record:?} printed as {printed:?}");
    }
    let mut findings = Vec::new();
    let dmarc = check_dmarc(
        &[format!("v=DMARC1; {text}"), text.to_string()],
        &mut findings,
    );
    assert!(dmarc.pct.is_none_or(|pct| pct <= 100), "{dmarc:?}");
    for policy in [&dmarc.p, &dmarc.sp] {
        assert!(
            policy
                .as_deref()
                .is_none_or(|p| ["none", "quarantine", "reject"].contains(&p)),
            "{dmarc:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_mail_records_pass() {
        nexo_testkit::replay("mail_records", super::mail_records);
    }
}
