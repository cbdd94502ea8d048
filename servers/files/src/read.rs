//! Reading an open regular file as text: whole, its first lines or its last
//! lines. Every read stops at the byte limit and checks the deadline
//! between chunks; a NUL byte in the first 8 KiB means binary, which is
//! refused. Text that is not valid UTF-8 is read with U+FFFD in place of
//! each bad sequence.

use std::io::Read;

use cap_std::fs::{File, FileExt};

use crate::error::FsError;
use crate::limits::{BINARY_PROBE_BYTES, Deadline};

const CHUNK: usize = 64 * 1024;

/// Which part of a file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Whole,
    /// The first N lines.
    Head(u64),
    /// The last N lines.
    Tail(u64),
}

/// Reads `part` of `file` (of `size` bytes, as `fstat` said), returning at
/// most `limit` bytes.
pub fn read(
    file: &mut File,
    size: u64,
    part: Part,
    limit: u64,
    deadline: &Deadline,
    shown: &str,
) -> Result<String, FsError> {
    let io = |error: std::io::Error| FsError::from_io(&error, shown);
    let bytes = match part {
        Part::Whole => {
            if size > limit {
                return Err(too_large(shown, size, limit));
            }
            let bytes = read_forward(file, limit, deadline, |_| false).map_err(io)??;
            if bytes.len() as u64 > limit {
                return Err(too_large(shown, bytes.len() as u64, limit));
            }
            refuse_binary(&bytes, shown)?;
            bytes
        }
        Part::Head(lines) => {
            let mut newlines = 0;
            let mut bytes = read_forward(file, limit, deadline, |chunk| {
                newlines += count_newlines(chunk);
                newlines >= lines
            })
            .map_err(io)??;
            refuse_binary(&bytes, shown)?;
            bytes.truncate(head_end(&bytes, lines));
            if bytes.len() as u64 > limit {
                return Err(FsError::LinesTooLong {
                    path: shown.to_owned(),
                    lines,
                    limit,
                });
            }
            bytes
        }
        Part::Tail(lines) => {
            let mut probe = vec![0; BINARY_PROBE_BYTES.min(usize::try_from(size).unwrap_or(0))];
            file.read_exact_at(&mut probe, 0).map_err(io)?;
            refuse_binary(&probe, shown)?;
            read_tail(file, size, lines, limit, deadline, shown)?
        }
    };
    // Valid UTF-8 (the usual case) is kept without a copy.
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned()))
}

fn too_large(shown: &str, size: u64, limit: u64) -> FsError {
    FsError::TooLarge {
        path: shown.to_owned(),
        size,
        limit,
    }
}

/// Reads from the current position until the end, until `enough` says so
/// after a chunk (once the binary probe is in), or until one byte past
/// `limit`.
fn read_forward(
    file: &mut File,
    limit: u64,
    deadline: &Deadline,
    mut enough: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<Result<Vec<u8>, FsError>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0; CHUNK];
    let mut done = false;
    loop {
        if let Err(timeout) = deadline.check() {
            return Ok(Err(timeout));
        }
        let read = file.read(&mut chunk)?;
        if read == 0 {
            return Ok(Ok(bytes));
        }
        bytes.extend_from_slice(&chunk[..read]);
        done = done || enough(&chunk[..read]);
        if (done && bytes.len() >= BINARY_PROBE_BYTES) || bytes.len() as u64 > limit {
            return Ok(Ok(bytes));
        }
    }
}

fn count_newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|byte| **byte == b'\n').count() as u64
}

/// Where the first `lines` lines of `bytes` end (after their newlines).
fn head_end(bytes: &[u8], lines: u64) -> usize {
    if lines == 0 {
        return 0;
    }
    let mut seen = 0;
    for (index, byte) in bytes.iter().enumerate() {
        if *byte == b'\n' {
            seen += 1;
            if seen == lines {
                return index + 1;
            }
        }
    }
    bytes.len()
}

/// The last `lines` lines of the file, read backwards in chunks. A newline
/// at the very end closes the last line; it does not start another.
fn read_tail(
    file: &File,
    size: u64,
    lines: u64,
    limit: u64,
    deadline: &Deadline,
    shown: &str,
) -> Result<Vec<u8>, FsError> {
    if lines == 0 || size == 0 {
        return Ok(Vec::new());
    }
    let io = |error: std::io::Error| FsError::from_io(&error, shown);
    let too_long = || FsError::LinesTooLong {
        path: shown.to_owned(),
        lines,
        limit,
    };
    let mut buffer: Vec<u8> = Vec::new();
    let mut start = size;
    let mut newlines = 0;
    loop {
        deadline.check()?;
        if size - start > limit {
            return Err(too_long());
        }
        if start == 0 {
            return Ok(buffer);
        }
        let length = CHUNK.min(usize::try_from(start).unwrap_or(CHUNK));
        let from = start - length as u64;
        let mut chunk = vec![0; length];
        file.read_exact_at(&mut chunk, from).map_err(io)?;
        for index in (0..length).rev() {
            let at = from + index as u64;
            if chunk[index] == b'\n' && at + 1 != size {
                newlines += 1;
                if newlines == lines {
                    chunk.drain(..=index);
                    chunk.extend_from_slice(&buffer);
                    return if chunk.len() as u64 > limit {
                        Err(too_long())
                    } else {
                        Ok(chunk)
                    };
                }
            }
        }
        chunk.extend_from_slice(&buffer);
        buffer = chunk;
        start = from;
    }
}

