//! What a client sends, under a fuzzer (the targets in `fuzz/fuzz_targets`
//! call these; the committed corpora are replayed by this module's tests):
//!
//! - [`origin_and_host`]: the `Origin` and `Host` checks never admit what
//!   a ten-line reference, written from the rules alone, refuses, and never
//!   refuse what it admits. The first line of the input is the header's
//!   value, the others the `--allow-origin` (and `--allow-host`) values;
//!   with none, loopback only.
//! - [`inbound`]: one JSON-RPC message as it arrives (a stdio line, an HTTP
//!   body): malformed JSON is answered -32700 and valid JSON of the wrong
//!   shape -32600, each answer a well-formed response carrying the request's
//!   id when it can be read and `null` otherwise; the push scanner that
//!   finds that id gives the same answer however the bytes are split, and
//!   the id JSON itself holds; an `initialize` completed by leniency is
//!   still an object; and a message rmcp reads, in either direction and
//!   either era, is written back as JSON that reads as the same message,
//!   of the kind the input is and with its id, of its type and value.
//! - [`stdio_framing`]: a byte stream read by the stdio transport
//!   ([`LineTransport`]) gives the same messages and the same answers
//!   whether it arrives whole or cut anywhere (reads returning a few bytes,
//!   or none yet, and `receive` dropped whenever it waits, as rmcp's
//!   serving loop drops it); every line over the limit, and only such a
//!   line, is refused (-32600), with the request's id when the line holds
//!   one (found as it goes by, never buffered whole); no answer to a
//!   notification, at most one to any other line, and each with the id of
//!   a line as written (`"1"` is not `1`) or `null`.
//! - [`stdio_served`]: lines served by rmcp's serving loop over the stdio
//!   transport, either era (an `initialize` first, or stateless requests):
//!   no answer to a notification, at most one to a request, and each with
//!   the request's id, of its type and value (`"1"` is not `1`; `1.0` is
//!   `1`), as an independent reading of the lines finds them.
//! - [`standard_headers`]: a POST to the real HTTP application whose
//!   `Mcp-Method` or `Mcp-Name` header (2026-07-28), or
//!   `MCP-Protocol-Version`, disagrees with its body, as a reference reads
//!   both, is never served, and one refused as a
//!   header mismatch (-32020, HTTP 400) really disagrees; whatever the
//!   header names' case and the whitespace around the values (which HTTP
//!   strips), and whatever the body.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt;

use axum::http::{HeaderName, HeaderValue, Request, StatusCode};
use http_body_util::BodyExt;
use rmcp::ServerHandler;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, ServerJsonRpcMessage};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::http::{HttpApp, HttpOptions, MCP_PATH, app};
use crate::id_scan::{IdScanner, MAX_ID_BYTES};
use crate::inbound::{INVALID_REQUEST, PARSE_ERROR, inspect};
use crate::policy::{HostPolicy, OriginPolicy};
use crate::stdio::LineTransport;
use rmcp::transport::Transport;

/// One fuzz input, checked against the reference for both headers.
pub fn origin_and_host(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let value = lines.next().unwrap_or_default();
    let allowed: Vec<String> = lines.map(str::to_owned).collect();
    assert_eq!(
        OriginPolicy::new(&allowed).allows(value),
        reference_origin(&allowed, value),
        "Origin {value:?} with --allow-origin {allowed:?}"
    );
    let hosts: Vec<String> = allowed
        .iter()
        .filter(|host| *host != "*")
        .cloned()
        .collect();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    assert_eq!(
        HostPolicy::new(&hosts, loopback).allows(value),
        reference_host(&hosts, value),
        "Host {value:?} with --allow-host {hosts:?}"
    );
}

/// The host of `host[:port]` or `[v6][:port]` (the port 1 to 5 digits,
/// the brackets holding an IPv6 address); `None` when malformed.
fn reference_host_of(authority: &str) -> Option<&str> {
    let digits =
        |port: &str| (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit());
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            inside.parse::<Ipv6Addr>().ok()?;
            (
                inside,
                after
                    .strip_prefix(':')
                    .or((!after.is_empty()).then_some("bad")),
            )
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    (!host.is_empty() && port.is_none_or(digits)).then_some(host)
}

fn reference_loopback(authority: &str) -> bool {
    reference_host_of(authority).is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|a| a.is_loopback())
    })
}

fn reference_origin(allowed: &[String], origin: &str) -> bool {
    if allowed.iter().any(|entry| entry == "*") {
        return true;
    }
    if !allowed.is_empty() {
        return allowed
            .iter()
            .any(|entry| entry.trim_end_matches('/').eq_ignore_ascii_case(origin));
    }
    let lower = origin.to_ascii_lowercase();
    let authority = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    authority.is_some_and(reference_loopback)
}

