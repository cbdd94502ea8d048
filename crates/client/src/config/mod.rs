//! Configuration files: which servers a host, the web page and the gateway
//! reach, read from the files people already have. Claude Desktop's
//! `claude_desktop_config.json` and Claude Code's `.mcp.json` (an
//! `mcpServers` object) and VS Code's `.vscode/mcp.json` (a `servers`
//! object, JSONC) are read as they are, plus nexo's own fields: `{"builtin":
//! "dns", ...options}` entries run in-process, per-server and per-tool
//! timeouts, `disabled`, the top-level `trace` and `traceRedact`, the
//! chat's settings (`chat`) and the gateway's (`gateway`, kept as JSON for
//! nexo-gateway to read).
//!
//! This module owns the search order ([`load`]: `--config`, `./.mcp.json`,
//! the user's `config.json`, else the embedded [`Config::default_for`]),
//! variable expansion (`${VAR}`, `${VAR:-default}`, `${env:VAR}`,
//! `${workspaceFolder}`, `${userHome}`), `envFile`s, and errors that name
//! the file, line and column and say what to write instead
//! ([`ConfigError`]). What real files use and nexo cannot honour (VS Code's
//! `${input:...}`, `unix:///` URLs, Claude Code's `headersHelper` and
//! `oauth`) is refused by name, never dropped; fields of other hosts that
//! change nothing nexo does (`alwaysAllow`, `gallery`, ...) are set aside
//! and listed in [`Config::ignored`].
//!
//! It reads no environment variable and knows no particular server: the
//! caller passes the environment as a lookup function ([`LoadRequest::env`])
//! and checks `builtin` entries against the bundled servers
//! ([`LoadRequest::check_builtin`]). Whether a project's servers may start
//! is [`crate::consent`]'s business; each entry carries the
//! [`Fingerprint`] it is judged by.

mod envfile;
mod error;
mod expand;
pub(crate) mod parse;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::Digest;

pub use self::error::ConfigError;
pub(crate) use self::error::io_reason;
use crate::secret::{EnvVar, Header, REDACTED, Secret, TargetUrl};
use crate::target::{HttpTransport, Target};

/// The project file looked for in the working directory.
pub const PROJECT_FILE: &str = ".mcp.json";
/// The user's file, in the directory [`LoadRequest::user_config_dir`] names
/// (`~/.config/nexo` on Linux).
pub const USER_FILE: &str = "config.json";

/// The bundled servers that run when no file is found, in this order.
pub const DEFAULT_BUILTINS: &[&str] = &["dns", "morse", "utils", "files", "music"];

/// Finds the configuration and reads it: the file given with `--config`,
/// else `.mcp.json` in the working directory, else the user's
/// `config.json`; the first found is the configuration (files are not
/// merged). With none, the embedded default ([`Config::default_for`]).
pub fn load(request: &LoadRequest<'_>) -> Result<Config, ConfigError> {
    let source = match &request.explicit {
        Some(path) => Source::Explicit(path.clone()),
        None => {
            let project = request.cwd.join(PROJECT_FILE);
            let user = request
                .user_config_dir
                .as_ref()
                .map(|dir| dir.join(USER_FILE));
            if exists(&project)? {
                Source::Project(project)
            } else if let Some(user) = user.filter(|user| exists(user).unwrap_or(true)) {
                Source::User(user)
            } else {
                return Ok(Config::default_for(&request.cwd));
            }
        }
    };
    let Some(path) = source.path() else {
        return Ok(Config::default_for(&request.cwd));
    };
    let text = std::fs::read_to_string(request.cwd.join(path)).map_err(|error| {
        let hint = match (&source, error.kind()) {
            (Source::Explicit(_), std::io::ErrorKind::NotFound) => {
                "check the path given with `--config`"
            }
            _ => "make the file readable, or move it away to use another configuration",
        };
        ConfigError::read(path, &error).with_hint(hint)
    })?;
    parse(&text, source, request)
}

/// Reads `text` as the file `source` names (relative paths in it, and the
/// file itself, taken from [`LoadRequest::cwd`]). [`Source::Default`] gives
/// the embedded default, whatever `text` holds.
pub fn parse(text: &str, source: Source, request: &LoadRequest<'_>) -> Result<Config, ConfigError> {
    let Some(path) = source.path() else {
        return Ok(Config::default_for(&request.cwd));
    };
    let place = parse::Place::new(&source, path, request);
    parse::parse(text, source, place, request)
}

/// Whether a file (or anything) is at `path`; an error other than its
/// absence is the caller's to see.
fn exists(path: &Path) -> Result<bool, ConfigError> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(ConfigError::read(path, &error)),
    }
}

