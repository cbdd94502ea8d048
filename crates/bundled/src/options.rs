//! The bundled servers' options, described once and decided here rather
//! than by each caller. Each server's [`ServerOption`]s
//! ([`Bundled::options`]) say, for every option, its flag on `nexo serve`,
//! its key in a configuration file's `{"builtin": ...}` entry, the
//! [`Kind`] of value it takes, its help text and its default: the CLI makes
//! its flags from them (and writes them back for `nexo check`'s child), and
//! [`GivenOptions::from_json`] reads a configuration entry by them. A
//! caller fills in [`GivenOptions`] with what the user wrote, and
//! [`ServerOptions::for_server`] turns it into the chosen server's options
//! or says what is wrong. The DNS answers' timeout is `--timeout` on the
//! command line but `dnsTimeout` in a file, since an entry's own `timeout`
//! limits its calls.
//!
//! This module reads no environment variable: where a default comes from
//! the environment (the DNS call log, the music library's directory), the
//! caller passes it in.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nexo_hint::{Exit, Hint, Hinted};

use crate::{Bundled, ServerOptions};

/// One option of a bundled server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOption {
    /// Its flag on `nexo serve`, without the dashes (`resolver` for
    /// `--resolver`); `None` for the arguments after the server's name.
    pub flag: Option<&'static str>,
    /// Its key in a configuration file's `{"builtin": ...}` entry, unique
    /// among all the servers' options.
    pub key: &'static str,
    /// The value it takes.
    pub kind: Kind,
    /// What help calls the value (`ADDR[:PORT]`); `None` for a switch.
    pub value_name: Option<&'static str>,
    /// The flag's help, `{default}` standing for [`ServerOption::default`].
    pub help: &'static str,
    /// What the option is when not given, as help says it; `None` when
    /// nothing (off, empty, or required).
    pub default: Option<&'static str>,
    /// A value as a configuration file writes it, for hints.
    pub example: &'static str,
}

/// What value an option takes, on the command line and in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A text; a string in a file.
    Text,
    /// A file; a string in a file, relative to its project directory.
    File,
    /// A number of seconds above zero, fractions allowed.
    Seconds,
    /// A port number, 0 to 65535.
    Port,
    /// Texts, comma-separated after one flag; an array of strings in a
    /// file. `items` names them in errors (`IP addresses`).
    List { items: &'static str },
    /// Directories, one argument each; an array of strings in a file,
    /// relative to its project directory.
    Directories,
    /// On when given, without a value; `true` or `false` in a file.
    Switch,
}

/// The value of one option, as given.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// [`Kind::Text`].
    Text(String),
    /// [`Kind::File`].
    File(PathBuf),
    /// [`Kind::Seconds`].
    Seconds(Duration),
    /// [`Kind::Port`].
    Port(u16),
    /// [`Kind::List`].
    List(Vec<String>),
    /// [`Kind::Directories`].
    Directories(Vec<PathBuf>),
    /// [`Kind::Switch`], given.
    On,
}

/// The options of `nexo serve dns`.
const DNS: &[ServerOption] = &[
    ServerOption {
        flag: Some("resolver"),
        key: "resolver",
        kind: Kind::Text,
        value_name: Some("ADDR[:PORT]"),
        help: "The recursive resolver, ADDR or ADDR:PORT ([IPv6]:PORT). Default: {default}",
        default: Some("the system's first name server"),
        example: "\"192.0.2.1:53\"",
    },
    ServerOption {
        flag: Some("timeout"),
        key: "dnsTimeout",
        kind: Kind::Seconds,
        value_name: Some("SECONDS"),
        help: "Seconds to wait for each DNS answer [default: {default}]",
        default: Some("3"),
        example: "3",
    },
    ServerOption {
        flag: Some("auth-port"),
        key: "authPort",
        kind: Kind::Port,
        value_name: Some("PORT"),
        help: "The port authoritative servers are asked on [default: {default}]; for test beds \
               on loopback",
        default: Some("53"),
        example: "5353",
    },
    ServerOption {
        flag: Some("root-hints"),
        key: "rootHints",
        kind: Kind::List {
            items: "IP addresses",
        },
        value_name: Some("ADDR,..."),
        help: "The root servers to walk down from when the resolver answers nothing at all \
               (comma-separated IP addresses) [default: {default}]; for labs with a root of \
               their own",
        default: Some("IANA's root servers"),
        example: "[\"192.0.2.53\"]",
    },
];

