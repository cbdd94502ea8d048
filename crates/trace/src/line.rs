//! One trace line, encoded by hand into a buffer the writer reuses: byte
//! for byte what serde_json writes for the same [`crate::TraceRecord`]
//! (the reader and the snapshot tests depend on that), without escaping
//! every key again or building anything on the way. The message itself is
//! copied in as it came, never re-encoded.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::envelope::{Id, Method};
use crate::record::{Direction, FORMAT_VERSION, Kind, Side};

/// A trace line's fields, in the order [`crate::TraceRecord`] has them.
pub(crate) struct Line<'a> {
    pub time_us: u64,
    /// `server` to `session`, encoded ([`encode_origin`]).
    pub origin: &'a [u8],
    pub kind: Kind,
    pub lifecycle: bool,
    /// The id's JSON text ([`Id::encode`]).
    pub id: Option<&'a [u8]>,
    pub method: Option<Method<'a>>,
    pub bytes: u64,
    pub latency_us: Option<u64>,
    pub error_code: Option<i64>,
    pub error_message: Option<&'a str>,
    pub tool_error: bool,
    pub batch: bool,
    pub http: Option<HttpLine<'a>>,
    pub message: Option<Message<'a>>,
}

/// The `http` part of a line.
pub(crate) struct HttpLine<'a> {
    pub method: Option<&'a str>,
    pub status: Option<u16>,
    /// Lower-case names, credentials redacted, repeated names joined.
    pub headers: &'a BTreeMap<Cow<'a, str>, Cow<'a, str>>,
    pub connection: Option<crate::record::ConnectionCost>,
}

/// The `message` of a line.
pub(crate) enum Message<'a> {
    /// A JSON-RPC message, valid JSON: copied in as it is, on one line.
    Json(&'a str),
    /// What is no JSON-RPC message: written as a JSON string.
    Text(&'a str),
}

impl Line<'_> {
    /// Appends the line, without its line break, to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        const _: () = assert!(FORMAT_VERSION == 1, "the line starts with its version");
        out.extend_from_slice(b"{\"v\":1,\"time_us\":");
        push_u64(out, self.time_us);
        out.extend_from_slice(self.origin);
        out.extend_from_slice(b",\"kind\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.push(b'"');
        if self.lifecycle {
            out.extend_from_slice(b",\"lifecycle\":true");
        }
        if let Some(id) = self.id {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(id);
        }
        match self.method {
            Some(Method::Known(method)) => {
                debug_assert!(!needs_escaping(method.as_bytes()), "{method}");
                out.extend_from_slice(b",\"method\":\"");
                out.extend_from_slice(method.as_bytes());
                out.push(b'"');
            }
            Some(Method::Other(method)) => {
                out.extend_from_slice(b",\"method\":");
                push_str(out, method);
            }
            None => {}
        }
        out.extend_from_slice(b",\"bytes\":");
        push_u64(out, self.bytes);
        if let Some(latency) = self.latency_us {
            out.extend_from_slice(b",\"latency_us\":");
            push_u64(out, latency);
        }
        if let Some(code) = self.error_code {
            out.extend_from_slice(b",\"error_code\":");
            push_i64(out, code);
        }
        if let Some(message) = self.error_message {
            out.extend_from_slice(b",\"error_message\":");
            push_str(out, message);
        }
        if self.tool_error {
            out.extend_from_slice(b",\"tool_error\":true");
        }
        if self.batch {
            out.extend_from_slice(b",\"batch\":true");
        }
        if let Some(http) = &self.http {
            out.extend_from_slice(b",\"http\":");
            http.encode(out);
        }
        match self.message {
            Some(Message::Json(message)) => {
                out.extend_from_slice(b",\"message\":");
                splice_one_line(out, message.trim_ascii());
            }
            Some(Message::Text(text)) => {
                out.extend_from_slice(b",\"message\":");
                push_str(out, text);
            }
            None => {}
        }
        out.push(b'}');
    }
}

