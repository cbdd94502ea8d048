//! Reading a trace file back, one [`TraceRecord`] at a time, as tolerant as
//! a file written by a killed process or a newer nexo needs: a last line cut
//! short is skipped and reported, lines of a newer format version are
//! skipped and counted, and a line that is no record is skipped and
//! reported with its number. Only a file whose first line is no record is
//! refused ([`ReadError::NotATrace`]): that is no trace at all.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Lookalike, ReadError};
use crate::record::{FORMAT_VERSION, TraceRecord};

/// What was skipped while reading, for the reader to be told.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReadWarnings {
    /// The number of a last line that was cut short (and skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_line: Option<usize>,
    /// How many lines of a newer format version were skipped.
    pub newer_lines: usize,
    /// The newest format version seen among them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newest_version: Option<u32>,
    /// Lines that are no record, by number.
    pub bad_lines: Vec<BadLine>,
}

/// A line that is no trace record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadLine {
    pub line: usize,
    pub reason: String,
}

/// The most bad lines listed one by one; the rest are only counted.
const LISTED_BAD_LINES: usize = 20;
/// The longest line read; the rest of a longer one is skipped unread into
/// memory (a file that is no trace, such as a binary, may have no line
/// breaks at all).
pub const MAX_LINE: usize = 256 * 1024 * 1024;

impl ReadWarnings {
    pub fn is_empty(&self) -> bool {
        self.truncated_line.is_none() && self.newer_lines == 0 && self.bad_lines.is_empty()
    }

    /// The warnings as sentences, one per line, for people.
    pub fn sentences(&self) -> Vec<String> {
        let mut sentences = Vec::new();
        if let Some(line) = self.truncated_line {
            sentences.push(format!(
                "the last line ({line}) is cut short, as when the writer was killed; it was skipped"
            ));
        }
        if self.newer_lines > 0 {
            sentences.push(format!(
                "{} line(s) of a newer trace format (version {}) were skipped; this nexo reads version {FORMAT_VERSION}",
                self.newer_lines,
                self.newest_version.unwrap_or_default()
            ));
        }
        for bad in self.bad_lines.iter().take(LISTED_BAD_LINES) {
            sentences.push(format!(
                "line {} is no trace record ({}); it was skipped",
                bad.line, bad.reason
            ));
        }
        if self.bad_lines.len() > LISTED_BAD_LINES {
            sentences.push(format!(
                "{} more lines are no trace record",
                self.bad_lines.len() - LISTED_BAD_LINES
            ));
        }
        sentences
    }
}

/// Reads the records of a trace, in file order.
#[derive(Debug)]
pub struct TraceReader<R> {
    input: R,
    path: PathBuf,
    line: usize,
    buffer: Vec<u8>,
    max_line: usize,
    seen_any: bool,
    warnings: ReadWarnings,
}

/// Opens the trace at `path`.
pub fn open(path: &Path) -> Result<TraceReader<BufReader<File>>, ReadError> {
    let file = File::open(path).map_err(|source| ReadError::Open {
        path: path.to_owned(),
        source,
    })?;
    Ok(TraceReader::new(BufReader::new(file), path))
}

impl<R: BufRead> TraceReader<R> {
    /// Reads `input`; `path` names it in errors.
    pub fn new(input: R, path: &Path) -> Self {
        Self {
            input,
            path: path.to_owned(),
            line: 0,
            buffer: Vec::new(),
            max_line: MAX_LINE,
            seen_any: false,
            warnings: ReadWarnings::default(),
        }
    }