/// The arguments and options of `nexo serve files`.
const FILES: &[ServerOption] = &[
    ServerOption {
        flag: None,
        key: "roots",
        kind: Kind::Directories,
        value_name: Some("ROOT"),
        help: "`nexo serve files` only: the directories the server may read (one or more); \
               nothing outside them can be reached",
        default: None,
        example: "[\"./docs\"]",
    },
    ServerOption {
        flag: Some("allow-reports"),
        key: "allowReports",
        kind: Kind::Switch,
        value_name: None,
        help: "Offer `write_report`, which creates SENTINEL_REPORT_YYYYMMDD[_NN].md in the first \
               ROOT and never overwrites",
        default: None,
        example: "true",
    },
    ServerOption {
        flag: Some("allow-ext"),
        key: "allowExt",
        kind: Kind::List {
            items: "extensions",
        },
        value_name: Some("EXT,..."),
        help: "The file extensions that may be read, comma-separated (`rs,md,toml`; `*` for any), \
               replacing the default list of source, configuration and documentation formats",
        default: None,
        example: "[\"rs\", \"md\"]",
    },
    ServerOption {
        flag: Some("allow-hard-links"),
        key: "allowHardLinks",
        kind: Kind::Switch,
        value_name: None,
        help: "Serve regular files that have more than one hard link. Refused by default: a hard \
               link inside a root may lead to a file outside it, which confinement by directory \
               cannot see",
        default: None,
        example: "true",
    },
];

/// The options of `nexo serve music`.
const MUSIC: &[ServerOption] = &[ServerOption {
    flag: Some("db"),
    key: "db",
    kind: Kind::File,
    value_name: Some("FILE"),
    help: "The SQLite file of the music library, created if missing [default: {default}]",
    default: Some("$XDG_DATA_HOME/nexo/music.sqlite3, else ~/.local/share/nexo/music.sqlite3"),
    example: "\"music.sqlite3\"",
}];

impl Bundled {
    /// This server's options, in the order help lists them.
    pub fn options(self) -> &'static [ServerOption] {
        match self {
            Bundled::Dns => DNS,
            Bundled::Files => FILES,
            Bundled::Music => MUSIC,
            Bundled::Morse | Bundled::Utils | Bundled::Everything => &[],
        }
    }
}

/// The server whose option has configuration key `key`.
fn owner(key: &str) -> Option<(Bundled, &'static ServerOption)> {
    Bundled::ALL.iter().find_map(|server| {
        server
            .options()
            .iter()
            .find(|option| option.key == key)
            .map(|option| (*server, option))
    })
}

impl ServerOption {
    /// The flag's help, its default written in.
    pub fn help(&self) -> String {
        self.help.replace("{default}", self.default.unwrap_or(""))
    }

    /// What a configuration file's value must be, for errors.
    fn expected(&self) -> String {
        match self.kind {
            Kind::Text => "a string".to_owned(),
            Kind::File => "a file name".to_owned(),
            Kind::Seconds => "a number of seconds above zero".to_owned(),
            Kind::Port => "a port number (0 to 65535)".to_owned(),
            Kind::List { items } => format!("an array of {items}"),
            Kind::Directories => "an array of directories".to_owned(),
            Kind::Switch => "`true` or `false`".to_owned(),
        }
    }

