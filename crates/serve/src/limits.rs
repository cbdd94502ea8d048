//! Rate limits (GCRA, the governor crate's keyed limiters), shared by
//! `nexo serve --http` and the gateway: how many guarded requests one
//! caller may make, and how many calls one tool may take from everybody.
//! Buckets are held in memory on this instance, or in a store every
//! instance shares ([`SharedBuckets`]: the gateway's Redis): same
//! algorithm, same refusals, the bucket of each key shared.
//!
//! The settings ([`LimitSettings`]) are the gateway's `rateLimits` object
//! (`nexo serve` builds the same from `--rate-limit`, `--tool-rate-limit`
//! and `--rate-burst`):
//!
//! ```json
//! "rateLimits": {
//!   "perIdentity": "60/min",
//!   "perTool": {"utils__calc": "1/s", "files__*": "10/s"},
//!   "burst": 5
//! }
//! ```
//!
//! A rate is `N/s`, `N/min` or `N/h`: N requests spread over that period,
//! and at most `burst` at once (N when no burst is given). A caller is
//! keyed by its token subject when it has one, else by the client's
//! address ([`key_for`]). A tool is matched by its name (globs allowed;
//! the first pattern in order that matches wins) and each matching tool
//! gets its own bucket, shared by every caller: it protects the tool.
//! Keys whose bucket is full again are dropped by [`Limits::sweep`], which
//! the owner runs every [`SWEEP_EVERY`], so the state does not grow with
//! the number of clients ever seen.
//!
//! The limits know nothing of HTTP: a refusal is a [`Limited`], which the
//! gateway answers as a tool error or a JSON-RPC error and `nexo serve`
//! as 429 with `Retry-After` ([`crate::guard`]): an [`Exceeded`] limit,
//! or, when the shared store does not answer and refuses what it cannot
//! count, an [`Unchecked`] one.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use globset::{Glob, GlobMatcher};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::Value;

/// How often keys whose bucket is full again are dropped.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A rate as written: `N/s`, `N/min` or `N/h`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    pub count: NonZeroU32,
    pub per: Duration,
    /// As the settings wrote it, for messages.
    pub written: String,
}