fn refuse_binary(bytes: &[u8], shown: &str) -> Result<(), FsError> {
    let probe = &bytes[..bytes.len().min(BINARY_PROBE_BYTES)];
    if probe.contains(&0) {
        Err(FsError::Binary(shown.to_owned()))
    } else {
        Ok(())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use std::time::Duration;

    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File, u64) {
        let base = tempfile::tempdir().unwrap();
        std::fs::write(base.path().join("f.txt"), bytes).unwrap();
        let dir =
            cap_std::fs::Dir::open_ambient_dir(base.path(), cap_std::ambient_authority()).unwrap();
        let file = dir.open("f.txt").unwrap();
        (base, file, bytes.len() as u64)
    }

    fn read_part(bytes: &[u8], part: Part, limit: u64) -> Result<String, FsError> {
        let (_base, mut file, size) = file_with(bytes);
        let deadline = Deadline::after(Duration::from_secs(60));
        read(&mut file, size, part, limit, &deadline, "f.txt")
    }

    #[test]
    fn head_and_tail_take_whole_lines() {
        let text = b"one\ntwo\nthree\n";
        let cases = [
            (Part::Whole, "one\ntwo\nthree\n"),
            (Part::Head(0), ""),
            (Part::Head(2), "one\ntwo\n"),
            (Part::Head(9), "one\ntwo\nthree\n"),
            (Part::Tail(0), ""),
            (Part::Tail(1), "three\n"),
            (Part::Tail(2), "two\nthree\n"),
            (Part::Tail(9), "one\ntwo\nthree\n"),
        ];
        for (part, expected) in cases {
            assert_eq!(read_part(text, part, 1000).unwrap(), expected, "{part:?}");
        }
        assert_eq!(read_part(b"a\nb", Part::Tail(1), 1000).unwrap(), "b");
        assert_eq!(read_part(b"a\nb", Part::Head(1), 1000).unwrap(), "a\n");
    }

    #[test]
    fn tail_crosses_chunks() {
        let text: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
        let tail = read_part(text.as_bytes(), Part::Tail(3), u64::MAX).unwrap();
        assert_eq!(tail, "line 39997\nline 39998\nline 39999\n");
        let head = read_part(text.as_bytes(), Part::Head(20_000), u64::MAX).unwrap();
        assert_eq!(head.lines().count(), 20_000);
        assert!(head.ends_with("line 19999\n"));
    }

    #[test]
    fn limits_and_binary_are_enforced() {
        let text = "x\n".repeat(100);
        let whole = read_part(text.as_bytes(), Part::Whole, 10).unwrap_err();
        assert_eq!(whole.code().as_str(), "too_large");
        let tail = read_part(text.as_bytes(), Part::Tail(50), 10).unwrap_err();
        assert_eq!(tail.code().as_str(), "too_large");
        let head = read_part(text.as_bytes(), Part::Head(50), 10).unwrap_err();
        assert_eq!(head.code().as_str(), "too_large");
        assert_eq!(
            read_part(text.as_bytes(), Part::Head(2), 10).unwrap(),
            "x\nx\n"
        );
        let binary = read_part(b"text\0more", Part::Head(1), 1000).unwrap_err();
        assert_eq!(binary.code().as_str(), "binary_file");
        let binary = read_part(b"a\0\nb\n", Part::Tail(1), 1000).unwrap_err();
        assert_eq!(binary.code().as_str(), "binary_file");
        let late_nul = [vec![b'a'; BINARY_PROBE_BYTES], vec![0]].concat();
        assert!(read_part(&late_nul, Part::Whole, u64::MAX).is_ok());
    }

    #[test]
    fn a_passed_deadline_stops_the_read() {
        let (_base, mut file, size) = file_with(b"text\n");
        let deadline = Deadline::after(Duration::ZERO);
        let error = read(&mut file, size, Part::Whole, 100, &deadline, "f.txt").unwrap_err();
        assert_eq!(error.code().as_str(), "timeout");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            read_part(b"a\xffb", Part::Whole, 100).unwrap(),
            "a\u{fffd}b"
        );
    }
}
