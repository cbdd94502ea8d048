//! Traces: `nexo serve morse --trace FILE` driven by nexo's own client and
//! by raw lines, its trace checked for completeness and pairing through
//! `nexo trace summary --json`, and drawn by `nexo trace flow` in all three
//! formats (snapshots, times and latencies filtered); `--trace-redact`;
//! bad input (a missing file, a file that is no trace, a trace cut short),
//! with its exact output; the `--help` of both subcommands.

use std::path::Path;

use insta_cmd::assert_cmd_snapshot;
use serde_json::Value;

use crate::snapshots::{assert_run_snapshot, settings};
use crate::stdio_wire::StdioServer;
use crate::support::{TempDir, nexo, nexo_path, run, shell_quote};

/// The `--stdio` command line of the morse server tracing into `trace`.
fn traced_morse(trace: &Path, extra: &str) -> String {
    format!(
        "{} serve morse --trace {}{extra}",
        shell_quote(nexo_path()),
        shell_quote(&trace.display().to_string())
    )
}

/// Two client runs against traced servers, each over its own stdio
/// connection: a call that works (the 2025 handshake first), and one the
/// tool refuses (`isError`).
fn two_client_runs(trace: &Path) {
    let server = traced_morse(trace, "");
    let encoded = run(&[
        "call",
        "--stdio",
        &server,
        "morse",
        "texto=sos",
        "--protocol",
        "2025",
    ]);
    assert_eq!(encoded.assert_success().stdout, "... --- ...\n");
    let refused = run(&[
        "call",
        "--stdio",
        &server,
        "demorse",
        "codigo=.-.-.-.-.-.-.-",
        "--protocol",
        "2025",
    ]);
    assert_eq!(refused.code(), 5, "{refused:#?}");
}

fn summary_json(trace: &Path) -> Value {
    let path = trace.display().to_string();
    let summary = run(&["trace", "summary", &path, "--json"]);
    assert!(summary.stderr.is_empty(), "{summary:#?}");
    summary.assert_success().stdout_json()
}

/// Every request the client made is in the trace with its answer, in
/// order, each answer naming its method; the two connections are two
/// sessions; nothing is left unpaired.
#[test]
fn a_served_exchange_is_traced_complete_and_paired() {
    let dir = TempDir::new("trace");
    let trace = dir.path().join("trace.jsonl");
    two_client_runs(&trace);
    let json = summary_json(&trace);
    assert_eq!(json["unanswered"], serde_json::json!([]), "{json:#}");
    assert_eq!(json["orphans"], serde_json::json!([]), "{json:#}");
    assert_eq!(json["invalid"], serde_json::json!([]), "{json:#}");
    assert_eq!(json["errors"], serde_json::json!([]), "{json:#}");
    let kinds = &json["kinds"];
    assert_eq!(kinds["request"], kinds["response"], "{json:#}");
    assert_eq!(kinds["notification"], 2, "{json:#}");
    let methods: Vec<(String, u64, u64)> = json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["method"].as_str().unwrap().to_owned(),
                m["requests"].as_u64().unwrap(),
                m["responses"].as_u64().unwrap(),
            )
        })
        .collect();
    for (method, requests) in [("initialize", 2), ("tools/call", 2)] {
        assert!(
            methods.contains(&(method.to_owned(), requests, requests)),
            "{method}: {methods:?}"
        );
    }
    let call = json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "tools/call")
        .unwrap();
    assert_eq!(call["tool_errors"], 1, "{call:#}");
    assert_eq!(call["latency"]["count"], 2, "{call:#}");
    assert_eq!(json["tool_errors"].as_array().unwrap().len(), 1);
    let servers = json["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["server"], "morse");
    assert_eq!(servers[0]["sessions"], 2);
    assert!(json["bytes"]["client_to_server"].as_u64().unwrap() > 0);
    assert!(json["bytes"]["server_to_client"].as_u64().unwrap() > 0);
    // Every line is a version-1 record with the server's side of it.
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            (&record["v"], &record["side"]),
            (&1.into(), &"server".into())
        );
        assert_eq!(record["transport"], "stdio");
        assert!(record["message"].is_object(), "{record}");
    }
}