impl Rate {
    /// Reads `N/s`, `N/sec`, `N/second`, `N/m`, `N/min`, `N/minute`, `N/h`,
    /// `N/hour`.
    pub fn parse(written: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{written}` is not a rate: write `N/s`, `N/min` or `N/h` with N a whole \
                 number above 0, as in `60/min`"
            )
        };
        let (count, unit) = written.split_once('/').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let count = NonZeroU32::new(count).ok_or_else(bad)?;
        let per = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        Ok(Self {
            count,
            per,
            written: written.trim().to_owned(),
        })
    }

    fn quota(&self, burst: Option<NonZeroU32>) -> Quota {
        Quota::with_period(self.interval())
            // Under a nanosecond between requests: as fast as governor goes.
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(burst.unwrap_or(self.count))
    }

    /// The time between two requests.
    fn interval(&self) -> Duration {
        self.per / self.count.get()
    }
}

/// What the `rateLimits` object says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitSettings {
    pub per_identity: Option<Rate>,
    /// Tool patterns (`server__tool`, globs) in the file's order.
    pub per_tool: Vec<(String, Rate)>,
    pub burst: Option<NonZeroU32>,
}

impl LimitSettings {
    /// Reads the `rateLimits` object; the error says what to write.
    pub fn read(value: &Value) -> Result<Self, String> {
        let Value::Object(object) = value else {
            return Err("`rateLimits` is not an object".to_owned());
        };
        let mut settings = Self::default();
        for (key, value) in object {
            match key.as_str() {
                "perIdentity" => {
                    let written = value
                        .as_str()
                        .ok_or("`rateLimits.perIdentity` is not a string such as \"60/min\"")?;
                    settings.per_identity = Some(Rate::parse(written)?);
                }
                "perTool" => {
                    let Value::Object(tools) = value else {
                        return Err(
                            "`rateLimits.perTool` is not an object of tool patterns and \
                                    rates"
                                .to_owned(),
                        );
                    };
                    for (pattern, rate) in tools {
                        Glob::new(pattern).map_err(|error| {
                            format!("`rateLimits.perTool` pattern `{pattern}`: {error}")
                        })?;
                        let written = rate.as_str().ok_or_else(|| {
                            format!(
                                "`rateLimits.perTool.{pattern}` is not a string such as \"10/s\""
                            )
                        })?;
                        settings
                            .per_tool
                            .push((pattern.clone(), Rate::parse(written)?));
                    }
                }
                "burst" => {
                    let burst = value
                        .as_u64()
                        .and_then(|burst| u32::try_from(burst).ok())
                        .and_then(NonZeroU32::new)
                        .ok_or("`rateLimits.burst` is not a whole number above 0")?;
                    settings.burst = Some(burst);
                }
                other => {
                    return Err(format!(
                        "`rateLimits` has no field `{other}`: it takes `perIdentity`, `perTool` \
                         and `burst`"
                    ));
                }
            }
        }
        Ok(settings)
    }
}

impl LimitSettings {
    /// The limits of `nexo serve`'s flags: `--rate-limit RATE` per
    /// caller, `--tool-rate-limit TOOL=RATE` (repeated) per tool,
    /// `--rate-burst N`.
    pub fn from_flags(
        per_caller: Option<&str>,
        per_tool: &[String],
        burst: Option<NonZeroU32>,
    ) -> Result<Self, String> {
        let mut settings = Self {
            per_identity: per_caller.map(Rate::parse).transpose()?,
            per_tool: Vec::new(),
            burst,
        };
        for written in per_tool {
            let Some((pattern, rate)) = written.split_once('=') else {
                return Err(format!(
                    "`--tool-rate-limit {written}` is not TOOL=RATE, as in `encode=5/s`"
                ));
            };
            let pattern = pattern.trim();
            Glob::new(pattern)
                .map_err(|error| format!("`--tool-rate-limit` pattern `{pattern}`: {error}"))?;
            settings
                .per_tool
                .push((pattern.to_owned(), Rate::parse(rate)?));
        }
        Ok(settings)
    }
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Identity,
    Tool,
}

impl Scope {
    /// The limit's name in the settings and in the audit log's `rule`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Identity => "rateLimits.perIdentity",
            Scope::Tool => "rateLimits.perTool",
        }
    }
}

/// A request a limit refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limited {
    Exceeded(Exceeded),
    Unchecked(Unchecked),
}

/// A request whose limit could not be checked, because the shared store
/// did not answer and refuses what it cannot count (the gateway's Redis
/// with `whenDown: refuse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    pub scope: Scope,
}

impl Unchecked {
    /// The rule the audit log names.
    pub const RULE: &str = "redis.whenDown";
    /// When the client may try again.
    pub const RETRY_AFTER: Duration = Duration::from_secs(1);

    /// The sentence a person reads (it does not say where Redis is).
    pub fn message(&self) -> String {
        format!(
            "refused by the gateway ({}): the store its rate limits are kept in does not \
             answer, and it refuses what it cannot count; retry in a few seconds",
            self.scope.name()
        )
    }
}

/// A request past a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exceeded {
    /// Who refused it, for messages: `the gateway`, `the server`.
    pub by: &'static str,
    pub scope: Scope,
    /// The rate as written (`60/min`).
    pub rate: String,
    /// Whose bucket: the identity's key or the tool's federated name.
    pub key: String,
    /// When the next request would be let through.
    pub retry_after: Duration,
}

impl Exceeded {
    /// The sentence a person reads.
    pub fn message(&self) -> String {
        let whose = match self.scope {
            Scope::Identity => format!("the limit of {} for `{}`", self.rate, self.key),
            Scope::Tool => format!("the limit of {} on the tool `{}`", self.rate, self.key),
        };
        format!(
            "rate limited by {} ({}): {whose} is used up; retry in {:.1} s",
            self.by,
            self.scope.name(),
            self.retry_after.as_secs_f64().max(0.1)
        )
    }
}

