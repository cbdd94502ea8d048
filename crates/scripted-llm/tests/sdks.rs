//! The proof that the scripted provider speaks the real wire formats: its
//! binary is started as a process and the official `anthropic` and
//! `openai` Python SDKs (pinned, installed by `scripts/python-llm-sdks`)
//! stream and fetch answers with tool calls from it (`check_scripted.py`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use nexo_scripted_llm::{Call, Reply, Script, Turn, Usage};
use serde_json::json;

fn script() -> Script {
    let calls = vec![
        Call::new(
            "toolu_1",
            "utils__echo",
            json!({"text": "hi ü \"quoted\" {braces}"}),
        ),
        Call::new("toolu_2", "utils__time", json!({})),
    ];
    let with_calls = Turn::Reply(Reply {
        text: "Let me look.".to_owned(),
        tool_calls: calls,
        usage: Usage {
            input_tokens: 20,
            output_tokens: 9,
            cache_read_tokens: 4,
        },
        cut_after: None,
    });
    let plain = Turn::text("Plain answer.");
    Script::new(vec![with_calls.clone(), plain.clone(), with_calls, plain])
}

#[test]
fn official_python_sdks_read_the_scripted_provider() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let installer = root.join("../../scripts/python-llm-sdks");
    let installed = match Command::new(&installer).stderr(Stdio::inherit()).output() {
        Ok(output) if output.status.success() => output,
        Ok(output) => panic!("{} failed: {}", installer.display(), output.status),
        Err(error) => panic!("cannot run {}: {error}", installer.display()),
    };
    let python = String::from_utf8_lossy(&installed.stdout).trim().to_owned();

    let script_path = std::env::temp_dir().join(format!(
        "nexo-scripted-llm-sdks-{}.json",
        std::process::id()
    ));
    let text = match serde_json::to_string(&script()) {
        Ok(text) => text,
        Err(error) => panic!("cannot write the script: {error}"),
    };
    if let Err(error) = std::fs::write(&script_path, text) {
        panic!("cannot write {}: {error}", script_path.display());
    }
    let mut provider = match Command::new(env!("CARGO_BIN_EXE_nexo-scripted-llm"))
        .arg(&script_path)
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => panic!("cannot start the scripted provider: {error}"),
    };
    let mut line = String::new();
    if let Some(stdout) = provider.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    let url = line.trim().strip_prefix("listening on ").map(str::to_owned);
    let checked = url.as_ref().map(|url| {
        Command::new(&python)
            .arg(root.join("tests/check_scripted.py"))
            .arg(url)
            .output()
    });
    let _ = provider.kill();
    let _ = provider.wait();
    let _ = std::fs::remove_file(&script_path);
    match checked {
        None => panic!("the provider printed `{line}`, not its URL"),
        Some(Err(error)) => panic!("cannot run {python}: {error}"),
        Some(Ok(output)) => assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "ok",
            "the SDKs disagree with the scripted provider:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}
