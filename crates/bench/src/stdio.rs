//! A server the generator starts: a child process spoken to over its
//! stdin and stdout, one JSON-RPC message a line, with a pipelined window
//! (many requests written before their answers come; answers matched by
//! id). The wire itself is nexo-client's [`nexo_client::raw`]; what is
//! bench's own is how the server's requests (`elicitation/create`,
//! `roots/list`, `ping`) are answered, at once so they never stall it:
//! from the scenario's answers (every step's, by method, since the answers
//! of a window of requests share one pipe), else "method not found"; and
//! the child's last stderr lines, kept to say why it ended. When the child
//! ends, every request waiting on it fails as a transport error.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexo_client::raw::{Observer, RawChild, WireId};
use serde_json::Value;

use crate::BenchError;
use crate::check::{ErrorClass, Failed};
use crate::http::Reply;

/// One child process.
pub struct StdioLink {
    raw: RawChild,
    next_id: std::sync::atomic::AtomicU64,
    pub pid: Option<u32>,
    bench: Arc<Bench>,
}

/// How many of the child's last stderr lines are kept.
const LAST_WORDS: usize = 5;

/// What bench does with what the child sends besides answers.
struct Bench {
    answers: Arc<serde_json::Map<String, Value>>,
    /// The last lines the child wrote to stderr.
    last_words: Mutex<VecDeque<String>>,
}

impl Observer for Bench {
    fn request(&self, request: &Value) -> Value {
        crate::answers::respond(request, Some(&self.answers))
    }

    fn stderr(&self, line: String) {
        if let Ok(mut kept) = self.last_words.lock() {
            if kept.len() == LAST_WORDS {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    }
}

fn ended() -> Failed {
    Failed::new(ErrorClass::Transport, "the server process has ended")
}

impl StdioLink {
    /// Starts `command` with `env` added to the environment.
    pub fn spawn(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
        answers: Arc<serde_json::Map<String, Value>>,
    ) -> Result<Self, BenchError> {
        if command.is_empty() {
            return Err(BenchError::usage("the `--stdio` command is empty", None));
        }
        let bench = Arc::new(Bench {
            answers,
            last_words: Mutex::default(),
        });
        let raw = RawChild::spawn(command, env, cwd, Arc::clone(&bench) as Arc<dyn Observer>)
            .map_err(|message| BenchError::Unreachable { message })?;
        Ok(Self {
            pid: raw.pid,
            raw,
            next_id: std::sync::atomic::AtomicU64::new(1),
            bench,
        })
    }

    /// The child's last lines on stderr, joined; `None` when it wrote none.
    pub fn last_words(&self) -> Option<String> {
        let kept = self.bench.last_words.lock().ok()?;
        (!kept.is_empty()).then(|| kept.iter().cloned().collect::<Vec<_>>().join(" / "))
    }

    /// Whether the child has closed its stdout (it has ended).
    pub fn has_ended(&self) -> bool {
        self.raw.has_ended()
    }

    pub fn next_id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes `message` (request `id`) and waits for its answer.
    pub async fn exchange(&self, message: &Value, id: u64) -> Result<Reply, Failed> {
        if self.raw.has_ended() {
            return Err(ended());
        }
        let answer = self.raw.expect(WireId::Number(id));
        if self.raw.has_ended() {
            self.forget(id);
            return Err(ended());
        }
        self.write(message).await?;
        match answer.await {
            Ok((message, at)) => Ok(Reply {
                message,
                first_event: Some(at),
            }),
            Err(_) => Err(ended()),
        }
    }

    /// Writes a notification.
    pub async fn notify(&self, message: &Value) -> Result<(), Failed> {
        self.write(message).await
    }

    async fn write(&self, message: &Value) -> Result<(), Failed> {
        self.raw.write(message).await.map_err(|error| {
            Failed::new(
                ErrorClass::Transport,
                format!("writing to the server: {error}"),
            )
        })
    }

    /// Forgets request `id` (after a timeout).
    pub fn forget(&self, id: u64) {
        self.raw.forget(&WireId::Number(id));
    }

    /// Ends the child: its stdin closed, then killed if it lingers.
    pub async fn stop(&self) {
        self.raw.stop(Duration::from_millis(500)).await;
    }
}
