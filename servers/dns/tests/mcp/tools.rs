//! One test per defect the tools must find, and healthy zones that must
//! show none.

use std::net::Ipv4Addr;
use std::time::Duration;

use nexo_dns::{Dns, DnsOptions};
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
};
use serde_json::{Value, json};

use crate::bed::{self, Bed, Child, Error, NOBODY, RESOLVER, RESOLVER2, Window};

const HEALTHY: &str = "\
@ 3600 IN A 192.0.2.10
@ 3600 IN AAAA 2001:db8::10
www 3600 IN A 192.0.2.10
@ 3600 IN MX 10 mail
mail 3600 IN A 192.0.2.25
@ 3600 IN TXT \"v=spf1 ip4:192.0.2.0/24 mx -all\"
_dmarc 3600 IN TXT \"v=DMARC1; p=reject; rua=mailto:dmarc@example.net\"
";

/// Two servers in different /24s, both serving `serial`.
fn pair(k: u8, serial: u32) -> Vec<(&'static str, Ipv4Addr, Option<u32>)> {
    vec![
        ("ns1", Ipv4Addr::new(127, 54, k, 1), Some(serial)),
        ("ns2", Ipv4Addr::new(127, 55, k, 1), Some(serial)),
    ]
}

fn child(label: &'static str, k: u8, records: &'static str) -> Child {
    Child {
        label,
        records,
        servers: pair(k, 1),
        signed: None,
    }
}

const DAY: i64 = 86_400;

fn zones() -> Vec<Child> {
    vec![
        child("ok", 1, HEALTHY),
        child("wild", 2, "@ 3600 IN A 192.0.2.1\n* 3600 IN A 192.0.2.99\n"),
        child(
            "dangling",
            3,
            "@ 3600 IN A 192.0.2.1\nwww 3600 IN CNAME gone.dangling.test.\n",
        ),
        Child {
            label: "lame",
            records: "@ 3600 IN A 192.0.2.1\n",
            servers: vec![
                ("ns1", Ipv4Addr::new(127, 54, 4, 1), Some(1)),
                ("ns2", Ipv4Addr::new(127, 55, 4, 1), Some(1)),
                ("ns3", Ipv4Addr::new(127, 56, 4, 1), None),
            ],
            signed: None,
        },
        Child {
            label: "serial",
            records: "@ 3600 IN A 192.0.2.1\n",
            servers: vec![
                ("ns1", Ipv4Addr::new(127, 54, 5, 1), Some(2024010101)),
                ("ns2", Ipv4Addr::new(127, 55, 5, 1), Some(2024010102)),
            ],
            signed: None,
        },
        child(
            "spf",
            6,
            "@ 3600 IN A 192.0.2.1\n\
             @ 3600 IN MX 10 mail\nmail 3600 IN A 192.0.2.25\n\
             @ 3600 IN TXT \"v=spf1 include:s1.spf.test include:s2.spf.test include:s3.spf.test include:s4.spf.test -all\"\n\
             s1 3600 IN TXT \"v=spf1 a:mail.spf.test mx:spf.test -all\"\n\
             s2 3600 IN TXT \"v=spf1 a:mail.spf.test mx:spf.test -all\"\n\
             s3 3600 IN TXT \"v=spf1 a:mail.spf.test mx:spf.test -all\"\n\
             s4 3600 IN TXT \"v=spf1 a:mail.spf.test mx:spf.test -all\"\n",
        ),
        child(
            "nullmx",
            7,
            "@ 3600 IN A 192.0.2.1\n@ 3600 IN MX 0 .\n\
             @ 3600 IN TXT \"v=spf1 -all\"\n\
             _dmarc 3600 IN TXT \"v=DMARC1; p=maybe; pct=150\"\n",
        ),
        Child {
            label: "signed",
            records: "@ 3600 IN A 192.0.2.1\n",
            servers: pair(8, 1),
            signed: Some(Window {
                inception: -DAY,
                expiration: 30 * DAY,
            }),
        },
        Child {
            label: "expired",
            records: "@ 3600 IN A 192.0.2.1\n",
            servers: pair(9, 1),
            signed: Some(Window {
                inception: -30 * DAY,
                expiration: -DAY,
            }),
        },
    ]
}

