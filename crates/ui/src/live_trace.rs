//! The protocol trace, live: every message between the page's servers and
//! nexo, as the trace file format of nexo-trace records it. A [`Tracer`]
//! writes its lines into [`LiveTrace`] instead of a file; each line is kept
//! (the export is a trace file `nexo trace summary` reads) and drawn:
//! a request opens a group, its answer joins it with the latency, and what
//! the server asks or tells while a call of the client's is open (sampling,
//! elicitation, progress, logging) is nested under that call, and so are
//! the later rounds of a call the server answered `input_required`
//! (2026-07-28's multi round-trip requests: the same call again, with the
//! answers and the `requestState`).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use nexo_trace::{Kind, TraceOptions, TraceRecord, Tracer};
use serde_json::Value;

use crate::events::Events;
use crate::render::{escape, json_tree};

/// How many lines are kept for the export.
const KEPT_LINES: usize = 20_000;
/// How many top-level groups are drawn; older ones are dropped.
const KEPT_GROUPS: usize = 2_000;
/// Messages larger than this are shown as text, not as a tree.
const MAX_TREE_BYTES: usize = 256 * 1024;

/// The trace of the page's connections.
#[derive(Clone)]
pub struct LiveTrace {
    book: Arc<Mutex<Book>>,
    events: Arc<Events>,
}

impl LiveTrace {
    pub fn new(events: Arc<Events>) -> Self {
        Self {
            book: Arc::default(),
            events,
        }
    }

    /// The tracer to give the connections.
    pub fn tracer(&self) -> Tracer {
        Tracer::to_writer(
            Sink {
                partial: Vec::new(),
                trace: self.clone(),
            },
            TraceOptions::default(),
        )
    }

