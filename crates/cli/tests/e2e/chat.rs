//! `nexo chat -p` against the scripted provider on loopback (both wire
//! formats, streamed), with real bundled servers: a read-only tool the
//! model calls runs and its result goes back to the model; a tool that
//! changes things is refused without `--yes` (the model is told) and runs
//! with it; with no provider at all, the error says how to configure one.

use nexo_scripted_llm::{Call, Script, ScriptedLlm, Turn};
use serde_json::{Value, json};

use crate::support::{Run, TempDir};

/// `nexo chat ARGS` in `dir`, its provider the scripted one at `base`
/// through `api`'s environment variables.
async fn chat(dir: &std::path::Path, api: &str, base: &str, args: &[&str]) -> Run {
    let mut command = crate::support::nexo();
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        // No local Ollama may be found by accident.
        .env("OLLAMA_HOST", "http://127.0.0.1:9")
        .arg("chat")
        .args(args);
    match api {
        "anthropic" => command
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("ANTHROPIC_BASE_URL", base),
        "openai" => command.env("OPENAI_BASE_URL", format!("{base}/v1")),
        _ => &mut command,
    };
    tokio::task::spawn_blocking(move || crate::support::run_command(command))
        .await
        .unwrap()
}

fn config(dir: &std::path::Path, servers: Value) -> String {
    let path = dir.join("nexo.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_17_the_model_calls_a_read_only_tool_over_both_apis() {
    for api in ["anthropic", "openai"] {
        let dir = TempDir::new("chat");
        let llm = ScriptedLlm::start(Script::new(vec![
            Turn::tool_calls(vec![Call::new(
                "call_1",
                "morse__morse",
                json!({"texto": "sos"}),
            )]),
            Turn::text("In Morse code, SOS is ... --- ..."),
        ]))
        .await
        .unwrap();
        let config = config(dir.path(), json!({"morse": {"builtin": "morse"}}));
        let answered = chat(
            dir.path(),
            api,
            llm.url(),
            &["-p", "what is sos in morse?", "--config", &config],
        )
        .await;
        answered.assert_success();
        assert!(
            answered
                .stdout
                .contains("In Morse code, SOS is ... --- ..."),
            "{api}: {answered:#?}"
        );
        assert!(
            answered.stderr.contains("-> morse__morse"),
            "{api}: {answered:#?}"
        );
        let requests: Vec<Value> = llm
            .requests()
            .into_iter()
            .filter(|request| request.body.is_object())
            .map(|request| request.body)
            .collect();
        assert_eq!(requests.len(), 2, "{api}: {requests:#?}");
        let tools = requests[0]["tools"].to_string();
        assert!(tools.contains("morse__demorse"), "{api}: {tools}");
        // The tool result went back, in the provider's own format.
        let second = requests[1].to_string();
        assert!(second.contains("call_1"), "{api}: {second}");
        assert!(second.contains("... --- ..."), "{api}: {second}");
        assert_eq!(requests[0]["stream"], true, "{api}");

        // Seed 000's chat log, where the README says.
        let log = std::fs::read_to_string(dir.path().join("state/nexo/chat_log.jsonl")).unwrap();
        let lines: Vec<Value> = log
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(
            kinds,
            ["user", "model", "approval", "tool_call", "model"],
            "{api}: {log}"
        );
        assert_eq!(lines[0]["text"], "what is sos in morse?");
        assert_eq!(lines[3]["server"], "morse");
        assert_eq!(lines[3]["arguments"]["texto"], "sos");
        assert!(lines[3]["result_bytes"].as_u64().unwrap() > 0, "{log}");
        assert_eq!(lines[4]["text"], "In Morse code, SOS is ... --- ...");
        llm.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_17_a_call_that_changes_things_needs_yes() {
    let dir = TempDir::new("chatyes");
    let db = dir.path().join("music.db");
    let config = config(dir.path(), json!({"music": {"builtin": "music", "db": db}}));
    let add = || {
        Turn::tool_calls(vec![Call::new(
            "call_add",
            "music__add_song",
            json!({"title": "Song", "artist": "Someone", "genre": "rock", "year": 1999}),
        )])
    };
    let llm = ScriptedLlm::start(Script::new(vec![
        add(),
        Turn::text("I was not allowed to add it."),
        add(),
        Turn::text("Added."),
    ]))
    .await
    .unwrap();

    let refused = chat(
        dir.path(),
        "openai",
        llm.url(),
        &["-p", "add a song", "--config", &config, "--json"],
    )
    .await;
    refused.assert_success();
    let transcript = refused.stdout_json();
    assert_eq!(transcript["answer"], "I was not allowed to add it.");
    let events = transcript["events"].as_array().unwrap();
    let approval = events
        .iter()
        .find_map(|event| event.get("approval"))
        .unwrap();
    assert_eq!(approval["allowed"], false, "{transcript:#}");
    assert!(
        !events.iter().any(|event| event.get("toolResult").is_some()),
        "{transcript:#}"
    );
    let told = llm.requests()[1].body.to_string();
    assert!(told.contains("did not approve"), "{told}");

    let allowed = chat(
        dir.path(),
        "openai",
        llm.url(),
        &["-p", "add a song", "--config", &config, "--json", "--yes"],
    )
    .await;
    allowed.assert_success();
    let transcript = allowed.stdout_json();
    assert_eq!(transcript["answer"], "Added.");
    let result = transcript["events"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|event| event.get("toolResult"))
        .unwrap();
    assert_eq!(result["tool"], "add_song", "{transcript:#}");
    llm.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_17_with_no_provider_the_error_says_how_to_configure_one() {
    let dir = TempDir::new("chatnone");
    let failed = chat(dir.path(), "none", "", &["-p", "hello"]).await;
    assert_eq!(failed.code(), 1, "{failed:#?}");
    let error = &failed.error_line()["error"];
    assert_eq!(error["code"], "usage", "{failed:#?}");
    let hint = error["hint"].as_str().unwrap();
    assert!(hint.contains("ANTHROPIC_API_KEY"), "{hint}");
    assert!(hint.contains("OPENAI_BASE_URL"), "{hint}");
}
