//! Hand-written trace lines for the analysis's tests.

use serde_json::{Value, json};

use crate::record::TraceRecord;

/// One record; `extra` is merged in (`session`, `id`, `method`, ...).
pub fn line(time_us: u64, server: &str, direction: &str, kind: &str, extra: Value) -> String {
    let mut record = json!({
        "v": 1,
        "time_us": time_us,
        "server": server,
        "side": "client",
        "direction": direction,
        "transport": "stdio",
        "kind": kind,
        "bytes": 10,
    });
    if let (Some(record), Value::Object(extra)) = (record.as_object_mut(), extra) {
        record.extend(extra);
    }
    record.to_string()
}

/// A client's trace of two servers, `morse` (stdio, session `m1`) and
/// `utils` (HTTP, its `initialize` answered with session `u1`, a second
/// session `u2`), with every case the analysis tells apart: answers,
/// lifecycle, a JSON-RPC error, a failed tool, a request never answered,
/// an answer to no request, the same id on both servers and on both
/// sessions, and an invalid message.
pub fn two_servers() -> String {
    let m = |session: &str, extra: Value| {
        let mut extra = extra;
        extra["session"] = session.into();
        extra
    };
    let lines = [
        line(
            1_000_000,
            "morse",
            "out",
            "request",
            m(
                "m1",
                json!({"id": 0, "method": "initialize", "lifecycle": true}),
            ),
        ),
        line(
            1_001_200,
            "morse",
            "in",
            "response",
            m(
                "m1",
                json!({"id": 0, "method": "initialize", "lifecycle": true, "latency_us": 1200}),
            ),
        ),
        line(
            1_001_300,
            "morse",
            "out",
            "notification",
            m(
                "m1",
                json!({"method": "notifications/initialized", "lifecycle": true}),
            ),
        ),
        line(
            1_002_000,
            "utils",
            "out",
            "request",
            json!({"id": 0, "method": "initialize", "lifecycle": true, "transport": "streamable-http"}),
        ),
        line(
            1_004_000,
            "utils",
            "in",
            "response",
            m(
                "u1",
                json!({"id": 0, "lifecycle": true, "transport": "streamable-http", "http": {"status": 200, "headers": {"mcp-session-id": "u1"}}}),
            ),
        ),
        line(
            1_010_000,
            "morse",
            "out",
            "request",
            m(
                "m1",
                json!({"id": 1, "method": "tools/call", "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "morse", "arguments": {"texto": "sos"}}}}),
            ),
        ),
        line(
            1_010_500,
            "utils",
            "out",
            "request",
            m("u1", json!({"id": 1, "method": "tools/call"})),
        ),
        line(
            1_010_800,
            "morse",
            "in",
            "response",
            m("m1", json!({"id": 1, "method": "tools/call"})),
        ),
        line(
            1_011_000,
            "utils",
            "out",
            "request",
            m("u2", json!({"id": 1, "method": "tools/list"})),
        ),
        line(
            1_013_500,
            "utils",
            "in",
            "response",
            m("u1", json!({"id": 1, "tool_error": true})),
        ),
        line(
            1_014_000,
            "utils",
            "in",
            "response",
            m("u2", json!({"id": 1})),
        ),
        line(
            1_020_000,
            "morse",
            "out",
            "request",
            m("m1", json!({"id": 2, "method": "tools/call"})),
        ),
        line(
            1_020_400,
            "morse",
            "in",
            "error",
            m(
                "m1",
                json!({"id": 2, "error_code": -32602, "error_message": "unknown tool: nosuch"}),
            ),
        ),
        line(
            1_030_000,
            "morse",
            "out",
            "request",
            m("m1", json!({"id": 3, "method": "tools/call"})),
        ),
        line(
            1_031_000,
            "utils",
            "in",
            "response",
            m("u1", json!({"id": 9})),
        ),
        line(
            1_032_000,
            "morse",
            "in",
            "request",
            m(
                "m1",
                json!({"id": "s-1", "method": "ping", "lifecycle": true}),
            ),
        ),
        line(
            1_032_100,
            "morse",
            "out",
            "response",
            m("m1", json!({"id": "s-1", "lifecycle": true})),
        ),
        line(
            1_040_000,
            "morse",
            "in",
            "invalid",
            m("m1", json!({"bytes": 7})),
        ),
    ];
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

pub fn records(text: &str) -> Vec<TraceRecord> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}
