//! A certificate authority made for one test, and server certificates it
//! signs, as PEM: the HTTPS tests serve with them and clients trust the CA
//! (`SSL_CERT_FILE`), the way a real deployment's chain is trusted.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A throwaway certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// A server certificate and its private key, as PEM.
pub struct ServerCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Result<Self, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Writes the CA's certificate to `dir/ca.pem` (what `SSL_CERT_FILE`
    /// names) and gives its path.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.pem)?;
        Ok(path)
    }

    /// A certificate for `names` (DNS names or IP addresses), with
    /// `common_name` as its subject so tests can tell two apart.
    pub fn issue(&self, common_name: &str, names: &[&str]) -> Result<ServerCert, rcgen::Error> {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

impl ServerCert {
    /// Writes `dir/server.pem` and `dir/server.key`; gives their paths.
    pub fn write(&self, dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
        let cert = dir.join("server.pem");
        let key = dir.join("server.key");
        std::fs::write(&cert, &self.cert_pem)?;
        std::fs::write(&key, &self.key_pem)?;
        Ok((cert, key))
    }
}
