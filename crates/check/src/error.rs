//! What stops `nexo check` before it can report: a target it cannot probe,
//! a server it cannot start or reach. A server that misbehaves is no error
//! here: that is a finding.

/// Why `nexo check` could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The target or an option cannot be checked as given.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    /// The server could not be started or reached at all.
    #[error("{message}")]
    Unreachable { message: String },
}

impl CheckError {
    pub(crate) fn usage(message: impl Into<String>, hint: impl Into<Option<String>>) -> Self {
        Self::Usage {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A stable snake_case code for scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Usage { .. } => "usage",
            Self::Unreachable { .. } => "unreachable",
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Usage { hint, .. } => hint.clone(),
            Self::Unreachable { .. } => Some(
                "check the command or URL; `nexo discover` with the same target shows the connection failure in detail"
                    .to_owned(),
            ),
        }
    }
}
