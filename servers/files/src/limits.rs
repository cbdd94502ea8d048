//! The limits every operation runs under (seed 004, section 3.4), and the
//! deadline that long operations check as they go.

use std::time::{Duration, Instant};

use crate::error::FsError;

/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest name in a path, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// How much of a file's start is checked for a NUL byte.
pub const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// How much one operation may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest file read whole, and the most bytes one read returns
    /// (`head`, `tail`, all of `read_multiple_files`, a report).
    pub max_file_bytes: u64,
    /// The most entries in a listing or a tree, and matches in a search.
    pub max_entries: usize,
    /// How many directory levels below its start a tree or search may go.
    pub max_depth: usize,
    /// How long one operation may take.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 * 1024 * 1024,
            max_entries: 1000,
            max_depth: 16,
            timeout: Duration::from_secs(5),
        }
    }
}

/// When the operation in hand must stop. Blocking work checks it between
/// steps, so that an operation that timed out stops working instead of
/// running on in the background.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    pub fn after(limit: Duration) -> Self {
        Self {
            at: Instant::now() + limit,
            limit,
        }
    }

    /// A [`FsError::Timeout`] once the deadline has passed.
    pub fn check(&self) -> Result<(), FsError> {
        if Instant::now() >= self.at {
            Err(FsError::Timeout(self.limit))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_deadline_is_a_timeout() {
        let deadline = Deadline::after(Duration::ZERO);
        assert_eq!(deadline.check(), Err(FsError::Timeout(Duration::ZERO)));
        assert_eq!(Deadline::after(Duration::from_secs(60)).check(), Ok(()));
    }
}
