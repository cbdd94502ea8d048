//! `nexo trace summary`: what a trace holds, at a glance. Counts by kind
//! and by method; per-method latency (p50, p95 and max, by the nearest-rank
//! method, over every answer matched to its request, errors included);
//! JSON-RPC errors and failed tool calls listed; requests never answered
//! and answers to no request listed; bytes each way, per server too. The
//! analysis pairs answers with requests itself rather than trusting the
//! writer's `method` and `latency_us`, so that traces written by other
//! versions or tools are read alike.
//!
//! [`Summary`] serializes for `--json`; [`Summary::to_text`] is the human
//! rendering.

use std::collections::BTreeMap;
use std::io::BufRead;

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use serde::Serialize;

use crate::error::ReadError;
use crate::pairing::{GivenUp, Paired, Pairing, Waiting};
use crate::read::{ReadWarnings, TraceReader};
use crate::record::{Kind, TraceRecord};
use crate::show;

/// What a trace holds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Records read.
    pub messages: u64,
    /// The first and last record's `time_us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_time_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_time_us: Option<u64>,
    pub duration_us: u64,
    pub kinds: Kinds,
    /// By method, in alphabetical order.
    pub methods: Vec<MethodStats>,
    /// By server, in alphabetical order.
    pub servers: Vec<ServerStats>,
    /// Message bytes each way, every server together.
    pub bytes: Bytes,
    /// The HTTP connections the client's requests went over.
    pub connections: Connections,
    /// JSON-RPC errors, in file order.
    pub errors: Vec<ErrorEntry>,
    /// Tool results with `isError`, in file order.
    pub tool_errors: Vec<Answered>,
    /// Requests with no answer by the end of the trace.
    pub unanswered: Vec<Unanswered>,
    /// Responses and errors that answer no request in the trace.
    pub orphans: Vec<Orphan>,
    /// Answers to requests their sender had given up on (cancelled, or an
    /// era probe abandoned for `initialize`): dropped by the receiver, and
    /// counted in no latency.
    pub late: Vec<Late>,
    /// Messages that are no JSON-RPC message.
    pub invalid: Vec<Seen>,
    /// What reading skipped.
    pub warnings: ReadWarnings,
}

/// Messages by kind; `lifecycle` counts those of every kind that belong to
/// the lifecycle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Kinds {
    pub request: u64,
    pub response: u64,
    pub notification: u64,
    pub error: u64,
    pub invalid: u64,
    pub lifecycle: u64,
}

impl Kinds {
    fn count(&mut self, kind: Kind) {
        match kind {
            Kind::Request => self.request += 1,
            Kind::Response => self.response += 1,
            Kind::Notification => self.notification += 1,
            Kind::Error => self.error += 1,
            Kind::Invalid => self.invalid += 1,
        }
    }
}

/// One method: requests and notifications of it, and the answers to its
/// requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MethodStats {
    pub method: String,
    pub requests: u64,
    pub notifications: u64,
    pub responses: u64,
    pub errors: u64,
    pub tool_errors: u64,
    /// Over the answers matched to their requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
}

/// Latency percentiles, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Latency {
    pub count: u64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub max_us: u64,
}

impl Latency {
    /// Nearest-rank percentiles of `samples`; `None` when there are none.
    pub fn of(samples: &mut [u64]) -> Option<Latency> {
        samples.sort_unstable();
        let max_us = *samples.last()?;
        let rank = |percent: u64| {
            let n = samples.len() as u64;
            let rank = (percent * n).div_ceil(100).max(1);
            samples[usize::try_from(rank - 1).unwrap_or_default()]
        };
        Some(Latency {
            count: samples.len() as u64,
            p50_us: rank(50),
            p95_us: rank(95),
            max_us,
        })
    }
}

/// One server's share of the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServerStats {
    pub server: String,
    pub messages: u64,
    pub requests: u64,
    pub errors: u64,
    /// Distinct sessions seen (messages outside any session not counted).
    pub sessions: u64,
    pub bytes: Bytes,
}

