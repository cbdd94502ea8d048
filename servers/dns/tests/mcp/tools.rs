//! The results beyond their findings: the fields of each tool on healthy
//! and broken zones, the TCP fallback of a signed answer too large for UDP,
//! lame servers in `servidores`, propagation groups, a resolver that never
//! answers, and arguments that are refused.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, Query};
use hickory_proto::rr::{Name, RecordType};
use nexo_dns_testbed::{NOBODY, RESOLVER, RESOLVER2, VALIDATOR, zones};
use nexo_testkit::call_tool;
use serde_json::{Value, json};

use crate::support::{Error, bed, client, client_of, client_with, codes, structured};

#[tokio::test]
async fn ping_and_bad_domains() -> Result<(), Error> {
    let client = client().await?;
    let pong = call_tool(&client, "ping", json!({})).await?;
    assert_eq!(pong.structured_content, Some(json!({ "result": "pong" })));
    for bad in ["", "192.0.2.1", "a..b", "-x.test", &"a".repeat(300)] {
        let result = call_tool(&client, "salud_dns", json!({ "dominio": bad })).await?;
        assert_eq!(result.is_error, Some(true), "{bad}: {result:?}");
    }
    let bad = call_tool(
        &client,
        "propagacion",
        json!({ "dominio": "ok.test", "resolutores": ["not-an-ip"] }),
    )
    .await?;
    assert_eq!(bad.is_error, Some(true));
    Ok(())
}

#[tokio::test]
async fn healthy_zone_fields() -> Result<(), Error> {
    let client = client().await?;
    let salud = structured(&client, "salud_dns", json!({ "dominio": "OK.test." })).await?;
    assert_eq!(salud["dominio"], "ok.test");
    assert_eq!(salud["zona"], "ok.test");
    assert_eq!(salud["recursivo"]["A"], json!(["192.0.2.10"]));
    assert_eq!(salud["recursivo"]["AAAA"], json!(["2001:db8::10"]));
    assert_eq!(
        salud["autoritativo"]["NS"],
        json!(["ns1.ok.test", "ns2.ok.test"])
    );
    let servers = salud["servidores"].as_array().cloned().unwrap_or_default();
    assert_eq!(servers.len(), 2, "{salud:#}");
    let by_type = [&salud["recursivo"], &salud["autoritativo"]]
        .into_iter()
        .chain(servers.iter().map(|server| &server["respuestas"]));
    for sets in by_type {
        assert_eq!(keys(sets), ["A", "AAAA", "NS", "SOA"], "{salud:#}");
    }
    assert!(
        servers
            .iter()
            .all(|s| s["responde"] == true && s["autoritativo"] == true && s["serial"] == 1),
        "{salud:#}"
    );

    let correo = structured(&client, "correo_politicas", json!({ "dominio": "ok.test" })).await?;
    assert_eq!(correo["mx"][0]["host"], "mail.ok.test");
    assert_eq!(correo["mx"][0]["direcciones"], json!(["192.0.2.25"]));
    assert_eq!(correo["spf"]["consultas_dns"], 1);
    assert_eq!(correo["dmarc"]["p"], "reject");
    assert_eq!(correo["dmarc"]["rua"], json!(["mailto:dmarc@example.net"]));

    let dnssec = structured(&client, "estado_dnssec", json!({ "dominio": "ok.test" })).await?;
    assert_eq!(dnssec["soa_firmada_valida"], Value::Null, "{dnssec:#}");
    assert_eq!(dnssec["tiene_ds_en_padre"], false, "{dnssec:#}");
    Ok(())
}

