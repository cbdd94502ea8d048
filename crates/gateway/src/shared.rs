//! What gateway instances share through Redis, when the `gateway` settings
//! name one (`"redis"`): the rate limits' buckets and the 2025-era
//! sessions, so that instances behind one load balancer count each
//! identity and each tool once and serve each other's sessions. Clients
//! of 2026-07-28 need nothing shared: the gateway keeps no state for them.
//!
//! ```json
//! "redis": "redis://127.0.0.1:6379/0"
//! "redis": {"url": "redis://:${REDIS_PASSWORD}@10.0.0.5:6379/0",
//!           "prefix": "nexo:gateway:", "whenDown": "refuse",
//!           "sessionTtlSeconds": 1800}
//! ```
//!
//! [`Redis`] is one reconnecting connection (the `redis` crate's
//! `ConnectionManager`, connected on first use, each command bounded by
//! [`TIMEOUT`]). [`Redis::gcra`] takes one request from a bucket with one
//! Lua script (one round trip, atomic): the same GCRA as governor's, the
//! theoretical arrival time kept per key in microseconds of Redis's own
//! clock, so that instances whose clocks differ still agree, and expiring
//! when the bucket is full again. [`RedisSessions`] holds each endpoint's
//! sessions as rmcp's [`SessionStore`] ([`EndpointSessions`]): each
//! session's `initialize` parameters under the SHA-256 of its endpoint and
//! id (the ids, which admit a request to a session, are not written to
//! Redis), kept [`RedisSettings::session_ttl`] after the session was last
//! used on any instance, removed when the client ends it.
//!
//! When Redis does not answer, the failure is logged (once per
//! [`LOG_EVERY`]) and counted (`nexo_gateway_redis_errors_total`); a rate
//! limit is then refused or let through as `whenDown` says ([`WhenDown`],
//! refused by default), and a session other instances made is unknown
//! here: its client gets a 404 and starts a new one, as the protocol asks.
//! Sessions live in the instances' memory as well, so a session keeps
//! working on the instance that holds it. The URL's password never reaches
//! a log or a message ([`RedisUrl`]); `rediss://` (TLS) is not built in.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Expiry, Script};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::Value;
use sha2::Digest;

use crate::metrics::RedisErrors;

/// The key prefix when none is given.
pub const DEFAULT_PREFIX: &str = "nexo:gateway:";
/// How long an unused session is kept by default.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(30 * 60);
/// How long a connection attempt or a command may take.
pub const TIMEOUT: Duration = Duration::from_secs(1);
/// How often an unreachable Redis is logged at most.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// The GCRA, as governor's (`gcra.rs`): `ARGV[1]` is the emission
/// interval T and `ARGV[2]` the tolerance T × (burst − 1), in
/// microseconds. Answers -1 when the request is let through (the new
/// arrival time stored, expiring when the bucket is full again), else the
/// microseconds until it would be.
const GCRA: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
local earliest = tat - tolerance
if now < earliest then
  return earliest - now
end
local next = math.max(tat, now) + interval
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.max(1, math.ceil((next - now) / 1000)))
return -1
";

/// The `redis` settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisSettings {
    pub url: RedisUrl,
    /// Put before every key, so that several gateways share one Redis.
    pub prefix: String,
    pub when_down: WhenDown,
    /// How long a session unused on every instance is kept.
    pub session_ttl: Duration,
}

/// What a rate limit does when Redis does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenDown {
    /// Refuse the request (`"refuse"`, the default): no limit is
    /// silently lifted.
    Refuse,
    /// Let it through unlimited (`"allow"`): availability first.
    Allow,
}

/// A Redis URL, whose userinfo (a password) Display and Debug redact.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl(String);

impl RedisUrl {
    /// The URL to connect with, password included.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&nexo_client::secret::redact_userinfo(&self.0))
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "RedisUrl({self})")
    }
}

