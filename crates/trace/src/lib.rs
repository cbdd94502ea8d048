//! Records of what went over the wire, and their analysis.
//!
//! - The trace: one JSON line per MCP message on every connection, written
//!   by a [`Tracer`] from what a transport tap [`Observed`] (`--trace FILE`
//!   on the client commands, `nexo serve --trace FILE`), read back as
//!   [`TraceRecord`]s ([`read`]) and analysed: counts, latency percentiles,
//!   errors and unpaired messages ([`summary`], `nexo trace summary`), and
//!   the sequence diagram of the exchange ([`flow`], `nexo trace flow`).
//! - The tool-call log: one [`ToolCallRecord`] per served tool call
//!   (`nexo serve --log FILE`), written by a [`ToolCallLog`].
//!
//! This crate knows nothing of transports or particular servers: whoever
//! observes a message hands over its bytes and where it was seen. Of rmcp
//! it knows the message types only: a tap that holds the message rmcp
//! parsed or built hands over its [`Envelope`] too, and the writer does not
//! parse the bytes again.
//! It also decides which HTTP headers are credentials
//! ([`is_credential_header`]), for the trace and for nexo-client alike.
//!
//! # The trace format, version 1
//!
//! A trace file is UTF-8 text, one JSON object per line (JSON Lines),
//! appended to by one or more writers; each line is one message seen by the
//! tracing side. Fields, in the order they are written (optional ones are
//! left out when they do not apply):
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `v` | integer | the format version, `1` ([`FORMAT_VERSION`]) |
//! | `time_us` | integer | when the tap saw the message, in microseconds since the Unix epoch (UTC): the wall clock when the writer started, the monotonic clock after that, so that one writer's times never go back |
//! | `server` | string | the server's name (its configuration name, the bundled server's name, or the target as shown) |
//! | `side` | `"client"` \| `"server"` | which end of the connection wrote the line |
//! | `direction` | `"out"` \| `"in"` | from the writing side's point of view: `out` it sent the message, `in` it received it; with `side` this says who sent it |
//! | `transport` | string | `stdio`, `streamable-http`, `sse` (the HTTP+SSE transport of 2024-11-05) or `in-process` |
//! | `session` | string, optional | the `Mcp-Session-Id`, the legacy SSE session id, or an id the writer gave a stdio or in-process connection; absent outside any session (stateless 2026-07-28 requests, and an `initialize` before its answer brings the session id) |
//! | `kind` | string | `request` (`method` and `id`), `notification` (`method`, no `id`), `response` (`id` and `result`), `error` (`error`), or `invalid`: not UTF-8, not JSON, or JSON that is no JSON-RPC message; recorded rather than dropped |
//! | `lifecycle` | `true`, optional | the message belongs to the lifecycle: `initialize`, `notifications/initialized`, `server/discover`, `ping` ([`LIFECYCLE_METHODS`]), and the answers to those requests |
//! | `id` | string or number, optional | the JSON-RPC id exactly as the message gave it; absent on notifications and on errors with `"id": null` |
//! | `method` | string, optional | a request's or notification's method; on a response or error, the method of the request it answers, when the writer saw that request (requests are matched by side, server, session and id, the answer travelling the other way) |
//! | `bytes` | integer | the size of the message as it went over the wire (of its element, in a batch) |
//! | `latency_us` | integer, optional | on an answer matched to its request: microseconds from the request to the answer, as the writer saw them |
//! | `error_code` | integer, optional | an error's JSON-RPC `error.code` (kept when messages are redacted) |
//! | `error_message` | string, optional | an error's `error.message` (kept when messages are redacted) |
//! | `tool_error` | `true`, optional | a response whose result has `"isError": true` (a tool that failed) |
//! | `batch` | `true`, optional | the message was one element of a JSON-RPC batch (an array, allowed by revision 2025-03-26 only); each element gets its own line, all with the batch's time |
//! | `http` | object, optional | for HTTP transports: `method` (of the request that carried a message to a server; on a client's lines, also of the request whose response carried a message to it: `POST`, or `GET` for the session's stream), `status` (of the response that carried a message to a client; on a Streamable HTTP client's lines, also of the response to the POST that carried a message to the server, such as `202` or the `404` of a forgotten session), `headers` (of that request or response, as sent or received: a Streamable HTTP client's lines show the request's on messages it sent and the response's on messages it received; names in lower case, repeated names joined with `, `, the values of credential headers written `"[redacted]"`: `Authorization`, `Cookie`, `X-Api-Key` and the others [`is_credential_header`] names; `Mcp-Session-Id` is kept), `connection` (on a client's POST: `reused`, and for a connection opened for it `dns_us`, the name's resolution, absent for an address, `connect_us`, the TCP connect, and over `https` `tls_us`, the TLS handshake) |
//! | `message` | JSON, optional | the whole message as it was sent (line breaks between its tokens turned into blanks); for an `invalid` message, its text as a JSON string; absent when the writer redacts messages (`--trace-redact`) |
//!
//! Readers ignore fields they do not know: fields may be added within
//! version 1, always optional. Any other change raises `v`; the analysis
//! skips lines of a newer version and says how many it skipped. A reader
//! must expect the last line to be cut short (a writer that was killed) and
//! lines a little out of time order (concurrent writers).

mod calllog;
mod envelope;
mod error;
pub mod flow;
mod from_rmcp;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod line;
mod origin;
mod pairing;
mod pending;
pub mod read;
mod record;
mod redact;
mod show;
pub mod summary;
#[cfg(test)]
mod testdata;
mod writer;

pub use crate::calllog::{ToolCallLog, ToolCallRecord};
pub use crate::envelope::Envelope;
pub use crate::error::{Lookalike, ReadError};
pub use crate::flow::{Flow, FlowFormat};
pub use crate::pairing::GivenUp;
pub use crate::pending::MAX_PENDING;
pub use crate::read::{ReadWarnings, TraceReader};
pub use crate::record::{
    ConnectionCost, Direction, FORMAT_VERSION, HttpInfo, HttpRecord, Kind, LIFECYCLE_METHODS,
    Observed, Side, TraceRecord, is_lifecycle, transport,
};
pub use crate::redact::{REDACTED, is_credential_header};
pub use crate::summary::Summary;
pub use crate::writer::{FLUSH_EVERY, TraceOptions, Tracer};
