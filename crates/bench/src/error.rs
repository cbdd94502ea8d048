//! What can stop a benchmark before or while it runs. Failures of single
//! requests are no errors here: they are counted by class
//! ([`crate::check::ErrorClass`]) and reported with the figures. Each
//! error says its code, exit class and hint ([`Hinted`]).

use std::path::PathBuf;

use nexo_hint::{Exit, Hint, Hinted};

use crate::check::ErrorClass;

/// Why `nexo bench` could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The plan itself is wrong (a flag, a scenario field, an expectation).
    #[error("{message}")]
    Usage { message: String, hint: Option<Hint> },
    /// The target is not on this machine and `--allow-remote` was not given.
    #[error("`{host}` is not a loopback address")]
    Remote { host: String },
    /// The server could not be reached or started, or its first answer
    /// (initialize or the sample call) did not come.
    #[error("{message}")]
    Unreachable { message: String },
    /// The sample request, sent before the run, failed.
    #[error("the sample request failed: {message}")]
    Sample { class: ErrorClass, message: String },
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
            hint: hint.into().map(Hint::new),
        }
    }
}

impl Hinted for BenchError {
    fn code(&self) -> &'static str {
        match self {
            Self::Usage { .. } | Self::Remote { .. } => "usage",
            Self::Unreachable { .. } => "unreachable",
            Self::Sample { .. } => "sample_failed",
            Self::File { .. } => "io_error",
            Self::NotAResult { .. } => "not_a_result",
            Self::Client(error) => error.code(),
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::Usage { .. }
            | Self::Remote { .. }
            | Self::File { .. }
            | Self::NotAResult { .. } => Exit::Usage,
            Self::Unreachable { .. } => Exit::Unreachable,
            Self::Sample { class, .. } => match class {
                ErrorClass::Transport | ErrorClass::Timeout => Exit::Unreachable,
                ErrorClass::Http(401 | 403) => Exit::Unauthorized,
                ErrorClass::Http(_)
                | ErrorClass::JsonRpc(_)
                | ErrorClass::ToolError
                | ErrorClass::Mismatch => Exit::Remote,
            },
            Self::Client(error) => error.exit(),
        }
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Usage { hint, .. } => hint.clone(),
            Self::Remote { .. } => Some(
                "load tests send traffic to loopback servers only; add `--allow-remote` if this server is yours to load".into(),
            ),
            Self::Unreachable { .. } => Some(
                Hint::new("check that the server runs").command("nexo discover TARGET", "shows what it answers"),
            ),
            Self::Sample { .. } => Some(
                Hint::new("the request is sent once before the run; check the tool's name and arguments")
                    .command("nexo call TARGET TOOL ...", "sends it alone"),
            ),
            Self::File { .. } => None,
            Self::NotAResult { .. } => {
                Some("compare files written by `nexo bench ... --json > FILE`".into())
            }
            Self::Client(error) => error.hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nexo bench`'s failures, each to its exit status; a failed sample
    /// request by its class (assertions, 7, are the CLI's: no error here).
    #[test]
    fn bench_errors_map_to_their_exit_statuses() {
        let sample = |class| BenchError::Sample {
            class,
            message: String::new(),
        };
        let table = [
            (sample(ErrorClass::Transport), Exit::Unreachable),
            (sample(ErrorClass::Timeout), Exit::Unreachable),
            (sample(ErrorClass::Http(401)), Exit::Unauthorized),
            (sample(ErrorClass::Http(403)), Exit::Unauthorized),
            (sample(ErrorClass::Http(500)), Exit::Remote),
            (sample(ErrorClass::ToolError), Exit::Remote),
            (sample(ErrorClass::JsonRpc(-32601)), Exit::Remote),
            (sample(ErrorClass::Mismatch), Exit::Remote),
            (
                BenchError::Unreachable {
                    message: String::new(),
                },
                Exit::Unreachable,
            ),
            (
                BenchError::Remote {
                    host: "example.com".to_owned(),
                },
                Exit::Usage,
            ),
            (BenchError::usage("", None), Exit::Usage),
            (
                BenchError::Client(nexo_client::ClientError::Timeout {
                    target: "x".to_owned(),
                    seconds: 1.0,
                }),
                Exit::Unreachable,
            ),
        ];
        for (error, exit) in table {
            assert_eq!(error.exit(), exit, "{error:?}");
        }
    }
}
