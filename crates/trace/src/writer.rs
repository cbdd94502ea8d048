//! The trace writer: a [`Tracer`] turns each [`Observed`] message into one
//! line (the crate documentation describes the format) and appends it.
//!
//! It is built to cost the traced path little. The envelope is read in one
//! borrowing parse; the message is copied into the line as it is, never
//! re-encoded; the line is built in a buffer reused by each thread, outside
//! any lock. Lines then go, under a mutex, into one 64 KiB buffer in front
//! of the file, a whole line per write, so lines of concurrent writers
//! never interleave (and the buffer, which spills whole lines, keeps that
//! true for several processes appending to one file). There is no fsync:
//! the buffer goes to the file when it fills, when a background thread
//! finds it holds anything (every [`FLUSH_EVERY`]), on [`Tracer::flush`],
//! and when the last clone of the tracer is dropped; a crash loses at most
//! the last tenth of a second. A mutex rather than a channel to a writer
//! task: no allocation per line for the queue, no async runtime needed,
//! and a writer that cannot keep up slows the traced path instead of
//! growing memory. A write error is logged once (`tracing::warn!`) and the
//! tracer goes on trying; it never panics and never fails the traced
//! exchange.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::envelope::{self, Envelope, Parsed};
use crate::pending::{Key, PendingTable};
use crate::record::{
    Direction, FORMAT_VERSION, HttpInfo, Kind, Observed, Side, is_false, is_lifecycle,
};
use crate::redact::{REDACTED, is_credential_header};