    /// The kept lines, as a trace file.
    pub fn export(&self) -> String {
        let book = self.lock();
        let mut out = String::new();
        for line in &book.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// Every group drawn, oldest first.
    pub fn html(&self) -> String {
        let book = self.lock();
        let mut out = String::new();
        for child in &book.top {
            book.draw(&mut out, child);
        }
        out
    }

    /// How many lines are kept.
    pub fn kept_lines(&self) -> usize {
        self.lock().lines.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take_line(&self, line: &str) {
        let Ok(record) = serde_json::from_str::<TraceRecord>(line) else {
            return;
        };
        let fragment = self.lock().add(line, &record);
        self.events.publish("trace", fragment);
    }
}

/// What the tracer writes into: whole lines, split and kept.
struct Sink {
    partial: Vec<u8>,
    trace: LiveTrace,
}

impl io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(bytes);
        while let Some(end) = self.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            self.trace.take_line(&text);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Child {
    Row(String),
    Group(u64),
}

struct Group {
    head: String,
    /// Words the filter finds the group by.
    find: String,
    children: Vec<Child>,
    /// A client's request: its method and what it is about (a tool's or a
    /// prompt's name, a URI), by which its later rounds are known.
    call: Option<String>,
    /// The first round of the call this group is a later round of.
    round_of: Option<u64>,
}

/// The kept lines and how they are grouped.
#[derive(Default)]
struct Book {
    lines: VecDeque<String>,
    top: VecDeque<Child>,
    groups: HashMap<u64, Group>,
    next_group: u64,
    /// Requests waiting for their answer: (server, session, id, sent by the
    /// client) to their group.
    waiting: HashMap<(String, String, String, bool), u64>,
    /// The open calls of the client's, per (server, session), newest last.
    open_calls: HashMap<(String, String), Vec<u64>>,
    /// Calls answered `input_required`, per (server, session, call): the
    /// group of their first round, where the next round goes.
    rounds: HashMap<(String, String, String), u64>,
}

impl Book {
    /// Keeps `line` and files `record`; gives the fragment that shows it.
    fn add(&mut self, line: &str, record: &TraceRecord) -> String {
        if self.lines.len() == KEPT_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line.to_owned());
        let session = record.session.clone().unwrap_or_default();
        let connection = (record.server.clone(), session.clone());
        let from_client = record.from_client();
        let row = row(record);
        match record.kind {
            Kind::Request => {
                let message = message_of(record);
                let call = from_client
                    .then(|| message.as_ref().and_then(call_of))
                    .flatten();
                // A later round of a call goes under its first round.
                let round_of = call
                    .as_ref()
                    .filter(|_| message.as_ref().is_some_and(is_later_round))
                    .and_then(|call| {
                        self.rounds
                            .remove(&(record.server.clone(), session.clone(), call.clone()))
                    })
                    .filter(|first| self.groups.contains_key(first));
                let parent = if from_client {
                    round_of
                } else {
                    self.open_calls
                        .get(&connection)
                        .and_then(|calls| calls.last().copied())
                };
                let group = self.next_group;
                self.next_group += 1;
                let find = format!(
                    "{} {}",
                    record.server,
                    record.method.as_deref().unwrap_or_default()
                );
                self.groups.insert(
                    group,
                    Group {
                        head: row,
                        find,
                        children: Vec::new(),
                        call,
                        round_of,
                    },
                );
                if let Some(id) = record.id_key() {
                    self.waiting
                        .insert((record.server.clone(), session, id, from_client), group);
                }
                if from_client {
                    self.open_calls.entry(connection).or_default().push(group);
                }
                let mut html = String::new();
                self.draw(&mut html, &Child::Group(group));
                self.place(parent, Child::Group(group), html)
            }
            Kind::Response | Kind::Error => {
                let key = record
                    .id_key()
                    .map(|id| (record.server.clone(), session.clone(), id, !from_client));
                let group = key.and_then(|key| self.waiting.remove(&key));
                if let Some(group) = group
                    && let Some(calls) = self.open_calls.get_mut(&connection)
                {
                    calls.retain(|open| *open != group);
                }
                if let Some(asked) = group.and_then(|group| self.groups.get(&group))
                    && let Some(call) = &asked.call
                    && message_of(record).as_ref().is_some_and(asks_for_input)
                {
                    let first = asked.round_of.or(group).unwrap_or_default();
                    self.rounds.insert(
                        (record.server.clone(), session.clone(), call.clone()),
                        first,
                    );
                }
                self.place(group, Child::Row(row.clone()), row)
            }
            Kind::Notification | Kind::Invalid => {
                let parent = (!from_client)
                    .then(|| {
                        self.open_calls
                            .get(&connection)
                            .and_then(|calls| calls.last().copied())
                    })
                    .flatten();
                self.place(parent, Child::Row(row.clone()), row)
            }
        }
    }

    /// Files `child` under `parent` (at the top without one) and gives the
    /// fragment that puts `html` there on an open page.
    fn place(&mut self, parent: Option<u64>, child: Child, html: String) -> String {
        let target =
            match parent.and_then(|parent| self.groups.get_mut(&parent).map(|g| (parent, g))) {
                Some((parent, group)) => {
                    group.children.push(child);
                    format!("#tg-{parent}-body")
                }
                None => {
                    if self.top.len() == KEPT_GROUPS
                        && let Some(Child::Group(oldest)) = self.top.pop_front()
                    {
                        self.forget(oldest);
                    }
                    self.top.push_back(child);
                    "#trace-rows".to_owned()
                }
            };
        format!("<div hx-swap-oob=\"beforeend:{target}\">{html}</div>")
    }

    /// Forgets a group dropped from the top, with what points at it.
    fn forget(&mut self, group: u64) {
        self.waiting.retain(|_, waiting| *waiting != group);
        self.rounds.retain(|_, first| *first != group);
        for calls in self.open_calls.values_mut() {
            calls.retain(|open| *open != group);
        }
        self.open_calls.retain(|_, calls| !calls.is_empty());
        if let Some(removed) = self.groups.remove(&group) {
            for child in removed.children {
                if let Child::Group(inner) = child {
                    self.forget(inner);
                }
            }
        }
    }

    fn draw(&self, out: &mut String, child: &Child) {
        match child {
            Child::Row(row) => out.push_str(row),
            Child::Group(id) => {
                let Some(group) = self.groups.get(id) else {
                    return;
                };
                let _ = write!(
                    out,
                    "<div class=\"tg\" id=\"tg-{id}\" data-find=\"{}\">{}<div class=\"tg-body\" id=\"tg-{id}-body\">",
                    escape(&group.find),
                    group.head
                );
                for inner in &group.children {
                    self.draw(out, inner);
                }
                out.push_str("</div></div>");
            }
        }
    }
}

/// The message `record` kept, parsed.
fn message_of(record: &TraceRecord) -> Option<Value> {
    record
        .message
        .as_ref()
        .and_then(|message| serde_json::from_str(message.get()).ok())
}

/// What a client's request is about: its method and the name or URI it
/// names (`tools/call echo`, `resources/read file:///a`).
fn call_of(message: &Value) -> Option<String> {
    let method = message.get("method")?.as_str()?;
    let params = message.get("params");
    let about = params
        .and_then(|params| params.get("name").or_else(|| params.get("uri")))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(format!("{method} {about}"))
}

/// Whether a request is a later round of a call: it carries the answers
/// to the server's input requests, or the state it asked back.
fn is_later_round(message: &Value) -> bool {
    message.get("params").is_some_and(|params| {
        params.get("inputResponses").is_some() || params.get("requestState").is_some()
    })
}

/// Whether an answer asks for input before the call can finish.
fn asks_for_input(message: &Value) -> bool {
    message
        .get("result")
        .and_then(|result| result.get("resultType"))
        .and_then(Value::as_str)
        == Some("input_required")
}

/// One message as a row: when, which server, which way, what, how big,
/// how long it took to be answered, and the message itself to unfold.
fn row(record: &TraceRecord) -> String {
    let seconds = record.time_us / 1_000_000;
    let millis = (record.time_us / 1_000) % 1_000;
    let clock = format!(
        "{:02}:{:02}:{:02}.{millis:03}",
        (seconds / 3600) % 24,
        (seconds / 60) % 60,
        seconds % 60
    );
    let (arrow, way) = if record.from_client() {
        ("→", "nexo to the server")
    } else {
        ("←", "the server to nexo")
    };
    let kind = match record.kind {
        Kind::Request => "request",
        Kind::Notification => "notification",
        Kind::Response => "response",
        Kind::Error => "error",
        Kind::Invalid => "invalid",
    };
    let mut out = format!(
        "<div class=\"tr kind-{kind}{}\"><span class=\"t\">{clock}</span> \
         <span class=\"srv\">{}</span> <span class=\"arrow\" title=\"{way}\">{arrow}</span> \
         <span class=\"m\">{}</span> <span class=\"k\">{kind}</span>",
        if record.tool_error { " tool-error" } else { "" },
        escape(&record.server),
        escape(record.method.as_deref().unwrap_or(""))
    );
    if let Some(id) = &record.id {
        let _ = write!(
            out,
            " <span class=\"id\">#{}</span>",
            escape(&id.to_string())
        );
    }
    if let Some(latency) = record.latency_us {
        let _ = write!(
            out,
            " <span class=\"lat\">{:.1} ms</span>",
            latency as f64 / 1000.0
        );
    }
    let _ = write!(out, " <span class=\"b\">{} B</span>", record.bytes);
    if let Some(message) = &record.error_message {
        let _ = write!(
            out,
            " <span class=\"error\">{} {}</span>",
            record
                .error_code
                .map(|code| code.to_string())
                .unwrap_or_default(),
            escape(message)
        );
    }
    if record.tool_error {
        out.push_str(" <span class=\"error\">tool error</span>");
    }
    if let Some(message) = &record.message {
        let text = message.get();
        let shown = if text.len() > MAX_TREE_BYTES {
            let mut end = MAX_TREE_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("<pre>{}…</pre>", escape(&text[..end]))
        } else {
            serde_json::from_str::<Value>(text)
                .map(|value| json_tree(&value))
                .unwrap_or_else(|_| format!("<pre>{}</pre>", escape(text)))
        };
        let _ = write!(out, "<details><summary>message</summary>{shown}</details>");
    }
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: &str) -> String {
        format!(
            "{{\"v\":1,\"time_us\":1700000000000000,\"server\":\"utils\",\"transport\":\"in-process\",\"bytes\":10,{fields}}}"
        )
    }

