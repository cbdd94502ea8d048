//! What stops `nexo check` before it can report: a target it cannot probe,
//! a server it cannot start or reach. A server that misbehaves is no error
//! here: that is a finding. Each error says its code, exit class and hint
//! ([`Hinted`]).

use nexo_hint::{Exit, Hint, Hinted};

/// Why `nexo check` could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The target or an option cannot be checked as given.
    #[error("{message}")]
    Usage { message: String, hint: Option<Hint> },
    /// The server could not be started or reached at all.
    #[error("{message}")]
    Unreachable { message: String },
}

impl CheckError {
    pub(crate) fn usage(message: impl Into<String>, hint: impl Into<Option<String>>) -> Self {
        Self::Usage {
            message: message.into(),
            hint: hint.into().map(Hint::new),
        }
    }
}

impl Hinted for CheckError {
    fn code(&self) -> &'static str {
        match self {
            Self::Usage { .. } => "usage",
            Self::Unreachable { .. } => "unreachable",
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::Usage { .. } => Exit::Usage,
            Self::Unreachable { .. } => Exit::Unreachable,
        }
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Usage { hint, .. } => hint.clone(),
            Self::Unreachable { .. } => Some(
                "check the command or URL; `nexo discover` with the same target shows the connection failure in detail"
                    .into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nexo check`'s failures, each to its exit status (findings, 8, are
    /// the CLI's: no error here).
    #[test]
    fn check_errors_map_to_their_exit_statuses() {
        let table = [
            (CheckError::usage("", None), Exit::Usage),
            (
                CheckError::Unreachable {
                    message: String::new(),
                },
                Exit::Unreachable,
            ),
        ];
        for (error, exit) in table {
            assert_eq!(error.exit(), exit, "{error:?}");
        }
    }
}
