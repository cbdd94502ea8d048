//! `nexo doctor` (issue 39) against real processes: a healthy server over
//! HTTP, HTTPS with a test CA and a self-signed certificate made by the
//! openssl CLI, a closed port, a plain-HTTP port asked over https, a server
//! behind static tokens, a wrong path, and commands that print a banner,
//! do not exist, or exit at once.

use axum::routing::post;
use nexo_testkit::TestCa;
use serde_json::Value;

use crate::support::{
    ClosedPort, HttpServer, Run, TempDir, loopback, nexo, openssl_self_signed, run, run_command,
    serve_morse_command, serve_router, shell_quote,
};

/// `nexo doctor ARGS... --json`: the run and its document.
fn doctor(args: &[&str]) -> (Run, Value) {
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    all.push("--json");
    let run = run(&all);
    let document = run.stdout_json();
    (run, document)
}

/// The status of step `name`, which the document must hold.
fn status<'d>(document: &'d Value, name: &str) -> &'d str {
    step(document, name)["status"]
        .as_str()
        .unwrap_or_else(|| panic!("no status for `{name}`: {document:#}"))
}

fn step<'d>(document: &'d Value, name: &str) -> &'d Value {
    document["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["name"] == name)
        .unwrap_or_else(|| panic!("no step `{name}`: {document:#}"))
}

/// Every line of a step, its summary, details and hint.
fn text_of(step: &Value) -> String {
    step.to_string()
}

#[test]
fn a_healthy_http_server_passes_every_step_in_order() {
    let server = HttpServer::start(&[]);
    let (run, document) = doctor(&["--url", &server.mcp_url()]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["ok"], true, "{document:#}");
    let names: Vec<&str> = document["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "resolve", "connect", "tls", "http", "cors", "era_2026", "era_2025", "tools", "ping"
        ],
        "{document:#}"
    );
    for name in [
        "resolve", "connect", "http", "era_2026", "era_2025", "tools", "ping",
    ] {
        assert_eq!(status(&document, name), "passed", "{name}: {document:#}");
    }
    assert_eq!(status(&document, "tls"), "skipped");
    assert!(
        text_of(step(&document, "tools")).contains("demorse, echo, morse"),
        "{document:#}"
    );
    assert!(
        text_of(step(&document, "era_2026")).contains("speaks 2026-07-28"),
        "{document:#}"
    );
    assert!(step(&document, "connect")["ms"].as_f64().unwrap() >= 0.0);
}

