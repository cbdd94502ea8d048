//! The bundled servers' options, decided here rather than by each caller:
//! which options belong to which server, what each must look like, and the
//! defaults. A caller fills in [`GivenOptions`] with what the user wrote,
//! from the command line or, with [`GivenOptions::from_json`], from a
//! configuration file's `{"builtin": ...}` entry, and
//! [`ServerOptions::for_server`] turns it into the chosen server's options
//! or says what is wrong. Options are named as the user spelt them: the
//! command line's flags (`--resolver`, a files ROOT), or a configuration
//! file's camelCase keys ([`JSON_OPTIONS`]: `resolver`, `dnsTimeout`,
//! `authPort`, `rootHints`, `roots`, `allowReports`, `allowExt`,
//! `allowHardLinks`, `db`). The DNS answers' timeout is `dnsTimeout` in a
//! file, since an entry's own `timeout` limits its calls.
//!
//! This module reads no environment variable: where a default comes from
//! the environment (the DNS call log, the music library's directory), the
//! caller passes it in.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nexo_hint::{Exit, Hint, Hinted};
use serde_json::Value;

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
    /// A configuration file's key that no bundled server takes.
    #[error("`{key}` is not an option of the `{server}` server")]
    UnknownOption { key: String, server: Bundled },
    /// A configuration file's key of another bundled server.
    #[error("`{key}` is an option of the `{owner}` server, not of `{server}`")]
    OtherServers {
        key: String,
        owner: Bundled,
        server: Bundled,
    },
    /// A configuration file's option of the wrong type or range.
    #[error("`{key}` must be {expected}")]
    BadOption {
        key: String,
        expected: &'static str,
        example: &'static str,
    },
}

