//! `nexo gateway check-policy` and `nexo gateway verify-audit`: the example
//! policy validated and a denied request explained (text and `--json`), a
//! misspelt policy refused with its line and what to write, an audit log
//! checked intact and then edited; exit statuses and the JSON error line;
//! the `--help` of both subcommands.

use insta_cmd::assert_cmd_snapshot;

use crate::snapshots::settings;
use crate::support::{TempDir, nexo, repo_root, run};

fn example() -> String {
    repo_root()
        .join("examples/gateway/policy.toml")
        .display()
        .to_string()
}

#[test]
fn check_policy_explains_a_denied_request() {
    let valid = run(&["gateway", "check-policy", &example()]);
    assert!(
        valid
            .assert_success()
            .stdout
            .contains("valid, 9 rules, default deny"),
        "{valid:#?}"
    );
    let request = r#"{"server": "files", "tool": "read_file", "arguments": {"path": "/srv/work/../../etc/passwd"}}"#;
    let explained = run(&["gateway", "check-policy", &example(), "--request", request]);
    let stdout = &explained.assert_success().stdout;
    assert!(
        stdout.contains("3. files-stay-in-the-workspace: matched: argument `/path`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("decision: deny by rule `files-stay-in-the-workspace`"),
        "{stdout}"
    );
    let json = run(&[
        "gateway",
        "check-policy",
        &example(),
        "--request",
        request,
        "--json",
    ]);
    let report = json.assert_success().stdout_json();
    assert_eq!(report["explanation"]["decision"]["verdict"], "deny");
    assert_eq!(
        report["explanation"]["decision"]["rule"],
        "files-stay-in-the-workspace"
    );
}

#[test]
fn check_policy_refuses_a_misspelt_policy_and_a_bad_request() {
    let dir = TempDir::new("gateway");
    let path = dir.path().join("policy.toml");
    std::fs::write(
        &path,
        "[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule.argument]]\npointr = \"/x\"\n",
    )
    .unwrap();
    let refused = run(&["gateway", "check-policy", path.to_str().unwrap()]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert!(refused.stdout.is_empty(), "{refused:#?}");
    let error = refused.error_line();
    assert_eq!(error["error"]["code"], "bad_policy");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 5, column 1: unknown field `pointr`"),
        "{error}"
    );
    assert_eq!(
        error["error"]["hint"],
        "write `pointer` instead of `pointr`"
    );

    let bad = run(&["gateway", "check-policy", &example(), "--request", "{"]);
    assert_eq!(bad.code(), 1, "{bad:#?}");
    assert_eq!(bad.error_line()["error"]["code"], "bad_request");
}

#[test]
fn verify_audit_finds_an_edited_line() {
    let dir = TempDir::new("gateway");
    let path = dir.path().join("audit.jsonl");
    let log = nexo_gateway::AuditLog::open(&path).unwrap();
    for n in 0..4 {
        log.append(nexo_gateway::Entry {
            identity: nexo_gateway::Identity::default(),
            server: "files".to_owned(),
            method: "tools/call".to_owned(),
            tool: Some("read_file".to_owned()),
            arguments: serde_json::json!({ "path": format!("/srv/work/{n}") }),
            redacted: None,
            verdict: nexo_gateway::Verdict::Allow,
            rule: None,
            reason: "allowed".to_owned(),
            findings: Vec::new(),
            latency: std::time::Duration::from_micros(5),
            outcome: nexo_gateway::Outcome::Ok,
        })
        .unwrap();
    }
    drop(log);
    let file = path.to_str().unwrap();
    let intact = run(&["gateway", "verify-audit", file]);
    assert!(
        intact
            .assert_success()
            .stdout
            .contains("4 lines, the chain is intact"),
        "{intact:#?}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("/srv/work/1", "/srv/work/9", 1)).unwrap();
    let broken = run(&["gateway", "verify-audit", file, "--json"]);
    assert_eq!(broken.code(), 1, "{broken:#?}");
    let report = broken.stdout_json();
    assert_eq!(report["problems"][0]["line"], 2);
    assert_eq!(report["problems"][0]["kind"], "edited");
    assert_eq!(broken.error_line()["error"]["code"], "audit_broken");
}

#[test]
fn help_of_gateway_subcommands() {
    for subcommand in ["check-policy", "verify-audit"] {
        let mut command = nexo();
        command.args(["gateway", subcommand, "--help"]);
        settings().bind(|| assert_cmd_snapshot!(format!("help_gateway_{subcommand}"), command));
    }
}
