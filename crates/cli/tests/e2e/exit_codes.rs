//! Issue 15, point 9: every failure class maps to one exit code and one
//! error code whatever the timing, with a hint that applies to the target,
//! and no message names a Rust type.

use std::net::TcpListener;

use crate::support::{Run, run};

/// A server that accepts connections and never answers: the connections
/// are held open for as long as the test process lives.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

fn assert_failure(run: &Run, exit: i32, code: &str) {
    assert_eq!(run.code(), exit, "{run:#?}");
    assert_eq!(run.error_line()["error"]["code"], code, "{run:#?}");
    for internal in ["rmcp::", "nexo_client::", "Transport [", "builder error"] {
        assert!(!run.stderr.contains(internal), "{internal}: {run:#?}");
    }
}

#[test]
fn issue_15_urls_that_are_not_http_are_usage_errors() {
    for url in [
        "127.0.0.1:9/mcp",
        "not a url",
        "ftp://127.0.0.1:9/mcp",
        "localhost:9",
    ] {
        let refused = run(&["tools", "--url", url]);
        assert_failure(&refused, 1, "usage");
        assert!(!refused.stderr.contains("OAuth"), "{refused:#?}");
    }
    let no_scheme = run(&["tools", "--url", "127.0.0.1:9/mcp"]);
    assert_eq!(
        no_scheme.error_line()["error"]["hint"],
        "write it with its scheme: `--url http://127.0.0.1:9/mcp`"
    );
}

/// A silent server is a timeout (exit 4, `timeout`) whatever the limit,
/// transport and protocol era: the issue saw exit 1 ("Transport channel
/// closed") at 10 to 16 s, where rmcp's own discovery fallback (10 s) and
/// the HTTP client's per-attempt limit raced the session's.
#[test]
fn issue_15_a_server_that_never_answers_is_a_timeout() {
    let url = silent_server();
    for extra in [
        &["--timeout", "1"][..],
        &["--timeout", "1", "--protocol", "2025"],
        &["--timeout", "1", "--protocol", "2026"],
        &["--timeout", "1", "--transport", "sse"],
        &["--timeout", "2.5"],
        &["--timeout", "11"],
    ] {
        let mut args = vec!["tools", "--url", &url];
        args.extend_from_slice(extra);
        let timed_out = run(&args);
        assert_failure(&timed_out, 4, "timeout");
    }
}

/// A child that exits at once is unreachable, whether writing the first
/// message or reading its answer notices first (the issue saw exit 1,
/// "Broken pipe", in 8 runs of 12), with a hint about the command.
#[test]
fn issue_15_a_child_that_exits_at_once_is_unreachable() {
    for command in ["true", "sh -c 'exit 3'"] {
        for _ in 0..6 {
            let exited = run(&["tools", "--stdio", command]);
            assert_failure(&exited, 4, "unreachable");
            let hint = exited.error_line()["error"]["hint"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(!hint.contains("--transport"), "{exited:#?}");
            assert!(hint.contains("run it by hand"), "{exited:#?}");
        }
    }
}

/// Issue 15, point 12: a stdio server's own log lines stay out of the way
/// unless `--verbose` asks for them; when it fails, its last lines say why.
#[test]
fn issue_15_child_stderr_only_when_asked_or_failing() {
    let server = format!(
        "sh -c 'echo child-log-line >&2; exec {}'",
        crate::support::serve_morse_command()
    );
    let quiet = run(&["tools", "--stdio", &server]);
    quiet.assert_success();
    assert!(!quiet.stderr.contains("child-log-line"), "{quiet:#?}");
    let verbose = run(&["tools", "--stdio", &server, "--verbose"]);
    verbose.assert_success();
    assert!(verbose.stderr.contains("child-log-line"), "{verbose:#?}");

    let failing = run(&[
        "tools",
        "--stdio",
        "sh -c 'echo cannot open the library >&2; exit 2'",
    ]);
    assert_failure(&failing, 4, "unreachable");
    assert!(
        failing
            .stderr
            .contains("caused by: sh (stderr): cannot open the library"),
        "{failing:#?}"
    );
    assert_eq!(
        failing.error_line()["error"]["causes"][0],
        "sh (stderr): cannot open the library"
    );
}

/// Issue 15, point 12: a URL without the MCP mount is told where MCP is,
/// from the server's health document.
#[test]
fn issue_15_a_url_without_the_mount_gets_the_right_one() {
    let server = crate::support::HttpServer::start(&[]);
    let base = server.base_url();
    for url in [format!("{base}/"), format!("{base}/wrong")] {
        let failed = run(&["tools", "--url", &url]);
        assert_eq!(failed.code(), 1, "{failed:#?}");
        let mcp = format!("{}/mcp", base.trim_end_matches('/'));
        assert_eq!(
            failed.error_line()["error"]["hint"],
            format!("this server serves MCP at `/mcp`: try `--url {mcp}`"),
            "{failed:#?}"
        );
    }
}

/// Issue 15, point 9: a stdio server that prints something other than
/// JSON-RPC on stdout is a protocol error that quotes it, not a timeout,
/// whether it then says nothing or goes on to answer a handshake it broke.
#[test]
fn issue_15_a_child_printing_garbage_on_stdout_is_a_protocol_error() {
    let silent = "sh -c 'echo Server listening on stdio; echo ready; sleep 30'";
    let failed = run(&["tools", "--stdio", silent, "--startup-timeout", "1"]);
    assert_failure(&failed, 1, "protocol_error");
    let message = failed.error_line()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("not JSON-RPC (2 in all; the first: `Server listening on stdio`)"),
        "{failed:#?}"
    );
    assert!(
        failed.error_line()["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("must write only JSON-RPC messages on stdout"),
        "{failed:#?}"
    );
    // A banner before a working server is tolerated.
    let banner = format!(
        "sh -c 'echo starting; exec {}'",
        crate::support::serve_morse_command()
    );
    run(&["tools", "--stdio", &banner]).assert_success();
}
