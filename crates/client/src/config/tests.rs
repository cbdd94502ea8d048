//! Every format, as real files write it, and every error placed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nexo_hint::Hinted;

use super::*;

const CLAUDE_DESKTOP: &str = include_str!("../../tests/fixtures/config/claude_desktop_config.json");
const CLAUDE_CODE: &str = include_str!("../../tests/fixtures/config/claude_code.mcp.json");
const VSCODE: &str = include_str!("../../tests/fixtures/config/vscode.mcp.json");
const NEXO: &str = include_str!("../../tests/fixtures/config/nexo.json");

const TOKEN: &str = "ghp-secret-4c1d";

fn env(name: &str) -> Option<String> {
    match name {
        "GITHUB_TOKEN" | "API_TOKEN" => Some(TOKEN.to_owned()),
        "HOME" => Some("/home/ana".to_owned()),
        "LOG_LEVEL" => Some("debug".to_owned()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn request(cwd: &Path) -> LoadRequest<'static> {
    LoadRequest {
        explicit: None,
        cwd: cwd.to_path_buf(),
        user_config_dir: None,
        home: Some(PathBuf::from("/home/ana")),
        env: &env,
        check_builtin: None,
    }
}

/// `text` read as the file `--config /project/<name>`.
fn read(name: &str, text: &str) -> Result<Config, ConfigError> {
    parse(
        text,
        Source::Explicit(PathBuf::from(name)),
        &request(Path::new("/project")),
    )
}

/// The error `text` gives: its line, column, message and hint.
fn fails(text: &str) -> (usize, usize, String, String) {
    match read("bad.json", text) {
        Ok(config) => panic!("accepted: {config:?}"),
        Err(ConfigError::Invalid {
            location,
            message,
            hint,
        }) => {
            assert_eq!(location.file, Path::new("bad.json"));
            (
                location.line,
                location.column,
                message,
                hint.unwrap_or_default(),
            )
        }
        Err(other) => panic!("{other}"),
    }
}

/// A stdio entry's command, arguments, environment and working directory.
type Stdio<'a> = (
    &'a str,
    Vec<&'a str>,
    Vec<(&'a str, &'a str)>,
    Option<&'a Path>,
);

fn stdio(server: &ServerConfig) -> Stdio<'_> {
    match &server.spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => (
            command.as_str(),
            args.iter().map(String::as_str).collect(),
            env.iter()
                .map(|var| (var.key.as_str(), var.value.expose()))
                .collect(),
            cwd.as_deref(),
        ),
        other => panic!("{}: {other:?}", server.name),
    }
}

fn remote(server: &ServerConfig) -> (&str, HttpTransport, Vec<String>) {
    match &server.spec {
        ServerSpec::Remote {
            url,
            transport,
            headers,
        } => (
            url.expose(),
            *transport,
            headers
                .iter()
                .map(|header| {
                    format!(
                        "{}: {}",
                        header.name(),
                        header.value().to_str().unwrap_or_default()
                    )
                })
                .collect(),
        ),
        other => panic!("{}: {other:?}", server.name),
    }
}