/// How often buffered lines are written to the file at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// The size of the buffer in front of the file.
const BUFFER: usize = 64 * 1024;
/// A thread's line buffer is given back when a line made it larger.
const KEEP_LINE_BUFFER: usize = 1024 * 1024;

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
    out: Mutex<BufWriter<Box<dyn Write + Send>>>,
    pending: Mutex<PendingTable>,
    /// Lines are buffered that the flushing thread has not written out.
    dirty: AtomicBool,
    /// A write error has been logged.
    warned: AtomicBool,
    forgotten: AtomicU64,
    clock: Clock,
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
        let writer: Box<dyn Write + Send> = Box::new(writer);
        let inner = Arc::new(Inner {
            options,
            out: Mutex::new(BufWriter::with_capacity(BUFFER, writer)),
            pending: Mutex::new(PendingTable::new()),
            dirty: AtomicBool::new(false),
            warned: AtomicBool::new(false),
            forgotten: AtomicU64::new(0),
            clock: Clock::start(),
        });
        start_flushing(Arc::downgrade(&inner));
        Tracer { inner }
    }

    /// Writes the line (or, for a batch, the lines) for one observed message.
    pub fn record(&self, observed: Observed<'_>) {
        self.record_at(observed, Instant::now());
    }

    /// Writes the line for a message observed at `now`, earlier than the
    /// line is written: an HTTP client's request, written once the status
    /// its POST got is known, keeps the time it was sent.
    pub fn record_at(&self, observed: Observed<'_>, now: Instant) {
        let time_us = self.inner.clock.micros_at(now);
        let Ok(text) = std::str::from_utf8(observed.message) else {
            self.write_invalid(
                &observed,
                time_us,
                &String::from_utf8_lossy(observed.message),
            );
            return;
        };
        match envelope::parse(text) {
            Parsed::One(envelope) => self.write(&observed, time_us, now, text, &envelope, false),
            Parsed::Batch(elements) => {
                for element in elements {
                    match envelope::parse(element.get()) {
                        Parsed::One(envelope) => {
                            self.write(&observed, time_us, now, element.get(), &envelope, true);
                        }
                        Parsed::Batch(_) | Parsed::Invalid => {
                            self.write_invalid(&observed, time_us, element.get());
                        }
                    }
                }
            }
            Parsed::Invalid => self.write_invalid(&observed, time_us, text),
        }
    }

    /// Writes buffered lines to the file.
    pub fn flush(&self) -> io::Result<()> {
        self.inner.dirty.store(false, Ordering::Relaxed);
        self.inner.lock_out().flush()
    }

    /// How many waiting requests were forgotten because too many were
    /// waiting at once ([`crate::pending::MAX_PENDING`]); their answers'
    /// lines have no `method` or `latency_us`.
    pub fn forgotten_requests(&self) -> u64 {
        self.inner.forgotten.load(Ordering::Relaxed)
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
        let kind = envelope.kind();
        if kind == Kind::Invalid {
            self.write_invalid(observed, time_us, text);
            return;
        }
        let id = envelope.id.map(|id| id.get().trim());
        let key = |direction: Direction, id| Key {
            side: observed.side,
            server: observed.server,
            session: observed.session,
            direction,
            id,
        };
        let mut method = envelope.method.as_deref().map(Cow::Borrowed);
        let mut latency_us = None;
        match (kind, id) {
            (Kind::Request, Some(id)) => {
                let forgotten = self.inner.lock_pending().insert(
                    key(observed.direction, id),
                    method.as_deref().unwrap_or_default(),
                    now,
                );
                if forgotten > 0 {
                    self.inner
                        .forgotten
                        .fetch_add(forgotten as u64, Ordering::Relaxed);
                }
            }
            (Kind::Response | Kind::Error, Some(id)) => {
                let answered = self
                    .inner
                    .lock_pending()
                    .take(key(observed.direction.reversed(), id));
                if let Some(request) = answered {
                    let waited = now.saturating_duration_since(request.started);
                    latency_us = Some(u64::try_from(waited.as_micros()).unwrap_or(u64::MAX));
                    method = Some(Cow::Owned(request.method.into_string()));
                }
            }
            _ => {}
        }
        let headers = observed.http.map(redacted);
        let line = Line {
            v: FORMAT_VERSION,
            time_us,
            server: observed.server,
            side: observed.side,
            direction: observed.direction,
            transport: observed.transport,
            session: observed.session,
            kind,
            lifecycle: method.as_deref().is_some_and(is_lifecycle),
            id: envelope.id,
            method: method.as_deref(),
            bytes: text.len() as u64,
            latency_us,
            error_code: envelope.error.code,
            error_message: envelope.error.message.as_deref(),
            tool_error: kind == Kind::Response && envelope.result.is_error,
            batch,
            http: HttpLine::of(observed.http, headers.as_ref()),
            message: None,
        };
        let message = (!self.inner.options.redact_messages).then_some(text);
        self.inner.append(&line, message);
    }

    /// The line of something that is no JSON-RPC message; its text, kept
    /// as a JSON string unless messages are redacted.
    fn write_invalid(&self, observed: &Observed<'_>, time_us: u64, text: &str) {
        let headers = observed.http.map(redacted);
        let line = Line {
            v: FORMAT_VERSION,
            time_us,
            server: observed.server,
            side: observed.side,
            direction: observed.direction,
            transport: observed.transport,
            session: observed.session,
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
            http: HttpLine::of(observed.http, headers.as_ref()),
            message: (!self.inner.options.redact_messages).then_some(text),
        };
        self.inner.append(&line, None);
    }
}

impl Inner {
    fn lock_out(&self) -> MutexGuard<'_, BufWriter<Box<dyn Write + Send>>> {
        // A panic while holding the lock leaves at worst a partial line in
        // the buffer; tracing goes on.
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_pending(&self) -> MutexGuard<'_, PendingTable> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Encodes `line`, with `message` (valid JSON) spliced in as its last
    /// field, and appends it.
    fn append(&self, line: &Line<'_>, message: Option<&str>) {
        thread_local! {
            static BUFFER: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(4096));
        }
        BUFFER.with(|buffer| match buffer.try_borrow_mut() {
            Ok(mut buffer) => {
                buffer.clear();
                self.encode_and_write(&mut buffer, line, message);
                if buffer.capacity() > KEEP_LINE_BUFFER {
                    *buffer = Vec::with_capacity(4096);
                }
            }
            Err(_) => self.encode_and_write(&mut Vec::new(), line, message),
        });
    }

    fn encode_and_write(&self, buffer: &mut Vec<u8>, line: &Line<'_>, message: Option<&str>) {
        if let Err(error) = serde_json::to_writer(&mut *buffer, line) {
            self.warn_once(&io::Error::other(error));
            return;
        }
        if let Some(message) = message {
            // The line ends with `}`; the message becomes its last field.
            buffer.pop();
            buffer.extend_from_slice(br#","message":"#);
            splice_one_line(buffer, message.trim());
            buffer.push(b'}');
        }
        buffer.push(b'\n');
        let written = self.lock_out().write_all(buffer);
        match written {
            Ok(()) => self.dirty.store(true, Ordering::Relaxed),
            Err(error) => self.warn_once(&error),
        }
    }

    fn warn_once(&self, error: &io::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(%error, "cannot write the trace; messages are being lost");
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let flushed = self.out.get_mut().map(|out| out.flush());
        if let Ok(Err(error)) = flushed {
            self.warn_once(&error);
        }
    }
}

