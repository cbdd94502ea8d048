//! How nexo reports an error, for every crate that has one: the exit
//! classes ([`Exit`], the MCP Inspector CLI's statuses and ours), the trait
//! every user-facing library error implements ([`Hinted`]: its stable code,
//! exit class, hint and causes), the hint itself ([`Hint`], worded for each
//! surface that shows it) and the one rendering of a report ([`Report`]):
//! the `error:`/`caused by:`/`hint:` lines for a terminal, the JSON error
//! line for a script, and the parts the web page draws.
//!
//! It sits below every other nexo crate and knows none of them: each
//! library decides its own errors' codes, exit classes and hints, and the
//! binary only writes what this crate renders. It prints nothing.

mod hint;
mod report;

pub use hint::Hint;
pub use report::Report;

/// Exit statuses (a contract: scripts depend on them). 1, 3, 4 and 5 are
/// the MCP Inspector CLI's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Bad usage, or an unexpected error (a peer breaking the protocol included).
    Usage = 1,
    /// The server requires authorization.
    Unauthorized = 3,
    /// The server could not be reached.
    Unreachable = 4,
    /// The tool or server reported an error.
    Remote = 5,
    /// The call did nothing: the server asks for a confirmation first.
    NeedsConfirmation = 6,
    /// `nexo bench`: an `--assert` on the run's figures failed.
    AssertionFailed = 7,
    /// `nexo check`: findings at or above `--fail-on`.
    Findings = 8,
    /// `nexo chat -p`: a tool call the model asked for was not run (nobody
    /// could approve it, or a rule denies it).
    Refused = 9,
    /// Ctrl-C ended the work (128 + SIGINT, as shells report it).
    Interrupted = 130,
}

impl Exit {
    /// The process's exit status.
    pub fn status(self) -> u8 {
        self as u8
    }
}

/// What every error a person can meet gives its report: a stable code for
/// scripts, the exit class, what to do and what lies under the message.
/// The terminal's lines, the JSON error line and the page are all written
/// from it ([`Report::of`]), so they cannot disagree.
pub trait Hinted: std::error::Error {
    /// The `code` of the JSON error line: stable snake_case.
    fn code(&self) -> &'static str;

    /// The exit status it ends a command with.
    fn exit(&self) -> Exit;

    /// What to do about it.
    fn hint(&self) -> Option<Hint>;

    /// The `caused by:` lines: the error's sources, outermost first.
    fn causes(&self) -> Vec<String> {
        let mut causes = Vec::new();
        let mut source = self.source();
        while let Some(error) = source {
            causes.push(error.to_string());
            source = error.source();
        }
        causes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statuses are a contract (DESIGN.md, "The command line").
    #[test]
    fn exit_statuses_are_the_contract() {
        let table = [
            (Exit::Usage, 1),
            (Exit::Unauthorized, 3),
            (Exit::Unreachable, 4),
            (Exit::Remote, 5),
            (Exit::NeedsConfirmation, 6),
            (Exit::AssertionFailed, 7),
            (Exit::Findings, 8),
            (Exit::Refused, 9),
            (Exit::Interrupted, 130),
        ];
        for (exit, status) in table {
            assert_eq!(exit.status(), status, "{exit:?}");
        }
    }
}