/// A bed with every zone, and a client of a handler that asks it.
async fn connect() -> Result<(Bed, RunningService<RoleClient, ()>), Error> {
    let bed = bed::start(zones()).await?;
    let dns = Dns::new(DnsOptions {
        resolver: Some(bed.resolver()),
        auth_port: bed.port,
        timeout: Duration::from_secs(2),
        log: None,
    })?;
    let (server_io, client_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(server) = dns.serve(server_io).await {
            let _ = server.waiting().await;
        }
    });
    Ok((bed, ().serve(client_io).await?))
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    arguments: Value,
) -> Result<CallToolResult, Error> {
    let Value::Object(arguments) = arguments else {
        return Err("arguments must be an object".into());
    };
    Ok(client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await?)
}

/// The structured result of a successful call.
async fn structured(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    arguments: Value,
) -> Result<Value, Error> {
    let result = call(client, tool, arguments).await?;
    if result.is_error == Some(true) {
        return Err(format!("{tool} failed: {result:?}").into());
    }
    result
        .structured_content
        .ok_or_else(|| format!("{tool}: no structured content").into())
}

/// The finding codes of a result, sorted.
fn codes(result: &Value) -> Vec<String> {
    let mut codes: Vec<String> = result["hallazgos"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|h| h["tipo"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    codes.sort();
    codes.dedup();
    codes
}

#[tokio::test]
async fn ping_and_bad_domains() -> Result<(), Error> {
    let (_bed, client) = connect().await?;
    let pong = call(&client, "ping", json!({})).await?;
    assert_eq!(pong.structured_content, Some(json!({ "result": "pong" })));
    for bad in ["", "192.0.2.1", "a..b", "-x.test", &"a".repeat(300)] {
        let result = call(&client, "salud_dns", json!({ "dominio": bad })).await?;
        assert_eq!(result.is_error, Some(true), "{bad}: {result:?}");
    }
    let bad = call(
        &client,
        "propagacion",
        json!({ "dominio": "ok.test", "resolutores": ["not-an-ip"] }),
    )
    .await?;
    assert_eq!(bad.is_error, Some(true));
    Ok(())
}

#[tokio::test]
async fn healthy_zone_shows_no_findings() -> Result<(), Error> {
    let (_bed, client) = connect().await?;
    let salud = structured(&client, "salud_dns", json!({ "dominio": "OK.test." })).await?;
    assert_eq!(codes(&salud), Vec::<String>::new(), "{salud:#}");
    assert_eq!(salud["dominio"], "ok.test");
    assert_eq!(salud["recursivo"]["A"], json!(["192.0.2.10"]));
    assert_eq!(
        salud["autoritativo"]["NS"],
        json!(["ns1.ok.test", "ns2.ok.test"])
    );
    assert_eq!(salud["servidores"].as_array().map(Vec::len), Some(2));

    let correo = structured(&client, "correo_politicas", json!({ "dominio": "ok.test" })).await?;
    assert_eq!(codes(&correo), Vec::<String>::new(), "{correo:#}");
    assert_eq!(correo["mx"][0]["host"], "mail.ok.test");
    assert_eq!(correo["mx"][0]["direcciones"], json!(["192.0.2.25"]));
    assert_eq!(correo["spf"]["consultas_dns"], 1);
    assert_eq!(correo["dmarc"]["p"], "reject");

    let dnssec = structured(&client, "estado_dnssec", json!({ "dominio": "ok.test" })).await?;
    assert_eq!(dnssec["soa_firmada_valida"], Value::Null, "{dnssec:#}");
    assert_eq!(codes(&dnssec), ["dnssec_no_firmado"]);
    Ok(())
}

#[tokio::test]
async fn wildcard_and_dangling_cname() -> Result<(), Error> {
    let (_bed, client) = connect().await?;
    let wild = structured(&client, "salud_dns", json!({ "dominio": "wild.test" })).await?;
    assert_eq!(codes(&wild), ["wildcard"], "{wild:#}");
    let dangling = structured(&client, "salud_dns", json!({ "dominio": "dangling.test" })).await?;
    assert_eq!(codes(&dangling), ["cname_colgante"], "{dangling:#}");
    Ok(())
}

#[tokio::test]
async fn lame_delegation_and_serial_mismatch() -> Result<(), Error> {
    let (_bed, client) = connect().await?;
    let lame = structured(&client, "salud_dns", json!({ "dominio": "lame.test" })).await?;
    assert_eq!(codes(&lame), ["delegacion_coja_sin_respuesta"], "{lame:#}");
    let serial = structured(&client, "salud_dns", json!({ "dominio": "serial.test" })).await?;
    let found = codes(&serial);
    assert!(
        found.contains(&"serial_soa_distinto".to_owned()),
        "{serial:#}"
    );
    Ok(())
}

#[tokio::test]
async fn spf_over_the_limit_missing_dmarc_null_mx_bad_dmarc() -> Result<(), Error> {
    let (_bed, client) = connect().await?;
    let spf = structured(
        &client,
        "correo_politicas",
        json!({ "dominio": "spf.test" }),
    )
    .await?;
    assert_eq!(spf["spf"]["consultas_dns"], 12, "{spf:#}");
    assert_eq!(
        codes(&spf),
        ["dmarc_ausente", "spf_demasiadas_consultas"],
        "{spf:#}"
    );

    let null = structured(
        &client,
        "correo_politicas",
        json!({ "dominio": "nullmx.test" }),
    )
    .await?;
    assert_eq!(codes(&null), ["dmarc_mal_formado", "mx_nulo"], "{null:#}");
    Ok(())
}

#[tokio::test]
async fn signed_zones_validate_true_and_expired_false() -> Result<(), Error> {
    let (_bed, client) = connect().await?;
    let good = structured(
        &client,
        "estado_dnssec",
        json!({ "dominio": "signed.test" }),
    )
    .await?;
    assert_eq!(good["soa_firmada_valida"], true, "{good:#}");
    assert_eq!(good["tiene_ds_en_padre"], true, "{good:#}");
    assert_eq!(good["dnskey_algoritmos"], json!(["ED25519"]), "{good:#}");
    assert_eq!(codes(&good), Vec::<String>::new(), "{good:#}");

    let expired = structured(
        &client,
        "estado_dnssec",
        json!({ "dominio": "expired.test" }),
    )
    .await?;
    assert_eq!(expired["soa_firmada_valida"], false, "{expired:#}");
    assert_eq!(codes(&expired), ["rrsig_expirada"], "{expired:#}");
    Ok(())
}

#[tokio::test]
async fn propagation_reports_an_unreachable_resolver() -> Result<(), Error> {
    let (bed, client) = connect().await?;
    let resolvers = [bed.at(RESOLVER), bed.at(RESOLVER2), bed.at(NOBODY)];
    let result = structured(
        &client,
        "propagacion",
        json!({ "dominio": "ok.test", "resolutores": resolvers }),
    )
    .await?;
    assert_eq!(codes(&result), ["resolutor_inalcanzable"], "{result:#}");
    assert_eq!(result["inalcanzables"], json!([bed.at(NOBODY)]));
    assert_eq!(result["diferencias"], json!({}));
    assert_eq!(
        result["respuestas"][bed.at(RESOLVER2)]["registros"]["A"],
        json!(["192.0.2.10"])
    );
    Ok(())
}
