//! The files server of seed 004, as a library: [`Files`] is an rmcp server
//! handler giving read-only access to some directories (the roots), with
//! the read tools of the official MCP filesystem server
//! (`list_allowed_directories`, `list_directory`, `directory_tree`,
//! `read_text_file`, `read_multiple_files`, `search_files`,
//! `get_file_info`), seed 004's `readProjectStructure` and `readJavaFile`,
//! and, when allowed, seed 004's one write, `write_report`. It knows nothing
//! of transports or of the command line: whoever hosts it builds it from
//! [`FilesOptions`] and hands it a connection; [`tools`] gives the tool list.
//!
//! Safe by construction rather than by string checks: each root is an open
//! directory handle, and every path is opened beneath it ([`access`]), so
//! the kernel itself refuses `..`, absolute paths and symbolic links that
//! lead out. Only regular files with an allowed extension ([`extensions`])
//! and a single hard link (unless allowed) are read, never binary ones,
//! always within the [`limits`]. Every refusal
//! is a tool error with a stable code ([`ErrorCode`]).

mod access;
mod error;
mod extensions;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod info;
mod limits;
mod read;
mod report;
mod resolve;
mod roots;
mod server;
mod walk;

pub use error::{ErrorCode, FsError, OptionsError};
pub use extensions::AllowedExtensions;
pub use limits::Limits;
pub use server::{Files, FilesOptions, tools};

/// The README, whose tables tests keep true.
#[cfg(test)]
mod readme {
    /// The text under `heading` in `servers/files/README.md`, up to the next
    /// `## ` heading.
    pub fn section(heading: &str) -> &'static str {
        include_str!("../README.md")
            .split_once(heading)
            .and_then(|(_, rest)| rest.split_once("\n## "))
            .map(|(section, _)| section)
            .unwrap_or_default()
    }
}
