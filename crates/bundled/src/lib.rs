//! The bundled servers by name: the one place that knows the list. Callers
//! pick a server with [`Bundled`] and receive it built, as an [`AnyServer`]:
//! one handler type for all of them, so that the serving runtime and the
//! in-process client are compiled once rather than once per server. A server
//! that takes options (`dns`, `files`, `music`) describes them once
//! ([`Bundled::options`]: each one's flag, configuration key, kind of
//! value, help and default), and reads them from [`ServerOptions`], which
//! [`ServerOptions::for_server`] makes from what the user gave
//! ([`GivenOptions`]: command-line flags, or a configuration file's
//! `{"builtin": ...}` entry through [`GivenOptions::from_json`]).

mod any;
mod options;

use std::fmt;
use std::str::FromStr;

use nexo_hint::{Exit, Hint, Hinted};
use rmcp::model::Tool;

pub use crate::any::AnyServer;
pub use crate::options::{Defaults, GivenOptions, Kind, OptionsError, ServerOption, Value};

/// A server `nexo serve` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bundled {
    /// Seed 000's remote server: `echo`, `morse`, `demorse`.
    Morse,
    /// Seed 001's remote server: `time`, `sha256`, `echo`, `calc`.
    Utils,
    /// Seed 000's local server: DNS diagnostics.
    Dns,
    /// Seed 004's server: read-only access inside the given directories.
    Files,
    /// Seed 001's local server: a music library with playlists, on SQLite.
    Music,
    /// The fixture server of the official MCP conformance suite.
    Everything,
}

/// The options of the bundled servers that take any.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// `nexo serve dns`: resolver, authoritative port, timeout, call log.
    pub dns: nexo_dns::DnsOptions,
    /// `nexo serve files`: roots, reports, allowed extensions.
    pub files: nexo_files::FilesOptions,
    /// `nexo serve music`: the database file.
    pub music: nexo_music::MusicOptions,
}

/// A bundled server that cannot be built from its options.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Dns(#[from] nexo_dns::OptionsError),
    #[error(transparent)]
    Files(#[from] nexo_files::OptionsError),
    #[error(transparent)]
    Music(#[from] nexo_music::StoreError),
}

impl Hinted for BuildError {
    fn code(&self) -> &'static str {
        "error"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it (the server crates word their own hints).
    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(match self {
            BuildError::Dns(_) => "give the resolver with `--resolver ADDR[:PORT]`".to_owned(),
            BuildError::Files(error) => error.hint(),
            BuildError::Music(error) => error.hint(),
        }))
    }
}

impl Bundled {
    /// Every bundled server, in the order help texts list them.
    pub const ALL: &[Bundled] = &[
        Bundled::Morse,
        Bundled::Utils,
        Bundled::Dns,
        Bundled::Files,
        Bundled::Music,
        Bundled::Everything,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Bundled::Morse => "morse",
            Bundled::Utils => "utils",
            Bundled::Dns => "dns",
            Bundled::Files => "files",
            Bundled::Music => "music",
            Bundled::Everything => "everything",
        }
    }

    /// The server built with `options`, and its tool list.
    pub fn build(self, options: &ServerOptions) -> Result<Built, BuildError> {
        let (server, tools) = match self {
            Bundled::Morse => (
                AnyServer::new(nexo_morse::Morse::new()),
                nexo_morse::tools(),
            ),
            Bundled::Utils => (
                AnyServer::new(nexo_utils::Utils::new()),
                nexo_utils::tools(),
            ),
            Bundled::Dns => (
                AnyServer::new(nexo_dns::Dns::new(options.dns.clone())?),
                nexo_dns::tools(),
            ),
            Bundled::Files => (
                AnyServer::new(nexo_files::Files::new(options.files.clone())?),
                nexo_files::tools(&options.files),
            ),
            Bundled::Music => (
                AnyServer::new(nexo_music::Music::new(options.music.clone())?),
                nexo_music::tools(),
            ),
            Bundled::Everything => (
                AnyServer::new(nexo_everything::Everything::new()),
                nexo_everything::tools(),
            ),
        };
        Ok(Built { server, tools })
    }
}

/// A bundled server, ready to serve.
#[derive(Debug, Clone)]
pub struct Built {
    pub server: AnyServer,
    /// Its tool list.
    pub tools: Vec<Tool>,
}

impl fmt::Display for Bundled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a bundled server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownServer(pub String);

impl fmt::Display for UnknownServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Bundled::ALL.iter().map(|b| b.name()).collect();
        write!(
            f,
            "no bundled server is called `{}` (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownServer {}

impl Hinted for UnknownServer {
    fn code(&self) -> &'static str {
        "usage"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<Hint> {
        Some(Hint::new("run `nexo serve --help` to see the servers"))
    }
}

impl FromStr for Bundled {
    type Err = UnknownServer;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Bundled::ALL
            .iter()
            .copied()
            .find(|bundled| bundled.name() == name)
            .ok_or_else(|| UnknownServer(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for bundled in Bundled::ALL {
            assert_eq!(bundled.name().parse::<Bundled>(), Ok(*bundled));
        }
        assert!("nope".parse::<Bundled>().is_err());
    }

    /// Issue 15, point 7: an unknown server and a foreign option are bad
    /// usage, each with what to do.
    #[test]
    fn issue_15_bad_names_and_options_are_usage() {
        let unknown = UnknownServer("nope".into());
        let foreign = OptionsError::NoRoots;
        for (code, exit, hint) in [
            (unknown.code(), unknown.exit(), unknown.hint()),
            (foreign.code(), foreign.exit(), foreign.hint()),
        ] {
            assert_eq!((code, exit), ("usage", Exit::Usage));
            assert!(hint.is_some());
        }
    }
}
