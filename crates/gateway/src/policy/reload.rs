//! A policy that follows its file: readers take the compiled policy in
//! force without a lock (arc-swap); a reload compiles the new file aside
//! and swaps it in whole, so a request is decided by one policy from start
//! to end. A file that does not compile leaves the old policy in force and
//! the error is reported. Changes are found by polling the file's contents
//! (its SHA-256), which works on every file system and through the
//! symbolic-link swaps of Kubernetes config maps, where change
//! notifications do not.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use nexo_hint::Hinted;
use sha2::{Digest, Sha256};

use super::Policy;
use crate::error::PolicyError;

/// The policy in force and the file it comes from.
#[derive(Debug)]
pub struct PolicyHandle {
    path: PathBuf,
    current: ArcSwap<Policy>,
}

/// What a reload did.
#[derive(Debug)]
pub enum Reload {
    /// The file has not changed since the policy in force was compiled.
    Unchanged,
    /// The new file is in force.
    Reloaded,
    /// The new file does not compile (or cannot be read); the policy in
    /// force stays.
    Kept(PolicyError),
}

impl PolicyHandle {
    /// Loads the policy at `path`; fails when it does not compile.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let policy = Policy::load(path)?;
        Ok(Self {
            path: path.to_owned(),
            current: ArcSwap::from_pointee(policy),
        })
    }

    /// The policy in force, to decide one request with.
    pub fn current(&self) -> Arc<Policy> {
        self.current.load_full()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Compiles the file again if its contents changed, and swaps it in.
    pub fn reload(&self) -> Reload {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(source) => {
                return Reload::Kept(PolicyError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if digest == self.current.load().digest() {
            return Reload::Unchanged;
        }
        match Policy::parse(&self.path, &text) {
            Ok(policy) => {
                self.current.store(Arc::new(policy));
                Reload::Reloaded
            }
            Err(error) => Reload::Kept(error),
        }
    }

    /// Checks the file every `every` on the tokio runtime, for as long as
    /// the handle lives elsewhere; reloads and failures are logged (a
    /// failure once per broken version of the file).
    pub fn watch(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let handle = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last_error: Option<String> = None;
            loop {
                ticks.tick().await;
                let Some(handle) = handle.upgrade() else {
                    return;
                };
                match handle.reload() {
                    Reload::Unchanged => {}
                    Reload::Reloaded => {
                        last_error = None;
                        tracing::info!(path = %handle.path.display(), "policy reloaded");
                    }
                    Reload::Kept(error) => {
                        let message = error.to_string();
                        if last_error.as_ref() != Some(&message) {
                            tracing::warn!(
                                "the policy in force is kept: {message}; hint: {}",
                                error.hint().map(|hint| hint.terminal()).unwrap_or_default()
                            );
                            last_error = Some(message);
                        }
                    }
                }
            }
        })
    }
}