fn reference_host(allowed: &[String], host: &str) -> bool {
    if allowed.is_empty() {
        return reference_loopback(host);
    }
    let name = reference_host_of(host);
    allowed.iter().any(|entry| {
        entry.eq_ignore_ascii_case(host)
            || name.is_some_and(|name| entry.eq_ignore_ascii_case(name))
    })
}

/// One fuzz input: the bytes of one inbound message.
pub fn inbound(data: &[u8]) {
    // Valid JSON: UTF-8, and syntax (numbers beyond an f64 included).
    let valid = std::str::from_utf8(data).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
    let object = data.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{');
    let parsed = serde_json::from_slice::<Value>(data);
    match inspect(data) {
        Err(rejection) => {
            let expected = if valid { INVALID_REQUEST } else { PARSE_ERROR };
            assert_eq!(
                rejection.code,
                expected,
                "{:?}",
                String::from_utf8_lossy(data)
            );
            let answer: Value = serde_json::from_slice(&rejection.to_response())
                .unwrap_or_else(|error| panic!("the answer is not JSON: {error}"));
            assert_eq!(answer["jsonrpc"], "2.0");
            assert_eq!(answer["error"]["code"], expected);
            let id = &answer["id"];
            assert!(id.is_null() || id.is_string() || id.is_number(), "{id}");
        }
        Ok(message) => {
            assert!(
                valid && object,
                "accepted as a message: {:?}",
                String::from_utf8_lossy(data)
            );
            if let Some(rewritten) = &message.rewritten {
                let completed: Value = serde_json::from_slice(rewritten)
                    .unwrap_or_else(|error| panic!("a completed initialize is not JSON: {error}"));
                assert!(completed["params"]["clientInfo"].is_object(), "{completed}");
                assert!(
                    completed["params"]["capabilities"].is_object(),
                    "{completed}"
                );
            }
        }
    }
    scanner_agrees(data, parsed.ok().as_ref());
    round_trips::<ClientJsonRpcMessage>(data);
    round_trips::<ServerJsonRpcMessage>(data);
}

/// The id scanner: the same answer for any split of the bytes, and the
/// message's own top-level id when the JSON holds one (once) that fits.
fn scanner_agrees(data: &[u8], parsed: Option<&Value>) {
    let whole = {
        let mut scanner = IdScanner::new();
        scanner.feed(data);
        scanner.finish().map(|id| id.get().to_owned())
    };
    // Chunk sizes taken from the bytes themselves: 1 to 8.
    let mut chunked = IdScanner::new();
    let mut rest = data;
    let mut sizes = data.iter().cycle();
    while !rest.is_empty() {
        let size = (usize::from(*sizes.next().unwrap_or(&0)) % 8 + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        chunked.feed(chunk);
        rest = tail;
    }
    let chunked = chunked.finish().map(|id| id.get().to_owned());
    assert_eq!(whole, chunked, "{:?}", String::from_utf8_lossy(data));
    let Some(Value::Object(object)) = parsed else {
        return;
    };
    let mentions = data.windows(4).filter(|window| window == b"\"id\"").count();
    let Some(id) = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
    else {
        return;
    };
    if mentions != 1 || id.to_string().len() > MAX_ID_BYTES {
        return;
    }
    let found: Option<Value> = whole
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw).ok());
    assert_eq!(
        found.as_ref(),
        Some(id),
        "{:?}",
        String::from_utf8_lossy(data)
    );
}