    /// The value of a configuration file's `value` for this option
    /// (relative paths taken from `base`); `None` for a switch set to
    /// `false`, which is as good as not given.
    fn read_json(
        &self,
        value: &serde_json::Value,
        base: &Path,
    ) -> Result<Option<Value>, OptionsError> {
        let texts = || -> Option<Vec<String>> {
            value
                .as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let read = match self.kind {
            Kind::Text => value
                .as_str()
                .map(|text| Some(Value::Text(text.to_owned()))),
            Kind::File => value
                .as_str()
                .map(|text| Some(Value::File(base.join(text)))),
            Kind::Seconds => value
                .as_f64()
                .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
                .filter(|duration| !duration.is_zero())
                .map(|duration| Some(Value::Seconds(duration))),
            Kind::Port => value
                .as_u64()
                .and_then(|port| u16::try_from(port).ok())
                .map(|port| Some(Value::Port(port))),
            Kind::List { .. } => texts().map(|texts| Some(Value::List(texts))),
            Kind::Directories => texts().map(|texts| {
                Some(Value::Directories(
                    texts.into_iter().map(|text| base.join(text)).collect(),
                ))
            }),
            Kind::Switch => value.as_bool().map(|on| on.then_some(Value::On)),
        };
        read.ok_or_else(|| OptionsError::BadOption {
            key: self.key.to_owned(),
            expected: self.expected(),
            example: format!("\"{}\": {}", self.key, self.example),
        })
    }

    /// This option as a person wrote it on the command line: its flag, or
    /// the first of its arguments.
    fn as_written(&self, value: &Value) -> String {
        match (self.flag, value) {
            (Some(flag), _) => format!("--{flag}"),
            (None, Value::Directories(paths)) => paths
                .first()
                .map(|path| path.display().to_string())
                .unwrap_or_default(),
            (None, _) => self.key.to_owned(),
        }
    }
}

/// What the user gave, for any server, before the server is checked.
#[derive(Debug, Clone, Default)]
pub struct GivenOptions {
    given: Vec<(&'static ServerOption, Value)>,
}

impl GivenOptions {
    /// The options a bundled server runs with when nothing is said: for
    /// `files`, `dir` as its one root.
    pub fn defaults_in(server: Bundled, dir: &Path) -> Self {
        let mut given = GivenOptions::default();
        if let Some(roots) = server
            .options()
            .iter()
            .find(|o| o.kind == Kind::Directories)
        {
            given.give(roots, Value::Directories(vec![dir.to_path_buf()]));
        }
        given
    }

    /// Adds `value` for `option` (one of some server's
    /// [`Bundled::options`], the value of its kind), in place of any
    /// given before.
    pub fn give(&mut self, option: &'static ServerOption, value: Value) {
        self.given.retain(|(given, _)| given.key != option.key);
        self.given.push((option, value));
    }

    /// The value given for the option with configuration key `key`.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.given
            .iter()
            .find(|(option, _)| option.key == key)
            .map(|(_, value)| value)
    }

    fn text(&self, key: &str) -> Option<&str> {
        match self.value(key) {
            Some(Value::Text(text)) => Some(text),
            _ => None,
        }
    }

    fn file(&self, key: &str) -> Option<&Path> {
        match self.value(key) {
            Some(Value::File(path)) => Some(path),
            _ => None,
        }
    }

    fn seconds(&self, key: &str) -> Option<Duration> {
        match self.value(key) {
            Some(Value::Seconds(duration)) => Some(*duration),
            _ => None,
        }
    }

    fn port(&self, key: &str) -> Option<u16> {
        match self.value(key) {
            Some(Value::Port(port)) => Some(*port),
            _ => None,
        }
    }

    fn list(&self, key: &str) -> &[String] {
        match self.value(key) {
            Some(Value::List(texts)) => texts,
            _ => &[],
        }
    }

    fn directories(&self, key: &str) -> &[PathBuf] {
        match self.value(key) {
            Some(Value::Directories(paths)) => paths,
            _ => &[],
        }
    }

