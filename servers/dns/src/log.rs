//! The call log of seed 000: one JSON line per tool call, `{"ts", "tool",
//! "dominio", "dur_ms", "bytes", "ok"}`, appended to a file. Writing is best
//! effort: a log that cannot be written is reported once through `tracing`
//! and never fails the call.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

/// Where calls are logged; `None` logs nothing.
#[derive(Debug, Clone, Default)]
pub struct CallLog {
    path: Option<PathBuf>,
    warned: Arc<AtomicBool>,
}

impl CallLog {
    pub fn new(path: Option<PathBuf>) -> Self {
        Self {
            path,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Appends one line for a call.
    pub fn record(&self, tool: &str, dominio: &str, elapsed: Duration, bytes: usize, ok: bool) {
        let Some(path) = &self.path else { return };
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let line = json!({
            "ts_ms": ts,
            "tool": tool,
            "dominio": dominio,
            "dur_ms": elapsed.as_millis(),
            "bytes": bytes,
            "ok": ok,
        });
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| writeln!(file, "{line}"));
        if let Err(error) = written
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            tracing::warn!("cannot write the DNS call log {}: {error}", path.display());
        }
    }
}
