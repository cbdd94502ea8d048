//! A stdio server as a child process, spoken to over its stdin and stdout.
//!
//! rmcp's own child transport skips a line that is not JSON-RPC without a
//! word, so a server that prints its banner or its logs on stdout looked
//! merely slow. This transport keeps what it skipped ([`StrayOutput`]) so
//! that a failure can say why. Traced, it records each line it writes and
//! reads as the bytes that crossed the pipe, with the message rmcp built or
//! read from them (so that the tracer need not parse them again), and the
//! skipped lines as what they are (the trace's `invalid` kind).
//! The child runs in a process group of its
//! own, which is ended whole (an `npx` wrapper and the server it started):
//! on close, stdin is closed and the child gets a moment to exit, then
//! `SIGTERM`, then `SIGKILL`; dropping the transport kills the group at once.
//!
//! Its stderr is not read here: the caller takes it ([`ChildTransport::spawn`]
//! hands it back) and sends it to a log, never to the terminal.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use nexo_trace::{Direction, Envelope};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio_util::codec::{FramedRead, LinesCodec};

use crate::tap::TracedConnection;

/// The longest line read from a child's stdout (a message larger than this
/// ends the connection, as an unbounded line would hold all memory).
const MAX_LINE: usize = 64 * 1024 * 1024;
/// How long a child has to exit after its stdin closes, and again after
/// `SIGTERM`.
const EXIT_WAIT: Duration = Duration::from_millis(500);
/// How much of a stray line is kept to show.
const STRAY_SAMPLE: usize = 200;

/// Lines a child wrote on stdout that are not JSON-RPC messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct StrayOutput(Arc<Mutex<Stray>>);

#[derive(Debug, Default)]
struct Stray {
    count: usize,
    first: Option<String>,
}

impl StrayOutput {
    fn note(&self, line: &str) {
        if let Ok(mut stray) = self.0.lock() {
            stray.count += 1;
            if stray.first.is_none() {
                let mut sample: String = line.chars().take(STRAY_SAMPLE).collect();
                if sample.len() < line.len() {
                    sample.push('…');
                }
                stray.first = Some(sample);
            }
        }
    }

    /// How many lines were skipped, and the first of them.
    pub(crate) fn seen(&self) -> Option<(usize, String)> {
        let stray = self.0.lock().ok()?;
        Some((stray.count, stray.first.clone()?))
    }
}

/// rmcp's transport over a child's stdin and stdout.
pub(crate) struct ChildTransport {
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    stdout: FramedRead<ChildStdout, LinesCodec>,
    process: Option<tokio::process::Child>,
    stray: StrayOutput,
    /// Where each line written and read is traced.
    trace: Option<TracedConnection>,
}

impl ChildTransport {
    /// Starts `command` with piped stdio, in a process group of its own.
    pub(crate) fn spawn(
        mut command: tokio::process::Command,
        trace: Option<TracedConnection>,
    ) -> std::io::Result<(Self, ChildStderr, StrayOutput)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut process = command.spawn()?;
        let missing = || std::io::Error::other("the child's stdio was not piped");
        let stdin = process.stdin.take().ok_or_else(missing)?;
        let stdout = process.stdout.take().ok_or_else(missing)?;
        let stderr = process.stderr.take().ok_or_else(missing)?;
        let stray = StrayOutput::default();
        Ok((
            Self {
                stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
                stdout: FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE)),
                process: Some(process),
                stray: stray.clone(),
                trace,
            },
            stderr,
            stray,
        ))
    }

    /// Records a line written or read, when traced.
    fn trace(&self, direction: Direction, line: &[u8], envelope: Option<Envelope<'_>>) {
        if let Some((trace, session)) = &self.trace {
            trace.record_read(
                direction,
                line,
                envelope,
                Some(session),
                None,
                Instant::now(),
            );
        }
    }
}

/// Sends `signal` to the whole process group led by `pid`.
fn signal_group(pid: u32, signal: rustix::process::Signal) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if let Err(error) = rustix::process::kill_process_group(pid, signal) {
        tracing::debug!(%error, "signalling the child's process group");
    }
}

