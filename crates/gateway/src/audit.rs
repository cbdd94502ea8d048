//! The audit log: one JSON line per decision, each carrying the SHA-256 of
//! the line before it (`prev`) and its place in the sequence (`seq`), so
//! that [`verify`] finds any line edited, removed, inserted or moved, and
//! says which. One writer process per file (an exclusive `flock`); within
//! it, [`AuditLog`] is shared by every request and writes whole lines under
//! a lock.
//!
//! A chain proves the order and contents of what precedes its last line,
//! not the last line itself nor lines cut off the end: record the `head`
//! that `verify` reports (or the writer's [`Appended::hash`]) somewhere the
//! gateway cannot write, and pass it back to [`verify`] to prove those too.
//!
//! Arguments are logged as the policy redacted them and with every secret
//! the detectors know replaced, whatever the policy's detector actions;
//! the digest is of the arguments as received, so a copy held elsewhere
//! can be matched without the log holding it.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::detect::{Action, Actions, Detectors, Finding, Place};
use crate::error::AuditError;
use crate::policy::{Identity, Verdict};

/// The format of a line, in its `v` field.
pub const VERSION: u32 = 1;

/// The `prev` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The upstream answered with a result.
    Ok,
    /// The upstream answered with an error (a JSON-RPC error or `isError`).
    Error,
    /// The policy denied the request.
    Denied,
    /// A detector blocked the request or its result.
    Blocked,
    /// The upstream could not be reached or failed.
    Failed,
    /// A rate limit refused the request (crate::limits).
    Limited,
}

/// What the gateway knows of one decided request.
#[derive(Debug, Clone)]
pub struct Entry {
    pub identity: Identity,
    pub server: String,
    pub method: String,
    pub tool: Option<String>,
    /// The arguments as received.
    pub arguments: Value,
    /// The arguments as the policy redacted them, when it did.
    pub redacted: Option<Value>,
    pub verdict: Verdict,
    pub rule: Option<String>,
    pub reason: String,
    pub findings: Vec<Finding>,
    pub latency: Duration,
    pub outcome: Outcome,
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub v: u32,
    pub seq: u64,
    pub time: String,
    pub identity: Identity,
    pub server: String,
    pub method: String,
    pub tool: Option<String>,
    pub arguments_sha256: String,
    pub arguments: Value,
    pub decision: Verdict,
    pub rule: Option<String>,
    pub reason: String,
    #[serde(default)]
    pub findings: Vec<Value>,
    pub latency_us: u64,
    pub outcome: Outcome,
    pub prev: String,
}

/// The line just written: its number in the sequence and its hash (the
/// head of the chain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub seq: u64,
    pub hash: String,
}

/// An audit log open for appending.
pub struct AuditLog {
    path: PathBuf,
    state: Mutex<Tail>,
    secrets: Detectors,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AuditLog")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

struct Tail {
    file: File,
    seq: u64,
    prev: String,
}

impl AuditLog {
    /// Opens (or creates) the log at `path` and continues its chain. Fails
    /// when another process holds it, or when its last line is cut or is
    /// not a record: appending would bury the damage.
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(|source| AuditError::Open {
                path: path.to_owned(),
                source,
            })?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| AuditError::Locked {
                path: path.to_owned(),
            },
        )?;
        let (seq, prev) = match last_line(&mut file).map_err(|source| AuditError::Read {
            path: path.to_owned(),
            source,
        })? {
            None => (0, GENESIS.to_owned()),
            Some((line, true)) => {
                let record: Record =
                    serde_json::from_slice(&line).map_err(|error| AuditError::NotAnAudit {
                        path: path.to_owned(),
                        reason: error.to_string(),
                    })?;
                (record.seq, hex(&Sha256::digest(&line)))
            }
            Some((line, false)) => {
                return Err(AuditError::CutLastLine {
                    path: path.to_owned(),
                    bytes: line.len(),
                });
            }
        };
        let secrets = Detectors::new(
            Actions {
                arguments: Some(Action::Redact),
                results: None,
                descriptions: None,
            },
            Actions::default(),
        )
        .map_err(|error| AuditError::NotAnAudit {
            path: path.to_owned(),
            reason: format!("a built-in detector does not compile: {error}"),
        })?;
        Ok(Self {
            path: path.to_owned(),
            state: Mutex::new(Tail { file, seq, prev }),
            secrets,
        })
    }

    /// Appends one line for `entry`.
    pub fn append(&self, entry: Entry) -> Result<Appended, AuditError> {
        let digest = hex(&Sha256::digest(
            serde_json::to_vec(&entry.arguments).unwrap_or_default(),
        ));
        let mut logged = entry.redacted.unwrap_or(entry.arguments);
        self.secrets.inspect(Place::Arguments, &mut logged);
        let findings = entry
            .findings
            .iter()
            .filter_map(|finding| serde_json::to_value(finding).ok())
            .collect();
        let time = jiff::Timestamp::now().to_string();
        let latency_us = u64::try_from(entry.latency.as_micros()).unwrap_or(u64::MAX);
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let record = Record {
            v: VERSION,
            seq: state.seq + 1,
            time,
            identity: entry.identity,
            server: entry.server,
            method: entry.method,
            tool: entry.tool,
            arguments_sha256: digest,
            arguments: logged,
            decision: entry.verdict,
            rule: entry.rule,
            reason: entry.reason,
            findings,
            latency_us,
            outcome: entry.outcome,
            prev: state.prev.clone(),
        };
        let mut line = serde_json::to_vec(&record).map_err(|error| AuditError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(error),
        })?;
        let hash = hex(&Sha256::digest(&line));
        line.push(b'\n');
        state
            .file
            .write_all(&line)
            .map_err(|source| AuditError::Write {
                path: self.path.clone(),
                source,
            })?;
        state.seq = record.seq;
        state.prev.clone_from(&hash);
        Ok(Appended {
            seq: record.seq,
            hash,
        })
    }
}

