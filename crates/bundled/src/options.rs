//! The bundled servers' options, decided here rather than by each caller:
//! which options belong to which server, what each must look like, and the
//! defaults. A caller (the command line today; a configuration file's
//! `{"builtin": ...}` entries next) fills in [`GivenOptions`] with what the
//! user wrote, and [`ServerOptions::for_server`] turns it into the chosen
//! server's options or says what is wrong. Options are named as the command
//! line spells them (`--resolver`, a files ROOT), which is how a person
//! reads them in an error.
//!
//! This module reads no environment variable: where a default comes from
//! the environment (the DNS call log, the music library's directory), the
//! caller passes it in.

use std::path::PathBuf;
use std::time::Duration;

use crate::{Bundled, ServerOptions};

/// What the user gave, for any server, before the server is checked.
#[derive(Debug, Clone, Default)]
pub struct GivenOptions {
    /// dns: `--resolver ADDR[:PORT]`.
    pub resolver: Option<String>,
    /// dns: `--timeout SECONDS`, for each DNS answer.
    pub dns_timeout: Option<Duration>,
    /// dns: `--auth-port PORT`.
    pub auth_port: Option<u16>,
    /// dns: `--root-hints ADDR,...`.
    pub root_hints: Vec<String>,
    /// files: the directories it may read.
    pub roots: Vec<PathBuf>,
    /// files: `--allow-reports`.
    pub allow_reports: bool,
    /// files: `--allow-ext EXT,...`.
    pub allow_ext: Vec<String>,
    /// files: `--allow-hard-links`.
    pub allow_hard_links: bool,
    /// music: `--db FILE`.
    pub db: Option<PathBuf>,
}

/// Defaults that come from the caller's environment.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    /// Where the DNS server logs each call; `None` logs nothing.
    pub dns_log: Option<PathBuf>,
    /// The music library without `--db`; `None` when there is no per-user
    /// data directory.
    pub music_db: Option<PathBuf>,
}

/// Options that cannot make the chosen server's options.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("`{given}` is an option of `nexo serve {owner}`, not of `{server}`")]
    Foreign {
        given: String,
        owner: Bundled,
        server: Bundled,
    },
    #[error("`{0}` is not a resolver address")]
    BadResolver(String),
    #[error("`{0}` is not a root server's IP address")]
    BadRootHint(String),
    #[error("`nexo serve files` needs the directories it may read")]
    NoRoots,
    #[error(transparent)]
    Files(#[from] nexo_files::OptionsError),
    #[error(
        "no data directory to keep the music library in (neither `XDG_DATA_HOME` nor `HOME` is set)"
    )]
    NoMusicDb,
}

impl OptionsError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            OptionsError::Foreign { given, owner, .. } => {
                format!("remove `{given}`, or run `nexo serve {owner}`")
            }
            OptionsError::BadResolver(_) => {
                "give an IP address with an optional port: `--resolver 192.0.2.1:53`".into()
            }
            OptionsError::BadRootHint(_) => {
                "give IP addresses, comma-separated: `--root-hints 192.0.2.53,192.0.2.54`".into()
            }
            OptionsError::NoRoots => "give one or more: `nexo serve files ./project ./docs`".into(),
            OptionsError::Files(error) => error.hint(),
            OptionsError::NoMusicDb => "give the library's file with `--db FILE`".into(),
        }
    }
}

impl GivenOptions {
    /// The first option given that belongs to `owner`, as a person wrote it.
    fn first_of(&self, owner: Bundled) -> Option<String> {
        match owner {
            Bundled::Dns => {
                let flags = [
                    (self.resolver.is_some(), "--resolver"),
                    (self.dns_timeout.is_some(), "--timeout"),
                    (self.auth_port.is_some(), "--auth-port"),
                    (!self.root_hints.is_empty(), "--root-hints"),
                ];
                flags
                    .into_iter()
                    .find_map(|(given, flag)| given.then(|| flag.to_owned()))
            }
            Bundled::Files => self
                .roots
                .first()
                .map(|root| root.display().to_string())
                .or_else(|| self.allow_reports.then(|| "--allow-reports".to_owned()))
                .or_else(|| (!self.allow_ext.is_empty()).then(|| "--allow-ext".to_owned()))
                .or_else(|| {
                    self.allow_hard_links
                        .then(|| "--allow-hard-links".to_owned())
                }),
            Bundled::Music => self.db.as_ref().map(|_| "--db".to_owned()),
            Bundled::Morse | Bundled::Utils | Bundled::Everything => None,
        }
    }
}

