//! The policy matrix: each matcher of the example policy allowing and
//! denying, identity rules, the order of rules, tools hidden from
//! `tools/list`, bad policy files and reloads.

use std::path::Path;

use nexo_gateway::policy::{Identity, Policy, PolicyHandle, Reload, Verdict};
use nexo_gateway::{Decision, PolicyError};
use nexo_hint::Hinted;
use serde_json::json;

use crate::support::{call, example, example_path, resolver};

async fn decide(server: &str, tool: &str, arguments: serde_json::Value) -> Decision {
    example()
        .evaluate(&call(server, tool, arguments), &resolver())
        .await
}

fn denied_by(decision: &Decision, rule: &str) {
    assert_eq!(decision.verdict, Verdict::Deny, "{decision:#?}");
    assert_eq!(decision.rule.as_deref(), Some(rule), "{decision:#?}");
}

fn allowed(decision: &Decision) {
    assert_eq!(decision.verdict, Verdict::Allow, "{decision:#?}");
}

#[tokio::test]
async fn path_inside_the_workspace_is_allowed() {
    allowed(
        &decide(
            "files",
            "read_file",
            json!({"path": "/srv/work/notes/a.txt"}),
        )
        .await,
    );
    allowed(&decide("files", "read_file", json!({"path": "notes/../b.txt"})).await);
}

#[tokio::test]
async fn path_escaping_through_dot_dot_is_denied() {
    let decision = decide(
        "files",
        "read_file",
        json!({"path": "/srv/work/../../etc/passwd"}),
    )
    .await;
    denied_by(&decision, "files-stay-in-the-workspace");
    assert!(
        decision.reason.contains("`/etc/passwd`"),
        "{}",
        decision.reason
    );
    assert!(
        decision
            .reason
            .starts_with("files are only reachable inside /srv/work"),
        "{}",
        decision.reason
    );
    for path in [
        "../../etc/shadow",
        "/srv/work/%2e%2e/%2e%2e/etc/passwd",
        "/srv/work\\..\\..\\etc\\passwd",
        "file:///etc/passwd",
    ] {
        let decision = decide("files", "read_file", json!({ "path": path })).await;
        denied_by(&decision, "files-stay-in-the-workspace");
    }
}

#[tokio::test]
async fn every_path_of_a_batch_is_checked() {
    let decision = decide(
        "files",
        "read_many",
        json!({"paths": ["/srv/work/a", "/srv/work/../../root/.ssh/id_rsa"]}),
    )
    .await;
    denied_by(&decision, "batch-paths-stay-in-the-workspace");
    assert!(decision.reason.contains("/paths/1"), "{}", decision.reason);
    allowed(&decide("files", "read_many", json!({"paths": ["/srv/work/a", "b"]})).await);
}

#[tokio::test]
async fn url_to_a_public_https_site_is_allowed() {
    allowed(&decide("web", "fetch", json!({"url": "https://example.com/page"})).await);
}

#[tokio::test]
async fn url_whose_host_resolves_to_loopback_is_denied() {
    let decision = decide("web", "fetch", json!({"url": "https://localtest.me/admin"})).await;
    denied_by(&decision, "fetch-public-https-only");
    assert!(
        decision.reason.contains("resolves to 127.0.0.1, loopback"),
        "{}",
        decision.reason
    );
}

#[tokio::test]
async fn urls_reaching_private_addresses_by_any_spelling_are_denied() {
    for url in [
        "https://127.0.0.1/",
        "https://2130706433/",
        "https://0x7f.1/",
        "https://0177.0.0.1/",
        "https://[::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.5/",
        "https://100.64.0.1/",
        "https://[fd00::1]/",
        "https://0.0.0.0/",
        "https://localhost/",
        "https://app.localhost/",
        "https://rebind.example/",
        "https://nowhere.invalid/",
        "http://example.com/",
        "file:///etc/passwd",
        "https://db.internal/",
        "not a url",
    ] {
        let decision = decide("web", "fetch", json!({ "url": url })).await;
        denied_by(&decision, "fetch-public-https-only");
    }
    let metadata = decide(
        "web",
        "fetch",
        json!({"url": "https://169.254.169.254/latest/meta-data/"}),
    )
    .await;
    assert!(
        metadata.reason.contains("cloud metadata"),
        "{}",
        metadata.reason
    );
    let unresolved = decide("web", "fetch", json!({"url": "https://nowhere.invalid/"})).await;
    assert!(
        unresolved.reason.contains("cannot be resolved"),
        "{}",
        unresolved.reason
    );
}

