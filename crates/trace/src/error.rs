//! Errors of reading a trace file back, each with its code, exit class
//! and hint ([`Hinted`]).

use std::path::PathBuf;

use nexo_hint::{Exit, Hint, Hinted};

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot open the trace `{}`", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the trace `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a trace: line {line} is no trace record ({reason})", path.display())]
    NotATrace {
        path: PathBuf,
        line: usize,
        reason: String,
        /// What the file seems to be instead.
        looks_like: Option<Lookalike>,
    },
}

/// Files of JSON lines that are easily taken for a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookalike {
    /// The tool-call log of `nexo serve --log`.
    CallLog,
    /// JSON-RPC messages themselves (a capture, or a stdio transcript).
    Messages,
}

/// How a trace is made, for hints.
const HOW_TO_TRACE: &str = "a trace is written by `--trace FILE`: `nexo serve morse --trace trace.jsonl`, or `--trace FILE` on a client command such as `nexo call`";

impl Hinted for ReadError {
    fn code(&self) -> &'static str {
        match self {
            Self::Open { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                "not_found"
            }
            Self::Open { .. } | Self::Read { .. } => "io_error",
            Self::NotATrace { .. } => "not_a_trace",
        }
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    /// What the person reading the trace can do about it.
    fn hint(&self) -> Option<Hint> {
        let text = match self {
            Self::Open { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                format!("check the path; {HOW_TO_TRACE}")
            }
            Self::Open { .. } | Self::Read { .. } => "check that the file is readable".to_owned(),
            Self::NotATrace {
                looks_like: Some(Lookalike::CallLog),
                ..
            } => format!(
                "this looks like a tool-call log (`nexo serve --log FILE`), which has one line per tool call; {HOW_TO_TRACE}"
            ),
            Self::NotATrace {
                looks_like: Some(Lookalike::Messages),
                ..
            } => format!(
                "this looks like bare JSON-RPC messages; a trace has one record per message, with its time, server and direction; {HOW_TO_TRACE}"
            ),
            Self::NotATrace { .. } => format!(
                "a trace file holds one JSON record per line, one per MCP message; {HOW_TO_TRACE}"
            ),
        };
        Some(Hint::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15, point 7: a file that is no trace says what it looks like.
    #[test]
    fn issue_15_not_a_trace_says_what_it_is() {
        let error = ReadError::NotATrace {
            path: "calls.jsonl".into(),
            line: 1,
            reason: "missing field `v`".into(),
            looks_like: Some(Lookalike::CallLog),
        };
        assert_eq!((error.code(), error.exit()), ("not_a_trace", Exit::Usage));
        let hint = error.hint().map(|hint| hint.terminal()).unwrap_or_default();
        assert!(hint.contains("tool-call log"), "{hint}");
    }
}