/// The flow of the same exchange, as text, Mermaid and PlantUML.
#[test]
fn the_flow_of_a_served_exchange() {
    let dir = TempDir::new("trace");
    let trace = dir.path().join("trace.jsonl");
    two_client_runs(&trace);
    let path = trace.display().to_string();
    let mut settings = settings();
    // Times and latencies differ on every run.
    settings.add_filter(r" *\+\d+\.\d{3} ms", "[TIME]");
    settings.add_filter(r"\b\d+(\.\d+)? (us|ms|s)\b", "[LATENCY]");
    for format in ["text", "mermaid", "plantuml"] {
        let drawn = run(&["trace", "flow", &path, "--format", format]);
        let shown = ["trace", "flow", "[FILE]", "--format", format];
        settings.bind(|| assert_run_snapshot(&format!("trace_flow_{format}"), &shown, &drawn));
    }
}

/// With `--trace-redact` no message is kept, but what the analysis needs
/// is, and the summary pairs as before.
#[test]
fn a_redacted_trace_keeps_what_the_analysis_needs() {
    let dir = TempDir::new("trace");
    let trace = dir.path().join("trace.jsonl");
    let server = traced_morse(&trace, " --trace-redact");
    run(&["call", "--stdio", &server, "morse", "texto=secreto"]).assert_success();
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains("secreto"), "{text}");
    assert!(!text.contains("\"message\""), "{text}");
    let json = summary_json(&trace);
    assert_eq!(json["unanswered"], serde_json::json!([]), "{json:#}");
    assert_eq!(
        json["kinds"]["request"], json["kinds"]["response"],
        "{json:#}"
    );
}

/// Raw lines: garbage and an unknown method are in the trace as an invalid
/// message and a JSON-RPC error, and the summary lists the error with its
/// method and code.
#[test]
fn errors_and_garbage_are_traced_and_listed() {
    let dir = TempDir::new("trace");
    let trace = dir.path().join("trace.jsonl");
    let path = trace.display().to_string();
    let mut server = StdioServer::start_with(&["--trace", &path]);
    server.initialize_like_seed_000();
    server.send("this is no json");
    assert_eq!(server.next_message()["error"]["code"], -32700);
    server.send(r#"{"jsonrpc":"2.0","id":9,"method":"nosuch/method"}"#);
    assert_eq!(server.next_message()["error"]["code"], -32601);
    server.close_stdin();
    assert!(server.remaining_lines().is_empty());
    assert!(server.proc.exit_status().success());
    let json = summary_json(&trace);
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{json:#}");
    assert_eq!(errors[0]["code"], -32700);
    assert_eq!(
        (&errors[1]["code"], &errors[1]["method"], &errors[1]["id"]),
        (&(-32601).into(), &"nosuch/method".into(), &9.into())
    );
    assert_eq!(json["invalid"].as_array().unwrap().len(), 1, "{json:#}");
    assert_eq!(json["invalid"][0]["from"], "client");
    assert_eq!(json["unanswered"], serde_json::json!([]), "{json:#}");
    // The parse error has no id to answer: listed, but no orphan.
    assert_eq!(json["orphans"], serde_json::json!([]), "{json:#}");
    assert!(errors[0].get("id").is_none(), "{json:#}");
    assert_eq!(json["kinds"]["lifecycle"], 3, "{json:#}");
}

#[test]
fn help_of_trace_subcommands() {
    for subcommand in ["summary", "flow"] {
        let mut command = nexo();
        command.args(["trace", subcommand, "--help"]);
        settings().bind(|| assert_cmd_snapshot!(format!("help_trace_{subcommand}"), command));
    }
}

/// Two records of a server's trace and the start of a third, as a writer
/// killed mid-line leaves it.
const CUT_SHORT: &str = concat!(
    r#"{"v":1,"time_us":1000000,"server":"morse","side":"server","direction":"in","transport":"stdio","session":"c","kind":"request","lifecycle":true,"id":0,"method":"ping","bytes":40}"#,
    "\n",
    r#"{"v":1,"time_us":1000250,"server":"morse","side":"server","direction":"out","transport":"stdio","session":"c","kind":"response","lifecycle":true,"id":0,"method":"ping","bytes":36,"latency_us":250}"#,
    "\n",
    r#"{"v":1,"time_us":1000300,"server":"morse","side":"server","direction":"in","tra"#,
);

#[test]
fn bad_input_is_explained() {
    let dir = TempDir::new("trace");
    let log = dir.path().join("calls.jsonl");
    std::fs::write(
        &log,
        r#"{"time":"2025-01-01T00:00:00Z","server":"morse","tool":"morse","arg_bytes":3,"dur_ms":0.1,"out_bytes":9,"is_error":false}"#,
    )
    .unwrap();
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, CUT_SHORT).unwrap();
    let missing = dir.path().join("missing.jsonl");
    let cases = [
        ("trace_missing_file", vec!["trace", "summary"], &missing),
        ("trace_not_a_trace", vec!["trace", "flow"], &log),
        ("trace_cut_short", vec!["trace", "summary", "--json"], &cut),
    ];
    for (name, args, path) in cases {
        let mut all = args.clone();
        let path = path.display().to_string();
        all.push(&path);
        let ran = run(&all);
        let mut shown = args.clone();
        shown.push("[FILE]");
        settings().bind(|| assert_run_snapshot(name, &shown, &ran));
    }
}

/// The cut trace is still read: its two whole records pair up, and the
/// warning names the cut line.
#[test]
fn a_trace_cut_short_is_read_up_to_the_cut() {
    let dir = TempDir::new("trace");
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, CUT_SHORT).unwrap();
    let path = cut.display().to_string();
    let summary = run(&["trace", "summary", &path, "--json"]);
    let json = summary.assert_success().stdout_json();
    assert_eq!(json["messages"], 2);
    assert_eq!(json["warnings"]["truncated_line"], 3);
    assert_eq!(json["unanswered"], serde_json::json!([]));
    assert!(
        summary
            .stderr
            .contains("warning: the last line (3) is cut short"),
        "{summary:#?}"
    );
    let flow = run(&["trace", "flow", &path, "--format", "mermaid"]);
    assert!(
        flow.assert_success()
            .stdout
            .contains("S1-->>C: ping (id 0) 250 us"),
        "{flow:#?}"
    );
}

