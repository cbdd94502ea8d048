//! `get_file_info`: what a path is, its size, times and permissions, taken
//! through a handle that reads nothing, so that FIFOs, sockets and devices
//! can be described without being opened for reading.

use cap_std::fs::PermissionsExt;
use schemars::JsonSchema;
use serde::Serialize;

use crate::access::{self, FileKind, ReadRules};
use crate::error::FsError;
use crate::resolve::Target;

/// What `get_file_info` reports, field names as the official server's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    /// The absolute path, under its allowed directory's canonical name.
    pub path: String,
    /// `file`, `directory`, `fifo`, `socket`, `char_device` or `block_device`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// In bytes.
    pub size: u64,
    /// RFC 3339, UTC; absent where the filesystem does not record it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accessed: Option<String>,
    pub is_directory: bool,
    pub is_file: bool,
    /// The permission bits in octal, e.g. `644`.
    pub permissions: String,
}

impl FileInfo {
    /// `key: value` lines, as the official server writes them.
    pub fn text(&self) -> String {
        let time = |value: &Option<String>| value.clone().unwrap_or_else(|| "unknown".to_owned());
        format!(
            "size: {}\ncreated: {}\nmodified: {}\naccessed: {}\nisDirectory: {}\nisFile: {}\n\
             permissions: {}\ntype: {}",
            self.size,
            time(&self.created),
            time(&self.modified),
            time(&self.accessed),
            self.is_directory,
            self.is_file,
            self.permissions,
            self.kind
        )
    }
}

/// Describes the target.
pub fn file_info(target: &Target, rules: &ReadRules) -> Result<FileInfo, FsError> {
    let metadata = access::metadata(target, rules)?;
    Ok(FileInfo {
        path: target.absolute().display().to_string(),
        kind: FileKind::of(&metadata).wire_name(),
        size: metadata.len(),
        created: rfc3339(metadata.created()),
        modified: rfc3339(metadata.modified()),
        accessed: rfc3339(metadata.accessed()),
        is_directory: metadata.is_dir(),
        is_file: metadata.is_file(),
        permissions: format!("{:03o}", metadata.permissions().mode() & 0o777),
    })
}

fn rfc3339(time: std::io::Result<cap_std::time::SystemTime>) -> Option<String> {
    let time = time.ok()?.into_std();
    jiff::Timestamp::try_from(time)
        .ok()
        .map(|stamp| stamp.to_string())
}
