//! Choosing the provider: explicit [`Settings`] first, then the
//! environment as the providers' own SDKs read it (`ANTHROPIC_API_KEY`,
//! `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`; Ollama's
//! `OLLAMA_HOST`), then a local Ollama if one answers. [`VARIABLES`] lists
//! every variable it reads, with what each means; it reads them through a
//! closure, so that the CLI hands in the process's (reading those and no
//! others) and tests their own.

use std::time::Duration;

use nexo_client::secret::Secret;
use serde_json::Value;

use super::{Provider, ProviderConfig, ProviderError, ProviderKind, RetryPolicy, trimmed};

/// The Anthropic API key, as the Anthropic SDKs read it.
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The Anthropic base URL (without `/v1`), as the Anthropic SDKs read it.
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The OpenAI API key, as the OpenAI SDKs read it.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// The OpenAI-compatible base URL (with `/v1`), as the OpenAI SDKs read it.
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
/// Where Ollama listens, as the `ollama` command reads it.
pub const OLLAMA_HOST: &str = "OLLAMA_HOST";

/// Every environment variable [`select`] reads, with what it means: the
/// caller reads these (and only these) and hands their values in.
pub const VARIABLES: &[(&str, &str)] = &[
    (
        ANTHROPIC_API_KEY,
        "the Anthropic API key; set, it chooses Anthropic",
    ),
    (
        ANTHROPIC_BASE_URL,
        "the Anthropic API's base URL, without `/v1`",
    ),
    (
        OPENAI_API_KEY,
        "the OpenAI API key; set, it chooses the OpenAI-compatible API",
    ),
    (
        OPENAI_BASE_URL,
        "an OpenAI-compatible server's base URL, with `/v1`; set, it chooses that API",
    ),
    (
        OLLAMA_HOST,
        "where a local Ollama listens, when no other provider is chosen",
    ),
];

pub const DEFAULT_ANTHROPIC_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";
/// How long a local server has to list its models.
const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// What the user chose (flags or the config file); `None` leaves it to
/// the environment.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub kind: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<Secret>,
    pub retry: RetryPolicy,
}

