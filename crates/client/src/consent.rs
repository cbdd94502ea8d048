//! The user's consent to start a project's servers. A `.mcp.json` found in
//! the working directory may be a cloned repository's, and starting its
//! servers runs its commands (CVE-2025-59536: a popular host started them
//! before asking). So each server of a [`Source::Project`] file starts only
//! once the user has consented to it, shown what it runs
//! ([`ConsentStore::describe`]); the servers of a file named with
//! `--config`, of the user's own `config.json` and of the default need no
//! consent, since the user chose or wrote those.
//!
//! Consent is kept per project file (its canonical path) and server name,
//! as the [`Fingerprint`](crate::config::Fingerprint) of the entry as
//! written: a changed command, argument, URL, header, variable name or
//! `envFile` contents asks again, while another value of the user's own
//! environment variables does not (the user's environment is not the
//! project's to change).
//!
//! Nothing here asks anything: the CLI prompts, and never takes `--yes` for
//! consent. The store is a JSON file at a path the caller gives, replaced
//! whole through a temporary file so that it is never half written; a
//! damaged file is an error naming it, never silently emptied.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use nexo_hint::{Exit, Hint, Hinted};
use serde::{Deserialize, Serialize};

use crate::config::{Config, ServerConfig, Source, Written};

/// The version of the consent file's format.
const VERSION: u32 = 1;

/// Consent given so far.
#[derive(Debug, Clone)]
pub struct ConsentStore {
    path: PathBuf,
    granted: Granted,
}

/// Project file → server name → fingerprint text (`sha256:...`).
type Granted = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    version: u32,
    granted: Granted,
}

/// The consent file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    #[error("cannot read the consent file `{}`: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error(
        "the consent file `{}` is damaged at line {line}, column {column}: {detail}",
        path.display()
    )]
    Damaged {
        path: PathBuf,
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("cannot write the consent file `{}`: {reason}", path.display())]
    Write { path: PathBuf, reason: String },
}

impl Hinted for ConsentError {
    fn code(&self) -> &'static str {
        "consent"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(match self {
            Self::Read { .. } | Self::Write { .. } => {
                "check the permissions of the file and of its directory"
            }
            Self::Damaged { .. } => {
                "the file holds your consent to projects' servers: repair \
                                     it, or remove it to be asked again about each"
            }
        }))
    }
}

/// What a person is asked to consent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentRequest {
    pub server: String,
    /// The project file the entry is in.
    pub file: Option<PathBuf>,
    /// Consent was given to an earlier form of the entry.
    pub changed: bool,
    /// The entry as written: command, arguments, working directory and the
    /// names of its environment variables, or its URL and the names of its
    /// headers, or the bundled server and its options.
    pub written: Written,
}

impl fmt::Display for ConsentRequest {
    /// Several lines: the server and its file, then what it runs or reaches.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server `{}`", self.server)?;
        if let Some(file) = &self.file {
            write!(f, " from `{}`", file.display())?;
        }
        if self.changed {
            f.write_str(" (changed since you allowed it)")?;
        }
        match &self.written {
            Written::Stdio {
                command,
                args,
                cwd,
                env_names,
                env_file,
            } => {
                let line = std::iter::once(command.clone())
                    .chain(args.iter().cloned())
                    .collect::<Vec<_>>();
                write!(f, "\n  runs: {}", shell_words::join(line))?;
                if let Some(cwd) = cwd {
                    write!(f, "\n  in: {cwd}")?;
                }
                if !env_names.is_empty() {
                    write!(f, "\n  environment: {}", env_names.join(", "))?;
                }
                if let Some(env_file) = env_file {
                    write!(f, "\n  environment file: {env_file}")?;
                }
            }
            Written::Remote {
                transport,
                url,
                header_names,
            } => {
                write!(f, "\n  connects to: {url} ({transport})")?;
                if !header_names.is_empty() {
                    write!(f, "\n  headers: {}", header_names.join(", "))?;
                }
            }
            Written::Builtin { server, options } => {
                write!(f, "\n  bundled server: {server} {options}")?;
            }
        }
        Ok(())
    }
}

impl ConsentStore {
    /// The store kept at `path`; no file there is a store with no consent.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, ConsentError> {
        let path = path.into();
        let granted = read(&path)?;
        Ok(Self { path, granted })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `server` may start: it is no project's, or the user
    /// consented to it as it is now written.
    pub fn is_granted(&self, server: &ServerConfig) -> bool {
        match &server.project_file {
            None => true,
            Some(file) => self.stored(file, &server.name) == Some(server.fingerprint.to_text()),
        }
    }

