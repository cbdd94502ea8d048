//! The trace writer: a [`Tracer`] turns each [`Observed`] message into one
//! line (the crate documentation describes the format) and appends it.
//!
//! It is built to cost the traced path little. The envelope comes with the
//! message when the tap holds what rmcp parsed or built, and is otherwise
//! read in one borrowing parse, before any lock is taken; the message is
//! copied into the line as it is, never re-encoded. Under one mutex, the
//! line's answer is looked up among the waiting requests and the line is
//! encoded by hand ([`crate::line`]) straight into one 1 MiB buffer in
//! front of the file, its origin (server to session) copied in as it was
//! encoded for the connection's earlier lines ([`crate::origin`]): a few
//! hundred nanoseconds, the same lock a line needs anyway to reach the
//! file whole. Lines of concurrent writers never interleave, and the
//! buffer, which spills whole lines, keeps that true for several processes
//! appending to one file. There is no fsync: the buffer goes to the file
//! when it fills, when a background thread finds it holds anything (every
//! [`FLUSH_EVERY`]), on [`Tracer::flush`], and when the last clone of the
//! tracer is dropped; a crash loses at most the last tenth of a second. A
//! mutex rather than a channel to a writer task: no allocation per line
//! for the queue, no async runtime needed, and a writer that cannot keep up
//! slows the traced path instead of growing memory. A write error is
//! logged once (`tracing::warn!`) and the tracer goes on trying; it never
//! panics and never fails the traced exchange.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use crate::envelope::{self, Envelope, Method, Parsed};
use crate::line::{HttpLine, Line, Message};
use crate::origin::Origins;
use crate::pending::{Key, PendingTable};
use crate::record::{Direction, HttpInfo, Kind, Observed, is_lifecycle};
use crate::redact::{REDACTED, is_credential_header};

/// How often buffered lines are written to the file at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// The size of the buffer in front of the file. Large writes cost the
/// kernel less per byte: with 1 MiB rather than 64 KiB, writing a busy
/// server's trace costs it about half the system time (the page cache
/// takes them in large pages).
const BUFFER: usize = 1024 * 1024;
/// The buffer is given back when a long line made it larger than this.
const KEEP_BUFFER: usize = 4 * BUFFER;

/// How to trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceOptions {
    /// Leave the `message` out of every line (`--trace-redact`); error codes
    /// and messages, methods and ids are kept.
    pub redact_messages: bool,
}

/// Writes trace lines. Cheap to clone (the clones share one file, one
/// buffer and one table of waiting requests); `Send` and `Sync`.
#[derive(Clone)]
pub struct Tracer {
    inner: Arc<Inner>,
}

struct Inner {
    options: TraceOptions,
    state: Mutex<State>,
    /// Lines are buffered that the flushing thread has not written out.
    dirty: AtomicBool,
    /// A write error has been logged.
    warned: AtomicBool,
    /// Lines are being written: false for a tracer that is idle until
    /// [`Tracer::start`] or after [`Tracer::stop`], when recording a
    /// message costs one atomic load.
    recording: AtomicBool,
    /// The background flushing has been started: with the first line
    /// recorded, so that an idle tracer costs no thread and no buffer.
    flushing: Once,
    forgotten: AtomicU64,
    clock: Clock,
}

