//! The scripted provider as a process, for end-to-end tests that run the
//! `nexo` binary or an official SDK against it: `nexo-scripted-llm
//! SCRIPT.json` serves the script (format: the crate's documentation) and
//! prints `listening on http://127.0.0.1:PORT` on stdout, then runs until
//! it is killed or interrupted.

use std::io::Write;
use std::process::ExitCode;

use nexo_scripted_llm::{Script, ScriptedLlm};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "nexo-scripted-llm: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let Some(path) = std::env::args_os().nth(1) else {
        return Err("usage: nexo-scripted-llm SCRIPT.json".to_owned());
    };
    let shown = path.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{shown}: {error}"))?;
    let script: Script =
        serde_json::from_str(&text).map_err(|error| format!("{shown}: not a script: {error}"))?;
    let server = ScriptedLlm::start(script)
        .await
        .map_err(|error| format!("cannot listen on 127.0.0.1: {error}"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on {}", server.url())
        .and_then(|()| stdout.flush())
        .map_err(|error| format!("cannot write to stdout: {error}"))?;
    let _ = tokio::signal::ctrl_c().await;
    server.stop().await;
    Ok(())
}