#[test]
fn a_person_reads_the_checklist_with_a_verdict() {
    let server = HttpServer::start(&[]);
    let run = run(&["doctor", "--url", &server.mcp_url()]);
    assert_eq!(run.code(), 0, "{run:#?}");
    for line in [
        "ok   resolve",
        "ok   connect",
        "skip tls",
        "ok   tools",
        "3 tool(s)",
    ] {
        assert!(run.stdout.contains(line), "`{line}` in:\n{}", run.stdout);
    }
    assert!(
        run.stdout.contains("healthy: every step passed") || run.stdout.contains("working, with"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_closed_port_fails_at_connect_and_skips_the_rest() {
    let closed = ClosedPort::new();
    let url = format!("http://127.0.0.1:{}/mcp", closed.port);
    let (run, document) = doctor(&["--url", &url]);
    assert_eq!(run.code(), 4, "{run:#?}");
    assert_eq!(document["ok"], false);
    assert_eq!(status(&document, "connect"), "failed");
    assert!(
        text_of(step(&document, "connect")).contains("nothing listens"),
        "{document:#}"
    );
    for name in [
        "tls", "http", "cors", "era_2026", "era_2025", "tools", "ping",
    ] {
        assert_eq!(status(&document, name), "skipped", "{name}: {document:#}");
    }
    let error = run.error_line();
    assert_eq!(error["error"]["code"], "doctor_failed", "{error}");
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("start the server"),
        "{error}"
    );
}

#[test]
fn a_plain_http_port_asked_over_https_is_named_at_tls() {
    let server = HttpServer::start(&[]);
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    let (run, document) = doctor(&["--url", &url]);
    assert_eq!(run.code(), 4, "{run:#?}");
    assert_eq!(status(&document, "connect"), "passed");
    assert_eq!(status(&document, "tls"), "failed", "{document:#}");
    let tls = text_of(step(&document, "tls"));
    assert!(tls.contains("does not speak TLS"), "{tls}");
    assert!(tls.contains("http://"), "{tls}");
}

#[test]
fn https_with_a_test_ca_shows_the_certificate_and_a_guide_made_one_is_taken_with_cacert() {
    let dir = TempDir::new("doctor-tls");
    let ca = TestCa::new("nexo doctor CA").unwrap();
    let ca_file = ca.write(dir.path()).unwrap();
    let (cert, key) = ca
        .issue("morse", &["localhost", "127.0.0.1"])
        .unwrap()
        .write(dir.path())
        .unwrap();
    let server = HttpServer::serve(
        "morse",
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let url = format!("https://localhost:{}/mcp", server.port);
    let mut trusted = nexo();
    trusted
        .args(["doctor", "--url", &url, "--json"])
        .env("SSL_CERT_FILE", &ca_file);
    let run = run_command(trusted);
    assert_eq!(run.code(), 0, "{run:#?}");
    let document = run.stdout_json();
    let tls = text_of(step(&document, "tls"));
    assert_eq!(status(&document, "tls"), "passed", "{document:#}");
    assert!(tls.contains("TLSv1_3") || tls.contains("TLSv1_2"), "{tls}");
    assert!(
        tls.contains("certificate for localhost, 127.0.0.1"),
        "{tls}"
    );
    assert!(tls.contains("valid until"), "{tls}");

    // Not trusted: the step says so in words, with the way out.
    let mut refused = nexo();
    refused
        .args(["doctor", "--url", &url, "--json"])
        .env_remove("SSL_CERT_FILE");
    let run = run_command(refused);
    assert_eq!(run.code(), 4, "{run:#?}");
    let document = run.stdout_json();
    let tls = text_of(step(&document, "tls"));
    assert!(
        tls.contains("authority this machine does not trust"),
        "{tls}"
    );
    assert!(tls.contains("--cacert"), "{tls}");

    // `openssl req -x509` as the guides write it (CA:TRUE, no SAN).
    let guide = TempDir::new("doctor-guide-cert");
    openssl_self_signed(guide.path(), "cert.pem", "30");
    let server = HttpServer::serve(
        "morse",
        &[
            "--tls-cert",
            guide.path().join("cert.pem").to_str().unwrap(),
            "--tls-key",
            guide.path().join("key.pem").to_str().unwrap(),
        ],
    );
    let url = format!("https://localhost:{}/mcp", server.port);
    let mut named = nexo();
    named
        .args(["doctor", "--url", &url, "--json"])
        .args(["--cacert", guide.path().join("cert.pem").to_str().unwrap()])
        .env_remove("SSL_CERT_FILE");
    let run = run_command(named);
    assert_eq!(run.code(), 0, "{run:#?}");
    let document = run.stdout_json();
    assert_eq!(status(&document, "tls"), "passed", "{document:#}");
    assert!(
        text_of(step(&document, "tls")).contains("certificate for localhost"),
        "{document:#}"
    );
}

#[test]
fn a_server_behind_static_tokens_fails_at_authorization_until_a_token_is_given() {
    let dir = TempDir::new("doctor-tokens");
    let token = "k-doctor-0123456789abcdef";
    let digest = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s '{token}' | sha256sum")])
        .output()
        .unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, &digest.stdout).unwrap();
    let server = HttpServer::start(&["--token-file", tokens.to_str().unwrap()]);
    let (run, document) = doctor(&["--url", &server.mcp_url()]);
    assert_eq!(run.code(), 3, "{run:#?}");
    assert_eq!(status(&document, "http"), "passed", "{document:#}");
    assert!(
        text_of(step(&document, "http")).contains("401"),
        "{document:#}"
    );
    assert_eq!(status(&document, "authorization"), "failed", "{document:#}");
    assert!(
        text_of(step(&document, "authorization")).contains("--header 'Authorization: Bearer"),
        "{document:#}"
    );

    let header = format!("Authorization: Bearer {token}");
    let (run, document) = doctor(&["--url", &server.mcp_url(), "--header", &header]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(status(&document, "tools"), "passed", "{document:#}");
    assert!(
        !run.stdout.contains(token) && !run.stderr.contains(token),
        "the token was shown: {run:#?}"
    );
}

#[test]
fn a_wrong_path_is_failed_at_http_and_the_hint_names_where_mcp_answers() {
    let server = HttpServer::start(&[]);
    let url = format!("{}/api/mcp", server.base_url());
    let (run, document) = doctor(&["--url", &url]);
    assert_eq!(run.code(), 4, "{run:#?}");
    assert_eq!(status(&document, "http"), "failed", "{document:#}");
    let http = step(&document, "http");
    assert_eq!(
        http["hint"],
        format!(
            "MCP answers at {}: use --url {}",
            server.mcp_url(),
            server.mcp_url()
        ),
        "{document:#}"
    );
}

/// A server mounted elsewhere than the URL's path that publishes no health
/// document to say where (as most do not): `nexo tools` and `nexo doctor`
/// both find where MCP answers among the usual paths.
#[test]
fn a_server_mounted_at_another_path_is_found_by_probing_the_usual_ones() {
    let (listener, base) = loopback();
    let app = axum::Router::new().route(
        "/api/mcp",
        post(|| async {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"not here"}}"#,
            )
        }),
    );
    serve_router(listener, app);
    let given = format!("{base}/mcp");
    let found = format!("{base}/api/mcp");
    let hint = format!("MCP answers at {found}: use --url {found}");

    let tools = run(&["tools", "--url", &given]);
    assert_eq!(tools.code(), 1, "{tools:#?}");
    assert_eq!(tools.error_line()["error"]["hint"], hint, "{tools:#?}");

    let (run, document) = doctor(&["--url", &given]);
    assert_eq!(run.code(), 4, "{run:#?}");
    assert_eq!(step(&document, "http")["hint"], hint, "{document:#}");
}