/// What the lock guards.
struct State {
    out: Box<dyn Write + Send>,
    /// Whole lines not written to `out` yet.
    buffer: Vec<u8>,
    pending: PendingTable,
    origins: Origins,
    /// The id of the line being written, as JSON text.
    id: Vec<u8>,
}

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Tracer {
    /// Opens `path` for appending (creating it) and traces into it.
    pub fn open(path: &Path, options: TraceOptions) -> io::Result<Tracer> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::to_writer(file, options))
    }

    /// Traces into any writer (a file, a pipe, a buffer in a test).
    pub fn to_writer(writer: impl Write + Send + 'static, options: TraceOptions) -> Tracer {
        Self::new(Box::new(writer), options, true)
    }

    /// A tracer that records nothing until it is [started](Self::start):
    /// given to connections that may be traced later (a chat's `/trace on`).
    pub fn idle(options: TraceOptions) -> Tracer {
        Self::new(Box::new(io::sink()), options, false)
    }

    fn new(out: Box<dyn Write + Send>, options: TraceOptions, recording: bool) -> Tracer {
        let inner = Arc::new(Inner {
            options,
            state: Mutex::new(State {
                out,
                buffer: Vec::new(),
                pending: PendingTable::new(),
                origins: Origins::default(),
                id: Vec::new(),
            }),
            dirty: AtomicBool::new(false),
            warned: AtomicBool::new(false),
            recording: AtomicBool::new(recording),
            flushing: Once::new(),
            forgotten: AtomicU64::new(0),
            clock: Clock::start(),
        });
        let tracer = Tracer { inner };
        if recording {
            tracer.get_ready();
        }
        tracer
    }

    /// The buffer in front of the file, and the thread that writes it out
    /// (once, the first time lines are to be recorded).
    fn get_ready(&self) {
        self.inner.flushing.call_once(|| {
            self.inner.lock().buffer.reserve(BUFFER);
            start_flushing(Arc::downgrade(&self.inner));
        });
    }

    /// Writes the line (or, for a batch, the lines) for one observed message.
    pub fn record(&self, observed: Observed<'_>) {
        self.record_at(observed, Instant::now());
    }

    /// Writes the line for a message observed at `now`, earlier than the
    /// line is written: an HTTP client's request, written once the status
    /// its POST got is known, keeps the time it was sent.
    pub fn record_at(&self, observed: Observed<'_>, now: Instant) {
        if !self.is_recording() {
            return;
        }
        let time_us = self.inner.clock.micros_at(now);
        let inner = &self.inner;
        let Ok(text) = std::str::from_utf8(observed.message) else {
            let text = String::from_utf8_lossy(observed.message);
            inner.write_invalid(&observed, time_us, &text);
            return;
        };
        if let Some(envelope) = &observed.envelope {
            inner.write(&observed, time_us, now, text, envelope, false);
            return;
        }
        match envelope::parse(text) {
            Parsed::One(raw) => inner.write(&observed, time_us, now, text, &raw.envelope(), false),
            Parsed::Batch(elements) => {
                for element in elements {
                    match envelope::parse(element.get()) {
                        Parsed::One(raw) => {
                            let envelope = raw.envelope();
                            inner.write(&observed, time_us, now, element.get(), &envelope, true);
                        }
                        Parsed::Batch(_) | Parsed::Invalid => {
                            inner.write_invalid(&observed, time_us, element.get());
                        }
                    }
                }
            }
            Parsed::Invalid => inner.write_invalid(&observed, time_us, text),
        }
    }

    /// Whether lines are being written (a tap that must serialize a
    /// message to trace it asks first).
    pub fn is_recording(&self) -> bool {
        self.inner.recording.load(Ordering::Relaxed)
    }

    /// Starts writing lines to `path` (appended, created if need be), in
    /// place of wherever they went before, which is flushed first.
    /// Requests seen before are forgotten: their answers' lines have no
    /// latency.
    pub fn start(&self, path: &Path) -> io::Result<()> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        self.get_ready();
        let mut state = self.inner.lock();
        let flushed = state.flush();
        state.out = Box::new(file);
        state.pending = PendingTable::new();
        self.inner.recording.store(true, Ordering::Relaxed);
        flushed
    }

    /// Stops writing lines: what is buffered is written out and the file
    /// closed; messages are no longer recorded until the next
    /// [`start`](Self::start).
    pub fn stop(&self) -> io::Result<()> {
        self.inner.recording.store(false, Ordering::Relaxed);
        let mut state = self.inner.lock();
        let flushed = state.flush();
        state.out = Box::new(io::sink());
        flushed
    }

    /// Writes buffered lines to the file.
    pub fn flush(&self) -> io::Result<()> {
        self.inner.dirty.store(false, Ordering::Relaxed);
        self.inner.lock().flush()
    }

    /// How many waiting requests were forgotten because too many were
    /// waiting at once ([`crate::pending::MAX_PENDING`]); their answers'
    /// lines have no `method` or `latency_us`.
    pub fn forgotten_requests(&self) -> u64 {
        self.inner.forgotten.load(Ordering::Relaxed)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves at worst a partial line in
        // the buffer; tracing goes on.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(
        &self,
        observed: &Observed<'_>,
        time_us: u64,
        now: Instant,
        text: &str,
        envelope: &Envelope<'_>,
        batch: bool,
    ) {
        let kind = envelope.kind;
        if kind == Kind::Invalid {
            self.write_invalid(observed, time_us, text);
            return;
        }
        let headers = observed.http.map(redacted);
        let mut state = self.lock();
        let State {
            buffer,
            pending,
            origins,
            id,
            ..
        } = &mut *state;
        let origin = origins.of(observed);
        id.clear();
        if let Some(given) = &envelope.id {
            given.encode(id);
        }
        let id = envelope.id.map(|_| id.as_slice());
        let key = |direction: Direction, id| Key {
            connection: origin.connection,
            outside: origin.outside,
            direction,
            id,
        };
        // The method an answer answers, kept by the table of waiting requests.
        let answered: Cow<'static, str>;
        let mut method = envelope.method;
        let mut latency_us = None;
        match (kind, id) {
            (Kind::Request, Some(id)) => {
                let method = envelope.method.map_or(Cow::Borrowed(""), Method::to_kept);
                let forgotten = pending.insert(key(observed.direction, id), method, now);
                if forgotten > 0 {
                    self.forgotten
                        .fetch_add(forgotten as u64, Ordering::Relaxed);
                }
            }
            (Kind::Response | Kind::Error, Some(id)) => {
                if let Some(request) = pending.take(key(observed.direction.reversed(), id)) {
                    let waited = now.saturating_duration_since(request.started);
                    latency_us = Some(u64::try_from(waited.as_micros()).unwrap_or(u64::MAX));
                    answered = request.method;
                    method = Some(Method::kept(&answered));
                }
            }
            _ => {}
        }
        let line = Line {
            time_us,
            origin: &origin.encoded,
            kind,
            lifecycle: method.is_some_and(|method| is_lifecycle(method.as_str())),
            id,
            method,
            bytes: text.len() as u64,
            latency_us,
            error_code: envelope.error_code,
            error_message: envelope.error_message,
            tool_error: envelope.tool_error,
            batch,
            http: http_line(observed.http, headers.as_ref()),
            message: (!self.options.redact_messages).then_some(Message::Json(text)),
        };
        line.encode(buffer);
        buffer.push(b'\n');
        self.buffered(&mut state);
    }

    /// The line of something that is no JSON-RPC message; its text, kept
    /// as a JSON string unless messages are redacted.
    fn write_invalid(&self, observed: &Observed<'_>, time_us: u64, text: &str) {
        let headers = observed.http.map(redacted);
        let mut state = self.lock();
        let State {
            buffer, origins, ..
        } = &mut *state;
        let line = Line {
            time_us,
            origin: &origins.of(observed).encoded,
            kind: Kind::Invalid,
            lifecycle: false,
            id: None,
            method: None,
            bytes: text.len() as u64,
            latency_us: None,
            error_code: None,
            error_message: None,
            tool_error: false,
            batch: false,
            http: http_line(observed.http, headers.as_ref()),
            message: (!self.options.redact_messages).then_some(Message::Text(text)),
        };
        line.encode(buffer);
        buffer.push(b'\n');
        self.buffered(&mut state);
    }

    /// After a line was added to the buffer: writes the buffer out once it
    /// is full.
    fn buffered(&self, state: &mut State) {
        self.dirty.store(true, Ordering::Relaxed);
        if state.buffer.len() >= BUFFER
            && let Err(error) = state.spill()
        {
            self.warn_once(&error);
        }
    }

    fn warn_once(&self, error: &io::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(%error, "cannot write the trace; messages are being lost");
        }
    }
}

