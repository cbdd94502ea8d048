//! The errors of the chat host, each with its code, exit class and hint
//! ([`Hinted`]): a provider that cannot answer ([`ProviderError`]) and the
//! agent loop it ends ([`AgentError`]), the host's own state files
//! ([`StoreError`]) and what is kept in them: conversations, approvals and
//! tool pins.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nexo_hint::{Exit, Hint, Hinted};

use crate::provider::{ANTHROPIC_API_KEY, OPENAI_API_KEY, ProviderKind, how_to_configure};

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("no LLM provider is configured, and no local Ollama answers")]
    NotConfigured {
        /// What was tried, for `caused by:` lines.
        tried: Vec<String>,
    },
    #[error("{provider} needs an API key and none is set")]
    MissingKey { provider: ProviderKind },
    #[error("no model is chosen for `{base_url}`")]
    NoModel { base_url: String },
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("the API key holds characters an HTTP header cannot carry")]
    BadKey,
    #[error("cannot reach {provider} at `{url}`: {detail}")]
    Unreachable {
        provider: ProviderKind,
        url: String,
        detail: String,
    },
    #[error("{provider} refused the API key (HTTP {status})")]
    Unauthorized { provider: ProviderKind, status: u16 },
    #[error("{provider} has no model `{model}`")]
    UnknownModel {
        provider: ProviderKind,
        model: String,
        base_url: String,
    },
    #[error("nothing answers at `{url}` (HTTP 404)")]
    NoEndpoint { provider: ProviderKind, url: String },
    #[error("{provider} stayed busy (HTTP {status}) through {tries} tries")]
    Busy {
        provider: ProviderKind,
        status: u16,
        tries: u32,
        /// What its last `Retry-After` asked for, when it asked for more
        /// than we wait.
        retry_after: Option<Duration>,
    },
    #[error("{provider} answered HTTP {status}: {message}")]
    Api {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
    #[error("{provider} broke off its answer with `{kind}`: {message}")]
    InStream {
        provider: ProviderKind,
        kind: String,
        message: String,
    },
    #[error("the answer from {provider} ended before its final event")]
    Truncated { provider: ProviderKind },
    #[error("the answer from {provider} is not in its API's format: {detail}")]
    Malformed {
        provider: ProviderKind,
        detail: String,
    },
    #[error("the answer from {provider} is larger than {limit} bytes")]
    TooLarge {
        provider: ProviderKind,
        limit: usize,
    },
    #[error("the connection to {provider} broke during the answer: {detail}")]
    Broken {
        provider: ProviderKind,
        detail: String,
    },
    #[error("the model called `{tool}` with arguments that are not a JSON object: {detail}")]
    BadArguments { tool: String, detail: String },
}

fn key_variable(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::Anthropic => ANTHROPIC_API_KEY,
        ProviderKind::OpenAi => OPENAI_API_KEY,
    }
}

impl Hinted for ProviderError {
    fn code(&self) -> &'static str {
        match self.exit() {
            Exit::Usage => "usage",
            Exit::Unauthorized => "unauthorized",
            Exit::Unreachable => "unreachable",
            Exit::Remote
            | Exit::NeedsConfirmation
            | Exit::AssertionFailed
            | Exit::Findings
            | Exit::Refused
            | Exit::Interrupted => "provider_error",
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::NotConfigured { .. }
            | Self::MissingKey { .. }
            | Self::NoModel { .. }
            | Self::BadKey
            | Self::Client(_)
            | Self::UnknownModel { .. }
            | Self::NoEndpoint { .. } => Exit::Usage,
            Self::Unauthorized { .. } => Exit::Unauthorized,
            Self::Unreachable { .. }
            | Self::Busy { .. }
            | Self::Broken { .. }
            | Self::Truncated { .. } => Exit::Unreachable,
            Self::Api { .. }
            | Self::InStream { .. }
            | Self::Malformed { .. }
            | Self::TooLarge { .. }
            | Self::BadArguments { .. } => Exit::Remote,
        }
    }

    /// What to try next.
    fn hint(&self) -> Option<Hint> {
        let text = match self {
            Self::NotConfigured { .. } => how_to_configure(),
            Self::MissingKey { provider } => format!(
                "set `{}` to your API key (or give one in the config file)",
                key_variable(*provider)
            ),
            Self::NoModel { base_url } => format!(
                "choose one with `--model NAME`; `curl {base_url}/models` lists what the \
                 server has"
            ),
            Self::Client(_) => "this is a bug in nexo; please report it".to_owned(),
            Self::BadKey => "check the API key for stray blanks or line breaks".to_owned(),
            Self::Unreachable { .. } => {
                "check the base URL and that the server runs; nexo retries only busy answers"
                    .to_owned()
            }
            Self::Unauthorized { provider, .. } => format!(
                "check `{}`: the key is wrong, revoked, or lacks access to this model",
                key_variable(*provider)
            ),
            Self::UnknownModel {
                provider: ProviderKind::Anthropic,
                base_url,
                ..
            } => format!(
                "choose a model with `--model NAME`; list them with `curl {base_url}/v1/models \
                 -H \"x-api-key: ${ANTHROPIC_API_KEY}\" -H 'anthropic-version: 2023-06-01'`"
            ),
            Self::UnknownModel {
                provider: ProviderKind::OpenAi,
                base_url,
                ..
            } => format!(
                "choose a model with `--model NAME`; list them with `curl {base_url}/models \
                 -H \"Authorization: Bearer ${OPENAI_API_KEY}\"` (Ollama: `ollama list`, and \
                 `ollama pull NAME` to fetch one)"
            ),
            Self::NoEndpoint { provider, .. } => match provider {
                ProviderKind::Anthropic => {
                    "the Anthropic base URL is given without `/v1` (https://api.anthropic.com)"
                        .to_owned()
                }
                ProviderKind::OpenAi => "an OpenAI-compatible base URL usually ends in `/v1` \
                     (http://127.0.0.1:11434/v1 for Ollama)"
                    .to_owned(),
            },
            Self::Busy { .. } => {
                "the provider is rate-limiting or overloaded; wait a little and try again"
                    .to_owned()
            }
            Self::Api { .. } | Self::InStream { .. } => {
                "read the provider's message above; try again, or another model".to_owned()
            }
            Self::Truncated { .. } | Self::Broken { .. } => {
                "the connection dropped mid-answer; try again".to_owned()
            }
            Self::Malformed { .. } => {
                "the base URL may point at a server that does not speak this API; check it \
                 and `--provider`"
                    .to_owned()
            }
            Self::TooLarge { .. } => "lower the answer's `max_tokens`, or check the base URL \
                                      points at an LLM API"
                .to_owned(),
            Self::BadArguments { .. } => {
                "the model wrote broken JSON; try again, or a model better at tool calls".to_owned()
            }
        };
        Some(Hint::new(text))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

impl Hinted for AgentError {
    fn code(&self) -> &'static str {
        match self {
            Self::Provider(error) => error.code(),
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::Provider(error) => error.exit(),
        }
    }

    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Provider(error) => error.hint(),
        }
    }
}

