//! How nexo fails: the exit status (the MCP Inspector CLI's convention),
//! the human `error:`/`hint:` lines and the one JSON line on stderr.

use std::io::Write;
use std::process::ExitCode;

use nexo_client::{ClientError, ErrorKind};

/// Exit statuses; decided in one place, [`Exit::of`].
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
}

impl Exit {
    pub fn of(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Usage | ErrorKind::Protocol => Exit::Usage,
            ErrorKind::Unauthorized => Exit::Unauthorized,
            ErrorKind::Unreachable => Exit::Unreachable,
            ErrorKind::Remote => Exit::Remote,
        }
    }
}

/// A failed command, ready to be reported.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub code: &'static str,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

impl Failure {
    pub fn usage(message: impl Into<String>, hint: Option<String>) -> Self {
        Self {
            exit: Exit::Usage,
            code: "usage",
            message: message.into(),
            causes: Vec::new(),
            hint,
        }
    }

    /// An unexpected error, with its chain of causes.
    pub fn unexpected(error: &anyhow::Error, hint: Option<String>) -> Self {
        Self {
            exit: Exit::Usage,
            code: "error",
            message: error.to_string(),
            causes: error.chain().skip(1).map(ToString::to_string).collect(),
            hint,
        }
    }

    /// Writes the report to stderr and gives the exit status.
    pub fn report(&self) -> ExitCode {
        let mut text = format!("error: {}\n", self.message);
        for cause in &self.causes {
            text.push_str(&format!("  caused by: {cause}\n"));
        }
        if let Some(hint) = &self.hint {
            text.push_str(&format!("hint: {hint}\n"));
        }
        self.report_after(&text)
    }

    /// Writes `human` (the report for people, already worded) and then the
    /// JSON line for scripts to stderr, and gives the exit status.
    pub fn report_after(&self, human: &str) -> ExitCode {
        let mut error = serde_json::json!({ "code": self.code, "message": self.message });
        if !self.causes.is_empty() {
            error["causes"] = serde_json::json!(self.causes);
        }
        if let Some(hint) = &self.hint {
            error["hint"] = serde_json::json!(hint);
        }
        let mut text = human.to_owned();
        text.push_str(&serde_json::json!({ "error": error }).to_string());
        text.push('\n');
        let _ = std::io::stderr().write_all(text.as_bytes());
        ExitCode::from(self.exit as u8)
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

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Self {
            exit: Exit::of(error.kind()),
            code: error.code(),
            message: error.to_string(),
            causes: error.detail().map(str::to_owned).into_iter().collect(),
            hint: error.hint(),
        }
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

    #[test]
    fn exit_statuses_follow_the_inspector_cli() {
        let table = [
            (ErrorKind::Usage, 1),
            (ErrorKind::Protocol, 1),
            (ErrorKind::Unauthorized, 3),
            (ErrorKind::Unreachable, 4),
            (ErrorKind::Remote, 5),
        ];
        for (kind, status) in table {
            assert_eq!(Exit::of(kind) as u8, status, "{kind:?}");
        }
    }
}
