//! Tool results too long for the model's context: the whole text is kept
//! in a file, and the model reads its head with a note saying how much
//! there is and how to read on with nexo's own tool, [`READ_TOOL`], by
//! offset. The limit is in bytes of text (about four to a token).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::provider::{ResultPart, ToolDefinition};

/// The most text of one result the model reads at once by default: about
/// 25,000 tokens.
pub const DEFAULT_LIMIT: usize = 100_000;
/// nexo's tool that reads on in a long result. One `_`: every server's
/// tool is offered as `server__tool`, so no server's name can take it.
pub const READ_TOOL: &str = "nexo_read_result";

/// Where long results are kept, and how long is too long.
#[derive(Debug)]
pub struct LongResults {
    dir: PathBuf,
    limit: usize,
    /// Names each kept result within this process: `<pid>-<n>`.
    next: AtomicU64,
}

impl LongResults {
    /// Results longer than `limit` bytes of text are kept in `dir`
    /// (created when the first is).
    pub fn new(dir: PathBuf, limit: usize) -> Self {
        Self {
            dir,
            limit: limit.max(1024),
            next: AtomicU64::new(1),
        }
    }

    /// The definition of [`READ_TOOL`], offered beside the servers' tools.
    pub fn definition() -> ToolDefinition {
        ToolDefinition {
            name: READ_TOOL.to_owned(),
            description: "Reads more of a tool result that was too long to give at once. \
                          Give the `id` the shortened result names and the `offset` it says \
                          to read from."
                .to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The id the shortened result names."},
                    "offset": {"type": "integer", "minimum": 0, "description": "The byte to read from."}
                },
                "required": ["id", "offset"]
            }),
        }
    }

    /// `parts` as the model reads them: as they are within the limit;
    /// else their text is kept in a file and replaced by its head and a
    /// note on how to read on (images are kept as they are).
    pub fn cap(&self, parts: Vec<ResultPart>) -> Vec<ResultPart> {
        let text_len: usize = parts
            .iter()
            .map(|part| match part {
                ResultPart::Text(text) => text.len(),
                ResultPart::Image(_) => 0,
            })
            .sum();
        if text_len <= self.limit {
            return parts;
        }
        let mut text = String::with_capacity(text_len);
        let mut images = Vec::new();
        for part in parts {
            match part {
                ResultPart::Text(part) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&part);
                }
                image @ ResultPart::Image(_) => images.push(image),
            }
        }
        let head_end = floor_boundary(&text, self.limit);
        let id = format!(
            "{}-{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let kept = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(self.dir.join(format!("{id}.txt")), &text));
        let note = match kept {
            Ok(()) => format!(
                "\n[nexo: this result is {} bytes, more than the {} given at once; these are \
                 bytes 0 to {head_end}. Call `{READ_TOOL}` with {{\"id\": \"{id}\", \"offset\": \
                 {head_end}}} to read on.]",
                text.len(),
                self.limit
            ),
            Err(error) => format!(
                "\n[nexo: this result is {} bytes; only the first {head_end} are given, and the \
                 rest could not be kept ({error})]",
                text.len()
            ),
        };
        let mut capped = vec![ResultPart::Text(format!("{}{note}", &text[..head_end]))];
        capped.extend(images);
        capped
    }

    /// What [`READ_TOOL`] answers to `arguments`, and whether it failed.
    pub fn read(&self, arguments: &Value) -> (Vec<ResultPart>, bool) {
        let failed = |message: String| (vec![ResultPart::Text(message)], true);
        let id = arguments
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(offset) = arguments.get("offset").and_then(Value::as_u64) else {
            return failed("give `offset`, a whole number of bytes from 0".to_owned());
        };
        // Ids are ours: digits and one `-`; anything else names no file.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            return failed(format!("`{id}` is not the id of a kept result"));
        }
        let text = match std::fs::read_to_string(self.dir.join(format!("{id}.txt"))) {
            Ok(text) => text,
            Err(_) => return failed(format!("no kept result has the id `{id}`")),
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        if start >= text.len() {
            return failed(format!(
                "the result `{id}` is {} bytes: there is nothing from {offset}",
                text.len()
            ));
        }
        let start = floor_boundary(&text, start);
        let end = floor_boundary(&text, start.saturating_add(self.limit));
        let note = if end < text.len() {
            format!(
                "\n[nexo: bytes {start} to {end} of {}. Call `{READ_TOOL}` with {{\"id\": \
                 \"{id}\", \"offset\": {end}}} to read on.]",
                text.len()
            )
        } else {
            format!("\n[nexo: bytes {start} to {end}, the end of the result.]")
        };
        (
            vec![ResultPart::Text(format!("{}{note}", &text[start..end]))],
            false,
        )
    }
}

/// The largest character boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(parts: &[ResultPart]) -> &str {
        match parts {
            [ResultPart::Text(text)] => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_long_result_is_kept_and_read_on_by_offset() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let results = LongResults::new(dir.path().join("results"), 1024);
        let short = vec![ResultPart::Text("short".into())];
        assert_eq!(results.cap(short.clone()), short);

        // 3,000 bytes with a two-byte character across the limit.
        let long = format!("{}é{}", "a".repeat(1023), "b".repeat(1975));
        let capped = results.cap(vec![ResultPart::Text(long.clone())]);
        let head = text(&capped);
        assert!(head.starts_with(&"a".repeat(1023)), "{head}");
        assert!(!head.contains('é'), "{head}");
        assert!(head.contains("this result is 3000 bytes"), "{head}");
        let id = format!("{}-1", std::process::id());
        assert!(head.contains("\"offset\": 1023"), "{head}");

        let mut read = String::from(&long[..1023]);
        let mut offset = 1023;
        loop {
            let (parts, failed) = results.read(&json!({"id": id, "offset": offset}));
            assert!(!failed);
            let piece = text(&parts);
            let (body, note) = piece.rsplit_once("\n[nexo: ").ok_or("no note")?;
            read.push_str(body);
            offset += body.len();
            if note.contains("the end of the result") {
                break;
            }
        }
        assert_eq!(read, long);
        Ok(())
    }

    #[test]
    fn bad_reads_are_refused() {
        let dir = std::env::temp_dir().join("nexo-long-results-none");
        let results = LongResults::new(dir, 1024);
        for arguments in [
            json!({"id": "../../etc/passwd", "offset": 0}),
            json!({"id": "1-1/x", "offset": 0}),
            json!({"id": "", "offset": 0}),
            json!({"id": "1-1"}),
            json!({"id": "1-1", "offset": -3}),
            json!({"id": "999999-999", "offset": 0}),
        ] {
            let (_, failed) = results.read(&arguments);
            assert!(failed, "{arguments}");
        }
    }
}