impl Config {
    /// The embedded default: the bundled dns, morse, utils, files (reading
    /// `cwd`) and music servers, in-process.
    pub fn default_for(cwd: &Path) -> Config {
        let servers = DEFAULT_BUILTINS
            .iter()
            .map(|&name| {
                let mut options = serde_json::Map::new();
                if name == "files" {
                    options.insert(
                        "roots".to_owned(),
                        serde_json::json!([cwd.display().to_string()]),
                    );
                }
                let written = serde_json::Value::Object(options.clone()).to_string();
                let entry = format!("{{\"builtin\":\"{name}\",\"options\":{written}}}");
                ServerConfig {
                    name: name.to_owned(),
                    spec: ServerSpec::Builtin {
                        server: name.to_owned(),
                        options,
                        base_dir: cwd.to_path_buf(),
                    },
                    timeouts: Timeouts::default(),
                    disabled: false,
                    description: None,
                    location: None,
                    fingerprint: Fingerprint(sha2::Sha256::digest(entry.as_bytes()).into()),
                    project_file: None,
                    written: Written::Builtin {
                        server: name.to_owned(),
                        options: written,
                    },
                    from_env: Vec::new(),
                }
            })
            .collect();
        Config {
            source: Source::Default,
            servers,
            trace: None,
            trace_redact: false,
            chat: ChatSettings::default(),
            gateway: None,
            ignored: Vec::new(),
        }
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|server| server.name == name)
    }
}

/// Where a configuration came from, which decides whether its servers need
/// the user's consent ([`Source::is_project`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The file given with `--config`.
    Explicit(PathBuf),
    /// `./.mcp.json`, found in the working directory: possibly a cloned
    /// repository's, so untrusted.
    Project(PathBuf),
    /// The user's own `config.json`.
    User(PathBuf),
    /// No file at all: the embedded default.
    Default,
}

impl Source {
    /// The file read, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::Explicit(path) | Source::Project(path) | Source::User(path) => Some(path),
            Source::Default => None,
        }
    }

    /// Whether the file was found rather than named or owned by the user:
    /// its servers start only with the user's consent.
    pub fn is_project(&self) -> bool {
        matches!(self, Source::Project(_))
    }
}

/// A configuration: the servers to reach and nexo's own settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub source: Source,
    /// In the file's order.
    pub servers: Vec<ServerConfig>,
    /// Top-level `"trace": "FILE"`: where to record every message.
    pub trace: Option<PathBuf>,
    /// Top-level `"traceRedact": true`: the messages themselves left out of
    /// the trace (credential headers never are written).
    pub trace_redact: bool,
    /// Top-level `"chat"`: the chat's model and approval rules.
    pub chat: ChatSettings,
    /// Top-level `"gateway"`: `nexo gateway`'s settings, read by
    /// nexo-gateway (this crate does not know their fields).
    pub gateway: Option<GatewaySection>,
    /// Fields of other hosts that were read and set aside, for the CLI to
    /// mention (nothing here changes what nexo does).
    pub ignored: Vec<Ignored>,
}

/// One configured server. Its `Debug` shows no value taken from the
/// environment ([`ServerConfig::from_env`]), wherever it was expanded.
#[derive(Clone)]
pub struct ServerConfig {
    /// The entry's key; never empty.
    pub name: String,
    /// How to reach it, variables expanded.
    pub spec: ServerSpec,
    pub timeouts: Timeouts,
    /// `"disabled": true`: listed, never started. Variables of a disabled
    /// entry that are not set are left as written rather than refused.
    pub disabled: bool,
    /// `"description"`, shown beside the name.
    pub description: Option<String>,
    /// Where the entry's name is in its file; `None` for the default.
    pub location: Option<Location>,
    /// The entry as written (before expansion), with the contents of its
    /// `envFile`: what the user consents to ([`crate::consent`]).
    pub fingerprint: Fingerprint,
    /// The canonical path of the project file the entry came from, when it
    /// needs the user's consent to start; `None` otherwise.
    pub project_file: Option<PathBuf>,
    /// What the entry says, as written, for a consent prompt.
    pub written: Written,
    /// The values of the environment variables expanded into the entry, in
    /// any field (a token in `args` or in the `url` too): what nexo must
    /// not show, in errors or logs, whatever carries it.
    pub from_env: Vec<Secret>,
}

/// Values from the environment shorter than this are not scrubbed from
/// what is shown (`1`, `true`, `debug`), as for `-e` values.
const SHORTEST_SECRET: usize = 8;

