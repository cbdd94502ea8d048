//! `nexo chat -p PROMPT`: one turn of the chat, answered and done. Wiring
//! only: the servers start as `nexo servers` starts them, the model and the
//! agent loop are nexo-host's.

use std::collections::HashMap;
use std::time::Duration;

use nexo_client::config::Config;
use nexo_client::hub::Hub;
use nexo_host::agent::{Agent, AgentEvent, NoOneToAsk, WithheldTool};
use nexo_host::approval::{Origin, Policy};
use nexo_host::chatlog::ChatLog;
use nexo_host::pins::{PinStore, ServerIdentity};
use nexo_host::provider::{Message, ProviderKind, Settings};
use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::args::{ChatArgs, ProviderArg};
use crate::failure::Failure;
use crate::{env, host, output};

/// What the model is told about where it runs.
const SYSTEM_PROMPT: &str = "You are nexo's assistant. You may call the tools of the MCP servers \
     the user connected; a tool's name is its server's and its own, joined by `__`. Call a \
     tool when it helps answer; say plainly when a tool fails or a call was not approved.";

pub async fn run(args: ChatArgs) -> Result<(), Failure> {
    let config = host::load(args.config.as_deref())?;
    let mut store = host::consent_store()?;
    let trace = match host::trace_choice(&args.trace, Some(&config)) {
        Some((path, options)) => Some(host::tracer(&path, options)?),
        None => None,
    };
    let settings = Settings {
        kind: args.provider.map(|provider| match provider {
            ProviderArg::Anthropic => ProviderKind::Anthropic,
            ProviderArg::Openai => ProviderKind::OpenAi,
        }),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        ..Settings::default()
    };
    let provider = nexo_host::provider::select(&settings, env::var)
        .await
        .map_err(|error| Failure::from_error(&error))?;
    let host::Started { hub, skipped } =
        host::start(&config, &mut store, args.timeout, trace.clone()).await?;
    host::tell_skipped(&store, &skipped);
    let origins: HashMap<String, Origin> = config
        .servers
        .iter()
        .map(|server| {
            let origin = if server.project_file.is_some() {
                Origin::Project
            } else {
                Origin::User
            };
            (server.name.clone(), origin)
        })
        .collect();
    let blocked = pinned(&config, &hub, args.approve_tool_changes).await?;
    let agent = Agent {
        hub: &hub,
        provider,
        policy: Policy::default(),
        origins,
        yes: args.yes,
        blocked,
        system: Some(SYSTEM_PROMPT.to_owned()),
        max_steps: args.max_steps as usize,
        max_tokens: nexo_host::agent::DEFAULT_MAX_TOKENS,
    };
    let toolset = agent.toolset();
    for withheld in toolset
        .withheld()
        .iter()
        .filter(|withheld| !agent.blocked.contains(withheld))
    {
        output::status(&format!(
            "not offered to the model: `{}` of `{}`: {}",
            withheld.tool, withheld.server, withheld.reason
        ));
    }
    let log = chat_log(&args);
    if let Some(log) = &log {
        log.user(&args.prompt);
    }
    let mut conversation = vec![Message::user(args.prompt.clone())];
    let mut transcript = Vec::new();
    let json = args.json;
    let mut on_event = |event: AgentEvent| {
        if let Some(log) = &log {
            log.event(&event);
        }
        if json {
            // The answer's pieces, joined.
            if let (AgentEvent::Text(text), Some(Value::Object(last))) =
                (&event, transcript.last_mut())
                && let Some(Value::String(so_far)) = last.get_mut("text")
            {
                so_far.push_str(text);
                return;
            }
            transcript.push(event_json(&event));
        } else {
            show(&event);
        }
    };
    let turn = agent
        .turn(&toolset, &mut conversation, &NoOneToAsk, &mut on_event)
        .await;
    hub.close().await;
    if let Some(trace) = trace
        && let Err(error) = trace.flush()
    {
        tracing::warn!(%error, "cannot write the trace file");
    }
    let end = turn.map_err(|error| Failure::from_error(&error))?;
    let answer = conversation
        .last()
        .filter(|message| message.tool_calls().next().is_none())
        .map(Message::text)
        .unwrap_or_default();
    if json {
        output::json(&json!({
            "answer": answer,
            "events": transcript,
            "steps": end.steps,
            "cutShort": end.cut_short,
            "usage": {
                "inputTokens": end.usage.input_tokens,
                "outputTokens": end.usage.output_tokens,
            },
        }));
    } else {
        output::data("\n");
        output::status(&format!(
            "{} steps, {} tokens in, {} out",
            end.steps, end.usage.input_tokens, end.usage.output_tokens
        ));
    }
    if end.cut_short {
        output::status(&format!(
            "warning: the turn ended after {} steps with the model still calling tools; raise `--max-steps`",
            end.steps
        ));
    }
    Ok(())
}

