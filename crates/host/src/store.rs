//! The small JSON files of the host's own state (remembered approvals,
//! tool pins): read whole, and replaced whole through a temporary file in
//! the same directory, flushed and renamed over the old one, so that a file
//! is never half written. A file that cannot be parsed is an error naming
//! it, and is left as it is: nothing here empties a damaged file. The model
//! is nexo-client's consent store.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;

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
