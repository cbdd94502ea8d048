//! Raw JSON-RPC, for tools that must see the wire as it is rather than
//! through a session: `nexo bench` (a pipelined window of requests,
//! measured) and `nexo check` (every stray stdout line, every late answer,
//! observed). [`legacy`] is the same over the legacy HTTP+SSE transport.
//! A [`RawChild`] is the child with piped stdio,
//! one message a line: requests are written as given and their answers
//! matched back by id (so many can be in flight at once), and what else
//! comes (the server's own requests, notifications, lines that are not
//! JSON-RPC, stderr) goes to the user's [`Observer`].
//!
//! The reader's path costs one parse a line and one map look-up an answer:
//! numeric ids (what both tools send) are keyed without allocating, and
//! the time each line was read is kept for the measuring user.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

pub mod legacy;

/// A JSON-RPC id as a map key: numbers as they are, anything else (a
/// string, a fraction, null) by its JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WireId {
    Number(u64),
    Other(String),
}

impl WireId {
    pub fn of(id: &Value) -> WireId {
        match id.as_u64() {
            Some(number) => WireId::Number(number),
            None => WireId::Other(id.to_string()),
        }
    }
}

/// Why a raw exchange brought no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// No answer within the time limit.
    Timeout,
    /// The child ended (or the stream closed) before answering.
    Ended(String),
    /// An HTTP status other than a success, with the body's start.
    Http {
        status: u16,
        body: String,
        www_authenticate: Option<String>,
    },
    /// Anything else: a refused connection, an answer that is not JSON.
    Transport(String),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Timeout => f.write_str("no answer within the time limit"),
            LinkError::Ended(why) => write!(f, "the server ended: {why}"),
            LinkError::Http { status, body, .. } => write!(f, "HTTP {status}: {body}"),
            LinkError::Transport(why) => f.write_str(why),
        }
    }
}

/// An answer and when its line was read.
pub type Answer = (Value, Instant);

/// What the child sends besides answers, handed to the user as it comes.
/// Every method runs on the reader's task: keep them short.
pub trait Observer: Send + Sync + 'static {
    /// A request the server sent the client; returns the answer written
    /// back at once (so the server never stalls on it).
    fn request(&self, request: &Value) -> Value;
    /// A notification the server sent.
    fn notification(&self, _message: Value) {}
    /// A stdout line that is not a JSON-RPC message (newline removed).
    fn stray(&self, _line: &[u8]) {}
    /// A stderr line.
    fn stderr(&self, _line: String) {}
    /// Stderr is closed: every line of it was handed over.
    fn stderr_ended(&self) {}
    /// An answer nobody was waiting for (given up on, or never asked).
    fn unexpected(&self, _answer: Value) {}
}

type Pending = Arc<Mutex<HashMap<WireId, oneshot::Sender<Answer>>>>;
type SharedStdin = Arc<tokio::sync::Mutex<Option<ChildStdin>>>;

/// A child process spoken to one JSON-RPC message a line.
pub struct RawChild {
    stdin: SharedStdin,
    child: tokio::sync::Mutex<Option<Child>>,
    pending: Pending,
    ended: Arc<AtomicBool>,
    /// The child's process id, while it runs.
    pub pid: Option<u32>,
}

impl RawChild {
    /// Starts `command` (program and arguments) with `env` added, in `cwd`
    /// when given. Killed when dropped.
    pub fn spawn(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
        observer: Arc<dyn Observer>,
    ) -> Result<Self, String> {
        let Some((program, args)) = command.split_first() else {
            return Err("the `--stdio` command is empty".to_owned());
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
        let mut child = spawn
            .spawn()
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("`{program}` has no stdin, stdout or stderr"));
        };
        {
            let observer = Arc::clone(&observer);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    observer.stderr(line);
                }
                observer.stderr_ended();
            });
        }
        let pending: Pending = Arc::default();
        let ended = Arc::new(AtomicBool::new(false));
        let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        tokio::spawn(read_stdout(
            stdout,
            Arc::clone(&pending),
            Arc::clone(&ended),
            Arc::clone(&stdin),
            observer,
        ));
        Ok(Self {
            stdin,
            pid: child.id(),
            child: tokio::sync::Mutex::new(Some(child)),
            pending,
            ended,
        })
    }

    /// Registers a waiter for the answer to `id` (before the request is
    /// written, so a quick answer is not missed).
    pub fn expect(&self, id: WireId) -> oneshot::Receiver<Answer> {
        let (waiter, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, waiter);
        }
        answer
    }

    /// Stops waiting for `id`; whether it was still awaited.
    pub fn forget(&self, id: &WireId) -> bool {
        self.pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.remove(id))
            .is_some()
    }

    /// How many answers are awaited.
    pub fn awaited(&self) -> usize {
        self.pending
            .lock()
            .map(|pending| pending.len())
            .unwrap_or(0)
    }

    /// Writes `message` and a newline.
    pub async fn write(&self, message: &Value) -> std::io::Result<()> {
        write_line(&self.stdin, message).await
    }

    /// Whether the child has closed its stdout (it has ended, or will).
    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Closes the child's stdin (an MCP server's cue to exit).
    pub async fn close_stdin(&self) {
        if let Some(mut stdin) = self.stdin.lock().await.take() {
            let _ = stdin.shutdown().await;
        }
    }

    /// Waits up to `wait` for the child to exit; its status, or `None`
    /// when it has not (or was already reaped by [`RawChild::stop`]).
    pub async fn wait(&self, wait: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().await;
        let child = child.as_mut()?;
        tokio::time::timeout(wait, child.wait()).await.ok()?.ok()
    }

    /// Kills the child at once.
    pub async fn kill(&self) {
        if let Some(child) = self.child.lock().await.as_mut() {
            let _ = child.kill().await;
        }
    }

    /// Ends the child: stdin closed, then killed if it lingers `grace`.
    pub async fn stop(&self, grace: Duration) {
        let child = self.child.lock().await.take();
        if let Some(mut child) = child {
            self.close_stdin().await;
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
    }
}