/// A conversation cannot be found, read or written.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    #[error("there is no saved conversation `{id}`")]
    Unknown { id: String },
    #[error("there is no saved conversation to resume")]
    None,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Hinted for ConversationError {
    fn code(&self) -> &'static str {
        "conversation"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        let text: String = match self {
            Self::Unknown { .. } => {
                "`/resume` in the chat lists the saved conversations; give one of their ids".into()
            }
            Self::None => "start one with `nexo chat`; it is saved after every turn".into(),
            Self::Store(error) => return error.hint(),
        };
        Some(Hint::new(text))
    }
}

/// The approvals file cannot be used, or a pattern is not one.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("`{pattern}` is not a tool pattern: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Hinted for ApprovalError {
    fn code(&self) -> &'static str {
        "approvals"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        let text: String = match self {
            Self::Pattern { .. } => "write `server__tool`, with `*` for any run of characters \
                                     (`files__*`, `*__delete_*`)"
                .into(),
            Self::Store(error) => return error.hint(),
        };
        Some(Hint::new(text))
    }
}

/// The pins file cannot be used, or an approval names no pending tool.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("`{tool}` of `{server}` is not waiting for approval")]
    NotPending { server: String, tool: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Hinted for PinError {
    fn code(&self) -> &'static str {
        "pins"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        let text: String = match self {
            Self::NotPending { .. } => {
                "list the server's tools or skills again: only a new or changed one is approved"
                    .into()
            }
            Self::Store(error) => return error.hint(),
        };
        Some(Hint::new(text))
    }
}

/// A state file cannot be read or written; `kind` names what it holds.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot read the {kind} file `{}`: {reason}", path.display())]
    Read {
        kind: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error(
        "the {kind} file `{}` is damaged at line {line}, column {column}: {detail}",
        path.display()
    )]
    Damaged {
        kind: &'static str,
        path: PathBuf,
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("cannot write the {kind} file `{}`: {reason}", path.display())]
    Write {
        kind: &'static str,
        path: PathBuf,
        reason: String,
    },
}

impl Hinted for StoreError {
    fn code(&self) -> &'static str {
        "state_file"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What to do about it.
    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(match self {
            Self::Read { .. } | Self::Write { .. } => {
                "check the permissions of the file and of its directory".into()
            }
            Self::Damaged { kind, .. } => {
                format!("repair the {kind} file, or move it away to start again without it")
            }
        }))
    }
}

impl StoreError {
    /// The file is of a version this nexo does not read.
    pub(crate) fn version(kind: &'static str, path: &Path, found: u32, known: u32) -> Self {
        Self::Damaged {
            kind,
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            detail: format!("it is of version {found}, and this nexo reads version {known}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider's failures, each to its exit status: what the person
    /// must set up is usage (1), a refused key is authorization (3), a
    /// provider gone or busy is unreachable (4), and what it answered
    /// wrongly is the remote's error (5); the code follows the status.
    #[test]
    fn provider_errors_map_to_their_exit_statuses() {
        let provider = ProviderKind::Anthropic;
        let table = [
            (
                ProviderError::NotConfigured { tried: Vec::new() },
                Exit::Usage,
                "usage",
            ),
            (ProviderError::MissingKey { provider }, Exit::Usage, "usage"),
            (
                ProviderError::Unauthorized {
                    provider,
                    status: 401,
                },
                Exit::Unauthorized,
                "unauthorized",
            ),
            (
                ProviderError::Busy {
                    provider,
                    status: 529,
                    tries: 3,
                    retry_after: None,
                },
                Exit::Unreachable,
                "unreachable",
            ),
            (
                ProviderError::Truncated { provider },
                Exit::Unreachable,
                "unreachable",
            ),
            (
                ProviderError::Api {
                    provider,
                    status: 400,
                    message: String::new(),
                },
                Exit::Remote,
                "provider_error",
            ),
        ];
        for (error, exit, code) in table {
            assert_eq!((error.exit(), error.code()), (exit, code), "{error:?}");
            let agent = AgentError::Provider(error);
            assert_eq!((agent.exit(), agent.code()), (exit, code), "{agent:?}");
        }
    }
}