/// What a shared store answered for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// Let through.
    Through,
    /// Past the limit: the next request is let through after this.
    Wait(Duration),
    /// The store did not answer (the store has logged and counted it);
    /// `refuse` says whether the request is refused or let through.
    Down { refuse: bool },
}

/// Buckets kept where every instance sees them (the gateway's Redis).
pub trait SharedBuckets: Send + Sync {
    /// Takes one request from `bucket`, a GCRA of emission interval
    /// `interval` and tolerance `tolerance` (governor's `t` and `tau`).
    fn gcra<'a>(
        &'a self,
        bucket: &'a str,
        interval: Duration,
        tolerance: Duration,
    ) -> BoxFuture<'a, Shared>;
}

/// Where a limit's buckets are.
enum Buckets {
    Local(DefaultKeyedRateLimiter<String>),
    /// In a shared store, as the GCRA's emission interval and tolerance.
    Shared {
        store: Arc<dyn SharedBuckets>,
        interval: Duration,
        tolerance: Duration,
    },
}

struct Limiter {
    rate: Rate,
    by: &'static str,
    buckets: Buckets,
}

impl Limiter {
    fn new(
        rate: Rate,
        burst: Option<NonZeroU32>,
        by: &'static str,
        shared: Option<&Arc<dyn SharedBuckets>>,
    ) -> Self {
        let buckets = match shared {
            None => Buckets::Local(RateLimiter::dashmap(rate.quota(burst))),
            Some(store) => {
                let interval = rate.interval().max(Duration::from_nanos(1));
                let burst = burst.unwrap_or(rate.count).get();
                Buckets::Shared {
                    store: store.clone(),
                    interval,
                    tolerance: interval.saturating_mul(burst - 1),
                }
            }
        };
        Self { rate, by, buckets }
    }

    async fn check(&self, scope: Scope, key: &str) -> Result<(), Limited> {
        let retry_after = match &self.buckets {
            Buckets::Local(limiter) => {
                let key = key.to_owned();
                match limiter.check_key(&key) {
                    Ok(()) => return Ok(()),
                    Err(not_until) => not_until.wait_time_from(DefaultClock::default().now()),
                }
            }
            Buckets::Shared {
                store,
                interval,
                tolerance,
            } => {
                let bucket = match scope {
                    Scope::Identity => format!("identity:{key}"),
                    Scope::Tool => format!("tool:{key}"),
                };
                match store.gcra(&bucket, *interval, *tolerance).await {
                    Shared::Through | Shared::Down { refuse: false } => return Ok(()),
                    Shared::Wait(wait) => wait,
                    Shared::Down { refuse: true } => {
                        return Err(Limited::Unchecked(Unchecked { scope }));
                    }
                }
            }
        };
        Err(Limited::Exceeded(Exceeded {
            by: self.by,
            scope,
            rate: self.rate.written.clone(),
            key: key.to_owned(),
            retry_after,
        }))
    }

    fn sweep(&self) {
        if let Buckets::Local(limiter) = &self.buckets {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// How many keys are held in this process.
    fn keys(&self) -> usize {
        match &self.buckets {
            Buckets::Local(limiter) => limiter.len(),
            Buckets::Shared { .. } => 0,
        }
    }
}

/// The limits in force, with their buckets.
pub struct Limits {
    per_identity: Option<Limiter>,
    per_tool: Vec<(GlobMatcher, Limiter)>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Limits")
            .field(
                "per_identity",
                &self.per_identity.as_ref().map(|limiter| &limiter.rate),
            )
            .field("per_tool", &self.per_tool.len())
            .finish()
    }
}

impl Limits {
    /// The limits `settings` set, their buckets in this process, or in
    /// the `shared` store when given; `by` names who refuses in messages
    /// (`the gateway`, `the server`).
    pub fn new(
        settings: &LimitSettings,
        by: &'static str,
        shared: Option<&Arc<dyn SharedBuckets>>,
    ) -> Self {
        let per_tool = settings
            .per_tool
            .iter()
            .filter_map(|(pattern, rate)| {
                // Checked when the settings were read.
                let glob = Glob::new(pattern).ok()?.compile_matcher();
                Some((glob, Limiter::new(rate.clone(), settings.burst, by, shared)))
            })
            .collect();
        Self {
            per_identity: settings
                .per_identity
                .clone()
                .map(|rate| Limiter::new(rate, settings.burst, by, shared)),
            per_tool,
        }
    }