/// Over HTTP, both transports: the records carry the HTTP method and
/// status, the session, and `Authorization` only as `[redacted]`; the
/// trace is whole once the server has stopped on SIGTERM.
#[test]
fn an_http_exchange_is_traced_with_credentials_redacted() {
    let dir = TempDir::new("trace");
    let trace = dir.path().join("trace.jsonl");
    let path = trace.display().to_string();
    let mut server = crate::support::HttpServer::start(&["--trace", &path]);
    let token = "Authorization: Bearer tok-9f3a";
    for (url, protocol) in [
        (server.mcp_url(), "2025"),
        (format!("{}/sse", server.base_url()), "2025"),
        (server.mcp_url(), "2026"),
    ] {
        let called = run(&[
            "call",
            "--url",
            &url,
            "--protocol",
            protocol,
            "--header",
            token,
            "echo",
            "texto=hola",
        ]);
        called.assert_success();
    }
    server.proc().terminate();
    assert!(server.proc().exit_status().success(), "{}", server.stderr());
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains("tok-9f3a"), "{text}");
    let json = summary_json(&trace);
    assert_eq!(json["unanswered"], serde_json::json!([]), "{json:#}");
    assert_eq!(json["orphans"], serde_json::json!([]), "{json:#}");
    assert_eq!(
        json["kinds"]["request"], json["kinds"]["response"],
        "{json:#}"
    );
    let mut transports = std::collections::BTreeSet::new();
    for line in text.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        transports.insert(record["transport"].as_str().unwrap().to_owned());
        let http = &record["http"];
        if record["direction"] == "in" {
            assert_eq!(http["method"], "POST", "{record}");
            assert_eq!(http["headers"]["authorization"], "[redacted]", "{record}");
        } else {
            assert_eq!(http["status"], 200, "{record}");
        }
    }
    assert_eq!(
        transports.into_iter().collect::<Vec<_>>(),
        ["sse", "streamable-http"]
    );
    // The 2025-era sessions: the handshake's answer and everything after
    // it carry the session.
    let sessions = json["servers"][0]["sessions"].as_u64().unwrap();
    assert_eq!(sessions, 2, "{json:#}");
}