    /// The next record, skipping (and noting) what is no record; `None` at
    /// the end.
    pub fn next_record(&mut self) -> Result<Option<TraceRecord>, ReadError> {
        loop {
            let Some((complete, too_long)) = self.read_line()? else {
                return Ok(None);
            };
            self.line += 1;
            if too_long {
                let reason = format!("longer than {} MiB", self.max_line / (1024 * 1024));
                self.bad(complete, reason, None)?;
                continue;
            }
            let text = match std::str::from_utf8(&self.buffer) {
                Ok(text) => text.trim(),
                Err(_) => {
                    self.bad(complete, "not UTF-8 text".to_owned(), None)?;
                    continue;
                }
            };
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str::<TraceRecord>(text) {
                Ok(record) if record.v <= FORMAT_VERSION => {
                    self.seen_any = true;
                    return Ok(Some(record));
                }
                Ok(record) => self.newer(record.v),
                Err(error) => {
                    let peek = serde_json::from_str::<Peek>(text).ok();
                    match peek.as_ref().and_then(|peek| peek.v) {
                        Some(version) if version > u64::from(FORMAT_VERSION) => {
                            self.newer(u32::try_from(version).unwrap_or(u32::MAX));
                        }
                        _ => {
                            let looks_like = peek.as_ref().and_then(Peek::lookalike);
                            self.bad(complete, reason(&error), looks_like)?;
                        }
                    }
                }
            }
        }
    }

    /// Reads the next line into `self.buffer`, at most `max_line` bytes of
    /// it; `None` at the end, else whether the line ended with a line break
    /// and whether it was too long (and so cut).
    fn read_line(&mut self) -> Result<Option<(bool, bool)>, ReadError> {
        self.buffer.clear();
        let mut read_any = false;
        let mut too_long = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadError::Read {
                        path: self.path.clone(),
                        source,
                    });
                }
            };
            if available.is_empty() {
                return Ok(read_any.then_some((false, too_long)));
            }
            read_any = true;
            let (chunk, found_end) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], true),
                None => (available, false),
            };
            let room = self.max_line.saturating_sub(self.buffer.len());
            if chunk.len() > room {
                too_long = true;
            }
            self.buffer
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            let consumed = chunk.len() + usize::from(found_end);
            self.input.consume(consumed);
            if found_end {
                return Ok(Some((true, too_long)));
            }
        }
    }

    /// What was skipped so far.
    pub fn warnings(&self) -> &ReadWarnings {
        &self.warnings
    }

    pub fn into_warnings(self) -> ReadWarnings {
        self.warnings
    }

    fn newer(&mut self, version: u32) {
        self.seen_any = true;
        self.warnings.newer_lines += 1;
        self.warnings.newest_version = self.warnings.newest_version.max(Some(version));
    }

    /// Notes a line that is no record, or refuses the file when it is the
    /// first line.
    fn bad(
        &mut self,
        complete: bool,
        reason: String,
        looks_like: Option<Lookalike>,
    ) -> Result<(), ReadError> {
        if !self.seen_any {
            return Err(ReadError::NotATrace {
                path: self.path.clone(),
                line: self.line,
                reason,
                looks_like,
            });
        }
        if !complete && self.at_end() {
            self.warnings.truncated_line = Some(self.line);
        } else {
            self.warnings.bad_lines.push(BadLine {
                line: self.line,
                reason,
            });
        }
        Ok(())
    }

    fn at_end(&mut self) -> bool {
        self.input.fill_buf().map_or(true, |rest| rest.is_empty())
    }
}

/// What a line that is no record holds, to say what the file may be.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    v: Option<u64>,
    #[serde(default)]
    jsonrpc: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    tool: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    dur_ms: Option<serde::de::IgnoredAny>,
}

impl Peek {
    fn lookalike(&self) -> Option<Lookalike> {
        if self.tool.is_some() && self.dur_ms.is_some() {
            Some(Lookalike::CallLog)
        } else if self.jsonrpc.is_some() {
            Some(Lookalike::Messages)
        } else {
            None
        }
    }
}

