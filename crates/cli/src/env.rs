//! Every environment variable nexo reads, in one place: nexo's own, each a
//! documented constant here, and those a library publishes with its
//! meaning and has handed in (the LLM provider's, listed by
//! nexo-host's [`nexo_host::provider::VARIABLES`]: `ANTHROPIC_API_KEY`,
//! `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
//! `OLLAMA_HOST`). Nothing else calls `std::env::var`.

use std::path::PathBuf;

use nexo_client::auth::TokenStore;

/// The port `nexo serve --http` listens on when the address names none
/// (set by platforms such as Cloud Run).
pub const PORT: &str = "PORT";
/// Log filter for the diagnostics nexo writes to stderr (`info`, `debug`, ...).
pub const LOG_FILTER: &str = "RUST_LOG";
/// Set (to anything) to turn colour off (https://no-color.org).
pub const NO_COLOR: &str = "NO_COLOR";
/// Set by CI systems: `nexo bench` draws no live progress there.
pub const CI: &str = "CI";
/// The terminal's width in columns, when stdout is no terminal to ask.
pub const COLUMNS: &str = "COLUMNS";
/// Where OAuth tokens are kept (default: `<config dir>/nexo/tokens`). Tests
/// point it at a temporary directory so they never touch the real home.
pub const TOKEN_DIR: &str = "NEXO_TOKEN_DIR";
/// Where `nexo serve dns` logs each tool call (seed 000); `off` logs
/// nothing. Default: `dns_mcp.log.jsonl` in nexo's state directory.
pub const DNS_MCP_LOG: &str = "DNS_MCP_LOG";
/// The per-user state directory on Linux and BSD (XDG).
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
/// The per-user data directory on Linux and BSD (XDG), where
/// `nexo serve music` keeps its library by default.
pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
/// The per-user configuration directory on Linux and BSD (XDG).
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// The home directory, under which the default configuration directory lies.
pub const HOME: &str = "HOME";
/// The per-user roaming application-data directory on Windows.
pub const APPDATA: &str = "APPDATA";
/// Set by the conformance suite for `nexo conformance-client`: the scenario's
/// name (logged only; behaviour never depends on it).
pub const CONFORMANCE_SCENARIO: &str = "MCP_CONFORMANCE_SCENARIO";
/// Set by the conformance suite: the protocol revision to speak.
pub const CONFORMANCE_PROTOCOL_VERSION: &str = "MCP_CONFORMANCE_PROTOCOL_VERSION";
/// Set by the conformance suite: JSON with the scenario's client
/// credentials (`client_id`, `client_secret`), when it has any.
pub const CONFORMANCE_CONTEXT: &str = "MCP_CONFORMANCE_CONTEXT";

/// The value of `name`, if set and valid UTF-8.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The variables nexo-host's provider selection reads
/// ([`nexo_host::provider::VARIABLES`]), read once, for
/// `nexo_host::provider::select`; any other name has no value.
pub fn provider() -> impl Fn(&str) -> Option<String> {
    let values: Vec<(&str, String)> = nexo_host::provider::VARIABLES
        .iter()
        .filter_map(|(name, _)| var(name).map(|value| (*name, value)))
        .collect();
    move |name| {
        values
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, value)| value.clone())
    }
}

/// Where OAuth tokens are kept: `$NEXO_TOKEN_DIR`, else `nexo/tokens` in the
/// platform's per-user configuration directory; `None` when there is none.
pub fn token_dir() -> Option<PathBuf> {
    if let Some(dir) = var(TOKEN_DIR) {
        return Some(PathBuf::from(dir));
    }
    per_user_dir(XDG_CONFIG_HOME, ".config").map(|dir| dir.join("nexo").join("tokens"))
}

/// nexo's per-user configuration directory (`~/.config/nexo`), where
/// `config.json` and the consent file live.
pub fn config_dir() -> Option<PathBuf> {
    per_user_dir(XDG_CONFIG_HOME, ".config").map(|dir| dir.join("nexo"))
}

