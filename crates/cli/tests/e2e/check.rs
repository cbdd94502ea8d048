//! `nexo check` end to end: every bundled server (as `--builtin`, over
//! `--stdio 'nexo serve morse'`, over `--url` to `nexo serve utils --http`,
//! over its legacy HTTP+SSE endpoint, and as a configuration entry with
//! options) shows nothing above info, save the findings that are true of
//! the conformance fixture; a buggy server fails `--fail-on` with exit 8;
//! the `--json` document and the SARIF file keep their shape.

use serde_json::Value;

use crate::support::{
    HttpServer, NodeTools, Run, TempDir, nexo, repo_root, run_command, shell_quote,
};

/// `nexo check ARGS... --json`, with a private data directory (the music
/// server's library) and a short time limit.
fn check(args: &[&str]) -> (Run, Value) {
    let data = TempDir::new("check-data");
    let mut command = nexo();
    command
        .env("XDG_DATA_HOME", data.path())
        .arg("check")
        .args(args)
        .args(["--json", "--timeout", "10"]);
    let run = run_command(command);
    let document = run.stdout_json();
    assert_document(&document);
    (run, document)
}

/// What every `--json` document holds.
fn assert_document(document: &Value) {
    assert_eq!(document["schema"], "nexo-check/1", "{document:#}");
    for key in ["score", "critical", "error", "warning", "info"] {
        assert!(
            document["summary"][key].is_u64(),
            "summary.{key}: {document:#}"
        );
    }
    assert_eq!(document["tokens"]["method"], "bytes/4");
    assert!(document["tokens"]["total"].is_u64());
    assert!(
        document["probes"]
            .as_array()
            .is_some_and(|probes| !probes.is_empty())
    );
    for finding in document["findings"].as_array().unwrap() {
        for key in ["id", "severity", "group", "title", "evidence", "why", "fix"] {
            assert!(finding[key].is_string(), "finding.{key}: {finding:#}");
        }
        let id = finding["id"].as_str().unwrap();
        assert!(
            id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "not kebab-case: {id}"
        );
        assert!(
            ["critical", "error", "warning", "info"]
                .contains(&finding["severity"].as_str().unwrap())
        );
    }
}

