//! One turn, answered and done: `nexo chat -p PROMPT`. Nothing is asked:
//! a call the policy would ask about is refused (the model is told) unless
//! `--yes` or a rule allows it; the person is told too, after the answer,
//! with what would let such calls run, and the exit status is 9
//! ([`Exit::Refused`]). Ctrl-C cancels the turn (the servers are
//! told, tasks cancelled) and exits with 130. The ids of tasks under way
//! are saved with the conversation as they start, for `--resume` should
//! the process end before them.

use nexo_hint::{Exit, Hint};
use nexo_host::agent::{Agent, AgentEvent, NoOneToAsk};
use nexo_host::approval::Refused;
use nexo_host::chatlog::ChatLog;
use nexo_host::conversations::Conversation;
use nexo_host::provider::{Content, Message, Role};
use nexo_host::tasks::Keeper;
use serde_json::{Value, json};

use super::markdown::Markdown;
use super::{Saved, terminal};
use crate::failure::Failure;
use crate::output;

pub async fn run(
    agent: &Agent<'_>,
    prompt: &str,
    mut conversation: Conversation,
    saved: &Saved,
    log: Option<&ChatLog>,
    json: bool,
) -> Result<(), Failure> {
    let toolset = agent.toolset();
    super::tell_offered(agent, &toolset);
    if let Some(log) = log {
        log.user(prompt);
    }
    conversation.messages.push(Message::user(prompt));
    let before = conversation.messages.len();
    let mut keeper = Keeper::new(&conversation);
    let mut transcript = Vec::new();
    let mut markdown = Markdown::new(output::colour_stdout());
    let mut refusals = Vec::new();
    let mut on_event = |event: AgentEvent| {
        if let Some(log) = log {
            log.event(&event);
        }
        if let AgentEvent::Approval {
            server,
            tool,
            refused: Some(refused),
            ..
        } = &event
        {
            refusals.push((nexo_client::namespace::join(server, tool), *refused));
        }
        if let Some(kept) = keeper.event(&event) {
            saved.save(kept);
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
            terminal::show(&event, &mut markdown);
        }
    };
    let turn = tokio::select! {
        turn = agent.turn(&toolset, &mut conversation.messages, &NoOneToAsk, &mut on_event) => turn,
        _ = tokio::signal::ctrl_c() => {
            // The question stays, answered by the cancellation; no task is kept.
            conversation.messages.truncate(before);
            conversation.messages.push(Message {
                role: Role::Assistant,
                content: vec![Content::Text("(The user cancelled this turn.)".into())],
            });
            saved.save(&mut conversation);
            output::status("\ncancelled: the calls under way were cancelled on their servers");
            return Err(Failure::interrupted());
        }
    };
    let end = turn?;
    saved.save(&mut conversation);
    let answer = conversation
        .messages
        .last()
        .filter(|message| message.tool_calls().next().is_none())
        .map(Message::text)
        .unwrap_or_default();
    if json {
        output::json(&json!({
            "answer": answer,
            "events": transcript,
            "conversation": conversation.id,
            "steps": end.steps,
            "cutShort": end.cut_short,
            "usage": {
                "inputTokens": end.usage.input_tokens,
                "outputTokens": end.usage.output_tokens,
            },
        }));
    } else {
        output::data("\n");
        terminal::tell_end(&end, &agent.provider);
        output::status(&format!(
            "go on with `nexo chat --resume {}`",
            conversation.id
        ));
    }
    match refused_calls(&refusals) {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

/// What the person is told of the calls the model wanted and did not get,
/// and what would let them run; `None` when every call ran.
fn refused_calls(refusals: &[(String, Refused)]) -> Option<Failure> {
    if refusals.is_empty() {
        return None;
    }
    let names = |kind: Refused| {
        let mut names: Vec<&str> = refusals
            .iter()
            .filter(|(_, refused)| *refused == kind)
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    let (unapproved, denied) = (names(Refused::NotApproved), names(Refused::ByRule));
    let mut why = Vec::new();
    let mut advice = Vec::new();
    if !unapproved.is_empty() {
        why.push(format!(
            "{} (it needs approval and `-p` asks no one)",
            unapproved.join(", ")
        ));
        let rules: Vec<String> = unapproved
            .iter()
            .map(|name| format!("\"{name}\": \"allow\""))
            .collect();
        advice.push(format!(
            "run again with --yes to approve every call no rule denies, or let {} run every \
             time with the rule {} in the configuration's \"chat\": {{\"approvals\": {{...}}}}",
            if unapproved.len() == 1 { "it" } else { "them" },
            rules.join(", ")
        ));
    }
    if !denied.is_empty() {
        why.push(format!("{} (a `deny` rule refuses it)", denied.join(", ")));
        advice.push(
            "--yes never overrides a `deny` rule: change the rule in the configuration's \
             \"chat\": {\"approvals\"} to let such a call run"
                .to_owned(),
        );
    }
    Some(
        Failure::new(
            Exit::Refused,
            "calls_refused",
            format!(
                "the model asked for {} tool call(s) that did not run: {}",
                refusals.len(),
                why.join("; ")
            ),
        )
        .hint(Hint::new(advice.join("; "))),
    )
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
            refused,
            reason,
        } => json!({"approval": {
            "server": server,
            "tool": tool,
            "allowed": refused.is_none(),
            "refused": refused,
            "reason": reason,
        }}),
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
        AgentEvent::Task {
            server,
            tool,
            update,
            ..
        } => json!({"task": {
            "server": server,
            "tool": tool,
            "id": update.task,
            "status": update.status,
            "message": update.message,
        }}),
        AgentEvent::Fitted { fitted, window } => json!({"context": {
            "window": window,
            "shortenedResults": fitted.shortened,
            "droppedMessages": fitted.dropped,
            "tokensBefore": fitted.tokens_before,
            "tokensAfter": fitted.tokens_after,
        }}),
        AgentEvent::Skill {
            server,
            skill,
            file,
            bytes,
            error,
        } => json!({"skill": {
            "server": server,
            "skill": skill,
            "file": file,
            "bytes": bytes,
            "error": error,
        }}),
        AgentEvent::Answer { usage, .. } => json!({"usage": {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
        }}),
    }
}