/// Appends the fields that say where a message was seen, `server` to
/// `session`, each after a comma.
pub(crate) fn encode_origin(
    out: &mut Vec<u8>,
    server: &str,
    side: Side,
    direction: Direction,
    transport: &str,
    session: Option<&str>,
) {
    out.extend_from_slice(b",\"server\":");
    push_str(out, server);
    out.extend_from_slice(b",\"side\":\"");
    out.extend_from_slice(side.as_str().as_bytes());
    out.extend_from_slice(b"\",\"direction\":\"");
    out.extend_from_slice(direction.as_str().as_bytes());
    out.extend_from_slice(b"\",\"transport\":");
    push_str(out, transport);
    if let Some(session) = session {
        out.extend_from_slice(b",\"session\":");
        push_str(out, session);
    }
}

impl HttpLine<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        // Each field is optional: a comma goes before all but the first.
        let mut separator = b'{';
        if let Some(method) = self.method {
            out.extend_from_slice(&[separator, b'"']);
            out.extend_from_slice(b"method\":");
            push_str(out, method);
            separator = b',';
        }
        if let Some(status) = self.status {
            out.extend_from_slice(&[separator, b'"']);
            out.extend_from_slice(b"status\":");
            push_u64(out, u64::from(status));
            separator = b',';
        }
        if !self.headers.is_empty() {
            out.extend_from_slice(&[separator, b'"']);
            out.extend_from_slice(b"headers\":");
            let mut between = b'{';
            for (name, value) in self.headers {
                out.push(between);
                push_str(out, name);
                out.push(b':');
                push_str(out, value);
                between = b',';
            }
            out.push(b'}');
            separator = b',';
        }
        if let Some(connection) = self.connection {
            out.extend_from_slice(&[separator, b'"']);
            out.extend_from_slice(b"connection\":{\"reused\":");
            out.extend_from_slice(if connection.reused { b"true" } else { b"false" });
            for (name, value) in [
                (&b",\"dns_us\":"[..], connection.dns_us),
                (&b",\"connect_us\":"[..], connection.connect_us),
                (&b",\"tls_us\":"[..], connection.tls_us),
            ] {
                if let Some(value) = value {
                    out.extend_from_slice(name);
                    push_u64(out, value);
                }
            }
            out.push(b'}');
            separator = b',';
        }
        if separator == b'{' {
            out.push(b'{');
        }
        out.push(b'}');
    }
}

impl Id<'_> {
    /// Appends the id's JSON text: as the message gave it, or as
    /// serde_json writes rmcp's id (the same text when the sender wrote it
    /// plainly, as senders do).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Id::Json(text) => out.extend_from_slice(text.trim_ascii().as_bytes()),
            Id::Number(number) => push_i64(out, number),
            Id::String(text) => push_str(out, text),
        }
    }
}

fn push_u64(out: &mut Vec<u8>, number: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}

fn push_i64(out: &mut Vec<u8>, number: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}

/// Appends `text` as a JSON string, escaped as serde_json escapes it: `"`,
/// `\` and the control characters, with the short forms where JSON has
/// them; nothing else.
pub(crate) fn push_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if needs_escaping(bytes) {
        push_escaped(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
    out.push(b'"');
}

/// Whether a string holds anything to escape. Nearly every one has
/// nothing: one pass without an early exit, which the compiler turns into
/// wide compares, says so.
fn needs_escaping(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |seen, &b| {
        seen | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut plain = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain..at]);
        out.extend_from_slice(escaped);
        plain = at + 1;
    }
    out.extend_from_slice(&bytes[plain..]);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends a valid JSON text on one line: a line break can only stand
/// between tokens in JSON (inside strings it is escaped), so each becomes
/// a blank.
fn splice_one_line(out: &mut Vec<u8>, message: &str) {
    let start = out.len();
    out.extend_from_slice(message.as_bytes());
    // Most messages have no line break: one fast search says so.
    if let Some(first) = memchr::memchr2(b'\n', b'\r', message.as_bytes()) {
        for byte in &mut out[start + first..] {
            if matches!(byte, b'\n' | b'\r') {
                *byte = b' ';
            }
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every_ascii = String::new();
        for byte in 0u8..0x80 {
            every_ascii.push(char::from(byte));
        }
        for text in [
            "",
            "plain",
            "tools/call",
            &every_ascii,
            "quote \" and backslash \\ at once\u{7f}",
            "é, 日本, 🦀 and \u{2028}",
            "\n\u{1}\u{1f}",
        ] {
            let mut ours = Vec::new();
            push_str(&mut ours, text);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(text).unwrap()
            );
        }
    }
}