impl State {
    /// Writes the buffered lines to the file (lost if it cannot be written).
    fn spill(&mut self) -> io::Result<()> {
        let written = self.out.write_all(&self.buffer);
        self.buffer.clear();
        if self.buffer.capacity() > KEEP_BUFFER {
            self.buffer = Vec::with_capacity(BUFFER);
        }
        written
    }

    fn flush(&mut self) -> io::Result<()> {
        self.spill()?;
        self.out.flush()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let flushed = self.state.get_mut().map(State::flush);
        if let Ok(Err(error)) = flushed {
            self.warn_once(&error);
        }
    }
}

/// Writes out the buffer every [`FLUSH_EVERY`] while it holds lines, until
/// the tracer is gone.
fn start_flushing(inner: Weak<Inner>) {
    let started = std::thread::Builder::new()
        .name("nexo-trace-flush".into())
        .spawn(move || {
            loop {
                std::thread::sleep(FLUSH_EVERY);
                let Some(inner) = inner.upgrade() else { return };
                if inner.dirty.swap(false, Ordering::Relaxed)
                    && let Err(error) = inner.lock().flush()
                {
                    inner.warn_once(&error);
                }
            }
        });
    if let Err(error) = started {
        tracing::warn!(%error, "cannot start the trace's flushing thread; lines are written when the buffer fills");
    }
}

