//! Issue 15, point 4: a token handed to `nexo` on the command line reaches
//! no output, whatever path it takes: a malformed header, the userinfo of a
//! URL that cannot be reached, a header sent to a server that answers 401
//! (and quotes the header back), an OAuth client secret,
//! a header and a URL sent to a real server, an `-e` value of a stdio child
//! that cannot start and of one that runs; each with `RUST_LOG=debug` and
//! without; and the trace files of both sides of an exchange that carried
//! it. (The server's call log is `nexo serve`'s, tested beside it.)

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::any;

use crate::support::{ClosedPort, HttpServer, Run, nexo, run_command, serve_morse_command};

/// What a person would not want printed.
const TOKEN: &str = "tok-e2e-7c1d9a";

/// A server that refuses every request with 401, as a resource server does
/// when the token is wrong, and quotes the credentials it was given in the
/// body, as careless servers do.
async fn refusing_server() -> String {
    async fn refuse(headers: HeaderMap) -> impl IntoResponse {
        let quoted: Vec<String> = [header::AUTHORIZATION.as_str(), "x-api-key"]
            .into_iter()
            .filter_map(|name| headers.get(name)?.to_str().ok().map(str::to_owned))
            .collect();
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, r#"Bearer error="invalid_token""#)],
            format!("refused: {}", quoted.join(", ")),
        )
    }
    let app = Router::new().fallback(any(refuse));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}/mcp")
}

/// Runs `nexo ARGS` twice, without and with `RUST_LOG=debug`, and fails if
/// the token shows in either run's stdout or stderr; gives the quiet run.
fn run_without_leaking(args: &[&str]) -> Run {
    let mut quiet = None;
    for debug in [false, true] {
        let mut command = nexo();
        command.args(args);
        if debug {
            command.env("RUST_LOG", "debug");
        }
        let run = run_command(command);
        assert!(
            !run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN),
            "the token leaked (RUST_LOG=debug: {debug}) from `nexo {}`:\n{run:#?}",
            args.join(" ")
        );
        quiet.get_or_insert(run);
    }
    quiet.unwrap()
}

/// Runs `nexo tools --url URL --client-id .. --client-secret TOKEN` until it
/// asks for the browser, ends it (it would wait minutes for a person), and
/// gives everything it printed.
fn until_the_browser_is_asked(url: &str, debug: bool) -> String {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut command = nexo();
    command
        .args([
            "tools",
            "--url",
            url,
            "--client-id",
            "nexo-e2e",
            "--client-secret",
            TOKEN,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if debug {
        command.env("RUST_LOG", "debug");
    }
    let mut proc = crate::support::Proc::spawn(&mut command, "nexo tools (OAuth)");
    let stderr = proc.child().stderr.take().unwrap();
    let (lines, printed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    while let Ok(line) = printed.recv_timeout(crate::support::PATIENCE) {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("waiting for the browser") {
            return seen;
        }
    }
    panic!("nexo never asked for the browser:\n{seen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_15_a_token_reaches_no_output() {
    let closed = ClosedPort::new();
    let closed_url = format!("http://127.0.0.1:{}/mcp", closed.port);

    // A header HTTP does not allow: a usage error that names the header only.
    let bad = format!("Authorization: Bearer {TOKEN}\u{1}");
    let refused = run_without_leaking(&["tools", "--url", &closed_url, "--header", &bad]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert_eq!(refused.error_line()["error"]["code"], "usage");
    assert!(refused.stderr.contains("Authorization"), "{refused:#?}");
    let unsplit = format!("Authorization Bearer {TOKEN}");
    let refused = run_without_leaking(&["tools", "--url", &closed_url, "--header", &unsplit]);
    assert_eq!(refused.code(), 1, "{refused:#?}");

    // Userinfo of a URL that refuses connections.
    let with_userinfo = format!("http://user:{TOKEN}@127.0.0.1:{}/mcp", closed.port);
    for transport in ["auto", "http", "sse"] {
        let unreachable =
            run_without_leaking(&["tools", "--url", &with_userinfo, "--transport", transport]);
        assert_eq!(unreachable.code(), 4, "{unreachable:#?}");
        assert!(
            unreachable.stderr.contains("[redacted]@127.0.0.1"),
            "{unreachable:#?}"
        );
    }

    // A 401 for a token sent in a header, quoted back in the body.
    let refusing = refusing_server().await;
    let bearer = format!("Authorization: Bearer {TOKEN}");
    for transport in ["http", "sse"] {
        let unauthorized = run_without_leaking(&[
            "tools",
            "--url",
            &refusing,
            "--transport",
            transport,
            "--header",
            &bearer,
        ]);
        assert_eq!(unauthorized.code(), 3, "{unauthorized:#?}");
    }
    // The legacy transport quotes the body of the refusal: the scrubbed quote.
    let quoted = run_without_leaking(&[
        "tools",
        "--url",
        &refusing,
        "--transport",
        "sse",
        "--header",
        &bearer,
    ]);
    assert!(quoted.stderr.contains("refused: [redacted]"), "{quoted:#?}");
    let key = format!("X-Api-Key: {TOKEN}");
    // Without `Authorization`, OAuth starts, and the server refuses that too.
    let unauthorized = run_without_leaking(&["tools", "--url", &refusing, "--header", &key]);
    assert_eq!(unauthorized.code(), 3, "{unauthorized:#?}");
    let unauthorized = run_without_leaking(&[
        "tools", "--url", &refusing, "--header", &key, "--header", &bearer,
    ]);
    assert_eq!(unauthorized.code(), 3, "{unauthorized:#?}");

    // An OAuth client secret: authorization goes as far as asking for the
    // browser, which never comes back (the person's time is not limited by
    // `--timeout`): what was printed until then shows no secret.
    for debug in [false, true] {
        let printed = until_the_browser_is_asked(&refusing, debug);
        assert!(!printed.contains(TOKEN), "the secret leaked: {printed}");
    }

    // A real server, reached with the token in a header and in the userinfo,
    // both sides tracing every message in full: the traces name the
    // credentials' headers, never their values.
    let traces = crate::support::TempDir::new("secrettraces");
    let server_trace = traces.path().join("server.jsonl");
    let client_trace = traces.path().join("client.jsonl");
    let server_trace_arg = server_trace.display().to_string();
    let client_trace_arg = client_trace.display().to_string();
    let server = HttpServer::start(&["--trace", &server_trace_arg]);
    let mcp = server.mcp_url();
    let mcp_with_userinfo = mcp.replacen("http://", &format!("http://user:{TOKEN}@"), 1);
    for header in [&key, &bearer] {
        let listed = run_without_leaking(&[
            "tools",
            "--url",
            &mcp_with_userinfo,
            "--header",
            header,
            "--trace",
            &client_trace_arg,
        ]);
        listed.assert_success();
    }
    drop(server);
    for trace in [&server_trace, &client_trace] {
        let written = std::fs::read_to_string(trace).unwrap();
        assert!(written.contains("[redacted]"), "{written}");
        assert!(
            !written.contains(TOKEN),
            "the token is in the trace: {written}"
        );
    }

    // `-e` values of a child that cannot start, and of one that runs.
    let env = format!("API_TOKEN={TOKEN}");
    let missing = run_without_leaking(&["tools", "--stdio", "nexo-no-such-command", "-e", &env]);
    assert_eq!(missing.code(), 4, "{missing:#?}");
    let listed = run_without_leaking(&["tools", "--stdio", &serve_morse_command(), "-e", &env]);
    listed.assert_success();
}