fn names(config: &Config) -> Vec<&str> {
    config.servers.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn claude_desktop_files_are_read_as_they_are() -> Result<(), ConfigError> {
    let config = read("claude_desktop_config.json", CLAUDE_DESKTOP)?;
    assert_eq!(names(&config), ["filesystem", "github"]);
    let (command, args, vars, cwd) = stdio(&config.servers[1]);
    assert_eq!(command, "npx");
    assert_eq!(args, ["-y", "@modelcontextprotocol/server-github"]);
    assert_eq!(vars, [("GITHUB_PERSONAL_ACCESS_TOKEN", TOKEN)]);
    assert_eq!(cwd, None);
    let ignored: Vec<&str> = config.ignored.iter().map(|i| i.field.as_str()).collect();
    assert_eq!(ignored, ["globalShortcut"]);
    assert_eq!(config.servers[0].location.as_ref().map(|l| l.line), Some(3));
    Ok(())
}

#[test]
fn claude_code_files_are_read_as_they_are() -> Result<(), ConfigError> {
    let config = read(".mcp.json", CLAUDE_CODE)?;
    assert_eq!(names(&config), ["local", "api", "legacy", "untyped"]);
    let (command, args, vars, _) = stdio(&config.servers[0]);
    assert_eq!(command, "node");
    assert_eq!(args, ["./server.js", "--port", "8080"]);
    assert_eq!(vars, [("DEBUG", "false"), ("RETRIES", "3")]);
    let (url, transport, headers) = remote(&config.servers[1]);
    assert_eq!(url, "https://api.example.com/mcp");
    assert_eq!(transport, HttpTransport::Http);
    assert_eq!(
        headers,
        [
            format!("authorization: Bearer {TOKEN}"),
            "x-team: core".to_owned()
        ]
    );
    assert_eq!(remote(&config.servers[2]).1, HttpTransport::Sse);
    // A `url` without `type` (which Claude Code would refuse): Streamable
    // HTTP, falling back to the legacy transport.
    assert_eq!(remote(&config.servers[3]).1, HttpTransport::Auto);
    match &config.servers[1].written {
        Written::Remote {
            transport,
            url,
            header_names,
        } => {
            assert_eq!(*transport, "http");
            assert_eq!(url, "https://api.example.com/mcp");
            assert_eq!(header_names, &["Authorization", "X-Team"]);
        }
        other => panic!("{other:?}"),
    }
    // Secrets never print.
    assert!(!format!("{config:?}").contains(TOKEN));
    Ok(())
}

#[test]
fn vscode_files_are_read_as_they_are() -> Result<(), Box<dyn std::error::Error>> {
    let project = tempfile::tempdir()?;
    std::fs::create_dir(project.path().join(".vscode"))?;
    std::fs::write(project.path().join(".vscode/mcp.json"), VSCODE)?;
    std::fs::write(
        project.path().join(".env"),
        "# the project's variables\nAPI_URL=https://x.example\nLOG=info\n",
    )?;
    let config = load(&LoadRequest {
        explicit: Some(PathBuf::from(".vscode/mcp.json")),
        ..request(project.path())
    })?;
    assert_eq!(
        config.source,
        Source::Explicit(PathBuf::from(".vscode/mcp.json"))
    );
    assert_eq!(names(&config), ["memory", "github"]);
    let root = project.path().display().to_string();
    let (command, args, vars, cwd) = stdio(&config.servers[0]);
    assert_eq!(command, "node");
    assert_eq!(args, [format!("{root}/build/index.js")]);
    // `env` wins over `envFile`.
    assert_eq!(vars, [("API_URL", "https://x.example"), ("LOG", "debug")]);
    assert_eq!(cwd, Some(project.path()));
    match &config.servers[0].written {
        Written::Stdio {
            env_names,
            env_file,
            args,
            ..
        } => {
            assert_eq!(env_names, &["API_URL", "LOG"]);
            assert_eq!(env_file.as_deref(), Some("${workspaceFolder}/.env"));
            assert_eq!(args, &["${workspaceFolder}/build/index.js"]);
        }
        other => panic!("{other:?}"),
    }
    // VS Code's `http` falls back to SSE, as VS Code does.
    assert_eq!(remote(&config.servers[1]).1, HttpTransport::Auto);
    let ignored: Vec<(&str, &str)> = config
        .ignored
        .iter()
        .map(|i| (i.server.as_deref().unwrap_or(""), i.field.as_str()))
        .collect();
    assert_eq!(
        ignored,
        [
            ("memory", "dev"),
            ("github", "gallery"),
            ("github", "version")
        ]
    );

    // The env file is part of what the user consents to.
    let before = config.servers[0].fingerprint;
    std::fs::write(
        project.path().join(".env"),
        "NODE_OPTIONS=--require ./x.js\n",
    )?;
    let config = load(&LoadRequest {
        explicit: Some(PathBuf::from(".vscode/mcp.json")),
        ..request(project.path())
    })?;
    assert_ne!(config.servers[0].fingerprint, before);
    Ok(())
}

#[test]
fn nexo_fields_are_read() -> Result<(), ConfigError> {
    let config = read("nexo.json", NEXO)?;
    assert_eq!(
        config.trace,
        Some(PathBuf::from("/project/traces/anon.jsonl"))
    );
    assert!(config.trace_redact);
    assert_eq!(names(&config), ["dns", "docs", "slow", "off"]);
    match &config.servers[0].spec {
        ServerSpec::Builtin {
            server,
            options,
            base_dir,
        } => {
            assert_eq!(server, "dns");
            assert_eq!(
                serde_json::Value::Object(options.clone()),
                serde_json::json!({"resolver": "192.0.2.1:53", "dnsTimeout": 2})
            );
            assert_eq!(base_dir, Path::new("/project"));
        }
        other => panic!("{other:?}"),
    }
    assert!(config.servers[0].spec.target().is_none());
    assert_eq!(
        config.servers[0].timeouts.idle,
        Some(Duration::from_secs(30))
    );
    match &config.servers[1].spec {
        ServerSpec::Builtin { options, .. } => assert_eq!(
            options.get("roots"),
            Some(&serde_json::json!(["./docs", "/home/ana/notes"]))
        ),
        other => panic!("{other:?}"),
    }
    let slow = &config.servers[2];
    assert_eq!(slow.description.as_deref(), Some("long reports"));
    let secs = |s| Some(Duration::from_secs(s));
    assert_eq!(slow.timeouts.startup, secs(180));
    assert_eq!(config.servers[0].timeouts.startup, None);
    assert_eq!(
        slow.timeouts.for_tool("report"),
        ToolTimeouts {
            idle: secs(120),
            max: secs(3600)
        }
    );
    assert_eq!(
        slow.timeouts.for_tool("ping"),
        ToolTimeouts {
            idle: secs(60),
            max: secs(90)
        }
    );
    assert_eq!(
        slow.timeouts.for_tool("other"),
        ToolTimeouts {
            idle: secs(60),
            max: secs(600)
        }
    );
    assert_eq!(config.ignored.len(), 1);
    assert_eq!(config.ignored[0].field, "alwaysAllow");
    // A disabled entry keeps what it cannot expand.
    let off = &config.servers[3];
    assert!(off.disabled);
    assert_eq!(stdio(off).0, "${NOT_SET_ANYWHERE}");
    Ok(())
}

#[test]
fn targets_carry_the_command_line_and_the_working_directory() -> Result<(), ConfigError> {
    let config = read(
        "c.json",
        r#"{"mcpServers": {"s": {"command": "srv", "args": ["a b", "c"], "cwd": "sub",
            "env": {"K": "v"}}}}"#,
    )?;
    match config.servers[0].spec.target() {
        Some(Target::Stdio { command, env, cwd }) => {
            assert_eq!(command, ["srv", "a b", "c"]);
            assert_eq!(env.len(), 1);
            assert_eq!(cwd, Some(PathBuf::from("/project/sub")));
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn a_missing_variable_is_named_where_it_is() {
    let text = "{\n  \"mcpServers\": {\n    \"gh\": {\n      \"url\": \"https://h/x\",\n      \"headers\": {\"Authorization\": \"Bearer ${MISSING_TOKEN}\"}\n    }\n  }\n}\n";
    let (line, column, message, hint) = fails(text);
    // The `${` of `${MISSING_TOKEN}` on line 5.
    let expected_column = "      \"headers\": {\"Authorization\": \"Bearer "
        .chars()
        .count()
        + 1;
    assert_eq!((line, column), (5, expected_column));
    assert_eq!(
        message,
        "server `gh`: the environment variable `MISSING_TOKEN` is not set"
    );
    assert!(hint.contains("${MISSING_TOKEN:-value}"), "{hint}");
    let shown = read("bad.json", text).err().map(|e| e.to_string());
    assert_eq!(
        shown.as_deref(),
        Some("bad.json:5:44: server `gh`: the environment variable `MISSING_TOKEN` is not set")
    );
}

#[test]
fn refused_features_are_named() {
    let cases = [
        (
            r#"{"mcpServers": {"a": {"url": "https://h", "headersHelper": "./get-token.sh"}}}"#,
            "`headersHelper`",
            "Bearer ${TOKEN}",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "https://h", "oauth": {"clientId": "x"}}}}"#,
            "`oauth`",
            "--client-id",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "unix:///run/mcp.sock"}}}"#,
            "Unix socket URLs",
            "127.0.0.1",
        ),
        (
            r#"{"servers": {"a": {"type": "stdio", "command": "x", "env": {"K": "${input:key}"}}}, "inputs": [{"id": "key", "description": "the key"}]}"#,
            "`${input:key}`",
            "`${KEY}`",
        ),
        (
            r#"{"mcpServers": {"a": {"type": "ws", "url": "ws://h"}}}"#,
            "WebSocket",
            "\"type\": \"http\"",
        ),
        (
            r#"{"mcp": {"servers": {}}}"#,
            "VS Code's settings.json",
            "top level",
        ),
        (
            r#"{"mcpServers": {"a": {"serverUrl": "https://h"}}}"#,
            "Windsurf",
            "`url`",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "disabledTools": ["y"]}}}"#,
            "`disabledTools`",
            "\"disabled\": true",
        ),
        (
            r#"{"servers": {"a": {"command": "x", "args": ["${file}"]}}}"#,
            "open in VS Code",
            "${workspaceFolder}",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": null}}}}"#,
            "`null`",
            "remove `K`",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "ftp://h/x"}}}"#,
            "`ftp:` URLs",
            "https://",
        ),
    ];
    for (text, message, hint) in cases {
        let (_, _, shown, given) = fails(text);
        assert!(shown.contains(message), "{text}: {shown}");
        assert!(given.contains(hint), "{text}: {given}");
    }
}

