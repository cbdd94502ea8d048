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

/// Issue 39: certificates made with the openssl CLI as people make them.
/// The guides' `openssl req -x509 -subj /CN=localhost` (`CA:TRUE`, no
/// `subjectAltName`) is accepted when named, by `--cacert` or by
/// `SSL_CERT_FILE`, as curl accepts it; a wrong name, an expired and a
/// not-yet-valid certificate are each told in their own words, with the
/// names and dates the certificate holds.
#[test]
fn issue_39_certificates_made_with_the_openssl_cli() {
    let dir = TempDir::new("tls-openssl");
    let openssl = |args: &[&str]| crate::support::openssl(dir.path(), args);
    crate::support::openssl_self_signed(dir.path(), "guide.pem", "30");
    // Dated certificates for the same key, from `openssl ca` (which alone
    // takes dates), with a subjectAltName.
    std::fs::create_dir(dir.path().join("db")).unwrap();
    std::fs::write(dir.path().join("db/index.txt"), "").unwrap();
    std::fs::write(dir.path().join("db/serial"), "01\n").unwrap();
    std::fs::write(
        dir.path().join("ca.cnf"),
        "[ca]\ndefault_ca = dated\n[dated]\ndatabase = db/index.txt\nserial = db/serial\n\
         new_certs_dir = db\ndefault_md = sha256\npolicy = any\ncopy_extensions = copy\n\
         unique_subject = no\n[any]\ncommonName = supplied\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-new",
        "-key",
        "key.pem",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,DNS:morse.test",
        "-out",
        "req.csr",
    ]);
    for (name, from, to) in [
        ("expired.pem", "20200101000000Z", "20200102000000Z"),
        ("future.pem", "20990101000000Z", "20991231000000Z"),
    ] {
        openssl(&[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-selfsign",
            "-keyfile",
            "key.pem",
            "-in",
            "req.csr",
            "-startdate",
            from,
            "-enddate",
            to,
            "-out",
            name,
        ]);
    }
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let serve = |cert: &str| {
        HttpServer::serve(
            "morse",
            &["--tls-cert", &file(cert), "--tls-key", &file("key.pem")],
        )
    };
    let call = |url: &str, cacert: Option<&str>, ssl_cert_file: Option<&str>| {
        let mut call = nexo();
        call.args(["call", "--url", url, "echo", "texto=hola", "--json"])
            .env_remove("SSL_CERT_FILE");
        if let Some(cert) = cacert {
            call.args(["--cacert", &file(cert)]);
        }
        if let Some(cert) = ssl_cert_file {
            call.env("SSL_CERT_FILE", file(cert));
        }
        run_command(call)
    };
    let refused = |run: &crate::support::Run, words: &str| {
        assert_eq!(run.code(), 4, "{run:#?}");
        let error = &run.error_line()["error"];
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(words), "{words:?} in {message}");
    };

    let guide = serve("guide.pem");
    let localhost = format!("https://localhost:{}/mcp", guide.port);
    for (cacert, ssl_cert_file) in [(Some("guide.pem"), None), (None, Some("guide.pem"))] {
        let called = call(&localhost, cacert, ssl_cert_file);
        assert_eq!(
            called.assert_success().stdout_json()["content"][0]["text"],
            "echo: hola"
        );
    }
    // Not named: refused, with the way to name it.
    let unnamed = call(&localhost, None, None);
    refused(&unnamed, "the server's certificate");
    assert!(
        unnamed.error_line()["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--cacert")
    );
    let by_address = format!("https://127.0.0.1:{}/mcp", guide.port);
    refused(
        &call(&by_address, Some("guide.pem"), None),
        "is not for `127.0.0.1`: it is for `localhost`",
    );

    let expired = serve("expired.pem");
    let url = format!("https://localhost:{}/mcp", expired.port);
    refused(
        &call(&url, Some("expired.pem"), None),
        "expired at 2020-01-02T00:00:00Z",
    );
    let future = serve("future.pem");
    let url = format!("https://localhost:{}/mcp", future.port);
    refused(
        &call(&url, Some("future.pem"), None),
        "is valid only from 2099-01-01T00:00:00Z",
    );
    let url = format!("https://127.0.0.1:{}/mcp", future.port);
    refused(&call(&url, Some("future.pem"), None), "is valid only from");

    // A file that holds no certificate is a usage error, before anything.
    std::fs::write(dir.path().join("empty.pem"), "nothing here\n").unwrap();
    let bad = call(&localhost, Some("empty.pem"), None);
    assert_eq!(bad.code(), 1, "{bad:#?}");
    assert!(bad.stderr.contains("holds no certificate"), "{bad:#?}");
}

/// Issue 39, point 7: over HTTPS a client's trace tells the connection's
/// TLS handshake apart from its TCP connect (and the name's resolution),
/// and a later request goes over the same connection.
#[test]
fn issue_39_a_trace_over_https_times_the_tls_handshake() {
    let dir = TempDir::new("serve-tls-trace");
    let (server, ca_file) = serve_https(dir.path());
    let trace = dir.path().join("client.jsonl");
    let url = format!("https://localhost:{}/mcp", server.port);
    let mut call = nexo();
    call.args(["call", "--url", &url, "--transport", "http", "--trace"])
        .arg(&trace)
        .args(["echo", "texto=hola"])
        .env("SSL_CERT_FILE", &ca_file);
    run_command(call).assert_success();
    let text = std::fs::read_to_string(&trace).unwrap();
    let connections: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|record| record["direction"] == "out")
        .map(|record| record["http"]["connection"].clone())
        .collect();
    let first = &connections[0];
    assert_eq!(first["reused"], false, "{text}");
    for cost in ["dns_us", "connect_us", "tls_us"] {
        assert!(first[cost].is_u64(), "no {cost}: {text}");
    }
    assert!(
        connections[1..].iter().any(|c| c["reused"] == true),
        "{text}"
    );
    let summary = run(&["trace", "summary", trace.to_str().unwrap()]);
    let shown = &summary.assert_success().stdout;
    assert!(shown.contains(", TLS "), "{shown}");
}