/// The client's side of an HTTP exchange (issue 16): `--trace` on a client
/// command records, for both HTTP transports, the method of each request
/// and the status of each answer, `Authorization` only as `[redacted]`,
/// and as session the one the server handed out, the very ids the server's
/// own trace names; every request is answered in the client's trace.
#[test]
fn issue_16_a_client_traces_http_exchanges_with_the_servers_sessions() {
    let dir = TempDir::new("trace");
    let served = dir.path().join("served.jsonl");
    let mut server = crate::support::HttpServer::start(&["--trace", &served.display().to_string()]);
    let token = "Authorization: Bearer tok-5e1c";
    let mut client_traces = Vec::new();
    // `--transport auto` would try Streamable HTTP at `/sse` first, and
    // rightly trace that refused `initialize` as unanswered.
    for (url, flag, transport) in [
        (server.mcp_url(), "http", "streamable-http"),
        (format!("{}/sse", server.base_url()), "sse", "sse"),
    ] {
        let trace = dir.path().join(format!("client-{transport}.jsonl"));
        let called = run(&[
            "call",
            "--url",
            &url,
            "--transport",
            flag,
            "--protocol",
            "2025",
            "--header",
            token,
            "--trace",
            &trace.display().to_string(),
            "echo",
            "texto=hola",
        ]);
        called.assert_success();
        client_traces.push((trace, transport));
    }
    server.proc().terminate();
    assert!(server.proc().exit_status().success(), "{}", server.stderr());
    let sessions_of = |text: &str| -> std::collections::BTreeSet<String> {
        text.lines()
            .filter_map(|line| {
                let record: Value = serde_json::from_str(line).unwrap();
                record["session"].as_str().map(str::to_owned)
            })
            .collect()
    };
    let served_sessions = sessions_of(&std::fs::read_to_string(&served).unwrap());
    for (trace, transport) in client_traces {
        let text = std::fs::read_to_string(&trace).unwrap();
        assert!(!text.contains("tok-5e1c"), "{text}");
        let json = summary_json(&trace);
        assert_eq!(json["unanswered"], serde_json::json!([]), "{json:#}");
        assert_eq!(json["orphans"], serde_json::json!([]), "{json:#}");
        assert_eq!(
            json["kinds"]["request"], json["kinds"]["response"],
            "{json:#}"
        );
        let sessions = sessions_of(&text);
        assert_eq!(sessions.len(), 1, "{transport}: {text}");
        assert!(
            sessions.is_subset(&served_sessions),
            "{transport}: {sessions:?} not among the server's {served_sessions:?}"
        );
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            assert_eq!(record["side"], "client", "{record}");
            assert_eq!(record["transport"], transport, "{record}");
            let http = &record["http"];
            if record["direction"] == "out" {
                assert_eq!(http["method"], "POST", "{record}");
                assert_eq!(http["headers"]["authorization"], "[redacted]", "{record}");
                // The handshake's request is the only one outside the session.
                assert_eq!(
                    record["session"].is_null(),
                    transport == "streamable-http" && record["method"] == "initialize",
                    "{record}"
                );
            } else {
                assert_eq!(http["status"], 200, "{record}");
                assert!(record["session"].is_string(), "{record}");
            }
            if transport == "streamable-http" && record["method"] == "notifications/initialized" {
                assert_eq!(http["status"], 202, "{record}");
            }
            // Issue 16: a Streamable HTTP client's received messages show
            // the response's headers, as the server sent them.
            if transport == "streamable-http" && record["direction"] == "in" {
                let kind = http["headers"]["content-type"].as_str().unwrap_or_default();
                assert!(
                    kind.starts_with("text/event-stream") || kind.starts_with("application/json"),
                    "{record}"
                );
                if record["method"] == "initialize" {
                    assert_eq!(
                        http["headers"]["mcp-session-id"], record["session"],
                        "{record}"
                    );
                }
            }
        }
    }
}

/// Issue 39, point 7: a client's trace tells the connection each POST
/// went over: the first, opened for it, with what resolving `localhost`
/// and connecting took; the later ones on a connection the pool kept.
/// `nexo trace summary` sums them up.
#[test]
fn issue_39_a_client_trace_tells_each_request_s_connection() {
    let dir = TempDir::new("trace-connections");
    let server = crate::support::HttpServer::start(&[]);
    let trace = dir.path().join("client.jsonl");
    let url = format!("http://localhost:{}/mcp", server.port);
    run(&[
        "call",
        "--url",
        &url,
        "--transport",
        "http",
        "--trace",
        &trace.display().to_string(),
        "echo",
        "texto=hola",
    ])
    .assert_success();
    let text = std::fs::read_to_string(&trace).unwrap();
    let posts: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["direction"] == "out")
        .collect();
    assert!(posts.len() >= 3, "{text}");
    let first = &posts[0]["http"]["connection"];
    assert_eq!(first["reused"], false, "{text}");
    assert!(first["dns_us"].is_u64(), "localhost was resolved: {text}");
    assert!(first["connect_us"].is_u64(), "{text}");
    assert!(
        posts[1..]
            .iter()
            .any(|post| post["http"]["connection"]["reused"] == true),
        "no request went over a kept connection: {text}"
    );
    let summary = run(&["trace", "summary", &trace.display().to_string()]);
    assert!(
        summary.assert_success().stdout.contains("connections: "),
        "{summary:#?}"
    );
    let json = summary_json(&trace);
    assert!(
        json["connections"]["opened"].as_u64() >= Some(1),
        "{json:#}"
    );
    assert!(
        json["connections"]["reused"].as_u64() >= Some(1),
        "{json:#}"
    );
}