/// Whether some object of the JSON text `data` gives a key twice (false
/// for what is not JSON).
fn repeats_a_key(data: &[u8]) -> bool {
    use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
    struct Walk;
    impl<'de> DeserializeSeed<'de> for Walk {
        type Value = bool;
        fn deserialize<D: serde::Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<bool, D::Error> {
            deserializer.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Walk {
        type Value = bool;
        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E>(self, _: &str) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<bool, A::Error> {
            let mut repeated = false;
            while let Some(inner) = items.next_element_seed(Walk)? {
                repeated |= inner;
            }
            Ok(repeated)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut keys = std::collections::HashSet::new();
            let mut repeated = false;
            while let Some(key) = map.next_key::<String>()? {
                repeated |= !keys.insert(key);
                repeated |= map.next_value_seed(Walk)?;
            }
            Ok(repeated)
        }
    }
    Walk.deserialize(&mut serde_json::Deserializer::from_slice(data))
        .unwrap_or(false)
}

/// A message rmcp reads is written back as JSON that reads as the same
/// message.
fn round_trips<M: serde::Serialize + serde::de::DeserializeOwned>(data: &[u8]) {
    // A key given twice leaves a message without one meaning (RFC 8259,
    // 4): rmcp may keep either, and reads back what it wrote differently.
    if repeats_a_key(data) {
        return;
    }
    let Ok(message) = serde_json::from_slice::<M>(data) else {
        return;
    };
    let written = serde_json::to_value(&message)
        .unwrap_or_else(|error| panic!("a message read cannot be written: {error}"));
    let again: M = serde_json::from_value(written.clone())
        .unwrap_or_else(|error| panic!("{written} was written but cannot be read: {error}"));
    let rewritten = serde_json::to_value(&again)
        .unwrap_or_else(|error| panic!("a message read cannot be written: {error}"));
    assert_eq!(written, rewritten);
    // What is written is the message read: of the same kind (a request, a
    // notification, a response or an error, when the input is plainly
    // one), and with the id the input gives once, of its type and value.
    let Ok(input) = serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(data) else {
        return;
    };
    let kinds = ["method", "result", "error"];
    if kinds.iter().filter(|key| input.contains_key(**key)).count() == 1 {
        for key in kinds {
            assert_eq!(
                input.contains_key(key),
                written.get(key).is_some(),
                "`{key}` in {:?}, written {written}",
                String::from_utf8_lossy(data)
            );
        }
    }
    let mentions = data.windows(4).filter(|window| window == b"\"id\"").count();
    // An id with a fraction is read by rmcp through an f64 and may come out
    // another integer (`-1.9999999999999999999999999999995e3` as -2000):
    // the server refuses such a request before rmcp reads it (`inbound`,
    // `issue_22_an_id_with_a_fraction_is_refused_not_rounded`), so rmcp's
    // reading of it is not the server's behaviour.
    if let (Some(id), 1) = (input.get("id"), mentions)
        && !crate::inbound::has_fraction(id.get())
    {
        let kept = written.get("id").map(Value::to_string).unwrap_or_default();
        assert!(
            same_id(id.get(), &kept),
            "the id {} is written {kept}: {:?}",
            id.get(),
            String::from_utf8_lossy(data)
        );
    }
}

/// The most lines one stdio input is cut to: the transport drops answers
/// beyond its write queue (1024) when the client does not read them, and a
/// stream read whole gives the writer no chance to run in between.
const MAX_LINES: usize = 256;

/// One fuzz input: the first byte sets the line limit (8 to 71 bytes, so
/// that lines over it are common), the second the cut, the rest is what
/// the client writes to the server's stdin.
pub fn stdio_framing(data: &[u8]) {
    let [limit, cut, stream @ ..] = data else {
        return;
    };
    let max_line = 8 + usize::from(*limit % 64);
    let stream = first_lines(stream, MAX_LINES);
    let whole = read_stdio(stream, max_line, None);
    let sizes: Vec<usize> = std::iter::once(*cut)
        .chain(stream.iter().copied())
        .map(|byte| usize::from(byte % 16) + 1)
        .collect();
    let cut_up = read_stdio(stream, max_line, Some(&sizes));
    assert_eq!(
        whole,
        cut_up,
        "the same stream read whole and cut gives different results: {:?}",
        String::from_utf8_lossy(stream)
    );
    let (_, answers) = whole;
    let mut lines: Vec<&[u8]> = stream.split(|byte| *byte == b'\n').collect();
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    answers_match_lines(&lines, max_line, &answers);
    let refused: Vec<&Answer> = answers
        .iter()
        .filter(|answer| {
            answer.json["error"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with("message exceeds the limit"))
        })
        .inspect(|answer| assert_eq!(answer.json["error"]["code"], INVALID_REQUEST, "{answer:?}"))
        .collect();
    let over: Vec<&[u8]> = lines
        .into_iter()
        .filter(|line| line.len() > max_line)
        .collect();
    assert_eq!(
        refused.len(),
        over.len(),
        "{} lines over {max_line} bytes, {} refused as too long: {:?}",
        over.len(),
        refused.len(),
        String::from_utf8_lossy(stream)
    );
    for (line, answer) in over.iter().zip(&refused) {
        if let Some(expected) = plain_id(line) {
            assert_eq!(
                answer.id,
                expected,
                "the over-long line {:?} is refused with the wrong id",
                String::from_utf8_lossy(line)
            );
        }
    }
}

/// The first `count` lines of `stream`, each with its line feed (all of
/// it when it has fewer).
fn first_lines(stream: &[u8], count: usize) -> &[u8] {
    match stream
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .nth(count.saturating_sub(1))
    {
        Some((end, _)) => &stream[..=end],
        None => stream,
    }
}

/// One answer the server wrote: its members but the id, and the id as
/// written.
#[derive(Debug, PartialEq)]
struct Answer {
    json: Value,
    id: String,
}

/// The answer written as `line`, which must be a JSON object with an id.
/// The id is kept as written: it echoes the request's, which may be a
/// number no `f64` holds (`1e2999999` is JSON; serde_json refuses to read
/// it as a value).
fn answer_of(line: &[u8]) -> Answer {
    let members =
        serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(line).unwrap_or_else(|error| {
            panic!(
                "the server wrote {:?}, which is not a JSON object: {error}",
                String::from_utf8_lossy(line)
            )
        });
    let id = members
        .get("id")
        .map(|id| id.get().to_owned())
        .unwrap_or_else(|| panic!("an answer without an id: {}", String::from_utf8_lossy(line)));
    let json = members
        .iter()
        .filter(|(name, _)| *name != "id")
        .map(|(name, value)| {
            let value: Value = serde_json::from_str(value.get()).unwrap_or_else(|error| {
                panic!(
                    "`{name}` of {:?} is not JSON: {error}",
                    String::from_utf8_lossy(line)
                )
            });
            (name.clone(), value)
        })
        .collect();
    Answer { json, id }
}

/// What JSON-RPC asks of the answers to a stream's lines: none for a
/// notification (a line rmcp reads as one), at most one for any other
/// line, and each with `null` or an id as a line writes it, byte for byte.
/// The transport echoes the id it read (`1.0` stays `1.0`, `"\u0031"`
/// keeps its escape, an integer past 2^64 keeps every digit), never a
/// number read and written again: its first settled input had the
/// reference compare ids as `serde_json` values, which turned
/// 777777777777777777777 into a float, so the server's exact echo looked
/// like an id no line had (fuzz/regressions/stdio/crash-da6a...).
fn answers_match_lines(lines: &[&[u8]], max_line: usize, answers: &[Answer]) {
    let answerable: Vec<&[u8]> = lines
        .iter()
        .copied()
        .filter(|line| {
            let trimmed = line.trim_ascii();
            line.len() > max_line
                || !(trimmed.is_empty()
                    || matches!(
                        serde_json::from_slice::<ClientJsonRpcMessage>(trimmed),
                        Ok(ClientJsonRpcMessage::Notification(_))
                    ))
        })
        .collect();
    assert!(
        answers.len() <= answerable.len(),
        "{} answers to {} lines that are not notifications: {answers:?}",
        answers.len(),
        answerable.len()
    );
    for answer in answers {
        let id = answer.id.as_bytes();
        assert!(
            id == b"null"
                || answerable
                    .iter()
                    .any(|line| line.windows(id.len()).any(|window| window == id)),
            "an answer with the id {}, which no line writes: {answer:?}",
            answer.id
        );
    }
}

/// The top-level id of `line`, as written, when there is no doubt about
/// it: the line is one JSON object naming `"id"` once, its id a string or
/// number short enough to keep; `null` when it names no `"id"` at all.
fn plain_id(line: &[u8]) -> Option<String> {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line) else {
        return None;
    };
    match line.windows(4).filter(|window| window == b"\"id\"").count() {
        0 => Some("null".to_owned()),
        1 => {
            object
                .get("id")
                .filter(|id| id.is_string() || id.is_number())?;
            let raw = serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(line).ok()?;
            raw.get("id")
                .map(|id| id.get().to_owned())
                .filter(|id| id.len() <= MAX_ID_BYTES)
        }
        _ => None,
    }
}

/// What the stdio transport makes of `stream`: the messages it hands rmcp
/// and the answers it writes itself. With `sizes`, each read returns at
/// most the next size's bytes, every other read is not ready yet, and
/// `receive` is dropped each time it waits.
fn read_stdio(
    stream: &[u8],
    max_line: usize,
    sizes: Option<&[usize]>,
) -> (Vec<Value>, Vec<Answer>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return (Vec::new(), Vec::new());
    };
    runtime.block_on(async {
        let reader = Trickle {
            data: stream.to_vec(),
            sizes: sizes.map(<[usize]>::to_vec).unwrap_or_default(),
            reads: 0,
        };
        let (written, mut answers) = tokio::io::duplex(16 << 20);
        let (mut transport, writer) = LineTransport::new(reader, written, max_line, None, None);
        let mut messages = Vec::new();
        loop {
            let received = if sizes.is_some() {
                match transport.receive().now_or_never() {
                    Some(received) => received,
                    None => {
                        tokio::task::yield_now().await;
                        continue;
                    }
                }
            } else {
                transport.receive().await
            };
            let Some(message) = received else { break };
            messages.push(serde_json::to_value(&message).unwrap_or_default());
        }
        drop(transport);
        let written = writer.await.is_ok_and(|written| written.is_ok());
        assert!(written, "the stdio writer failed");
        let mut bytes = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut answers, &mut bytes)
            .await
            .unwrap_or_else(|error| panic!("the answers cannot be read: {error}"));
        let answers = bytes
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(answer_of)
            .collect();
        (messages, answers)
    })
}

