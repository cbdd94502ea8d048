//! `nexo serve dns` as a real child process over stdio, called through
//! `nexo call --stdio`: `ping`, a bad domain (a tool error, exit 5),
//! `propagacion` with a resolver that never answers (reported, not fatal),
//! the call log `DNS_MCP_LOG` names, and dns options refused for another
//! server. The DNS answers themselves are covered against real DNS servers
//! on loopback in `servers/dns/tests`.

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
    assert!(bad.stdout.contains("is an IP address"), "{bad:#?}");

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