async fn write_line(stdin: &SharedStdin, message: &Value) -> std::io::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    let mut stdin = stdin.lock().await;
    let Some(stdin) = stdin.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "stdin is closed",
        ));
    };
    stdin.write_all(line.as_bytes()).await?;
    stdin.flush().await
}

/// Reads the child's stdout to its end: answers go to their waiters, the
/// server's requests are answered on the spot, the rest to the observer.
/// Bytes, not text lines: a server writing invalid UTF-8 on stdout is
/// polluting it, not ending.
async fn read_stdout(
    stdout: ChildStdout,
    pending: Pending,
    ended: Arc<AtomicBool>,
    stdin: SharedStdin,
    observer: Arc<dyn Observer>,
) {
    let mut reader = BufReader::new(stdout);
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match reader.read_until(b'\n', &mut bytes).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let at = Instant::now();
        let line = trim_newline(&bytes);
        let message = serde_json::from_slice::<Value>(line)
            .ok()
            .filter(|message| message.get("jsonrpc").is_some());
        let Some(message) = message else {
            observer.stray(line);
            continue;
        };
        if let Some(answer) = dispatch(message, at, &pending, observer.as_ref()) {
            let _ = write_line(&stdin, &answer).await;
        }
    }
    ended.store(true, Ordering::SeqCst);
    if let Ok(mut pending) = pending.lock() {
        pending.clear();
    }
}

/// Where one message from the server goes: an answer to its waiter (or,
/// with none, to the observer as unexpected), a notification to the
/// observer, a request to the observer, whose answer is given back to be
/// sent to the server.
fn dispatch(
    message: Value,
    at: Instant,
    pending: &Pending,
    observer: &dyn Observer,
) -> Option<Value> {
    match (message.get("id"), message.get("method")) {
        (Some(_), Some(_)) => Some(observer.request(&message)),
        (Some(id), None) => {
            let id = WireId::of(id);
            let waiter = pending
                .lock()
                .ok()
                .and_then(|mut pending| pending.remove(&id));
            match waiter {
                Some(waiter) => {
                    let _ = waiter.send((message, at));
                }
                None => observer.unexpected(message),
            }
            None
        }
        (None, _) => {
            observer.notification(message);
            None
        }
    }
}

fn trim_newline(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    line
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Default)]
    struct Seen {
        stray: Mutex<Vec<String>>,
        notifications: Mutex<Vec<Value>>,
        unexpected: Mutex<Vec<Value>>,
    }

    impl Observer for Seen {
        fn request(&self, request: &Value) -> Value {
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {"answered": true}})
        }
        fn notification(&self, message: Value) {
            self.notifications.lock().unwrap().push(message);
        }
        fn stray(&self, line: &[u8]) {
            self.stray
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(line).into_owned());
        }
        fn unexpected(&self, answer: Value) {
            self.unexpected.lock().unwrap().push(answer);
        }
    }

    /// A shell server that prints a banner, answers our two requests in
    /// the reverse order, sends a notification, a request of its own, an
    /// answer to an id nobody asked, and echoes back (as id 3) our answer to
    /// its request.
    #[tokio::test]
    async fn answers_are_matched_by_id_and_the_rest_observed() {
        let script = r#"
echo 'starting up'
read first; read second
echo '{"jsonrpc":"2.0","id":2,"result":{"n":2}}'
echo '{"jsonrpc":"2.0","id":"x","result":{}}'
echo '{"jsonrpc":"2.0","method":"notifications/message","params":{}}'
echo '{"jsonrpc":"2.0","id":1,"result":{"n":1}}'
echo '{"jsonrpc":"2.0","id":"s1","method":"roots/list"}'
read answer
echo "$answer" | sed 's/"id":"s1"/"id":3/'
"#;
        let seen = Arc::new(Seen::default());
        let child = RawChild::spawn(
            &["sh".to_owned(), "-c".to_owned(), script.to_owned()],
            &[],
            None,
            Arc::clone(&seen) as Arc<dyn Observer>,
        )
        .unwrap();
        let first = child.expect(WireId::of(&json!(1)));
        let second = child.expect(WireId::of(&json!(2)));
        let third = child.expect(WireId::of(&json!(3)));
        assert_eq!(child.awaited(), 3);
        child
            .write(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .await
            .unwrap();
        child
            .write(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            .await
            .unwrap();
        assert_eq!(first.await.unwrap().0["result"]["n"], 1);
        assert_eq!(second.await.unwrap().0["result"]["n"], 2);
        // Our observer's answer to the server's request went back to it.
        assert_eq!(third.await.unwrap().0["result"]["answered"], true);
        child.stop(Duration::from_secs(5)).await;
        assert_eq!(*seen.stray.lock().unwrap(), vec!["starting up"]);
        assert_eq!(seen.notifications.lock().unwrap().len(), 1);
        assert_eq!(seen.unexpected.lock().unwrap()[0]["id"], "x");
        assert!(!child.forget(&WireId::of(&json!(1))));
    }
}
