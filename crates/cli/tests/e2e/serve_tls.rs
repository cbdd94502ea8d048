//! `nexo serve --http --tls-cert --tls-key`: the built binary serving
//! HTTPS with certificates from a test CA, reached by `nexo call` (which
//! trusts the CA through `SSL_CERT_FILE`, as it would a system root) over
//! Streamable HTTP and legacy SSE; its TLS secrets in `SSLKEYLOGFILE`; a
//! client that does not trust the CA refused; unusable files refused at
//! start with the file named.

use std::path::Path;

use nexo_testkit::TestCa;

use crate::support::{HttpServer, TempDir, nexo, run, run_command};

/// `nexo serve morse` over HTTPS with a certificate for localhost, its
/// TLS secrets logged to `dir/keys.log`; gives the server and the CA file.
fn serve_https(dir: &Path) -> (HttpServer, std::path::PathBuf) {
    let ca = TestCa::new("nexo test CA").unwrap();
    let ca_file = ca.write(dir).unwrap();
    let (cert, key) = ca
        .issue("morse", &["localhost", "127.0.0.1"])
        .unwrap()
        .write(dir)
        .unwrap();
    let keys = dir.join("keys.log");
    let server = HttpServer::serve_with_env(
        "morse",
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        &[("SSLKEYLOGFILE", &keys)],
    );
    (server, ca_file)
}

#[test]
fn nexo_call_over_https_both_transports_with_the_secrets_logged() {
    let dir = TempDir::new("serve-tls");
    let (server, ca_file) = serve_https(dir.path());
    assert!(
        server
            .stderr()
            .contains(&format!("at https://127.0.0.1:{}/mcp", server.port)),
        "{}",
        server.stderr()
    );
    for (path, transport) in [("mcp", "http"), ("sse", "sse")] {
        let url = format!("https://localhost:{}/{path}", server.port);
        let mut call = nexo();
        call.args(["call", "--url", &url, "--transport", transport])
            .args(["echo", "texto=hola", "--json"])
            .env("SSL_CERT_FILE", &ca_file)
            .env_remove("SSLKEYLOGFILE");
        let result = run_command(call).assert_success().stdout_json();
        assert_eq!(
            result["content"][0]["text"], "echo: hola",
            "{transport}: {result}"
        );
    }
    // The server's secrets, one line per TLS 1.3 secret of each connection.
    let keys = std::fs::read_to_string(dir.path().join("keys.log")).unwrap();
    assert!(
        keys.lines()
            .any(|line| line.starts_with("CLIENT_TRAFFIC_SECRET_0 ")),
        "{keys}"
    );
}

#[test]
fn a_client_that_does_not_trust_the_certificate_is_refused() {
    let dir = TempDir::new("serve-tls-untrusted");
    let (server, _) = serve_https(dir.path());
    let url = format!("https://localhost:{}/mcp", server.port);
    // An empty trust store: nothing vouches for the test CA.
    let empty = dir.path().join("no-roots.pem");
    std::fs::write(&empty, "").unwrap();
    let mut call = nexo();
    call.args(["call", "--url", &url, "echo", "texto=hola"])
        .env("SSL_CERT_FILE", &empty);
    let refused = run_command(call);
    assert_eq!(refused.code(), 4, "{}", refused.stderr);
    let error = refused.error_line();
    let message = error["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(message.contains("certificate"), "{error}");
}

#[test]
fn unusable_tls_files_stop_the_server_at_start() {
    let dir = TempDir::new("serve-tls-bad");
    let cert = dir.path().join("server.pem");
    std::fs::write(&cert, "not a certificate\n").unwrap();
    let key = dir.path().join("server.key");
    std::fs::write(&key, "not a key\n").unwrap();
    let started = run(&[
        "serve",
        "morse",
        "--http",
        "127.0.0.1:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(started.code(), 1, "{}", started.stderr);
    let error = started.error_line();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("server.pem"),
        "{error}"
    );
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--tls-key"),
        "{error}"
    );

    // One without the other is a usage error.
    let half = run(&[
        "serve",
        "morse",
        "--http",
        "--tls-cert",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(half.code(), 1, "{}", half.stderr);
    assert!(half.stderr.contains("--tls-key"), "{}", half.stderr);
}
