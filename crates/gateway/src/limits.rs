//! The gateway's rate limits: nexo-serve's ([`nexo_serve::limits`], the
//! one GCRA limiter `nexo serve` uses as well) configured by the
//! `rateLimits` object of the `gateway` settings, an identity keyed by its
//! token subject or else its address, a tool by its federated name
//! (`server__tool`), and the buckets in Redis for every instance when the
//! settings name one (crate::shared).

use std::sync::Arc;

pub use nexo_serve::limits::{
    Exceeded, LimitSettings, Limited, Rate, SWEEP_EVERY, Scope, Unchecked, key_for,
};
use nexo_serve::limits::{LimitKey, SharedBuckets};

use crate::policy::Identity;
use crate::shared::Redis;

impl LimitKey for Identity {
    fn limit_key(&self) -> String {
        key_for(self.subject.as_deref(), self.client)
    }
}

/// The limits in force, with their buckets.
#[derive(Debug)]
pub struct Limits(nexo_serve::limits::Limits);

impl Limits {
    /// The limits `settings` set, their buckets in this process, or in
    /// `shared` Redis when given.
    pub fn new(settings: &LimitSettings, shared: Option<&Arc<Redis>>) -> Self {
        let shared = shared.map(|redis| redis.clone() as Arc<dyn SharedBuckets>);
        Self(nexo_serve::limits::Limits::new(
            settings,
            "the gateway",
            shared.as_ref(),
        ))
    }

    /// Whether any limit is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes one request of `identity` (on the federated tool `tool`, for
    /// a tool call) from its buckets, or says which limit it is past.
    pub async fn check(&self, identity: &Identity, tool: Option<&str>) -> Result<(), Limited> {
        self.0.check(identity, tool).await
    }

    /// Drops the keys whose bucket is full again.
    pub fn sweep(&self) {
        self.0.sweep();
    }

    /// How many keys are held in this process, over every limit.
    pub fn keys(&self) -> usize {
        self.0.keys()
    }
}