    /// The servers of `config` that cannot start without the user's
    /// consent: those of a project file, not disabled, not consented to as
    /// they are written now.
    pub fn needs_consent<'c>(&self, config: &'c Config) -> Vec<&'c ServerConfig> {
        if !matches!(config.source, Source::Project(_)) {
            return Vec::new();
        }
        config
            .servers
            .iter()
            .filter(|server| !server.disabled && !self.is_granted(server))
            .collect()
    }

    /// What to show the user before asking about `server`.
    pub fn describe(&self, server: &ServerConfig) -> ConsentRequest {
        let changed = server
            .project_file
            .as_ref()
            .and_then(|file| self.stored(file, &server.name))
            .is_some_and(|stored| stored != server.fingerprint.to_text());
        ConsentRequest {
            server: server.name.clone(),
            file: server.project_file.clone(),
            changed,
            written: server.written.clone(),
        }
    }

    /// Records the user's consent to `server` as it is written now, and
    /// saves it. A server of no project needs none: nothing is recorded.
    pub fn grant(&mut self, server: &ServerConfig) -> Result<(), ConsentError> {
        let Some(file) = &server.project_file else {
            return Ok(());
        };
        let (file, name, fingerprint) = (key(file), server.name.clone(), server.fingerprint);
        self.update(move |granted| {
            granted
                .entry(file)
                .or_default()
                .insert(name, fingerprint.to_text());
        })
    }

    /// Takes back the consent to `server`, and saves it.
    pub fn revoke(&mut self, server: &ServerConfig) -> Result<(), ConsentError> {
        let Some(file) = &server.project_file else {
            return Ok(());
        };
        let (file, name) = (key(file), server.name.clone());
        self.update(move |granted| {
            if let Some(servers) = granted.get_mut(&file) {
                servers.remove(&name);
                if servers.is_empty() {
                    granted.remove(&file);
                }
            }
        })
    }

    fn stored(&self, file: &Path, server: &str) -> Option<String> {
        self.granted.get(&key(file))?.get(server).cloned()
    }

    /// Applies `change` to the file as it is now (another nexo may have
    /// written it since it was opened) and saves the result.
    fn update(&mut self, change: impl FnOnce(&mut Granted)) -> Result<(), ConsentError> {
        let mut granted = read(&self.path)?;
        change(&mut granted);
        write(&self.path, &granted)?;
        self.granted = granted;
        Ok(())
    }
}

/// How a project file is named in the store.
fn key(file: &Path) -> String {
    file.to_string_lossy().into_owned()
}

fn read(path: &Path) -> Result<Granted, ConsentError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Granted::new());
        }
        Err(error) => {
            return Err(ConsentError::Read {
                path: path.to_path_buf(),
                reason: crate::config::io_reason(&error),
            });
        }
    };
    let damaged = |line, column, detail: String| ConsentError::Damaged {
        path: path.to_path_buf(),
        line,
        column,
        detail,
    };
    let stored: Stored = serde_json::from_str(&text).map_err(|error| {
        let detail = match error.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "it is not valid JSON".to_owned()
            }
            _ => "it is not what nexo writes there".to_owned(),
        };
        damaged(error.line(), error.column(), detail)
    })?;
    if stored.version != VERSION {
        return Err(damaged(
            1,
            1,
            format!(
                "it is of version {}, and this nexo reads version {VERSION}",
                stored.version
            ),
        ));
    }
    Ok(stored.granted)
}

