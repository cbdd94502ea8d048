//! The audit chain: written by many threads at once and intact; every kind
//! of tampering found at its line; a cut last line reported and refused
//! for appending; secrets kept out of the log; one writer per file.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nexo_gateway::AuditError;
use nexo_gateway::audit::{self, AuditLog, Entry, Outcome, ProblemKind};
use nexo_gateway::policy::{Identity, Verdict};
use nexo_hint::Hinted;
use serde_json::json;

fn entry(n: usize) -> Entry {
    Entry {
        identity: Identity {
            subject: Some(format!("user-{n}")),
            scopes: vec![],
            client: Some("192.0.2.1".parse().unwrap()),
        },
        server: "files".to_owned(),
        method: "tools/call".to_owned(),
        tool: Some("read_file".to_owned()),
        arguments: json!({"path": format!("/srv/work/{n}.txt")}),
        redacted: None,
        verdict: Verdict::Allow,
        rule: Some("the-bundled-servers".to_owned()),
        reason: "allowed".to_owned(),
        findings: vec![],
        latency: Duration::from_micros(42),
        outcome: Outcome::Ok,
    }
}

/// A log of `count` lines written by four threads at once.
fn written(dir: &Path, count: usize) -> std::path::PathBuf {
    let path = dir.join("audit.jsonl");
    let log = Arc::new(AuditLog::open(&path).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for n in (t..count).step_by(4) {
                    log.append(entry(n)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    path
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn rewrite(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn problems(path: &Path) -> Vec<(usize, ProblemKind)> {
    audit::verify(path, None)
        .unwrap()
        .problems
        .iter()
        .map(|problem| (problem.line, problem.kind))
        .collect()
}

#[test]
fn concurrent_writers_make_one_intact_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 40);
    let report = audit::verify(&path, None).unwrap();
    assert!(report.intact(), "{}", report.to_text());
    assert_eq!(report.lines, 40);
    // Reopened, the chain goes on from its last line.
    let log = AuditLog::open(&path).unwrap();
    let appended = log.append(entry(99)).unwrap();
    assert_eq!(appended.seq, 41);
    drop(log);
    let report = audit::verify(&path, Some(&appended.hash)).unwrap();
    assert!(report.intact(), "{}", report.to_text());
    assert_eq!(report.head.as_deref(), Some(appended.hash.as_str()));
}

#[test]
fn an_edited_line_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 6);
    let mut all = lines(&path);
    all[2] = all[2].replace("\"allow\"", "\"deny\"");
    rewrite(&path, &all);
    assert_eq!(problems(&path), [(3, ProblemKind::Edited)]);
}

#[test]
fn a_removed_line_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 6);
    let mut all = lines(&path);
    all.remove(2);
    rewrite(&path, &all);
    let report = audit::verify(&path, None).unwrap();
    assert_eq!(report.problems.len(), 1, "{}", report.to_text());
    assert_eq!(report.problems[0].line, 3);
    assert_eq!(report.problems[0].kind, ProblemKind::Removed);
    assert!(
        report.problems[0]
            .detail
            .contains("records 3 to 3 are missing")
    );

    let mut all = lines(&path);
    all.remove(0);
    rewrite(&path, &all);
    assert_eq!(
        problems(&path),
        [(1, ProblemKind::Removed), (2, ProblemKind::Removed)]
    );
}

#[test]
fn reordered_lines_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 6);
    let mut all = lines(&path);
    all.swap(1, 3);
    rewrite(&path, &all);
    let found = problems(&path);
    assert!(
        found
            .iter()
            .all(|(_, kind)| *kind == ProblemKind::Reordered),
        "{found:?}"
    );
    assert_eq!(found.first().map(|(line, _)| *line), Some(2), "{found:?}");
}

#[test]
fn an_inserted_line_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 6);
    let mut all = lines(&path);
    let copy = all[1].clone();
    all.insert(4, copy);
    rewrite(&path, &all);
    assert_eq!(problems(&path)[0], (5, ProblemKind::Inserted));
}

#[test]
fn a_cut_last_line_is_reported_and_not_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 3);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 20]).unwrap();
    let report = audit::verify(&path, None).unwrap();
    assert_eq!(report.lines, 2);
    assert_eq!(
        report
            .problems
            .iter()
            .map(|p| (p.line, p.kind))
            .collect::<Vec<_>>(),
        [(3, ProblemKind::CutLastLine)]
    );
    match AuditLog::open(&path) {
        Err(error @ AuditError::CutLastLine { .. }) => {
            let hint = error.hint().unwrap().terminal();
            assert!(hint.contains("verify-audit"), "{hint}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_edited_last_line_is_found_against_the_recorded_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 3);
    let head = audit::verify(&path, None).unwrap().head.unwrap();
    let mut all = lines(&path);
    all[2] = all[2].replace("\"allow\"", "\"deny\"");
    rewrite(&path, &all);
    assert!(
        problems(&path).is_empty(),
        "a chain alone cannot see its last line"
    );
    let report = audit::verify(&path, Some(&head)).unwrap();
    assert_eq!(report.problems[0].kind, ProblemKind::HeadMismatch);
}

#[test]
fn secrets_never_reach_the_log_and_the_digest_is_of_what_was_sent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path).unwrap();
    let mut planted = entry(1);
    planted.arguments = json!({"note": "use AKIAIOSFODNN7EXAMPLE", "card": "4111 1111 1111 1111"});
    planted.redacted = Some(json!({"note": "use AKIAIOSFODNN7EXAMPLE", "card": "[CARD]"}));
    log.append(planted).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"), "{text}");
    assert!(!text.contains("4111"), "{text}");
    let record: audit::Record = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(record.arguments["card"], "[CARD]");
    assert_eq!(record.prev, audit::GENESIS);
    assert_eq!(record.arguments_sha256.len(), 64);
}

#[test]
fn one_process_writes_a_log_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let _first = AuditLog::open(&path).unwrap();
    assert!(matches!(
        AuditLog::open(&path),
        Err(AuditError::Locked { .. })
    ));
}