impl RedisSettings {
    /// Reads the `redis` value: a URL, or an object with `url`, `prefix`,
    /// `whenDown` and `sessionTtlSeconds`; the error says what is wrong
    /// and never shows a password.
    pub fn read(value: &Value) -> Result<Self, String> {
        let mut settings = Self {
            url: RedisUrl(String::new()),
            prefix: DEFAULT_PREFIX.to_owned(),
            when_down: WhenDown::Refuse,
            session_ttl: DEFAULT_SESSION_TTL,
        };
        let url = match value {
            Value::String(url) => url,
            Value::Object(object) => {
                for (key, value) in object {
                    match key.as_str() {
                        "url" => {}
                        "prefix" => {
                            settings.prefix = value
                                .as_str()
                                .ok_or("`redis.prefix` is not a string such as \"nexo:gateway:\"")?
                                .to_owned();
                        }
                        "whenDown" => {
                            settings.when_down = match value.as_str() {
                                Some("refuse") => WhenDown::Refuse,
                                Some("allow") => WhenDown::Allow,
                                _ => {
                                    return Err(
                                        "`redis.whenDown` is neither \"refuse\" nor \"allow\""
                                            .to_owned(),
                                    );
                                }
                            };
                        }
                        "sessionTtlSeconds" => {
                            settings.session_ttl = value
                                .as_u64()
                                .filter(|seconds| (10..=7 * 24 * 3600).contains(seconds))
                                .map(Duration::from_secs)
                                .ok_or(
                                    "`redis.sessionTtlSeconds` is not a whole number of seconds \
                                     from 10 to 604800 (a week)",
                                )?;
                        }
                        other => {
                            return Err(format!(
                                "`redis` has no field `{other}`: it takes `url`, `prefix`, \
                                 `whenDown` and `sessionTtlSeconds`"
                            ));
                        }
                    }
                }
                object
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or("`redis` has no `url` string")?
            }
            _ => return Err("`redis` is neither a URL nor an object".to_owned()),
        };
        settings.url = check_url(url)?;
        Ok(settings)
    }
}

/// A URL the `redis` crate connects to without TLS.
fn check_url(written: &str) -> Result<RedisUrl, String> {
    let parsed =
        url::Url::parse(written).map_err(|error| format!("`redis` is not a URL ({error})"))?;
    let url = RedisUrl(written.to_owned());
    match parsed.scheme() {
        "redis" | "redis+unix" | "unix" => {}
        "rediss" => {
            return Err(format!(
                "`redis` `{url}` asks for TLS, which this build does not speak to Redis; reach \
                 Redis on a private network, or through a TLS tunnel on loopback (stunnel) as \
                 `redis://127.0.0.1:PORT/0`"
            ));
        }
        scheme => {
            return Err(format!(
                "`redis` `{url}` has the scheme `{scheme}`, not `redis`"
            ));
        }
    }
    if parsed.scheme() == "redis" && parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`redis` `{url}` names no host"));
    }
    redis::Client::open(written)
        .map_err(|error| format!("`redis` `{url}` is not a Redis URL: {error}"))?;
    Ok(url)
}

/// What a failed command was for, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    RateLimits,
    Sessions,
}

impl Purpose {
    pub fn name(self) -> &'static str {
        match self {
            Purpose::RateLimits => "rate_limits",
            Purpose::Sessions => "sessions",
        }
    }
}

/// One reconnecting connection to the shared Redis.
pub struct Redis {
    connection: ConnectionManager,
    prefix: String,
    url: RedisUrl,
    when_down: WhenDown,
    gcra: Script,
    errors: RedisErrors,
    /// When an unreachable Redis was last logged (milliseconds after
    /// `started`, plus one; 0: never).
    logged: AtomicU64,
    started: Instant,
}