/// The HTTP connections a client's requests went over (the requests'
/// `http.connection`): how many were opened, at what cost in all, and how
/// many requests went over one kept from before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Connections {
    pub opened: u64,
    pub reused: u64,
    /// Name resolution, summed over the connections opened.
    pub dns_us: u64,
    /// TCP connects, summed.
    pub connect_us: u64,
    /// TLS handshakes, summed.
    pub tls_us: u64,
}

impl Connections {
    fn add(&mut self, record: &TraceRecord) {
        let Some(connection) = record.http.as_ref().and_then(|http| http.connection) else {
            return;
        };
        if connection.reused {
            self.reused += 1;
        } else {
            self.opened += 1;
            self.dns_us += connection.dns_us.unwrap_or(0);
            self.connect_us += connection.connect_us.unwrap_or(0);
            self.tls_us += connection.tls_us.unwrap_or(0);
        }
    }
}

/// Message bytes each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bytes {
    pub client_to_server: u64,
    pub server_to_client: u64,
}

impl Bytes {
    fn add(&mut self, record: &TraceRecord) {
        if record.from_client() {
            self.client_to_server += record.bytes;
        } else {
            self.server_to_client += record.bytes;
        }
    }
}

/// Where and when a message was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen {
    pub time_us: u64,
    pub server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `client` or `server`: who sent it.
    pub from: &'static str,
}

impl Seen {
    fn of(record: &TraceRecord) -> Self {
        Self {
            time_us: record.time_us,
            server: record.server.clone(),
            session: record.session.clone(),
            from: sender(record.from_client()),
        }
    }
}

fn sender(from_client: bool) -> &'static str {
    if from_client { "client" } else { "server" }
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorEntry {
    #[serde(flatten)]
    pub seen: Seen,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    /// The method of the request it answers, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An answer, by the request it answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answered {
    #[serde(flatten)]
    pub seen: Seen,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// A request never answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unanswered {
    #[serde(flatten)]
    pub seen: Seen,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// An answer that came after its request was given up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Late {
    #[serde(flatten)]
    pub seen: Seen,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub given_up: GivenUp,
}

/// A response or error answering no request in the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Orphan {
    #[serde(flatten)]
    pub seen: Seen,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    pub kind: Kind,
}

/// The method an answer is counted under when its request is unknown.
const UNKNOWN_METHOD: &str = "(unknown)";

impl Summary {
    /// Reads a whole trace and sums it up.
    pub fn read<R: BufRead>(mut reader: TraceReader<R>) -> Result<Summary, ReadError> {
        let mut builder = Builder::default();
        while let Some(record) = reader.next_record()? {
            builder.add(&record);
        }
        Ok(builder.finish(reader.into_warnings()))
    }

    /// Sums up records already read.
    pub fn of(records: &[TraceRecord]) -> Summary {
        let mut builder = Builder::default();
        for record in records {
            builder.add(record);
        }
        builder.finish(ReadWarnings::default())
    }

