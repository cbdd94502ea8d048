//! A server the generator starts: a child process spoken to over its
//! stdin and stdout, one JSON-RPC message a line, with a pipelined window
//! (many requests written before their answers come; answers matched by
//! id). Requests the server sends the client (`elicitation/create`,
//! `roots/list`, `ping`) are answered at once so they never stall it: from
//! the scenario's answers (every step's, by method, since the answers of a
//! window of requests share one pipe), else "method not found". When the child ends, every
//! request waiting on it fails as a transport error.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

use crate::BenchError;
use crate::check::{ErrorClass, Failed};
use crate::http::Reply;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<(Value, Instant)>>>>;

/// One child process.
pub struct StdioLink {
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    pending: Pending,
    ended: Arc<AtomicBool>,
    next_id: AtomicU64,
    child: Mutex<Option<Child>>,
    pub pid: Option<u32>,
    /// The last lines the child wrote to stderr.
    last_words: Arc<Mutex<VecDeque<String>>>,
}

/// How many of the child's last stderr lines are kept.
const LAST_WORDS: usize = 5;

impl StdioLink {
    /// Starts `command` with `env` added to the environment.
    pub fn spawn(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
        answers: Arc<serde_json::Map<String, Value>>,
    ) -> Result<Self, BenchError> {
        let Some((program, args)) = command.split_first() else {
            return Err(BenchError::usage("the `--stdio` command is empty", None));
        };
        let mut spawn = Command::new(program);
        spawn
            .args(args)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = cwd {
            spawn.current_dir(cwd);
        }
        let mut child = spawn.spawn().map_err(|error| BenchError::Unreachable {
            message: format!("cannot start `{program}`: {error}"),
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(BenchError::Unreachable {
                message: format!("`{program}` has no stdin or stdout"),
            });
        };
        let last_words: Arc<Mutex<VecDeque<String>>> = Arc::default();
        if let Some(stderr) = child.stderr.take() {
            let kept = Arc::clone(&last_words);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut kept) = kept.lock() {
                        if kept.len() == LAST_WORDS {
                            kept.pop_front();
                        }
                        kept.push_back(line);
                    }
                }
            });
        }
        let pending: Pending = Arc::default();
        let ended = Arc::new(AtomicBool::new(false));
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        tokio::spawn(read_answers(
            stdout,
            Arc::clone(&pending),
            Arc::clone(&ended),
            Arc::clone(&stdin),
            answers,
        ));
        Ok(Self {
            stdin,
            pending,
            ended,
            next_id: AtomicU64::new(1),
            pid: child.id(),
            child: Mutex::new(Some(child)),
            last_words,
        })
    }

    /// The child's last lines on stderr, joined; `None` when it wrote none.
    pub fn last_words(&self) -> Option<String> {
        let kept = self.last_words.lock().ok()?;
        (!kept.is_empty()).then(|| kept.iter().cloned().collect::<Vec<_>>().join(" / "))
    }

    /// Whether the child has closed its stdout (it has ended).
    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes `message` (request `id`) and waits for its answer.
    pub async fn exchange(&self, message: &Value, id: u64) -> Result<Reply, Failed> {
        if self.ended.load(Ordering::SeqCst) {
            return Err(Failed::new(
                ErrorClass::Transport,
                "the server process has ended",
            ));
        }
        let (waiter, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, waiter);
        }
        if self.ended.load(Ordering::SeqCst) {
            self.forget(id);
            return Err(Failed::new(
                ErrorClass::Transport,
                "the server process has ended",
            ));
        }
        self.write(message).await?;
        match answer.await {
            Ok((message, at)) => Ok(Reply {
                message,
                first_event: Some(at),
            }),
            Err(_) => Err(Failed::new(
                ErrorClass::Transport,
                "the server process has ended",
            )),
        }
    }

    /// Writes a notification.
    pub async fn notify(&self, message: &Value) -> Result<(), Failed> {
        self.write(message).await
    }

    async fn write(&self, message: &Value) -> Result<(), Failed> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line.as_bytes()).await.map_err(|error| {
            Failed::new(
                ErrorClass::Transport,
                format!("writing to the server: {error}"),
            )
        })
    }

    /// Forgets request `id` (after a timeout).
    pub fn forget(&self, id: u64) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&id);
        }
    }

    /// Ends the child: its stdin closed, then killed if it lingers.
    pub async fn stop(&self) {
        let child = self.child.lock().ok().and_then(|mut child| child.take());
        if let Some(mut child) = child {
            let _ = self.stdin.lock().await.shutdown().await;
            if tokio::time::timeout(std::time::Duration::from_millis(500), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

/// Reads the child's stdout to its end: answers go to their waiters, the
/// server's own requests are answered on the spot.
async fn read_answers(
    stdout: ChildStdout,
    pending: Pending,
    ended: Arc<AtomicBool>,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    answers: Arc<serde_json::Map<String, Value>>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let now = Instant::now();
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match message.get("id") {
            Some(_) if message.get("method").is_some() => {
                let answer = crate::answers::respond(&message, Some(&answers));
                let line = format!("{answer}\n");
                let _ = stdin.lock().await.write_all(line.as_bytes()).await;
            }
            Some(id) => {
                let waiter = id.as_u64().and_then(|id| pending.lock().ok()?.remove(&id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send((message, now));
                }
            }
            None => {}
        }
    }
    ended.store(true, Ordering::SeqCst);
    if let Ok(mut pending) = pending.lock() {
        pending.clear();
    }
}
