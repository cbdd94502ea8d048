//! Traces: `nexo trace summary` and `nexo trace flow` on bad input (a
//! missing file, a file that is no trace, a trace cut short), with their
//! exact output, and the `--help` of both.

use insta_cmd::assert_cmd_snapshot;

use crate::snapshots::{assert_run_snapshot, settings};
use crate::support::{TempDir, nexo, run};

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