    /// Whether any limit is configured.
    pub fn is_empty(&self) -> bool {
        self.per_identity.is_none() && self.per_tool.is_empty()
    }

    /// Takes one request of `caller` (on the tool `tool`, for a tool call)
    /// from its buckets, or says which limit it is past. The tool's limit
    /// is checked first, so that a call a busy tool refuses does not use
    /// up the caller's own limit.
    pub async fn check<K: LimitKey + ?Sized>(
        &self,
        caller: &K,
        tool: Option<&str>,
    ) -> Result<(), Limited> {
        if let Some(tool) = tool
            && let Some((_, limiter)) = self.per_tool.iter().find(|(glob, _)| glob.is_match(tool))
        {
            limiter.check(Scope::Tool, tool).await?;
        }
        if let Some(limiter) = &self.per_identity {
            limiter.check(Scope::Identity, &caller.limit_key()).await?;
        }
        Ok(())
    }

    /// Drops the keys whose bucket is full again.
    pub fn sweep(&self) {
        if let Some(limiter) = &self.per_identity {
            limiter.sweep();
        }
        for (_, limiter) in &self.per_tool {
            limiter.sweep();
        }
    }

    /// How many keys are held in this process, over every limit.
    pub fn keys(&self) -> usize {
        self.per_identity
            .iter()
            .chain(self.per_tool.iter().map(|(_, limiter)| limiter))
            .map(Limiter::keys)
            .sum()
    }
}

/// What a caller's requests are counted under ([`key_for`]).
pub trait LimitKey {
    fn limit_key(&self) -> String;
}

/// The key a caller's requests are counted under: its subject when
/// authentication gave one, else its address.
pub fn key_for(subject: Option<&str>, client: Option<IpAddr>) -> String {
    match (subject, client) {
        (Some(subject), _) => format!("subject:{subject}"),
        (None, Some(address)) => address.to_string(),
        (None, None) => "anonymous".to_owned(),
    }
}

/// A caller as `nexo serve` knows it: the subject its credential names,
/// and its address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub subject: Option<String>,
    pub client: Option<IpAddr>,
}

