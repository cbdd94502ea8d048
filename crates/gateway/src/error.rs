//! Errors of the gateway library: a policy file that cannot be loaded, a
//! sample request that cannot be read, an audit log that cannot be written
//! or read, a gateway that cannot start. Each says what failed, and its
//! code, exit class and hint ([`Hinted`]).

use std::path::PathBuf;

use nexo_hint::{Exit, Hint, Hinted};

/// Why a policy file could not be loaded. The policy in force, if any, is
/// kept (see [`crate::policy::PolicyHandle`]).
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read the policy `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML, or a field is unknown, missing or of the wrong
    /// kind; or a value is well-formed TOML that means nothing as policy (a
    /// regular expression that does not compile, a relative directory).
    #[error("`{}` line {line}, column {column}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
        /// What to write instead.
        hint: String,
    },
}

impl Hinted for PolicyError {
    fn code(&self) -> &'static str {
        match self {
            Self::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                "not_found"
            }
            Self::Read { .. } => "io_error",
            Self::Invalid { .. } => "bad_policy",
        }
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What the person writing the policy can do about it.
    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(match self {
            Self::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                "check the path; examples/gateway/policy.toml is a policy to start from".to_owned()
            }
            Self::Read { .. } => "check that the file is readable".to_owned(),
            Self::Invalid { hint, .. } => hint.clone(),
        }))
    }
}

/// Why `check-policy`'s sample request could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("the sample request is not JSON: {0}")]
    NotJson(String),
    #[error("the sample request does not say {0}")]
    Missing(&'static str),
    #[error("the sample request's {field} is not valid: {reason}")]
    Invalid { field: &'static str, reason: String },
}

impl Hinted for RequestError {
    fn code(&self) -> &'static str {
        "bad_request"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(
            "write the request as `{\"identity\": {\"subject\": \"alice\", \"scopes\": [\"files:read\"], \
         \"client\": \"10.0.0.7\"}, \"server\": \"files\", \"method\": \"tools/call\", \"tool\": \
         \"read_file\", \"arguments\": {\"path\": \"/srv/work/a.txt\"}}`, or as a JSON-RPC \
         `tools/call` message whose tool is named `server__tool`",
        ))
    }
}

/// Why the audit log could not be opened, written or read.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot open the audit log `{}`", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("another process is writing the audit log `{}`", path.display())]
    Locked { path: PathBuf },
    #[error("the last line of the audit log `{}` is cut ({bytes} bytes without an end of line)", path.display())]
    CutLastLine { path: PathBuf, bytes: usize },
    #[error("the last line of the audit log `{}` is not an audit record: {reason}", path.display())]
    NotAnAudit { path: PathBuf, reason: String },
    #[error("cannot write to the audit log `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the audit log `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Hinted for AuditError {
    fn code(&self) -> &'static str {
        match self {
            Self::Open { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                "not_found"
            }
            Self::Open { .. } | Self::Write { .. } | Self::Read { .. } => "io_error",
            Self::Locked { .. } => "audit_locked",
            Self::CutLastLine { .. } | Self::NotAnAudit { .. } => "audit_broken",
        }
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(match self {
            Self::Open { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                "check the path; the gateway creates its audit log when it starts".to_owned()
            }
            Self::Open { .. } | Self::Write { .. } | Self::Read { .. } => {
                "check that the file and its directory are writable and the disk is not full"
                    .to_owned()
            }
            Self::Locked { .. } => {
                "give each gateway instance an audit log of its own: one hash chain has one writer"
                    .to_owned()
            }
            Self::CutLastLine { path, .. } | Self::NotAnAudit { path, .. } => format!(
                "check the file with `nexo gateway verify-audit {}`, keep it as evidence, and \
                 start a new audit log (move this one aside)",
                path.display()
            ),
        }))
    }
}

/// Why the `gateway` settings of a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{location}: {message}")]
pub struct SettingsError {
    /// Where the `gateway` object is (`file:line:column`).
    pub location: String,
    pub message: String,
    pub hint: String,
}

/// Why `nexo gateway` could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the configuration has no `gateway` settings")]
    NoSettings { config: PathBuf },
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("the gateway has no `auth` settings and would be open to anyone on {addr}")]
    OpenOnNetwork { addr: std::net::SocketAddr },
    /// The shared Redis could not be set up (crate::shared).
    #[error("{0}")]
    Redis(String),
    /// The OTLP exporter could not be set up (crate::otlp).
    #[error("{0}")]
    Otlp(String),
    #[error(transparent)]
    Serve(#[from] nexo_serve::ServeError),
}

impl Hinted for StartError {
    fn code(&self) -> &'static str {
        match self {
            Self::NoSettings { .. } | Self::Settings(_) => "bad_config",
            Self::Policy(error) => error.code(),
            Self::Audit(error) => error.code(),
            Self::OpenOnNetwork { .. } | Self::Redis(_) | Self::Otlp(_) => "bad_config",
            Self::Serve(error) => error.code(),
        }
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<Hint> {
        let text = match self {
            Self::NoSettings { config } => format!(
                "add a `\"gateway\": {{\"policy\": \"policy.toml\"}}` object to `{}`; \
                 examples/gateway/config.json is a configuration to start from",
                config.display()
            ),
            Self::Settings(error) => error.hint.clone(),
            Self::Policy(error) => return error.hint(),
            Self::Audit(error) => return error.hint(),
            Self::OpenOnNetwork { .. } => {
                "listen on a loopback address (`--http 127.0.0.1:8000`), or give the `gateway` \
                 settings an `auth` (OAuth or API keys; `\"auth\": \"none\"` to stay open on \
                 purpose), or the flags `--token-file FILE` or `--auth-issuer URL \
                 --auth-audience URI` (`--no-auth` to stay open on purpose)"
                    .to_owned()
            }
            Self::Otlp(_) => {
                "write the `otlp` setting as `{\"endpoint\": \"http://HOST:4318\"}` (README, \
                 gateway, Metrics)"
                    .to_owned()
            }
            Self::Redis(_) => {
                "write the `redis` setting as `redis://HOST:6379/0` (README, gateway, Two \
                 instances)"
                    .to_owned()
            }
            Self::Serve(error) => return error.hint(),
        };
        Some(Hint::new(text))
    }
}
