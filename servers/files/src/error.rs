//! The errors of the crate. [`FsError`] is what a tool reports as a tool
//! error (`isError: true`): its message says what to do, and its
//! [`ErrorCode`] is the stable, machine-readable code that goes into
//! `structuredContent` (`{"error": {"code", "message"}}`). [`OptionsError`]
//! is why a server cannot be built from its options (a root that is not a
//! directory, say); the command line reports it before serving anything.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use thiserror::Error;

/// The machine-readable code of a tool error, as `structuredContent` carries
/// it: `{"error": {"code": "path_outside_roots", "message": "..."}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Empty, a NUL byte, over-long, or a `file:` URI that names no path.
    InvalidPath,
    /// Outside every allowed directory: `..`, an absolute path elsewhere,
    /// `~`, a symbolic link that leads out, a sibling sharing a prefix.
    PathOutsideRoots,
    /// Inside version-control metadata (`.git`, `.hg`, ...), which is hidden.
    HiddenPath,
    NotFound,
    NotADirectory,
    /// A directory, FIFO, socket or device where a regular file is needed.
    NotARegularFile,
    /// A NUL byte in the first 8 KiB: not text.
    BinaryFile,
    ExtensionNotAllowed,
    /// A regular file with more than one hard link, which may be a file
    /// outside every root (unless `--allow-hard-links`).
    HardLink,
    /// A file (or a report) over the per-file size limit.
    TooLarge,
    /// Too many entries, too deep, too many matches or paths.
    LimitExceeded,
    /// The operation ran past the time limit.
    Timeout,
    /// An argument other than a path is unusable (a bad glob, head with tail).
    InvalidArgument,
    /// The operating system refused the server's own process.
    PermissionDenied,
    /// Any other failure of the filesystem.
    IoError,
}

impl ErrorCode {
    /// Every code, in the order the README's table lists them.
    pub const ALL: [ErrorCode; 15] = [
        ErrorCode::InvalidPath,
        ErrorCode::PathOutsideRoots,
        ErrorCode::HiddenPath,
        ErrorCode::NotFound,
        ErrorCode::NotADirectory,
        ErrorCode::NotARegularFile,
        ErrorCode::BinaryFile,
        ErrorCode::ExtensionNotAllowed,
        ErrorCode::HardLink,
        ErrorCode::TooLarge,
        ErrorCode::LimitExceeded,
        ErrorCode::Timeout,
        ErrorCode::InvalidArgument,
        ErrorCode::PermissionDenied,
        ErrorCode::IoError,
    ];

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::PathOutsideRoots => "path_outside_roots",
            ErrorCode::HiddenPath => "hidden_path",
            ErrorCode::NotFound => "not_found",
            ErrorCode::NotADirectory => "not_a_directory",
            ErrorCode::NotARegularFile => "not_a_regular_file",
            ErrorCode::BinaryFile => "binary_file",
            ErrorCode::ExtensionNotAllowed => "extension_not_allowed",
            ErrorCode::HardLink => "hard_link",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::LimitExceeded => "limit_exceeded",
            ErrorCode::Timeout => "timeout",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::IoError => "io_error",
        }
    }
}