/// A reader handing out `data`, all at once without `sizes`, else in reads
/// of the sizes in turn, every other read not ready yet.
struct Trickle {
    data: Vec<u8>,
    sizes: Vec<usize>,
    reads: usize,
}

impl tokio::io::AsyncRead for Trickle {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        this.reads += 1;
        let size = if this.sizes.is_empty() {
            this.data.len()
        } else {
            if this.reads.is_multiple_of(2) {
                context.waker().wake_by_ref();
                return Poll::Pending;
            }
            this.sizes[(this.reads / 2) % this.sizes.len()]
        };
        let size = size.min(buf.remaining()).min(this.data.len());
        buf.put_slice(&this.data[..size]);
        this.data.drain(..size);
        Poll::Ready(Ok(()))
    }
}

/// The most lines one served input is cut to.
const MAX_SERVED_LINES: usize = 64;

/// The id of the ping that ends every served input: its answer says that
/// the lines before it have been read.
const LAST_ID: &str = "nexo-fuzz-last";

/// What opens a session, by the input's first byte: an `initialize` of
/// either 2025 revision, or nothing (a 2026-07-28 client sends stateless
/// requests, each with its `_meta`).
const OPENINGS: [&str; 3] = [
    concat!(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","#,
        r#""capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n"
    ),
    concat!(
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","#,
        r#""capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n"
    ),
    "",
];