/// The last line of `file` and whether it ends with a new line; `None`
/// for an empty file. Reads backwards in growing chunks, so a long log
/// costs no more than its last line.
fn last_line(file: &mut File) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let length = file.seek(SeekFrom::End(0))?;
    if length == 0 {
        return Ok(None);
    }
    let mut chunk: u64 = 64 * 1024;
    loop {
        let start = length.saturating_sub(chunk);
        file.seek(SeekFrom::Start(start))?;
        let mut tail = Vec::new();
        Read::by_ref(file)
            .take(length - start)
            .read_to_end(&mut tail)?;
        let complete = tail.last() == Some(&b'\n');
        let body = if complete {
            &tail[..tail.len() - 1]
        } else {
            &tail[..]
        };
        if let Some(newline) = body.iter().rposition(|byte| *byte == b'\n') {
            return Ok(Some((body[newline + 1..].to_vec(), complete)));
        }
        if start == 0 {
            return Ok(Some((body.to_vec(), complete)));
        }
        chunk = chunk.saturating_mul(4);
    }
}

/// Lower-case hexadecimal.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// What is wrong with one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The line changed after the next one was written.
    Edited,
    /// Records are missing before this line.
    Removed,
    /// The line repeats a record number: a line was inserted.
    Inserted,
    /// The line holds a record out of its order.
    Reordered,
    /// The line is no audit record.
    NotARecord,
    /// The last line has no end: the writer stopped in the middle of it
    /// (or the file was cut).
    CutLastLine,
    /// The last line is not the head recorded earlier.
    HeadMismatch,
}

/// One problem, at a line (counted from 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub line: usize,
    pub kind: ProblemKind,
    pub detail: String,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    pub path: PathBuf,
    /// Complete lines read.
    pub lines: usize,
    /// The hash of the last complete line: record it elsewhere to prove
    /// the end of the log later.
    pub head: Option<String>,
    pub problems: Vec<Problem>,
}

impl AuditReport {
    pub fn intact(&self) -> bool {
        self.problems.is_empty()
    }

    /// The report for people.
    pub fn to_text(&self) -> String {
        let path = self.path.display();
        let mut text = if self.intact() {
            format!("{path}: {} lines, the chain is intact\n", self.lines)
        } else {
            let count = self.problems.len();
            let noun = if count == 1 { "problem" } else { "problems" };
            format!("{path}: {} lines, {count} {noun}\n", self.lines)
        };
        for problem in &self.problems {
            text.push_str(&format!("  line {}: {}\n", problem.line, problem.detail));
        }
        if let Some(head) = &self.head {
            text.push_str(&format!("head: {head}\n"));
        }
        text
    }
}

