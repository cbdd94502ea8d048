//! The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): a
//! server may answer `tools/call` with a task instead of the result, and
//! the session follows it to its end. It polls `tasks/get` at the interval
//! the server asks for (kept within [`MIN_POLL`] and [`MAX_POLL`];
//! [`DEFAULT_POLL`] when it says nothing); hands each status it reports
//! to the session's notice sink and to the caller's [`TaskObserver`];
//! answers the input a task asks for (`input_required`) through the client
//! handler, as the standalone request would be answered (a person's form
//! included), and sends it with `tasks/update`, each request once; and
//! maps its end: `completed` is the tool's result, while `failed`,
//! `cancelled` and a task that is gone (the server no longer knows it, or
//! its time to live passed) are errors that say so.
//!
//! A call given up before its task ended (dropped: a chat's turn
//! cancelled, a limit reached) sends `tasks/cancel`; the session waits for
//! those before it ends. [`crate::Session::follow_task`] takes up a task
//! whose id was kept, in a later process (`nexo chat --resume`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, CancelTaskParams, DetailedTask, ErrorCode, GetTaskParams, InputResponses, Task,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::handler::Notice;
use crate::{ClientError, Method, Session};

/// The shortest wait between two polls, whatever the server asks.
pub const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest wait between two polls, whatever the server asks.
pub const MAX_POLL: Duration = Duration::from_secs(30);
/// The wait between two polls when the server gives no interval.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// A task seen to start or change.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskUpdate {
    /// The id the server gave it.
    pub task: String,
    pub status: TaskStatus,
    /// What the server says about it now.
    pub message: Option<String>,
}

/// Told of each [`TaskUpdate`] of one call: who keeps the ids of tasks
/// under way (a chat saving them for `--resume`).
pub type TaskObserver = Arc<dyn Fn(&TaskUpdate) + Send + Sync>;

/// The wait before the next poll, from the server's `pollIntervalMs`.
pub fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// When `task`'s time to live ends, if it has one: its creation as the
/// server stamped it (else when it was first seen here) plus `ttlMs`.
fn expiry(task: &Task, first_seen: Instant) -> Option<Instant> {
    let ttl = Duration::from_millis(task.ttl_ms?);
    let created = task
        .created_at
        .parse::<jiff::Timestamp>()
        .ok()
        .and_then(|created| {
            let age = jiff::Timestamp::now().duration_since(created);
            Duration::try_from(age).ok()
        })
        .and_then(|age| Instant::now().checked_sub(age))
        .unwrap_or(first_seen);
    Some(created + ttl)
}

/// The `tasks/cancel` requests sent for calls given up, which the session
/// lets finish before it ends.
#[derive(Clone, Default)]
pub(crate) struct Cancels(Arc<Mutex<Vec<JoinHandle<()>>>>);

impl Cancels {
    fn push(&self, sent: JoinHandle<()>) {
        let mut sends = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        sends.retain(|sent| !sent.is_finished());
        sends.push(sent);
    }

    /// Waits for the cancellations under way, at most `limit`.
    pub(crate) async fn settle(&self, limit: Duration) {
        let sends: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        let _ = tokio::time::timeout(limit, futures::future::join_all(sends)).await;
    }
}

/// A task being followed: cancelled on its server if the call is given up
/// before the task ended.
struct Running {
    peer: Peer<RoleClient>,
    task: String,
    cancels: Cancels,
    limit: Duration,
    ended: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let params = CancelTaskParams::new(self.task.clone());
        let limit = self.limit;
        self.cancels.push(runtime.spawn(async move {
            match tokio::time::timeout(limit, peer.cancel_task(params)).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::debug!(%error, "cancelling a task"),
                Err(_) => tracing::debug!("cancelling a task: no answer in time"),
            }
        }));
    }
}

impl Session {
    /// Follows the task `task` of a call of `tool`, kept from an earlier
    /// call (another process's, even), to its end; `observer` is told of
    /// each change. Dropped before the task ended, it cancels it.
    pub async fn follow_task(
        &self,
        tool: &str,
        task: &str,
        observer: Option<&TaskObserver>,
    ) -> Result<CallToolResult, ClientError> {
        self.follow(tool, task, None, observer).await
    }