/// One fuzz input: the first byte picks how the session opens, the rest
/// is what the client writes to the server's stdin, served by rmcp's
/// serving loop over the stdio transport as `nexo serve` runs it. What
/// JSON-RPC asks of the answers, read afresh from the lines: no answer to a
/// notification or to a response the client sends, at most one to each
/// request, and each answer's id the request's own: a string stays a
/// string (`"1"` is not `1`), a number the same number (rmcp writes `1.0`
/// as `1`, which is the same JSON number), and a line rmcp cannot read is
/// answered with its id as written (an integer past 2^63, a fraction) or
/// `null`.
pub fn stdio_served(data: &[u8]) {
    let [opening, stream @ ..] = data else {
        return;
    };
    let opening = OPENINGS[usize::from(*opening) % OPENINGS.len()];
    let stream = first_lines(stream, MAX_SERVED_LINES);
    let last = format!(r#"{{"jsonrpc":"2.0","id":"{LAST_ID}","method":"ping"}}"#);
    let input = [opening.as_bytes(), stream, b"\n", last.as_bytes(), b"\n"].concat();
    let answers = serve_lines(&input);
    let lines: Vec<&[u8]> = input
        .split(|byte| *byte == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|line| !line.is_empty())
        .collect();
    let shown = || String::from_utf8_lossy(stream).into_owned();
    let answered: Vec<Answer> = answers
        .iter()
        .map(|line| answer_of(line.as_bytes()))
        .filter(|answer| answer.json.get("result").is_some() || answer.json.get("error").is_some())
        .collect();
    let requests = lines
        .iter()
        .filter(|line| served_reading(line) != Reading::Unanswered)
        .count();
    assert!(
        answered.len() <= requests,
        "{} answers to {requests} lines that may be answered: {answers:?} {:?}",
        answered.len(),
        shown()
    );
    let mut ids: Vec<&str> = answered
        .iter()
        .map(|answer| answer.id.as_str())
        .filter(|id| *id != "null")
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let given = answered.iter().filter(|answer| answer.id == id).count();
        let carried = lines.iter().filter(|line| carries(line, id)).count();
        assert!(
            given <= carried,
            "{given} answers with the id {id}, which {carried} requests carry: {answers:?} {:?}",
            shown()
        );
    }
}

/// How a line is answered, as JSON-RPC and rmcp's types read it.
#[derive(Debug, PartialEq)]
enum Reading {
    /// A request rmcp reads, with its id as written.
    Request(String),
    /// A notification, or a response the client sends: never answered.
    Unanswered,
    /// A line rmcp cannot read: the transport answers it, with the id it
    /// finds as written, or `null`.
    Unreadable,
}

fn served_reading(line: &[u8]) -> Reading {
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(ClientJsonRpcMessage::Request(_)) => {
            match serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(line)
                .ok()
                .and_then(|line| line.get("id").map(|id| id.get().to_owned()))
            {
                Some(id) => Reading::Request(id),
                None => Reading::Unreadable,
            }
        }
        Ok(_) => Reading::Unanswered,
        Err(_) => Reading::Unreadable,
    }
}

/// Whether `line` is answered with the id written `id`: a request whose
/// id is the same JSON value, or a line rmcp cannot read that holds it as
/// written.
fn carries(line: &[u8], id: &str) -> bool {
    match served_reading(line) {
        Reading::Request(own) => same_id(&own, id),
        Reading::Unanswered => false,
        Reading::Unreadable => line.windows(id.len()).any(|window| window == id.as_bytes()),
    }
}

