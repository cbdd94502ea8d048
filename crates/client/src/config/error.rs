//! What can be wrong with a configuration file: it cannot be read, or
//! something in it is wrong or not supported, at a line and column, with
//! what to write instead.

use std::path::PathBuf;

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

impl ConfigError {
    /// A stable snake_case code for scripts (the `code` of the JSON error
    /// line).
    pub fn code(&self) -> &'static str {
        "config"
    }

    /// What to write instead, or what to do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Read { hint, .. } | Self::Invalid { hint, .. } => hint.clone(),
        }
    }

    /// Where in a file the problem is, when it is in one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Self::Read { .. } => None,
            Self::Invalid { location, .. } => Some(location),
        }
    }
}