impl fmt::Debug for Redis {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Redis")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// The connection `settings` describe, opened on first use (on the
    /// tokio runtime); an instance starts whether Redis is up or not.
    pub fn new(settings: &RedisSettings, errors: RedisErrors) -> Result<Arc<Self>, String> {
        let client = redis::Client::open(settings.url.expose())
            .map_err(|error| format!("`redis` `{}` is not a Redis URL: {error}", settings.url))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(TIMEOUT);
        let connection =
            ConnectionManager::new_lazy_with_config(client, config).map_err(|error| {
                format!(
                    "cannot set up the connection to `{}`: {error}",
                    settings.url
                )
            })?;
        Ok(Arc::new(Self {
            connection,
            prefix: settings.prefix.clone(),
            url: settings.url.clone(),
            when_down: settings.when_down,
            gcra: Script::new(GCRA),
            errors,
            logged: AtomicU64::new(0),
            started: Instant::now(),
        }))
    }

    pub fn when_down(&self) -> WhenDown {
        self.when_down
    }

    /// Where Redis is, its password hidden.
    pub fn url(&self) -> &RedisUrl {
        &self.url
    }

    /// Takes one request from the bucket `bucket` (a key under the
    /// prefix) whose emission interval is `interval` and tolerance
    /// `tolerance`: `None` when it is let through, else how long until it
    /// would be.
    pub async fn gcra(
        &self,
        bucket: &str,
        interval: Duration,
        tolerance: Duration,
    ) -> Result<Option<Duration>, redis::RedisError> {
        // Microseconds: Lua's numbers are doubles, exact to 2^53, and
        // Redis's clock in microseconds stays far below that.
        let micros = |duration: Duration| u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        let interval = micros(interval).max(1);
        // A tolerance past a few years is as good as unlimited.
        let tolerance = micros(tolerance).min(1 << 50);
        let mut connection = self.connection.clone();
        let wait: i64 = self
            .gcra
            .key(format!("{}limit:{bucket}", self.prefix))
            .arg(interval)
            .arg(tolerance)
            .invoke_async(&mut connection)
            .await?;
        Ok(u64::try_from(wait).ok().map(Duration::from_micros))
    }

    /// Logs (at most once per [`LOG_EVERY`]) and counts a failed command.
    pub fn failed(&self, purpose: Purpose, error: &redis::RedisError) {
        self.errors.count(purpose.name());
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX) + 1;
        let last = self.logged.load(Ordering::Relaxed);
        let every = u64::try_from(LOG_EVERY.as_millis()).unwrap_or(u64::MAX);
        if (last == 0 || now.saturating_sub(last) >= every)
            && self
                .logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let then = match (purpose, self.when_down) {
                (Purpose::RateLimits, WhenDown::Refuse) => {
                    "rate-limited requests are refused (`\"whenDown\": \"allow\"` lets them through)"
                }
                (Purpose::RateLimits, WhenDown::Allow) => {
                    "rate-limited requests go through unlimited (`\"whenDown\": \"allow\"`)"
                }
                (Purpose::Sessions, _) => {
                    "sessions of other instances are not found here and their clients start new ones"
                }
            };
            tracing::error!(
                "Redis at `{}` failed ({}): {}; {then}; hint: check that Redis runs and that \
                 this instance reaches it",
                self.url,
                purpose.name(),
                describe(error)
            );
        }
    }

    fn key(&self, what: &str, id: &str) -> String {
        format!("{}{what}:{}", self.prefix, hex(&sha2::Sha256::digest(id)))
    }
}

