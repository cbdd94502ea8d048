//! How nexo trusts a server's certificate, one way for every HTTP client it
//! builds (this crate's, `nexo bench`'s connections, the providers'): the
//! platform's verifier (the system's store, and `SSL_CERT_FILE` where it is
//! set), the certificates of `--cacert FILE` beside it ([`trust_file`]),
//! and TLS secrets written where `SSLKEYLOGFILE` says.
//!
//! A certificate the person named itself (in `--cacert` or `SSL_CERT_FILE`)
//! is accepted when the server presents exactly it, as curl does, even
//! where the platform's verifier refuses it: `openssl req -x509`, the way
//! most guides make a test certificate, writes `CA:TRUE` into it, which
//! WebPKI refuses in a server's own certificate. Its dates and names are
//! still checked ([`certificate`]), the names as OpenSSL reads them (the
//! subject's common name only when the certificate has no
//! `subjectAltName`). There is no switch that turns verification off.

pub(crate) mod certificate;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use nexo_hint::{Exit, Hint, Hinted};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The certificates of `--cacert`, set once before any client is built.
static EXTRA: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
/// The configuration every client shares, built when first asked for.
static CONFIG: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();

/// Why a trust file was refused.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read `{path}`: {detail}")]
    Unreadable { path: String, detail: String },
    #[error(
        "`{path}` holds no certificate (PEM `-----BEGIN CERTIFICATE-----` blocks, or one DER certificate)"
    )]
    Empty { path: String },
    #[error("`--cacert` was given after the first HTTPS client was built")]
    TooLate,
}

impl Hinted for TrustError {
    fn code(&self) -> &'static str {
        "usage"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(match self {
            Self::Unreadable { .. } | Self::Empty { .. } => {
                "name a PEM file of certificates: an authority's, or the server's own \
                 (`openssl req -x509 ... -out cert.pem` writes one)"
            }
            Self::TooLate => "give `--cacert` before anything else connects",
        }))
    }
}

/// Trusts the certificates of `path` (PEM blocks, or a single DER
/// certificate) beside the platform's, for every client built from now
/// on; returns how many it holds.
pub fn trust_file(path: &Path) -> Result<usize, TrustError> {
    let certificates = read_certificates(path)?;
    let count = certificates.len();
    if CONFIG.get().is_some() || EXTRA.set(certificates).is_err() {
        return Err(TrustError::TooLate);
    }
    Ok(count)
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TrustError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| TrustError::Unreadable {
        path: shown.clone(),
        detail: error.to_string(),
    })?;
    let pem: Vec<_> = CertificateDer::pem_slice_iter(&bytes)
        .filter_map(Result::ok)
        .collect();
    if !pem.is_empty() {
        return Ok(pem);
    }
    // A DER certificate is one SEQUENCE.
    if certificate::Held::read(&bytes).is_some() {
        return Ok(vec![CertificateDer::from(bytes)]);
    }
    Err(TrustError::Empty { path: shown })
}

/// The TLS configuration of every HTTPS client: `None` when the platform's
/// verifier cannot be built (a client then falls back to its own, which
/// reports the same trouble when it connects).
pub fn client_config() -> Option<Arc<rustls::ClientConfig>> {
    CONFIG
        .get_or_init(|| match build() {
            Ok(config) => Some(Arc::new(config)),
            Err(error) => {
                tracing::warn!("cannot build the TLS verifier: {error}");
                None
            }
        })
        .clone()
}

fn build() -> Result<rustls::ClientConfig, rustls::Error> {
    crate::http::install_tls_provider();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let extra = EXTRA.get().cloned().unwrap_or_default();
    let platform = rustls_platform_verifier::Verifier::new_with_extra_roots(
        extra.iter().cloned(),
        provider.clone(),
    )?;
    let mut pinned = extra;
    if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
        pinned.extend(read_certificates(Path::new(&file)).unwrap_or_default());
    }
    let verifier = Named {
        platform: Arc::new(platform),
        pinned,
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.key_log = Arc::new(rustls::KeyLogFile::new());
    // rustls' session cache, telling the trace when each handshake starts.
    config.resumption =
        rustls::client::Resumption::store(Arc::new(crate::connection::TimedSessions::new()));
    Ok(config)
}

/// The platform's verifier, and the certificates the person named, which
/// are accepted as they are (see the module comment).
#[derive(Debug)]
struct Named {
    platform: Arc<rustls_platform_verifier::Verifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for Named {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let refused = match self.platform.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => return Ok(verified),
            Err(refused) => refused,
        };
        let named = self
            .pinned
            .iter()
            .any(|pinned| pinned.as_ref() == end_entity.as_ref());
        match certificate::Held::read(end_entity) {
            Some(held) if named => {
                held.check(server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
            _ => Err(refused),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.platform.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.platform.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.platform.supported_verify_schemes()
    }
}
