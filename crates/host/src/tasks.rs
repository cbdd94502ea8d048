//! Tool calls a server runs as tasks, kept across chats. nexo-client
//! follows a task to its end within the turn that called the tool; what is
//! here is for a chat that ends while one still runs on its server (the
//! process killed, the terminal closed): each task's id is kept with the
//! saved conversation as it starts and forgotten as it ends ([`Keeper`]),
//! and a resumed conversation takes them up ([`Agent::take_up`]).
//!
//! The saved conversation holds the messages up to the person's message of
//! the turn that was cut short. Taking up follows each kept task to its end
//! and adds to the conversation the model's calls the tasks stand for, one
//! result each (the tool's result, or the error that ended its task), and
//! a note that the chat had ended while they ran; the model reads them with
//! the person's next message. What else the cut-short turn did (earlier
//! steps, calls that were not tasks) is not kept. A turn the person
//! cancels (Ctrl-C) cancels its tasks, and keeps none.

use std::time::Instant;

use futures::future::join_all;
use serde::{Deserialize, Serialize};

use crate::agent::{Agent, AgentEvent, first_text, outcome_parts, text_bytes};
use crate::conversations::Conversation;
use crate::provider::{Content, Message, Role, ToolCall, ToolResult};

/// What the model reads after the results of tasks taken up.
const TAKEN_UP_NOTE: &str = "(The chat ended while these tools ran as tasks on their servers; \
     their results came when the conversation was resumed.)";

/// A task under way when the conversation was last saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeptTask {
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The id the server gave the task.
    pub task: String,
    /// The model's call it stands for: its id, the name the model called
    /// and the arguments.
    pub call: ToolCall,
}

/// The tasks of a turn under way, kept with a copy of the conversation as
/// the turn began.
pub struct Keeper {
    conversation: Conversation,
}

impl Keeper {
    /// For a turn about to run on `conversation` (the person's message
    /// already in it).
    pub fn new(conversation: &Conversation) -> Self {
        Self {
            conversation: conversation.clone(),
        }
    }

    /// Takes in a turn's `event`: when a task started or ended, the
    /// conversation to save now, with the ids of the tasks under way.
    pub fn event(&mut self, event: &AgentEvent) -> Option<&mut Conversation> {
        let AgentEvent::Task {
            server,
            tool,
            call,
            update,
        } = event
        else {
            return None;
        };
        let tasks = &mut self.conversation.tasks;
        let known = tasks
            .iter()
            .position(|kept| kept.server == *server && kept.task == update.task);
        match (update.status.is_terminal(), known) {
            (false, None) => tasks.push(KeptTask {
                server: server.clone(),
                tool: tool.clone(),
                task: update.task.clone(),
                call: call.clone(),
            }),
            (true, Some(known)) => {
                tasks.remove(known);
            }
            _ => return None,
        }
        Some(&mut self.conversation)
    }
}

/// A kept task, taken up: how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TakenUp {
    pub task: KeptTask,
    /// The first text of its result, or the error that ended it.
    pub text: String,
    pub failed: bool,
}

impl Agent<'_> {
    /// Takes up the tasks kept with `conversation`: follows each to its end
    /// on its server, all at once, and adds their results to the
    /// conversation as the module comment says; the ids are forgotten.
    /// `events` is told of each result as a call's.
    pub async fn take_up(
        &self,
        conversation: &mut Conversation,
        events: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Vec<TakenUp> {
        let kept = std::mem::take(&mut conversation.tasks);
        if kept.is_empty() {
            return Vec::new();
        }
        let runs = kept.iter().map(|kept| async move {
            let started = Instant::now();
            let outcome = self
                .hub
                .follow_task(&kept.server, &kept.tool, &kept.task, None)
                .await;
            let raw = outcome.as_ref().ok().cloned().map(Box::new);
            (outcome_parts(outcome), raw, started.elapsed())
        });
        let outcomes = join_all(runs).await;
        let mut calls = Vec::new();
        let mut results = Vec::new();
        let mut taken_up = Vec::new();
        for (kept, ((parts, failed), raw, duration)) in kept.into_iter().zip(outcomes) {
            let text = first_text(&parts);
            events(AgentEvent::ToolResult {
                server: kept.server.clone(),
                tool: kept.tool.clone(),
                arguments: kept.call.arguments.clone(),
                duration,
                bytes: text_bytes(&parts),
                error: failed.then(|| text.clone()),
                result: raw,
            });
            calls.push(Content::ToolCall(kept.call.clone()));
            results.push(ToolResult {
                call_id: kept.call.id.clone(),
                content: self.long_results.cap(parts),
                is_error: failed,
            });
            taken_up.push(TakenUp {
                task: kept,
                text,
                failed,
            });
        }
        conversation.messages.push(Message {
            role: Role::Assistant,
            content: calls,
        });
        conversation.messages.push(Message::tool_results(results));
        conversation.messages.push(Message {
            role: Role::Assistant,
            content: vec![Content::Text(TAKEN_UP_NOTE.to_owned())],
        });
        taken_up
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use nexo_client::TaskUpdate;
    use rmcp::model::TaskStatus;

    use super::*;

    fn event(task: &str, status: TaskStatus) -> AgentEvent {
        AgentEvent::Task {
            server: "jobs".into(),
            tool: "build".into(),
            call: ToolCall {
                id: format!("call-{task}"),
                name: "jobs__build".into(),
                arguments: serde_json::json!({"target": "all"}),
            },
            update: TaskUpdate {
                task: task.into(),
                status,
                message: None,
            },
        }
    }

    #[test]
    fn tasks_are_kept_as_they_start_and_forgotten_as_they_end()
    -> Result<(), Box<dyn std::error::Error>> {
        let mut conversation = Conversation::new(PathBuf::from("/here"), "model");
        conversation.messages.push(Message::user("build it"));
        let mut keeper = Keeper::new(&conversation);
        let saved = keeper.event(&event("t1", TaskStatus::Working)).cloned();
        let saved = saved.ok_or("a new task is saved")?;
        assert_eq!(saved.messages, conversation.messages);
        assert_eq!(saved.tasks.len(), 1);
        assert_eq!(saved.tasks[0].call.id, "call-t1");
        // The same task again, or another status of it under way: nothing new.
        assert!(keeper.event(&event("t1", TaskStatus::Working)).is_none());
        assert!(
            keeper
                .event(&event("t1", TaskStatus::InputRequired))
                .is_none()
        );
        assert!(keeper.event(&event("t2", TaskStatus::Working)).is_some());
        let saved = keeper.event(&event("t1", TaskStatus::Completed)).cloned();
        let tasks: Vec<String> = saved
            .ok_or("an ended task is saved")?
            .tasks
            .iter()
            .map(|kept| kept.task.clone())
            .collect();
        assert_eq!(tasks, ["t2"]);
        // Saved and read back whole.
        let text = serde_json::to_string(&keeper.conversation)?;
        let read: Conversation = serde_json::from_str(&text)?;
        assert_eq!(read, keeper.conversation);
        assert!(keeper.event(&AgentEvent::Text("x".into())).is_none());
        Ok(())
    }
}