/// The log file of configured server `name`'s stderr:
/// `$XDG_STATE_HOME/nexo/logs/NAME.log` (or `~/.local/state/...`).
pub fn server_log(name: &str) -> Option<PathBuf> {
    let state = state_dir()?;
    let file: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(state.join("nexo").join("logs").join(format!("{file}.log")))
}

/// Where `nexo chat` logs conversations without `--chat-log`:
/// `$XDG_STATE_HOME/nexo/chat_log.jsonl` (or `~/.local/state/...`).
pub fn chat_log() -> Option<PathBuf> {
    Some(state_dir()?.join("nexo").join("chat_log.jsonl"))
}

/// Where the chat keeps tool results too long for the model:
/// `$XDG_STATE_HOME/nexo/results`.
pub fn long_results() -> Option<PathBuf> {
    Some(state_dir()?.join("nexo").join("results"))
}

/// Where the chat saves its conversations:
/// `$XDG_STATE_HOME/nexo/conversations`.
pub fn conversations() -> Option<PathBuf> {
    Some(state_dir()?.join("nexo").join("conversations"))
}

/// Where the chat's `/trace on` writes by default:
/// `$XDG_STATE_HOME/nexo/traces`.
pub fn traces() -> Option<PathBuf> {
    Some(state_dir()?.join("nexo").join("traces"))
}

/// The chat's line history: `$XDG_STATE_HOME/nexo/chat_history`.
pub fn chat_history() -> Option<PathBuf> {
    Some(state_dir()?.join("nexo").join("chat_history"))
}

/// `$XDG_STATE_HOME`, else `~/.local/state`.
fn state_dir() -> Option<PathBuf> {
    var(XDG_STATE_HOME)
        .map(PathBuf::from)
        .or_else(|| var(HOME).map(|home| PathBuf::from(home).join(".local/state")))
}

/// A per-user directory of the platform: `%APPDATA%` on Windows,
/// `~/Library/Application Support` on macOS, elsewhere `$<xdg>` or
/// `~/<fallback>` (XDG). `None` when the variables it needs are unset.
fn per_user_dir(xdg: &str, fallback: &str) -> Option<PathBuf> {
    if cfg!(windows) {
        var(APPDATA).map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        var(HOME).map(|home| PathBuf::from(home).join("Library/Application Support"))
    } else {
        var(xdg)
            .map(PathBuf::from)
            .or_else(|| var(HOME).map(|home| PathBuf::from(home).join(fallback)))
    }
}

/// The DNS server's call log: `$DNS_MCP_LOG` (`off` for none), else
/// `dns_mcp.log.jsonl` in `$XDG_STATE_HOME/nexo` or `~/.local/state/nexo`
/// (created if missing). Not the current directory: a server started by an
/// MCP host runs wherever the host chose. `None` when nothing is to be
/// logged or no state directory can be found or created.
pub fn dns_log() -> Option<PathBuf> {
    match var(DNS_MCP_LOG).as_deref() {
        Some("off") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => {
            let dir = state_dir()?.join("nexo");
            std::fs::create_dir_all(&dir).ok()?;
            Some(dir.join("dns_mcp.log.jsonl"))
        }
    }
}

/// The music library `nexo serve music` opens without `--db`:
/// `nexo/music.sqlite3` in the platform's per-user data directory
/// (`$XDG_DATA_HOME`, else `~/.local/share`; `~/Library/Application
/// Support` on macOS; `%APPDATA%` on Windows). `None` when there is none.
/// The directory is created when the library is opened.
pub fn music_db() -> Option<PathBuf> {
    per_user_dir(XDG_DATA_HOME, ".local/share").map(|dir| dir.join("nexo").join("music.sqlite3"))
}

/// Where OAuth tokens are kept: [`token_dir`], else (with a warning) this
/// run's memory.
pub fn token_store() -> TokenStore {
    match token_dir() {
        Some(dir) => TokenStore::in_dir(dir),
        None => {
            tracing::warn!(
                "no configuration directory (set {TOKEN_DIR}); tokens last for this run only"
            );
            TokenStore::in_memory()
        }
    }
}
