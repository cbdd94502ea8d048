//! `check-policy`: the example validates, a sample request's decision is
//! explained rule by rule, both request forms are read, bad ones refused.

use nexo_gateway::policy::Verdict;
use nexo_gateway::{CheckError, check_policy, parse_request};
use nexo_hint::Hinted;

use crate::support::{example_path, resolver};

#[tokio::test]
async fn the_example_policy_validates() {
    let report = check_policy(&example_path(), None, &resolver())
        .await
        .unwrap();
    assert_eq!(report.rules.len(), 9);
    assert!(report.explanation.is_none());
    let text = report.to_text();
    assert!(text.contains("valid, 9 rules, default deny"), "{text}");
}

#[tokio::test]
async fn a_sample_request_is_explained_rule_by_rule() {
    let request = r#"{"identity": {"subject": "alice", "scopes": "files:read files:write"},
                      "server": "files", "tool": "read_file",
                      "arguments": {"path": "/srv/work/../../etc/passwd"}}"#;
    let report = check_policy(&example_path(), Some(request), &resolver())
        .await
        .unwrap();
    let explanation = report.explanation.as_ref().unwrap();
    assert_eq!(explanation.decision.verdict, Verdict::Deny);
    let steps: Vec<(&str, bool)> = explanation
        .steps
        .iter()
        .map(|step| (step.rule.as_str(), step.matched))
        .collect();
    assert_eq!(
        steps,
        [
            ("operators-from-the-admin-network", false),
            ("writes-need-a-scope", false),
            ("files-stay-in-the-workspace", true),
        ]
    );
    assert!(
        explanation.steps[0]
            .why
            .contains("the subject `alice` is not `ops-*`")
    );
    let text = report.to_text();
    assert!(
        text.contains("decision: deny by rule `files-stay-in-the-workspace`"),
        "{text}"
    );
    assert!(
        text.contains("request: alice asks `files` for tools/call `read_file`"),
        "{text}"
    );
}

#[test]
fn json_rpc_messages_are_read_as_requests() {
    let request = parse_request(
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "db__query", "arguments": {"sql": "SELECT 1"}},
            "identity": {"client": "10.0.0.7"}}"#,
    )
    .unwrap();
    assert_eq!(request.server, "db");
    assert_eq!(request.tool.as_deref(), Some("query"));
    assert_eq!(request.arguments["sql"], "SELECT 1");
    assert_eq!(request.identity.client, Some("10.0.0.7".parse().unwrap()));
}

#[tokio::test]
async fn bad_requests_are_refused_with_a_hint() {
    for bad in [
        "not json",
        "[1]",
        r#"{"tool": "x"}"#,
        r#"{"server": "s", "identity": {"client": "nowhere"}}"#,
        r#"{"server": "s", "identity": {"sub": "alice"}}"#,
        r#"{"method": "tools/call", "params": {"name": "no_server"}}"#,
    ] {
        match check_policy(&example_path(), Some(bad), &resolver()).await {
            Err(CheckError::Request(error)) => {
                assert!(error.hint().unwrap().terminal().contains("server__tool"));
            }
            other => panic!("{bad}: expected a refusal, got {other:?}"),
        }
    }
}