/// The time of a line: the wall clock read once, when the tracer starts,
/// and the monotonic clock after that. One clock read per message instead
/// of two, and times in a trace never go back when the wall clock is set;
/// over days they may drift from it by what the wall clock was corrected.
#[derive(Debug)]
struct Clock {
    epoch_us: u64,
    started: Instant,
}

impl Clock {
    fn start() -> Self {
        let started = Instant::now();
        let epoch_us = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
            });
        Self { epoch_us, started }
    }

    /// Microseconds since the Unix epoch at `now`.
    fn micros_at(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.started);
        self.epoch_us
            .saturating_add(since.as_secs().saturating_mul(1_000_000))
            .saturating_add(u64::from(since.subsec_micros()))
    }
}

/// The headers of `http` as a line holds them: lower-case names, credential
/// values redacted, repeated names joined.
fn redacted(http: &HttpInfo) -> BTreeMap<Cow<'_, str>, Cow<'_, str>> {
    let mut headers: BTreeMap<Cow<'_, str>, Cow<'_, str>> = BTreeMap::new();
    for (name, value) in &http.headers {
        let name: Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
        let value = if is_credential_header(&name) {
            REDACTED
        } else {
            value.as_str()
        };
        match headers.get_mut(&name) {
            Some(joined) => {
                let joined = joined.to_mut();
                joined.push_str(", ");
                joined.push_str(value);
            }
            None => {
                headers.insert(name, Cow::Borrowed(value));
            }
        }
    }
    headers
}

