//! The exact output of the command line, snapshotted with insta and
//! insta-cmd (exit code, stdout and stderr): `--help` of `nexo` and of every
//! subcommand; the human output and `--json` of every client command; exits
//! 1 (bad usage), 3 (authorization), 4 (unreachable) and 5 (tool and server
//! errors) with their stderr. Ports, paths, times, versions and session ids
//! are filtered out, so the snapshots hold on any machine.

use std::path::Path;
use std::process::Command;

use insta_cmd::assert_cmd_snapshot;
use serde_json::json;

use crate::support::{ClosedPort, Run, nexo, nexo_path, run};

/// Every subcommand `nexo --help` lists (`help` aside), so that a new one
/// cannot go without the snapshot of its own `--help`.
fn subcommands() -> Vec<String> {
    let help = run(&["--help"]);
    let listed: Vec<String> = help
        .assert_success()
        .stdout
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        // A name starts its line after two spaces; wrapped text is further in.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(
        listed.len() >= 19,
        "the list of commands was not read: {listed:?}"
    );
    listed
}

/// `text` as a regular expression matching itself.
pub fn literal(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.+*?()|[]{}^$#&-~".contains(c) {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern
}

/// Snapshot settings with everything that changes between runs filtered.
pub fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&literal(nexo_path()), "[NEXO]");
    let temp = std::env::temp_dir();
    let temp = temp.to_str().unwrap().trim_end_matches('/');
    settings.add_filter(&format!(r"{}/[^\s`'\x22]*", literal(temp)), "[TEMP]");
    settings.add_filter(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)",
        "[TIME]",
    );
    settings.add_filter(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        "[SESSION]",
    );
    // A bundled server's version, as `discover` shows it.
    settings.add_filter(r"\b(nexo-[a-z]+) \d+\.\d+\.\d+\b", "$1 [VERSION]");
    settings
}