impl ServerConfig {
    /// `text` with every value of [`ServerConfig::from_env`] long enough to
    /// be a secret replaced by [`REDACTED`].
    pub fn scrub(&self, text: &str) -> String {
        let mut values: Vec<&str> = self
            .from_env
            .iter()
            .map(Secret::expose)
            .filter(|value| value.len() >= SHORTEST_SECRET)
            .collect();
        // Longest first, so that a value is redacted whole before its parts.
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        let mut text = text.to_owned();
        for value in values {
            text = text.replace(value, REDACTED);
            let escaped = format!("{value:?}");
            let escaped = &escaped[1..escaped.len() - 1];
            if escaped != value {
                text = text.replace(escaped, REDACTED);
            }
        }
        text
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.scrub(&format!("{:?}", self.spec));
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("spec", &format_args!("{spec}"))
            .field("timeouts", &self.timeouts)
            .field("disabled", &self.disabled)
            .field("description", &self.description)
            .field("location", &self.location)
            .field("fingerprint", &self.fingerprint)
            .field("project_file", &self.project_file)
            .field("written", &self.written)
            .field("from_env", &self.from_env)
            .finish()
    }
}

/// How to reach a server.
#[derive(Debug, Clone)]
pub enum ServerSpec {
    /// A command to spawn, spoken to over stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// `env`, over the variables of `envFile`.
        env: Vec<EnvVar>,
        /// `cwd`, made absolute against the project's directory.
        cwd: Option<PathBuf>,
    },
    /// A URL: Streamable HTTP, the legacy HTTP+SSE transport, or either.
    Remote {
        url: TargetUrl,
        transport: HttpTransport,
        headers: Vec<Header>,
    },
    /// `{"builtin": "dns", ...options}`: a bundled server run in-process.
    Builtin {
        /// The bundled server's name.
        server: String,
        /// The entry's other fields (variables expanded), for the bundled
        /// server's options (`nexo_bundled::GivenOptions::from_json`).
        options: serde_json::Map<String, serde_json::Value>,
        /// The directory relative paths among the options are resolved
        /// against: the project's.
        base_dir: PathBuf,
    },
}

impl ServerSpec {
    /// The [`Target`] to connect to; `None` for a builtin, which runs
    /// in-process.
    pub fn target(&self) -> Option<Target> {
        match self {
            ServerSpec::Stdio {
                command,
                args,
                env,
                cwd,
            } => Some(Target::Stdio {
                command: std::iter::once(command.clone())
                    .chain(args.iter().cloned())
                    .collect(),
                env: env.clone(),
                cwd: cwd.clone(),
            }),
            ServerSpec::Remote {
                url,
                transport,
                headers,
            } => Some(Target::Url {
                url: url.clone(),
                transport: *transport,
                headers: headers.clone(),
            }),
            ServerSpec::Builtin { .. } => None,
        }
    }
}

/// How long calls may take: `"timeout"` (seconds without a message from
/// the server, which progress notifications reset) and `"maxTimeout"`
/// (seconds in all), per server and per tool (`"toolTimeouts": {"tool":
/// {"timeout": .., "maxTimeout": ..}}`), and a command's start-up
/// allowance, `"startupTimeout"` (seconds its handshake may take). `None`
/// leaves the caller's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeouts {
    pub idle: Option<Duration>,
    pub max: Option<Duration>,
    pub startup: Option<Duration>,
    pub tools: BTreeMap<String, ToolTimeouts>,
}

/// The limits of one tool's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolTimeouts {
    pub idle: Option<Duration>,
    pub max: Option<Duration>,
}

impl Timeouts {
    /// The limits of `tool`'s calls: its own where it has them, else the
    /// server's.
    pub fn for_tool(&self, tool: &str) -> ToolTimeouts {
        let own = self.tools.get(tool).copied().unwrap_or_default();
        ToolTimeouts {
            idle: own.idle.or(self.idle),
            max: own.max.or(self.max),
        }
    }
}

/// A place in a file: 1-based line and column (in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// The top-level `chat` object: what the chat runs with, where flags and
/// the environment do not say otherwise.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatSettings {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible one with its `/v1`).
    pub base_url: Option<String>,
    /// The most model steps one turn may take.
    pub max_steps: Option<u32>,
    /// The model's context window in tokens, where nexo does not know it
    /// (a local model's is what its server was started with).
    pub context_window: Option<u64>,
    /// `approvals`: rules over `server__tool` patterns, in the file's order.
    pub approvals: Vec<ApprovalRule>,
    /// `tools`: which tools the model is offered, and how.
    pub tools: ToolSettings,
}

/// The `tools` object of `chat`: patterns over `server__tool` as written
/// (the chat checks them, and names [`ToolSettings::location`] if one is
/// not a pattern).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSettings {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub always_load: Vec<String>,
    /// The share of the context window past which the model searches for
    /// tools (0 to 1).
    pub search_share: Option<f64>,
    pub location: Option<Location>,
}