/// Why a tool call failed. Paths appear as the client gave them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FsError {
    #[error("the path is empty; give a path inside an allowed directory, or `.` for the first one")]
    EmptyPath,
    #[error("the path contains a NUL byte, which no file name can hold")]
    NulByte,
    #[error("the path is {0} bytes long; the limit is {limit} bytes", limit = crate::limits::MAX_PATH_BYTES)]
    PathTooLong(usize),
    #[error(
        "a name in the path is {0} bytes long; the limit is {limit} bytes per name",
        limit = crate::limits::MAX_NAME_BYTES
    )]
    NameTooLong(usize),
    #[error("`{0}` is not a usable `file:` URI; give `file:///absolute/path` or a plain path")]
    BadUri(String),
    #[error(
        "`{0}` starts with `~`, a home directory, which this server never expands; give a \
         path inside an allowed directory (see `list_allowed_directories`)"
    )]
    Home(String),
    #[error(
        "`{path}` is outside the allowed directories ({roots}); give a path inside one of them"
    )]
    OutsideRoots { path: String, roots: String },
    #[error(
        "`{0}` leads outside its allowed directory (through `..` or a symbolic link); give a \
         path that stays inside"
    )]
    Escapes(String),
    #[error(
        "no allowed directory is left: none of the client's roots overlaps the directories \
         the server was started with; give the client a root inside one of them"
    )]
    NoRoots,
    #[error("`{path}` is inside `{name}`, version-control metadata, which this server hides")]
    Hidden { path: String, name: String },
    #[error("`{0}` does not exist{hint}", hint = backslash_hint(.0))]
    NotFound(String),
    #[error("`{0}` is not a directory; read a file with `read_text_file`")]
    NotADirectory(String),
    #[error("`{0}` is a directory; list it with `list_directory` or `directory_tree`")]
    IsADirectory(String),
    #[error("`{path}` is a {kind}, not a regular file; only regular files are read")]
    NotARegularFile { path: String, kind: &'static str },
    #[error("`{0}` holds binary data (a NUL byte in its first 8 KiB); only text files are read")]
    Binary(String),
    #[error(
        "`{path}` is not read: {kind} files are not among the server's allowed extensions \
         (its `--allow-ext` sets them)"
    )]
    ExtensionNotAllowed { path: String, kind: String },
    #[error(
        "`{path}` is not read: it has {links} hard links, and a hard link can be a file \
         outside the allowed directories (the server's `--allow-hard-links` serves such files)"
    )]
    HardLink { path: String, links: u64 },
    #[error(
        "`{path}` is {size} bytes; the limit is {limit} bytes per file: read part of it with \
         `head` or `tail`"
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error(
        "the {lines} lines asked of `{path}` run past {limit} bytes, the limit per read; ask \
         for fewer lines"
    )]
    LinesTooLong {
        path: String,
        lines: u64,
        limit: u64,
    },
    #[error(
        "the report is {size} bytes; the limit is {limit} bytes: shorten it, or split it into several reports"
    )]
    ReportTooLarge { size: u64, limit: u64 },
    #[error(
        "`{path}` holds more than {limit} entries, the limit per listing, tree or search: \
         ask about a subdirectory, or leave some out with `excludePatterns`"
    )]
    TooManyEntries { path: String, limit: usize },
    #[error(
        "`{path}` goes deeper than {limit} levels, the depth limit of trees and searches: \
         start from a subdirectory, or leave some out with `excludePatterns`"
    )]
    TooDeep { path: String, limit: usize },
    #[error("{count} paths given; the limit is {limit} per call: split them over several calls")]
    TooManyPaths { count: usize, limit: usize },
    #[error(
        "not read: the files before it already filled {limit} bytes, the limit per call; \
         read it in another call"
    )]
    BudgetSpent { limit: u64 },
    #[error(
        "every report name for {date} is taken (`_01` to `_99`); write the report tomorrow or move some away"
    )]
    ReportNamesTaken { date: String },
    #[error(
        "the operation took longer than {} s, the limit per operation; ask about less \
         (a subdirectory, fewer files)",
        .0.as_secs_f64()
    )]
    Timeout(Duration),
    #[error("{0}")]
    InvalidArgument(String),
    #[error(
        "the server's process may not read `{0}`: its owner must grant read access, or read another path"
    )]
    PermissionDenied(String),
    #[error("cannot access `{path}`: {message}")]
    Io { path: String, message: String },
    #[error("the operation failed unexpectedly: {0}")]
    Internal(String),
}

/// A hint for a path that holds a backslash, which is part of a name here.
fn backslash_hint(path: &str) -> &'static str {
    if path.contains('\\') {
        " (`\\` is part of a name here; separate directories with `/`)"
    } else {
        ""
    }
}

impl FsError {
    /// The machine-readable code; decided here and only here.
    pub fn code(&self) -> ErrorCode {
        match self {
            FsError::EmptyPath
            | FsError::NulByte
            | FsError::PathTooLong(_)
            | FsError::NameTooLong(_)
            | FsError::BadUri(_) => ErrorCode::InvalidPath,
            FsError::Home(_)
            | FsError::OutsideRoots { .. }
            | FsError::Escapes(_)
            | FsError::NoRoots => ErrorCode::PathOutsideRoots,
            FsError::Hidden { .. } => ErrorCode::HiddenPath,
            FsError::NotFound(_) => ErrorCode::NotFound,
            FsError::NotADirectory(_) => ErrorCode::NotADirectory,
            FsError::IsADirectory(_) | FsError::NotARegularFile { .. } => {
                ErrorCode::NotARegularFile
            }
            FsError::Binary(_) => ErrorCode::BinaryFile,
            FsError::ExtensionNotAllowed { .. } => ErrorCode::ExtensionNotAllowed,
            FsError::HardLink { .. } => ErrorCode::HardLink,
            FsError::TooLarge { .. }
            | FsError::LinesTooLong { .. }
            | FsError::ReportTooLarge { .. } => ErrorCode::TooLarge,
            FsError::TooManyEntries { .. }
            | FsError::TooDeep { .. }
            | FsError::TooManyPaths { .. }
            | FsError::BudgetSpent { .. }
            | FsError::ReportNamesTaken { .. } => ErrorCode::LimitExceeded,
            FsError::Timeout(_) => ErrorCode::Timeout,
            FsError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            FsError::PermissionDenied(_) => ErrorCode::PermissionDenied,
            FsError::Io { .. } | FsError::Internal(_) => ErrorCode::IoError,
        }
    }