impl LimitKey for Caller {
    fn limit_key(&self) -> String {
        key_for(self.subject.as_deref(), self.client)
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    fn client(address: &str) -> Caller {
        Caller {
            client: Some(address.parse().unwrap()),
            ..Caller::default()
        }
    }

    fn limits(value: Value) -> Limits {
        Limits::new(&LimitSettings::read(&value).unwrap(), "the gateway", None)
    }

    fn exceeded(checked: Result<(), Limited>) -> Exceeded {
        match checked {
            Err(Limited::Exceeded(exceeded)) => exceeded,
            other => panic!("not exceeded: {other:?}"),
        }
    }

    #[test]
    fn rates_are_read_and_bad_ones_say_what_to_write() {
        let rate = Rate::parse("60/min").unwrap();
        assert_eq!(rate.count.get(), 60);
        assert_eq!(rate.per, Duration::from_secs(60));
        for bad in ["0/s", "ten/s", "5/day", "5"] {
            let error = Rate::parse(bad).unwrap_err();
            assert!(error.contains("write `N/s`"), "{error}");
        }
        let error = LimitSettings::read(&serde_json::json!({"perIdentiy": "1/s"})).unwrap_err();
        assert!(error.contains("`perIdentiy`"), "{error}");
    }

    #[tokio::test]
    async fn an_identity_past_its_limit_is_refused_and_another_is_not() {
        let limits = limits(serde_json::json!({"perIdentity": "3/min"}));
        let first = client("10.0.0.1");
        for _ in 0..3 {
            limits.check(&first, Some("utils__echo")).await.unwrap();
        }
        let exceeded = exceeded(limits.check(&first, Some("utils__echo")).await);
        assert_eq!(exceeded.scope, Scope::Identity);
        assert_eq!(exceeded.key, "10.0.0.1");
        assert!(exceeded.retry_after > Duration::from_secs(10));
        assert!(
            exceeded
                .message()
                .contains("the limit of 3/min for `10.0.0.1` is used up; retry in"),
            "{}",
            exceeded.message()
        );
        limits.check(&client("10.0.0.2"), None).await.unwrap();
        // A subject is counted apart from the address it comes from.
        let subject = Caller {
            subject: Some("alice".to_owned()),
            ..first
        };
        limits.check(&subject, None).await.unwrap();
    }

    #[tokio::test]
    async fn a_tool_limit_is_shared_by_callers_and_the_first_pattern_wins() {
        let limits = limits(serde_json::json!({
            "perTool": {"utils__calc": "1/min", "utils__*": "2/min"}
        }));
        limits
            .check(&client("10.0.0.1"), Some("utils__calc"))
            .await
            .unwrap();
        let exceeded = exceeded(limits.check(&client("10.0.0.2"), Some("utils__calc")).await);
        assert_eq!(exceeded.scope, Scope::Tool);
        assert_eq!(exceeded.key, "utils__calc");
        assert_eq!(exceeded.rate, "1/min");
        // Each matching tool has its own bucket.
        for _ in 0..2 {
            limits
                .check(&client("10.0.0.1"), Some("utils__echo"))
                .await
                .unwrap();
        }
        limits
            .check(&client("10.0.0.1"), Some("utils__time"))
            .await
            .unwrap();
        limits
            .check(&client("10.0.0.1"), Some("morse__echo"))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn burst_bounds_what_passes_at_once() {
        let limits = limits(serde_json::json!({"perIdentity": "100/min", "burst": 2}));
        let one = client("10.0.0.1");
        limits.check(&one, None).await.unwrap();
        limits.check(&one, None).await.unwrap();
        assert!(limits.check(&one, None).await.is_err());
    }

    #[tokio::test]
    async fn the_sweep_forgets_identities_whose_bucket_is_full_again() {
        let limits = limits(serde_json::json!({"perIdentity": "1000/s"}));
        for n in 0..50 {
            limits
                .check(&client(&format!("10.0.0.{n}")), None)
                .await
                .unwrap();
        }
        assert_eq!(limits.keys(), 50);
        std::thread::sleep(Duration::from_millis(20));
        limits.sweep();
        assert_eq!(limits.keys(), 0);
    }

    #[test]
    fn the_flags_make_the_same_settings_as_the_gateways_object() {
        let flags = LimitSettings::from_flags(
            Some("60/min"),
            &["morse=1/s".to_owned(), "files__*=10/s".to_owned()],
            NonZeroU32::new(5),
        )
        .unwrap();
        let object = LimitSettings::read(&serde_json::json!({
            "perIdentity": "60/min",
            "perTool": {"morse": "1/s", "files__*": "10/s"},
            "burst": 5,
        }))
        .unwrap();
        assert_eq!(flags.per_identity, object.per_identity);
        assert_eq!(flags.burst, object.burst);
        assert_eq!(flags.per_tool.len(), 2);
        let error = LimitSettings::from_flags(None, &["morse".to_owned()], None).unwrap_err();
        assert!(error.contains("TOOL=RATE"), "{error}");
    }
}