/// An LLM API nexo speaks: the configuration's `chat.provider`, the
/// chat's `--provider`, and the wire format nexo-host's provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI's Chat Completions, and every server that speaks it (Ollama,
    /// vLLM, llama.cpp, LM Studio).
    OpenAi,
}

impl ProviderKind {
    /// Every provider, in the order help lists them.
    pub const ALL: &[ProviderKind] = &[ProviderKind::Anthropic, ProviderKind::OpenAi];

    /// Its name, as a file and a flag write it.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
        }
    }
}

/// Who it is, in messages.
impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Anthropic => "Anthropic",
            Self::OpenAi => "the OpenAI-compatible API",
        })
    }
}

/// A name that is no provider nexo speaks to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a provider nexo speaks to")]
pub struct UnknownProvider(pub String);

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ProviderKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| UnknownProvider(name.to_owned()))
    }
}

/// One `"pattern": "action"` of `approvals`, the pattern as written (the
/// chat checks it, and names [`ApprovalRule::location`] if it is not one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRule {
    pub pattern: String,
    pub action: ApprovalAction,
    pub location: Location,
    /// Written in a project's file: it may tighten the policy only.
    pub from_project: bool,
}

/// What an approval rule does to the calls it matches: the
/// configuration's `approvals`, and the rules nexo-host decides by and
/// remembers (lower case, as written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalAction {
    Allow,
    Ask,
    Deny,
}

impl ApprovalAction {
    /// Its name, as a file writes it.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalAction::Allow => "allow",
            ApprovalAction::Ask => "ask",
            ApprovalAction::Deny => "deny",
        }
    }
}

impl fmt::Display for ApprovalAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ApprovalAction {
    type Err = ();

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        [
            ApprovalAction::Allow,
            ApprovalAction::Ask,
            ApprovalAction::Deny,
        ]
        .into_iter()
        .find(|action| action.name() == name)
        .ok_or(())
    }
}

/// The top-level `gateway` object as written, its strings' variables
/// expanded; nexo-gateway reads its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewaySection {
    pub value: serde_json::Value,
    /// Where the object starts, for errors about it.
    pub location: Location,
    /// The directory its relative paths are taken from: the file's.
    pub base_dir: PathBuf,
}

/// A field of another host, read and set aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    pub location: Location,
    /// The server whose entry holds it; `None` at the top level.
    pub server: Option<String>,
    pub field: String,
    /// Why setting it aside changes nothing nexo does.
    pub why: &'static str,
}

/// The SHA-256 of an entry as written, with the contents of its `envFile`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// `sha256:` and the hash in lower-case hex, as the consent file keeps it.
    pub fn to_text(&self) -> String {
        format!("sha256:{self}")
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// What an entry says, as written in its file (variables not expanded, so
/// a `${TOKEN}` shows as such), for a person deciding whether to start it.
/// Environment values and header values are never kept: only their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    Stdio {
        command: String,
        args: Vec<String>,
        cwd: Option<String>,
        /// The names `env` sets, then those of `envFile`, sorted.
        env_names: Vec<String>,
        env_file: Option<String>,
    },
    Remote {
        /// `http`, `sse`, or `auto` (no `type`).
        transport: &'static str,
        /// With any userinfo redacted.
        url: String,
        header_names: Vec<String>,
    },
    Builtin {
        server: String,
        /// The options as compact JSON.
        options: String,
    },
}

/// A problem with a `builtin` entry found by [`LoadRequest::check_builtin`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinProblem {
    /// The option at fault; `None` when the server's name is.
    pub option: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

/// Checks a `builtin` entry (its server's name, options and base directory)
/// against the bundled servers, which this crate does not know.
pub type BuiltinCheck =
    dyn Fn(&str, &serde_json::Map<String, serde_json::Value>, &Path) -> Result<(), BuiltinProblem>;

/// What [`load`] needs from its caller. Nothing here is read from the
/// process: the caller decides the directories and the environment.
pub struct LoadRequest<'a> {
    /// `--config FILE`.
    pub explicit: Option<PathBuf>,
    /// The working directory (absolute), where `.mcp.json` is looked for.
    pub cwd: PathBuf,
    /// nexo's per-user configuration directory (`~/.config/nexo`), where
    /// [`USER_FILE`] is looked for.
    pub user_config_dir: Option<PathBuf>,
    /// The home directory, for `${userHome}`.
    pub home: Option<PathBuf>,
    /// The value of an environment variable, `None` when unset.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Checks `builtin` entries; `None` accepts any.
    pub check_builtin: Option<&'a BuiltinCheck>,
}

impl fmt::Debug for LoadRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadRequest")
            .field("explicit", &self.explicit)
            .field("cwd", &self.cwd)
            .field("user_config_dir", &self.user_config_dir)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}
