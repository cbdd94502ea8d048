//! The doctor's steps for a command: whether its program can be found, and
//! how it starts: the time to its first byte on stdout and to its first
//! answer, what it wrote there that is not JSON-RPC (a banner, a log line),
//! the tail of its stderr, and its exit status if it ended.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Checklist, Status, Step};
use crate::ErrorKind;
use crate::raw::{Observer, RawChild, WireId};
use crate::secret::EnvVar;

/// How many of the child's lines of each kind are kept to show.
const KEPT_LINES: usize = 8;

/// How long a child is given to end, and an ended one's stderr to be read
/// to its end.
const LAST_WORDS: Duration = Duration::from_millis(200);

/// Runs the command steps; whether MCP can be tried over it.
pub(super) async fn check(
    command: &[String],
    env: &[EnvVar],
    cwd: Option<&Path>,
    startup: Duration,
    checklist: &mut Checklist<'_>,
) -> bool {
    let since = Instant::now();
    let Some(program) = command.first() else {
        checklist.add(Step::failed(
            "command",
            ErrorKind::Usage,
            "the command is empty",
            "give the server's command line: --stdio 'npx -y @modelcontextprotocol/server-everything'",
            since,
        ));
        checklist.skip(&["start"], "no command");
        return false;
    };
    match locate(program, cwd) {
        Ok(found) => {
            checklist.add(Step::passed(
                "command",
                format!("`{program}` is {}", found.display()),
                since,
            ));
        }
        Err(why) => {
            checklist.add(Step::failed(
                "command",
                ErrorKind::Unreachable,
                why,
                format!("install `{program}`, or give its full path; the PATH searched is this process's own"),
                since,
            ));
            checklist.skip(&["start"], "no program to run");
            return false;
        }
    }
    start(command, env, cwd, startup, checklist).await
}