#[tokio::test]
async fn read_only_sql_is_allowed() {
    allowed(
        &decide(
            "db",
            "query",
            json!({"sql": "SELECT region, sum(total) FROM sales GROUP BY 1"}),
        )
        .await,
    );
    allowed(
        &decide(
            "db",
            "query",
            json!({"sql": "-- DROP TABLE sales\nSELECT 'DROP TABLE x'"}),
        )
        .await,
    );
}

#[tokio::test]
async fn drop_table_inside_a_comment_laden_statement_is_denied() {
    let sql = "/* monthly report */ SELECT 1; -- nothing to see\n dRoP /* really */ TaBlE \
               /* the */ sales -- bye";
    let decision = decide("db", "query", json!({ "sql": sql })).await;
    denied_by(&decision, "reports-are-read-only");
    assert!(
        decision.reason.contains("`DROP TABLE"),
        "{}",
        decision.reason
    );
    assert!(decision.reason.contains("`ddl`"), "{}", decision.reason);
    for sql in [
        "INSERT INTO sales VALUES (1)",
        "WITH x AS (DELETE FROM sales RETURNING *) SELECT * FROM x",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT 1; DROP TABLE sales; SELEC",
    ] {
        denied_by(
            &decide("db", "query", json!({ "sql": sql })).await,
            "reports-are-read-only",
        );
    }
}

#[tokio::test]
async fn a_plain_command_is_allowed() {
    allowed(&decide("utils", "run", json!({"command": "ls -la /srv/work"})).await);
    allowed(&decide("utils", "run", json!({"command": "grep 'a;b' notes.txt"})).await);
}

#[tokio::test]
async fn shell_substitution_is_denied() {
    let decision = decide(
        "utils",
        "run",
        json!({"command": "echo $(cat /etc/passwd)"}),
    )
    .await;
    denied_by(&decision, "one-plain-command");
    assert!(
        decision.reason.contains("substitution ($()"),
        "{}",
        decision.reason
    );
    for command in [
        "ls; id",
        "cat x | sh",
        "echo hi > /etc/motd",
        "rm -rf /",
        "echo `id`",
    ] {
        denied_by(
            &decide("utils", "run", json!({ "command": command })).await,
            "one-plain-command",
        );
    }
}

#[tokio::test]
async fn regex_redacts_and_lets_the_call_go_on() {
    let decision = decide(
        "chat",
        "send_message",
        json!({"to": "bob", "text": "my card is 4111 1111 1111 1111, thanks"}),
    )
    .await;
    assert_eq!(decision.verdict, Verdict::Redact, "{decision:#?}");
    assert_eq!(decision.rule.as_deref(), Some("the-bundled-servers"));
    assert_eq!(
        decision.arguments,
        Some(json!({"to": "bob", "text": "my card is [CARD], thanks"}))
    );
    assert_eq!(decision.redactions.len(), 1);
    assert_eq!(decision.redactions[0].pointer, "/text");
    allowed(&decide("chat", "send_message", json!({"text": "call me at 5"})).await);
}

#[tokio::test]
async fn writing_needs_its_scope() {
    let policy = example();
    let mut request = call("files", "write_file", json!({"path": "/srv/work/a.txt"}));
    let decision = policy.evaluate(&request, &resolver()).await;
    denied_by(&decision, "writes-need-a-scope");
    assert_eq!(decision.reason, "writing files needs the files:write scope");
    request.identity.scopes.push("files:write".to_owned());
    allowed(&policy.evaluate(&request, &resolver()).await);
}

