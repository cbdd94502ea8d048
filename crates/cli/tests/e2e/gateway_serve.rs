//! `nexo gateway --config FILE`: real upstreams (`nexo serve morse` as a
//! stdio child behind a script the test can make fail (its calls wait 1 s
//! at most for it), the bundled utils
//! and files servers in-process, the Python SDK's server as a stdio child)
//! behind the gateway on 127.0.0.1, reached by `nexo`'s own client in both
//! protocol eras and over the legacy SSE transport, and by raw HTTP for the
//! Origin check. The policy denies a path escaping through `..`, redacts
//! card numbers, hides a tool and blocks secrets in arguments; the audit
//! log it writes must verify.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{PATIENCE, Proc, Run, SEED_ACCEPT, TempDir, nexo, python_sdk, repo_root, run};

const POLICY: &str = r#"
default = "deny"

[[rule]]
name = "stay-in-work"
decision = "deny"
reason = "files are only reachable inside the work directory"
server = "files"
[[rule.argument]]
pointer = "/path"
path = { outside = ["WORK"], relative_to = "WORK" }

[[rule]]
name = "no-calculator"
decision = "deny"
server = "utils"
tool = "calc"

[[rule]]
name = "no-card-numbers"
decision = "redact"
replacement = "[CARD]"
tool = "echo"
[[rule.argument]]
pointer = "/text"
regex = '\b(?:\d[ -]?){13,16}\b'

[[rule]]
name = "the-upstreams"
decision = "allow"
server = ["morse", "utils", "files", "python"]

[detectors.secrets]
arguments = "block"
results = "redact"
"#;

/// A gateway started on a free port, stopped when dropped.
struct Gateway {
    proc: Proc,
    base: String,
    dir: TempDir,
}

impl Gateway {
    fn start() -> Self {
        let dir = TempDir::new("gateway");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("notes.txt"), "inside the work directory\n").unwrap();
        std::fs::write(
            dir.path().join("policy.toml"),
            POLICY.replace("WORK", work.to_str().unwrap()),
        )
        .unwrap();
        // The morse child, through a script that fails while `down` exists.
        let script = dir.path().join("morse.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n[ -e '{}/down' ] && exit 1\nexec '{}' serve morse\n",
                dir.path().display(),
                crate::support::nexo_path()
            ),
        )
        .unwrap();
        let python_server = repo_root().join("tests/interop/python_server.py");
        let config = serde_json::json!({
            "mcpServers": {
                "morse": {"command": "sh", "args": [script], "timeout": 1},
                "utils": {"builtin": "utils"},
                "files": {"builtin": "files", "roots": [work]},
                "python": {"command": python_sdk(), "args": [python_server, "stdio"]},
            },
            "gateway": {
                "policy": "policy.toml",
                "audit": "audit.jsonl",
                "policyCheckSeconds": 0.2,
                "virtualServers": {
                    "tb": {
                        "prefix": "tb_",
                        "tools": {
                            "morse__morse": {"name": "to_morse", "description": "Encodes text."},
                            "utils__sha256": {},
                        },
                    },
                },
            },
        });
        let file = dir.path().join("gateway.json");
        std::fs::write(&file, config.to_string()).unwrap();
        let (proc, base) = crate::gateway_serve::start(
            &file,
            &["--timeout", "20"],
            "nexo: gateway for 4 upstreams",
        );
        Self { proc, base, dir }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn audit(&self) -> std::path::PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// `nexo ARGS --url URL` against the gateway.
    fn nexo(&self, url: &str, args: &[&str]) -> Run {
        let mut all = vec![args[0], "--url", url];
        all.extend_from_slice(&args[1..]);
        run(&all)
    }

    /// The pid of the morse child (the `nexo serve morse` the script execs).
    fn morse_pid(&self) -> String {
        let out = std::process::Command::new("ps")
            .args(["-o", "pid=,args=", "--ppid", &self.proc.pid().to_string()])
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&out.stdout).into_owned();
        listing
            .lines()
            .find(|line| line.contains("serve morse"))
            .unwrap_or_else(|| panic!("no morse child in:\n{listing}"))
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    }
}