/// serde_json's complaint without its position inside the line.
fn reason(error: &serde_json::Error) -> String {
    if error.is_syntax() || error.is_eof() {
        return "not JSON".to_owned();
    }
    let mut text = error.to_string();
    if let Some(at) = text.rfind(" at line ") {
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"v":1,"time_us":1,"server":"s","side":"server","direction":"in","transport":"stdio","kind":"notification","method":"x","bytes":2}"#;

    fn read(text: &str) -> Result<(usize, ReadWarnings), ReadError> {
        let mut reader = TraceReader::new(text.as_bytes(), Path::new("t.jsonl"));
        let mut count = 0;
        while reader.next_record()?.is_some() {
            count += 1;
        }
        Ok((count, reader.into_warnings()))
    }

    #[test]
    fn a_cut_last_line_is_skipped_and_reported() -> Result<(), ReadError> {
        let text = format!("{RECORD}\n{RECORD}\n{}", &RECORD[..40]);
        let (count, warnings) = read(&text)?;
        assert_eq!(count, 2);
        assert_eq!(warnings.truncated_line, Some(3));
        assert!(warnings.bad_lines.is_empty());
        assert_eq!(warnings.sentences().len(), 1);
        // A whole last line without its newline is a record like any other.
        let (count, warnings) = read(&format!("{RECORD}\n{RECORD}"))?;
        assert_eq!(count, 2);
        assert!(warnings.is_empty());
        Ok(())
    }

    #[test]
    fn newer_versions_and_bad_lines_are_skipped_with_their_numbers() -> Result<(), ReadError> {
        let newer = RECORD
            .replace(r#""v":1"#, r#""v":2"#)
            .replace("kind", "sort");
        let text = format!("{RECORD}\n{newer}\n\nnot json\n{{\"v\":1}}\n{RECORD}\n");
        let (count, warnings) = read(&text)?;
        assert_eq!(count, 2);
        assert_eq!(
            (warnings.newer_lines, warnings.newest_version),
            (1, Some(2))
        );
        let lines: Vec<usize> = warnings.bad_lines.iter().map(|bad| bad.line).collect();
        assert_eq!(lines, [4, 5]);
        assert_eq!(warnings.bad_lines[0].reason, "not JSON");
        assert!(
            warnings.bad_lines[1].reason.starts_with("missing field"),
            "{:?}",
            warnings.bad_lines[1]
        );
        assert!(!warnings.bad_lines[1].reason.contains("column"));
        Ok(())
    }

    #[test]
    fn a_file_that_starts_with_no_record_is_no_trace() {
        let cases = [
            ("hello\n", None),
            (
                r#"{"time":"2025-01-01T00:00:00Z","server":"morse","tool":"morse","arg_bytes":3,"dur_ms":0.1,"out_bytes":9,"is_error":false}"#,
                Some(Lookalike::CallLog),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                Some(Lookalike::Messages),
            ),
        ];
        for (text, expected) in cases {
            match read(text) {
                Err(ReadError::NotATrace {
                    line, looks_like, ..
                }) => {
                    assert_eq!(line, 1, "{text}");
                    assert_eq!(looks_like, expected, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        // Nothing at all is an empty trace, not an error.
        assert!(matches!(read(""), Ok((0, _))));
    }

    /// A line over the limit is skipped without being held whole.
    #[test]
    fn an_over_long_line_is_skipped() -> Result<(), ReadError> {
        let text = format!("{RECORD}\n{}\n{RECORD}\n", "x".repeat(5000));
        let mut reader = TraceReader::new(text.as_bytes(), Path::new("t.jsonl"));
        reader.max_line = 1000;
        let mut count = 0;
        while reader.next_record()?.is_some() {
            count += 1;
        }
        assert_eq!(count, 2);
        let warnings = reader.into_warnings();
        assert_eq!(warnings.bad_lines.len(), 1);
        assert_eq!(warnings.bad_lines[0].line, 2);
        assert!(warnings.bad_lines[0].reason.starts_with("longer than"));
        Ok(())
    }
}