/// Checks the chain of the log at `path`; with `expected_head`, also that
/// its last line is the one whose hash was recorded.
pub fn verify(path: &Path, expected_head: Option<&str>) -> Result<AuditReport, AuditError> {
    let bytes = std::fs::read(path).map_err(|source| AuditError::Open {
        path: path.to_owned(),
        source,
    })?;
    let mut problems: Vec<Problem> = Vec::new();
    let mut pieces: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
    // The piece after the last new line: empty when the file ends well.
    let cut = pieces.pop().filter(|piece| !piece.is_empty());
    let parsed: Vec<Option<Record>> = pieces
        .iter()
        .map(|line| serde_json::from_slice::<Record>(line).ok())
        .collect();
    let hashes: Vec<String> = pieces
        .iter()
        .map(|line| hex(&Sha256::digest(line)))
        .collect();
    // Where each record number first appears (a line number, from 1).
    let mut first_at: HashMap<u64, usize> = HashMap::new();
    for (index, record) in parsed.iter().enumerate() {
        if let Some(record) = record {
            first_at.entry(record.seq).or_insert(index + 1);
        }
    }
    let mut highest: u64 = 0;
    let mut edited: Vec<usize> = Vec::new();
    for (index, record) in parsed.iter().enumerate() {
        let number = index + 1;
        let Some(record) = record else {
            problems.push(Problem {
                line: number,
                kind: ProblemKind::NotARecord,
                detail: "not an audit record (not JSON, or fields are missing)".to_owned(),
            });
            continue;
        };
        let expected = highest + 1;
        let first = first_at.get(&record.seq).copied().unwrap_or(number);
        if first < number {
            problems.push(Problem {
                line: number,
                kind: ProblemKind::Inserted,
                detail: format!(
                    "repeats record {} (first at line {first}): a line was inserted or copied",
                    record.seq
                ),
            });
            continue;
        }
        if record.seq < expected {
            problems.push(Problem {
                line: number,
                kind: ProblemKind::Reordered,
                detail: format!(
                    "holds record {} after record {highest}: lines were moved",
                    record.seq
                ),
            });
        } else if record.seq > expected {
            let later =
                (expected..record.seq).find_map(|seq| first_at.get(&seq).map(|at| (seq, *at)));
            let (kind, detail) = match later {
                Some((seq, at)) => (
                    ProblemKind::Reordered,
                    format!(
                        "holds record {} before record {seq} (at line {at}): lines were moved",
                        record.seq
                    ),
                ),
                None if number == 1 => (
                    ProblemKind::Removed,
                    format!(
                        "the log starts at record {}: the records before it are missing",
                        record.seq
                    ),
                ),
                None => (
                    ProblemKind::Removed,
                    format!(
                        "records {expected} to {} are missing before this line",
                        record.seq - 1
                    ),
                ),
            };
            problems.push(Problem {
                line: number,
                kind,
                detail,
            });
        }
        highest = highest.max(record.seq);
        // The chain: `prev` is the hash of the record before, wherever it
        // now stands.
        if record.seq == 1 {
            if record.prev != GENESIS {
                problems.push(Problem {
                    line: number,
                    kind: ProblemKind::Edited,
                    detail: "the first record does not start the chain (its `prev` was changed)"
                        .to_owned(),
                });
            }
        } else if let Some(&before) = first_at.get(&(record.seq - 1))
            && hashes[before - 1] != record.prev
            && !edited.contains(&before)
        {
            edited.push(before);
            problems.push(Problem {
                line: before,
                kind: ProblemKind::Edited,
                detail: format!(
                    "changed after it was written: record {} (line {number}) holds a different \
                     hash of it",
                    record.seq
                ),
            });
        }
    }
    problems.sort_by_key(|problem| problem.line);
    let lines = pieces.len();
    if let Some(cut) = cut {
        problems.push(Problem {
            line: lines + 1,
            kind: ProblemKind::CutLastLine,
            detail: format!(
                "cut: {} bytes without an end of line (the writer stopped in the middle of a \
                 line, or the file was cut)",
                cut.len()
            ),
        });
    }
    let head = hashes.last().cloned();
    if let Some(expected) = expected_head
        && head.as_deref() != Some(expected.trim())
    {
        problems.push(Problem {
            line: lines,
            kind: ProblemKind::HeadMismatch,
            detail: format!(
                "the last line is not the recorded head `{}`: lines were changed, added or cut \
                 at the end",
                expected.trim()
            ),
        });
    }
    Ok(AuditReport {
        path: path.to_owned(),
        lines,
        head,
        problems,
    })
}
