//! Errors of the serving runtime.

use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on `{addr}`")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("`{addr}` is not an address to listen on (expected HOST:PORT, HOST, or PORT)")]
    BadAddress { addr: String },
    #[error("cannot open the tool-call log `{}`", path.display())]
    OpenLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the trace `{}`", path.display())]
    OpenTrace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot use the TLS file `{}`: {reason}", path.display())]
    Tls { path: PathBuf, reason: String },
    #[error("the server has no authentication and would be open to anyone on {addr}")]
    OpenOnNetwork { addr: SocketAddr },
    /// Who may call, or the rate limits, cannot be had from the flags.
    #[error("{0}")]
    Access(String),
    #[error("the server stopped with an error")]
    Server(#[source] std::io::Error),
    #[error("the MCP session failed to start")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ServeError {
    /// What the person running the server can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Bind { addr, .. } => Some(format!(
                "is another process using port {}? pick another with `--http 127.0.0.1:PORT`",
                addr.port()
            )),
            Self::BadAddress { .. } => {
                Some("try `--http 127.0.0.1:8000`, `--http 8000` or `--http 0.0.0.0`".into())
            }
            Self::OpenLog { .. } | Self::OpenTrace { .. } => {
                Some("check that the directory exists and is writable".into())
            }
            Self::Tls { .. } => Some(
                "give --tls-cert a PEM certificate chain (the server's certificate first) and \
                 --tls-key its PEM private key (PKCS#8, PKCS#1 or SEC1)"
                    .into(),
            ),
            Self::OpenOnNetwork { .. } => Some(
                "listen on a loopback address (`--http 127.0.0.1:8000`), or say who may call: \
                 `--token-file FILE` (static tokens) or `--auth-issuer URL --auth-audience URI` \
                 (OAuth); `--no-auth` stays open on purpose"
                    .into(),
            ),
            Self::Access(_) => Some(
                "see the sections \"Who may call\" and \"Rate limits\" of `nexo serve --help`"
                    .into(),
            ),
            Self::Server(_) | Self::Session(_) => None,
        }
    }
}
