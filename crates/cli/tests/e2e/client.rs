//! `nexo`'s own client commands against `nexo serve morse`: a transport x
//! protocol-era matrix run through one assertion function ([`assert_client`]),
//! then the error exits DESIGN.md promises scripts (1 usage, 3 authorization
//! failed, 4 unreachable, 5 the tool or server reported an error), each with
//! its JSON line last on stderr.

use serde_json::{Value, json};

use crate::support::{ClosedPort, HttpServer, run, serve_morse_command};
use crate::{SOS_PRUEBA, TOOL_NAMES};

/// `--protocol` values and the revision each must negotiate with our server.
const AUTO: (Option<&str>, &str) = (None, "2026-07-28");
const ERA_2025: (Option<&str>, &str) = (Some("2025"), "2025-11-25");
const ERA_2026: (Option<&str>, &str) = (Some("2026"), "2026-07-28");
/// The legacy HTTP+SSE transport predates `server/discover`: auto means
/// `initialize` there.
const SSE_AUTO: (Option<&str>, &str) = (None, "2025-11-25");

/// Where the client connects: the target flags and the transport that
/// `discover` must report.
struct Target {
    flags: Vec<String>,
    transport: &'static str,
}

impl Target {
    fn stdio() -> Self {
        Self {
            flags: vec!["--stdio".into(), serve_morse_command()],
            transport: "stdio",
        }
    }

    fn http(server: &HttpServer) -> Self {
        Self {
            flags: vec!["--url".into(), server.mcp_url()],
            transport: "streamable-http",
        }
    }

    /// The legacy HTTP+SSE transport, asked for by name.
    fn sse(server: &HttpServer) -> Self {
        Self {
            flags: vec![
                "--url".into(),
                format!("{}/sse", server.base_url()),
                "--transport".into(),
                "sse".into(),
            ],
            transport: "sse",
        }
    }

    /// `/sse` with the default `--transport auto`: the Streamable HTTP POST
    /// gets 405 there, so the client falls back to the legacy transport.
    fn sse_by_fallback(server: &HttpServer) -> Self {
        Self {
            flags: vec!["--url".into(), format!("{}/sse", server.base_url())],
            transport: "sse",
        }
    }
}

/// The result object `nexo call --json` must print for a successful call;
/// 2026-07-28 results carry `resultType`.
fn success_object(text: &str, revision: &str) -> Value {
    let mut result = json!({
        "content": [{ "type": "text", "text": text }],
        "structuredContent": { "result": text },
        "isError": false,
    });
    if revision >= "2026-07-28" {
        result["resultType"] = json!("complete");
    }
    result
}