/// Each connected server's tools against their pins (`pins.json` in
/// nexo's configuration directory): a server seen for the first time is
/// pinned as it is; a tool changed or added since is not offered, and the
/// person is shown the change and how to approve it.
async fn pinned(
    config: &Config,
    hub: &Hub,
    approve_changes: bool,
) -> Result<Vec<WithheldTool>, Failure> {
    let Some(dir) = env::config_dir() else {
        output::status(
            "warning: no configuration directory to keep tool pins in; tools are not pinned",
        );
        return Ok(Vec::new());
    };
    let mut store =
        PinStore::open(dir.join("pins.json")).map_err(|error| Failure::from_error(&error))?;
    let tools = hub.tools();
    let mut blocked = Vec::new();
    for server in &config.servers {
        let listed: Vec<Tool> = tools
            .iter()
            .filter(|(name, _)| name == &server.name)
            .map(|(_, tool)| tool.clone())
            .collect();
        let Ok(session) = hub.session(&server.name, Duration::ZERO).await else {
            continue;
        };
        let instructions = session
            .server_info()
            .and_then(|info| info.instructions.clone());
        let fingerprint = server.fingerprint.to_text();
        let identity = ServerIdentity {
            name: &server.name,
            fingerprint: &fingerprint,
        };
        let admitted = store
            .admit(&identity, &listed, instructions.as_deref(), approve_changes)
            .map_err(|error| Failure::from_error(&error))?;
        if admitted.first_use {
            output::status(&format!(
                "pinned the tools of `{}` as they are now ({} of them); a later change is shown and held back",
                server.name,
                admitted.approved.len()
            ));
        } else if !admitted.approved.is_empty() {
            output::status(&format!(
                "approved the changed or new tools of `{}`: {}",
                server.name,
                admitted.approved.join(", ")
            ));
        }
        for (tool, status) in admitted.blocked {
            let Some(reason) = status.held_back_because() else {
                continue;
            };
            output::status(&format!(
                "held back `{tool}` of `{}`: {reason}",
                server.name
            ));
            blocked.push(WithheldTool {
                server: server.name.clone(),
                tool,
                reason,
            });
        }
    }
    if !blocked.is_empty() {
        output::status(
            "hint: after reviewing the changes, run again with `--approve-tool-changes` to offer them",
        );
    }
    Ok(blocked)
}

/// The chat log: `--chat-log FILE`, else `chat_log.jsonl` in nexo's state
/// directory; none with `--chat-log off` or when it cannot be opened (said
/// once).
fn chat_log(args: &ChatArgs) -> Option<ChatLog> {
    let path = match args.chat_log.as_deref() {
        Some(path) if path.as_os_str() == "off" => return None,
        Some(path) => path.to_owned(),
        None => env::chat_log()?,
    };
    match ChatLog::open(&path) {
        Ok(log) => Some(log),
        Err(error) => {
            output::status(&format!(
                "warning: cannot open the chat log `{}`: {error}; this chat is not logged",
                path.display()
            ));
            None
        }
    }
}

/// An event as the person sees it: the answer on stdout as it comes, the
/// tool calls on stderr.
fn show(event: &AgentEvent) {
    match event {
        AgentEvent::Text(text) => output::data(text),
        AgentEvent::ToolCall {
            server,
            tool,
            arguments,
        } => output::status(&format!("-> {server}__{tool} {arguments}")),
        AgentEvent::Approval {
            server,
            tool,
            allowed: false,
            reason,
        } => output::status(&format!("   {server}__{tool} not run: {reason}")),
        AgentEvent::Approval { .. } | AgentEvent::Answer { .. } => {}
        AgentEvent::ToolResult {
            server,
            tool,
            duration,
            bytes,
            error,
            ..
        } => {
            let outcome = match error {
                Some(error) => format!("failed: {}", output::summary(Some(error))),
                None => format!("{bytes} bytes"),
            };
            output::status(&format!(
                "<- {server}__{tool} {outcome} ({:.0} ms)",
                duration.as_secs_f64() * 1000.0
            ));
        }
    }
}

fn event_json(event: &AgentEvent) -> Value {
    match event {
        AgentEvent::Text(text) => json!({"text": text}),
        AgentEvent::ToolCall {
            server,
            tool,
            arguments,
        } => json!({"toolCall": {"server": server, "tool": tool, "arguments": arguments}}),
        AgentEvent::Approval {
            server,
            tool,
            allowed,
            reason,
        } => {
            json!({"approval": {"server": server, "tool": tool, "allowed": allowed, "reason": reason}})
        }
        AgentEvent::ToolResult {
            server,
            tool,
            duration,
            bytes,
            error,
            ..
        } => json!({"toolResult": {
            "server": server,
            "tool": tool,
            "durationMs": duration.as_secs_f64() * 1000.0,
            "bytes": bytes,
            "error": error,
        }}),
        AgentEvent::Answer { usage, .. } => json!({"usage": {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
        }}),
    }
}