fn tool_names(run: &Run) -> Vec<String> {
    run.assert_success();
    run.stdout_json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

fn text_of(run: &Run) -> String {
    run.assert_success();
    run.stdout_json()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs `attempt` until it gives `true` or [`PATIENCE`] runs out.
fn eventually(what: &str, mut attempt: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !attempt() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn gateway_federates_the_upstreams_in_both_eras() {
    let gateway = Gateway::start();
    let url = gateway.url();
    for era in ["2025", "2026"] {
        let names = tool_names(&gateway.nexo(&url, &["tools", "--json", "--protocol", era]));
        for expected in [
            "morse__morse",
            "utils__echo",
            "files__read_text_file",
            "python__add",
        ] {
            assert!(
                names.iter().any(|name| name == expected),
                "{era}: {names:?}"
            );
        }
        assert!(
            !names.iter().any(|name| name == "utils__calc"),
            "{era}: a denied tool is listed: {names:?}"
        );
        let sos = gateway.nexo(
            &url,
            &[
                "call",
                "morse__morse",
                "texto=SOS",
                "--json",
                "--protocol",
                era,
            ],
        );
        assert_eq!(text_of(&sos), "... --- ...");
        let sum = gateway.nexo(&url, &["call", "python__add", "a=2", "b=3", "--json"]);
        assert_eq!(text_of(&sum), "5");
    }
    // The legacy SSE transport of 2024-11-05.
    let legacy = run(&[
        "tools",
        "--url",
        &format!("{}/sse", gateway.base),
        "--transport",
        "sse",
        "--json",
    ]);
    assert!(tool_names(&legacy).contains(&"morse__echo".to_owned()));
    // Resources: `nexo://server/URI`, read back through the same address.
    let resources = gateway.nexo(&url, &["resources", "--json"]);
    resources.assert_success();
    let uris: Vec<String> = resources.stdout_json()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["uri"].as_str().unwrap().to_owned())
        .collect();
    let greeting = "nexo://python/fixture://greeting";
    assert!(uris.contains(&greeting.to_owned()), "{uris:?}");
    let read = gateway.nexo(&url, &["read", greeting, "--json"]);
    read.assert_success();
    assert_eq!(read.stdout_json()["contents"][0]["uri"], greeting);
    // A virtual server: its chosen tools only, renamed and re-described.
    let tb = format!("{url}/tb");
    let listed = gateway.nexo(&tb, &["tools", "--json"]);
    assert_eq!(tool_names(&listed), ["tb_sha256", "tb_to_morse"]);
    assert_eq!(
        listed.stdout_json()["tools"][1]["description"],
        "Encodes text."
    );
    let encoded = gateway.nexo(&tb, &["call", "tb_to_morse", "texto=SOS", "--json"]);
    assert_eq!(text_of(&encoded), "... --- ...");
    let absent = gateway.nexo(&tb, &["call", "morse__morse", "texto=SOS"]);
    assert_eq!(absent.code(), 5, "{absent:#?}");
}

#[test]
fn gateway_enforces_the_policy_and_audits_each_decision() {
    let gateway = Gateway::start();
    let url = gateway.url();
    // A path escaping through `..` is denied, naming the rule.
    let escape = gateway.nexo(
        &url,
        &["call", "files__read_text_file", "path=../../../etc/passwd"],
    );
    assert_eq!(escape.code(), 5, "{escape:#?}");
    assert!(escape.stderr.contains("rule `stay-in-work`"), "{escape:#?}");
    let inside = gateway.nexo(
        &url,
        &["call", "files__read_text_file", "path=notes.txt", "--json"],
    );
    assert!(text_of(&inside).contains("inside the work directory"));
    // A card number reaches the upstream redacted (echo says what it got).
    let echoed = gateway.nexo(
        &url,
        &[
            "call",
            "utils__echo",
            "text=pay with 4111 1111 1111 1111.",
            "--json",
        ],
    );
    assert_eq!(text_of(&echoed), "pay with [CARD].");
    // A secret in the arguments is blocked.
    let secret = gateway.nexo(
        &url,
        &["call", "utils__echo", "text=key AKIAIOSFODNN7EXAMPLE"],
    );
    assert_eq!(secret.code(), 5, "{secret:#?}");
    assert!(
        secret.stderr.contains("blocked by the gateway")
            && secret.stderr.contains("aws_access_key"),
        "{secret:#?}"
    );
    // A tool the identity may never call is not offered to call.
    let calc = gateway.nexo(&url, &["call", "utils__calc", "expression=1+1"]);
    assert_eq!(
        calc.error_line()["error"]["code"],
        "unknown_tool",
        "{calc:#?}"
    );

    // The audit log has one line per decision, and its chain holds.
    let report = nexo_gateway::audit::verify(&gateway.audit(), None).unwrap();
    assert!(report.intact(), "{}", report.to_text());
    let lines: Vec<Value> = std::fs::read_to_string(gateway.audit())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    let denied = &lines[0];
    assert_eq!(denied["decision"], "deny");
    assert_eq!(denied["rule"], "stay-in-work");
    assert_eq!(denied["outcome"], "denied");
    assert_eq!(denied["identity"]["client"], "127.0.0.1");
    assert_eq!(lines[2]["arguments"]["text"], "pay with [CARD].");
    assert_eq!(lines[3]["outcome"], "blocked");
    assert!(
        !std::fs::read_to_string(gateway.audit())
            .unwrap()
            .contains("AKIAIOSFODNN7EXAMPLE")
    );

    // The policy file is read again when it changes, connections kept.
    let policy = gateway.dir.path().join("policy.toml");
    let stricter = std::fs::read_to_string(&policy).unwrap().replace(
        "name = \"no-calculator\"\ndecision = \"deny\"\nserver = \"utils\"\ntool = \"calc\"",
        "name = \"no-calculator\"\ndecision = \"deny\"\nserver = \"utils\"\ntool = [\"calc\", \"sha256\"]",
    );
    std::fs::write(&policy, stricter).unwrap();
    eventually("the reloaded policy hides utils__sha256", || {
        !tool_names(&gateway.nexo(&url, &["tools", "--json"])).contains(&"utils__sha256".into())
    });
}

#[test]
fn gateway_names_a_dead_upstream_and_uses_it_again_once_restarted() {
    let gateway = Gateway::start();
    let url = gateway.url();
    let first = gateway.nexo(&url, &["call", "morse__echo", "texto=uno", "--json"]);
    assert_eq!(text_of(&first), "echo: uno");
    // The child dies, and cannot start again for a while.
    let down = gateway.dir.path().join("down");
    std::fs::write(&down, "").unwrap();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &gateway.morse_pid()])
        .status()
        .unwrap();
    assert!(status.success());
    let failed = gateway.nexo(&url, &["call", "morse__echo", "texto=dos"]);
    assert_eq!(failed.code(), 5, "{failed:#?}");
    assert!(failed.stderr.contains("upstream `morse`"), "{failed:#?}");
    // Said to the gateway's caller, who cannot run nexo's own commands.
    assert!(
        failed.stderr.contains("reconnects to it by itself"),
        "{failed:#?}"
    );
    assert!(!failed.stderr.contains("nexo servers"), "{failed:#?}");
    std::fs::remove_file(&down).unwrap();
    eventually("morse answers through the gateway again", || {
        let again = gateway.nexo(&url, &["call", "morse__echo", "texto=tres", "--json"]);
        again.code() == 0 && text_of(&again) == "echo: tres"
    });
}

