//! Errors of the serving runtime, each with its code, exit class and hint
//! ([`Hinted`]).

use std::net::SocketAddr;
use std::path::PathBuf;

use nexo_hint::{Exit, Hint, Hinted};

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

impl Hinted for ServeError {
    fn code(&self) -> &'static str {
        match self {
            Self::BadAddress { .. } => "usage",
            Self::OpenOnNetwork { .. } | Self::Access(_) => "bad_config",
            Self::Bind { .. }
            | Self::OpenLog { .. }
            | Self::OpenTrace { .. }
            | Self::Tls { .. }
            | Self::Server(_)
            | Self::Session(_) => "error",
        }
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What the person running the server can do about it.
    fn hint(&self) -> Option<Hint> {
        let text: String = match self {
            Self::Bind { addr, .. } => format!(
                "is another process using port {}? pick another with `--http 127.0.0.1:PORT`",
                addr.port()
            ),
            Self::BadAddress { .. } => {
                "try `--http 127.0.0.1:8000`, `--http 8000` or `--http 0.0.0.0`".into()
            }
            Self::OpenLog { .. } | Self::OpenTrace { .. } => {
                "check that the directory exists and is writable".into()
            }
            Self::Tls { .. } => {
                "give --tls-cert a PEM certificate chain (the server's certificate first) and \
                 --tls-key its PEM private key (PKCS#8, PKCS#1 or SEC1)"
                    .into()
            }
            Self::OpenOnNetwork { .. } => {
                "listen on a loopback address (`--http 127.0.0.1:8000`), or say who may call: \
                 `--token-file FILE` (static tokens) or `--auth-issuer URL --auth-audience URI` \
                 (OAuth); `--no-auth` stays open on purpose"
                    .into()
            }
            Self::Access(_) => {
                "see the sections \"Who may call\" and \"Rate limits\" of `nexo serve --help`"
                    .into()
            }
            Self::Server(_) | Self::Session(_) => return None,
        };
        Some(Hint::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15, point 7: a bad `--http` is bad usage, with what to write.
    #[test]
    fn issue_15_a_bad_address_is_usage_with_a_hint() {
        let error = ServeError::BadAddress {
            addr: "99999".into(),
        };
        assert_eq!((error.code(), error.exit()), ("usage", Exit::Usage));
        assert!(error.hint().is_some());
    }
}