    /// The summary for people: tables and lists, times as offsets from
    /// the first message.
    pub fn to_text(&self) -> String {
        let start = self.first_time_us.unwrap_or_default();
        let at = |time_us: u64| show::offset(time_us.saturating_sub(start));
        let mut out = String::new();
        let servers: Vec<&str> = self.servers.iter().map(|s| s.server.as_str()).collect();
        out.push_str(&format!(
            "{} messages in {}, {} {} ({})\n",
            self.messages,
            show::duration(self.duration_us),
            servers.len(),
            if servers.len() == 1 {
                "server"
            } else {
                "servers"
            },
            servers.join(", ")
        ));
        if let Some(first) = self.first_time_us {
            out.push_str(&format!("from {}\n", show::timestamp(first)));
        }
        out.push('\n');
        let kinds = [
            ("request", self.kinds.request),
            ("response", self.kinds.response),
            ("notification", self.kinds.notification),
            ("error", self.kinds.error),
            ("invalid", self.kinds.invalid),
        ];
        let mut rows: Vec<Vec<String>> = kinds
            .iter()
            .map(|(kind, count)| vec![(*kind).to_owned(), count.to_string()])
            .collect();
        rows.push(vec![
            "(lifecycle)".to_owned(),
            self.kinds.lifecycle.to_string(),
        ]);
        out.push_str(&table(&["kind", "messages"], rows, 1));
        out.push('\n');
        let rows = self
            .methods
            .iter()
            .map(|stats| {
                let latency = |pick: fn(&Latency) -> u64| {
                    stats
                        .latency
                        .as_ref()
                        .map_or_else(|| "-".to_owned(), |latency| show::duration(pick(latency)))
                };
                vec![
                    stats.method.clone(),
                    stats.requests.to_string(),
                    stats.notifications.to_string(),
                    stats.responses.to_string(),
                    stats.errors.to_string(),
                    latency(|l| l.p50_us),
                    latency(|l| l.p95_us),
                    latency(|l| l.max_us),
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "method",
                "requests",
                "notifications",
                "responses",
                "errors",
                "p50",
                "p95",
                "max",
            ],
            rows,
            1,
        ));
        out.push('\n');
        out.push_str(&format!(
            "bytes: client -> server {}, server -> client {}\n",
            self.bytes.client_to_server, self.bytes.server_to_client
        ));
        let connections = &self.connections;
        if connections.opened + connections.reused > 0 {
            let tls = if connections.tls_us > 0 {
                format!(", TLS {}", show::duration(connections.tls_us))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "connections: {} opened (name resolution {}, TCP connect {}{tls}, in all), {} \
                 request(s) on a connection kept from before\n",
                connections.opened,
                show::duration(connections.dns_us),
                show::duration(connections.connect_us),
                connections.reused
            ));
        }
        if self.servers.len() > 1 {
            out.push('\n');
            let rows = self
                .servers
                .iter()
                .map(|server| {
                    vec![
                        server.server.clone(),
                        server.messages.to_string(),
                        server.requests.to_string(),
                        server.errors.to_string(),
                        server.sessions.to_string(),
                        server.bytes.client_to_server.to_string(),
                        server.bytes.server_to_client.to_string(),
                    ]
                })
                .collect();
            out.push_str(&table(
                &[
                    "server",
                    "messages",
                    "requests",
                    "errors",
                    "sessions",
                    "bytes in",
                    "bytes out",
                ],
                rows,
                1,
            ));
        }
        let mut list = |title: &str, rows: Vec<Vec<String>>| {
            out.push('\n');
            if rows.is_empty() {
                out.push_str(&format!("{title}: none\n"));
            } else {
                out.push_str(&format!("{title} ({}):\n", rows.len()));
                for line in table(&[], rows, usize::MAX).lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
        };
        let where_ = |seen: &Seen| {
            let mut place = seen.server.clone();
            if let Some(session) = &seen.session {
                place.push_str(&format!(" session {}", show::short(session, 12)));
            }
            place
        };
        list(
            "errors",
            self.errors
                .iter()
                .map(|error| {
                    vec![
                        at(error.seen.time_us),
                        where_(&error.seen),
                        error.method.clone().unwrap_or_else(|| "-".into()),
                        format!("id {}", show::id(error.id.as_ref())),
                        error
                            .code
                            .map_or_else(|| "-".into(), |code| code.to_string()),
                        show::short(error.message.as_deref().unwrap_or_default(), 80),
                    ]
                })
                .collect(),
        );
        if !self.tool_errors.is_empty() {
            list(
                "failed tool calls (isError)",
                self.tool_errors
                    .iter()
                    .map(|answer| {
                        vec![
                            at(answer.seen.time_us),
                            where_(&answer.seen),
                            answer.method.clone().unwrap_or_else(|| "-".into()),
                            format!("id {}", show::id(answer.id.as_ref())),
                        ]
                    })
                    .collect(),
            );
        }
        list(
            "unanswered requests",
            self.unanswered
                .iter()
                .map(|request| {
                    vec![
                        at(request.seen.time_us),
                        where_(&request.seen),
                        format!("from {}", request.seen.from),
                        request.method.clone().unwrap_or_else(|| "-".into()),
                        format!("id {}", show::id(request.id.as_ref())),
                    ]
                })
                .collect(),
        );
        if !self.late.is_empty() {
            list(
                "late answers (to requests given up)",
                self.late
                    .iter()
                    .map(|late| {
                        vec![
                            at(late.seen.time_us),
                            where_(&late.seen),
                            late.method.clone().unwrap_or_else(|| "-".into()),
                            format!("id {}", show::id(late.id.as_ref())),
                            late.given_up.as_str().to_owned(),
                        ]
                    })
                    .collect(),
            );
        }
        list(
            "answers to no request",
            self.orphans
                .iter()
                .map(|orphan| {
                    vec![
                        at(orphan.seen.time_us),
                        where_(&orphan.seen),
                        format!("from {}", orphan.seen.from),
                        orphan.kind.as_str().to_owned(),
                        format!("id {}", show::id(orphan.id.as_ref())),
                    ]
                })
                .collect(),
        );
        if !self.invalid.is_empty() {
            list(
                "invalid messages",
                self.invalid
                    .iter()
                    .map(|seen| {
                        vec![
                            at(seen.time_us),
                            where_(seen),
                            format!("from {}", seen.from),
                        ]
                    })
                    .collect(),
            );
        }
        out
    }
}

