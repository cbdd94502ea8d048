//! Rate limits: how many guarded requests (`tools/call`, `prompts/get`,
//! `resources/read`) one identity may make, and how many calls one tool
//! may take from everybody, each a GCRA (the governor crate's keyed
//! limiters) held in memory on this instance, or in Redis for every
//! instance when the `gateway` settings name one (crate::shared): same
//! algorithm, same refusals, the bucket of each key shared.
//!
//! The settings are the `rateLimits` object of the `gateway` settings:
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
//! and at most `burst` at once (N when no burst is given). An identity is
//! keyed by its token subject when it has one, else by the client's
//! address. A tool is matched by its federated name (`server__tool`,
//! globs allowed; the first pattern in the file's order that matches wins)
//! and each matching tool gets its own bucket, shared by every caller: it
//! protects the upstream. Keys whose bucket is full again are dropped by
//! [`Limits::sweep`], which the gateway runs every [`SWEEP_EVERY`], so the
//! state does not grow with the number of clients ever seen; in Redis a
//! key expires when its bucket is full again.
//!
//! The limits know nothing of HTTP: a refusal is a [`Limited`], answered
//! as a tool error or a JSON-RPC error (crate::refusal), not a 429: an
//! [`Exceeded`] limit, or, when Redis does not answer and `whenDown` is
//! `refuse`, an [`Unchecked`] one.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::Value;

use crate::policy::Identity;
use crate::shared::{Purpose, Redis, WhenDown};

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

/// A request whose limit could not be checked, because Redis did not
/// answer and `whenDown` is `refuse`.
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
            "rate limited by the gateway ({}): {whose} is used up; retry in {:.1} s",
            self.scope.name(),
            self.retry_after.as_secs_f64().max(0.1)
        )
    }
}

/// Where a limit's buckets are.
enum Buckets {
    Local(DefaultKeyedRateLimiter<String>),
    /// In Redis, as the GCRA's emission interval and tolerance (governor's
    /// `t` and `tau`).
    Shared {
        redis: Arc<Redis>,
        interval: Duration,
        tolerance: Duration,
    },
}

struct Limiter {
    rate: Rate,
    buckets: Buckets,
}

impl Limiter {
    fn new(rate: Rate, burst: Option<NonZeroU32>, shared: Option<&Arc<Redis>>) -> Self {
        let buckets = match shared {
            None => Buckets::Local(RateLimiter::dashmap(rate.quota(burst))),
            Some(redis) => {
                let interval = rate.interval().max(Duration::from_nanos(1));
                let burst = burst.unwrap_or(rate.count).get();
                Buckets::Shared {
                    redis: redis.clone(),
                    interval,
                    tolerance: interval.saturating_mul(burst - 1),
                }
            }
        };
        Self { rate, buckets }
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
                redis,
                interval,
                tolerance,
            } => {
                let bucket = match scope {
                    Scope::Identity => format!("identity:{key}"),
                    Scope::Tool => format!("tool:{key}"),
                };
                match redis.gcra(&bucket, *interval, *tolerance).await {
                    Ok(None) => return Ok(()),
                    Ok(Some(wait)) => wait,
                    Err(error) => {
                        redis.failed(Purpose::RateLimits, &error);
                        return match redis.when_down() {
                            WhenDown::Allow => Ok(()),
                            WhenDown::Refuse => Err(Limited::Unchecked(Unchecked { scope })),
                        };
                    }
                }
            }
        };
        Err(Limited::Exceeded(Exceeded {
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
    /// `shared` Redis when given.
    pub fn new(settings: &LimitSettings, shared: Option<&Arc<Redis>>) -> Self {
        let per_tool = settings
            .per_tool
            .iter()
            .filter_map(|(pattern, rate)| {
                // Checked when the settings were read.
                let glob = Glob::new(pattern).ok()?.compile_matcher();
                Some((glob, Limiter::new(rate.clone(), settings.burst, shared)))
            })
            .collect();
        Self {
            per_identity: settings
                .per_identity
                .clone()
                .map(|rate| Limiter::new(rate, settings.burst, shared)),
            per_tool,
        }
    }

    /// Whether any limit is configured.
    pub fn is_empty(&self) -> bool {
        self.per_identity.is_none() && self.per_tool.is_empty()
    }

    /// Takes one request of `identity` (on the tool `tool`, a federated
    /// `server__tool` name, for a tool call) from its buckets, or says
    /// which limit it is past. The tool's limit is checked first, so that
    /// a call a busy tool refuses does not use up the caller's own limit.
    pub async fn check(&self, identity: &Identity, tool: Option<&str>) -> Result<(), Limited> {
        if let Some(tool) = tool
            && let Some((_, limiter)) = self.per_tool.iter().find(|(glob, _)| glob.is_match(tool))
        {
            limiter.check(Scope::Tool, tool).await?;
        }
        if let Some(limiter) = &self.per_identity {
            limiter.check(Scope::Identity, &key_of(identity)).await?;
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

/// The key an identity's requests are counted under: its subject when
/// authentication gave one, else its address.
pub fn key_of(identity: &Identity) -> String {
    match (&identity.subject, identity.client) {
        (Some(subject), _) => format!("subject:{subject}"),
        (None, Some(address)) => address.to_string(),
        (None, None) => "anonymous".to_owned(),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    fn client(address: &str) -> Identity {
        Identity {
            client: Some(address.parse().unwrap()),
            ..Identity::default()
        }
    }

    fn limits(value: Value) -> Limits {
        Limits::new(&LimitSettings::read(&value).unwrap(), None)
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
        let subject = Identity {
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
}