/// Whether two ids, as written, are the same JSON value: two strings
/// (escapes read) or two numbers of the same exact decimal value.
fn same_id(one: &str, other: &str) -> bool {
    if one == other {
        return true;
    }
    match (one.starts_with('"'), other.starts_with('"')) {
        (true, true) => {
            serde_json::from_str::<String>(one).ok() == serde_json::from_str::<String>(other).ok()
        }
        (false, false) => decimal(one).is_some() && decimal(one) == decimal(other),
        _ => false,
    }
}

/// A JSON number, exactly: its sign, its significant digits and the power
/// of ten they are scaled by (`1.0`, `1e0` and `10e-1` alike).
fn decimal(number: &str) -> Option<(bool, String, i64)> {
    let (negative, unsigned) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (mantissa, exponent) = unsigned.split_once(['e', 'E']).unwrap_or((unsigned, "0"));
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let significant = digits.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    // Zero whatever its exponent, even one past an i64 (found by a 240 s
    // run: `0e9999999999999992990` is answered as 0, which it is).
    if trimmed.is_empty() {
        return Some((false, String::new(), 0));
    }
    let exponent = exponent.parse::<i64>().ok()?;
    let scale = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
    let zeros = i64::try_from(significant.len() - trimmed.len()).ok()?;
    Some((negative, trimmed.to_owned(), scale.checked_add(zeros)?))
}

/// What the server writes to stdout, one line each, when `input` is
/// written to its stdin: served until the answer to the last ping (or the
/// session's end), then stdin is closed.
fn serve_lines(input: &[u8]) -> Vec<String> {
    use rmcp::ServiceExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    runtime.block_on(async {
        let (mut client, stdin) = tokio::io::duplex(1 << 20);
        let (stdout, answers) = tokio::io::duplex(16 << 20);
        let (transport, writer) =
            LineTransport::new(stdin, stdout, crate::DEFAULT_MAX_BODY, None, None);
        let serving = tokio::spawn(async move {
            if let Ok(running) = Quiet.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        client
            .write_all(input)
            .await
            .unwrap_or_else(|error| panic!("the input cannot be written: {error}"));
        let mut lines = tokio::io::BufReader::new(answers).lines();
        let mut written = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            let done = line.contains(LAST_ID);
            written.push(line);
            if done {
                break;
            }
        }
        drop(client);
        let _ = serving.await;
        let _ = writer.await;
        while let Ok(Some(line)) = lines.next_line().await {
            written.push(line);
        }
        written
    })
}

/// A server of no tools: every request is answered by rmcp's defaults.
#[derive(Clone)]
struct Quiet;

impl ServerHandler for Quiet {}

/// The protocol versions a request may declare (none first).
const VERSIONS: [Option<&str>; 4] = [
    None,
    Some("2025-06-18"),
    Some("2025-11-25"),
    Some("2026-07-28"),
];

/// One fuzz input: the first byte picks the `MCP-Protocol-Version`, the
/// case of the header names and the whitespace around the values; then
/// lines `M:value` (an `Mcp-Method` header) and `N:value` (`Mcp-Name`),
/// any number of each; the rest is the body.
pub fn standard_headers(data: &[u8]) {
    let [style, rest @ ..] = data else {
        return;
    };
    let mut methods: Vec<&[u8]> = Vec::new();
    let mut names: Vec<&[u8]> = Vec::new();
    let mut body = rest;
    while let Some(end) = body.iter().position(|byte| *byte == b'\n') {
        let (line, after) = (&body[..end], &body[end + 1..]);
        match line {
            [b'M', b':', value @ ..] => methods.push(value),
            [b'N', b':', value @ ..] => names.push(value),
            _ => break,
        }
        body = after;
    }
    let version = VERSIONS[usize::from(style % 4)];
    let case = |name: &str| match (style >> 2) % 4 {
        0 => name.to_owned(),
        1 => name.to_ascii_uppercase(),
        2 => name.to_ascii_lowercase(),
        _ => name
            .split('-')
            .map(|word| word[..1].to_ascii_uppercase() + &word[1..])
            .collect::<Vec<_>>()
            .join("-"),
    };
    let pad: &[u8] = match (style >> 4) % 4 {
        0 => b"",
        1 => b" ",
        2 => b"\t",
        _ => b" \t ",
    };
    let mut request = Request::post(MCP_PATH)
        .header("host", "localhost:8000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(version) = version {
        request = request.header(case("MCP-Protocol-Version"), version);
    }
    // What reaches the application is what hyper parsed from the wire: a
    // value without the spaces and tabs around it, and without any
    // control character (such a header is refused before).
    let on_the_wire = |value: &[u8]| -> Option<HeaderValue> {
        let padded = [pad, value, pad].concat();
        HeaderValue::from_bytes(padded.trim_ascii_start().trim_ascii_end()).ok()
    };
    let mut sent_methods = Vec::new();
    let mut sent_names = Vec::new();
    for (header, values, sent) in [
        ("Mcp-Method", &methods, &mut sent_methods),
        ("Mcp-Name", &names, &mut sent_names),
    ] {
        for value in values {
            let Some(value) = on_the_wire(value) else {
                return;
            };
            let Ok(name) = HeaderName::from_bytes(case(header).as_bytes()) else {
                return;
            };
            sent.push(value.as_bytes().to_vec());
            request = request.header(name, value);
        }
    }
    let Ok(request) = request.body(axum::body::Body::from(body.to_vec())) else {
        return;
    };
    let Some((runtime, application)) = headers_app() else {
        return;
    };
    let (status, answer) = runtime.block_on(answer(application.clone(), request));
    let mismatch = status == StatusCode::BAD_REQUEST
        && answer
            .as_ref()
            .is_some_and(|answer| answer["error"]["code"] == ErrorCode::HEADER_MISMATCH.0);
    let Some(agrees) = reference_agrees(version, &sent_methods, &sent_names, body) else {
        assert!(
            !mismatch,
            "a body that is no message is refused as a header mismatch: {:?}",
            String::from_utf8_lossy(data)
        );
        return;
    };
    if agrees {
        assert!(
            !mismatch,
            "headers that agree with the body are refused as a mismatch: {:?} {answer:?}",
            String::from_utf8_lossy(data)
        );
    } else {
        // The server of no tools answers a request it reaches with a result
        // (200), or as a method it does not know (-32601, HTTP 404); a
        // notification it reaches is accepted (202). What the transport
        // refuses is answered 400.
        let code = answer
            .as_ref()
            .and_then(|answer| answer["error"]["code"].as_i64());
        let served = status == StatusCode::ACCEPTED
            || (status == StatusCode::OK
                && answer.as_ref().is_some_and(|a| a.get("result").is_some()))
            || (status == StatusCode::NOT_FOUND && code == Some(-32601));
        assert!(
            !served,
            "headers that disagree with the body are served ({status}): {:?} {answer:?}",
            String::from_utf8_lossy(data)
        );
    }
}

/// The application and a runtime to run it in, made once per process.
fn headers_app() -> Option<&'static (tokio::runtime::Runtime, HttpApp<Quiet>)> {
    static APP: std::sync::OnceLock<Option<(tokio::runtime::Runtime, HttpApp<Quiet>)>> =
        std::sync::OnceLock::new();
    APP.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let options = HttpOptions {
            origins: OriginPolicy::new(&[]),
            hosts: HostPolicy::new(&[], IpAddr::V4(Ipv4Addr::LOCALHOST)),
            max_body: crate::DEFAULT_MAX_BODY,
            tools: Vec::new(),
            logger: None,
            trace: None,
            sessions: None,
        };
        let application = runtime
            .block_on(async { app(Quiet, options, tokio_util::sync::CancellationToken::new()) });
        Some((runtime, application))
    })
    .as_ref()
}