/// Aligned columns without borders: a header row unless `header` is empty;
/// columns from `numbers_from` on are right-aligned.
fn table(header: &[&str], rows: Vec<Vec<String>>, numbers_from: usize) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    if !header.is_empty() {
        table.set_header(header.to_vec());
    }
    let columns = rows
        .first()
        .map_or(header.len(), Vec::len)
        .max(header.len());
    for row in rows {
        table.add_row(row);
    }
    for index in numbers_from..columns {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    let lines: Vec<String> = table
        .to_string()
        .lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned())
        .collect();
    format!("{}\n", lines.join("\n"))
}

/// The entry of method `name`, made when it is first seen.
fn method_stats(
    methods: &mut BTreeMap<String, (MethodStats, Vec<u64>)>,
    name: String,
) -> &mut (MethodStats, Vec<u64>) {
    methods.entry(name).or_insert_with_key(|name| {
        (
            MethodStats {
                method: name.clone(),
                ..MethodStats::default()
            },
            Vec::new(),
        )
    })
}

/// Sums records up as they are read.
#[derive(Default)]
struct Builder {
    summary: Summary,
    pairing: Pairing,
    index: usize,
    methods: BTreeMap<String, (MethodStats, Vec<u64>)>,
    servers: BTreeMap<String, (ServerStats, std::collections::BTreeSet<String>)>,
}

impl Builder {
    fn add(&mut self, record: &TraceRecord) {
        let summary = &mut self.summary;
        summary.messages += 1;
        summary.first_time_us = Some(
            summary
                .first_time_us
                .map_or(record.time_us, |first| first.min(record.time_us)),
        );
        summary.last_time_us = Some(summary.last_time_us.unwrap_or_default().max(record.time_us));
        summary.kinds.count(record.kind);
        if record.lifecycle {
            summary.kinds.lifecycle += 1;
        }
        summary.bytes.add(record);
        summary.connections.add(record);
        let (server, sessions) = self.servers.entry(record.server.clone()).or_default();
        server.messages += 1;
        server.bytes.add(record);
        if let Some(session) = &record.session {
            sessions.insert(session.clone());
        }
        match record.kind {
            Kind::Request => server.requests += 1,
            Kind::Error => server.errors += 1,
            _ => {}
        }
        let paired = self.pairing.observe(self.index, record);
        self.index += 1;
        let (answered, latency_us) = match paired {
            Paired::Answer {
                request:
                    Waiting {
                        given_up: Some(given_up),
                        method,
                        ..
                    },
                ..
            } => {
                self.summary.late.push(Late {
                    seen: Seen::of(record),
                    id: record.id.clone(),
                    method: method.clone(),
                    given_up,
                });
                (method, None)
            }
            Paired::Answer {
                request,
                latency_us,
            } => (request.method, Some(latency_us)),
            Paired::Orphan => {
                self.summary.orphans.push(Orphan {
                    seen: Seen::of(record),
                    id: record.id.clone(),
                    kind: record.kind,
                });
                (None, None)
            }
            Paired::Request | Paired::Unpaired => (None, None),
        };
        // An answer counts under its request's method; the writer's guess
        // when the request is not in the trace.
        let method = answered.or_else(|| record.method.clone());
        let name = method.clone().unwrap_or_else(|| UNKNOWN_METHOD.to_owned());
        match record.kind {
            Kind::Request => method_stats(&mut self.methods, name).0.requests += 1,
            Kind::Notification => method_stats(&mut self.methods, name).0.notifications += 1,
            Kind::Response | Kind::Error => {
                let (entry, latencies) = method_stats(&mut self.methods, name);
                if record.kind == Kind::Response {
                    entry.responses += 1;
                } else {
                    entry.errors += 1;
                }
                if record.tool_error {
                    entry.tool_errors += 1;
                }
                latencies.extend(latency_us);
            }
            Kind::Invalid => self.summary.invalid.push(Seen::of(record)),
        }
        if record.kind == Kind::Error {
            self.summary.errors.push(ErrorEntry {
                seen: Seen::of(record),
                id: record.id.clone(),
                method: method.clone(),
                code: record.error_code,
                message: record.error_message.clone(),
            });
        }
        if record.tool_error {
            self.summary.tool_errors.push(Answered {
                seen: Seen::of(record),
                id: record.id.clone(),
                method,
            });
        }
    }