/// Where `program` is: itself when it names a path, else the first
/// executable of that name on PATH.
fn locate(program: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
    if program.contains('/') {
        let path = match cwd {
            Some(cwd) if Path::new(program).is_relative() => cwd.join(program),
            _ => PathBuf::from(program),
        };
        return if is_executable(&path) {
            Ok(path)
        } else if path.exists() {
            Err(format!("`{program}` is not executable"))
        } else {
            Err(format!("`{program}` does not exist"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|directory| directory.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| format!("`{program}` is not on PATH"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// What a starting child wrote besides the answer waited for.
#[derive(Default)]
struct Heard {
    first_byte: Option<Instant>,
    stray: Vec<String>,
    stray_count: usize,
    notifications: Vec<String>,
    stderr: Vec<String>,
    stderr_ended: bool,
}

#[derive(Default)]
struct Listener(Mutex<Heard>);

impl Listener {
    fn heard(&self) -> std::sync::MutexGuard<'_, Heard> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stdout_line(&self) {
        let mut heard = self.heard();
        heard.first_byte.get_or_insert_with(Instant::now);
    }
}

impl Observer for Listener {
    fn request(&self, request: &Value) -> Value {
        self.stdout_line();
        // Nothing is offered to the server while it starts.
        json!({"jsonrpc": "2.0", "id": request.get("id").cloned().unwrap_or(Value::Null),
               "error": {"code": -32601, "message": "nexo doctor answers no requests"}})
    }

    fn notification(&self, message: Value) {
        self.stdout_line();
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let mut heard = self.heard();
        if heard.notifications.len() < KEPT_LINES {
            heard.notifications.push(method);
        }
    }

    fn stray(&self, line: &[u8]) {
        self.stdout_line();
        let mut heard = self.heard();
        heard.stray_count += 1;
        if heard.stray.len() < KEPT_LINES {
            let text: String = String::from_utf8_lossy(line).chars().take(160).collect();
            heard.stray.push(text);
        }
    }

    fn stderr(&self, line: String) {
        let mut heard = self.heard();
        heard.stderr.push(line.chars().take(240).collect());
        if heard.stderr.len() > KEPT_LINES {
            heard.stderr.remove(0);
        }
    }

    fn stderr_ended(&self) {
        self.heard().stderr_ended = true;
    }

    fn unexpected(&self, _answer: Value) {
        self.stdout_line();
    }
}

/// Starts the command once, sends `initialize` (every server of either
/// era answers it, with a result or an error) and waits up to `startup`
/// for the answer, watching what else the child writes.
async fn start(
    command: &[String],
    env: &[EnvVar],
    cwd: Option<&Path>,
    startup: Duration,
    checklist: &mut Checklist<'_>,
) -> bool {
    let since = Instant::now();
    let listener = Arc::new(Listener::default());
    let env: Vec<(String, String)> = env
        .iter()
        .map(|var| (var.key.clone(), var.value.expose().to_owned()))
        .collect();
    let child = match RawChild::spawn(command, &env, cwd, listener.clone()) {
        Ok(child) => child,
        Err(why) => {
            checklist.add(Step::failed(
                "start",
                ErrorKind::Unreachable,
                why,
                "check the command and its permissions",
                since,
            ));
            return false;
        }
    };
    let answer = child.expect(WireId::Number(0));
    let initialize = json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": crate::era::initialize_params(
            crate::era::REVISION_2025,
            &crate::era::client_info("nexo-doctor"),
            &json!({}),
        ),
    });
    let written = child.write(&initialize).await;
    // A child that ends drops the waiter at once: no need to wait longer.
    let answered_at = match written {
        Ok(()) => match tokio::time::timeout(startup, answer).await {
            Ok(Ok((_, at))) => Some(at),
            _ => None,
        },
        Err(_) => None,
    };
    let exited = if answered_at.is_none() {
        child.wait(LAST_WORDS).await
    } else {
        None
    };
    if exited.is_some() {
        // Its last words: stderr read to its end, which comes soon after.
        let deadline = Instant::now() + LAST_WORDS;
        while !listener.heard().stderr_ended && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    child.stop(Duration::from_millis(500)).await;
    let heard = std::mem::take(&mut *listener.heard());
    let first_byte = heard.first_byte.map(|at| {
        format!(
            "first byte on stdout after {}",
            super::shown_duration(at - since)
        )
    });
    let mut step = match answered_at {
        Some(at) => Step::passed(
            "start",
            format!(
                "answered `initialize` after {}",
                super::shown_duration(at - since)
            ),
            since,
        ),
        None => {
            let summary = match exited {
                Some(status) => format!("the server ended before it answered ({status})"),
                None if written.is_err() => {
                    "the server closed its stdin before reading a request".to_owned()
                }
                None => format!(
                    "no answer to `initialize` within the start-up allowance ({} s)",
                    startup.as_secs_f64()
                ),
            };
            let hint = match exited {
                Some(_) => "its stderr (below) says why; run the command by hand to see it whole",
                None => {
                    "a server that starts slowly (`npx -y` on an empty cache, `docker run`) needs a longer --startup-timeout; one that never answers may write to stdout what is not JSON-RPC, or wait for input of its own"
                }
            };
            Step::failed("start", ErrorKind::Unreachable, summary, hint, since)
        }
    };
    if let Some(first_byte) = first_byte {
        step = step.detail(first_byte);
    }
    if !heard.notifications.is_empty() {
        step = step.detail(format!(
            "notifications before its answer: {}",
            heard.notifications.join(", ")
        ));
    }
    if heard.stray_count > 0 {
        step = step.detail(format!(
            "{} line(s) on stdout that are not JSON-RPC (ignored):",
            heard.stray_count
        ));
        step.details
            .extend(heard.stray.iter().map(|line| format!("  stdout: {line}")));
        if step.status == Status::Passed {
            step.status = Status::Warning;
            step.hint = Some(
                "stdout is the protocol's channel: a server should log to stderr; nexo ignores such lines, some clients end the session on them"
                    .to_owned(),
            );
        }
    }
    if step.status == Status::Failed && !heard.stderr.is_empty() {
        step = step.detail("its stderr ended with:");
        step.details
            .extend(heard.stderr.iter().map(|line| format!("  stderr: {line}")));
    }
    let started = step.status != Status::Failed;
    checklist.add(step);
    started
}