/// Appends a valid JSON text on one line: a line break can only stand
/// between tokens in JSON (inside strings it is escaped), so each becomes
/// a blank.
fn splice_one_line(buffer: &mut Vec<u8>, message: &str) {
    // `str::contains(char)` searches with memchr: most messages have no
    // line break and cost one fast scan.
    if message.contains('\n') || message.contains('\r') {
        buffer.extend(message.bytes().map(|b| match b {
            b'\n' | b'\r' => b' ',
            other => other,
        }));
    } else {
        buffer.extend_from_slice(message.as_bytes());
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
                    && let Err(error) = inner.lock_out().flush()
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
        let since = now.saturating_duration_since(self.started).as_micros();
        self.epoch_us
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
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

/// A trace line as the writer encodes it: [`crate::TraceRecord`]'s fields
/// in its order, borrowed. `message` is set here only for an invalid
/// message (a JSON string); a valid one is spliced in as it is.
#[derive(Serialize)]
struct Line<'a> {
    v: u32,
    time_us: u64,
    server: &'a str,
    side: Side,
    direction: Direction,
    transport: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    kind: Kind,
    #[serde(skip_serializing_if = "is_false")]
    lifecycle: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_message: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    tool_error: bool,
    #[serde(skip_serializing_if = "is_false")]
    batch: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    http: Option<HttpLine<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

#[derive(Serialize)]
struct HttpLine<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    headers: &'a BTreeMap<Cow<'a, str>, Cow<'a, str>>,
}

impl<'a> HttpLine<'a> {
    /// The `http` part of a line: the exchange, with its headers as
    /// [`redacted`] gave them.
    fn of(
        http: Option<&'a HttpInfo>,
        headers: Option<&'a BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
    ) -> Option<Self> {
        http.zip(headers).map(|(http, headers)| Self {
            method: http.method.as_deref(),
            status: http.status,
            headers,
        })
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use crate::record::{TraceRecord, transport};

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

    /// What the writer writes is exactly a [`TraceRecord`], field for field.
    #[test]
    fn lines_read_back_as_records_unchanged() {
        let (tracer, shared) = tracer(TraceOptions::default());
        let headers = HttpInfo {
            status: Some(200),
            method: None,
            headers: vec![("content-type".into(), "text/event-stream".into())],
        };
        tracer.record(observed(IN, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#));
        tracer.record(Observed {
            http: Some(&headers),
            ..observed(
                OUT,
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"}}"#,
            )
        });
        tracer.record(observed(IN, "{oops"));
        tracer.flush().unwrap();
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        for line in text.lines() {
            let record: TraceRecord = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&record).unwrap(), line);
        }
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

    #[test]
    fn a_peer_that_never_answers_cannot_grow_the_table() {
        let tracer = Tracer::to_writer(io::sink(), TraceOptions::default());
        for n in 0..(crate::MAX_PENDING + 5000) {
            let message = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping"}}"#);
            tracer.record(observed(IN, &message));
        }
        assert!(tracer.inner.lock_pending().len() <= crate::MAX_PENDING);
        assert!(tracer.forgotten_requests() >= 5000);
    }
}
