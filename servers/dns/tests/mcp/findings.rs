//! What every tool must find in every zone of the standard bed, exactly:
//! the healthy zones (`ok`, `signed`, the TLD `test`) show nothing but the
//! `info` fact that `ok` is unsigned, and each broken zone shows its own
//! code, with the severity the README's table gives it, and no other. A
//! second test checks that every code of the README's
//! table has a case here for every tool that reports it, so a new code
//! cannot land without a zone.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use futures::StreamExt;
use nexo_dns::Tipo;
use nexo_dns_testbed::{NOBODY, RESOLVER, RESOLVER2, VALIDATOR};
use serde_json::json;

use crate::support::{Error, bed, client, client_of, structured};

/// How a case asks.
enum Ask {
    /// This tool, of a handler whose resolver is at this address of the
    /// bed: [`RESOLVER`] (which does not validate), [`VALIDATOR`] (BIND,
    /// validating), [`NOBODY`] (nothing listens), [`REFUSER`] (a server
    /// that refuses every question).
    Tool(&'static str, Ipv4Addr),
    /// `propagacion` with these resolvers.
    Propagation(&'static [Ipv4Addr]),
}

use Ask::{Propagation, Tool};

/// A DNS server of the bed that holds no zone and answers REFUSED: the
/// third server of `refusing.test`.
const REFUSER: Ipv4Addr = Ipv4Addr::new(127, 56, 5, 1);

const SALUD: Ask = Tool("salud_dns", RESOLVER);
const CORREO: Ask = Tool("correo_politicas", RESOLVER);
const DNSSEC: Ask = Tool("estado_dnssec", RESOLVER);
const V_SALUD: Ask = Tool("salud_dns", VALIDATOR);
const V_CORREO: Ask = Tool("correo_politicas", VALIDATOR);
const V_DNSSEC: Ask = Tool("estado_dnssec", VALIDATOR);

/// The severities, as the README's table gives them: written out here, not
/// taken from the crate, so that a finding with the wrong one fails.
const INFO: &str = "info";
const BAJA: &str = "baja";
const MEDIA: &str = "media";
const ALTA: &str = "alta";
const CRITICA: &str = "critica";

/// A finding a case expects: its code and its severity.
type Finding = (&'static str, &'static str);

/// (how, dominio, exactly the findings' codes and severities).
const CASES: &[(Ask, &str, &[Finding])] = &[
    // Healthy: the TLD (signed, as the root is), an unsigned zone and a
    // signed one.
    (SALUD, "test", &[]),
    (DNSSEC, "test", &[]),
    (SALUD, "ok.test", &[]),
    (CORREO, "ok.test", &[]),
    (DNSSEC, "ok.test", &[("dnssec_no_firmado", INFO)]),
    (SALUD, "signed.test", &[]),
    (CORREO, "signed.test", &[]),
    (DNSSEC, "signed.test", &[]),
    (DNSSEC, "www.signed.test", &[]),
    (Propagation(&[RESOLVER, RESOLVER2]), "ok.test", &[]),
    // salud_dns
    (SALUD, "nope.test", &[("dominio_inexistente", CRITICA)]),
    (
        Tool("salud_dns", NOBODY),
        "ok.test",
        &[("resolutor_sin_respuesta", ALTA)],
    ),
    (
        Tool("salud_dns", REFUSER),
        "ok.test",
        &[("resolutor_rechaza", ALTA)],
    ),
    (SALUD, "nons.test", &[("sin_ns", CRITICA)]),
    (SALUD, "noaddr.test", &[("ns_sin_direccion", ALTA)]),
    (
        SALUD,
        "lame.test",
        &[("delegacion_coja_sin_respuesta", ALTA)],
    ),
    (
        SALUD,
        "slow.test",
        &[("delegacion_coja_sin_respuesta", ALTA)],
    ),
    (
        SALUD,
        "dead.test",
        &[("delegacion_coja_sin_respuesta", ALTA)],
    ),
    (
        SALUD,
        "refusing.test",
        &[("delegacion_coja_no_autoritativa", ALTA)],
    ),
    (
        SALUD,
        "parentns.test",
        &[("ns_padre_hijo_distintos", MEDIA)],
    ),
    (SALUD, "serial.test", &[("serial_soa_distinto", MEDIA)]),
    (SALUD, "single.test", &[("ns_unico", ALTA)]),
    (SALUD, "samenet.test", &[("ns_misma_red", MEDIA)]),
    (SALUD, "wild.test", &[("wildcard", MEDIA)]),
    (SALUD, "dangling.test", &[("cname_colgante", ALTA)]),
    // The name asked is itself an alias: of nothing, then of a host.
    (SALUD, "www.dangling.test", &[("cname_colgante", ALTA)]),
    (SALUD, "mx.mxcname.test", &[]),
    // Issue 36: a chain of two whose end is missing, a loop, a wildcard
    // alias of nothing (www matches it), an alias into a zone this
    // resolver holds (the target is missing there).
    (SALUD, "chain.test", &[("cname_colgante", ALTA)]),
    (SALUD, "www.chain.test", &[("cname_colgante", ALTA)]),
    (SALUD, "loop.test", &[("cname_bucle", ALTA)]),
    (SALUD, "www.loop.test", &[("cname_bucle", ALTA)]),
    (
        SALUD,
        "wildalias.test",
        &[("wildcard", MEDIA), ("cname_colgante", ALTA)],
    ),
    (SALUD, "intodead.test", &[("cname_colgante", ALTA)]),
    (SALUD, "ttl.test", &[("ttl_desbalanceado", BAJA)]),
    (SALUD, "ttlmix.test", &[("ttl_inconsistente", BAJA)]),
    (SALUD, "stale.test", &[("recursivo_difiere", BAJA)]),
    (SALUD, "split.test", &[("autoritativos_difieren", MEDIA)]),
    // correo_politicas
    (CORREO, "nomx.test", &[("mx_ausente", BAJA)]),
    (CORREO, "nullmx.test", &[("mx_nulo", INFO)]),
    (CORREO, "nullmxplus.test", &[("mx_nulo_con_otros", MEDIA)]),
    (CORREO, "mxcname.test", &[("mx_cname", MEDIA)]),
    (CORREO, "mxnoaddr.test", &[("mx_sin_direccion", ALTA)]),
    (CORREO, "nospf.test", &[("spf_ausente", MEDIA)]),
    (CORREO, "twospf.test", &[("spf_multiple", ALTA)]),
    (CORREO, "badspf.test", &[("spf_sintaxis", ALTA)]),
    (
        CORREO,
        "spflimit.test",
        &[("spf_demasiadas_consultas", ALTA)],
    ),
    (CORREO, "spfvoid.test", &[("spf_consultas_vacias", MEDIA)]),
    (CORREO, "spfinclude.test", &[("spf_include_fallido", ALTA)]),
    (CORREO, "spfall.test", &[("spf_all_permisivo", ALTA)]),
    (CORREO, "spfneutral.test", &[("spf_all_neutral", MEDIA)]),
    (CORREO, "spfptr.test", &[("spf_ptr", BAJA)]),
    (CORREO, "nodmarc.test", &[("dmarc_ausente", MEDIA)]),
    (CORREO, "twodmarc.test", &[("dmarc_multiple", ALTA)]),
    (CORREO, "baddmarc.test", &[("dmarc_mal_formado", ALTA)]),
    (CORREO, "dmarcnone.test", &[("dmarc_p_none", BAJA)]),
    (CORREO, "dmarcpct.test", &[("dmarc_pct_parcial", BAJA)]),
    (CORREO, "dmarcnorua.test", &[("dmarc_sin_rua", INFO)]),
    (CORREO, "mtasts.test", &[("mta_sts", INFO)]),
    (CORREO, "tlsrpt.test", &[("tls_rpt", INFO)]),
    (CORREO, "nope.test", &[("dominio_inexistente", CRITICA)]),
    // Issue 36: a modifier given twice; policies read through aliases; an
    // include and an MX host that are aliases of nothing; a domain that is.
    (CORREO, "tworedirect.test", &[("spf_sintaxis", ALTA)]),
    (CORREO, "twoexp.test", &[("spf_sintaxis", ALTA)]),
    (CORREO, "spfcname.test", &[]),
    (CORREO, "spfdangling.test", &[("spf_include_fallido", ALTA)]),
    (
        CORREO,
        "mxdangling.test",
        &[("mx_cname", MEDIA), ("mx_sin_direccion", ALTA)],
    ),
    (CORREO, "www.dangling.test", &[("cname_colgante", ALTA)]),
    (CORREO, "www.loop.test", &[("cname_bucle", ALTA)]),
    (
        CORREO,
        "mx.mxcname.test",
        &[
            ("mx_ausente", BAJA),
            ("spf_ausente", MEDIA),
            ("dmarc_ausente", MEDIA),
        ],
    ),
    (
        Tool("correo_politicas", NOBODY),
        "ok.test",
        &[("resolutor_sin_respuesta", ALTA)],
    ),
    (
        Tool("correo_politicas", REFUSER),
        "ok.test",
        &[("resolutor_rechaza", ALTA)],
    ),
    // The bed's resolver does not follow a CNAME into another zone, as a
    // real one does (the validating resolver's cases below); with no
    // resolver, the chain of `_dmarc` is followed from the zone's servers
    // to ok.test's.
    (
        Tool("correo_politicas", NOBODY),
        "dmarccname.test",
        &[("resolutor_sin_respuesta", ALTA)],
    ),
    // With no resolver, an alias of nothing is read from its zone's
    // servers, as through the resolver.
    (
        Tool("salud_dns", NOBODY),
        "www.dangling.test",
        &[("resolutor_sin_respuesta", ALTA), ("cname_colgante", ALTA)],
    ),
    (
        Tool("correo_politicas", NOBODY),
        "www.chain.test",
        &[("resolutor_sin_respuesta", ALTA), ("cname_colgante", ALTA)],
    ),
    // estado_dnssec
    (DNSSEC, "dead.test", &[("dnssec_sin_respuesta", ALTA)]),
    (DNSSEC, "slow.test", &[("dnssec_no_firmado", INFO)]),
    (DNSSEC, "dsonly.test", &[("ds_sin_dnskey", CRITICA)]),
    (DNSSEC, "wrongds.test", &[("ds_no_coincide", CRITICA)]),
    (DNSSEC, "island.test", &[("dnskey_sin_ds", MEDIA)]),
    (DNSSEC, "unsignedsoa.test", &[("rrsig_ausente", ALTA)]),
    (DNSSEC, "badsig.test", &[("rrsig_invalida", CRITICA)]),
    (DNSSEC, "expired.test", &[("rrsig_expirada", CRITICA)]),
    (DNSSEC, "future.test", &[("rrsig_futura", ALTA)]),
    (DNSSEC, "expiring.test", &[("rrsig_expira_pronto", MEDIA)]),
    (DNSSEC, "dsa.test", &[("algoritmo_prohibido", ALTA)]),
    (DNSSEC, "gostds.test", &[("algoritmo_prohibido", ALTA)]),
    (DNSSEC, "rsasha1.test", &[("algoritmo_obsoleto", MEDIA)]),
    (DNSSEC, "sha1ds.test", &[("algoritmo_obsoleto", MEDIA)]),
    (DNSSEC, "bigkeys.test", &[("tcp_necesario", INFO)]),
    (DNSSEC, "nope.test", &[("dominio_inexistente", CRITICA)]),
    // An alias of nothing is a name of its zone, which is unsigned.
    (DNSSEC, "www.dangling.test", &[("dnssec_no_firmado", INFO)]),
    (DNSSEC, "staleds.test", &[("ds_huerfano", ALTA)]),
    (DNSSEC, "zskonly.test", &[("dnskey_sin_firma_ds", CRITICA)]),
    (
        Tool("estado_dnssec", NOBODY),
        "ok.test",
        &[
            ("resolutor_sin_respuesta", ALTA),
            ("dnssec_no_firmado", INFO),
        ],
    ),
    (
        Tool("estado_dnssec", REFUSER),
        "ok.test",
        &[("resolutor_rechaza", ALTA), ("dnssec_no_firmado", INFO)],
    ),
    // propagacion
    (
        Propagation(&[RESOLVER, RESOLVER2, NOBODY]),
        "ok.test",
        &[("resolutor_inalcanzable", MEDIA)],
    ),
    (
        Propagation(&[RESOLVER, RESOLVER2]),
        "moved.test",
        &[("respuestas_distintas", MEDIA)],
    ),
    // Through the validating resolver: the healthy zones as above (an
    // unsigned zone is insecure, not bogus), a signature that expires
    // tomorrow still valid.
    (V_SALUD, "ok.test", &[]),
    (V_CORREO, "ok.test", &[]),
    (V_DNSSEC, "ok.test", &[("dnssec_no_firmado", INFO)]),
    (V_SALUD, "signed.test", &[]),
    (V_CORREO, "signed.test", &[]),
    (V_DNSSEC, "signed.test", &[]),
    (V_SALUD, "island.test", &[]),
    (V_SALUD, "staleds.test", &[]),
    (V_DNSSEC, "staleds.test", &[("ds_huerfano", ALTA)]),
    (V_SALUD, "expiring.test", &[]),
    (V_CORREO, "expiring.test", &[]),
    (V_DNSSEC, "expiring.test", &[("rrsig_expira_pronto", MEDIA)]),
    (V_SALUD, "nope.test", &[("dominio_inexistente", CRITICA)]),
    (V_CORREO, "nope.test", &[("dominio_inexistente", CRITICA)]),
    (V_DNSSEC, "nope.test", &[("dominio_inexistente", CRITICA)]),
    // Broken DNSSEC: the validating resolver answers SERVFAIL. Each tool
    // names that once, shows the data from the authoritative servers, and
    // estado_dnssec names the cause.
    (V_SALUD, "wrongds.test", &[("dnssec_bogus", CRITICA)]),
    (V_CORREO, "wrongds.test", &[("dnssec_bogus", CRITICA)]),
    (
        V_DNSSEC,
        "wrongds.test",
        &[("dnssec_bogus", CRITICA), ("ds_no_coincide", CRITICA)],
    ),
    (V_SALUD, "expired.test", &[("dnssec_bogus", CRITICA)]),
    (V_CORREO, "expired.test", &[("dnssec_bogus", CRITICA)]),
    (
        V_DNSSEC,
        "expired.test",
        &[("dnssec_bogus", CRITICA), ("rrsig_expirada", CRITICA)],
    ),
    (V_SALUD, "future.test", &[("dnssec_bogus", CRITICA)]),
    (V_CORREO, "future.test", &[("dnssec_bogus", CRITICA)]),
    (
        V_DNSSEC,
        "future.test",
        &[("dnssec_bogus", CRITICA), ("rrsig_futura", ALTA)],
    ),
    (V_SALUD, "dsonly.test", &[("dnssec_bogus", CRITICA)]),
    (V_CORREO, "dsonly.test", &[("dnssec_bogus", CRITICA)]),
    (
        V_DNSSEC,
        "dsonly.test",
        &[("dnssec_bogus", CRITICA), ("ds_sin_dnskey", CRITICA)],
    ),
    (V_SALUD, "zskonly.test", &[("dnssec_bogus", CRITICA)]),
    (V_CORREO, "zskonly.test", &[("dnssec_bogus", CRITICA)]),
    (
        V_DNSSEC,
        "zskonly.test",
        &[("dnssec_bogus", CRITICA), ("dnskey_sin_firma_ds", CRITICA)],
    ),
    (V_SALUD, "unsignedsoa.test", &[("dnssec_bogus", CRITICA)]),
    (V_DNSSEC, "unsignedsoa.test", &[("rrsig_ausente", ALTA)]),
    (V_SALUD, "badsig.test", &[("dnssec_bogus", CRITICA)]),
    (V_DNSSEC, "badsig.test", &[("rrsig_invalida", CRITICA)]),
    // Only the SOA is broken there, which no mail question asks for.
    (V_CORREO, "unsignedsoa.test", &[]),
    (V_CORREO, "badsig.test", &[]),
    // Through a non-validating resolver the same zones raise no finding
    // in salud_dns and correo_politicas: nothing there is broken for it
    // (estado_dnssec's cases are above).
    (SALUD, "wrongds.test", &[]),
    (CORREO, "wrongds.test", &[]),
    (SALUD, "expired.test", &[]),
    (CORREO, "expired.test", &[]),
    (SALUD, "future.test", &[]),
    (CORREO, "future.test", &[]),
    (SALUD, "unsignedsoa.test", &[]),
    (CORREO, "unsignedsoa.test", &[]),
    (SALUD, "zskonly.test", &[]),
    (CORREO, "zskonly.test", &[]),
    (SALUD, "expiring.test", &[]),
    (CORREO, "expiring.test", &[]),
    // Servers that do not answer: SERVFAIL with CD too.
    (
        V_SALUD,
        "dead.test",
        &[
            ("resolutor_servfail", ALTA),
            ("delegacion_coja_sin_respuesta", ALTA),
        ],
    ),
    (V_CORREO, "dead.test", &[("resolutor_servfail", ALTA)]),
    (
        V_DNSSEC,
        "dead.test",
        &[("resolutor_servfail", ALTA), ("dnssec_sin_respuesta", ALTA)],
    ),
    // Issue 36: through BIND, which answers NXDOMAIN (and SERVFAIL for a
    // loop or a dead target) with the chain in the answer section, every
    // alias is diagnosed at the end of its chain, never as a nonexistent
    // domain.
    (V_SALUD, "dangling.test", &[("cname_colgante", ALTA)]),
    (V_SALUD, "www.dangling.test", &[("cname_colgante", ALTA)]),
    (V_SALUD, "chain.test", &[("cname_colgante", ALTA)]),
    (V_SALUD, "www.chain.test", &[("cname_colgante", ALTA)]),
    (V_SALUD, "loop.test", &[("cname_bucle", ALTA)]),
    (V_SALUD, "www.loop.test", &[("cname_bucle", ALTA)]),
    (
        V_SALUD,
        "wildalias.test",
        &[("wildcard", MEDIA), ("cname_colgante", ALTA)],
    ),
    (
        V_SALUD,
        "intodead.test",
        &[("cname_destino_sin_respuesta", ALTA)],
    ),
    (
        V_SALUD,
        "www.intodead.test",
        &[("cname_destino_sin_respuesta", ALTA)],
    ),
    (V_SALUD, "mx.mxcname.test", &[]),
    (V_CORREO, "www.dangling.test", &[("cname_colgante", ALTA)]),
    (V_CORREO, "www.chain.test", &[("cname_colgante", ALTA)]),
    (V_CORREO, "www.loop.test", &[("cname_bucle", ALTA)]),
    (
        V_CORREO,
        "www.intodead.test",
        &[("cname_destino_sin_respuesta", ALTA)],
    ),
    (V_CORREO, "tworedirect.test", &[("spf_sintaxis", ALTA)]),
    (V_CORREO, "dmarccname.test", &[]),
    (V_CORREO, "spfcname.test", &[]),
    (
        V_CORREO,
        "spfdangling.test",
        &[("spf_include_fallido", ALTA)],
    ),
    (
        V_CORREO,
        "mxdangling.test",
        &[("mx_cname", MEDIA), ("mx_sin_direccion", ALTA)],
    ),
    (
        V_DNSSEC,
        "www.dangling.test",
        &[("dnssec_no_firmado", INFO)],
    ),
    (V_DNSSEC, "www.chain.test", &[("dnssec_no_firmado", INFO)]),
    (Propagation(&[VALIDATOR]), "www.dangling.test", &[]),
    (
        Propagation(&[RESOLVER, VALIDATOR]),
        "wrongds.test",
        &[("respuestas_distintas", MEDIA), ("dnssec_bogus", CRITICA)],
    ),
];

/// Runs one case: what went wrong, if anything.
async fn check(ask: &Ask, dominio: &str, expected: &[Finding]) -> Result<Option<String>, Error> {
    let bed = bed()?;
    let (client, tool, arguments) = match ask {
        Tool(tool, resolver) => (
            client_of(bed.at(*resolver)).await?,
            *tool,
            json!({ "dominio": dominio }),
        ),
        Propagation(resolvers) => {
            let resolvers: Vec<String> =
                resolvers.iter().map(|ip| bed.at(*ip).to_string()).collect();
            (
                client().await?,
                "propagacion",
                json!({ "dominio": dominio, "resolutores": resolvers }),
            )
        }
    };
    let result = structured(&client, tool, arguments).await?;
    let Some(hallazgos) = result["hallazgos"].as_array() else {
        return Ok(Some(format!("{tool} {dominio}: no hallazgos\n{result:#}")));
    };
    // Each finding's (code, severity), each pair once: a code found twice
    // with two severities shows both.
    let found: BTreeSet<(&str, &str)> = hallazgos
        .iter()
        .map(|h| {
            (
                h["tipo"].as_str().unwrap_or("(no tipo)"),
                h["severidad"].as_str().unwrap_or("(no severidad)"),
            )
        })
        .collect();
    let expected: BTreeSet<(&str, &str)> = expected.iter().copied().collect();
    if found != expected {
        return Ok(Some(format!(
            "{tool} {dominio}: expected {expected:?}, found {found:?}\n{result:#}"
        )));
    }
    Ok(None)
}

/// How many cases run at once: each sends a few dozen queries, and all 71
/// at once on a loaded two-core machine could miss the handler's timeout.
const CASES_AT_ONCE: usize = 6;

#[tokio::test]
async fn every_zone_shows_exactly_its_findings() -> Result<(), Error> {
    let outcomes: Vec<_> = futures::stream::iter(CASES)
        .map(|(ask, dominio, expected)| check(ask, dominio, expected))
        .buffered(CASES_AT_ONCE)
        .collect()
        .await;
    let mut failures = Vec::new();
    for outcome in outcomes {
        if let Some(failure) = outcome? {
            failures.push(failure);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
    Ok(())
}

impl Ask {
    fn tool(&self) -> &'static str {
        match self {
            Tool(tool, _) => tool,
            Propagation(_) => "propagacion",
        }
    }
}

#[test]
fn every_finding_code_has_a_zone_that_shows_it() {
    let shown: BTreeSet<(&str, &str)> = CASES
        .iter()
        .flat_map(|(ask, _, found)| found.iter().map(|(code, _)| (ask.tool(), *code)))
        .collect();
    let missing: Vec<(&str, &str)> = Tipo::ALL
        .iter()
        .flat_map(|tipo| tipo.tools().split(", ").map(|tool| (tool, tipo.code())))
        .filter(|pair| !shown.contains(pair))
        .collect();
    assert!(missing.is_empty(), "no zone shows (tool, code) {missing:?}");
    let unknown: Vec<&(&str, &str)> = shown
        .iter()
        .filter(|(tool, code)| {
            !Tipo::ALL
                .iter()
                .any(|tipo| tipo.code() == *code && tipo.tools().split(", ").any(|t| t == *tool))
        })
        .collect();
    assert!(unknown.is_empty(), "not in the table: {unknown:?}");
}
