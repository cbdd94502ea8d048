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

/// `nexo` run in `dir` with its own configuration and state directories.
fn in_project(dir: &std::path::Path, args: &[&str]) -> crate::support::Run {
    let mut command = crate::support::nexo();
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .args(args);
    crate::support::run_command(command)
}

/// Writes `config` as `nexo.json` in `dir`; gives its path, for `--config`.
pub fn config_file(dir: &std::path::Path, config: Value) -> String {
    let path = dir.join("nexo.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path.display().to_string()
}

fn servers_json(dir: &std::path::Path) -> Value {
    let listed = in_project(dir, &["servers", "--json", "--timeout", "5"]);
    listed.assert_success();
    listed.stdout_json()
}

fn state_of<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == name)
        .unwrap_or_else(|| panic!("no {name}: {listing:#}"))
}

/// Issue 16: a project's `.mcp.json` mixing stdio (nexo and a Python SDK
/// server), Streamable HTTP, legacy SSE (seed 001's `connect` dialect
/// too), builtin and broken servers. Nothing starts before the user allows
/// it (CVE-2025-59536); then all connect at once, the broken one failing
/// alone; an entry that changes must be allowed again.
#[test]
fn issue_16_a_project_file_of_every_kind_of_server() {
    let http = crate::support::HttpServer::serve("utils", &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let seed_001 = runtime.block_on(crate::sse_client::start_seed_001());
    let python_server = crate::support::repo_root().join("tests/interop/python_server.py");
    let project = TempDir::new("project");
    let dir = project.path();
    let write = |morse_args: &str| {
        let config = serde_json::json!({"mcpServers": {
            "morse": {"command": crate::support::nexo_path(), "args": serde_json::from_str::<Value>(morse_args).unwrap()},
            "python": {"command": crate::support::python_sdk(), "args": [python_server, "stdio"]},
            "remote": {"type": "http", "url": format!("{}/mcp", http.base_url().trim_end_matches('/'))},
            "legacy": {"type": "sse", "url": format!("{}/sse", http.base_url().trim_end_matches('/'))},
            "seed001": {"type": "sse", "url": seed_001},
            "dns": {"builtin": "dns", "timeout": 2},
            "broken": {"command": "sh", "args": ["-c", "echo no database >&2; exit 3"]},
        }});
        std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    };
    write(r#"["serve", "morse"]"#);

    let before = servers_json(dir);
    assert_eq!(before["servers"], serde_json::json!([]), "{before:#}");
    assert_eq!(before["skipped"].as_array().unwrap().len(), 7, "{before:#}");
    let refused = in_project(dir, &["tools", "--server", "morse"]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert!(
        refused.error_line()["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("nexo servers --allow morse"),
        "{refused:#?}"
    );
    // `--yes` is no consent: no such flag here at all.
    assert_ne!(in_project(dir, &["servers", "--yes"]).code(), 0);

    let mut allow = vec!["servers"];
    for name in [
        "morse", "python", "remote", "legacy", "seed001", "dns", "broken",
    ] {
        allow.extend(["--allow", name]);
    }
    in_project(dir, &allow).assert_success();
    let after = servers_json(dir);
    for (name, transport) in [
        ("morse", "stdio"),
        ("python", "stdio"),
        ("remote", "streamable-http"),
        ("legacy", "sse"),
        ("seed001", "sse"),
        ("dns", "in-process"),
    ] {
        let server = state_of(&after, name);
        assert_eq!(server["state"], "connected", "{after:#}");
        assert_eq!(server["transport"], transport, "{after:#}");
        assert!(server["tools"].as_u64().unwrap() > 0, "{after:#}");
    }
    // The legacy transport belongs to the `initialize` era.
    assert_ne!(state_of(&after, "legacy")["revision"], "2026-07-28");
    let broken = state_of(&after, "broken");
    assert_ne!(broken["state"], "connected");
    assert_eq!(broken["lastError"]["code"], "unreachable", "{after:#}");
    let log = std::fs::read_to_string(broken["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("no database"), "{log}");

    let called = in_project(dir, &["call", "--server", "morse", "morse", "texto=sos"]);
    called.assert_success();
    assert_eq!(called.stdout.trim(), "... --- ...");
    let added = in_project(dir, &["call", "--server", "python", "add", "a=2", "b=3"]);
    added.assert_success();
    assert_eq!(added.stdout.trim(), "5");
    let echoed = in_project(dir, &["call", "--server", "seed001", "echo", "text=hi"]);
    echoed.assert_success();
    assert_eq!(echoed.stdout.trim(), "echo: hi");

    // A changed entry is a new one: allowed again or not started.
    write(r#"["serve", "morse", "--max-body", "1000"]"#);
    let changed = servers_json(dir);
    let skipped: Vec<&Value> = changed["skipped"].as_array().unwrap().iter().collect();
    assert_eq!(skipped.len(), 1, "{changed:#}");
    assert_eq!(skipped[0]["name"], "morse");
    assert!(
        skipped[0]["entry"]
            .as_str()
            .unwrap()
            .contains("changed since you allowed it")
    );
}

/// Issue 16: a configuration file with an error names the file, line and
/// column, and what to write instead.
#[test]
fn issue_16_a_bad_configuration_file_is_shown_where() {
    let project = TempDir::new("badconfig");
    let path = project.path().join("servers.json");
    std::fs::write(
        &path,
        "{\n  \"mcpServers\": {\n    \"a\": {\"comand\": \"x\"}\n  }\n}\n",
    )
    .unwrap();
    let shown = path.display().to_string();
    let failed = in_project(project.path(), &["servers", "--config", &shown]);
    assert_eq!(failed.code(), 1, "{failed:#?}");
    let error = &failed.error_line()["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{shown}:3:")),
        "{failed:#?}"
    );
    assert!(
        error["hint"].as_str().unwrap().contains("command"),
        "{failed:#?}"
    );
}

/// Issue 16: with no configuration file at all, the five bundled servers
/// run in-process.
#[test]
fn issue_16_no_configuration_means_the_bundled_servers() {
    let project = TempDir::new("noconfig");
    let listing = servers_json(project.path());
    let names: Vec<&str> = listing["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| {
            assert_eq!(server["state"], "connected", "{listing:#}");
            assert_eq!(server["transport"], "in-process", "{listing:#}");
            server["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, ["dns", "morse", "utils", "files", "music"]);
}

/// Issue 16: the configuration's `"trace"` records every connection of
/// `nexo servers` and of `--server`, unless `--trace` names another file.
#[test]
fn issue_16_the_configuration_names_the_trace_file() {
    let project = TempDir::new("configtrace");
    let dir = project.path();
    let config_arg = config_file(
        dir,
        serde_json::json!({
            "trace": "traces/all.jsonl",
            "traceRedact": true,
            "mcpServers": {"morse": {"builtin": "morse"}, "utils": {"builtin": "utils"}},
        }),
    );
    std::fs::create_dir(dir.join("traces")).unwrap();
    in_project(dir, &["servers", "--config", &config_arg]).assert_success();
    let lines = trace_lines(&dir.join("traces/all.jsonl"));
    assert_paired(&lines);
    for server in ["morse", "utils"] {
        assert!(
            lines.iter().any(|l| l["server"] == server),
            "{server}: {lines:#?}"
        );
    }
    // `"traceRedact": true`: no message bodies.
    assert!(
        lines.iter().all(|l| l.get("message").is_none()),
        "{lines:#?}"
    );

    let own = dir.join("own.jsonl");
    let own_arg = own.display().to_string();
    let called = in_project(
        dir,
        &[
            "call",
            "--config",
            &config_arg,
            "--server",
            "morse",
            "morse",
            "texto=sos",
            "--trace",
            &own_arg,
        ],
    );
    called.assert_success();
    let lines = trace_lines(&own);
    assert_paired(&lines);
    assert!(lines.iter().all(|l| l["server"] == "morse"), "{lines:#?}");
    // `--trace` without `--trace-redact`: the messages are there.
    assert!(lines.iter().all(|l| l["message"].is_object()), "{lines:#?}");
}

/// Issue 16: `--server` calls a tool within the limits its entry gives it:
/// a tool whose `toolTimeouts` maximum is shorter than its work fails with
/// exit 4 naming the limit, however often it reports progress, while the
/// server's other tools keep the server's limits.
#[test]
fn issue_16_a_configured_tool_maximum_ends_a_call() {
    let project = TempDir::new("toollimits");
    let dir = project.path();
    let fixture = crate::support::repo_root().join("crates/client/tests/fixtures/flaky_server.py");
    let config_arg = config_file(
        dir,
        serde_json::json!({"mcpServers": {"flaky": {
            "command": "python3",
            "args": [fixture, "--steps", "20", "--step", "0.2"],
            "timeout": 1,
            "toolTimeouts": {"slow": {"maxTimeout": 1.5}},
        }}}),
    );
    let slow = in_project(
        dir,
        &["call", "--config", &config_arg, "--server", "flaky", "slow"],
    );
    assert_eq!(slow.code(), 4, "{slow:#?}");
    let error = &slow.error_line()["error"];
    assert_eq!(error["code"], "timeout", "{slow:#?}");
    assert!(
        error["hint"].as_str().unwrap().contains("maxTimeout"),
        "{slow:#?}"
    );
    // Progress every 0.2 s kept the 1 s idle limit from firing; the 1.5 s
    // maximum ended it: the tool's 4 s of work would have answered (exit 0).

    in_project(
        dir,
        &["call", "--config", &config_arg, "--server", "flaky", "look"],
    )
    .assert_success();
}

/// Issue 16: a configured server that needs authorization says so, with
/// the command that signs in, and the others connect all the same.
#[test]
fn issue_16_a_server_that_needs_authorization_says_how() {
    let project = TempDir::new("needsauth");
    let dir = project.path();
    let url = format!("http://127.0.0.1:{}/mcp", crate::client::refusing_server());
    let config_arg = config_file(
        dir,
        serde_json::json!({"mcpServers": {
            "locked": {"type": "http", "url": url},
            "morse": {"builtin": "morse"},
        }}),
    );
    let listed = in_project(dir, &["servers", "--config", &config_arg, "--json"]);
    listed.assert_success();
    let listing = listed.stdout_json();
    let locked = state_of(&listing, "locked");
    assert_eq!(locked["state"], "needs authorization", "{listing:#}");
    assert_eq!(locked["lastError"]["code"], "unauthorized", "{listing:#}");
    assert!(
        locked["lastError"]["hint"]
            .as_str()
            .unwrap()
            .contains(&format!("nexo tools --server locked --config {config_arg}")),
        "{listing:#}"
    );
    assert_eq!(state_of(&listing, "morse")["state"], "connected");
}

/// Issue 16: tool names for the model are `server__tool`; a server whose
/// name no LLM provider accepts in a function name gets safe names, and
/// each renaming is shown.
#[test]
fn issue_16_tool_names_that_had_to_change_are_shown() {
    let project = TempDir::new("renamed");
    let dir = project.path();
    let config_arg = config_file(
        dir,
        serde_json::json!({"mcpServers": {
            "dns lab.v2": {"builtin": "dns"},
            "morse": {"builtin": "morse"},
        }}),
    );
    let listed = in_project(dir, &["servers", "--config", &config_arg, "--json"]);
    listed.assert_success();
    let listing = listed.stdout_json();
    let renamed = listing["renamed"].as_array().unwrap();
    let dns_tools = state_of(&listing, "dns lab.v2")["tools"].as_u64().unwrap();
    assert_eq!(renamed.len() as u64, dns_tools, "{listing:#}");
    let mut names = std::collections::BTreeSet::new();
    for renaming in renamed {
        assert_eq!(renaming["server"], "dns lab.v2", "{listing:#}");
        let name = renaming["name"].as_str().unwrap();
        assert!(name.starts_with("dns_lab_v2__"), "{name}");
        assert!(
            name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{name}"
        );
        assert!(renaming["why"].as_str().unwrap().contains("replaced"));
        assert!(names.insert(name.to_owned()), "{name} twice");
    }

    let shown = in_project(dir, &["servers", "--config", &config_arg]);
    shown.assert_success();
    assert!(
        shown.stderr.contains("tool name for the model:"),
        "{shown:#?}"
    );
}

/// `nexo ARGS` in `dir` on a terminal (a pseudo-terminal python makes), the
/// person answering `answer` to every question; gives everything the
/// terminal showed.
fn on_terminal(dir: &std::path::Path, args: &[&str], answer: &str) -> String {
    const DRIVER: &str = r#"
import os, pty, sys
answer = sys.argv[1].encode() + b"\r"
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
shown = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    shown += chunk
    if shown.endswith(b"[y/N] "):
        os.write(fd, answer)
os.waitpid(pid, 0)
sys.stdout.write(shown.decode(errors="replace"))
"#;
    let mut command = std::process::Command::new("python3");
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .args(["-c", DRIVER, answer, crate::support::nexo_path()])
        .args(args);
    let run = crate::support::run_command(command);
    run.assert_success();
    run.stdout
}

/// Issue 16: on a terminal, a project's server is shown (command, env
/// names) and started only if the person says yes; the answer is kept.
/// Piped, nothing is asked (the other tests).
#[test]
fn issue_16_a_person_at_a_terminal_is_asked_before_a_project_server_starts() {
    let project = TempDir::new("consentprompt");
    let dir = project.path();
    std::fs::write(
        dir.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"morse": {
            "command": crate::support::nexo_path(),
            "args": ["serve", "morse"],
            "env": {"MORSE_TOKEN": "not-shown"},
        }}})
        .to_string(),
    )
    .unwrap();

    let refused = on_terminal(dir, &["servers"], "n");
    assert!(refused.contains("serve morse"), "{refused}");
    assert!(refused.contains("MORSE_TOKEN"), "{refused}");
    assert!(!refused.contains("not-shown"), "{refused}");
    assert!(refused.contains("skipped, not allowed yet"), "{refused}");

    let allowed = on_terminal(dir, &["servers"], "y");
    assert!(allowed.contains("allowed `morse` to start"), "{allowed}");
    assert!(allowed.contains("connected"), "{allowed}");
    // Kept: asked no more, piped or not.
    let listing = servers_json(dir);
    assert_eq!(state_of(&listing, "morse")["state"], "connected");
}

/// Issue 16: what a stdio child prints on stdout that is no JSON-RPC (a
/// banner) is in the client's trace too, as `invalid`, in the session of
/// the messages around it; the exchange still works and pairs.
#[test]
fn issue_16_a_childs_stray_stdout_is_traced_as_invalid() {
    let dir = TempDir::new("straytrace");
    let trace = dir.path().join("stray.jsonl");
    let trace_arg = trace.display().to_string();
    let server = format!(
        "sh -c 'echo Server ready on stdio; exec {}'",
        crate::support::serve_morse_command()
    );
    run(&["tools", "--stdio", &server, "--trace", &trace_arg]).assert_success();
    let lines = trace_lines(&trace);
    let invalid: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "invalid").collect();
    assert_eq!(invalid.len(), 1, "{lines:#?}");
    assert_eq!(invalid[0]["direction"], "in", "{lines:#?}");
    assert_eq!(invalid[0]["message"], "Server ready on stdio", "{lines:#?}");
    assert_eq!(invalid[0]["session"], lines[0]["session"], "{lines:#?}");
    let valid: Vec<Value> = lines
        .iter()
        .filter(|l| l["kind"] != "invalid")
        .cloned()
        .collect();
    assert_paired(&valid);
}