/// The findings above info, as `id subject`.
fn above_info(document: &Value) -> Vec<String> {
    document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["severity"] != "info")
        .map(|finding| {
            format!(
                "{} {}",
                finding["id"].as_str().unwrap(),
                finding["subject"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn check_bundled_servers_show_nothing_above_info() {
    for server in ["morse", "utils", "dns", "files", "music"] {
        let (run, document) = check(&["--builtin", server, "--fail-on", "warning"]);
        assert_eq!(above_info(&document), Vec::<String>::new(), "{server}");
        assert_eq!(run.code(), 0, "{server}: {run:#?}");
        assert_eq!(document["transport"], "stdio");
        assert_eq!(document["summary"]["score"], 100, "{server}");
    }
}

/// The conformance fixture's `json_schema_2020_12_tool` uses `$defs`,
/// `$ref` and a top-level `allOf` on purpose (it tests JSON Schema 2020-12
/// support): true portability findings, and only those.
#[test]
fn check_everything_shows_only_its_deliberate_schema_findings() {
    let (run, document) = check(&["--builtin", "everything", "--fail-on", "error"]);
    assert_eq!(run.code(), 0, "{run:#?}");
    let mut found = above_info(&document);
    found.sort();
    assert_eq!(
        found,
        [
            "schema-refs json_schema_2020_12_tool",
            "schema-top-level-combinator json_schema_2020_12_tool"
        ]
    );
}

#[test]
fn check_morse_over_stdio_and_utils_over_http() {
    let command = format!("{} serve morse", shell_quote(crate::support::nexo_path()));
    let (run, document) = check(&["--stdio", &command, "--fail-on", "warning"]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["server"]["name"], "nexo-morse");

    let server = HttpServer::serve("utils", &[]);
    let (run, document) = check(&["--url", &server.mcp_url(), "--fail-on", "warning"]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["transport"], "streamable-http");
    let probes: Vec<&str> = document["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|probe| probe["outcome"] == "ran")
        .map(|probe| probe["name"].as_str().unwrap())
        .collect();
    for probe in [
        "http-transport",
        "latency",
        "concurrent-requests",
        "unknown-tool",
        "version-negotiation",
    ] {
        assert!(probes.contains(&probe), "{probe} not run: {probes:?}");
    }
    assert_eq!(document["measurements"][0]["name"], "ping_median");
}

#[test]
fn check_fails_with_8_at_fail_on_and_writes_sarif() {
    let fixture = repo_root().join("crates/check/tests/fixtures/buggy_server.py");
    let command = format!("python3 {} stdout", shell_quote(&fixture.to_string_lossy()));
    let dir = TempDir::new("check-sarif");
    let sarif = dir.path().join("check.sarif");
    let (run, document) = check(&["--stdio", &command, "--sarif", sarif.to_str().unwrap()]);
    assert_eq!(run.code(), 8, "{run:#?}");
    assert_eq!(run.error_line()["error"]["code"], "findings");
    assert_eq!(document["findings"][0]["id"], "stdout-pollution");
    assert!(
        document["findings"][0]["why"]
            .as_str()
            .unwrap()
            .contains("footgun 1")
    );

    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run0 = &log["runs"][0];
    assert_eq!(run0["tool"]["driver"]["name"], "nexo check");
    assert_eq!(run0["tool"]["driver"]["rules"][0]["id"], "stdout-pollution");
    assert_eq!(run0["results"][0]["ruleId"], "stdout-pollution");
    assert_eq!(run0["results"][0]["level"], "error");
    assert!(run0["results"][0]["message"]["text"].is_string());

    // The same server passes when only critical findings fail the run.
    let (run, _) = check(&["--stdio", &command, "--fail-on", "critical"]);
    assert_eq!(run.code(), 0, "{run:#?}");
}

/// The official TypeScript servers ([`NodeTools`]). Both answer an
/// unknown tool with `isError: true` (the TypeScript SDK 1.x turns its own
/// -32602 into a tool result) where the spec asks for a JSON-RPC error: a
/// true finding, and the only one above info. everything's long-running
/// operation (10 s by default) is left out by a short --timeout: it shows
/// as `tool-call-slow` (info).
#[test]
fn check_official_servers_installed_by_interop() {
    let tools = NodeTools::installed();
    let path = tools.path();
    let root = TempDir::new("check-filesystem");
    std::fs::write(root.path().join("a.txt"), "hello").unwrap();
    for (name, command) in [
        (
            "everything",
            format!(
                "{} stdio",
                shell_quote(&tools.bin("mcp-server-everything").to_string_lossy())
            ),
        ),
        (
            "filesystem",
            format!(
                "{} {}",
                shell_quote(&tools.bin("mcp-server-filesystem").to_string_lossy()),
                shell_quote(&root.path().to_string_lossy())
            ),
        ),
    ] {
        let mut run_command_ = nexo();
        run_command_.env("PATH", &path).args([
            "check",
            "--stdio",
            &command,
            "--json",
            "--timeout",
            "3",
            "--fail-on",
            "critical",
        ]);
        let run = run_command(run_command_);
        assert_eq!(run.code(), 0, "{name}: {run:#?}");
        let document = run.stdout_json();
        assert_document(&document);
        assert_eq!(
            above_info(&document),
            ["unknown-tool-is-error-result nexo_check_no_such_tool"],
            "{name}"
        );
    }
}

/// The legacy HTTP+SSE endpoint of a served server is named as such (a
/// warning: the transport is deprecated) and probed over its stream, like
/// any session; given `--transport sse`, it is probed without the warning.
#[test]
fn check_a_legacy_sse_endpoint() {
    let server = HttpServer::start(&[]);
    let url = format!("{}/sse", server.base_url());
    let (run, document) = check(&["--url", &url, "--fail-on", "error"]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["transport"], "sse");
    assert_eq!(above_info(&document), [format!("legacy-sse-only {url}")]);
    assert_eq!(document["server"]["name"], "nexo-morse");

    let (run, document) = check(&["--url", &url, "--transport", "sse", "--fail-on", "warning"]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["transport"], "sse");
    assert_eq!(above_info(&document), Vec::<String>::new());
    let probes: Vec<&str> = document["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|probe| probe["outcome"] == "ran")
        .map(|probe| probe["name"].as_str().unwrap())
        .collect();
    for probe in [
        "legacy-sse-transport",
        "unknown-tool",
        "tool-results",
        "concurrent-requests",
    ] {
        assert!(probes.contains(&probe), "{probe} not run: {probes:?}");
    }
}

/// A configuration entry `{"builtin": NAME, ...options}` is checked as
/// `nexo serve NAME` with its options as flags: the music server's `db`
/// is the file it opens (and creates), not the default library.
#[test]
fn check_a_builtin_entry_with_options() {
    let dir = TempDir::new("check-entry");
    let config = crate::host::config_file(
        dir.path(),
        serde_json::json!({"mcpServers": {"library": {"builtin": "music", "db": "library.sqlite3"}}}),
    );
    let data = TempDir::new("check-entry-data");
    let mut command = nexo();
    command
        .env("XDG_DATA_HOME", data.path())
        .current_dir(dir.path())
        .args(["check", "--server", "library", "--config", &config])
        .args(["--json", "--timeout", "10", "--fail-on", "warning"]);
    let run = run_command(command);
    let document = run.stdout_json();
    assert_document(&document);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["transport"], "stdio");
    assert!(dir.path().join("library.sqlite3").exists(), "{run:#?}");
    assert!(!data.path().join("nexo/music.sqlite3").exists());
}

/// Issue 39: a stdio server that takes longer to start than `--timeout`
/// is checked all the same: the start has its own allowance
/// (`--startup-timeout`), and only later exchanges are held to
/// `--timeout`.
#[test]
fn issue_39_a_server_slower_to_start_than_the_timeout_is_checked() {
    let slow = format!(
        "sh -c {}",
        shell_quote(&format!(
            "sleep 3; exec {}",
            crate::support::serve_morse_command()
        ))
    );
    let mut command = nexo();
    command.args(["check", "--stdio", &slow, "--json", "--timeout", "1"]);
    let run = run_command(command);
    let document = run.stdout_json();
    assert_document(&document);
    let findings = document["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|finding| finding["severity"] == "info"),
        "{document:#}"
    );
}

/// Issue 38: check's links are built from nexo-client's one HTTP client
/// builder, so an `https://` server whose certificate a CA of the user's
/// own signed is checked once `--cacert` names that CA (before, check's
/// own clients ignored it), and refused as unreachable without it.
#[test]
fn https_with_the_users_ca() {
    let dir = TempDir::new("check-https");
    let ca = nexo_testkit::TestCa::new("nexo test CA").unwrap();
    let ca_file = ca.write(dir.path()).unwrap();
    let (cert, key) = ca
        .issue("localhost", &["localhost", "127.0.0.1"])
        .unwrap()
        .write(dir.path())
        .unwrap();
    let server = HttpServer::serve(
        "utils",
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let url = format!("https://localhost:{}/mcp", server.port);
    let (run, document) = check(&["--url", &url, "--cacert", ca_file.to_str().unwrap()]);
    assert_eq!(run.code(), 0, "{run:#?}");
    assert_eq!(document["transport"], "streamable-http", "{document:#}");
    assert_eq!(document["server"]["name"], "nexo-utils", "{document:#}");
    let data = TempDir::new("check-https-data");
    let mut untrusted = nexo();
    untrusted.env("XDG_DATA_HOME", data.path()).args([
        "check",
        "--url",
        &url,
        "--json",
        "--timeout",
        "10",
    ]);
    let untrusted = run_command(untrusted);
    assert_eq!(untrusted.code(), 4, "{untrusted:#?}");
}
