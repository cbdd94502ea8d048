//! The small JSON files of the host's own state (remembered approvals,
//! tool pins): read whole, and replaced whole through a temporary file in
//! the same directory, flushed and renamed over the old one, so that a file
//! is never half written. A file that cannot be parsed is an error naming
//! it, and is left as it is: nothing here empties a damaged file. The model
//! is nexo-client's consent store.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A state file cannot be read or written; `kind` names what it holds.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot read the {kind} file `{}`: {reason}", path.display())]
    Read {
        kind: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error(
        "the {kind} file `{}` is damaged at line {line}, column {column}: {detail}",
        path.display()
    )]
    Damaged {
        kind: &'static str,
        path: PathBuf,
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("cannot write the {kind} file `{}`: {reason}", path.display())]
    Write {
        kind: &'static str,
        path: PathBuf,
        reason: String,
    },
}

impl StoreError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Self::Read { .. } | Self::Write { .. } => {
                "check the permissions of the file and of its directory".into()
            }
            Self::Damaged { kind, .. } => {
                format!("repair the {kind} file, or move it away to start again without it")
            }
        }
    }

    /// The file is of a version this nexo does not read.
    pub(crate) fn version(kind: &'static str, path: &Path, found: u32, known: u32) -> Self {
        Self::Damaged {
            kind,
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            detail: format!("it is of version {found}, and this nexo reads version {known}"),
        }
    }
}

/// The file at `path` parsed, or `None` when there is none.
pub(crate) fn read<T: DeserializeOwned>(
    kind: &'static str,
    path: &Path,
) -> Result<Option<T>, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(StoreError::Read {
                kind,
                path: path.to_path_buf(),
                reason: error.to_string(),
            });
        }
    };
    serde_json::from_str(&text).map(Some).map_err(|error| {
        let detail = match error.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "it is not valid JSON".to_owned()
            }
            _ => "it is not what nexo writes there".to_owned(),
        };
        StoreError::Damaged {
            kind,
            path: path.to_path_buf(),
            line: error.line(),
            column: error.column(),
            detail,
        }
    })
}

/// Replaces the file at `path` whole with `value` as pretty JSON
/// ([`nexo_client::replace`]).
pub(crate) fn write<T: Serialize>(
    kind: &'static str,
    path: &Path,
    value: &T,
) -> Result<(), StoreError> {
    let failed = |reason: String| StoreError::Write {
        kind,
        path: path.to_path_buf(),
        reason,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|error| failed(error.to_string()))?;
    let mut text =
        serde_json::to_string_pretty(value).map_err(|error| failed(error.to_string()))?;
    text.push('\n');
    nexo_client::replace::replace(path, text.as_bytes()).map_err(|error| failed(error.to_string()))
}
