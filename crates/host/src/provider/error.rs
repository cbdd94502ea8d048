//! What can go wrong talking to a provider, each with a hint saying what
//! to do. No variant holds an API key: provider messages are scrubbed of
//! it before they get here (`wire`), and a refused key is reported by the
//! environment variable that holds it.

use std::time::Duration;

use super::ProviderKind;
use super::select::{ANTHROPIC_API_KEY, OPENAI_API_KEY};

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

impl ProviderError {
    /// What to try next.
    pub fn hint(&self) -> String {
        match self {
            Self::NotConfigured { .. } => super::how_to_configure(),
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
        }
    }
}