    fn finish(mut self, warnings: ReadWarnings) -> Summary {
        let mut summary = self.summary;
        summary.duration_us = summary
            .last_time_us
            .zip(summary.first_time_us)
            .map_or(0, |(last, first)| last.saturating_sub(first));
        summary.methods = std::mem::take(&mut self.methods)
            .into_values()
            .map(|(mut stats, mut latencies)| {
                stats.latency = Latency::of(&mut latencies);
                stats
            })
            .collect();
        summary.servers = std::mem::take(&mut self.servers)
            .into_iter()
            .map(|(server, (mut stats, sessions))| {
                stats.server = server;
                stats.sessions = sessions.len() as u64;
                stats
            })
            .collect();
        summary.unanswered = self
            .pairing
            .unanswered()
            .into_iter()
            .map(|request| Unanswered {
                seen: Seen {
                    time_us: request.time_us,
                    server: request.server,
                    session: request.session,
                    from: sender(request.from_client),
                },
                id: request.id,
                method: request.method,
            })
            .collect();
        summary.warnings = warnings;
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    fn summary() -> Summary {
        Summary::of(&testdata::records(&testdata::two_servers()))
    }

    fn method<'a>(summary: &'a Summary, name: &str) -> &'a MethodStats {
        summary
            .methods
            .iter()
            .find(|stats| stats.method == name)
            .unwrap_or_else(|| panic!("no {name}: {:?}", summary.methods))
    }

    #[test]
    fn counts_by_kind_server_and_direction() {
        let summary = summary();
        assert_eq!(summary.messages, 18);
        assert_eq!(summary.duration_us, 40_000);
        assert_eq!(
            summary.kinds,
            Kinds {
                request: 8,
                response: 7,
                notification: 1,
                error: 1,
                invalid: 1,
                lifecycle: 7,
            }
        );
        let servers: Vec<(&str, u64, u64)> = summary
            .servers
            .iter()
            .map(|server| (server.server.as_str(), server.messages, server.sessions))
            .collect();
        assert_eq!(servers, [("morse", 11, 1), ("utils", 7, 2)]);
        // A client's trace: `out` went to the server, except the server's
        // own request (`ping`), whose answer went back out.
        assert_eq!(summary.bytes.client_to_server, 9 * 10);
        assert_eq!(summary.bytes.server_to_client, 8 * 10 + 7);
    }

    /// Same id on two servers and on two sessions of one server: each
    /// answer finds its own request, and the `initialize` answered with a
    /// new session finds the request made outside one.
    #[test]
    fn answers_find_their_requests() {
        let summary = summary();
        let initialize = method(&summary, "initialize");
        assert_eq!((initialize.requests, initialize.responses), (2, 2));
        assert_eq!(initialize.latency.map(|l| l.max_us), Some(2000));
        let call = method(&summary, "tools/call");
        assert_eq!(
            (call.requests, call.responses, call.errors, call.tool_errors),
            (4, 2, 1, 1)
        );
        let latency = call.latency.unwrap_or_else(|| panic!("no latency"));
        // morse id 1: 800 us; utils id 1 (u1): 3000 us; morse id 2: 400 us.
        assert_eq!(
            (latency.count, latency.p50_us, latency.max_us),
            (3, 800, 3000)
        );
        let list = method(&summary, "tools/list");
        assert_eq!(list.latency.map(|l| l.max_us), Some(3000));
        let ping = method(&summary, "ping");
        assert_eq!((ping.requests, ping.responses), (1, 1));
    }

    #[test]
    fn errors_unanswered_and_orphans_are_listed() {
        let summary = summary();
        assert_eq!(summary.errors.len(), 1);
        let error = &summary.errors[0];
        assert_eq!(error.method.as_deref(), Some("tools/call"));
        assert_eq!(error.code, Some(-32602));
        assert_eq!(error.message.as_deref(), Some("unknown tool: nosuch"));
        assert_eq!(error.seen.server, "morse");
        assert_eq!(summary.tool_errors.len(), 1);
        assert_eq!(summary.tool_errors[0].seen.server, "utils");
        let unanswered: Vec<(&str, String)> = summary
            .unanswered
            .iter()
            .map(|request| (request.seen.server.as_str(), show::id(request.id.as_ref())))
            .collect();
        assert_eq!(unanswered, [("morse", "3".to_owned())]);
        assert_eq!(summary.unanswered[0].seen.from, "client");
        assert_eq!(summary.orphans.len(), 1);
        assert_eq!(summary.orphans[0].seen.server, "utils");
        assert_eq!(summary.orphans[0].id, Some(9.into()));
        assert_eq!(summary.invalid.len(), 1);
        assert_eq!(summary.invalid[0].from, "server");
    }

    /// Issue 39: an answer to a request its sender gave up on is late,
    /// not an answer counted in latency, and a request given up is not
    /// unanswered: the probe a slow server answered after `initialize`
    /// went out, and a call cancelled then answered anyway.
    #[test]
    fn answers_to_requests_given_up_are_late() {
        use serde_json::json;
        use testdata::line;
        let cancel = json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "timed out"}
        });
        let lines = [
            line(0, "slow", "out", "request", json!({"id": 0, "method": "server/discover"})),
            line(10_000, "slow", "out", "request", json!({"id": 1, "method": "initialize", "lifecycle": true})),
            line(12_000, "slow", "in", "error", json!({"id": 0, "error_code": -32601})),
            line(12_100, "slow", "in", "response", json!({"id": 1, "lifecycle": true})),
            line(13_000, "slow", "out", "request", json!({"id": 2, "method": "tools/call"})),
            line(14_000, "slow", "out", "notification", json!({"method": "notifications/cancelled", "message": cancel})),
            line(15_000, "slow", "out", "request", json!({"id": 3, "method": "tools/call"})),
            line(15_500, "slow", "in", "response", json!({"id": 3})),
            line(19_000, "slow", "in", "response", json!({"id": 2})),
            line(20_000, "slow", "out", "request", json!({"id": 4, "method": "tools/call"})),
            line(21_000, "slow", "out", "notification", json!({"method": "notifications/cancelled", "message": {
                "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}
            }})),
        ]
        .join("\n");
        let summary = Summary::of(&testdata::records(&lines));
        let late: Vec<(String, GivenUp)> = summary
            .late
            .iter()
            .map(|late| (show::id(late.id.as_ref()), late.given_up))
            .collect();
        assert_eq!(
            late,
            [
                ("0".to_owned(), GivenUp::AbandonedProbe),
                ("2".to_owned(), GivenUp::Cancelled)
            ]
        );
        assert!(summary.unanswered.is_empty(), "{:?}", summary.unanswered);
        assert!(summary.orphans.is_empty(), "{:?}", summary.orphans);
        let call = method(&summary, "tools/call");
        let latency = call.latency.unwrap_or_else(|| panic!("no latency"));
        assert_eq!((latency.count, latency.max_us), (1, 500));
        let text = summary.to_text();
        assert!(
            text.contains("late answers (to requests given up)"),
            "{text}"
        );
        assert!(text.contains("probe abandoned for initialize"), "{text}");
    }

    /// Issue 39, point 7: the connections a client's requests went over,
    /// opened (with their costs summed) or reused.
    #[test]
    fn connections_are_summed() {
        use serde_json::json;
        use testdata::line;
        let http =
            |connection: serde_json::Value| json!({"method": "POST", "connection": connection});
        let lines = [
            line(0, "web", "out", "request", json!({"id": 1, "method": "ping", "http": http(json!({"reused": false, "dns_us": 300, "connect_us": 700}))})),
            line(10, "web", "out", "request", json!({"id": 2, "method": "ping", "http": http(json!({"reused": true}))})),
            line(20, "web", "out", "request", json!({"id": 3, "method": "ping", "http": http(json!({"reused": false, "connect_us": 500, "tls_us": 900}))})),
        ]
        .join("\n");
        let summary = Summary::of(&testdata::records(&lines));
        assert_eq!(
            summary.connections,
            Connections {
                opened: 2,
                reused: 1,
                dns_us: 300,
                connect_us: 1200,
                tls_us: 900
            }
        );
        let text = summary.to_text();
        assert!(
            text.contains("connections: 2 opened (name resolution 300 us, TCP connect 1.20 ms, TLS 900 us, in all), 1 request(s) on a connection kept from before"),
            "{text}"
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut hundred: Vec<u64> = (1..=100).rev().collect();
        let latency = Latency::of(&mut hundred).unwrap_or_else(|| panic!("none"));
        assert_eq!(
            (
                latency.p50_us,
                latency.p95_us,
                latency.max_us,
                latency.count
            ),
            (50, 95, 100, 100)
        );
        let one = Latency::of(&mut [7]).unwrap_or_else(|| panic!("none"));
        assert_eq!((one.p50_us, one.p95_us, one.max_us), (7, 7, 7));
        let mut few = [10, 20, 30];
        let few = Latency::of(&mut few).unwrap_or_else(|| panic!("none"));
        assert_eq!((few.p50_us, few.p95_us), (20, 30));
        assert!(Latency::of(&mut []).is_none());
    }

    #[test]
    fn the_text_names_every_finding() {
        let text = summary().to_text();
        for expected in [
            "18 messages in 40.00 ms, 2 servers (morse, utils)",
            "from 1970-01-01T00:00:01Z",
            "tools/call",
            "errors (1):",
            "-32602  unknown tool: nosuch",
            "unanswered requests (1):",
            "+30.000 ms  morse session m1  from client  tools/call  id 3",
            "answers to no request (1):",
            "failed tool calls (isError) (1):",
            "invalid messages (1):",
            "bytes: client -> server 90, server -> client 87",
        ] {
            assert!(
                text.contains(expected),
                "{expected:?} missing from:\n{text}"
            );
        }
        let empty = Summary::of(&[]).to_text();
        assert!(empty.starts_with("0 messages"), "{empty}");
        assert!(empty.contains("errors: none"), "{empty}");
    }

    #[test]
    fn the_json_has_the_fields_scripts_read() -> Result<(), serde_json::Error> {
        let json = serde_json::to_value(summary())?;
        assert_eq!(json["kinds"]["request"], 8);
        assert_eq!(json["unanswered"][0]["method"], "tools/call");
        assert_eq!(json["orphans"][0]["kind"], "response");
        assert_eq!(json["errors"][0]["code"], -32602);
        assert_eq!(json["warnings"]["newer_lines"], 0);
        let call = json["methods"]
            .as_array()
            .and_then(|methods| methods.iter().find(|m| m["method"] == "tools/call"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(call["latency"]["p50_us"], 800);
        Ok(())
    }
}