/// The provider the settings and environment name, or a local Ollama.
pub async fn select(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Provider, ProviderError> {
    let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let kind = settings.kind.or_else(|| {
        if env(ANTHROPIC_API_KEY).is_some() {
            Some(ProviderKind::Anthropic)
        } else if env(OPENAI_API_KEY).is_some()
            || env(OPENAI_BASE_URL).is_some()
            || settings.base_url.is_some()
        {
            Some(ProviderKind::OpenAi)
        } else {
            None
        }
    });
    let Some(kind) = kind else {
        return ollama(settings, &env).await;
    };
    let (key_var, url_var, default_url) = match kind {
        ProviderKind::Anthropic => (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_URL),
        ProviderKind::OpenAi => (OPENAI_API_KEY, OPENAI_BASE_URL, DEFAULT_OPENAI_URL),
    };
    let base_url = settings
        .base_url
        .clone()
        .or_else(|| env(url_var))
        .unwrap_or_else(|| default_url.to_owned());
    let api_key = settings
        .api_key
        .clone()
        .or_else(|| env(key_var).map(Secret::new));
    let official = trimmed(&base_url) == default_url;
    if api_key.is_none() && (kind == ProviderKind::Anthropic || official) {
        return Err(ProviderError::MissingKey { provider: kind });
    }
    let model = match (&settings.model, kind) {
        (Some(model), _) => model.clone(),
        (None, ProviderKind::Anthropic) => DEFAULT_ANTHROPIC_MODEL.to_owned(),
        (None, ProviderKind::OpenAi) if official => DEFAULT_OPENAI_MODEL.to_owned(),
        // A local server's model: the first it lists.
        (None, ProviderKind::OpenAi) => list_models(&base_url, api_key.as_ref())
            .await
            .ok()
            .and_then(|models| models.into_iter().next())
            .ok_or_else(|| ProviderError::NoModel {
                base_url: trimmed(&base_url).to_owned(),
            })?,
    };
    Provider::new(ProviderConfig {
        kind,
        model,
        base_url,
        api_key,
        retry: settings.retry,
    })
}

/// A local Ollama, through its OpenAI-compatible API.
async fn ollama(
    settings: &Settings,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Provider, ProviderError> {
    let host = match env(OLLAMA_HOST) {
        Some(host) if host.contains("://") => host,
        Some(host) => format!("http://{host}"),
        None => DEFAULT_OLLAMA_URL.to_owned(),
    };
    let base_url = format!("{}/v1", trimmed(&host));
    let models = match list_models(&base_url, None).await {
        Ok(models) => models,
        Err(detail) => {
            return Err(ProviderError::NotConfigured {
                tried: vec![
                    format!(
                        "`{ANTHROPIC_API_KEY}`, `{OPENAI_API_KEY}` and `{OPENAI_BASE_URL}` are not set"
                    ),
                    format!("no Ollama at {host}: {detail}"),
                ],
            });
        }
    };
    let model = match &settings.model {
        Some(model) => model.clone(),
        None => models
            .into_iter()
            .next()
            .ok_or_else(|| ProviderError::NotConfigured {
                tried: vec![format!(
                    "Ollama at {host} has no model; fetch one with `ollama pull llama3.2`"
                )],
            })?,
    };
    Provider::new(ProviderConfig {
        kind: ProviderKind::OpenAi,
        model,
        base_url,
        api_key: None,
        retry: settings.retry,
    })
}

/// The models an OpenAI-compatible server lists at `{base}/models`
/// (Ollama, vLLM, llama.cpp and LM Studio all serve it); the error says
/// why there is no list.
pub async fn list_models(base_url: &str, key: Option<&Secret>) -> Result<Vec<String>, String> {
    let http = nexo_client::http::client_builder(PROBE_TIMEOUT)
        .timeout(PROBE_TIMEOUT)
        .build()
        .map_err(|error| error.without_url().to_string())?;
    let mut request = http.get(format!("{}/models", trimmed(base_url)));
    if let Some(key) = key {
        request = request.bearer_auth(key.expose());
    }
    let response = request
        .send()
        .await
        .map_err(|error| error.without_url().to_string())?;
    if !response.status().is_success() {
        return Err(format!(
            "`/models` answered HTTP {}",
            response.status().as_u16()
        ));
    }
    let listing: Value = response
        .json()
        .await
        .map_err(|_| "`/models` did not answer a JSON model list".to_owned())?;
    Ok(listing
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|model| model.get("id").and_then(Value::as_str))
        .map(str::to_owned)
        .collect())
}

/// What to do when no model is reachable, for the chat to show.
pub fn how_to_configure() -> String {
    format!(
        "configure a model in one of these ways:\n  \
         - Anthropic: set `{ANTHROPIC_API_KEY}` (and `--model`, default {DEFAULT_ANTHROPIC_MODEL})\n  \
         - OpenAI: set `{OPENAI_API_KEY}` (and `--model`, default {DEFAULT_OPENAI_MODEL})\n  \
         - any OpenAI-compatible server (vLLM, llama.cpp, LM Studio): set `{OPENAI_BASE_URL}` \
           to its URL ending in /v1, and `--model`\n  \
         - a local Ollama: start it (`ollama serve`, {DEFAULT_OLLAMA_URL}, or `{OLLAMA_HOST}`) \
           and fetch a model with tool support (`ollama pull llama3.2`)\n\
         or choose with `--provider anthropic|openai --model NAME`; slash commands work meanwhile"
    )
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// The selection reads no variable that [`VARIABLES`] does not list,
    /// whichever way it goes (nothing reached: Ollama's address is a
    /// closed port on loopback).
    #[tokio::test]
    async fn the_selection_reads_only_the_listed_variables() {
        let listed: Vec<&str> = VARIABLES.iter().map(|(name, _)| *name).collect();
        for set in [None, Some(ANTHROPIC_API_KEY), Some(OPENAI_API_KEY)] {
            let asked = Mutex::new(Vec::new());
            let env = |name: &str| {
                asked.lock().unwrap().push(name.to_owned());
                match name {
                    OLLAMA_HOST => Some("127.0.0.1:9".to_owned()),
                    name if Some(name) == set => Some("key".to_owned()),
                    _ => None,
                }
            };
            let _ = select(&Settings::default(), env).await;
            let asked = asked.into_inner().unwrap();
            assert!(!asked.is_empty());
            for name in asked {
                assert!(listed.contains(&name.as_str()), "{name} ({set:?})");
            }
        }
    }
}
