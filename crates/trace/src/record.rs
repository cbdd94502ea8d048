//! The trace record: what a tap observed ([`Observed`]), and the line the
//! [`crate::Tracer`] writes for it and the analysis reads back
//! ([`TraceRecord`]). The format is described field by field in the crate's
//! documentation; [`FORMAT_VERSION`] is written in every line.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::envelope::Envelope;
use crate::redact::{REDACTED, is_credential_header};

/// The version of the record format, written in every line as `"v"`.
pub const FORMAT_VERSION: u32 = 1;

/// The methods whose messages are marked `"lifecycle": true`: the
/// handshake of both eras (`initialize`, `notifications/initialized`,
/// `server/discover`) and `ping`, which only keeps a connection alive.
/// Responses and errors answering them are marked too.
pub const LIFECYCLE_METHODS: [&str; 4] = [
    "initialize",
    "notifications/initialized",
    "server/discover",
    "ping",
];

/// Whether messages of `method` belong to the lifecycle ([`LIFECYCLE_METHODS`]).
pub fn is_lifecycle(method: &str) -> bool {
    LIFECYCLE_METHODS.contains(&method)
}

/// The transports, as the `transport` field names them.
pub mod transport {
    pub const STDIO: &str = "stdio";
    pub const STREAMABLE_HTTP: &str = "streamable-http";
    /// The HTTP+SSE transport of 2024-11-05.
    pub const SSE: &str = "sse";
    pub const IN_PROCESS: &str = "in-process";
}

/// Which way a message went, from the tracing side's point of view:
/// written `"out"` for a message it sent and `"in"` for one it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    #[serde(rename = "out")]
    Sent,
    #[serde(rename = "in")]
    Received,
}

impl Direction {
    pub fn reversed(self) -> Self {
        match self {
            Self::Sent => Self::Received,
            Self::Received => Self::Sent,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "out",
            Self::Received => "in",
        }
    }
}

/// Which end of the connection the tracing side is: `nexo serve` traces as
/// the server, the client commands as the client (a gateway is both, on
/// different connections). With [`Direction`] it says who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Server,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Server => "server",
        }
    }
}

/// What a message is, read from its envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `method` and `id`.
    Request,
    /// `id` and `result`.
    Response,
    /// `method` and no `id`.
    Notification,
    /// `error` (with an `id`, or `null` when the faulty request's id could
    /// not be read).
    Error,
    /// Not a JSON-RPC message: not JSON, not UTF-8, or JSON of another
    /// shape. Recorded rather than dropped: it is what a broken peer sent.
    Invalid,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Request,
        Kind::Response,
        Kind::Notification,
        Kind::Error,
        Kind::Invalid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Response => "response",
            Self::Notification => "notification",
            Self::Error => "error",
            Self::Invalid => "invalid",
        }
    }
}

/// What an HTTP tap saw of the exchange that carried a message: for a
/// message received by a server or sent by a client, the request's method
/// and headers; for one sent by a server or received by a client, the
/// response's status and headers. Credential headers
/// ([`is_credential_header`]) are redacted by the constructors and again by
/// the writer, and never shown by `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HttpInfo {
    pub status: Option<u16>,
    pub method: Option<String>,
    /// Header names and values, in the order seen.
    pub headers: Vec<(String, String)>,
    /// On a client's request: the connection it went over.
    pub connection: Option<ConnectionCost>,
}

/// The connection a client's request went over: opened for it (with what
/// resolving the name and connecting took), or kept from an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionCost {
    pub reused: bool,
    /// Name resolution; absent for an address, or on a reused connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_us: Option<u64>,
    /// The TCP connect; absent on a reused connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_us: Option<u64>,
    /// The TLS handshake, over `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_us: Option<u64>,
}

impl HttpInfo {
    /// What a request shows: its method and headers.
    pub fn request(method: &http::Method, headers: &http::HeaderMap) -> Self {
        Self {
            status: None,
            method: Some(method.as_str().to_owned()),
            headers: header_list(headers),
            connection: None,
        }
    }

