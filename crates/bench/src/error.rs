//! What can stop a benchmark before or while it runs. Failures of single
//! requests are no errors here: they are counted by class
//! ([`crate::check::ErrorClass`]) and reported with the figures.

use std::path::PathBuf;

/// Why `nexo bench` could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The plan itself is wrong (a flag, a scenario field, an expectation).
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    /// The target is not on this machine and `--allow-remote` was not given.
    #[error("`{host}` is not a loopback address")]
    Remote { host: String },
    /// The server could not be reached or started, or its first answer
    /// (initialize or the sample call) did not come.
    #[error("{message}")]
    Unreachable { message: String },
    /// The sample request, sent before the run, failed.
    #[error("the sample request failed: {message}")]
    Sample { class: String, message: String },
    /// A file could not be read or written.
    #[error("cannot {action} `{}`", path.display())]
    File {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A results file that is no `nexo bench --json` document.
    #[error("`{}` is not a `nexo bench --json` document: {reason}", path.display())]
    NotAResult { path: PathBuf, reason: String },
    /// Arguments the client's argument reader refused.
    #[error(transparent)]
    Client(#[from] nexo_client::ClientError),
}

impl BenchError {
    pub(crate) fn usage(message: impl Into<String>, hint: impl Into<Option<String>>) -> Self {
        Self::Usage {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A stable snake_case code for scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Usage { .. } | Self::Remote { .. } => "usage",
            Self::Unreachable { .. } => "unreachable",
            Self::Sample { .. } => "sample_failed",
            Self::File { .. } => "io_error",
            Self::NotAResult { .. } => "not_a_result",
            Self::Client(error) => error.code(),
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Usage { hint, .. } => hint.clone(),
            Self::Remote { .. } => Some(
                "load tests send traffic to loopback servers only; add `--allow-remote` if this server is yours to load".to_owned(),
            ),
            Self::Unreachable { .. } => Some(
                "check that the server runs (`nexo discover TARGET` shows what it answers)".to_owned(),
            ),
            Self::Sample { .. } => Some(
                "the request is sent once before the run; check the tool's name and arguments with `nexo call TARGET TOOL ...`".to_owned(),
            ),
            Self::File { .. } => None,
            Self::NotAResult { .. } => {
                Some("compare files written by `nexo bench ... --json > FILE`".to_owned())
            }
            Self::Client(error) => error.hint(),
        }
    }
}