#[tokio::test]
async fn operators_are_an_exception_only_from_their_network() {
    let policy = example();
    let mut request = call("files", "read_file", json!({"path": "/etc/passwd"}));
    request.identity = Identity {
        subject: Some("ops-carol".to_owned()),
        scopes: vec!["gateway:admin".to_owned()],
        client: Some("10.20.3.4".parse().unwrap()),
    };
    let decision = policy.evaluate(&request, &resolver()).await;
    allowed(&decision);
    assert_eq!(
        decision.rule.as_deref(),
        Some("operators-from-the-admin-network")
    );
    request.identity.client = Some("192.0.2.10".parse().unwrap());
    denied_by(
        &policy.evaluate(&request, &resolver()).await,
        "files-stay-in-the-workspace",
    );
}

#[tokio::test]
async fn what_no_rule_decides_takes_the_default() {
    let decision = decide("unknown", "anything", json!({})).await;
    assert_eq!(decision.verdict, Verdict::Deny);
    assert_eq!(decision.rule, None);
    assert!(decision.reason.contains("default"), "{}", decision.reason);
}

#[tokio::test]
async fn the_first_deciding_rule_wins_and_redaction_never_hides_a_deny() {
    let text = r#"
default = "allow"

[[rule]]
name = "mask-tokens"
decision = "redact"
[[rule.argument]]
pointer = "/q"
regex = 'tok_[a-z]+'

[[rule]]
name = "no-tokens"
decision = "deny"
[[rule.argument]]
pointer = "/q"
regex = 'tok_'

[[rule]]
name = "never-reached"
decision = "allow"
"#;
    let policy = Policy::parse(Path::new("order.toml"), text).unwrap();
    let request = call("s", "t", json!({"q": "tok_abc"}));
    let explanation = policy.explain(&request, &resolver()).await;
    assert_eq!(explanation.decision.verdict, Verdict::Deny);
    assert_eq!(explanation.decision.rule.as_deref(), Some("no-tokens"));
    let steps: Vec<(&str, bool)> = explanation
        .steps
        .iter()
        .map(|step| (step.rule.as_str(), step.matched))
        .collect();
    assert_eq!(steps, [("mask-tokens", true), ("no-tokens", true)]);
    assert_eq!(
        explanation.decision.arguments, None,
        "a denied call passes nothing on"
    );
}

#[test]
fn tools_every_call_of_which_is_denied_are_hidden() {
    let policy = example();
    let reader = call("files", "write_file", json!({})).identity;
    assert!(!policy.tool_visible(&reader, "files", "write_file"));
    assert!(policy.tool_visible(&reader, "files", "read_file"));
    assert!(!policy.tool_visible(&reader, "unknown", "anything"));
    let writer = Identity {
        scopes: vec!["files:write".to_owned()],
        ..reader
    };
    assert!(policy.tool_visible(&writer, "files", "write_file"));
}

