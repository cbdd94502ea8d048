//! The HTTP around both wire formats: the reqwest client, the POST with
//! its retries of busy answers (429, 503, 529, `overloaded_error`) with
//! exponential backoff honouring `Retry-After` (seconds or an HTTP date)
//! and OpenAI's `retry-after-ms`, the classification of refusals into
//! [`ProviderError`]s, and the SSE stream of the answer, capped in size.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use super::{ProviderConfig, ProviderError, ProviderKind, RetryPolicy};

/// The most bytes one streamed answer may take.
pub(super) const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The most of an error body read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The longest wait to open a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) type Events = BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>;

pub(super) fn client(config: &ProviderConfig) -> Result<reqwest::Client, ProviderError> {
    nexo_client::http::client_builder(CONNECT_TIMEOUT)
        .build()
        .map_err(ProviderError::Client)
        .inspect(|_| tracing::debug!(kind = ?config.kind, model = %config.model, "provider client"))
}

/// POSTs `body` to `url` until an answer streams or the refusal is final.
pub(super) async fn post_stream(
    http: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    headers: HeaderMap,
    body: &Value,
) -> Result<Events, ProviderError> {
    let kind = config.kind;
    let mut tries = 0;
    loop {
        tries += 1;
        let sent = http
            .post(url)
            .headers(headers.clone())
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                return Err(ProviderError::Unreachable {
                    provider: kind,
                    url: url.to_owned(),
                    detail: scrub(&describe(error), config),
                });
            }
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return events(kind, response);
        }
        let delay = retry_after(response.headers());
        let body = read_capped(response).await;
        let refusal = Refusal::read(&body);
        let busy = matches!(status, 429 | 503 | 529) || refusal.kind == "overloaded_error";
        if !busy {
            return Err(refusal.into_error(status, config, url));
        }
        let wait = delay.unwrap_or_else(|| backoff(&config.retry, tries));
        if tries >= config.retry.max_tries || wait > config.retry.max_delay {
            return Err(ProviderError::Busy {
                provider: kind,
                status,
                tries,
                retry_after: delay.filter(|delay| *delay > config.retry.max_delay),
            });
        }
        tracing::info!(status, ?wait, tries, "provider busy; retrying");
        tokio::time::sleep(wait).await;
    }
}

/// The wait before try `tries + 1` when the provider names none.
fn backoff(policy: &RetryPolicy, tries: u32) -> Duration {
    let factor = 2u32.saturating_pow(tries.saturating_sub(1));
    policy
        .first_delay
        .saturating_mul(factor)
        .min(policy.max_delay)
}

/// What the provider asks to wait: OpenAI's `retry-after-ms`, else
/// `Retry-After` in seconds or as an HTTP date.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(millis) = value("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        return Some(Duration::from_secs_f64(millis / 1000.0));
    }
    let after = value("retry-after")?;
    if let Ok(seconds) = after.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let when = jiff::fmt::rfc2822::parse(after).ok()?;
    let seconds = when.timestamp().as_second() - jiff::Timestamp::now().as_second();
    Some(Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
}

/// The error body, at most [`MAX_ERROR_BODY`] bytes of it.
async fn read_capped(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    body
}

/// What an error body says, in either API's form:
/// `{"type": "error", "error": {"type", "message"}}` (Anthropic) or
/// `{"error": {"message", "type", "code"}}` (OpenAI).
struct Refusal {
    kind: String,
    code: String,
    message: String,
    json: bool,
}

