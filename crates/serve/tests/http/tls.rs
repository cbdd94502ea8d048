//! HTTPS ([`nexo_serve::TlsListener`]) on 127.0.0.1 with a test CA: both
//! HTTP versions by ALPN, the certificate reloaded when its files change
//! (and kept when the new files are bad), bad files refused at start, and
//! a client that opens a connection and says nothing holding up no one.

use std::path::Path;
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use http_body_util::BodyExt;
use nexo_serve::{ServeError, TlsFiles, TlsListener};
use nexo_testkit::{ServerCert, TestCa};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// How long a reload may take to show (the files are looked at every 2 s).
const RELOAD_PATIENCE: Duration = Duration::from_secs(20);

fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Serves `GET /` ("hello") over TLS with the pair in `dir`; gives the port.
async fn serve(files: &TlsFiles) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let listener = TlsListener::new(listener, files).unwrap().tap_io(|_| {});
    let router = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
    tokio::spawn(async move { axum::serve(listener, router).await });
    port
}

fn files(dir: &Path, cert: &ServerCert) -> TlsFiles {
    let (cert, key) = cert.write(dir).unwrap();
    TlsFiles { cert, key }
}

/// A TLS connection to the server that trusts `ca` and offers `alpn`.
async fn connect(
    ca: &TestCa,
    port: u16,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    install_provider();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap())
        .unwrap();
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.unwrap()
}

/// `GET /` on a connection offering `alpn`: the protocol agreed, the
/// HTTP version the answer came in and its body.
async fn fetch(ca: &TestCa, port: u16, alpn: &[&[u8]]) -> (Option<Vec<u8>>, http::Version, String) {
    let tls = connect(ca, port, alpn).await;
    let agreed = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let io = hyper_util::rt::TokioIo::new(tls);
    let request = http::Request::get(format!("https://localhost:{port}/"))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let response = if agreed.as_deref() == Some(b"h2") {
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .unwrap();
        tokio::spawn(connection);
        sender.send_request(request).await.unwrap()
    } else {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(connection);
        sender.send_request(request).await.unwrap()
    };
    let version = response.version();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (agreed, version, String::from_utf8_lossy(&body).into_owned())
}

/// The certificate the server presents to a new connection.
async fn presented(ca: &TestCa, port: u16) -> CertificateDer<'static> {
    let tls = connect(ca, port, &[]).await;
    tls.get_ref().1.peer_certificates().unwrap()[0].clone()
}

fn der(cert: &ServerCert) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(cert.cert_pem.as_bytes()).unwrap()
}

#[tokio::test]
async fn https_offers_http2_and_http11_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("nexo test CA").unwrap();
    let cert = ca.issue("first", &["localhost", "127.0.0.1"]).unwrap();
    let port = serve(&files(dir.path(), &cert)).await;

    let (agreed, version, body) = fetch(&ca, port, &[b"h2", b"http/1.1"]).await;
    assert_eq!(agreed.as_deref(), Some(&b"h2"[..]));
    assert_eq!(version, http::Version::HTTP_2);
    assert_eq!(body, "hello");

    let (agreed, version, body) = fetch(&ca, port, &[b"http/1.1"]).await;
    assert_eq!(agreed.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!(version, http::Version::HTTP_11);
    assert_eq!(body, "hello");

    // A client that offers no ALPN at all speaks HTTP/1.1.
    let (agreed, version, _) = fetch(&ca, port, &[]).await;
    assert_eq!(agreed, None);
    assert_eq!(version, http::Version::HTTP_11);
}

#[tokio::test]
async fn a_changed_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("nexo test CA").unwrap();
    let first = ca.issue("first", &["localhost"]).unwrap();
    let port = serve(&files(dir.path(), &first)).await;
    assert_eq!(presented(&ca, port).await, der(&first));

    // A bad pair (the new certificate with the old key) is not taken up.
    let second = ca.issue("second", &["localhost"]).unwrap();
    std::fs::write(dir.path().join("server.pem"), &second.cert_pem).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        presented(&ca, port).await,
        der(&first),
        "a mismatched pair was served"
    );

    // Its key written too, the pair is good: the next connections get it.
    std::fs::write(dir.path().join("server.key"), &second.key_pem).unwrap();
    let deadline = Instant::now() + RELOAD_PATIENCE;
    while presented(&ca, port).await != der(&second) {
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_silent_connection_holds_up_no_one() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("nexo test CA").unwrap();
    let cert = ca.issue("first", &["localhost"]).unwrap();
    let port = serve(&files(dir.path(), &cert)).await;
    // Connected, and never a byte of a handshake.
    let _silent = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (_, _, body) = tokio::time::timeout(
        nexo_serve::HANDSHAKE_TIMEOUT / 2,
        fetch(&ca, port, &[b"http/1.1"]),
    )
    .await
    .expect("a silent connection held up the next one");
    assert_eq!(body, "hello");
}

#[tokio::test]
async fn unusable_files_are_refused_at_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("nexo test CA").unwrap();
    let first = ca.issue("first", &["localhost"]).unwrap();
    let second = ca.issue("second", &["localhost"]).unwrap();
    let good = files(dir.path(), &first);
    let listener = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = |files: &TlsFiles| {
        let tcp = listener();
        tcp.set_nonblocking(true).unwrap();
        match TlsListener::new(tokio::net::TcpListener::from_std(tcp).unwrap(), files) {
            Err(ServeError::Tls { path, reason }) => (path, reason),
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(_) => panic!("{files:?} was accepted"),
        }
    };

    let missing = TlsFiles {
        cert: dir.path().join("nowhere.pem"),
        key: good.key.clone(),
    };
    assert_eq!(refused(&missing).0, missing.cert);

    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let (path, reason) = refused(&TlsFiles {
        cert: empty.clone(),
        key: good.key.clone(),
    });
    assert_eq!(path, empty);
    assert!(reason.contains("CERTIFICATE"), "{reason}");

    // The key of another certificate.
    let other_key = dir.path().join("other.key");
    std::fs::write(&other_key, &second.key_pem).unwrap();
    let mismatched = TlsFiles {
        cert: good.cert.clone(),
        key: other_key.clone(),
    };
    assert_eq!(refused(&mismatched).0, other_key);

    // A certificate given as the key.
    let (path, _) = refused(&TlsFiles {
        cert: good.cert.clone(),
        key: good.cert.clone(),
    });
    assert_eq!(path, good.cert);
}
