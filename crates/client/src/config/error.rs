//! What can be wrong with a configuration file: it cannot be read, or
//! something in it is wrong or not supported, at a line and column, with
//! what to write instead.

use std::path::PathBuf;

use nexo_hint::{Exit, Hint, Hinted};

use crate::config::Location;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file (or an `envFile`) cannot be read.
    #[error("cannot read `{}`: {reason}", path.display())]
    Read {
        path: PathBuf,
        /// What went wrong, in words (`no such file`, `permission denied`).
        reason: String,
        hint: Option<String>,
    },
    /// Something in a file is wrong or not supported.
    #[error("{location}: {message}")]
    Invalid {
        location: Location,
        message: String,
        /// What to write instead.
        hint: Option<String>,
    },
}

impl Hinted for ConfigError {
    fn code(&self) -> &'static str {
        "config"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to write instead, or what to do.
    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Read { hint, .. } | Self::Invalid { hint, .. } => hint.clone().map(Hint::new),
        }
    }
}

impl ConfigError {
    /// Where in a file the problem is, when it is in one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Self::Read { .. } => None,
            Self::Invalid { location, .. } => Some(location),
        }
    }

    pub(crate) fn read(path: impl Into<PathBuf>, error: &std::io::Error) -> Self {
        Self::Read {
            path: path.into(),
            reason: io_reason(error),
            hint: None,
        }
    }

    pub(crate) fn with_hint(mut self, text: impl Into<String>) -> Self {
        match &mut self {
            Self::Read { hint, .. } | Self::Invalid { hint, .. } => *hint = Some(text.into()),
        }
        self
    }
}

/// What an I/O error means, in words a person reads.
pub(crate) fn io_reason(error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::NotFound => "no such file".to_owned(),
        ErrorKind::PermissionDenied => "permission denied".to_owned(),
        ErrorKind::IsADirectory => "it is a directory".to_owned(),
        ErrorKind::InvalidData => "it is not UTF-8 text".to_owned(),
        _ => error.to_string(),
    }
}
