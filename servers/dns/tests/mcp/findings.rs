//! What every tool must find in every zone of the standard bed, exactly:
//! the healthy zones (`ok`, `signed`, the TLD `test`) show nothing but the
//! `info` fact that `ok` is unsigned, and each broken zone shows its own
//! code and no other. A second test checks that every code of the README's
//! table has a case here for every tool that reports it, so a new code
//! cannot land without a zone.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use futures::StreamExt;
use nexo_dns::{Severidad, Tipo};
use nexo_dns_testbed::{NOBODY, RESOLVER, RESOLVER2};
use serde_json::json;

use crate::support::{Error, bed, client, client_of, codes, structured};

/// How a case asks.
enum Ask {
    /// This tool, of the bed's resolver.
    Tool(&'static str),
    /// `propagacion` with these resolvers.
    Propagation(&'static [Ipv4Addr]),
    /// This tool, of a handler whose resolver does not exist.
    DeadResolver(&'static str),
}

use Ask::{DeadResolver, Propagation, Tool};

const SALUD: Ask = Tool("salud_dns");
const CORREO: Ask = Tool("correo_politicas");
const DNSSEC: Ask = Tool("estado_dnssec");

/// (how, dominio, exactly the codes found).
const CASES: &[(Ask, &str, &[&str])] = &[
    // Healthy: the TLD, an unsigned zone and a signed one.
    (SALUD, "test", &[]),
    (DNSSEC, "test", &["dnssec_no_firmado"]),
    (SALUD, "ok.test", &[]),
    (CORREO, "ok.test", &[]),
    (DNSSEC, "ok.test", &["dnssec_no_firmado"]),
    (SALUD, "signed.test", &[]),
    (CORREO, "signed.test", &[]),
    (DNSSEC, "signed.test", &[]),
    (DNSSEC, "www.signed.test", &[]),
    (Propagation(&[RESOLVER, RESOLVER2]), "ok.test", &[]),
    // salud_dns
    (SALUD, "nope.test", &["dominio_inexistente"]),
    (
        DeadResolver("salud_dns"),
        "ok.test",
        &["resolutor_sin_respuesta", "sin_ns"],
    ),
    (SALUD, "nons.test", &["sin_ns"]),
    (SALUD, "noaddr.test", &["ns_sin_direccion"]),
    (SALUD, "lame.test", &["delegacion_coja_sin_respuesta"]),
    (SALUD, "slow.test", &["delegacion_coja_sin_respuesta"]),
    (SALUD, "dead.test", &["delegacion_coja_sin_respuesta"]),
    (SALUD, "refusing.test", &["delegacion_coja_no_autoritativa"]),
    (SALUD, "parentns.test", &["ns_padre_hijo_distintos"]),
    (SALUD, "serial.test", &["serial_soa_distinto"]),
    (SALUD, "single.test", &["ns_unico"]),
    (SALUD, "samenet.test", &["ns_misma_red"]),
    (SALUD, "wild.test", &["wildcard"]),
    (SALUD, "dangling.test", &["cname_colgante"]),
    // The name asked is itself an alias: of nothing, then of a host.
    (SALUD, "www.dangling.test", &["cname_colgante"]),
    (SALUD, "mx.mxcname.test", &[]),
    (SALUD, "ttl.test", &["ttl_desbalanceado"]),
    (SALUD, "ttlmix.test", &["ttl_inconsistente"]),
    (SALUD, "stale.test", &["recursivo_difiere"]),
    (SALUD, "split.test", &["autoritativos_difieren"]),
    // correo_politicas
    (CORREO, "nomx.test", &["mx_ausente"]),
    (CORREO, "nullmx.test", &["mx_nulo"]),
    (CORREO, "nullmxplus.test", &["mx_nulo_con_otros"]),
    (CORREO, "mxcname.test", &["mx_cname"]),
    (CORREO, "mxnoaddr.test", &["mx_sin_direccion"]),
    (CORREO, "nospf.test", &["spf_ausente"]),
    (CORREO, "twospf.test", &["spf_multiple"]),
    (CORREO, "badspf.test", &["spf_sintaxis"]),
    (CORREO, "spflimit.test", &["spf_demasiadas_consultas"]),
    (CORREO, "spfvoid.test", &["spf_consultas_vacias"]),
    (CORREO, "spfinclude.test", &["spf_include_fallido"]),
    (CORREO, "spfall.test", &["spf_all_permisivo"]),
    (CORREO, "spfneutral.test", &["spf_all_neutral"]),
    (CORREO, "spfptr.test", &["spf_ptr"]),
    (CORREO, "nodmarc.test", &["dmarc_ausente"]),
    (CORREO, "twodmarc.test", &["dmarc_multiple"]),
    (CORREO, "baddmarc.test", &["dmarc_mal_formado"]),
    (CORREO, "dmarcnone.test", &["dmarc_p_none"]),
    (CORREO, "dmarcpct.test", &["dmarc_pct_parcial"]),
    (CORREO, "dmarcnorua.test", &["dmarc_sin_rua"]),
    (CORREO, "mtasts.test", &["mta_sts"]),
    (CORREO, "tlsrpt.test", &["tls_rpt"]),
    (
        DeadResolver("correo_politicas"),
        "ok.test",
        &["resolutor_sin_respuesta"],
    ),
    // estado_dnssec
    (DNSSEC, "dead.test", &["dnssec_sin_respuesta"]),
    (DNSSEC, "slow.test", &["dnssec_no_firmado"]),
    (DNSSEC, "dsonly.test", &["ds_sin_dnskey"]),
    (DNSSEC, "wrongds.test", &["ds_no_coincide"]),
    (DNSSEC, "island.test", &["dnskey_sin_ds"]),
    (DNSSEC, "unsignedsoa.test", &["rrsig_ausente"]),
    (DNSSEC, "badsig.test", &["rrsig_invalida"]),
    (DNSSEC, "expired.test", &["rrsig_expirada"]),
    (DNSSEC, "future.test", &["rrsig_futura"]),
    (DNSSEC, "expiring.test", &["rrsig_expira_pronto"]),
    (DNSSEC, "dsa.test", &["algoritmo_prohibido"]),
    (DNSSEC, "gostds.test", &["algoritmo_prohibido"]),
    (DNSSEC, "rsasha1.test", &["algoritmo_obsoleto"]),
    (DNSSEC, "sha1ds.test", &["algoritmo_obsoleto"]),
    (DNSSEC, "bigkeys.test", &["tcp_necesario"]),
    (
        DeadResolver("estado_dnssec"),
        "ok.test",
        &["resolutor_sin_respuesta"],
    ),
    // propagacion
    (
        Propagation(&[RESOLVER, RESOLVER2, NOBODY]),
        "ok.test",
        &["resolutor_inalcanzable"],
    ),
    (
        Propagation(&[RESOLVER, RESOLVER2]),
        "moved.test",
        &["respuestas_distintas"],
    ),
];

/// The severity the README gives `code`.
fn severity(code: &str) -> Option<Severidad> {
    Tipo::ALL
        .iter()
        .find(|tipo| tipo.code() == code)
        .map(|tipo| tipo.severidad())
}

/// Runs one case: what went wrong, if anything.
async fn check(ask: &Ask, dominio: &str, expected: &[&str]) -> Result<Option<String>, Error> {
    let bed = bed()?;
    let (client, tool, arguments) = match ask {
        Tool(tool) => (client().await?, *tool, json!({ "dominio": dominio })),
        Propagation(resolvers) => {
            let resolvers: Vec<String> =
                resolvers.iter().map(|ip| bed.at(*ip).to_string()).collect();
            (
                client().await?,
                "propagacion",
                json!({ "dominio": dominio, "resolutores": resolvers }),
            )
        }
        DeadResolver(tool) => (
            client_of(bed.at(NOBODY)).await?,
            *tool,
            json!({ "dominio": dominio }),
        ),
    };
    let result = structured(&client, tool, arguments).await?;
    let found = codes(&result);
    if found != expected {
        return Ok(Some(format!(
            "{tool} {dominio}: expected {expected:?}, found {found:?}\n{result:#}"
        )));
    }
    let wrong_severity = result["hallazgos"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|h| {
            let code = h["tipo"].as_str().unwrap_or_default();
            h["severidad"].as_str() != severity(code).map(Severidad::as_str)
        });
    Ok(wrong_severity.map(|h| format!("{tool} {dominio}: severity not as the table says: {h}")))
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
            Tool(tool) | DeadResolver(tool) => tool,
            Propagation(_) => "propagacion",
        }
    }
}

#[test]
fn every_finding_code_has_a_zone_that_shows_it() {
    let shown: BTreeSet<(&str, &str)> = CASES
        .iter()
        .flat_map(|(ask, _, codes)| codes.iter().map(|code| (ask.tool(), *code)))
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