/// The status of the application's answer to `request`, and its JSON-RPC
/// message when the body is one (as JSON, or the first SSE `data`).
async fn answer(
    application: HttpApp<Quiet>,
    request: Request<axum::body::Body>,
) -> (StatusCode, Option<Value>) {
    let Ok(response) = tower::ServiceExt::oneshot(application, request).await;
    let status = response.status();
    // A stream that stays open (an SSE answer kept alive) is read until
    // its first event.
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    let reading = async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                bytes.extend_from_slice(&data);
            }
            if first_message(&bytes).is_some() {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), reading).await;
    (status, first_message(&bytes))
}

/// The JSON-RPC message in `body`: the body itself, or an SSE event's data.
fn first_message(body: &[u8]) -> Option<Value> {
    if let Ok(message) = serde_json::from_slice::<Value>(body) {
        return Some(message);
    }
    body.split(|byte| *byte == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .find_map(|data| serde_json::from_slice::<Value>(data.trim_ascii()).ok())
}

/// Whether the headers agree with the body, as the 2026-07-28 transport
/// words it; `None` when the body is no message rmcp would check.
fn reference_agrees(
    version: Option<&str>,
    methods: &[Vec<u8>],
    names: &[Vec<u8>],
    body: &[u8],
) -> Option<bool> {
    // An `initialize` completed by the leniency of `inbound` is read as
    // completed.
    let completed = inspect(body).ok().and_then(|envelope| envelope.rewritten);
    let message =
        serde_json::from_slice::<ClientJsonRpcMessage>(completed.as_deref().unwrap_or(body))
            .ok()?;
    let initialize = matches!(
        &message,
        ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_))
    );
    if !matches!(
        message,
        ClientJsonRpcMessage::Request(_) | ClientJsonRpcMessage::Notification(_)
    ) {
        return None;
    }
    // The body as the server reads it (a key given twice read once).
    let read = serde_json::to_value(&message).ok()?;
    let method = read["method"].as_str()?;
    // The version is a standard header too: one a request's `_meta`
    // contradicts (or names while the header is missing) disagrees,
    // whatever revision the header names (rmcp checks requests only).
    if matches!(message, ClientJsonRpcMessage::Request(_))
        && read["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .is_some_and(|meta| Some(meta) != version)
    {
        return Some(false);
    }
    if version != Some("2026-07-28") {
        return Some(true);
    }
    let one = |values: &[Vec<u8>]| match values {
        [value] => std::str::from_utf8(value).ok().map(str::to_owned),
        _ => None,
    };
    if initialize && methods.is_empty() {
        return Some(true);
    }
    if one(methods).as_deref() != Some(method) {
        return Some(false);
    }
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Some(true),
    };
    let Some(expected) = read["params"][key].as_str().filter(|_| !initialize) else {
        return Some(true);
    };
    Some(one(names).and_then(|name| unwrapped(&name)).as_deref() == Some(expected))
}