#[test]
fn unknown_fields_are_refused_with_what_was_meant() {
    let cases = [
        (
            r#"{"mcpServers": {"a": {"comand": "x"}}}"#,
            "server `a`: `comand` is not a field of a server entry",
            "did you mean `command`?",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "ENV": {}}}}"#,
            "`ENV`",
            "did you mean `env`?",
        ),
        (
            r#"{"mcp_servers": {}}"#,
            "`mcp_servers` is not a field of the file's top level",
            "did you mean `mcpServers`?",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "toolTimeouts": {"t": {"idle": 3}}}}}"#,
            "`idle`",
            "`timeout`, `maxTimeout`",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "http://h/mcp", "startupTimeout": 90}}}"#,
            "`startupTimeout` does not belong to a server reached at a URL",
            "remove `startupTimeout`",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "frobnicate": 1}}}"#,
            "`frobnicate`",
            "the fields are `type`, `command`",
        ),
    ];
    for (text, message, hint) in cases {
        let (_, _, shown, given) = fails(text);
        assert!(shown.contains(message), "{text}: {shown}");
        assert!(given.contains(hint), "{text}: {given}");
    }
}

#[test]
fn errors_point_at_the_value_at_fault() {
    // (text, what the error points at (its first occurrence), part of the message)
    let cases = [
        (
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": \"-v\"}\n}}",
            "\"-v\"",
            "`args` must be an array of strings, not a string",
        ),
        (
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": [\"-v\", 8080]}\n}}",
            "8080",
            "each of `args` must be a string, not a number",
        ),
        (
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"a\": {\"command\": \"y\"}\n}}",
            "\"a\": {\"command\": \"y\"",
            "`a` is given twice in `mcpServers`",
        ),
        (
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"}\n  \"b\": {}\n}}",
            // Just after the entry that lacks its comma.
            "\n  \"b\"",
            "expected a `,`",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeout\": \"60\"}}}",
            "\"60\"",
            "`timeout` must be a number of seconds, not a string",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeout\": 0}}}",
            "0}",
            "above zero",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeout\": 60, \"maxTimeout\": 5}}}",
            "5}",
            "`maxTimeout` (5 s) is shorter than `timeout` (60 s)",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeout\": 60, \"toolTimeouts\": {\"t\": {\"maxTimeout\": 5}}}}}",
            "\"t\"",
            "the tool `t` would wait 60 s for each message but 5 s in all",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"disabled\": \"yes\"}}}",
            "\"yes\"",
            "`disabled` must be `true` or `false`",
        ),
        (
            "{\"mcpServers\": {\"ñandú\": {\"command\": \"x\", \"args\": [\"a ${}\"]}}}",
            "${}",
            "`${}` names no variable",
        ),
        ("[]", "[", "holds an array, not a JSON object"),
        ("", "", "holds no JSON value"),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}, \"servers\": {}}",
            "\"servers\"",
            "both `mcpServers` and `servers`",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"url\": \"http://h\"}}}",
            "\"a\"",
            "both `command` and `url`",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"env\": {}}}}",
            "\"a\"",
            "no `command`, `url` or `builtin`",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"type\": \"stdio\", \"url\": \"http://h\"}}}",
            "\"url\"",
            "`url` does not belong to a command (stdio) server",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"type\": \"http\", \"command\": \"x\"}}}",
            "\"command\"",
            "`command` does not belong to a server reached at a URL",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"type\": \"stdio\"}}}",
            "\"a\"",
            "the entry has no `command`",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"type\": \"streamable\", \"url\": \"http://h\"}}}",
            "\"streamable\"",
            "`streamable` is not a server type",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"builtin\": \"dns\", \"command\": \"x\"}}}",
            "\"command\"",
            "it has no `command`",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"url\": \"http://h\", \"headers\": {\"Bad Name\": \"x\"}}}}",
            "\"Bad Name\"",
            "`Bad Name` is not a valid HTTP header name",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"url\": \"not a url\"}}}",
            "\"not a url\"",
            "`not a url` is not a URL",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"A=B\": \"x\"}}}}",
            "\"A=B\"",
            "cannot name an environment variable",
        ),
        (
            "{\"mcpServers\": {\"\": {\"command\": \"x\"}}}",
            "\"\"",
            "cannot name a server",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}} {}",
            "{}",
            "goes on after its JSON value",
        ),
        (
            "{'mcpServers': {}}",
            "'",
            "strings are written in double quotes",
        ),
        (
            "{\"mcpServers\": {\"a\": {command: \"x\"}}}",
            "command",
            "expected a field name in double quotes",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}",
            "{\"mcpServers\"",
            "this object is not closed",
        ),
    ];
    for (text, marker, message) in cases {
        let (line, column, shown, hint) = fails(text);
        let offset = text.find(marker).unwrap_or(usize::MAX);
        let before = &text[..offset];
        let expected_line = before.matches('\n').count() + 1;
        let expected_column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        assert!(shown.contains(message), "{text}: {shown}");
        assert_eq!(
            (line, column),
            (expected_line, expected_column),
            "{text}: {shown}"
        );
        assert!(!hint.is_empty(), "{text}: no hint");
    }
}

