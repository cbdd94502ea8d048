//! How nexo fails: a [`Failure`] is the report of any error a person can
//! meet ([`Report`], from any library error through [`Hinted`]), written
//! once to stderr as nexo-hint renders it (the human `error:`/`hint:`
//! lines, coloured on a terminal, and the JSON line for scripts), and the
//! exit status the error's class gives. Which code, exit class and hint an
//! error has is its library's business; nothing here decides it.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use nexo_hint::{Hint, Hinted, Report};

pub use nexo_hint::Exit;

/// Whether the command line asks for JSON (`--json`, before any `--`):
/// read from the arguments themselves, since an error may come before or
/// without the parsed command.
fn json_requested() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|argument| argument != "--")
        .any(|argument| argument == "--json")
}

/// A failed command, ready to be reported.
#[derive(Debug)]
pub struct Failure {
    pub report: Report,
}

/// Any error a person can meet, as its library describes it ([`Hinted`]):
/// `?` turns it into a failure, and an error type without `Hinted` does
/// not compile there.
impl<E: Hinted> From<E> for Failure {
    fn from(error: E) -> Self {
        Self {
            report: Report::of(&error),
        }
    }
}

impl Failure {
    /// A failure no library error gives: its exit class, code and message.
    pub fn new(exit: Exit, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            report: Report::new(exit, code, message),
        }
    }

    /// This failure with `causes` under its message.
    #[must_use]
    pub fn caused_by(mut self, causes: Vec<String>) -> Self {
        self.report.causes = causes;
        self
    }

    /// This failure with `hint`.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<Hint>) -> Self {
        self.report.hint = Some(hint.into());
        self
    }

    pub fn usage(message: impl Into<String>, hint: Option<String>) -> Self {
        let failure = Self::new(Exit::Usage, "usage", message);
        match hint {
            Some(hint) => failure.hint(hint),
            None => failure,
        }
    }

    /// Ctrl-C ended the work.
    pub fn interrupted() -> Self {
        Self::new(Exit::Interrupted, "interrupted", "interrupted")
    }

    /// An unexpected error, with its chain of causes.
    pub fn unexpected(error: &anyhow::Error, hint: Option<String>) -> Self {
        let failure = Self::new(Exit::Usage, "error", error.to_string())
            .caused_by(error.chain().skip(1).map(ToString::to_string).collect());
        match hint {
            Some(hint) => failure.hint(hint),
            None => failure,
        }
    }

    /// Writes the report to stderr and gives the exit status.
    pub fn report(&self) -> ExitCode {
        self.report_after(&self.report.human())
    }

    /// Writes `human` (the report for people, already worded) and then,
    /// for scripts, the JSON line to stderr, and gives the exit status. On
    /// a terminal the person reads the error once: the JSON line is written
    /// when stderr is not a terminal or `--json` was given.
    pub fn report_after(&self, human: &str) -> ExitCode {
        let mut text = crate::output::paint_labels(human, crate::output::colour());
        if !std::io::stderr().is_terminal() || json_requested() {
            text.push_str(&self.report.json());
            text.push('\n');
        }
        let _ = std::io::stderr().write_all(text.as_bytes());
        ExitCode::from(self.report.exit.status())
    }

    /// Arguments clap could not read. clap's own wording (the problem, the
    /// usage line, the pointer to `--help`) is kept for people; the exit
    /// status and JSON line are those of any bad usage, where clap alone
    /// would exit 2 and write no JSON. The JSON message holds what the
    /// first lines say, the missing arguments included.
    pub fn bad_arguments(error: &clap::Error) -> ExitCode {
        let mut human = error.render().to_string();
        if !human.ends_with('\n') {
            human.push('\n');
        }
        let hint = clap_hint(error);
        if let Some(specific) = &hint {
            human.push_str(&format!("hint: {specific}\n"));
        }
        let hint = hint.unwrap_or_else(|| "run the command with `--help`".to_owned());
        Self::usage(clap_message(&human), Some(hint)).report_after(&human)
    }
}

/// The problem clap reports, on one line: its `error:` line and, when that
/// line announces a list (`...were not provided:`), the list's items.
fn clap_message(rendered: &str) -> String {
    let mut lines = rendered
        .lines()
        .skip_while(|line| !line.starts_with("error: "));
    let Some(first) = lines.next().and_then(|line| line.strip_prefix("error: ")) else {
        return "a required argument or subcommand is missing".to_owned();
    };
    if !first.ends_with(':') {
        return first.to_owned();
    }
    let items: Vec<&str> = lines
        .take_while(|line| line.starts_with(' '))
        .map(str::trim)
        .collect();
    format!("{first} {}", items.join(", "))
}

/// What to do about arguments clap refused, beyond clap's pointer to
/// `--help`: the servers, when the one missing is `nexo serve`'s.
fn clap_hint(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let missing_server = matches!(
        error.get(ContextKind::InvalidArg),
        Some(ContextValue::Strings(names)) if names.iter().any(|name| name == "<SERVER>")
    );
    if missing_server {
        let names: Vec<&str> = nexo_bundled::Bundled::ALL
            .iter()
            .map(|bundled| bundled.name())
            .collect();
        Some(format!("name the server to run: {}", names.join(", ")))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15, point 10: the JSON line of a usage error says what is missing.
    #[test]
    fn issue_15_clap_messages_keep_their_lists() {
        let rendered = "error: the following required arguments were not provided:\n  \
                        <--url <URL>|--stdio <COMMAND>>\n\nUsage: nexo tools\n";
        assert_eq!(
            clap_message(rendered),
            "the following required arguments were not provided: <--url <URL>|--stdio <COMMAND>>"
        );
        assert_eq!(
            clap_message("error: unexpected argument 'x' found\n\nUsage: nexo\n"),
            "unexpected argument 'x' found"
        );
    }
}