    fn on(&self, key: &str) -> bool {
        matches!(self.value(key), Some(Value::On))
    }

    /// The options of `server` from the other fields of a configuration
    /// file's `{"builtin": ...}` entry, keyed as [`Bundled::options`] says.
    /// Relative paths are taken from `base`, the file's project directory.
    /// A key of another server, an unknown key and a value of the wrong
    /// type are refused, naming the key.
    pub fn from_json(
        server: Bundled,
        options: &serde_json::Map<String, serde_json::Value>,
        base: &Path,
    ) -> Result<Self, OptionsError> {
        let mut given = GivenOptions::default();
        for (key, value) in options {
            let option = match owner(key) {
                None => {
                    return Err(OptionsError::UnknownOption {
                        key: key.clone(),
                        server,
                    });
                }
                Some((owner, _)) if owner != server => {
                    return Err(OptionsError::OtherServers {
                        key: key.clone(),
                        owner,
                        server,
                    });
                }
                Some((_, option)) => option,
            };
            if let Some(value) = option.read_json(value, base)? {
                given.give(option, value);
            }
        }
        Ok(given)
    }
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
        expected: String,
        example: String,
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
                let keys = server.options();
                if keys.is_empty() {
                    format!("remove it: the `{server}` server takes no options")
                } else {
                    format!(
                        "the options of `{server}` are {}",
                        keys.iter()
                            .map(|option| format!("`{}`", option.key))
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

impl ServerOptions {
    /// The options of `server` from what the user gave; an option of
    /// another server is refused, not ignored.
    pub fn for_server(
        server: Bundled,
        given: &GivenOptions,
        defaults: Defaults,
    ) -> Result<Self, OptionsError> {
        let foreign = given.given.iter().find_map(|(option, value)| {
            owner(option.key)
                .filter(|(owner, _)| *owner != server)
                .map(|(owner, _)| (owner, option.as_written(value)))
        });
        if let Some((owner, given)) = foreign {
            return Err(OptionsError::Foreign {
                given,
                owner,
                server,
            });
        }
        let mut options = ServerOptions::default();
        match server {
            Bundled::Dns => options.dns = dns(given, defaults.dns_log)?,
            Bundled::Files => options.files = files(given)?,
            Bundled::Music => {
                options.music.db = match given.file("db") {
                    Some(db) => db.to_path_buf(),
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
    if let Some(text) = given.text("resolver") {
        let address = nexo_dns::parse_address(text)
            .ok_or_else(|| OptionsError::BadResolver(text.to_owned()))?;
        options.resolver = Some(address);
    }
    if let Some(timeout) = given.seconds("dnsTimeout") {
        options.timeout = timeout;
    }
    if let Some(port) = given.port("authPort") {
        options.auth_port = port;
    }
    let root_hints = given.list("rootHints");
    if !root_hints.is_empty() {
        options.roots = root_hints
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
    let roots = given.directories("roots");
    if roots.is_empty() {
        return Err(OptionsError::NoRoots);
    }
    let mut options = nexo_files::FilesOptions {
        roots: roots.to_vec(),
        allow_reports: given.on("allowReports"),
        allow_hard_links: given.on("allowHardLinks"),
        ..Default::default()
    };
    let extensions = given.list("allowExt");
    if !extensions.is_empty() {
        options.extensions = nexo_files::AllowedExtensions::from_list(extensions)?;
    }
    Ok(options)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn for_server(server: Bundled, given: &GivenOptions) -> Result<ServerOptions, OptionsError> {
        ServerOptions::for_server(server, given, Defaults::default())
    }

    /// `values` given by their configuration keys.
    fn given(values: Vec<(&str, Value)>) -> GivenOptions {
        let mut given = GivenOptions::default();
        for (key, value) in values {
            given.give(owner(key).unwrap().1, value);
        }
        given
    }

    #[test]
    fn every_option_is_described_once_and_whole() {
        let mut keys = Vec::new();
        let mut flags = Vec::new();
        for server in Bundled::ALL {
            for option in server.options() {
                keys.push(option.key);
                flags.extend(option.flag);
                assert_eq!(
                    option.help.contains("{default}"),
                    option.default.is_some(),
                    "{}",
                    option.key
                );
                assert_eq!(
                    option.value_name.is_none(),
                    option.kind == Kind::Switch,
                    "{}",
                    option.key
                );
                assert_eq!(
                    option.flag.is_none(),
                    option.kind == Kind::Directories,
                    "{}",
                    option.key
                );
                let example = serde_json::from_str(option.example).unwrap();
                assert!(option.read_json(&example, Path::new("/")).is_ok());
            }
        }
        for list in [&mut keys, &mut flags] {
            let all = list.len();
            list.sort_unstable();
            list.dedup();
            assert_eq!(list.len(), all, "{list:?}");
        }
    }

    /// The defaults help states are the server crate's own.
    #[test]
    fn the_defaults_help_states_are_the_servers() {
        let dns = nexo_dns::DnsOptions::default();
        let default = |key| owner(key).and_then(|(_, option)| option.default);
        assert_eq!(
            default("dnsTimeout"),
            Some(dns.timeout.as_secs().to_string().as_str())
        );
        assert_eq!(
            default("authPort"),
            Some(dns.auth_port.to_string().as_str())
        );
    }

    #[test]
    fn options_of_another_server_are_refused() {
        let cases = [
            (
                given(vec![("resolver", Value::Text("192.0.2.1".into()))]),
                Bundled::Morse,
                "--resolver",
            ),
            (
                given(vec![(
                    "roots",
                    Value::Directories(vec![PathBuf::from("/srv")]),
                )]),
                Bundled::Dns,
                "/srv",
            ),
            (
                given(vec![("db", Value::File(PathBuf::from("x.db")))]),
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
            &given(vec![
                ("resolver", Value::Text("192.0.2.1:5353".into())),
                ("authPort", Value::Port(5300)),
                (
                    "rootHints",
                    Value::List(vec!["192.0.2.53".into(), " 2001:db8::53".into()]),
                ),
            ]),
        )?;
        assert_eq!(dns.dns.resolver.map(|a| a.port()), Some(5353));
        assert_eq!(dns.dns.auth_port, 5300);
        let roots: Vec<String> = dns.dns.roots.iter().map(ToString::to_string).collect();
        assert_eq!(roots, ["192.0.2.53", "2001:db8::53"]);
        assert!(matches!(
            for_server(
                Bundled::Dns,
                &given(vec![(
                    "rootHints",
                    Value::List(vec!["a.root-servers.net".into()])
                )])
            ),
            Err(OptionsError::BadRootHint(_))
        ));
        assert!(matches!(
            for_server(
                Bundled::Dns,
                &given(vec![("resolver", Value::Text("nope".into()))])
            ),
            Err(OptionsError::BadResolver(_))
        ));
        assert!(matches!(
            for_server(Bundled::Files, &GivenOptions::default()),
            Err(OptionsError::NoRoots)
        ));
        let here = for_server(
            Bundled::Files,
            &GivenOptions::defaults_in(Bundled::Files, Path::new(".")),
        )?;
        assert_eq!(here.files.roots, [PathBuf::from(".")]);
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

    fn json(text: &str) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::from_str(text) {
            Ok(serde_json::Value::Object(map)) => map,
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
            files.directories("roots"),
            [PathBuf::from("/project/docs"), PathBuf::from("/srv/shared")]
        );
        assert!(files.on("allowReports") && !files.on("allowHardLinks"));
        assert_eq!(files.list("allowExt"), ["rs", "md"]);
        assert!(for_server(Bundled::Files, &files).is_ok());

        let music = GivenOptions::from_json(Bundled::Music, &json(r#"{"db": "m.sqlite3"}"#), base)?;
        assert_eq!(music.file("db"), Some(Path::new("/project/m.sqlite3")));
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
