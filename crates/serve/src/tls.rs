//! HTTPS without a platform in front: a certificate and key in PEM files,
//! served by rustls with HTTP/2 and HTTP/1.1 offered by ALPN, reloaded
//! when either file changes, and TLS secrets written to the file
//! `SSLKEYLOGFILE` names (for decrypting a capture in Wireshark).
//!
//! [`TlsListener`] is an axum listener: a task of its own accepts TCP
//! connections and runs each handshake on a task of its own, within
//! [`HANDSHAKE_TIMEOUT`], so a client that opens a connection and says
//! nothing holds up no one; finished handshakes are handed to the server.
//! A failed handshake is logged at debug level and forgotten.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::ServeError;

/// How long a client may take to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the certificate and key files are looked at for a change.
const RELOAD_CHECK: Duration = Duration::from_secs(2);
/// Finished handshakes waiting for the server to take them.
const READY_QUEUE: usize = 64;

/// The PEM files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, the server's own certificate first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl TlsFiles {
    /// Reads both files into a key rustls can serve, or says which file
    /// is wrong and how.
    fn load(&self, provider: &CryptoProvider) -> Result<CertifiedKey, ServeError> {
        let bad = |path: &Path, reason: String| ServeError::Tls {
            path: path.to_owned(),
            reason,
        };
        let chain = CertificateDer::pem_file_iter(&self.cert)
            .map_err(|error| bad(&self.cert, error.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| bad(&self.cert, error.to_string()))?;
        if chain.is_empty() {
            return Err(bad(&self.cert, "it holds no CERTIFICATE block".into()));
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|error| bad(&self.key, error.to_string()))?;
        let key = CertifiedKey::from_der(chain, key, provider)
            .map_err(|error| bad(&self.key, error.to_string()))?;
        Ok(key)
    }

    /// When each file was last changed, and its size: a change of either
    /// means the pair is read again.
    fn stamp(&self) -> Option<[(SystemTime, u64); 2]> {
        let of = |path: &Path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        };
        Some([of(&self.cert)?, of(&self.key)?])
    }
}

/// The certificate currently served; swapped whole when the files change.
#[derive(Debug)]
struct Reloadable(ArcSwap<CertifiedKey>);

impl ResolvesServerCert for Reloadable {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.load_full())
    }
}

/// A TCP listener whose connections are TLS, handshakes done.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl TlsListener {
    /// Serves TLS on `listener` with the pair in `files`, read now (an
    /// error if either is unreadable or they do not match) and again
    /// whenever either changes (a bad new pair is logged and the old one
    /// kept).
    pub fn new(listener: TcpListener, files: &TlsFiles) -> Result<Self, ServeError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let current = Arc::new(Reloadable(ArcSwap::from_pointee(files.load(&provider)?)));
        let mut config = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| ServeError::Tls {
                path: files.cert.clone(),
                reason: error.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        if std::env::var_os("SSLKEYLOGFILE").is_some() {
            tracing::warn!("SSLKEYLOGFILE is set: this server's TLS secrets are written to it");
            config.key_log = Arc::new(rustls::KeyLogFile::new());
        }
        let local = listener.local_addr().map_err(ServeError::Server)?;
        let (sender, ready) = mpsc::channel(READY_QUEUE);
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let tasks = vec![
            tokio::spawn(accept(listener, acceptor, sender)),
            tokio::spawn(reload(files.clone(), provider, current)),
        ];
        Ok(Self {
            ready,
            local,
            tasks,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task ended (it does not, short of a panic):
            // no connection will come again.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// Accepts connections for ever, each handshake on a task of its own.
async fn accept(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => {
                    let _ = ready.send((tls, peer)).await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

/// Reads the pair again whenever either file changes.
async fn reload(files: TlsFiles, provider: Arc<CryptoProvider>, current: Arc<Reloadable>) {
    let mut seen = files.stamp();
    let mut tick = tokio::time::interval(RELOAD_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let stamp = files.stamp();
        if stamp.is_none() || stamp == seen {
            continue;
        }
        seen = stamp;
        match files.load(&provider) {
            Ok(key) => {
                current.0.store(Arc::new(key));
                tracing::info!(cert = %files.cert.display(), "TLS certificate reloaded");
            }
            Err(error) => tracing::warn!(
                %error,
                "the changed TLS files cannot be used; still serving the previous certificate"
            ),
        }
    }
}