fn error_of(text: &str) -> (usize, String, String) {
    match Policy::parse(Path::new("policy.toml"), text) {
        Err(error @ PolicyError::Invalid { line, .. }) => {
            (line, error.to_string(), error.hint().unwrap().terminal())
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn bad_policy_files_say_where_and_what_to_write() {
    let misspelt = "default = \"deny\"\n\n[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule.argument]]\npointr = \"/path\"\n";
    let (line, message, hint) = error_of(misspelt);
    assert_eq!(line, 7, "{message}");
    assert!(message.starts_with("`policy.toml` line 7"), "{message}");
    assert_eq!(hint, "write `pointer` instead of `pointr`");

    let (line, message, hint) = error_of("[[rule]]\nname = \"a\"\ndecision = \"dney\"\n");
    assert_eq!(line, 3, "{message}");
    assert_eq!(hint, "write `deny` instead of `dney`");

    let bad_regex = "[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule.argument]]\npointer = \"/q\"\nregex = 'a(b'\n";
    let (line, message, hint) = error_of(bad_regex);
    assert_eq!(line, 6, "{message}");
    assert!(message.contains("does not compile"), "{message}");
    assert!(hint.contains("single-quoted"), "{hint}");

    let relative = "[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule.argument]]\npointer = \"/p\"\npath = { outside = [\"srv\"] }\n";
    let (line, message, hint) = error_of(relative);
    assert_eq!(line, 6, "{message}");
    assert!(
        message.contains("`srv` is not an absolute path"),
        "{message}"
    );
    assert!(hint.contains("absolute"), "{hint}");

    let two = "[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule]]\nname = \"a\"\ndecision = \"allow\"\n";
    let (line, message, _) = error_of(two);
    assert_eq!(line, 5, "{message}");
    assert!(message.contains("two rules are named `a`"), "{message}");

    let pointer = "[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule.argument]]\npointer = \"path\"\nregex = 'x'\n";
    let (line, _, _) = error_of(pointer);
    assert_eq!(line, 5);

    let both = "[[rule]]\nname = \"a\"\ndecision = \"deny\"\n[[rule.argument]]\npointer = \"/p\"\nregex = 'x'\nshell = [\"chaining\"]\n";
    let (_, message, _) = error_of(both);
    assert!(message.contains("2 matchers"), "{message}");

    let (_, message, hint) = error_of("[[rule]\nname = \"a\"\n");
    assert!(message.starts_with("`policy.toml` line 1"), "{message}");
    assert!(hint.contains("examples/gateway/policy.toml"), "{hint}");
}

/// The example policy, rewritten in YAML by a YAML library, decides every
/// request of the matrix as the TOML does.
#[tokio::test]
async fn a_yaml_policy_decides_as_its_toml_twin() {
    let toml: toml::Value =
        toml::from_str(&std::fs::read_to_string(example_path()).unwrap()).unwrap();
    let yaml = serde_norway::to_string(&toml).unwrap();
    let twin = Policy::parse(Path::new("policy.yaml"), &yaml).unwrap();
    let json = serde_json::to_string_pretty(&toml).unwrap();
    let json_twin = Policy::parse(Path::new("policy.json"), &json).unwrap();
    assert_eq!(twin.rule_names(), example().rule_names());
    let requests = [
        (
            "files",
            "read_file",
            json!({"path": "/srv/work/notes/a.txt"}),
        ),
        (
            "files",
            "read_file",
            json!({"path": "/srv/work/../../etc/passwd"}),
        ),
        (
            "files",
            "write_file",
            json!({"path": "/srv/work/a", "content": "x"}),
        ),
        ("web", "fetch", json!({"url": "https://example.com/"})),
        ("web", "fetch", json!({"url": "http://localtest.me/"})),
        ("web", "fetch", json!({"url": "http://[::ffff:7f00:1]/"})),
        ("db", "query", json!({"sql": "SELECT 1"})),
        (
            "db",
            "query",
            json!({"sql": "/* x */ DROP /* y */ TABLE users"}),
        ),
        ("shell", "run", json!({"command": "ls -la"})),
        (
            "shell",
            "run",
            json!({"command": "echo $(cat /etc/passwd)"}),
        ),
        (
            "chat",
            "send_message",
            json!({"text": "card 4111 1111 1111 1111"}),
        ),
        (
            "files",
            "read_many",
            json!({"paths": ["/srv/work/a", "/etc/shadow"]}),
        ),
        ("unknown", "anything", json!({})),
    ];
    let mut verdicts = std::collections::BTreeSet::new();
    for (server, tool, arguments) in requests {
        let request = call(server, tool, arguments);
        let expected = example().evaluate(&request, &resolver()).await;
        verdicts.insert(format!("{:?} {:?}", expected.verdict, expected.rule));
        assert_eq!(
            twin.evaluate(&request, &resolver()).await,
            expected,
            "{request:?}"
        );
        assert_eq!(
            json_twin.evaluate(&request, &resolver()).await,
            expected,
            "{request:?}"
        );
    }
    assert!(
        verdicts.len() >= 8,
        "the requests reach too few rules: {verdicts:#?}"
    );
}

fn yaml_error_of(text: &str) -> (usize, usize, String, String) {
    match Policy::parse(Path::new("policy.yaml"), text) {
        Err(error @ PolicyError::Invalid { line, column, .. }) => (
            line,
            column,
            error.to_string(),
            error.hint().unwrap().terminal(),
        ),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn bad_yaml_policies_say_where_and_what_to_write() {
    let misspelt = "default: deny\nrule:\n  - name: a\n    decision: deny\n    argument:\n      - pointr: /path\n";
    let (line, column, message, hint) = yaml_error_of(misspelt);
    assert_eq!((line, column), (6, 9), "{message}");
    assert!(
        message.starts_with("`policy.yaml` line 6, column 9"),
        "{message}"
    );
    assert_eq!(hint, "write `pointer` instead of `pointr`");

    let (line, column, message, hint) = yaml_error_of("rule:\n- name: a\n  decision: dney\n");
    assert_eq!((line, column), (3, 13), "{message}");
    assert_eq!(hint, "write `deny` instead of `dney`");

    let bad_regex = "rule:\n  - name: a\n    decision: deny\n    argument:\n      - pointer: /q\n        regex: 'a(b'\n";
    let (line, _, message, _) = yaml_error_of(bad_regex);
    assert_eq!(line, 6, "{message}");
    assert!(message.contains("does not compile"), "{message}");

    let two = "rule:\n  - {name: a, decision: deny}\n  - {name: a, decision: allow}\n";
    let (line, column, message, _) = yaml_error_of(two);
    assert_eq!((line, column), (3, 12), "{message}");
    assert!(message.contains("two rules are named `a`"), "{message}");

    let unquoted = "rule:\n  - name: a\n    decision: deny\n    argument:\n      - pointer: /p\n        path: {outside: [srv]}\n";
    let (line, _, message, _) = yaml_error_of(unquoted);
    assert_eq!(line, 6, "{message}");
    assert!(
        message.contains("`srv` is not an absolute path"),
        "{message}"
    );

    let (line, _, message, hint) = yaml_error_of("rule:\n  - name: [a\n");
    assert!(line >= 2, "{message}");
    assert!(hint.contains("YAML"), "{hint}");

    let (line, _, message, _) =
        yaml_error_of("rule:\n  - name: a\n    decision: deny\n    name: b\n");
    assert_eq!(line, 4, "{message}");
    assert!(message.contains("given twice"), "{message}");

    let empty = Policy::parse(Path::new("policy.yml"), "# nothing yet\n").unwrap();
    assert_eq!(
        empty.default_decision(),
        nexo_gateway::policy::DefaultDecision::Deny
    );
}

#[test]
fn a_bad_new_file_keeps_the_policy_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, "[[rule]]\nname = \"first\"\ndecision = \"allow\"\n").unwrap();
    let handle = PolicyHandle::load(&path).unwrap();
    assert!(matches!(handle.reload(), Reload::Unchanged));

    std::fs::write(&path, "[[rule]]\nname = \"second\"\ndecision = \"allow\"\n").unwrap();
    assert!(matches!(handle.reload(), Reload::Reloaded));
    assert_eq!(handle.current().rule_names(), ["second"]);

    std::fs::write(&path, "[[rule]]\nname = \"third\"\ndecision = \"maybe\"\n").unwrap();
    match handle.reload() {
        Reload::Kept(error) => assert!(error.to_string().contains("line 3"), "{error}"),
        other => panic!("expected the old policy kept, got {other:?}"),
    }
    assert_eq!(handle.current().rule_names(), ["second"]);
}