/// Ends a child: its stdin is already closed; waits, then `SIGTERM`, then `SIGKILL`.
async fn end(mut process: tokio::process::Child) {
    use rustix::process::Signal;
    if tokio::time::timeout(EXIT_WAIT, process.wait())
        .await
        .is_ok()
    {
        return;
    }
    if let Some(pid) = process.id() {
        signal_group(pid, Signal::TERM);
        if tokio::time::timeout(EXIT_WAIT, process.wait())
            .await
            .is_ok()
        {
            return;
        }
        signal_group(pid, Signal::KILL);
    }
    let _ = process.kill().await;
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        let line = serde_json::to_vec(&item).map(|mut line| {
            self.trace(Direction::Sent, &line, Envelope::of_client_message(&item));
            line.push(b'\n');
            line
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.stdout.next().await? {
                Ok(line) => line,
                Err(error) => {
                    tracing::debug!(%error, "reading the child's stdout");
                    return None;
                }
            };
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str(text) {
                Ok(message) => {
                    let envelope = Envelope::of_server_message(&message);
                    self.trace(Direction::Received, text.as_bytes(), envelope);
                    return Some(message);
                }
                Err(error) => {
                    tracing::debug!(%error, "the child wrote a line that is not JSON-RPC");
                    self.stray.note(&line);
                    self.trace(Direction::Received, line.as_bytes(), None);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stdin.lock().await.take();
        if let Some(process) = self.process.take() {
            end(process).await;
        }
        Ok(())
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        if let Some(pid) = self.process.as_ref().and_then(tokio::process::Child::id) {
            signal_group(pid, rustix::process::Signal::KILL);
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn shell(script: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[tokio::test]
    async fn stray_lines_are_kept_and_messages_pass() {
        let script = r#"echo 'Server started on stdio'; echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'; sleep 5"#;
        let (mut transport, _stderr, stray) = ChildTransport::spawn(shell(script), None).unwrap();
        let message = transport.receive().await;
        assert!(message.is_some());
        assert_eq!(
            stray.seen(),
            Some((1, "Server started on stdio".to_owned()))
        );
        transport.close().await.unwrap();
    }

    /// Traced, each line goes to the trace as it crossed the pipe: what
    /// was written as rmcp serialized it, what was read as the server wrote
    /// it (blanks and key order included), and a stray line as `invalid`.
    #[tokio::test]
    async fn the_lines_written_and_read_are_traced_as_they_crossed_the_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let tracer = nexo_trace::Tracer::open(&path, nexo_trace::TraceOptions::default()).unwrap();
        let trace = crate::tap::connection(Some(crate::tap::Traced {
            tracer: tracer.clone(),
            server: "sh".into(),
            transport: nexo_trace::transport::STDIO,
        }));
        let answer = r#"{"result": {}, "id": 7, "jsonrpc": "2.0"}"#;
        let script = format!("read request; echo 'hello'; echo '{answer}'; sleep 5");
        let (mut transport, _stderr, _) = ChildTransport::spawn(shell(&script), trace).unwrap();
        let request: TxJsonRpcMessage<RoleClient> =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        let sent = serde_json::to_string(&request).unwrap();
        transport.send(request).await.unwrap();
        assert!(transport.receive().await.is_some());
        transport.close().await.unwrap();
        tracer.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let seen: Vec<_> = lines
            .iter()
            .map(|line| {
                (
                    line["direction"].as_str(),
                    line["kind"].as_str(),
                    line["bytes"].as_u64(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (Some("out"), Some("request"), Some(sent.len() as u64)),
                (Some("in"), Some("invalid"), Some(5)),
                (Some("in"), Some("response"), Some(answer.len() as u64)),
            ]
        );
        assert_eq!(lines[2]["method"], "ping");
        assert!(text.contains(&format!(r#""message":{answer}}}"#)), "{text}");
        let session = &lines[0]["session"];
        assert!(lines.iter().all(|line| &line["session"] == session));
    }

    /// Whether a process is still running (a zombie waiting for its
    /// parent to reap it is not).
    fn running(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
    }

    #[tokio::test]
    async fn close_ends_the_whole_group_of_a_child_that_ignores_eof_and_sigterm() {
        use tokio::io::AsyncBufReadExt;
        let script = "trap '' TERM; sleep 30 & echo $! >&2; wait";
        let (mut transport, stderr, _) = ChildTransport::spawn(shell(script), None).unwrap();
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let grandchild = lines.next_line().await.unwrap().unwrap();
        assert!(running(&grandchild));
        transport.close().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!running(&grandchild), "the child's own child outlived it");
    }
}
