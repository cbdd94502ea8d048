//! `nexo serve dns` as a real child process over stdio, called through
//! `nexo call --stdio`: `ping`, a bad domain (a tool error, exit 5),
//! `propagacion` with a resolver that never answers (reported, not fatal),
//! the call log `DNS_MCP_LOG` names, and dns options refused for another
//! server; then every tool of the built binary, with `--resolver` and
//! `--auth-port` (and `--root-hints` for a resolver that is not there),
//! against the DNS test bed (real DNS servers on loopback,
//! `nexo-dns-testbed`). Every finding of every zone is covered in
//! `servers/dns/tests`; here a few show that the options reach the server.

use nexo_dns_testbed::{Bed, NOBODY, RESOLVER, RESOLVER2, ROOT_SERVERS};
use serde_json::{Value, json};

use crate::support::{TempDir, nexo_path, run, shell_quote};

#[test]
fn ping_bad_domain_silent_resolver_and_call_log() {
    // A UDP port that holds a socket nobody reads: questions sent there
    // are never answered, so they time out.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let resolver = silent.local_addr().unwrap().to_string();
    let logs = TempDir::new("dns");
    let log = logs.path().join("calls.jsonl");
    let env = format!("DNS_MCP_LOG={}", log.display());
    let server = format!(
        "{} serve dns --resolver {resolver} --timeout 0.3",
        shell_quote(nexo_path())
    );

    let pong = run(&["call", "--stdio", &server, "-e", &env, "ping"]);
    assert_eq!(pong.assert_success().stdout, "pong\n");

    let bad = run(&[
        "call",
        "--stdio",
        &server,
        "-e",
        &env,
        "salud_dns",
        "dominio=192.0.2.1",
    ]);
    assert_eq!(bad.code(), 5, "{bad:#?}");
    assert!(bad.stderr.contains("is an IP address"), "{bad:#?}");

    let propagated = run(&[
        "call",
        "--stdio",
        &server,
        "-e",
        &env,
        "propagacion",
        &format!(r#"{{"dominio": "example.test", "resolutores": ["{resolver}"]}}"#),
        "--json",
    ]);
    let result = propagated.assert_success().stdout_json();
    let structured = &result["structuredContent"];
    assert_eq!(structured["inalcanzables"], serde_json::json!([resolver]));
    assert_eq!(
        structured["hallazgos"][0]["tipo"], "resolutor_inalcanzable",
        "{result:#}"
    );

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let tools: Vec<&str> = lines.iter().filter_map(|l| l["tool"].as_str()).collect();
    assert_eq!(tools, ["ping", "salud_dns", "propagacion"], "{lines:?}");
    assert_eq!(lines[2]["dominio"], "example.test");
    assert!(lines[2]["dur_ms"].is_u64() && lines[2]["bytes"].as_u64() > Some(0));
    drop(silent);
}

#[test]
fn dns_options_belong_to_the_dns_server() {
    let refused = run(&["serve", "morse", "--resolver", "127.0.0.1"]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains("`--resolver` is an option of `nexo serve dns`"),
        "{refused:#?}"
    );
    let bad = run(&["serve", "dns", "--resolver", "not-an-address"]);
    assert_eq!(bad.code(), 1, "{bad:#?}");
}

/// The codes of a `--json` result's findings, sorted.
fn codes(result: &Value) -> Vec<String> {
    let mut codes: Vec<String> = result["structuredContent"]["hallazgos"]
        .as_array()
        .unwrap_or_else(|| panic!("no hallazgos: {result:#}"))
        .iter()
        .map(|h| h["tipo"].as_str().unwrap().to_owned())
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

#[test]
fn serve_dns_against_the_test_bed() {
    let bed = Bed::standard().unwrap();
    let server = format!(
        "{} serve dns --resolver {} --auth-port {} --timeout 2",
        shell_quote(nexo_path()),
        bed.resolver(),
        bed.port()
    );
    let logs = TempDir::new("dns-bed");
    let env = format!("DNS_MCP_LOG={}", logs.path().join("calls.jsonl").display());
    let nexo_call = |rest: &[&str]| {
        let mut args = vec!["call", "--stdio", &server, "-e", &env];
        args.extend_from_slice(rest);
        run(&args)
    };
    let call = |tool: &str, arguments: Value| {
        let arguments = arguments.to_string();
        let run = nexo_call(&[tool, &arguments, "--json"]);
        run.assert_success().stdout_json()
    };

    let healthy = call("salud_dns", json!({ "dominio": "ok.test" }));
    assert_eq!(codes(&healthy), Vec::<String>::new(), "{healthy:#}");
    let structured = &healthy["structuredContent"];
    assert_eq!(structured["recursivo"]["A"], json!(["192.0.2.10"]));
    let answered = structured["servidores"].as_array().unwrap();
    assert_eq!(answered.len(), 2, "{healthy:#}");
    assert!(
        answered.iter().all(|s| s["autoritativo"] == true),
        "{healthy:#}"
    );

    let lame = call("salud_dns", json!({ "dominio": "lame.test" }));
    assert_eq!(codes(&lame), ["delegacion_coja_sin_respuesta"], "{lame:#}");

    let mail = call("correo_politicas", json!({ "dominio": "spflimit.test" }));
    assert_eq!(codes(&mail), ["spf_demasiadas_consultas"], "{mail:#}");

    let signed = call("estado_dnssec", json!({ "dominio": "bigkeys.test" }));
    assert_eq!(
        signed["structuredContent"]["soa_firmada_valida"], true,
        "{signed:#}"
    );
    assert_eq!(codes(&signed), ["tcp_necesario"], "{signed:#}");

    let resolvers = [bed.at(RESOLVER), bed.at(RESOLVER2)].map(|a| a.to_string());
    let moved = call(
        "propagacion",
        json!({ "dominio": "moved.test", "resolutores": resolvers }),
    );
    assert_eq!(codes(&moved), ["respuestas_distintas"], "{moved:#}");

    // A resolver where nothing listens: `--root-hints` names the bed's root
    // servers, from which the zone is walked down to and read.
    let roots: Vec<String> = ROOT_SERVERS.iter().map(ToString::to_string).collect();
    let walking = format!(
        "{} serve dns --resolver {} --auth-port {} --timeout 2 --root-hints {}",
        shell_quote(nexo_path()),
        bed.at(NOBODY),
        bed.port(),
        roots.join(",")
    );
    let walked = run(&[
        "call",
        "--stdio",
        &walking,
        "-e",
        &env,
        "salud_dns",
        r#"{"dominio": "ok.test"}"#,
        "--json",
    ])
    .assert_success()
    .stdout_json();
    assert_eq!(codes(&walked), ["resolutor_sin_respuesta"], "{walked:#}");
    assert_eq!(walked["structuredContent"]["zona"], "ok.test", "{walked:#}");
    assert_eq!(
        walked["structuredContent"]["autoritativo"]["A"],
        json!(["192.0.2.10"]),
        "{walked:#}"
    );

    let human = nexo_call(&["salud_dns", "dominio=ok.test"]);
    assert!(
        human
            .assert_success()
            .stdout
            .contains("\"zona\": \"ok.test\""),
        "{human:#?}"
    );
}