impl Refusal {
    fn read(body: &[u8]) -> Self {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body);
            return Self {
                kind: String::new(),
                code: String::new(),
                message: preview(text.trim()),
                json: false,
            };
        };
        let error = value.get("error").unwrap_or(&value);
        let field = |name: &str| match error.get(name) {
            Some(Value::String(text)) => text.clone(),
            _ => String::new(),
        };
        let message = match error {
            Value::String(text) => text.clone(),
            _ => field("message"),
        };
        Self {
            kind: field("type"),
            code: field("code"),
            message: preview(&message),
            json: true,
        }
    }

    fn into_error(self, status: u16, config: &ProviderConfig, url: &str) -> ProviderError {
        let provider = config.kind;
        if matches!(status, 401 | 403)
            || self.kind == "authentication_error"
            || self.code == "invalid_api_key"
        {
            return ProviderError::Unauthorized { provider, status };
        }
        let model_missing = self.kind == "not_found_error"
            || self.code == "model_not_found"
            || (status == 404 && self.json)
            // Ollama: `{"error": "model \"x\" not found, try pulling it first"}`.
            || (self.message.contains("model") && self.message.contains("not found"));
        if model_missing {
            return ProviderError::UnknownModel {
                provider,
                model: config.model.clone(),
                base_url: super::trimmed(&config.base_url).to_owned(),
            };
        }
        if status == 404 {
            return ProviderError::NoEndpoint {
                provider,
                url: url.to_owned(),
            };
        }
        ProviderError::Api {
            provider,
            status,
            message: scrub(&self.message, config),
        }
    }
}

/// `text` cut to a readable length.
fn preview(text: &str) -> String {
    const MAX: usize = 500;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `text` without the API key, should a provider echo it.
fn scrub(text: &str, config: &ProviderConfig) -> String {
    match &config.api_key {
        Some(key) if !key.expose().is_empty() && text.contains(key.expose()) => {
            text.replace(key.expose(), nexo_client::secret::REDACTED)
        }
        _ => text.to_owned(),
    }
}

/// A reqwest error in words, without its URL (which reqwest prints and a
/// base URL may carry credentials in).
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

/// The answer's events, once its content type says it is a stream.
fn events(kind: ProviderKind, response: reqwest::Response) -> Result<Events, ProviderError> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !content_type.starts_with("text/event-stream") {
        return Err(ProviderError::Malformed {
            provider: kind,
            detail: format!("a `{content_type}` answer where an event stream was asked for"),
        });
    }
    let mut seen = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk: Bytes = chunk.map_err(|error| BodyError::Http(error.without_url()))?;
        seen = seen.saturating_add(chunk.len());
        if seen > MAX_ANSWER_BYTES {
            return Err(BodyError::TooLarge);
        }
        Ok(chunk)
    });
    // Line by line: which events survive a malformed line must not depend
    // on how the network cut the body (nexo_client::sse).
    Ok(nexo_client::sse::events(Box::pin(bytes)).boxed())
}

/// Why the answer's bytes stopped coming.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("{0}")]
    Http(reqwest::Error),
    #[error("the answer passed its size limit")]
    TooLarge,
}

/// What a failure of the SSE stream means.
pub(super) fn stream_error(kind: ProviderKind, error: sse_stream::Error) -> ProviderError {
    match error {
        sse_stream::Error::Body(cause)
            if matches!(cause.downcast_ref(), Some(BodyError::TooLarge)) =>
        {
            ProviderError::TooLarge {
                provider: kind,
                limit: MAX_ANSWER_BYTES,
            }
        }
        sse_stream::Error::Body(cause) => ProviderError::Broken {
            provider: kind,
            detail: cause.to_string(),
        },
        other => ProviderError::Malformed {
            provider: kind,
            detail: format!("bad SSE: {other}"),
        },
    }
}

/// The JSON of an event's data.
pub(super) fn data_json(kind: ProviderKind, data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|error| ProviderError::Malformed {
        provider: kind,
        detail: format!("event data that is not JSON ({error})"),
    })
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn retry_after_forms() {
        let with = |name: &'static str, value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            retry_after(&headers)
        };
        assert_eq!(with("retry-after", "2"), Some(Duration::from_secs(2)));
        assert_eq!(with("retry-after", "0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            with("retry-after-ms", "250"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            with("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(with("retry-after", "soon"), None);
        assert_eq!(with("retry-after", "-3"), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn backoff_doubles_up_to_the_limit() {
        let policy = RetryPolicy {
            max_tries: 9,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(5),
        };
        let waits: Vec<u64> = (1..=5)
            .map(|try_| backoff(&policy, try_).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
    }
}
