//! Issue 14: a signed domain whose DNSSEC is broken, asked through the
//! bed's validating resolver (BIND), which answers SERVFAIL for it. Every
//! tool reports on the domain itself (not its parent zone), shows the data
//! of the authoritative servers as for a healthy domain, and names the
//! real cause; estado_dnssec shows the chain of trust and where it breaks.

use nexo_dns_testbed::VALIDATOR;
use serde_json::{Value, json};

use crate::support::{Error, bed, client, client_of, structured};

/// The structured result of `tool` on `dominio`, through the validating
/// resolver and through the non-validating one.
async fn both(tool: &str, dominio: &str) -> Result<(Value, Value), Error> {
    let arguments = json!({ "dominio": dominio });
    let validating = client_of(bed()?.at(VALIDATOR)).await?;
    let through_validator = structured(&validating, tool, arguments.clone()).await?;
    let through_plain = structured(&client().await?, tool, arguments).await?;
    Ok((through_validator, through_plain))
}

/// The `detalle` of the first finding of code `tipo`.
fn detail<'a>(result: &'a Value, tipo: &str) -> &'a str {
    result["hallazgos"]
        .as_array()
        .and_then(|list| list.iter().find(|h| h["tipo"] == tipo))
        .and_then(|h| h["detalle"].as_str())
        .unwrap_or_default()
}

#[tokio::test]
async fn issue_14_salud_dns_reads_a_bogus_zone_from_its_servers() -> Result<(), Error> {
    let (bogus, plain) = both("salud_dns", "wrongds.test").await?;
    assert_eq!(bogus["zona"], "wrongds.test", "{bogus:#}");
    // The resolver gave nothing; the servers gave what they give anyway.
    assert_eq!(bogus["recursivo"]["A"], json!([]), "{bogus:#}");
    assert_eq!(bogus["autoritativo"], plain["autoritativo"], "{bogus:#}");
    let servers = bogus["servidores"].as_array().cloned().unwrap_or_default();
    assert_eq!(servers.len(), 2, "{bogus:#}");
    assert!(
        servers
            .iter()
            .all(|s| s["responde"] == true && s["autoritativo"] == true),
        "{bogus:#}"
    );
    let why = detail(&bogus, "dnssec_bogus");
    assert!(why.contains("SERVFAIL"), "{why}");
    assert!(why.contains("estado_dnssec"), "{why}");
    Ok(())
}

#[tokio::test]
async fn issue_14_correo_politicas_reads_a_bogus_domains_policies() -> Result<(), Error> {
    let (bogus, plain) = both("correo_politicas", "expired.test").await?;
    for field in ["mx", "spf", "dmarc", "mta_sts", "tls_rpt"] {
        assert_eq!(bogus[field], plain[field], "{field}: {bogus:#}");
    }
    assert_eq!(bogus["mx"][0]["host"], "mail.expired.test", "{bogus:#}");
    assert_eq!(bogus["dmarc"]["p"], "reject", "{bogus:#}");
    Ok(())
}

#[tokio::test]
async fn issue_14_estado_dnssec_reports_on_the_domain_and_the_broken_link() -> Result<(), Error> {
    // A DS that matches no key: the domain's own zone, the chain broken
    // at the DS, the SOA's own signature still valid.
    let (wrongds, _) = both("estado_dnssec", "wrongds.test").await?;
    assert_eq!(wrongds["zona"], "wrongds.test", "{wrongds:#}");
    assert_eq!(wrongds["soa_firmada_valida"], true, "{wrongds:#}");
    assert_eq!(wrongds["cadena_valida"], false, "{wrongds:#}");
    assert_eq!(wrongds["ds"][0]["coincide"], false, "{wrongds:#}");
    let details = wrongds["detalles"].to_string();
    assert!(details.contains("matches no DNSKEY"), "{details}");
    assert!(details.contains("breaks at the DS"), "{details}");

    // Every signature expired: it still verifies, and is invalid; the
    // finding names the date.
    let (expired, _) = both("estado_dnssec", "expired.test").await?;
    assert_eq!(expired["zona"], "expired.test", "{expired:#}");
    assert_eq!(expired["soa_firmada_valida"], false, "{expired:#}");
    assert_eq!(expired["cadena_valida"], false, "{expired:#}");
    assert_eq!(expired["firmas_soa"][0]["verifica"], true, "{expired:#}");
    assert_eq!(expired["firmas_soa"][0]["vigente"], false, "{expired:#}");
    assert_eq!(expired["firmas_dnskey"][0]["vigente"], false, "{expired:#}");
    let when = detail(&expired, "rrsig_expirada");
    let expira = expired["firmas_soa"][0]["expira"]
        .as_i64()
        .unwrap_or_default();
    let date = jiff::Timestamp::from_second(expira)?.to_string();
    assert!(when.contains(&date), "{when} should name {date}");

    // The DNSKEY set signed only by a key no DS names.
    let (zskonly, _) = both("estado_dnssec", "zskonly.test").await?;
    assert_eq!(zskonly["ds"][0]["coincide"], true, "{zskonly:#}");
    assert_eq!(zskonly["cadena_valida"], false, "{zskonly:#}");
    assert!(
        zskonly["detalles"]
            .to_string()
            .contains("breaks at the DNSKEY set"),
        "{zskonly:#}"
    );

    // A healthy signed zone: the chain holds, and each link is shown.
    let (signed, _) = both("estado_dnssec", "signed.test").await?;
    assert_eq!(signed["cadena_valida"], true, "{signed:#}");
    assert_eq!(signed["soa_firmada_valida"], true, "{signed:#}");
    let details = signed["detalles"].to_string();
    assert!(details.contains("DS "), "{details}");
    assert!(
        details.contains("the DNSKEY set signed by key"),
        "{details}"
    );
    assert!(details.contains("it holds"), "{details}");
    Ok(())
}

#[tokio::test]
async fn issue_14_propagacion_names_the_servfail() -> Result<(), Error> {
    let bed = bed()?;
    let client = client().await?;
    let result = structured(
        &client,
        "propagacion",
        json!({
            "dominio": "wrongds.test",
            "resolutores": [bed.resolver().to_string(), bed.at(VALIDATOR).to_string()],
        }),
    )
    .await?;
    let validator = bed.at(VALIDATOR).to_string();
    assert_eq!(
        result["respuestas"][&validator]["registros"]["A"],
        json!(["rcode:SERVFAIL"]),
        "{result:#}"
    );
    assert!(
        detail(&result, "respuestas_distintas").contains("rcode:SERVFAIL"),
        "{result:#}"
    );
    Ok(())
}