impl Hinted for OptionsError {
    fn code(&self) -> &'static str {
        "usage"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        let text = match self {
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
            OptionsError::UnknownOption { server, .. } => {
                let keys = server.json_options();
                if keys.is_empty() {
                    format!("remove it: the `{server}` server takes no options")
                } else {
                    format!(
                        "the options of `{server}` are {}",
                        keys.iter()
                            .map(|key| format!("`{key}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            }
            OptionsError::OtherServers { key, owner, .. } => {
                format!("remove `{key}`, or give it to an entry `{{\"builtin\": \"{owner}\"}}`")
            }
            OptionsError::BadOption { example, .. } => format!("write it as `{example}`"),
        };
        Some(Hint::new(text))
    }
}

impl OptionsError {
    /// The configuration file's key at fault, when one is.
    pub fn option(&self) -> Option<&str> {
        match self {
            OptionsError::UnknownOption { key, .. }
            | OptionsError::OtherServers { key, .. }
            | OptionsError::BadOption { key, .. } => Some(key),
            OptionsError::BadResolver(_) => Some("resolver"),
            OptionsError::BadRootHint(_) => Some("rootHints"),
            OptionsError::Files(nexo_files::OptionsError::BadExtension(_)) => Some("allowExt"),
            OptionsError::Foreign { .. }
            | OptionsError::NoRoots
            | OptionsError::Files(_)
            | OptionsError::NoMusicDb => None,
        }
    }
}

/// A configuration file's keys for the bundled servers' options, and the
/// server each belongs to.
pub const JSON_OPTIONS: &[(&str, Bundled)] = &[
    ("resolver", Bundled::Dns),
    ("dnsTimeout", Bundled::Dns),
    ("authPort", Bundled::Dns),
    ("rootHints", Bundled::Dns),
    ("roots", Bundled::Files),
    ("allowReports", Bundled::Files),
    ("allowExt", Bundled::Files),
    ("allowHardLinks", Bundled::Files),
    ("db", Bundled::Music),
];

impl Bundled {
    /// The configuration file's keys of this server's options.
    pub fn json_options(self) -> Vec<&'static str> {
        JSON_OPTIONS
            .iter()
            .filter(|(_, owner)| *owner == self)
            .map(|(key, _)| *key)
            .collect()
    }
}

impl GivenOptions {
    /// The options of `server` from the other fields of a configuration
    /// file's `{"builtin": ...}` entry, keyed as [`JSON_OPTIONS`] says.
    /// Relative paths (`roots`, `db`) are taken from `base`, the file's
    /// project directory. A key of another server, an unknown key and a
    /// value of the wrong type are refused, naming the key.
    pub fn from_json(
        server: Bundled,
        options: &serde_json::Map<String, Value>,
        base: &Path,
    ) -> Result<Self, OptionsError> {
        let mut given = GivenOptions::default();
        for (key, value) in options {
            let owner = JSON_OPTIONS
                .iter()
                .find(|(known, _)| known == key)
                .map(|(_, owner)| *owner);
            match owner {
                None => {
                    return Err(OptionsError::UnknownOption {
                        key: key.clone(),
                        server,
                    });
                }
                Some(owner) if owner != server => {
                    return Err(OptionsError::OtherServers {
                        key: key.clone(),
                        owner,
                        server,
                    });
                }
                Some(_) => {}
            }
            let bad = |expected, example| OptionsError::BadOption {
                key: key.clone(),
                expected,
                example,
            };
            let text = || value.as_str().map(str::to_owned);
            let texts = || -> Option<Vec<String>> {
                value
                    .as_array()?
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            let flag = || value.as_bool();
            let path = |text: String| base.join(text);
            match key.as_str() {
                "resolver" => {
                    given.resolver = Some(
                        text().ok_or_else(|| bad("a string", "\"resolver\": \"192.0.2.1:53\""))?,
                    );
                }
                "dnsTimeout" => {
                    let seconds = value
                        .as_f64()
                        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
                        .filter(|duration| !duration.is_zero());
                    given.dns_timeout = Some(seconds.ok_or_else(|| {
                        bad("a number of seconds above zero", "\"dnsTimeout\": 3")
                    })?);
                }
                "authPort" => {
                    let port = value.as_u64().and_then(|port| u16::try_from(port).ok());
                    given.auth_port =
                        Some(port.ok_or_else(|| {
                            bad("a port number (0 to 65535)", "\"authPort\": 5353")
                        })?);
                }
                "rootHints" => {
                    given.root_hints = texts().ok_or_else(|| {
                        bad(
                            "an array of IP addresses",
                            "\"rootHints\": [\"192.0.2.53\"]",
                        )
                    })?;
                }
                "roots" => {
                    let roots = texts()
                        .ok_or_else(|| bad("an array of directories", "\"roots\": [\"./docs\"]"))?;
                    given.roots = roots.into_iter().map(path).collect();
                }
                "allowReports" => {
                    given.allow_reports =
                        flag().ok_or_else(|| bad("`true` or `false`", "\"allowReports\": true"))?;
                }
                "allowExt" => {
                    given.allow_ext = texts().ok_or_else(|| {
                        bad("an array of extensions", "\"allowExt\": [\"rs\", \"md\"]")
                    })?;
                }
                "allowHardLinks" => {
                    given.allow_hard_links = flag()
                        .ok_or_else(|| bad("`true` or `false`", "\"allowHardLinks\": true"))?;
                }
                "db" => {
                    let db =
                        text().ok_or_else(|| bad("a file name", "\"db\": \"music.sqlite3\""))?;
                    given.db = Some(path(db));
                }
                _ => {
                    return Err(OptionsError::UnknownOption {
                        key: key.clone(),
                        server,
                    });
                }
            }
        }
        Ok(given)
    }

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

    fn json(text: &str) -> serde_json::Map<String, Value> {
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_configuration_entry_gives_each_servers_options() -> Result<(), OptionsError> {
        let base = Path::new("/project");
        let dns = GivenOptions::from_json(
            Bundled::Dns,
            &json(
                r#"{"resolver": "192.0.2.1:5353", "dnsTimeout": 1.5, "authPort": 5300,
                    "rootHints": ["192.0.2.53"]}"#,
            ),
            base,
        )?;
        let options = for_server(Bundled::Dns, &dns)?;
        assert_eq!(options.dns.resolver.map(|a| a.port()), Some(5353));
        assert_eq!(options.dns.timeout, Duration::from_millis(1500));
        assert_eq!(options.dns.auth_port, 5300);
        assert_eq!(options.dns.roots.len(), 1);

        let files = GivenOptions::from_json(
            Bundled::Files,
            &json(
                r#"{"roots": ["docs", "/srv/shared"], "allowReports": true,
                    "allowExt": ["rs", "md"], "allowHardLinks": false}"#,
            ),
            base,
        )?;
        assert_eq!(
            files.roots,
            [PathBuf::from("/project/docs"), PathBuf::from("/srv/shared")]
        );
        assert!(files.allow_reports && !files.allow_hard_links);
        assert_eq!(files.allow_ext, ["rs", "md"]);
        assert!(for_server(Bundled::Files, &files).is_ok());

        let music = GivenOptions::from_json(Bundled::Music, &json(r#"{"db": "m.sqlite3"}"#), base)?;
        assert_eq!(music.db, Some(PathBuf::from("/project/m.sqlite3")));
        let morse = GivenOptions::from_json(Bundled::Morse, &json("{}"), base)?;
        assert!(for_server(Bundled::Morse, &morse).is_ok());
        Ok(())
    }

    #[test]
    fn a_configuration_entry_with_wrong_options_is_refused_by_key() {
        let base = Path::new("/project");
        let cases = [
            (
                Bundled::Dns,
                r#"{"resolvr": "x"}"#,
                "`resolvr` is not an option of the `dns` server",
                "`resolver`, `dnsTimeout`, `authPort`, `rootHints`",
            ),
            (
                Bundled::Morse,
                r#"{"db": "x"}"#,
                "`db` is an option of the `music` server, not of `morse`",
                "{\"builtin\": \"music\"}",
            ),
            (
                Bundled::Utils,
                r#"{"color": true}"#,
                "`color` is not an option of the `utils` server",
                "takes no options",
            ),
            (
                Bundled::Dns,
                r#"{"authPort": 70000}"#,
                "`authPort` must be a port number (0 to 65535)",
                "\"authPort\": 5353",
            ),
            (
                Bundled::Dns,
                r#"{"dnsTimeout": 0}"#,
                "`dnsTimeout` must be a number of seconds above zero",
                "\"dnsTimeout\": 3",
            ),
            (
                Bundled::Files,
                r#"{"roots": "./docs"}"#,
                "`roots` must be an array of directories",
                "[\"./docs\"]",
            ),
            (
                Bundled::Files,
                r#"{"allowReports": "yes"}"#,
                "`allowReports` must be `true` or `false`",
                "true",
            ),
        ];
        for (server, text, message, hint) in cases {
            match GivenOptions::from_json(server, &json(text), base) {
                Err(error) => {
                    assert_eq!(error.to_string(), message, "{text}");
                    let shown = error.hint().map(|hint| hint.terminal()).unwrap_or_default();
                    assert!(shown.contains(hint), "{text}: {shown}");
                    let key = text.split('"').nth(1);
                    assert_eq!(error.option(), key, "{text}");
                }
                Ok(given) => panic!("{text}: {given:?}"),
            }
        }
        assert_eq!(
            OptionsError::BadResolver("x".into()).option(),
            Some("resolver")
        );
    }
}