/// Everything the client must do alike over every transport and era.
fn assert_client(target: &Target, (era, revision): (Option<&str>, &str)) {
    let nexo = |command: &str, rest: &[&str]| {
        let mut args = vec![command];
        args.extend(target.flags.iter().map(String::as_str));
        if let Some(era) = era {
            args.extend(["--protocol", era]);
        }
        args.extend(rest);
        run(&args)
    };
    let context = format!("{} {era:?}", target.transport);

    let tools = nexo("tools", &[]);
    tools.assert_success();
    let listed: Vec<&str> = tools
        .stdout
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(listed, TOOL_NAMES, "{context}: {tools:#?}");
    assert!(tools.stdout.starts_with("TOOL "), "{context}: {tools:#?}");

    let tools = nexo("tools", &["--json"]);
    let names: Vec<Value> = tools.assert_success().stdout_json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].clone())
        .collect();
    assert_eq!(names, TOOL_NAMES, "{context}");

    let call = nexo("call", &["morse", "texto=SOS prueba"]);
    assert_eq!(
        call.assert_success().stdout,
        format!("{SOS_PRUEBA}\n"),
        "{context}"
    );

    let call = nexo("call", &["morse", r#"{"texto":"SOS prueba"}"#, "--json"]);
    assert_eq!(
        call.assert_success().stdout_json(),
        success_object(SOS_PRUEBA, revision),
        "{context}"
    );
    let object = call.stdout_json();
    assert_eq!(object["structuredContent"]["result"], SOS_PRUEBA);
    assert_eq!(object["isError"], false);

    let call = nexo("call", &["echo", "texto=hola"]);
    assert_eq!(call.assert_success().stdout, "echo: hola\n", "{context}");

    let failed = nexo("call", &["morse", "texto=#"]);
    assert_eq!(failed.code(), 5, "{context}: {failed:#?}");
    let error = failed.error_line();
    assert_eq!(error["error"]["code"], "tool_error", "{context}");
    assert_eq!(
        failed.stdout, "",
        "{context}: the error is told on stderr only"
    );
    let message = error["error"]["message"].as_str().unwrap().to_owned();
    let text = message
        .strip_prefix("the tool `morse` reported an error: ")
        .unwrap();
    assert!(
        text.contains("'#'"),
        "{context}: names the character: {text}"
    );
    let told = failed
        .stderr
        .lines()
        .filter(|line| !line.starts_with('{') && line.contains(text))
        .count();
    assert_eq!(told, 1, "{context}: told people once: {failed:#?}");

    let failed = nexo("call", &["morse", "texto=#", "--json"]);
    assert_eq!(failed.code(), 5, "{context}: {failed:#?}");
    let object = failed.stdout_json();
    assert_eq!(object["isError"], true, "{context}");
    assert_eq!(object["content"][0]["text"], text, "{context}");
    assert_eq!(failed.error_line()["error"]["code"], "tool_error");

    let discover = nexo("discover", &["--json"]);
    let info = discover.assert_success().stdout_json();
    assert_eq!(info["protocolVersion"], revision, "{context}: {info:#}");
    assert_eq!(info["transport"], target.transport, "{context}");
    assert_eq!(info["serverInfo"]["name"], "nexo-morse", "{context}");
    assert!(info["capabilities"]["tools"].is_object(), "{context}");

    let discover = nexo("discover", &[]);
    let human = &discover.assert_success().stdout;
    assert!(
        human.contains(&format!("protocol      {revision}\n")),
        "{context}: {human}"
    );
    assert!(
        human.contains(&format!("transport     {}\n", target.transport)),
        "{context}: {human}"
    );
}

#[test]
fn stdio_auto_era() {
    assert_client(&Target::stdio(), AUTO);
}

#[test]
fn stdio_protocol_2025() {
    assert_client(&Target::stdio(), ERA_2025);
}

#[test]
fn stdio_protocol_2026() {
    assert_client(&Target::stdio(), ERA_2026);
}

#[test]
fn http_auto_era() {
    let server = HttpServer::start(&[]);
    assert_client(&Target::http(&server), AUTO);
}

#[test]
fn http_protocol_2025() {
    let server = HttpServer::start(&[]);
    assert_client(&Target::http(&server), ERA_2025);
}

#[test]
fn http_protocol_2026() {
    let server = HttpServer::start(&[]);
    assert_client(&Target::http(&server), ERA_2026);
}

#[test]
fn sse_auto_era() {
    let server = HttpServer::start(&[]);
    assert_client(&Target::sse(&server), SSE_AUTO);
}

#[test]
fn sse_protocol_2025() {
    let server = HttpServer::start(&[]);
    assert_client(&Target::sse(&server), ERA_2025);
}

#[test]
fn auto_transport_falls_back_to_sse() {
    let server = HttpServer::start(&[]);
    assert_client(&Target::sse_by_fallback(&server), SSE_AUTO);
}

#[test]
fn unreachable_url_exits_4() {
    let closed = ClosedPort::new();
    let url = format!("http://127.0.0.1:{}/mcp", closed.port);
    for era in ["auto", "2025", "2026"] {
        for command in ["tools", "discover"] {
            let failed = run(&[command, "--url", &url, "--protocol", era, "--timeout", "30"]);
            let error = failed.error_line();
            assert_eq!(
                (failed.code(), error["error"]["code"].as_str()),
                (4, Some("unreachable")),
                "`nexo {command} --url {url} --protocol {era}` must exit 4 with code \
                 `unreachable`: {failed:#?}"
            );
        }
    }
}

#[test]
fn missing_stdio_command_exits_4() {
    let failed = run(&["tools", "--stdio", "/nonexistent/nexo-e2e-missing serve"]);
    assert_eq!(failed.code(), 4, "{failed:#?}");
    assert_eq!(failed.error_line()["error"]["code"], "unreachable");
    assert!(failed.stdout.is_empty(), "{failed:#?}");
}

/// Arguments clap refuses are bad usage like any other: exit 1 and the JSON
/// line, with clap's own explanation and usage kept for people. `--help`
/// and `--version` are answers, not errors.
#[test]
fn bad_arguments_exit_1_with_the_json_line() {
    let zero_timeout = [
        "call",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--timeout",
        "0",
        "echo",
    ];
    for args in [
        &zero_timeout[..],
        &["tools", "--no-such-flag"][..],
        &["no-such-command"][..],
        &["serve"][..],
    ] {
        let failed = run(args);
        assert_eq!(failed.code(), 1, "{args:?}: {failed:#?}");
        assert_eq!(failed.error_line()["error"]["code"], "usage", "{args:?}");
        assert!(failed.stderr.contains("--help"), "{args:?}: {failed:#?}");
        assert!(failed.stdout.is_empty(), "{args:?}: {failed:#?}");
    }
    let timeout = run(&zero_timeout);
    let message = timeout.error_line()["error"]["message"].to_string();
    assert!(message.contains("--timeout"), "{message}");
    for args in [&["--help"][..], &["call", "--help"][..], &["--version"][..]] {
        let answered = run(args);
        assert_eq!(answered.code(), 0, "{args:?}: {answered:#?}");
        assert!(!answered.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn bad_key_value_exits_1() {
    let server = HttpServer::start(&[]);
    let url = server.mcp_url();
    let failed = run(&["call", "--url", &url, "morse", "notakeyvalue"]);
    assert_eq!(failed.code(), 1, "{failed:#?}");
    let error = failed.error_line();
    assert_eq!(error["error"]["code"], "usage");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("notakeyvalue"),
        "{error}"
    );
    assert!(error["error"]["hint"].is_string(), "{error}");
    assert!(failed.stdout.is_empty(), "{failed:#?}");
}

#[test]
fn unknown_tool_exits_5() {
    let server = HttpServer::start(&[]);
    let url = server.mcp_url();
    for arguments in [&["texto=x"][..], &[]] {
        let mut args = vec!["call", "--url", &url, "nosuch"];
        args.extend(arguments);
        let failed = run(&args);
        assert_eq!(failed.code(), 5, "{failed:#?}");
        let error = failed.error_line()["error"].clone();
        assert_eq!(error["code"], "unknown_tool", "{failed:#?}");
        assert_eq!(error["message"], "the server has no tool `nosuch`");
        assert_eq!(
            error["hint"],
            "the server's tools: demorse, echo, morse; `nexo tools TARGET NAME` describes one"
        );
        assert!(failed.stdout.is_empty(), "{failed:#?}");
    }
}

/// A server that refuses everything with 401, its discovery documents and
/// registration endpoint included: authorization cannot even start.
pub fn refusing_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0_u8; 8192];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"test\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[test]
fn failed_authorization_exits_3() {
    let url = format!("http://127.0.0.1:{}/mcp", refusing_server());
    let failed = run(&["tools", "--url", &url]);
    assert_eq!(
        (failed.code(), failed.error_line()["error"]["code"].as_str()),
        (3, Some("unauthorized")),
        "{failed:#?}"
    );
}

/// Issue 15, point 11: arguments from a file (`@FILE`) and from stdin
/// (`-`), for arguments too large for a command line.
#[test]
fn issue_15_arguments_from_a_file_and_from_stdin() {
    use std::io::Write;
    let server = serve_morse_command();
    let dir = crate::support::TempDir::new("arguments");
    let file = dir.path().join("args.json");
    std::fs::write(&file, r#"{"texto": "SOS prueba"}"#).unwrap();
    let from_file = format!("@{}", file.display());
    let called = run(&["call", "--stdio", &server, "morse", &from_file]);
    assert_eq!(called.assert_success().stdout, format!("{SOS_PRUEBA}\n"));

    let mut command = crate::support::nexo();
    command
        .args(["call", "--stdio", &server, "morse", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"texto": "SOS prueba"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{SOS_PRUEBA}\n")
    );

    std::fs::write(&file, "texto=SOS").unwrap();
    let refused = run(&["call", "--stdio", &server, "morse", &from_file]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert_eq!(refused.error_line()["error"]["code"], "usage");
}

/// Issue 15, point 11: an argument the schema does not describe is sent
/// with a warning (the morse tools allow others); one given twice is refused.
#[test]
fn issue_15_undescribed_and_repeated_arguments() {
    let server = serve_morse_command();
    let warned = run(&["call", "--stdio", &server, "morse", "texto=SOS", "speed=2"]);
    warned.assert_success();
    assert!(
        warned
            .stderr
            .contains("warning: the tool's schema describes no argument `speed`"),
        "{warned:#?}"
    );
    let twice = run(&["call", "--stdio", &server, "morse", "texto=a", "texto=b"]);
    assert_eq!(twice.code(), 1, "{twice:#?}");
    assert_eq!(
        twice.error_line()["error"]["message"],
        "the argument `texto` is given twice"
    );
}

/// Issue 15, point 13: a server's log messages and progress reach stderr
/// while a call runs (plain lines when stderr is no terminal), over stdio
/// and Streamable HTTP, in both eras; stdout keeps the result only.
#[test]
fn issue_15_logs_and_progress_while_a_call_runs() {
    use crate::support::{nexo_path, shell_quote};
    let stdio = format!("{} serve everything", shell_quote(nexo_path()));
    let http = HttpServer::serve("everything", &[]);
    let url = http.mcp_url();
    let targets: [&[&str]; 4] = [
        &["--stdio", &stdio],
        &["--stdio", &stdio, "--protocol", "2025"],
        &["--url", &url],
        &["--url", &url, "--protocol", "2025"],
    ];
    for target in targets {
        let call = |tool: &str| {
            let mut args = vec!["call", tool];
            args.extend_from_slice(target);
            run(&args)
        };
        let logged = call("test_tool_with_logging");
        logged.assert_success();
        assert!(
            logged
                .stderr
                .contains("[info nexo-everything] Tool execution started"),
            "{target:?}: {logged:#?}"
        );
        assert!(!logged.stdout.contains("Tool execution"), "{logged:#?}");
        let progressed = call("test_tool_with_progress");
        progressed.assert_success();
        assert!(
            progressed
                .stderr
                .contains("progress: 50 of 100 Completed step 50 of 100"),
            "{target:?}: {progressed:#?}"
        );
    }
}

/// A TLS server on 127.0.0.1 (python's ssl, a self-signed certificate the
/// `openssl` command made) that completes no exchange: nexo refuses its
/// certificate. Gives the port; the server ends with the test's process.
fn self_signed_tls_server(dir: &std::path::Path) -> (crate::support::Proc, u16) {
    crate::support::openssl_self_signed(dir, "cert.pem", "1");
    const SERVER: &str = r#"
import socket, ssl
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("cert.pem", "key.pem")
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    try:
        context.wrap_socket(connection, server_side=True).close()
    except (ssl.SSLError, OSError):
        pass
"#;
    let mut command = std::process::Command::new("python3");
    command
        .current_dir(dir)
        .args(["-c", SERVER])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut server = crate::support::Proc::spawn(&mut command, "TLS server");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.child().stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    (server, line.trim().parse().unwrap())
}

/// Issue 16: SSLKEYLOGFILE gets the TLS secrets of nexo's HTTP client (what
/// Wireshark needs to decrypt it); and TLS failures are told in words: an
/// untrusted certificate, and a port that does not speak TLS at all.
#[test]
fn issue_16_sslkeylogfile_and_tls_failures() {
    let dir = crate::support::TempDir::new("tls");
    let (server, port) = self_signed_tls_server(dir.path());
    let keys = dir.path().join("keys.log");
    let url = format!("https://127.0.0.1:{port}/mcp");
    let mut command = crate::support::nexo();
    command
        .env("SSLKEYLOGFILE", &keys)
        .args(["tools", "--url", &url]);
    let refused = crate::support::run_command(command);
    server.terminate();
    assert_eq!(refused.code(), 4, "{refused:#?}");
    let error = &refused.error_line()["error"];
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("the TLS handshake failed: the server's certificate"),
        "{refused:#?}"
    );
    assert!(!message.contains("Error("), "a Rust type name: {message}");
    assert!(
        error["hint"].as_str().unwrap().contains("SSL_CERT_FILE"),
        "{refused:#?}"
    );
    let logged = std::fs::read_to_string(&keys).unwrap();
    assert!(
        logged.contains("CLIENT_HANDSHAKE_TRAFFIC_SECRET "),
        "{logged}"
    );

    let plain = crate::support::HttpServer::serve("morse", &[]);
    let url = plain.mcp_url().replacen("http://", "https://", 1);
    let failed = run(&["tools", "--url", &url]);
    assert_eq!(failed.code(), 4, "{failed:#?}");
    let error = &failed.error_line()["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("does not speak TLS"),
        "{failed:#?}"
    );
    assert!(
        error["hint"].as_str().unwrap().contains("http://"),
        "{failed:#?}"
    );
}

/// Issue 39: a stdio server that first answers after rmcp's 10 s
/// `server/discover` probe has been given up on (`npx -y` or `uvx` on a
/// cold cache, `docker run`), or only after 45 s, is reached all the same. It reads the probe
/// and `initialize` together and answers both: the probe's late answer (a
/// result from nexo's dual-era server, an error from the Python SDK's
/// 2025-era one) is not taken for the answer to `initialize`.
#[test]
fn issue_39_a_stdio_server_slow_to_start_is_reached() {
    use crate::support::{python_sdk, repo_root, shell_quote};
    let slow_by = |seconds: u32, command: String| {
        format!(
            "sh -c {}",
            shell_quote(&format!("sleep {seconds}; exec {command}"))
        )
    };
    let slow = |command: String| slow_by(11, command);
    let python = format!(
        "{} {} stdio",
        shell_quote(python_sdk()),
        shell_quote(
            repo_root()
                .join("tests/interop/python_server.py")
                .to_str()
                .unwrap()
        )
    );
    let config = crate::support::TempDir::new("slow-servers");
    let file = config.path().join("mcp.json");
    let servers = serde_json::json!({"mcpServers": {"slow": {
        "command": "sh",
        "args": ["-c", format!("sleep 11; exec {}", serve_morse_command())],
    }}});
    std::fs::write(&file, servers.to_string()).unwrap();
    std::thread::scope(|threads| {
        let nexo = threads.spawn(|| {
            run(&[
                "call",
                "--stdio",
                &slow(serve_morse_command()),
                "morse",
                "texto=SOS prueba",
            ])
        });
        let python =
            threads.spawn(|| run(&["call", "--stdio", &slow(python), "add", "a=2", "b=3"]));
        // A JVM's or a cold `docker run`'s start, within the default
        // start-up allowance (60 s) and far past `--timeout` (15 s).
        let slower = threads.spawn(|| {
            run(&[
                "call",
                "--stdio",
                &slow_by(45, serve_morse_command()),
                "morse",
                "texto=SOS prueba",
            ])
        });
        // `nexo servers` shows the start as it goes, as `call` does (off a
        // terminal, a line every ten seconds).
        let listed = threads.spawn(|| run(&["servers", "--config", file.to_str().unwrap()]));
        let listed = listed.join().unwrap();
        assert!(listed.stdout.contains("connected"), "{listed:#?}");
        assert!(listed.stderr.contains("starting `sh -c "), "{listed:#?}");
        let nexo = nexo.join().unwrap();
        assert_eq!(nexo.assert_success().stdout, format!("{SOS_PRUEBA}\n"));
        let python = python.join().unwrap();
        assert_eq!(python.assert_success().stdout.trim(), "5");
        let slower = slower.join().unwrap();
        assert_eq!(slower.assert_success().stdout, format!("{SOS_PRUEBA}\n"));
    });
}