    /// What a response shows: its status and headers.
    pub fn response(status: http::StatusCode, headers: &http::HeaderMap) -> Self {
        Self {
            status: Some(status.as_u16()),
            method: None,
            headers: header_list(headers),
            connection: None,
        }
    }

    /// The headers as a trace line holds them: names in lower case, values
    /// of credential headers redacted, repeated names joined with `, `.
    pub fn redacted_headers(&self) -> BTreeMap<String, String> {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &self.headers {
            let value = if is_credential_header(name) {
                REDACTED
            } else {
                value
            };
            headers
                .entry(name.to_ascii_lowercase())
                .and_modify(|joined| {
                    joined.push_str(", ");
                    joined.push_str(value);
                })
                .or_insert_with(|| value.to_owned());
        }
        headers
    }
}

impl fmt::Debug for HttpInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpInfo")
            .field("status", &self.status)
            .field("method", &self.method)
            .field("headers", &self.redacted_headers())
            .field("connection", &self.connection)
            .finish()
    }
}

/// A header map as name/value pairs, credentials already redacted; a value
/// that is not visible ASCII is shown lossily.
fn header_list(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = if is_credential_header(name.as_str()) {
                REDACTED.to_owned()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name.as_str().to_owned(), value)
        })
        .collect()
}

/// What a tap observed of one message: the tap fills this in, the
/// [`crate::Tracer`] derives the rest (kind, id, method, lifecycle, latency).
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The server's name: its name in the configuration, the bundled
    /// server's name, or the target as shown to the user.
    pub server: &'a str,
    /// One of [`transport`]'s names.
    pub transport: &'a str,
    /// The `Mcp-Session-Id`, a legacy SSE session id, or an id the tap gives
    /// a connection (stdio, in-process); `None` outside any session
    /// (stateless 2026-07-28 HTTP requests, or before `initialize` is
    /// answered).
    pub session: Option<&'a str>,
    /// Which end the tracing side is.
    pub side: Side,
    pub direction: Direction,
    /// The message as it went over the wire: serialized JSON, one JSON-RPC
    /// message or a batch (an array), or whatever a broken peer sent.
    pub message: &'a [u8],
    /// The HTTP exchange that carried it, for HTTP transports.
    pub http: Option<&'a HttpInfo>,
    /// What the message says of itself, when the tap holds it as rmcp
    /// parsed or built it ([`Envelope::of_client_message`],
    /// [`Envelope::of_server_message`]): then `message` must be the JSON it
    /// was parsed from or serialized to, and the writer does not parse it
    /// again. `None`: the writer reads it from `message`.
    pub envelope: Option<Envelope<'a>>,
}

/// The HTTP part of a line: the request's method or the response's status,
/// and the headers (credentials redacted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<ConnectionCost>,
}

/// One line of a trace file (the crate documentation describes each field).
/// The writer produces exactly this shape; the analysis reads it back.
/// Fields added later within version 1 are optional, and readers ignore
/// fields they do not know.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceRecord {
    pub v: u32,
    pub time_us: u64,
    pub server: String,
    pub side: Side,
    pub direction: Direction,
    pub transport: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "is_false")]
    pub lifecycle: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub tool_error: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub batch: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Box<RawValue>>,
}

impl TraceRecord {
    /// Whether the client sent this message (else the server did).
    pub fn from_client(&self) -> bool {
        (self.side == Side::Client) == (self.direction == Direction::Sent)
    }

    /// The JSON-RPC id as a key: its JSON text (`7`, `"a"`).
    pub fn id_key(&self) -> Option<String> {
        self.id.as_ref().map(|id| id.to_string())
    }

    /// `params.name` of a `tools/call` request whose message was kept.
    pub fn tool_name(&self) -> Option<String> {
        #[derive(Deserialize)]
        struct Call {
            params: Params,
        }
        #[derive(Deserialize)]
        struct Params {
            name: String,
        }
        if self.kind != Kind::Request || self.method.as_deref() != Some("tools/call") {
            return None;
        }
        let message = self.message.as_ref()?;
        serde_json::from_str::<Call>(message.get())
            .ok()
            .map(|call| call.params.name)
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}