/// A header value as the sender meant it: `=?base64?...?=` decoded
/// (standard alphabet, padded, no stray bits), any other value as is.
fn unwrapped(value: &str) -> Option<String> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|inner| inner.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = inner.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let padding = bytes.iter().rev().take_while(|byte| **byte == b'=').count();
    if padding > 2 {
        return None;
    }
    let mut bits: u32 = 0;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in &bytes[..bytes.len() - padding] {
        let digit = ALPHABET.iter().position(|letter| letter == byte)?;
        bits = (bits << 6) | u32::try_from(digit).ok()?;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).ok()?);
        }
    }
    // The bits left over must be zero.
    if bits & ((1 << count) - 1) != 0 {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_inbound_messages_pass() {
        nexo_testkit::replay("inbound", super::inbound);
    }

    #[test]
    fn the_committed_stdio_streams_pass() {
        nexo_testkit::replay("stdio", super::stdio_framing);
    }

    #[test]
    fn the_committed_served_streams_pass() {
        nexo_testkit::replay("stdio_served", super::stdio_served);
    }

    /// The served harness is not vacuous: a session answers each request
    /// once, with its id as the client wrote it.
    #[test]
    fn the_served_harness_sees_the_answers() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            "
",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "
",
            r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#,
            "
",
            r#"{"jsonrpc":"2.0","id":-7,"method":"tools/list"}"#,
            "
",
            r#"{"jsonrpc":"2.0","id":77777777777777777777777,"method":"ping"}"#,
            "
",
            r#"{"jsonrpc":"2.0","id":"nexo-fuzz-last","method":"ping"}"#,
            "
",
        );
        let answers = super::serve_lines(input.as_bytes());
        // The transport's own answer (to the id rmcp cannot read) may come
        // before rmcp's.
        let mut ids: Vec<String> = answers
            .iter()
            .filter_map(|line| {
                serde_json::from_str::<super::BTreeMap<String, Box<super::RawValue>>>(line)
                    .ok()?
                    .get("id")
                    .map(|id| id.get().to_owned())
            })
            .collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                r#""1""#,
                r#""nexo-fuzz-last""#,
                "-7",
                "1",
                "77777777777777777777777"
            ],
            "{answers:?}"
        );
        assert!(super::same_id("1.0", "1") && super::same_id("10e-1", "1"));
        assert!(!super::same_id(r#""1""#, "1") && !super::same_id("-1", "1"));
        super::stdio_served(&[0]);
    }

    #[test]
    fn the_committed_header_requests_pass() {
        nexo_testkit::replay("standard_headers", super::standard_headers);
    }

    /// The harness is not vacuous: the application really answers a call
    /// whose `Mcp-Name` names another tool -32020, and hands the call whose
    /// headers agree to the server (which has no tools: -32601).
    #[test]
    fn the_header_harness_sees_both_answers() {
        let call = |name: &str| {
            let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
            let request = super::Request::post(super::MCP_PATH)
                .header("host", "localhost")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", name)
                .body(axum::body::Body::from(body))
                .unwrap_or_else(|error| panic!("{error}"));
            let Some((runtime, application)) = super::headers_app() else {
                panic!("no application");
            };
            runtime.block_on(super::answer(application.clone(), request))
        };
        let (status, answer) = call("other");
        assert_eq!(status, super::StatusCode::BAD_REQUEST, "{answer:?}");
        assert_eq!(
            answer.map(|answer| answer["error"]["code"].clone()),
            Some((-32020).into())
        );
        let (status, answer) = call("echo");
        assert_eq!(status, super::StatusCode::NOT_FOUND, "{answer:?}");
        assert_eq!(
            answer.map(|answer| answer["error"]["code"].clone()),
            Some((-32601).into())
        );
    }

    #[test]
    fn the_committed_fuzz_inputs_pass() {
        nexo_testkit::replay("origin", super::origin_and_host);
    }
}
