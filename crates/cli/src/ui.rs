//! `nexo ui`: the local web page. Wiring only: the servers start as `nexo
//! servers` starts them, their connections traced into the page's live
//! trace and their questions asked on the page; the model and the agent
//! are the chat's (`nexo chat`); the page itself is nexo-ui's.

use std::process::Stdio;
use std::sync::Arc;

use nexo_client::{ConnectOptions, ElicitationPolicy};
use nexo_hint::Report;
use nexo_ui::{Bound, Prepared};

use crate::args::UiArgs;
use crate::failure::Failure;
use crate::{chat, env, host, output};

pub async fn run(args: UiArgs) -> Result<(), Failure> {
    let config = host::load(args.config.as_deref())?;
    let mut store = host::consent_store()?;
    let prepared = Prepared::default();
    let provider =
        nexo_host::provider::select(&chat::settings(&args.llm, &config), env::provider()).await;
    let options = ConnectOptions {
        trace: Some(prepared.tracer()),
        startup: args.startup.seconds,
        elicitation: ElicitationPolicy::Responder(prepared.elicitation()),
        sampling: Some(prepared.sampling(provider.as_ref().ok().cloned())),
        notices: Some(Arc::new(output::notice)),
        // The working directory, for servers that still ask for roots.
        roots: std::env::current_dir()
            .ok()
            .and_then(|cwd| nexo_client::handler::root_of(&cwd))
            .into_iter()
            .collect(),
        // The page draws MCP Apps.
        extensions: [nexo_ui::apps::declaration()].into_iter().collect(),
        ..ConnectOptions::default()
    };
    let host::Started { hub, skipped } =
        host::start(&config, &mut store, args.timeout, options).await?;
    host::tell_skipped(&store, &skipped);
    let hub = Arc::new(hub);
    let (blocked, skills) = chat::pinned(&config, &hub, false).await?;
    // One approval policy for the model's calls and the apps'.
    let gate = Arc::new(chat::gate(&config, false)?);
    let agent = match provider {
        Ok(provider) => Ok(chat::agent(
            &hub,
            provider,
            &config,
            &args.llm,
            gate.clone(),
            blocked,
            skills,
        )?),
        Err(error) => Err(Report::of(&error)),
    };
    let model = agent
        .as_ref()
        .map(|agent| agent.provider.model().to_owned())
        .map_err(Clone::clone);
    let bound = Bound::bind(prepared, hub.clone(), args.port, model, gate)
        .await
        .map_err(|error| {
            Failure::usage(
                format!("cannot listen on 127.0.0.1:{}: {error}", args.port),
                Some("choose another --port, or leave it out for any free one".into()),
            )
        })?;
    let url = bound.url();
    // The URL on stdout, for a person and for a script that waits for it.
    output::data(&format!("{url}\n"));
    output::status(&format!(
        "nexo ui: {} servers at {url} (Ctrl-C stops it)",
        hub.status().len()
    ));
    if !args.no_open {
        open_in_browser(&url);
    }
    let served = bound.serve(agent.as_ref().ok(), stopped()).await;
    drop(agent);
    match Arc::try_unwrap(hub) {
        Ok(hub) => hub.close().await,
        Err(_) => tracing::debug!("the page still held the servers; they end with the process"),
    }
    served.map_err(|error| {
        Failure::usage(
            format!("the page stopped: {error}"),
            Some("run `nexo ui` again; the servers were closed".into()),
        )
    })
}

/// Completes on Ctrl-C or SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Opens `url` in the default browser, saying so when it cannot.
fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let opened = std::process::Command::new(opener)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match opened {
        // Waited for, so that it leaves no zombie behind.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(_) => output::status(&format!(
            "could not open a browser ({opener}); open the URL above yourself"
        )),
    }
}