#[tokio::test]
async fn gateway_refuses_foreign_origins() {
    let gateway = Gateway::start();
    let client = crate::support::http_client()
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}"#;
    let post = |url: String, origin: &'static str| {
        client
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", SEED_ACCEPT)
            .header("Origin", origin)
            .body(initialize)
            .send()
    };
    for url in [gateway.url(), format!("{}/tb", gateway.url())] {
        let refused = post(url.clone(), "http://evil.example").await.unwrap();
        assert_eq!(refused.status(), 403, "{url}");
        let allowed = post(url.clone(), "http://127.0.0.1:3000").await.unwrap();
        assert_eq!(allowed.status(), 200, "{url}");
    }
}

/// `nexo gateway --config FILE ARGS` on 127.0.0.1 (a port of the system's
/// choosing), and its base URL once it has said it listens: the line it
/// starts with, `announced`, names how many upstreams it serves.
pub fn start(file: &std::path::Path, args: &[&str], announced: &str) -> (Proc, String) {
    let mut command = nexo();
    command
        .args(["gateway", "--config"])
        .arg(file)
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn(&mut command, "nexo gateway");
    let (lines, said) = mpsc::channel();
    let reader = BufReader::new(proc.child().stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in reader.lines() {
            let Ok(line) = line else { break };
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + PATIENCE;
    let mut seen = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = said
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("the gateway never said where it listens:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if let Some((_, url)) = line.split_once(" at ")
            && line.starts_with(announced)
            && let Some((base, _)) = url.split_once("/mcp")
        {
            return (proc, base.to_owned());
        }
    }
}