#[test]
fn secrets_stay_out_of_errors() {
    let text = format!(
        r#"{{"mcpServers": {{"a": {{"url": "http://h", "headers": {{"Authorization": "Bearer {TOKEN}\u0001"}}}}}}}}"#
    );
    let error = read("c.json", &text).err().map(|e| format!("{e} {e:?}"));
    assert!(error.is_some_and(|shown| !shown.contains(TOKEN)));
    let text = r#"{"mcpServers": {"a": {"url": "https://user:${API_TOKEN}@h/x"}}}"#;
    let config = read("c.json", text);
    assert!(config.is_ok_and(|config| !format!("{config:?}").contains(TOKEN)));
}

#[test]
fn builtin_entries_are_checked_by_the_caller() {
    let check: &BuiltinCheck = &|server, options, base| {
        assert_eq!(base, Path::new("/project"));
        match server {
            "dns" if options.contains_key("roots") => Err(BuiltinProblem {
                option: Some("roots".into()),
                message: "`roots` is an option of `files`, not of `dns`".into(),
                hint: Some("remove `roots`".into()),
            }),
            "dns" => Ok(()),
            _ => Err(BuiltinProblem {
                option: None,
                message: format!("no bundled server is called `{server}`"),
                hint: None,
            }),
        }
    };
    let run = |text: &str| {
        parse(
            text,
            Source::Explicit(PathBuf::from("c.json")),
            &LoadRequest {
                check_builtin: Some(check),
                ..request(Path::new("/project"))
            },
        )
    };
    assert!(run(r#"{"mcpServers": {"d": {"builtin": "dns"}}}"#).is_ok());
    let wrong = run(r#"{"mcpServers": {"d": {"builtin": "dns", "roots": ["."]}}}"#);
    assert_eq!(
        wrong.err().map(|e| e.to_string()).as_deref(),
        Some("c.json:1:50: server `d`: `roots` is an option of `files`, not of `dns`")
    );
    let unknown = run(r#"{"mcpServers": {"d": {"builtin": "dsn"}}}"#);
    assert_eq!(
        unknown.err().and_then(|e| e.location().map(|l| l.column)),
        Some(34)
    );
}

#[test]
fn the_fingerprint_follows_the_entry_as_written() -> Result<(), ConfigError> {
    let fingerprint = |text: &str, env: &dyn Fn(&str) -> Option<String>| {
        parse(
            text,
            Source::Explicit(PathBuf::from("c.json")),
            &LoadRequest {
                env,
                ..request(Path::new("/project"))
            },
        )
        .map(|config| config.servers[0].fingerprint)
    };
    let entry = r#"{"mcpServers": {"a": {"command": "srv", "env": {"TOKEN": "${TOKEN}"}}}}"#;
    let one = fingerprint(entry, &|_| Some("one".into()))?;
    // Another value of the user's variable: the same entry.
    assert_eq!(fingerprint(entry, &|_| Some("two".into()))?, one);
    // Formatting, comments and field order do not matter.
    let reordered = "{\"mcpServers\": {\"a\": {\n  // the token\n  \"env\": {\"TOKEN\": \"${TOKEN}\"},\n  \"command\": \"srv\",\n}}}";
    assert_eq!(fingerprint(reordered, &|_| Some("one".into()))?, one);
    // Another command, argument or variable: another entry.
    for changed in [
        r#"{"mcpServers": {"a": {"command": "srv2", "env": {"TOKEN": "${TOKEN}"}}}}"#,
        r#"{"mcpServers": {"a": {"command": "srv", "args": ["-x"], "env": {"TOKEN": "${TOKEN}"}}}}"#,
        r#"{"mcpServers": {"a": {"command": "srv", "env": {"TOKEN": "${OTHER}"}}}}"#,
    ] {
        assert_ne!(
            fingerprint(changed, &|_| Some("one".into()))?,
            one,
            "{changed}"
        );
    }
    assert_eq!(one.to_text().len(), "sha256:".len() + 64);
    Ok(())
}

#[test]
fn the_search_order_is_config_then_project_then_user_then_default()
-> Result<(), Box<dyn std::error::Error>> {
    let home = tempfile::tempdir()?;
    let project = tempfile::tempdir()?;
    let user_dir = home.path().join("nexo");
    let base = || LoadRequest {
        user_config_dir: Some(user_dir.clone()),
        ..request(project.path())
    };
    let servers = |name: &str| format!(r#"{{"mcpServers": {{"{name}": {{"command": "x"}}}}}}"#);

    // Nothing at all: the bundled servers, the files server on the cwd.
    let config = load(&base())?;
    assert_eq!(config.source, Source::Default);
    assert_eq!(names(&config), ["dns", "morse", "utils", "files", "music"]);
    match &config.servers[3].spec {
        ServerSpec::Builtin { options, .. } => assert_eq!(
            options.get("roots"),
            Some(&serde_json::json!([project.path().display().to_string()]))
        ),
        other => panic!("{other:?}"),
    }
    assert!(config.servers.iter().all(|s| s.project_file.is_none()));

    std::fs::create_dir(&user_dir)?;
    std::fs::write(user_dir.join(USER_FILE), servers("mine"))?;
    let config = load(&base())?;
    assert_eq!(config.source, Source::User(user_dir.join(USER_FILE)));
    assert_eq!(names(&config), ["mine"]);
    assert!(config.servers[0].project_file.is_none());

    std::fs::write(project.path().join(PROJECT_FILE), servers("theirs"))?;
    let config = load(&base())?;
    assert!(config.source.is_project());
    assert_eq!(names(&config), ["theirs"]);
    let canonical = std::fs::canonicalize(project.path().join(PROJECT_FILE))?;
    assert_eq!(config.servers[0].project_file, Some(canonical));

    std::fs::write(project.path().join("chosen.json"), servers("chosen"))?;
    let config = load(&LoadRequest {
        explicit: Some(PathBuf::from("chosen.json")),
        ..base()
    })?;
    assert_eq!(
        config.source,
        Source::Explicit(PathBuf::from("chosen.json"))
    );
    assert_eq!(names(&config), ["chosen"]);
    assert!(config.servers[0].project_file.is_none());

    let missing = load(&LoadRequest {
        explicit: Some(PathBuf::from("nope.json")),
        ..base()
    });
    match missing {
        Err(error @ ConfigError::Read { .. }) => {
            assert_eq!(error.to_string(), "cannot read `nope.json`: no such file");
            assert!(
                error
                    .hint()
                    .is_some_and(|hint| hint.terminal().contains("--config"))
            );
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn a_bad_env_file_is_placed_in_it() -> Result<(), Box<dyn std::error::Error>> {
    let project = tempfile::tempdir()?;
    std::fs::write(project.path().join(".env"), "A=1\nnot a pair\n")?;
    std::fs::write(
        project.path().join("c.json"),
        r#"{"mcpServers": {"a": {"command": "x", "envFile": ".env"}}}"#,
    )?;
    let result = load(&LoadRequest {
        explicit: Some(PathBuf::from("c.json")),
        ..request(project.path())
    });
    match result {
        Err(ConfigError::Invalid { location, .. }) => {
            assert_eq!(location.file, project.path().join(".env"));
            assert_eq!((location.line, location.column), (2, 1));
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(project.path().join(".env"))?;
    let result = load(&LoadRequest {
        explicit: Some(PathBuf::from("c.json")),
        ..request(project.path())
    });
    let shown = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(shown.contains("cannot read the `envFile`"), "{shown}");
    assert!(shown.starts_with("c.json:1:50:"), "{shown}");
    Ok(())
}

#[test]
fn the_readme_example_is_read() -> Result<(), Box<dyn std::error::Error>> {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("## Configuration")
        .nth(1)
        .and_then(|rest| rest.split("```jsonc\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .ok_or("no jsonc example in the README's Configuration section")?;
    let project = tempfile::tempdir()?;
    std::fs::write(project.path().join(".env"), "A=1\n")?;
    let config = parse(
        section,
        Source::Explicit(PathBuf::from("example.json")),
        &request(project.path()),
    )?;
    assert_eq!(names(&config), ["github", "api", "docs", "reports"]);
    assert!(config.servers[3].disabled);
    Ok(())
}

#[test]
fn values_from_the_environment_stay_out_of_debug() -> Result<(), ConfigError> {
    let text = r#"{"mcpServers": {
        "cli": {"command": "server", "args": ["--token", "${API_TOKEN}", "--name=${GITHUB_TOKEN}"]},
        "url": {"url": "https://h/mcp?key=${API_TOKEN}"}
    }}"#;
    let config = read("c.json", text)?;
    let shown = format!("{config:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("--token"));
    let cli = &config.servers[0];
    assert_eq!(cli.from_env.len(), 2);
    assert_eq!(
        cli.scrub(&format!("cannot run server --token {TOKEN}")),
        "cannot run server --token [redacted]"
    );
    // Still given to the server itself.
    assert_eq!(stdio(cli).1, ["--token", TOKEN, &format!("--name={TOKEN}")]);
    Ok(())
}

#[test]
fn a_byte_order_mark_is_skipped_and_positions_stay_right() {
    let text = "\u{feff}{\"mcpServers\": {\"a\": {\"comand\": \"x\"}}}";
    let (line, column, message, _) = fails(text);
    assert!(message.contains("`comand`"), "{message}");
    assert_eq!((line, column), (1, 23));
}

#[test]
fn the_users_own_file_takes_the_workspace_from_the_working_directory() -> Result<(), ConfigError> {
    let text =
        r#"{"servers": {"a": {"command": "x", "args": ["${workspaceFolder}"], "cwd": "sub"}}}"#;
    let config = parse(
        text,
        Source::User(PathBuf::from("/home/ana/.config/nexo/config.json")),
        &request(Path::new("/work/repo")),
    )?;
    let (_, args, _, cwd) = stdio(&config.servers[0]);
    assert_eq!(args, ["/work/repo"]);
    // Relative paths are still the file's.
    assert_eq!(cwd, Some(Path::new("/home/ana/.config/nexo/sub")));
    Ok(())
}

#[test]
fn chat_settings_are_read_and_a_projects_only_tighten() -> Result<(), ConfigError> {
    let text = r#"{
  "mcpServers": {},
  "chat": {
    "provider": "openai",
    "model": "llama3.2",
    "baseUrl": "http://127.0.0.1:11434/v1",
    "maxSteps": 8,
    "contextWindow": 32768,
    "approvals": {"files__*": "allow", "*__delete_*": "deny", "music__add_song": "ask"}
  }
}"#;
    let config = read("nexo.json", text)?;
    let chat = &config.chat;
    assert_eq!(chat.provider, Some(ProviderKind::OpenAi));
    assert_eq!(chat.model.as_deref(), Some("llama3.2"));
    assert_eq!(chat.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
    assert_eq!(chat.max_steps, Some(8));
    assert_eq!(chat.context_window, Some(32768));
    let rules: Vec<(&str, ApprovalAction, usize, bool)> = chat
        .approvals
        .iter()
        .map(|rule| {
            (
                rule.pattern.as_str(),
                rule.action,
                rule.location.line,
                rule.from_project,
            )
        })
        .collect();
    assert_eq!(
        rules,
        [
            ("files__*", ApprovalAction::Allow, 9, false),
            ("*__delete_*", ApprovalAction::Deny, 9, false),
            ("music__add_song", ApprovalAction::Ask, 9, false),
        ]
    );

    // Found in the working directory: the model and where requests go are
    // set aside, the rules kept (marked, for the policy to weigh).
    let project = parse(
        text,
        Source::Project(PathBuf::from(".mcp.json")),
        &request(Path::new("/project")),
    )?;
    assert_eq!(project.chat.provider, None);
    assert_eq!(project.chat.base_url, None);
    assert_eq!(project.chat.max_steps, None);
    assert!(project.chat.approvals.iter().all(|rule| rule.from_project));
    let set_aside: Vec<&str> = project
        .ignored
        .iter()
        .map(|ignored| ignored.field.as_str())
        .collect();
    assert_eq!(
        set_aside,
        [
            "chat.provider",
            "chat.model",
            "chat.baseUrl",
            "chat.maxSteps",
            "chat.contextWindow"
        ]
    );
    Ok(())
}

#[test]
fn bad_chat_settings_are_placed() {
    let cases = [
        (r#"{"chat": []}"#, 1, 10, "`chat` must be an object"),
        (
            r#"{"chat": {"provider": "gemini"}}"#,
            1,
            23,
            "`gemini` is not a provider",
        ),
        (
            r#"{"chat": {"maxSteps": 0}}"#,
            1,
            23,
            "`maxSteps` must be a whole number",
        ),
        (r#"{"chat": {"maxSteps": 2.5}}"#, 1, 23, "not 2.5"),
        (
            r#"{"chat": {"tools": {"searchShare": 2}}}"#,
            1,
            36,
            "from 0 to 1",
        ),
        (
            r#"{"chat": {"tools": {"include": "x"}}}"#,
            1,
            32,
            "a list of `server__tool` patterns",
        ),
        (
            r#"{"chat": {"tools": {"alwaysload": []}}}"#,
            1,
            21,
            "not a field of `chat.tools`",
        ),
        (
            r#"{"chat": {"contextWindow": 100}}"#,
            1,
            28,
            "at least 2048, not 100",
        ),
        (
            r#"{"chat": {"contextWindow": "big"}}"#,
            1,
            28,
            "must be a number of tokens",
        ),
        (
            r#"{"chat": {"approvals": {"x__*": "yes"}}}"#,
            1,
            33,
            "must be `allow`, `ask` or `deny`",
        ),
        (
            r#"{"chat": {"modle": "x"}}"#,
            1,
            11,
            "`modle` is not a field of `chat`",
        ),
    ];
    for (text, line, column, message) in cases {
        let (at_line, at_column, said, hint) = fails(text);
        assert!(said.contains(message), "{text}: {said}");
        assert_eq!((at_line, at_column), (line, column), "{text}: {said}");
        assert!(!hint.is_empty(), "{text}");
    }
    let (_, _, _, hint) = fails(r#"{"chat": {"modle": "x"}}"#);
    assert_eq!(hint, "did you mean `model`?");
}