/// Replaces the file at `path` whole ([`crate::replace`]).
fn write(path: &Path, granted: &Granted) -> Result<(), ConsentError> {
    let failed = |error: &std::io::Error| ConsentError::Write {
        path: path.to_path_buf(),
        reason: crate::config::io_reason(error),
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|error| failed(&error))?;
    let stored = Stored {
        version: VERSION,
        granted: granted.clone(),
    };
    let mut text = serde_json::to_string_pretty(&stored).map_err(|error| ConsentError::Write {
        path: path.to_path_buf(),
        reason: error.to_string(),
    })?;
    text.push('\n');
    crate::replace::replace(path, text.as_bytes()).map_err(|error| failed(&error))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{LoadRequest, parse};

    const PROJECT: &str = r#"{"mcpServers": {
        "tool": {"command": "npx", "args": ["-y", "tool-server"], "env": {"KEY": "${KEY}"}},
        "api": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
        "off": {"command": "x", "disabled": true}
    }}"#;

    fn config(
        dir: &Path,
        source: fn(PathBuf) -> Source,
        text: &str,
        key: &str,
    ) -> Result<Config, Box<dyn std::error::Error>> {
        let file = dir.join(".mcp.json");
        std::fs::write(&file, text)?;
        let env = |name: &str| (name == "KEY").then(|| key.to_owned());
        Ok(parse(
            text,
            source(file),
            &LoadRequest {
                explicit: None,
                cwd: dir.to_path_buf(),
                user_config_dir: None,
                home: None,
                env: &env,
                check_builtin: None,
            },
        )?)
    }

    fn names<'c>(servers: &[&'c ServerConfig]) -> Vec<&'c str> {
        servers.iter().map(|server| server.name.as_str()).collect()
    }

    #[test]
    fn only_a_projects_servers_need_consent() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = ConsentStore::open(dir.path().join("consent.json"))?;
        let project = config(dir.path(), Source::Project, PROJECT, "k1")?;
        assert_eq!(names(&store.needs_consent(&project)), ["tool", "api"]);
        for source in [Source::Explicit as fn(PathBuf) -> Source, Source::User] {
            let config = config(dir.path(), source, PROJECT, "k1")?;
            assert!(store.needs_consent(&config).is_empty());
            assert!(config.servers.iter().all(|server| store.is_granted(server)));
        }
        let default = Config::default_for(dir.path());
        assert!(store.needs_consent(&default).is_empty());
        Ok(())
    }

    #[test]
    fn consent_holds_until_the_entry_changes() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("state/consent.json");
        let mut store = ConsentStore::open(&path)?;
        let project = config(dir.path(), Source::Project, PROJECT, "k1")?;
        store.grant(&project.servers[0])?;
        assert_eq!(names(&store.needs_consent(&project)), ["api"]);

        // Kept on disk, and the key's value is the user's business.
        let store = ConsentStore::open(&path)?;
        let other_key = config(dir.path(), Source::Project, PROJECT, "k2")?;
        assert_eq!(names(&store.needs_consent(&other_key)), ["api"]);

        // Another argument is another entry: asked again, as changed.
        let changed = PROJECT.replace("tool-server", "tool-server@evil");
        let changed = config(dir.path(), Source::Project, &changed, "k1")?;
        assert_eq!(names(&store.needs_consent(&changed)), ["tool", "api"]);
        let request = store.describe(&changed.servers[0]);
        assert!(request.changed);
        assert!(!store.describe(&changed.servers[1]).changed);

        let mut store = store;
        store.revoke(&project.servers[0])?;
        assert_eq!(
            names(&ConsentStore::open(&path)?.needs_consent(&project)),
            ["tool", "api"]
        );
        // Nothing but the file itself in its directory.
        let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap_or(dir.path()))?
            .filter_map(Result::ok)
            .map(|entry| entry.file_name())
            .collect();
        assert_eq!(entries, ["consent.json"]);
        Ok(())
    }

    #[test]
    fn two_stores_do_not_lose_each_others_consent() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("consent.json");
        let project = config(dir.path(), Source::Project, PROJECT, "k1")?;
        let mut one = ConsentStore::open(&path)?;
        let mut two = ConsentStore::open(&path)?;
        one.grant(&project.servers[0])?;
        two.grant(&project.servers[1])?;
        assert!(
            ConsentStore::open(&path)?
                .needs_consent(&project)
                .is_empty()
        );
        let text = std::fs::read_to_string(&path)?;
        let fingerprint = project.servers[0].fingerprint;
        assert!(text.contains(&fingerprint.to_text()));
        Ok(())
    }

    #[test]
    fn a_damaged_file_is_named_and_left_alone() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("consent.json");
        for text in [
            "{\"version\": 1, \"granted\": {\n  \"x\": [",
            "{\"version\": 1, \"granted\": {\"x\": {\"s\": 3}}}",
            "{\"version\": 9, \"granted\": {}}",
        ] {
            std::fs::write(&path, text)?;
            match ConsentStore::open(&path) {
                Err(error @ ConsentError::Damaged { .. }) => {
                    assert!(error.to_string().contains("consent.json"), "{error}");
                    assert!(error.hint().is_some());
                }
                other => panic!("{text}: {other:?}"),
            }
            assert_eq!(std::fs::read_to_string(&path)?, text);
        }
        Ok(())
    }

    #[test]
    fn the_request_shows_what_runs_and_no_values() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = ConsentStore::open(dir.path().join("consent.json"))?;
        let project = config(dir.path(), Source::Project, PROJECT, "secret-value-77")?;
        let tool = store.describe(&project.servers[0]).to_string();
        let file = std::fs::canonicalize(dir.path().join(".mcp.json"))?;
        assert_eq!(
            tool,
            format!(
                "server `tool` from `{}`\n  runs: npx -y tool-server\n  environment: KEY",
                file.display()
            )
        );
        let api = store.describe(&project.servers[1]).to_string();
        assert!(api.ends_with(
            "\n  connects to: https://api.example/mcp (auto)\n  headers: Authorization"
        ));
        assert!(!format!("{tool}{api}{project:?}").contains("secret-value-77"));
        Ok(())
    }
}
