//! The call log of seed 000: one JSON line per tool call, `{"ts_ms", "tool",
//! "dominio", "dur_ms", "bytes", "ok"}`, appended to a file opened at the
//! first call. Writing is best effort: a log that cannot be written is
//! reported once through `tracing` and never fails the call.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

/// Where calls are logged; `None` logs nothing.
#[derive(Debug, Clone, Default)]
pub struct CallLog {
    path: Option<PathBuf>,
    /// The file, opened for appending at the first call; `None` inside when
    /// it could not be opened.
    file: Arc<OnceLock<Option<File>>>,
    warned: Arc<AtomicBool>,
}

impl CallLog {
    pub fn new(path: Option<PathBuf>) -> Self {
        Self {
            path,
            file: Arc::default(),
            warned: Arc::default(),
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
        let file = self.file.get_or_init(|| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|error| self.warn(path, &error))
                .ok()
        });
        let Some(mut file) = file.as_ref() else {
            return;
        };
        // One write per line, so that lines of concurrent calls (and of other
        // processes appending to the same file) never interleave.
        let mut text = line.to_string();
        text.push('\n');
        if let Err(error) = file.write_all(text.as_bytes()) {
            self.warn(path, &error);
        }
    }

    fn warn(&self, path: &Path, error: &std::io::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("cannot write the DNS call log {}: {error}", path.display());
        }
    }
}