#[test]
fn a_command_that_prints_a_banner_works_with_a_warning_that_shows_it() {
    let command = format!(
        "sh -c {}",
        shell_quote(&format!(
            "echo 'Starting the morse server v1'; exec {}",
            serve_morse_command()
        ))
    );
    let (run, document) = doctor(&["--stdio", &command]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(status(&document, "command"), "passed", "{document:#}");
    assert_eq!(status(&document, "start"), "warning", "{document:#}");
    let start = text_of(step(&document, "start"));
    assert!(
        start.contains("stdout: Starting the morse server v1"),
        "{start}"
    );
    assert!(start.contains("first byte on stdout after"), "{start}");
    assert!(start.contains("answered `initialize` after"), "{start}");
    assert_eq!(status(&document, "tools"), "passed", "{document:#}");
}

#[test]
fn a_command_not_on_path_fails_at_command() {
    let (run, document) = doctor(&["--stdio", "nexo-no-such-server --flag"]);
    assert_eq!(run.code(), 4, "{run:#?}");
    assert_eq!(status(&document, "command"), "failed", "{document:#}");
    assert!(
        text_of(step(&document, "command")).contains("`nexo-no-such-server` is not on PATH"),
        "{document:#}"
    );
    assert_eq!(status(&document, "start"), "skipped");
    assert_eq!(status(&document, "tools"), "skipped");
}

#[test]
fn a_command_that_exits_at_once_shows_its_status_and_stderr() {
    let command = "sh -c 'echo cannot open the database >&2; exit 3'";
    let (run, document) = doctor(&["--stdio", command]);
    assert_eq!(run.code(), 4, "{run:#?}");
    assert_eq!(status(&document, "start"), "failed", "{document:#}");
    let start = text_of(step(&document, "start"));
    assert!(start.contains("ended before it answered"), "{start}");
    assert!(start.contains("exit status: 3"), "{start}");
    assert!(
        start.contains("stderr: cannot open the database"),
        "{start}"
    );
}

#[test]
fn a_command_that_never_answers_is_given_up_after_the_startup_allowance() {
    let (run, document) = doctor(&["--stdio", "sleep 30", "--startup-timeout", "1"]);
    assert_eq!(run.code(), 4, "{run:#?}");
    let start = text_of(step(&document, "start"));
    assert!(start.contains("start-up allowance (1 s)"), "{start}");
    assert!(start.contains("--startup-timeout"), "{start}");
}

#[test]
fn every_server_of_a_configuration_is_checked() {
    let dir = TempDir::new("doctor-config");
    let closed = ClosedPort::new();
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {
            "morse": {"builtin": "morse"},
            "gone": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", closed.port)},
        }})
        .to_string(),
    )
    .unwrap();
    let (run, document) = doctor(&["--config", config.to_str().unwrap()]);
    assert_eq!(run.code(), 4, "{run:#?}");
    let servers = document["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{document:#}");
    assert_eq!(servers[0]["server"], "morse");
    assert_eq!(servers[0]["ok"], true, "{document:#}");
    assert_eq!(servers[1]["server"], "gone");
    assert_eq!(servers[1]["ok"], false, "{document:#}");
    assert!(
        run.error_line()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 of 2 servers"),
        "{run:#?}"
    );
}
