//! Issue 16 through the binary: bundled servers in-process (`--builtin`),
//! the client-side trace (`--trace`), and many servers from a
//! configuration file (`nexo servers`, `--server`).

use serde_json::Value;

use crate::support::{TempDir, run};

/// The lines of a trace file, parsed.
fn trace_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Every request of a trace has exactly one answer with its id, and the
/// answer names the request's method and a latency.
fn assert_paired(lines: &[Value]) {
    let requests: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "request").collect();
    assert!(!requests.is_empty(), "{lines:#?}");
    for request in requests {
        let answers: Vec<&Value> = lines
            .iter()
            .filter(|l| {
                (l["kind"] == "response" || l["kind"] == "error")
                    && l["id"] == request["id"]
                    && l["session"] == request["session"]
            })
            .collect();
        assert_eq!(answers.len(), 1, "{request}: {lines:#?}");
        assert_eq!(answers[0]["method"], request["method"], "{lines:#?}");
        assert!(answers[0]["latency_us"].is_u64(), "{lines:#?}");
    }
}

#[test]
fn issue_16_builtin_servers_run_in_process_and_are_traced() {
    let dir = TempDir::new("trace");
    let trace = dir.path().join("calls.jsonl");
    let trace_arg = trace.display().to_string();
    let called = run(&[
        "call",
        "--builtin",
        "morse",
        "morse",
        "texto=sos",
        "--trace",
        &trace_arg,
    ]);
    called.assert_success();
    assert_eq!(called.stdout.trim(), "... --- ...");

    let lines = trace_lines(&trace);
    assert_paired(&lines);
    for line in &lines {
        assert_eq!(line["v"], 1);
        assert_eq!(line["transport"], "in-process");
        assert_eq!(line["side"], "client");
        assert!(line["message"].is_object(), "{line}");
    }
    let call = lines
        .iter()
        .find(|l| l["method"] == "tools/call" && l["kind"] == "request")
        .unwrap();
    assert_eq!(call["message"]["params"]["arguments"]["texto"], "sos");
    assert!(lines.iter().any(|l| l["lifecycle"] == true));

    // Redacted: the same lines without the messages.
    let redacted = dir.path().join("redacted.jsonl");
    let redacted_arg = redacted.display().to_string();
    run(&[
        "tools",
        "--builtin",
        "utils",
        "--trace",
        &redacted_arg,
        "--trace-redact",
    ])
    .assert_success();
    let lines = trace_lines(&redacted);
    assert_paired(&lines);
    assert!(
        lines.iter().all(|l| l.get("message").is_none()),
        "{lines:#?}"
    );
}

#[test]
fn issue_16_an_unknown_builtin_names_the_known_ones() {
    let failed = run(&["tools", "--builtin", "nope"]);
    assert_eq!(failed.code(), 1, "{failed:#?}");
    assert!(
        failed
            .stderr
            .contains("known: morse, utils, dns, files, music, everything"),
        "{failed:#?}"
    );
}
