//! The tool-call log that `nexo serve --log FILE` writes: one
//! [`ToolCallRecord`] per finished or refused tool call, one JSON object
//! per line, appended by a [`ToolCallLog`]. Whoever observes a call fills in the
//! record; this module knows nothing of transports.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

/// One served tool call, as one line of the `--log` file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallRecord {
    /// When the call finished, RFC 3339 in UTC.
    pub time: String,
    /// The bundled server's name (`morse`, `utils`, ...).
    pub server: String,
    pub tool: String,
    /// Size of the `arguments` JSON as received.
    pub arg_bytes: usize,
    /// Milliseconds from the request's arrival to its response leaving.
    pub dur_ms: f64,
    /// Size of the JSON-RPC response message.
    pub out_bytes: usize,
    /// True for a tool error (`isError`) and for a JSON-RPC error response.
    pub is_error: bool,
    /// Who called, when the server authenticates its callers: the token's
    /// `sub`, or the API key's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Why the call was refused before it reached the tool (`auth`,
    /// `scope`, `rate`), when it was; such a call is also an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<&'static str>,
}

impl ToolCallRecord {
    /// A record stamped with the current time.
    pub fn now(
        server: &str,
        tool: &str,
        arg_bytes: usize,
        duration: std::time::Duration,
        out_bytes: usize,
        is_error: bool,
    ) -> Self {
        Self {
            time: jiff::Timestamp::now().to_string(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            arg_bytes,
            dur_ms: (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0,
            out_bytes,
            is_error,
            subject: None,
            refused: None,
        }
    }

    /// The record of a call made by `subject`.
    #[must_use]
    pub fn by(mut self, subject: Option<&str>) -> Self {
        self.subject = subject.map(str::to_owned);
        self
    }
}

/// An append-only JSON-lines file of [`ToolCallRecord`]s. Each record is one
/// `write` of a whole line, so lines from concurrent writers (threads, or
/// several processes sharing the file) never interleave, and a crash loses
/// at most the call in progress.
#[derive(Debug)]
pub struct ToolCallLog {
    file: Mutex<File>,
}

impl ToolCallLog {
    /// Opens `path` for appending, creating it if needed.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    /// Appends one record.
    pub fn record(&self, record: &ToolCallRecord) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| io::Error::other("tool-call log lock poisoned"))?;
        file.write_all(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_appended_one_json_object_per_line() -> io::Result<()> {
        let dir = std::env::temp_dir().join(format!("nexo-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("calls.jsonl");
        let _ = std::fs::remove_file(&path);
        let log = ToolCallLog::open(&path)?;
        let duration = std::time::Duration::from_micros(1500);
        log.record(&ToolCallRecord::now(
            "morse", "morse", 17, duration, 120, false,
        ))?;
        log.record(&ToolCallRecord::now(
            "morse", "demorse", 9, duration, 80, true,
        ))?;
        let text = std::fs::read_to_string(&path)?;
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["tool"], "morse");
        assert_eq!(lines[0]["arg_bytes"], 17);
        assert_eq!(lines[0]["dur_ms"], 1.5);
        assert_eq!(lines[1]["is_error"], true);
        // Only a server that authenticates names the caller.
        assert!(lines[0].get("subject").is_none() && lines[0].get("refused").is_none());
        for key in [
            "time",
            "server",
            "tool",
            "arg_bytes",
            "dur_ms",
            "out_bytes",
            "is_error",
        ] {
            assert!(lines[1].get(key).is_some(), "missing {key}");
        }
        std::fs::remove_dir_all(&dir)
    }
}