/// The `http` part of a line: the exchange, with its headers as
/// [`redacted`] gave them.
fn http_line<'a>(
    http: Option<&'a HttpInfo>,
    headers: Option<&'a BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
) -> Option<HttpLine<'a>> {
    http.zip(headers).map(|(http, headers)| HttpLine {
        method: http.method.as_deref(),
        status: http.status,
        headers,
        connection: http.connection,
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use crate::record::{Side, TraceRecord, transport};

    /// A writer whose bytes a test can read while the tracer holds it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn lines(&self) -> Vec<serde_json::Value> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        }
    }

    fn tracer(options: TraceOptions) -> (Tracer, Shared) {
        let shared = Shared::default();
        (Tracer::to_writer(shared.clone(), options), shared)
    }

    fn observed<'a>(direction: Direction, message: &'a str) -> Observed<'a> {
        Observed {
            server: "morse",
            transport: transport::STDIO,
            session: Some("c1"),
            side: Side::Server,
            direction,
            message: message.as_bytes(),
            http: None,
            envelope: None,
        }
    }

    const IN: Direction = Direction::Received;
    const OUT: Direction = Direction::Sent;

    #[test]
    fn records_are_derived_from_the_messages() {
        let (tracer, shared) = tracer(TraceOptions::default());
        let exchange = [
            (
                IN,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            ),
            (
                OUT,
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#,
            ),
            (
                IN,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
            (
                IN,
                r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"morse","arguments":{"texto":"sos"}}}"#,
            ),
            (
                OUT,
                r#"{"jsonrpc":"2.0","id":"c-1","result":{"content":[],"isError":true}}"#,
            ),
            (
                IN,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#,
            ),
            (
                OUT,
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool"}}"#,
            ),
            (OUT, r#"{"jsonrpc":"2.0","id":9,"result":{}}"#),
            (IN, "garbage\n"),
        ];
        for (direction, message) in exchange {
            tracer.record(observed(direction, message));
        }
        tracer.flush().unwrap();
        let lines = shared.lines();
        assert_eq!(lines.len(), exchange.len());
        for (line, (direction, message)) in lines.iter().zip(exchange) {
            assert_eq!(line["v"], 1);
            assert_eq!(line["server"], "morse");
            assert_eq!(line["side"], "server");
            assert_eq!(line["transport"], "stdio");
            assert_eq!(line["session"], "c1");
            assert_eq!(line["direction"], direction.as_str());
            assert_eq!(line["bytes"], message.len());
            assert!(line["time_us"].as_u64().unwrap() > 1_600_000_000_000_000);
        }
        let field = |index: usize, name: &str| lines[index][name].clone();
        let kinds: Vec<_> = lines.iter().map(|line| line["kind"].clone()).collect();
        assert_eq!(
            kinds,
            [
                "request",
                "response",
                "notification",
                "request",
                "response",
                "request",
                "error",
                "response",
                "invalid"
            ]
        );
        // The handshake is lifecycle, answer included; the rest is not.
        let marked: Vec<bool> = lines
            .iter()
            .map(|line| line.get("lifecycle") == Some(&true.into()))
            .collect();
        assert_eq!(
            marked,
            [true, true, true, false, false, false, false, false, false]
        );
        // Answers name the request's method and carry a latency; ids as given.
        assert_eq!(field(1, "method"), "initialize");
        assert_eq!(field(4, "method"), "tools/call");
        assert_eq!(field(4, "id"), "c-1");
        assert_eq!(field(6, "id"), 2);
        for index in [1, 4, 6] {
            assert!(lines[index]["latency_us"].is_u64(), "{}", lines[index]);
        }
        assert_eq!(field(4, "tool_error"), true);
        assert_eq!(field(6, "error_code"), -32602);
        assert_eq!(field(6, "error_message"), "unknown tool");
        // An answer to nothing seen has neither method nor latency.
        assert!(lines[7].get("method").is_none() && lines[7].get("latency_us").is_none());
        // The whole message is kept; an invalid one as its text.
        assert_eq!(field(3, "message")["params"]["arguments"]["texto"], "sos");
        assert_eq!(field(8, "message"), "garbage\n");
    }

    #[test]
    fn answers_are_matched_per_server_and_session() {
        let (tracer, shared) = tracer(TraceOptions::default());
        let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let on = |server, session, direction, message| Observed {
            server,
            session,
            ..observed(direction, message)
        };
        tracer.record(on("a", Some("s1"), IN, request));
        tracer.record(on("b", Some("s1"), IN, ping));
        tracer.record(on("a", Some("s2"), IN, ping));
        tracer.record(on("b", Some("s1"), OUT, answer));
        tracer.record(on("a", Some("s1"), OUT, answer));
        tracer.record(on("a", Some("s2"), OUT, answer));
        // The answer must go the other way: a request received is not
        // answered by a response received.
        tracer.record(on("a", None, IN, request));
        tracer.record(on("a", None, IN, answer));
        tracer.flush().unwrap();
        let methods: Vec<_> = shared
            .lines()
            .iter()
            .map(|line| line["method"].as_str().unwrap_or("-").to_owned())
            .collect();
        assert_eq!(
            methods,
            [
                "tools/list",
                "ping",
                "ping",
                "ping",
                "tools/list",
                "ping",
                "tools/list",
                "-"
            ]
        );
    }

    #[test]
    fn redaction_keeps_what_the_analysis_needs() {
        let (tracer, shared) = tracer(TraceOptions {
            redact_messages: true,
        });
        let mut headers = http::HeaderMap::new();
        headers.insert("authorization", "Bearer tok-9f3a".parse().unwrap());
        headers.insert("cookie", "sid=tok-9f3a".parse().unwrap());
        headers.insert("x-api-key", "tok-9f3a".parse().unwrap());
        headers.insert("mcp-session-id", "abc".parse().unwrap());
        headers.insert("content-type", "application/json".parse().unwrap());
        let request = HttpInfo::request(&http::Method::POST, &headers);
        assert!(!format!("{request:?}").contains("tok-9f3a"));
        let by_hand = HttpInfo {
            connection: None,
            status: Some(401),
            method: None,
            headers: vec![
                ("Set-Cookie".into(), "tok-9f3a".into()),
                ("X-Auth-Token".into(), "tok-9f3a".into()),
                ("Vary".into(), "a".into()),
                ("vary".into(), "b".into()),
            ],
        };
        assert!(!format!("{by_hand:?}").contains("tok-9f3a"));
        let message = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"password":"tok-9f3a"}}}"#;
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"denied"}}"#;
        tracer.record(Observed {
            http: Some(&request),
            transport: transport::STREAMABLE_HTTP,
            ..observed(IN, message)
        });
        tracer.record(Observed {
            http: Some(&by_hand),
            transport: transport::STREAMABLE_HTTP,
            ..observed(OUT, error)
        });
        tracer.record(observed(IN, "not json tok-9f3a"));
        tracer.flush().unwrap();
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("tok-9f3a"), "{text}");
        let lines = shared.lines();
        for line in &lines {
            assert!(line.get("message").is_none(), "{line}");
        }
        let http = &lines[0]["http"];
        assert_eq!(http["method"], "POST");
        assert_eq!(http["headers"]["authorization"], REDACTED);
        assert_eq!(http["headers"]["cookie"], REDACTED);
        assert_eq!(http["headers"]["x-api-key"], REDACTED);
        assert_eq!(http["headers"]["mcp-session-id"], "abc");
        assert_eq!(http["headers"]["content-type"], "application/json");
        assert_eq!(lines[0]["method"], "tools/call");
        let http = &lines[1]["http"];
        assert_eq!(http["status"], 401);
        assert_eq!(http["headers"]["set-cookie"], REDACTED);
        assert_eq!(http["headers"]["x-auth-token"], REDACTED);
        assert_eq!(http["headers"]["vary"], "a, b");
        assert_eq!(lines[1]["error_code"], -32001);
        assert_eq!(lines[1]["error_message"], "denied");
        assert_eq!(lines[2]["kind"], "invalid");
    }

    #[test]
    fn batches_get_a_line_per_element_and_bad_bytes_one_invalid_line() {
        let (tracer, shared) = tracer(TraceOptions::default());
        tracer.record(observed(
            IN,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},7]"#,
        ));
        tracer.record(Observed {
            message: b"{\"a\":\"\xff\"}",
            ..observed(IN, "")
        });
        tracer.flush().unwrap();
        let lines = shared.lines();
        let kinds: Vec<_> = lines.iter().map(|line| line["kind"].clone()).collect();
        assert_eq!(kinds, ["request", "notification", "invalid", "invalid"]);
        for line in &lines[..2] {
            assert_eq!(line["batch"], true);
        }
        assert_eq!(
            lines[0]["bytes"],
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.len()
        );
        assert_eq!(lines[0]["message"]["method"], "ping");
        assert_eq!(lines[3]["message"], "{\"a\":\"\u{fffd}\"}");
    }

    /// A message pretty-printed by its sender still takes one line.
    #[test]
    fn a_message_with_line_breaks_stays_on_one_line() {
        let (tracer, shared) = tracer(TraceOptions::default());
        let message =
            "{\r\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\"text\": \"a\\nb\"}\n}\n";
        tracer.record(observed(OUT, message));
        tracer.flush().unwrap();
        let lines = shared.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["message"]["result"]["text"], "a\nb");
        assert_eq!(lines[0]["bytes"], message.len());
    }

    /// What the writer writes is exactly a [`TraceRecord`], field for field,
    /// byte for byte as serde_json writes one: strings that need escaping
    /// included.
    #[test]
    fn lines_read_back_as_records_unchanged() {
        let (tracer, shared) = tracer(TraceOptions::default());
        let headers = HttpInfo {
            connection: Some(crate::record::ConnectionCost {
                reused: false,
                dns_us: Some(120),
                connect_us: Some(340),
                tls_us: Some(910),
            }),
            status: Some(200),
            method: None,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("x-note".into(), "a \"quoted\" \\ value\u{7}".into()),
            ],
        };
        let request = HttpInfo::request(&http::Method::POST, &http::HeaderMap::new());
        tracer.record(observed(IN, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#));
        tracer.record(Observed {
            http: Some(&headers),
            ..observed(
                OUT,
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"}}"#,
            )
        });
        tracer.record(observed(IN, "{oops"));
        tracer.record(Observed {
            server: "mor\"se\\ é\u{1}",
            session: Some("tab\there"),
            http: Some(&request),
            ..observed(
                IN,
                r#"{"jsonrpc":"2.0","id":"a\"b","method":"x/\"y\"","params":{}}"#,
            )
        });
        tracer.record(Observed {
            server: "mor\"se\\ é\u{1}",
            session: Some("tab\there"),
            ..observed(
                OUT,
                r#"{"jsonrpc":"2.0","id":"a\"b","error":{"code":-32000,"message":"line\nbreak \"q\" \u0001"}}"#,
            )
        });
        tracer.record(observed(IN, "not \"json\"\u{2}\t\u{1f}\\ 日本"));
        tracer.flush().unwrap();
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 6);
        for line in text.lines() {
            let record: TraceRecord = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&record).unwrap(), line);
        }
    }

    /// A tap that hands over the messages rmcp parsed or built gets the
    /// very lines the writer makes by reading the bytes itself.
    #[test]
    fn envelopes_from_rmcp_give_the_lines_the_bytes_give() {
        use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
        let received = [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"a\nb"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"vendor/thing","params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            r#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"s-2","error":{"code":-1,"message":"declined"}}"#,
        ];
        let sent = [
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":"c-1","result":{"content":[{"type":"text","text":"a\nb"}],"isError":false}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":true}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no \"vendor/thing\""}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}"#,
            r#"{"jsonrpc":"2.0","id":"s-1","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"s-2","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}"#,
        ];
        let (read, read_lines) = tracer(TraceOptions::default());
        let (given, given_lines) = tracer(TraceOptions::default());
        // In the order of an exchange: each request before its answer.
        let exchange = [
            (IN, received[0]),
            (OUT, sent[0]),
            (IN, received[1]),
            (IN, received[2]),
            (IN, received[3]),
            (IN, received[4]),
            (OUT, sent[1]),
            (OUT, sent[2]),
            (IN, received[6]),
            (OUT, sent[3]),
            (IN, received[5]),
            (OUT, sent[4]),
            (OUT, sent[5]),
            (OUT, sent[6]),
            (OUT, sent[7]),
            (OUT, sent[8]),
            (IN, received[7]),
            (IN, received[8]),
        ];
        for (direction, message) in exchange {
            read.record(observed(direction, message));
            let client: ClientJsonRpcMessage;
            let server: ServerJsonRpcMessage;
            let envelope = if direction == IN {
                client = serde_json::from_str(message).unwrap();
                Envelope::of_client_message(&client)
            } else {
                server = serde_json::from_str(message).unwrap();
                Envelope::of_server_message(&server)
            };
            assert!(envelope.is_some(), "{message}");
            given.record(Observed {
                envelope,
                ..observed(direction, message)
            });
        }
        read.flush().unwrap();
        given.flush().unwrap();
        // Alike but for the times.
        let timeless = |shared: &Shared| -> Vec<String> {
            let mut lines = shared.lines();
            for line in &mut lines {
                line["time_us"] = 0.into();
                if line.get("latency_us").is_some() {
                    line["latency_us"] = 0.into();
                }
            }
            lines.iter().map(ToString::to_string).collect()
        };
        let lines = timeless(&read_lines);
        assert_eq!(lines.len(), exchange.len());
        assert_eq!(timeless(&given_lines), lines);
        // And the lines say what the messages are.
        let field = |index: usize, name: &str| read_lines.lines()[index][name].clone();
        assert_eq!(field(6, "method"), "tools/call");
        assert_eq!(field(7, "tool_error"), true);
        assert_eq!(field(9, "method"), "vendor/thing");
        assert_eq!(field(15, "method"), "sampling/createMessage");
        assert_eq!(field(17, "method"), "sampling/createMessage");
        assert_eq!(field(17, "error_message"), "declined");
    }

    /// Many threads tracing at once write whole lines, none lost.
    #[test]
    fn concurrent_writers_produce_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let tracer = Tracer::open(&path, TraceOptions::default()).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|thread| {
                let tracer = tracer.clone();
                std::thread::spawn(move || {
                    for n in 0..500 {
                        let padding = "x".repeat((n * 37 + thread * 101) % 3000);
                        let message = format!(
                            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"{padding}"}}}}"#
                        );
                        let session = format!("t{thread}");
                        tracer.record(Observed {
                            session: Some(&session),
                            ..observed(IN, &message)
                        });
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        drop(tracer);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut per_session = std::collections::HashMap::new();
        for line in text.lines() {
            let record: TraceRecord = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("a broken line ({error}): {line:.200}"));
            *per_session.entry(record.session.unwrap()).or_insert(0) += 1;
        }
        assert_eq!(per_session.len(), 8);
        assert!(
            per_session.values().all(|&count| count == 500),
            "{per_session:?}"
        );
    }

    /// More connections at once than the writer keeps origins for: each
    /// line still says where it was seen, and each answer finds its request.
    #[test]
    fn many_connections_interleaved_are_told_apart() {
        let (tracer, shared) = tracer(TraceOptions::default());
        let sessions: Vec<String> = (0..20).map(|n| format!("s{n}")).collect();
        for (n, session) in sessions.iter().enumerate() {
            let request = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m{n}"}}"#);
            tracer.record(Observed {
                session: Some(session),
                ..observed(IN, &request)
            });
        }
        for session in sessions.iter().rev() {
            tracer.record(Observed {
                session: Some(session),
                ..observed(OUT, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
            });
        }
        tracer.flush().unwrap();
        let lines = shared.lines();
        for (n, answer) in lines[20..].iter().rev().enumerate() {
            assert_eq!(answer["session"], format!("s{n}"));
            assert_eq!(answer["direction"], "out");
            assert_eq!(answer["method"], format!("m{n}"), "{answer}");
        }
    }

    /// Lines reach the file without a flush or a drop, within moments.
    #[test]
    fn buffered_lines_are_written_out_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let tracer = Tracer::open(&path, TraceOptions::default()).unwrap();
        tracer.record(observed(IN, r#"{"jsonrpc":"2.0","method":"x"}"#));
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&path).unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the line never reached the file");
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(tracer);
    }

    /// An idle tracer writes nothing until started; started, its lines go
    /// to the file it was given; stopped, nothing more, and what it had
    /// buffered is in the file.
    #[test]
    fn an_idle_tracer_records_between_start_and_stop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let tracer = Tracer::idle(TraceOptions::default());
        assert!(!tracer.is_recording());
        tracer.record(observed(
            OUT,
            r#"{"jsonrpc":"2.0","id":1,"method":"before"}"#,
        ));
        tracer.start(&path).unwrap();
        assert!(tracer.is_recording());
        tracer.record(observed(
            OUT,
            r#"{"jsonrpc":"2.0","id":2,"method":"during"}"#,
        ));
        tracer.record(observed(IN, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        tracer.stop().unwrap();
        assert!(!tracer.is_recording());
        tracer.record(observed(
            OUT,
            r#"{"jsonrpc":"2.0","id":3,"method":"after"}"#,
        ));
        tracer.flush().unwrap();
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["method"], "during");
        // The request it answers was sent before tracing began.
        assert_eq!(lines[1]["kind"], "response");
        assert!(lines[1].get("latency_us").is_none());
        assert!(lines[1].get("method").is_none());
    }

    #[test]
    fn a_peer_that_never_answers_cannot_grow_the_table() {
        let tracer = Tracer::to_writer(io::sink(), TraceOptions::default());
        for n in 0..(crate::MAX_PENDING + 5000) {
            let message = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping"}}"#);
            tracer.record(observed(IN, &message));
        }
        assert!(tracer.inner.lock().pending.len() <= crate::MAX_PENDING);
        assert!(tracer.forgotten_requests() >= 5000);
    }
}
