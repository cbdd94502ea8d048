//! The chat log (seed 000's `chat_log.jsonl`): one JSON line per user
//! message, model message, tool call and approval decision, appended as
//! they happen, so a conversation can be read back or analysed later.
//!
//! Each line has `time` (RFC 3339, UTC) and `type` (`user`, `model`,
//! `tool_call`, `approval`, `skill`), then the fields of its type:
//! - `user`: `text`;
//! - `model`: `text`, `input_tokens`, `output_tokens`;
//! - `tool_call`: `server`, `tool`, `arguments`, `duration_ms`,
//!   `result_bytes`, `error` (the failure's text, or null);
//! - `approval`: `server`, `tool`, `allowed`, `reason`;
//! - `skill` (a skill's file loaded, or refused): `server` (null for an
//!   unknown skill), `skill`, `file`, `bytes`, `error` (why it was
//!   refused, or null).
//!
//! A line that cannot be written is reported once and the chat goes on:
//! the log is a record, never a reason for a turn to fail.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::agent::AgentEvent;

/// An open chat log.
pub struct ChatLog {
    path: PathBuf,
    file: Mutex<File>,
    warned: std::sync::atomic::AtomicBool,
}

impl ChatLog {
    /// Opens `path` for appending, creating it and its directory.
    pub fn open(path: &Path) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
            warned: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The person's message.
    pub fn user(&self, text: &str) {
        self.append("user", json!({ "text": text }));
    }

    /// What happened in a turn worth a line: the model's messages, tool
    /// calls and approvals (the answer's pieces are logged whole, with its
    /// message).
    pub fn event(&self, event: &AgentEvent) {
        match event {
            AgentEvent::Answer { text, usage } => self.append(
                "model",
                json!({
                    "text": text,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                }),
            ),
            AgentEvent::ToolResult {
                server,
                tool,
                arguments,
                duration,
                bytes,
                error,
                ..
            } => self.append(
                "tool_call",
                json!({
                    "server": server,
                    "tool": tool,
                    "arguments": arguments,
                    "duration_ms": duration.as_secs_f64() * 1000.0,
                    "result_bytes": bytes,
                    "error": error,
                }),
            ),
            AgentEvent::Approval {
                server,
                tool,
                refused,
                reason,
            } => self.append(
                "approval",
                json!({
                    "server": server,
                    "tool": tool,
                    "allowed": refused.is_none(),
                    "refused": refused,
                    "reason": reason,
                }),
            ),
            AgentEvent::Fitted { fitted, window } => self.append(
                "context",
                json!({
                    "window": window,
                    "shortened_results": fitted.shortened,
                    "dropped_messages": fitted.dropped,
                    "tokens_before": fitted.tokens_before,
                    "tokens_after": fitted.tokens_after,
                }),
            ),
            AgentEvent::Skill {
                server,
                skill,
                file,
                bytes,
                error,
            } => self.append(
                "skill",
                json!({
                    "server": server,
                    "skill": skill,
                    "file": file,
                    "bytes": bytes,
                    "error": error,
                }),
            ),
            AgentEvent::Text(_) | AgentEvent::ToolCall { .. } | AgentEvent::Task { .. } => {}
        }
    }

    fn append(&self, kind: &str, fields: Value) {
        let mut line = serde_json::Map::new();
        line.insert(
            "time".into(),
            Value::String(jiff::Timestamp::now().to_string()),
        );
        line.insert("type".into(), Value::String(kind.to_owned()));
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        let written = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .write_all(text.as_bytes());
        if let Err(error) = written
            && !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(%error, path = %self.path.display(), "cannot write the chat log");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::provider::Usage;

    #[test]
    fn every_kind_of_line() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("logs/chat_log.jsonl");
        let log = ChatLog::open(&path)?;
        log.user("what is sos?");
        log.event(&AgentEvent::Approval {
            server: "morse".into(),
            tool: "morse".into(),
            refused: None,
            reason: "read-only".into(),
        });
        log.event(&AgentEvent::ToolResult {
            server: "morse".into(),
            tool: "morse".into(),
            arguments: json!({"texto": "sos"}),
            duration: Duration::from_millis(3),
            bytes: 11,
            error: None,
            result: None,
        });
        log.event(&AgentEvent::Text("ignored".into()));
        log.event(&AgentEvent::Answer {
            text: "... --- ...".into(),
            usage: Usage {
                input_tokens: 12,
                output_tokens: 7,
                ..Usage::default()
            },
        });
        let lines: Vec<Value> = std::fs::read_to_string(&path)?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(kinds, ["user", "approval", "tool_call", "model"]);
        assert_eq!(lines[2]["arguments"]["texto"], "sos");
        assert_eq!(lines[2]["result_bytes"], 11);
        assert_eq!(lines[3]["output_tokens"], 7);
        assert!(
            lines
                .iter()
                .all(|l| l["time"].as_str().is_some_and(|t| t.ends_with('Z')))
        );
        Ok(())
    }
}
