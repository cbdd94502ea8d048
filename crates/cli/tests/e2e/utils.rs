//! `nexo serve utils` as a real child process over stdio, called through
//! `nexo call --stdio`: the hash and the calculator, a calculator error
//! (exit 5), and the time in a named zone on a machine whose zoneinfo
//! directory is empty (the bundled time zone database answers).

use crate::support::{TempDir, nexo_path, run, shell_quote};

/// SHA-256 of `hola`.
const SHA256_HOLA: &str = "b221d9dbb083a7f33428d7c2a3c3198ae925614d70210e28716ccaa7cd4ddb79";

/// The `--stdio` command line that runs the utilities server.
fn serve_utils_command() -> String {
    format!("{} serve utils", shell_quote(nexo_path()))
}

#[test]
fn sha256_and_calc_over_stdio() {
    let server = serve_utils_command();

    let hashed = run(&["call", "--stdio", &server, "sha256", "text=hola"]);
    assert_eq!(hashed.assert_success().stdout, format!("{SHA256_HOLA}\n"));

    let computed = run(&[
        "call",
        "--stdio",
        &server,
        "calc",
        r#"{"expression": "2 * (3 + 4) ^ 2 / sqrt(16)"}"#,
        "--json",
    ]);
    let result = computed.assert_success().stdout_json();
    assert_eq!(
        (
            &result["content"],
            &result["structuredContent"],
            &result["isError"]
        ),
        (
            &serde_json::json!([{ "type": "text", "text": "24.5" }]),
            &serde_json::json!({ "result": "24.5", "value": 24.5 }),
            &serde_json::json!(false)
        ),
        "{result:#}"
    );

    let failed = run(&["call", "--stdio", &server, "calc", "expression=1/0"]);
    assert_eq!(failed.code(), 5, "{failed:#?}");
    // The tool's error is told once, on stderr: stdout carries data only.
    assert_eq!(failed.stdout, "", "{failed:#?}");
    assert!(
        failed
            .stderr
            .contains("division by zero (the `/` at position 2)"),
        "{failed:#?}"
    );
    assert_eq!(failed.error_line()["error"]["code"], "tool_error");
}

#[test]
fn time_zones_work_without_a_system_zoneinfo() {
    let empty = TempDir::new("tzdir");
    let tzdir = format!("TZDIR={}", empty.path().display());
    let server = serve_utils_command();
    let told = run(&[
        "call",
        "--stdio",
        &server,
        "-e",
        &tzdir,
        "time",
        "timezone=Asia/Kolkata",
        "--json",
    ]);
    let result = told.assert_success().stdout_json();
    let structured = &result["structuredContent"];
    assert_eq!(structured["timezone"], "Asia/Kolkata", "{result:#}");
    assert_eq!(structured["offset"], "+05:30", "{result:#}");
    let time = structured["result"].as_str().unwrap();
    assert!(time.ends_with("+05:30") && time.len() == 25, "{time}");
}