    /// The error of an operating-system failure on `path`. cap-std reports
    /// a resolution that would leave the directory handle as a
    /// `PermissionDenied` error of its own (no OS error number); the kernel's
    /// `EXDEV` from `openat2(RESOLVE_BENEATH)` arrives translated to it.
    pub(crate) fn from_io(error: &std::io::Error, path: &str) -> FsError {
        use std::io::ErrorKind;
        const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();
        const ENOTDIR: i32 = rustix::io::Errno::NOTDIR.raw_os_error();
        const ENAMETOOLONG: i32 = rustix::io::Errno::NAMETOOLONG.raw_os_error();
        match (error.kind(), error.raw_os_error()) {
            (ErrorKind::PermissionDenied, None) => FsError::Escapes(path.to_owned()),
            (ErrorKind::PermissionDenied, Some(_)) => FsError::PermissionDenied(path.to_owned()),
            (ErrorKind::NotFound, _) => FsError::NotFound(path.to_owned()),
            (_, Some(ENOTDIR)) => FsError::NotFound(path.to_owned()),
            (_, Some(ENAMETOOLONG)) => FsError::PathTooLong(path.len()),
            (_, Some(ELOOP)) => FsError::Io {
                path: path.to_owned(),
                message: "too many levels of symbolic links".to_owned(),
            },
            _ => FsError::Io {
                path: path.to_owned(),
                message: error.to_string(),
            },
        }
    }
}

/// Why the server cannot be built from its options.
#[derive(Debug, Error)]
pub enum OptionsError {
    #[error("no directory to serve")]
    NoRoots,
    #[error("the directory `{}` cannot be opened", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("`{0}` is not a file extension")]
    BadExtension(String),
}

impl OptionsError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            OptionsError::NoRoots => {
                "give one or more directories: `nexo serve files DIR...`".to_owned()
            }
            OptionsError::Unreadable { .. } | OptionsError::NotADirectory(_) => {
                "give directories that exist and that this user may read".to_owned()
            }
            OptionsError::BadExtension(_) => {
                "give extensions without dots or slashes, comma-separated: `--allow-ext rs,md,toml` (`*` allows any)".to_owned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_serializes_as_its_wire_name() {
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::Value::from(code.as_str()))
            );
        }
    }

    #[test]
    fn the_readme_lists_every_code() {
        let listed: Vec<&str> = crate::readme::section("### Errors")
            .lines()
            .filter_map(|line| line.strip_prefix("| `")?.split_once("` |"))
            .map(|(code, _)| code)
            .collect();
        let codes: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(listed, codes, "servers/files/README.md's table of codes");
    }

    #[test]
    fn errors_map_to_their_codes() {
        let table = [
            (FsError::EmptyPath, "invalid_path"),
            (FsError::NulByte, "invalid_path"),
            (FsError::Home("~/x".into()), "path_outside_roots"),
            (FsError::Escapes("../x".into()), "path_outside_roots"),
            (FsError::NoRoots, "path_outside_roots"),
            (
                FsError::Hidden {
                    path: ".git/config".into(),
                    name: ".git".into(),
                },
                "hidden_path",
            ),
            (FsError::IsADirectory("src".into()), "not_a_regular_file"),
            (
                FsError::LinesTooLong {
                    path: "a".into(),
                    lines: 1,
                    limit: 1,
                },
                "too_large",
            ),
            (FsError::BudgetSpent { limit: 1 }, "limit_exceeded"),
            (FsError::Timeout(Duration::from_secs(5)), "timeout"),
        ];
        for (error, code) in table {
            assert_eq!(error.code().as_str(), code, "{error}");
        }
    }

    #[test]
    fn a_missing_path_with_a_backslash_says_how_to_separate_directories() {
        let message = FsError::NotFound(r"src\main.rs".into()).to_string();
        assert!(
            message.contains("separate directories with `/`"),
            "{message}"
        );
        let message = FsError::NotFound("src/main.rs".into()).to_string();
        assert_eq!(message, "`src/main.rs` does not exist");
    }

    #[test]
    fn io_errors_are_classified() {
        let escape = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "outside");
        assert_eq!(
            FsError::from_io(&escape, "x").code(),
            ErrorCode::PathOutsideRoots
        );
        let denied = std::io::Error::from_raw_os_error(rustix::io::Errno::ACCESS.raw_os_error());
        assert_eq!(
            FsError::from_io(&denied, "x").code(),
            ErrorCode::PermissionDenied
        );
        let missing = std::io::Error::from_raw_os_error(rustix::io::Errno::NOENT.raw_os_error());
        assert_eq!(FsError::from_io(&missing, "x").code(), ErrorCode::NotFound);
    }
}