    #[test]
    fn answers_join_their_request_and_server_requests_nest_under_the_call() {
        let trace = LiveTrace::new(Arc::default());
        let call = line(
            "\"side\":\"client\",\"direction\":\"out\",\"kind\":\"request\",\"id\":1,\"method\":\"tools/call\",\"message\":{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"<script>\"}}",
        );
        let asked = line(
            "\"side\":\"client\",\"direction\":\"in\",\"kind\":\"request\",\"id\":0,\"method\":\"elicitation/create\"",
        );
        let answered = line(
            "\"side\":\"client\",\"direction\":\"out\",\"kind\":\"response\",\"id\":0,\"method\":\"elicitation/create\"",
        );
        let result = line(
            "\"side\":\"client\",\"direction\":\"in\",\"kind\":\"response\",\"id\":1,\"method\":\"tools/call\",\"latency_us\":1500",
        );
        for text in [&call, &asked, &answered, &result] {
            trace.take_line(text);
        }
        let html = trace.html();
        let call_at = html.find("id=\"tg-0\"").unwrap_or(usize::MAX);
        let nested_at = html.find("id=\"tg-1\"").unwrap_or(usize::MAX);
        let call_body = html.find("id=\"tg-0-body\"").unwrap_or(usize::MAX);
        assert!(call_at < call_body && call_body < nested_at, "{html}");
        assert!(html.contains("1.5 ms"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert_eq!(trace.export().lines().count(), 4);
    }

    #[test]
    fn later_rounds_of_a_call_nest_under_its_first_round() {
        let trace = LiveTrace::new(Arc::default());
        let request = |id: u64, params: &str| {
            line(&format!(
                "\"side\":\"client\",\"direction\":\"out\",\"kind\":\"request\",\"id\":{id},\"method\":\"tools/call\",\"message\":{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{params}}}"
            ))
        };
        let answer = |id: u64, result: &str| {
            line(&format!(
                "\"side\":\"client\",\"direction\":\"in\",\"kind\":\"response\",\"id\":{id},\"method\":\"tools/call\",\"message\":{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}"
            ))
        };
        let asks = r#"{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create"}},"requestState":"s1"}"#;
        for text in [
            request(1, r#"{"name":"ask"}"#),
            answer(1, asks),
            // Another call meanwhile stays at the top.
            request(2, r#"{"name":"other"}"#),
            answer(2, r#"{"content":[]}"#),
            request(
                3,
                r#"{"name":"ask","inputResponses":{"a":{}},"requestState":"s1"}"#,
            ),
            answer(3, asks),
            request(
                4,
                r#"{"name":"ask","inputResponses":{"a":{}},"requestState":"s2"}"#,
            ),
            answer(4, r#"{"content":[],"resultType":"complete"}"#),
            // A new call of the same tool, not a round: at the top.
            request(5, r#"{"name":"ask"}"#),
        ] {
            trace.take_line(&text);
        }
        let html = trace.html();
        let body = |group: u64| {
            html.find(&format!("id=\"tg-{group}-body\""))
                .unwrap_or(usize::MAX)
        };
        let at = |group: u64| {
            html.find(&format!("id=\"tg-{group}\""))
                .unwrap_or(usize::MAX)
        };
        // Rounds 2 and 3 (groups 2 and 3) sit inside the first (group 0),
        // before the other call (group 1) opens.
        assert!(body(0) < at(2) && at(2) < at(3) && at(3) < at(1), "{html}");
        let top: Vec<u64> = trace
            .lock()
            .top
            .iter()
            .filter_map(|child| match child {
                Child::Group(group) => Some(*group),
                Child::Row(_) => None,
            })
            .collect();
        assert_eq!(top, [0, 1, 4], "the rounds are not at the top");
    }
}