/// Snapshots a finished run in insta-cmd's format, for commands whose
/// arguments hold a port or a path: `shown` are the arguments as recorded.
pub fn assert_run_snapshot(name: &str, shown: &[&str], run: &Run) {
    let text = format!(
        "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        run.status.success(),
        run.code(),
        run.stdout,
        run.stderr
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_info(&json!({ "program": "nexo", "args": shown }));
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn help() {
    let mut command = nexo();
    command.arg("--help");
    settings().bind(|| assert_cmd_snapshot!("help", command));
}

#[test]
fn help_of_every_subcommand() {
    for subcommand in subcommands() {
        let mut command = nexo();
        command.args([&subcommand, "--help"]);
        settings().bind(|| assert_cmd_snapshot!(format!("help_{subcommand}"), command));
    }
    // The nested ones not snapshotted beside their parent's tests
    // (trace's and gateway's are).
    let mut command = nexo();
    command.args(["bench", "compare", "--help"]);
    settings().bind(|| assert_cmd_snapshot!("help_bench_compare", command));
}

/// Issue 37: `--version` names the commit and the profile it was built
/// from; the completion scripts and the manual page are generated from the
/// same definitions as `--help`, and the bash script is valid bash.
#[test]
fn issue_37_version_completions_and_manual_page() {
    let version = run(&["--version"]);
    assert_eq!(version.code(), 0, "{version:#?}");
    let rest = version
        .stdout
        .trim()
        .strip_prefix(concat!("nexo ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|rest| rest.strip_suffix(", profile debug)"))
        .unwrap_or_else(|| panic!("{version:#?}"));
    assert!(
        rest == "unknown" || (rest.len() == 12 && rest.bytes().all(|b| b.is_ascii_hexdigit())),
        "{rest:?}"
    );

    for (shell, marks) in [
        ("bash", &["complete -F _nexo", "completions", "--stdio"][..]),
        ("zsh", &["#compdef nexo", "--stdio"]),
        ("fish", &["complete -c nexo", "completions"]),
    ] {
        let script = run(&["completions", shell]);
        assert_eq!(script.code(), 0, "{script:#?}");
        for mark in marks {
            assert!(script.stdout.contains(mark), "{shell} lacks {mark:?}");
        }
        if shell == "bash" {
            let checked = Command::new("bash")
                .args(["-n", "-c", &script.stdout])
                .output()
                .unwrap();
            assert!(checked.status.success(), "{checked:#?}");
        }
    }
    let page = run(&["man"]);
    assert_eq!(page.code(), 0, "{page:#?}");
    for mark in [".TH nexo 1", ".SH SUBCOMMANDS", "completions", "serve"] {
        assert!(page.stdout.contains(mark), "the manual page lacks {mark:?}");
    }
    let refused = run(&["completions", "tcsh"]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
}

#[test]
fn tools_table_over_stdio() {
    // Run from the binary's directory so the recorded arguments hold no path.
    let directory = Path::new(nexo_path()).parent().unwrap();
    let mut command: Command = nexo();
    command
        .current_dir(directory)
        .args(["tools", "--stdio", "./nexo serve morse"]);
    settings().bind(|| assert_cmd_snapshot!("tools_table", command));
}

#[test]
fn unreachable_url_error() {
    let closed = ClosedPort::new();
    let port = closed.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let failed = run(&["tools", "--url", &url]);
    let mut settings = settings();
    settings.add_filter(&format!(r"\b{port}\b"), "[PORT]");
    // The operating system's number for "connection refused".
    settings.add_filter(r"os error \d+", "os error [N]");
    settings.add_filter(r"\bcode: \d+", "code: [N]");
    settings.bind(|| {
        assert_run_snapshot(
            "unreachable_error",
            &["tools", "--url", "http://127.0.0.1:[PORT]/mcp"],
            &failed,
        );
    });
}

#[test]
fn unknown_server_error() {
    let mut command = nexo();
    command.args(["serve", "nope"]);
    settings().bind(|| assert_cmd_snapshot!("unknown_server_error", command));
}

/// Issue 15, point 10: bad usage, each with its stderr and JSON line.
#[test]
fn usage_errors() {
    let cases: [(&str, &[&str]); 9] = [
        ("usage_tools_without_target", &["tools"]),
        (
            "usage_header_with_stdio",
            &["tools", "--stdio", "x", "--header", "A: b"],
        ),
        (
            "usage_env_with_url",
            &["tools", "--url", "http://127.0.0.1:9/mcp", "-e", "A=b"],
        ),
        (
            "usage_both_targets",
            &["tools", "--url", "http://127.0.0.1:9/mcp", "--stdio", "x"],
        ),
        ("usage_serve_without_server", &["serve"]),
        (
            "usage_serve_http_server_name",
            &["serve", "--http", "morse"],
        ),
        (
            "usage_serve_bad_port",
            &["serve", "morse", "--http", "99999"],
        ),
        (
            "usage_serve_max_body_zero",
            &["serve", "morse", "--max-body", "0"],
        ),
        (
            "usage_url_without_scheme",
            &["tools", "--url", "127.0.0.1:9/mcp"],
        ),
    ];
    for (name, args) in cases {
        let mut command = nexo();
        command.args(args);
        settings().bind(|| assert_cmd_snapshot!(name, command));
    }
}

/// Issue 15, point 10: `nexo help -h` is help, not an error.
#[test]
fn help_of_help() {
    for args in [&["help", "-h"][..], &["help", "serve", "--help"]] {
        let asked = run(args);
        asked.assert_success();
        assert!(asked.stdout.contains("Usage: nexo"), "{asked:#?}");
    }
}

/// `nexo ARGS` run from the binary's directory, so that `--stdio './nexo
/// serve ...'` holds no path in the recorded arguments.
fn in_binary_dir(args: &[&str]) -> Command {
    let directory = Path::new(nexo_path()).parent().unwrap();
    let mut command = nexo();
    command.current_dir(directory).args(args);
    command
}

const MORSE: &str = "./nexo serve morse";
const EVERYTHING: &str = "./nexo serve everything";

/// Issue 15, point 8: the human output and `--json` of every client
/// command, and exit 5 with its stderr, over stdio.
#[test]
fn client_commands() {
    let cases: [(&str, &[&str]); 16] = [
        (
            "call_text",
            &["call", "--stdio", MORSE, "morse", "texto=SOS prueba"],
        ),
        (
            "call_json",
            &["call", "--stdio", MORSE, "morse", "texto=SOS", "--json"],
        ),
        (
            "call_tool_error",
            &["call", "--stdio", EVERYTHING, "test_error_handling"],
        ),
        (
            "call_unknown_tool",
            &["call", "--stdio", MORSE, "nosuch", "texto=x"],
        ),
        (
            "call_bad_argument",
            &["call", "--stdio", MORSE, "morse", "notapair"],
        ),
        ("tools_json", &["tools", "--stdio", MORSE, "--json"]),
        ("tools_one", &["tools", "--stdio", MORSE, "morse"]),
        (
            "tools_one_ref",
            &["tools", "--stdio", EVERYTHING, "json_schema_2020_12_tool"],
        ),
        ("resources_table", &["resources", "--stdio", EVERYTHING]),
        (
            "read_text",
            &["read", "--stdio", EVERYTHING, "test://static-text"],
        ),
        (
            "read_binary",
            &["read", "--stdio", EVERYTHING, "test://static-binary"],
        ),
        (
            "read_unknown",
            &["read", "--stdio", EVERYTHING, "test://nope"],
        ),
        ("prompts_table", &["prompts", "--stdio", EVERYTHING]),
        (
            "prompt_text",
            &[
                "prompt",
                "--stdio",
                EVERYTHING,
                "test_prompt_with_arguments",
                "arg1=uno",
                "arg2=dos",
            ],
        ),
        (
            "prompt_json",
            &[
                "prompt",
                "--stdio",
                EVERYTHING,
                "test_simple_prompt",
                "--json",
            ],
        ),
        ("discover_text", &["discover", "--stdio", EVERYTHING]),
    ];
    for (name, args) in cases {
        let mut command = in_binary_dir(args);
        settings().bind(|| assert_cmd_snapshot!(name, command));
    }
}

/// A server that answers every request with 401 and a challenge, its
/// discovery and registration endpoints included.
fn refusing_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0_u8; 8192];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"test\"\r\n\
                  content-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    port
}

/// Issue 15, point 8: exit 3 with its stderr, with and without a token of
/// the user's own.
#[test]
fn unauthorized_errors() {
    let port = refusing_server();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut settings = settings();
    settings.add_filter(&format!(r"\b{port}\b"), "[PORT]");
    let shown_url = "http://127.0.0.1:[PORT]/mcp";
    let cases: [(&str, &[&str]); 2] = [
        ("unauthorized_error", &[]),
        (
            "unauthorized_with_token_error",
            &["--header", "Authorization: Bearer abc"],
        ),
    ];
    for (name, extra) in cases {
        let mut args = vec!["tools", "--url", url.as_str()];
        args.extend_from_slice(extra);
        let failed = run(&args);
        let mut shown = vec!["tools", "--url", shown_url];
        shown.extend_from_slice(extra);
        settings.bind(|| assert_run_snapshot(name, &shown, &failed));
    }
}

/// Issue 15, point 13: a call that did nothing because the server asks for
/// a confirmation first exits 6, with a hint saying how to go ahead.
#[test]
fn needs_confirmation_exits_6() {
    let dir = crate::support::TempDir::new("music");
    let db = dir.path().join("music.sqlite3");
    let server = format!(
        "{} serve music --db {}",
        crate::support::shell_quote(nexo_path()),
        crate::support::shell_quote(&db.display().to_string())
    );
    let asked = run(&["call", "--stdio", &server, "clear_library"]);
    let shown = [
        "call",
        "--stdio",
        "nexo serve music --db [DB]",
        "clear_library",
    ];
    settings().bind(|| assert_run_snapshot("call_needs_confirmation", &shown, &asked));
}

/// Issue 15, point 13: tables fit the width (`$COLUMNS` when stdout is no
/// terminal): the descriptions are cut, the names never.
#[test]
fn tables_fit_the_width() {
    for columns in ["60", "100"] {
        let mut command = in_binary_dir(&["tools", "--stdio", MORSE]);
        command.env("COLUMNS", columns);
        let listed = crate::support::run_command(command);
        listed.assert_success();
        let width: usize = columns.parse().unwrap();
        for line in listed.stdout.lines() {
            assert!(line.chars().count() <= width, "{columns}: {line:?}");
        }
        assert!(listed.stdout.contains("demorse"), "{listed:#?}");
    }
}

/// Issue 15, point 13: the labels on stderr are coloured on a terminal
/// (a pseudo-terminal from util-linux's `script`), never with `NO_COLOR`,
/// never when piped (every other test), and the JSON line never. Issue 39:
/// on a terminal the error is read once, without the JSON line, unless
/// `--json` asks for it.
#[test]
fn colour_on_a_terminal_unless_no_color() {
    let closed = ClosedPort::new();
    let line = format!(
        "{} tools --url http://127.0.0.1:{}/mcp",
        crate::support::shell_quote(nexo_path()),
        closed.port
    );
    let on_a_terminal = |line: &str, no_color: bool| {
        let mut command = Command::new("script");
        command
            .args(["-qc", line, "/dev/null"])
            .env_remove("NO_COLOR");
        if no_color {
            command.env("NO_COLOR", "1");
        }
        crate::support::run_command(command)
    };
    for no_color in [false, true] {
        let ran = on_a_terminal(&line, no_color);
        let coloured = ran.stdout.contains("\u{1b}[1;31merror:\u{1b}[0m");
        assert_eq!(coloured, !no_color, "NO_COLOR: {no_color}: {ran:#?}");
        assert!(ran.stdout.contains("hint:"), "{ran:#?}");
        assert!(!ran.stdout.contains("{\"error\""), "read once: {ran:#?}");
    }
    let ran = on_a_terminal(&format!("{line} --json"), false);
    let json = ran.stdout.lines().find(|l| l.starts_with('{')).unwrap();
    assert!(json.starts_with("{\"error\""), "{json:?}");
    assert!(!json.contains('\u{1b}'), "{json:?}");
}