/// The keys of a JSON object, in order.
fn keys(object: &Value) -> Vec<&str> {
    object
        .as_object()
        .map(|map| map.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_tld_is_checked_against_the_private_root() -> Result<(), Error> {
    let client = client().await?;
    let salud = structured(&client, "salud_dns", json!({ "dominio": "test" })).await?;
    assert_eq!(salud["zona"], "test", "{salud:#}");
    assert_eq!(
        salud["autoritativo"]["NS"],
        json!(["ns1.test", "ns2.test"]),
        "{salud:#}"
    );
    assert_eq!(codes(&salud), Vec::<String>::new(), "{salud:#}");
    Ok(())
}

#[tokio::test]
async fn signed_zones_validate_true_and_broken_ones_false() -> Result<(), Error> {
    let client = client().await?;
    let good = structured(
        &client,
        "estado_dnssec",
        json!({ "dominio": "signed.test" }),
    )
    .await?;
    assert_eq!(good["soa_firmada_valida"], true, "{good:#}");
    assert_eq!(good["tiene_ds_en_padre"], true, "{good:#}");
    assert_eq!(good["dnskey_algoritmos"], json!(["ED25519"]), "{good:#}");
    assert_eq!(good["ds"][0]["coincide"], true, "{good:#}");
    assert_eq!(good["firmas_soa"][0]["verifica"], true, "{good:#}");

    for broken in ["expired", "badsig", "unsignedsoa", "dsonly", "future"] {
        let dominio = format!("{broken}.test");
        let result = structured(&client, "estado_dnssec", json!({ "dominio": dominio })).await?;
        assert_eq!(result["soa_firmada_valida"], false, "{result:#}");
    }
    let wrong = structured(
        &client,
        "estado_dnssec",
        json!({ "dominio": "wrongds.test" }),
    )
    .await?;
    assert_eq!(wrong["ds"][0]["coincide"], false, "{wrong:#}");
    Ok(())
}

/// Asks `server` for the SOA of `zone` over UDP with the DO bit and a
/// 1232-byte EDNS payload, as the tools do, and says whether the answer
/// came back truncated.
async fn truncated_over_udp(server: SocketAddr, zone: &str) -> Result<bool, Error> {
    let mut message = Message::query();
    message.add_query(Query::query(Name::from_ascii(zone)?, RecordType::SOA));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    edns.set_dnssec_ok(true);
    message.set_edns(edns);
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
    socket.send_to(&message.to_vec()?, server).await?;
    let mut buffer = vec![0_u8; 65_535];
    let (length, _) =
        tokio::time::timeout(Duration::from_secs(5), socket.recv_from(&mut buffer)).await??;
    let answer = Message::from_vec(buffer.get(..length).ok_or("short read")?)?;
    Ok(answer.metadata.truncation)
}

#[tokio::test]
async fn a_signed_answer_too_large_for_udp_is_fetched_over_tcp_and_verified() -> Result<(), Error> {
    let bed = bed()?;
    let server = bed.at(zones::ip(54, zones::SIGNED, 1));
    assert!(
        truncated_over_udp(server, "bigkeys.test.").await?,
        "the bed must truncate this answer over UDP, or the test proves nothing"
    );
    assert!(!truncated_over_udp(server, "signed.test.").await?);

    let client = client().await?;
    let result = structured(
        &client,
        "estado_dnssec",
        json!({ "dominio": "bigkeys.test" }),
    )
    .await?;
    assert_eq!(result["soa_firmada_valida"], true, "{result:#}");
    assert_eq!(result["dnskeys"].as_array().map(Vec::len), Some(14));
    let signatures = result["firmas_soa"].as_array().cloned().unwrap_or_default();
    assert_eq!(signatures.len(), 14, "{result:#}");
    assert!(
        signatures.iter().all(|s| s["verifica"] == true),
        "{result:#}"
    );
    assert_eq!(codes(&result), ["tcp_necesario"], "{result:#}");
    assert!(
        result["hallazgos"][0]["detalle"]
            .as_str()
            .is_some_and(|detalle| detalle.starts_with("the DNSKEY, SOA answers of bigkeys.test")),
        "{result:#}"
    );
    Ok(())
}

#[tokio::test]
async fn lame_servers_are_named_in_servidores() -> Result<(), Error> {
    let client = client().await?;
    let lame = structured(&client, "salud_dns", json!({ "dominio": "lame.test" })).await?;
    let servers = lame["servidores"].as_array().cloned().unwrap_or_default();
    let silent: Vec<&Value> = servers.iter().filter(|s| s["responde"] == false).collect();
    assert_eq!(silent.len(), 1, "{lame:#}");
    assert_eq!(silent[0]["ns"], "ns3.lame.test");
    assert_eq!(silent[0]["ip"], "127.56.3.1");

    let refusing = structured(&client, "salud_dns", json!({ "dominio": "refusing.test" })).await?;
    let servers = refusing["servidores"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let refused: Vec<&Value> = servers
        .iter()
        .filter(|s| s["autoritativo"] == false)
        .collect();
    assert_eq!(refused.len(), 1, "{refusing:#}");
    assert_eq!(refused[0]["responde"], true);
    assert!(
        refused[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("REFUSED")),
        "{refusing:#}"
    );
    Ok(())
}

#[tokio::test]
async fn spf_lookups_are_counted_through_includes() -> Result<(), Error> {
    let client = client().await?;
    let limit = structured(
        &client,
        "correo_politicas",
        json!({ "dominio": "spflimit.test" }),
    )
    .await?;
    assert_eq!(limit["spf"]["consultas_dns"], 12, "{limit:#}");
    assert_eq!(
        limit["spf"]["incluidos"].as_array().map(Vec::len),
        Some(4),
        "{limit:#}"
    );
    let void = structured(
        &client,
        "correo_politicas",
        json!({ "dominio": "spfvoid.test" }),
    )
    .await?;
    assert_eq!(void["spf"]["consultas_vacias"], 3, "{void:#}");
    Ok(())
}

#[tokio::test]
async fn propagation_groups_resolvers_and_names_the_unreachable() -> Result<(), Error> {
    let bed = bed()?;
    let client = client().await?;
    let resolvers = [bed.at(RESOLVER), bed.at(RESOLVER2), bed.at(NOBODY)].map(|a| a.to_string());
    let result = structured(
        &client,
        "propagacion",
        json!({ "dominio": "ok.test", "resolutores": resolvers }),
    )
    .await?;
    assert_eq!(result["inalcanzables"], json!([resolvers[2]]));
    assert_eq!(result["diferencias"], json!({}));
    for reachable in &resolvers[..2] {
        assert_eq!(
            keys(&result["respuestas"][reachable]["registros"]),
            ["A", "AAAA", "NS", "TXT"],
            "{result:#}"
        );
    }
    assert_eq!(
        result["respuestas"][&resolvers[1]]["registros"]["A"],
        json!(["192.0.2.10"])
    );

    let moved = structured(
        &client,
        "propagacion",
        json!({ "dominio": "moved.test", "resolutores": &resolvers[..2] }),
    )
    .await?;
    assert_eq!(
        moved["diferencias"]["A"],
        json!([
            { "valores": ["192.0.2.1"], "resolutores": [resolvers[0]] },
            { "valores": ["192.0.2.2"], "resolutores": [resolvers[1]] },
        ]),
        "{moved:#}"
    );
    Ok(())
}

/// Issue 36: an alias shows its chain and what the chain's end holds (the
/// records were once read at the name asked, where an alias has none),
/// and the validating resolver's NXDOMAIN after the chain shows as the
/// end's code.
#[tokio::test]
async fn issue_36_propagation_shows_an_alias_chain_and_its_end() -> Result<(), Error> {
    let bed = bed()?;
    let client = client_of(bed.resolver()).await?;
    let resolvers = [bed.resolver(), bed.at(VALIDATOR)].map(|a| a.to_string());
    let alias = structured(
        &client,
        "propagacion",
        json!({ "dominio": "mx.mxcname.test", "resolutores": resolvers }),
    )
    .await?;
    for resolver in &resolvers {
        assert_eq!(
            alias["respuestas"][resolver]["registros"]["A"],
            json!(["192.0.2.25", "CNAME mail.mxcname.test"]),
            "{alias:#}"
        );
    }
    let dangling = structured(
        &client,
        "propagacion",
        json!({ "dominio": "www.chain.test", "resolutores": &resolvers[1..] }),
    )
    .await?;
    assert_eq!(
        dangling["respuestas"][&resolvers[1]]["registros"]["A"],
        json!([
            "CNAME gone.chain.test",
            "CNAME step.chain.test",
            "rcode:NXDOMAIN"
        ]),
        "{dangling:#}"
    );
    assert_eq!(dangling["hallazgos"], json!([]), "{dangling:#}");
    Ok(())
}

/// Issue 36: where the chain of `www` breaks is named link by link.
#[tokio::test]
async fn issue_36_a_dangling_chain_is_named_link_by_link() -> Result<(), Error> {
    let bed = bed()?;
    let client = client_of(bed.at(VALIDATOR)).await?;
    let result = structured(&client, "salud_dns", json!({ "dominio": "chain.test" })).await?;
    assert_eq!(
        result["hallazgos"][0]["detalle"],
        "www.chain.test is a CNAME to step.chain.test, which is a CNAME to gone.chain.test, \
         which does not exist (NXDOMAIN)",
        "{result:#}"
    );
    let looped = structured(&client, "salud_dns", json!({ "dominio": "www.loop.test" })).await?;
    assert_eq!(
        looped["hallazgos"][0]["detalle"],
        "www.loop.test is a CNAME to l1.loop.test, which is a CNAME to l2.loop.test, which is a \
         CNAME to l1.loop.test: the chain comes back to a name it has passed, so the name never \
         resolves",
        "{looped:#}"
    );
    Ok(())
}

/// The names a resolver that never answers has been asked about.
type Asked = Arc<Mutex<BTreeSet<String>>>;

/// A resolver on a UDP socket that reads every question and answers none.
async fn silent_resolver() -> Result<(SocketAddr, Asked), Error> {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
    let address = socket.local_addr()?;
    let asked = Asked::default();
    let names = Arc::clone(&asked);
    tokio::spawn(async move {
        let mut buffer = vec![0_u8; 65_535];
        while let Ok((length, _)) = socket.recv_from(&mut buffer).await {
            let Some(Ok(message)) = buffer.get(..length).map(Message::from_vec) else {
                continue;
            };
            if let Ok(mut names) = names.lock() {
                names.extend(message.queries.iter().map(|q| q.name().to_ascii()));
            }
        }
    });
    Ok((address, asked))
}

#[tokio::test]
async fn issue_6_a_silent_resolver_is_reported_not_asked_label_after_label() -> Result<(), Error> {
    let (resolver, asked) = silent_resolver().await?;
    let client = client_with(resolver, Duration::from_millis(300)).await?;
    let dominio = json!({ "dominio": "www.ok.test" });

    // Issue 14: nothing is concluded from the silence (no sin_ns), and the
    // zone's data comes from its servers, found from the root hints.
    let salud = structured(&client, "salud_dns", dominio.clone()).await?;
    assert_eq!(codes(&salud), ["resolutor_sin_respuesta"], "{salud:#}");
    assert_eq!(salud["zona"], "ok.test", "{salud:#}");
    assert_eq!(
        salud["servidores"].as_array().map(Vec::len),
        Some(2),
        "{salud:#}"
    );
    let dnssec = structured(&client, "estado_dnssec", dominio.clone()).await?;
    assert_eq!(
        codes(&dnssec),
        ["dnssec_no_firmado", "resolutor_sin_respuesta"],
        "{dnssec:#}"
    );
    assert_eq!(dnssec["zona"], "ok.test", "{dnssec:#}");
    assert_eq!(dnssec["soa_firmada_valida"], Value::Null, "{dnssec:#}");
    // No answer is not an absence: what the findings say of the mail
    // policies comes from the authoritative servers, the same as through a
    // resolver that answers.
    let correo = structured(&client, "correo_politicas", dominio.clone()).await?;
    let answered = structured(
        &client_of(bed()?.resolver()).await?,
        "correo_politicas",
        dominio,
    )
    .await?;
    let mut expected = codes(&answered);
    expected.push("resolutor_sin_respuesta".to_owned());
    expected.sort();
    assert_eq!(codes(&correo), expected, "{correo:#}");

    // Each tool waited one timeout: it never asked the resolver about
    // `ok.test.`, `test.` or the root, label after label.
    let names = asked.lock().map_err(|_| "poisoned")?.clone();
    assert!(!names.is_empty());
    assert!(
        names.iter().all(|name| name.ends_with("www.ok.test.")),
        "{names:?}"
    );
    Ok(())
}