impl ServerOptions {
    /// The options of `server` from what the user gave; an option of
    /// another server is refused, not ignored.
    pub fn for_server(
        server: Bundled,
        given: &GivenOptions,
        defaults: Defaults,
    ) -> Result<Self, OptionsError> {
        for owner in Bundled::ALL
            .iter()
            .copied()
            .filter(|owner| *owner != server)
        {
            if let Some(given) = given.first_of(owner) {
                return Err(OptionsError::Foreign {
                    given,
                    owner,
                    server,
                });
            }
        }
        let mut options = ServerOptions::default();
        match server {
            Bundled::Dns => options.dns = dns(given, defaults.dns_log)?,
            Bundled::Files => options.files = files(given)?,
            Bundled::Music => {
                options.music.db = match &given.db {
                    Some(db) => db.clone(),
                    None => defaults.music_db.ok_or(OptionsError::NoMusicDb)?,
                }
            }
            Bundled::Morse | Bundled::Utils | Bundled::Everything => {}
        }
        Ok(options)
    }
}

fn dns(given: &GivenOptions, log: Option<PathBuf>) -> Result<nexo_dns::DnsOptions, OptionsError> {
    let mut options = nexo_dns::DnsOptions::default();
    if let Some(text) = &given.resolver {
        let address =
            nexo_dns::parse_address(text).ok_or_else(|| OptionsError::BadResolver(text.clone()))?;
        options.resolver = Some(address);
    }
    if let Some(timeout) = given.dns_timeout {
        options.timeout = timeout;
    }
    if let Some(port) = given.auth_port {
        options.auth_port = port;
    }
    if !given.root_hints.is_empty() {
        options.roots = given
            .root_hints
            .iter()
            .map(|text| {
                text.trim()
                    .parse()
                    .map_err(|_| OptionsError::BadRootHint(text.clone()))
            })
            .collect::<Result<_, _>>()?;
    }
    options.log = log;
    Ok(options)
}

fn files(given: &GivenOptions) -> Result<nexo_files::FilesOptions, OptionsError> {
    if given.roots.is_empty() {
        return Err(OptionsError::NoRoots);
    }
    let mut options = nexo_files::FilesOptions {
        roots: given.roots.clone(),
        allow_reports: given.allow_reports,
        allow_hard_links: given.allow_hard_links,
        ..Default::default()
    };
    if !given.allow_ext.is_empty() {
        options.extensions = nexo_files::AllowedExtensions::from_list(&given.allow_ext)?;
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn for_server(server: Bundled, given: &GivenOptions) -> Result<ServerOptions, OptionsError> {
        ServerOptions::for_server(server, given, Defaults::default())
    }

    #[test]
    fn options_of_another_server_are_refused() {
        let cases = [
            (
                GivenOptions {
                    resolver: Some("192.0.2.1".into()),
                    ..Default::default()
                },
                Bundled::Morse,
                "--resolver",
            ),
            (
                GivenOptions {
                    roots: vec![PathBuf::from("/srv")],
                    ..Default::default()
                },
                Bundled::Dns,
                "/srv",
            ),
            (
                GivenOptions {
                    db: Some(PathBuf::from("x.db")),
                    ..Default::default()
                },
                Bundled::Files,
                "--db",
            ),
        ];
        for (given, server, flag) in cases {
            match for_server(server, &given) {
                Err(OptionsError::Foreign {
                    given, server: s, ..
                }) => {
                    assert_eq!((given.as_str(), s), (flag, server))
                }
                other => panic!("{flag} given to {server}: {other:?}"),
            }
        }
    }

    #[test]
    fn each_server_reads_its_own() -> Result<(), OptionsError> {
        let dns = for_server(
            Bundled::Dns,
            &GivenOptions {
                resolver: Some("192.0.2.1:5353".into()),
                auth_port: Some(5300),
                root_hints: vec!["192.0.2.53".into(), " 2001:db8::53".into()],
                ..Default::default()
            },
        )?;
        assert_eq!(dns.dns.resolver.map(|a| a.port()), Some(5353));
        assert_eq!(dns.dns.auth_port, 5300);
        let roots: Vec<String> = dns.dns.roots.iter().map(ToString::to_string).collect();
        assert_eq!(roots, ["192.0.2.53", "2001:db8::53"]);
        assert!(matches!(
            for_server(
                Bundled::Dns,
                &GivenOptions {
                    root_hints: vec!["a.root-servers.net".into()],
                    ..Default::default()
                }
            ),
            Err(OptionsError::BadRootHint(_))
        ));
        assert!(matches!(
            for_server(
                Bundled::Dns,
                &GivenOptions {
                    resolver: Some("nope".into()),
                    ..Default::default()
                }
            ),
            Err(OptionsError::BadResolver(_))
        ));
        assert!(matches!(
            for_server(Bundled::Files, &GivenOptions::default()),
            Err(OptionsError::NoRoots)
        ));
        assert!(matches!(
            for_server(Bundled::Music, &GivenOptions::default()),
            Err(OptionsError::NoMusicDb)
        ));
        let music = ServerOptions::for_server(
            Bundled::Music,
            &GivenOptions::default(),
            Defaults {
                music_db: Some(PathBuf::from("/data/music.sqlite3")),
                ..Defaults::default()
            },
        )?;
        assert_eq!(music.music.db, PathBuf::from("/data/music.sqlite3"));
        Ok(())
    }
}