/// A Redis error in words, without the URL it may quote.
pub fn describe(error: &redis::RedisError) -> String {
    if error.is_timeout() {
        format!("no answer within {} s", TIMEOUT.as_secs_f64())
    } else if error.is_connection_refusal() {
        "the connection was refused".to_owned()
    } else if error.is_connection_dropped() || error.is_io_error() {
        "the connection failed".to_owned()
    } else {
        match (error.code(), error.detail()) {
            (Some(code), Some(detail)) => format!("Redis answered {code}: {detail}"),
            (Some(code), None) => format!("Redis answered {code}"),
            (None, _) => "the command failed".to_owned(),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

/// The rate limits' buckets (nexo-serve's limiter) kept in Redis.
impl nexo_serve::limits::SharedBuckets for Redis {
    fn gcra<'a>(
        &'a self,
        bucket: &'a str,
        interval: Duration,
        tolerance: Duration,
    ) -> futures::future::BoxFuture<'a, nexo_serve::limits::Shared> {
        use nexo_serve::limits::Shared;
        Box::pin(async move {
            match Redis::gcra(self, bucket, interval, tolerance).await {
                Ok(None) => Shared::Through,
                Ok(Some(wait)) => Shared::Wait(wait),
                Err(error) => {
                    self.failed(Purpose::RateLimits, &error);
                    Shared::Down {
                        refuse: self.when_down == WhenDown::Refuse,
                    }
                }
            }
        })
    }
}

/// The 2025-era sessions, in Redis for every instance: each endpoint's
/// own ([`RedisSessions::at`]), so that a session of `/mcp` is no session
/// of `/mcp/NAME`.
pub struct RedisSessions {
    redis: Arc<Redis>,
    ttl: Duration,
    /// When each session's expiry was last pushed back from here, by key.
    touched: Mutex<HashMap<String, Instant>>,
}

impl fmt::Debug for RedisSessions {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("RedisSessions")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisSessions {
    pub fn new(redis: Arc<Redis>, ttl: Duration) -> Self {
        Self {
            redis,
            ttl,
            touched: Mutex::new(HashMap::new()),
        }
    }

    /// The sessions of the endpoint at `endpoint` (`/mcp`, `/mcp/NAME`),
    /// rmcp's [`SessionStore`], handed to nexo-serve as `SharedSessions`.
    pub fn at(self: &Arc<Self>, endpoint: &str) -> EndpointSessions {
        EndpointSessions {
            sessions: self.clone(),
            endpoint: endpoint.to_owned(),
        }
    }

    fn key(&self, endpoint: &str, id: &str) -> String {
        self.redis.key("session", &format!("{endpoint} {id}"))
    }

    fn ttl_seconds(&self) -> u64 {
        self.ttl.as_secs().max(1)
    }

    /// The session `id` of `endpoint` was used here: its entry is kept
    /// another TTL from now, pushed back in the background at most once
    /// per quarter TTL.
    pub fn touch(&self, endpoint: &str, id: &str) {
        let key = self.key(endpoint, id);
        let now = Instant::now();
        {
            let Ok(mut touched) = self.touched.lock() else {
                return;
            };
            if touched
                .get(&key)
                .is_some_and(|at| now.duration_since(*at) < self.ttl / 4)
            {
                return;
            }
            touched.insert(key.clone(), now);
        }
        let redis = self.redis.clone();
        let seconds = i64::try_from(self.ttl_seconds()).unwrap_or(i64::MAX);
        tokio::spawn(async move {
            let mut connection = redis.connection.clone();
            if let Err(error) = connection.expire::<_, bool>(&key, seconds).await {
                redis.failed(Purpose::Sessions, &error);
            }
        });
    }

    /// Forgets when the sessions not used for a TTL were touched.
    pub fn sweep(&self) {
        if let Ok(mut touched) = self.touched.lock() {
            touched.retain(|_, at| at.elapsed() < self.ttl);
            touched.shrink_to_fit();
        }
    }
}

/// One endpoint's sessions in Redis.
pub struct EndpointSessions {
    sessions: Arc<RedisSessions>,
    endpoint: String,
}

impl fmt::Debug for EndpointSessions {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("EndpointSessions")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl EndpointSessions {
    fn key(&self, id: &str) -> String {
        self.sessions.key(&self.endpoint, id)
    }

    fn failed(&self, error: &redis::RedisError) -> SessionStoreError {
        self.sessions.redis.failed(Purpose::Sessions, error);
        SessionStoreError::from(describe(error))
    }
}

#[async_trait::async_trait]
impl SessionStore for EndpointSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let mut connection = self.sessions.redis.connection.clone();
        let found: Option<String> = match connection
            .get_ex(
                self.key(session_id),
                Expiry::EX(self.sessions.ttl_seconds()),
            )
            .await
        {
            Ok(found) => found,
            Err(error) => {
                // Unknown here: the client starts a new session (404).
                self.failed(&error);
                return Ok(None);
            }
        };
        let Some(text) = found else {
            return Ok(None);
        };
        match serde_json::from_str(&text) {
            Ok(state) => Ok(Some(state)),
            Err(error) => {
                tracing::warn!(%error, "a session kept in Redis does not read as one; it is treated as unknown");
                Ok(None)
            }
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        let mut connection = self.sessions.redis.connection.clone();
        connection
            .set_ex::<_, _, ()>(self.key(session_id), text, self.sessions.ttl_seconds())
            .await
            .map_err(|error| self.failed(&error))
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let key = self.key(session_id);
        if let Ok(mut touched) = self.sessions.touched.lock() {
            touched.remove(&key);
        }
        let mut connection = self.sessions.redis.connection.clone();
        connection
            .del::<_, ()>(key)
            .await
            .map_err(|error| self.failed(&error))
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn a_url_or_an_object_is_read() {
        let settings = RedisSettings::read(&serde_json::json!("redis://127.0.0.1:6379/0")).unwrap();
        assert_eq!(settings.prefix, DEFAULT_PREFIX);
        assert_eq!(settings.when_down, WhenDown::Refuse);
        assert_eq!(settings.session_ttl, DEFAULT_SESSION_TTL);
        let settings = RedisSettings::read(&serde_json::json!({
            "url": "redis://10.0.0.5/2", "prefix": "a:", "whenDown": "allow",
            "sessionTtlSeconds": 60
        }))
        .unwrap();
        assert_eq!(settings.url.expose(), "redis://10.0.0.5/2");
        assert_eq!(settings.prefix, "a:");
        assert_eq!(settings.when_down, WhenDown::Allow);
        assert_eq!(settings.session_ttl, Duration::from_secs(60));
    }

    #[test]
    fn bad_settings_say_what_is_wrong_and_hide_the_password() {
        for (value, says) in [
            (serde_json::json!("localhost:6379"), "scheme `localhost`"),
            (serde_json::json!("redis://"), "names no host"),
            (serde_json::json!("rediss://:hunter2@db/0"), "TLS"),
            (serde_json::json!("http://db/0"), "scheme `http`"),
            (serde_json::json!("redis://db/zero"), "not a Redis URL"),
            (serde_json::json!(6379), "neither a URL nor an object"),
            (
                serde_json::json!({"url": "redis://db", "whenDown": "open"}),
                "whenDown",
            ),
            (
                serde_json::json!({"url": "redis://db", "sessionTtlSeconds": 1}),
                "from 10",
            ),
            (serde_json::json!({"ur": "redis://db"}), "no field `ur`"),
            (serde_json::json!({"prefix": "x"}), "no `url`"),
        ] {
            let error = RedisSettings::read(&value).unwrap_err();
            assert!(error.contains(says), "{value}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        let url = check_url("redis://user:hunter2@db:6379/0").unwrap();
        assert_eq!(url.to_string(), "redis://[redacted]@db:6379/0");
        assert!(!format!("{url:?}").contains("hunter2"));
    }

    #[test]
    fn session_keys_are_digests_of_the_ids() {
        let settings = RedisSettings::read(&serde_json::json!("redis://127.0.0.1:1/0")).unwrap();
        let errors = crate::metrics::Metrics::new().redis_errors();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _entered = runtime.enter();
        let redis = Redis::new(&settings, errors).unwrap();
        let key = redis.key("session", "abc");
        assert!(key.starts_with("nexo:gateway:session:ba7816bf"), "{key}");
        let sessions = Arc::new(RedisSessions::new(redis, DEFAULT_SESSION_TTL));
        let key = sessions.at("/mcp").key("abc");
        assert!(!key.contains("abc"), "{key}");
        assert_ne!(key, sessions.at("/mcp/ro").key("abc"));
    }
}