    /// Follows the task `id` of `tool` to its end: from `seed` (what the
    /// server answered the call with), or with a poll at once.
    pub(crate) async fn follow(
        &self,
        tool: &str,
        id: &str,
        seed: Option<Task>,
        observer: Option<&TaskObserver>,
    ) -> Result<CallToolResult, ClientError> {
        let mut running = Running {
            peer: self.service.peer().clone(),
            task: id.to_owned(),
            cancels: self.cancels.clone(),
            limit: self.timeout,
            ended: false,
        };
        let first_seen = Instant::now();
        let mut shown = None;
        let mut next_poll = Instant::now();
        let mut expires = None;
        if let Some(seed) = &seed {
            self.tell(observer, seed, &mut shown);
            next_poll += poll_interval(seed.poll_interval_ms);
            expires = expiry(seed, first_seen);
        }
        let lost = |detail: String| ClientError::TaskLost {
            tool: tool.to_owned(),
            task: id.to_owned(),
            detail,
        };
        let mut answered = BTreeSet::new();
        loop {
            // One last poll when the time to live ends, then no more.
            tokio::time::sleep_until(expires.map_or(next_poll, |at| next_poll.min(at))).await;
            let got = self
                .bounded(
                    Method::Task,
                    self.service.get_task(GetTaskParams::new(id.to_owned())),
                )
                .await;
            let DetailedTask { task, payload, .. } = match got {
                Ok(got) => got.task,
                // What the specification answers for a task not found.
                Err(ClientError::Rpc { code, message, .. })
                    if code == ErrorCode::INVALID_PARAMS.0 =>
                {
                    running.ended = true;
                    return Err(lost(format!("the server says: {message}")));
                }
                Err(error) => return Err(error),
            };
            self.tell(observer, &task, &mut shown);
            next_poll = Instant::now() + poll_interval(task.poll_interval_ms);
            expires = expiry(&task, first_seen);
            let expired = expires.is_some_and(|at| at <= Instant::now());
            match payload {
                TaskPayload::Completed { result } => {
                    running.ended = true;
                    return serde_json::from_value(Value::Object(result)).map_err(|error| {
                        ClientError::Protocol {
                            target: self.target.clone(),
                            detail: format!(
                                "the task `{id}` of `{tool}` completed with a result that is not \
                                 a tool's: {error}"
                            ),
                            hint: "the server breaks the tasks extension; tell its authors".into(),
                            stderr: Vec::new(),
                        }
                    });
                }
                TaskPayload::Failed { error } => {
                    running.ended = true;
                    let field = |name: &str| error.get(name);
                    return Err(ClientError::TaskFailed {
                        tool: tool.to_owned(),
                        task: id.to_owned(),
                        code: field("code")
                            .and_then(Value::as_i64)
                            .and_then(|code| i32::try_from(code).ok())
                            .unwrap_or(ErrorCode::INTERNAL_ERROR.0),
                        message: field("message")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .or(task.status_message)
                            .unwrap_or_else(|| "no details given".to_owned()),
                    }
                    .redacted(&self.secrets));
                }
                TaskPayload::Cancelled => {
                    running.ended = true;
                    return Err(ClientError::TaskCancelled {
                        tool: tool.to_owned(),
                        task: id.to_owned(),
                        detail: task
                            .status_message
                            .unwrap_or_else(|| "the server gave no reason".to_owned()),
                    }
                    .redacted(&self.secrets));
                }
                _ if expired => {
                    return Err(lost(
                        "its time to live passed before it finished".to_owned(),
                    ));
                }
                TaskPayload::InputRequired { input_requests } => {
                    let mut responses = InputResponses::new();
                    // One at a time: a person answers one form after another.
                    for (key, request) in input_requests {
                        if answered.contains(&key) {
                            continue;
                        }
                        let answer =
                            self.service
                                .service()
                                .answer(request)
                                .await
                                .map_err(|error| {
                                    self.service_error(Method::Task, ServiceError::McpError(error))
                                })?;
                        responses.insert(key.clone(), answer);
                        answered.insert(key);
                    }
                    if !responses.is_empty() {
                        let update = UpdateTaskParams::new(id.to_owned(), responses);
                        self.bounded(Method::Task, self.service.update_task(update))
                            .await?;
                    }
                }
                _ => {}
            }
        }
    }

    /// Tells the notice sink and `observer` of `task`, if it changed since
    /// it was last `shown`.
    fn tell(
        &self,
        observer: Option<&TaskObserver>,
        task: &Task,
        shown: &mut Option<(TaskStatus, Option<String>)>,
    ) {
        let now = (task.status, task.status_message.clone());
        if shown.as_ref() == Some(&now) {
            return;
        }
        *shown = Some(now);
        let update = TaskUpdate {
            task: task.task_id.clone(),
            status: task.status,
            message: task.status_message.clone(),
        };
        self.service.service().notify(Notice::Task {
            task: update.task.clone(),
            status: update.status,
            message: update.message.clone(),
        });
        if let Some(observer) = observer {
            observer(&update);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_intervals_are_kept_within_bounds() {
        assert_eq!(poll_interval(None), DEFAULT_POLL);
        assert_eq!(poll_interval(Some(0)), MIN_POLL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL);
    }

    #[test]
    fn a_tasks_time_to_live_runs_from_its_creation() {
        let first_seen = Instant::now();
        let mut task = Task::new("t", TaskStatus::Working, "not a time", "not a time");
        assert_eq!(expiry(&task, first_seen), None, "no ttl, no end");
        task.ttl_ms = Some(60_000);
        assert_eq!(
            expiry(&task, first_seen),
            Some(first_seen + Duration::from_secs(60)),
            "an unreadable creation time counts from when it was seen"
        );
        let an_hour_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(3600);
        task.created_at = an_hour_ago.to_string();
        let Some(at) = expiry(&task, first_seen) else {
            panic!("no expiry");
        };
        assert!(at < Instant::now(), "created an hour ago, a minute to live");
    }
}
