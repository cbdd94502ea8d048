//! How nexo fails: the exit status (the MCP Inspector CLI's convention),
//! the human `error:`/`hint:` lines and the one JSON line on stderr.

use std::io::{IsTerminal, Write};
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
    /// The call did nothing: the server asks for a confirmation first.
    NeedsConfirmation = 6,
    /// `nexo bench`: an `--assert` on the run's figures failed.
    AssertionFailed = 7,
    /// `nexo check`: findings at or above `--fail-on`.
    Findings = 8,
    /// Ctrl-C ended the work (128 + SIGINT, as shells report it).
    Interrupted = 130,
}

impl Exit {
    pub fn of(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Usage | ErrorKind::Protocol => Exit::Usage,
            ErrorKind::Unauthorized => Exit::Unauthorized,
            ErrorKind::Unreachable => Exit::Unreachable,
            ErrorKind::Remote => Exit::Remote,
            ErrorKind::NeedsConfirmation => Exit::NeedsConfirmation,
        }
    }
}

/// What every error a person can meet gives the report: a stable code for
/// scripts, the exit status, what lies under the message and what to do.
/// The human `error:`/`caused by:`/`hint:` lines and the JSON error line are
/// both written from it ([`Failure::from_error`]), so the two cannot
/// disagree. Implemented here for the libraries' error types, whose own
/// `hint` methods it reads.
pub trait Hinted: std::error::Error {
    /// The `code` of the JSON error line.
    fn code(&self) -> &'static str;
    fn exit(&self) -> Exit;
    /// What to do about it.
    fn hint(&self) -> Option<String>;
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

impl Hinted for ClientError {
    fn code(&self) -> &'static str {
        ClientError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::of(self.kind())
    }

    fn hint(&self) -> Option<String> {
        ClientError::hint(self)
    }

    fn causes(&self) -> Vec<String> {
        ClientError::causes(self)
    }
}

impl Hinted for nexo_serve::ServeError {
    fn code(&self) -> &'static str {
        match self {
            Self::BadAddress { .. } => "usage",
            Self::OpenOnNetwork { .. } | Self::Access(_) => "bad_config",
            _ => "error",
        }
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        nexo_serve::ServeError::hint(self)
    }
}

impl Hinted for nexo_gateway::StartError {
    fn code(&self) -> &'static str {
        nexo_gateway::StartError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        nexo_gateway::StartError::hint(self)
    }
}

impl Hinted for nexo_host::provider::ProviderError {
    fn code(&self) -> &'static str {
        match self.exit() {
            Exit::Usage => "usage",
            Exit::Unauthorized => "unauthorized",
            Exit::Unreachable => "unreachable",
            Exit::Remote
            | Exit::NeedsConfirmation
            | Exit::AssertionFailed
            | Exit::Findings
            | Exit::Interrupted => "provider_error",
        }
    }

    fn exit(&self) -> Exit {
        use nexo_host::provider::ProviderError as E;
        match self {
            E::NotConfigured { .. }
            | E::MissingKey { .. }
            | E::NoModel { .. }
            | E::BadKey
            | E::Client(_)
            | E::UnknownModel { .. }
            | E::NoEndpoint { .. } => Exit::Usage,
            E::Unauthorized { .. } => Exit::Unauthorized,
            E::Unreachable { .. } | E::Busy { .. } | E::Broken { .. } | E::Truncated { .. } => {
                Exit::Unreachable
            }
            E::Api { .. }
            | E::InStream { .. }
            | E::Malformed { .. }
            | E::TooLarge { .. }
            | E::BadArguments { .. } => Exit::Remote,
        }
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_host::provider::ProviderError::hint(self))
    }
}

impl Hinted for nexo_host::agent::AgentError {
    fn code(&self) -> &'static str {
        match self {
            Self::Provider(error) => error.code(),
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::Provider(error) => error.exit(),
        }
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_host::agent::AgentError::hint(self))
    }
}

impl Hinted for nexo_host::conversations::ConversationError {
    fn code(&self) -> &'static str {
        nexo_host::conversations::ConversationError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_host::conversations::ConversationError::hint(self))
    }
}

impl Hinted for nexo_host::approval::ApprovalError {
    fn code(&self) -> &'static str {
        nexo_host::approval::ApprovalError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_host::approval::ApprovalError::hint(self))
    }
}

impl Hinted for nexo_host::pins::PinError {
    fn code(&self) -> &'static str {
        nexo_host::pins::PinError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_host::pins::PinError::hint(self))
    }
}

impl Hinted for nexo_bundled::UnknownServer {
    fn code(&self) -> &'static str {
        "usage"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some("run `nexo serve --help` to see the servers".into())
    }
}

impl Hinted for nexo_bundled::OptionsError {
    fn code(&self) -> &'static str {
        "usage"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_bundled::OptionsError::hint(self))
    }
}

impl Hinted for nexo_client::config::ConfigError {
    fn code(&self) -> &'static str {
        nexo_client::config::ConfigError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        nexo_client::config::ConfigError::hint(self)
    }
}

impl Hinted for nexo_client::consent::ConsentError {
    fn code(&self) -> &'static str {
        nexo_client::consent::ConsentError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        nexo_client::consent::ConsentError::hint(self)
    }
}

impl Hinted for nexo_bundled::BuildError {
    fn code(&self) -> &'static str {
        "error"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_bundled::BuildError::hint(self))
    }
}

impl Hinted for nexo_trace::ReadError {
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

    fn hint(&self) -> Option<String> {
        nexo_trace::ReadError::hint(self)
    }
}

impl Hinted for nexo_gateway::PolicyError {
    fn code(&self) -> &'static str {
        nexo_gateway::PolicyError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_gateway::PolicyError::hint(self))
    }
}

impl Hinted for nexo_gateway::RequestError {
    fn code(&self) -> &'static str {
        nexo_gateway::RequestError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_gateway::RequestError::hint(self))
    }
}

impl Hinted for nexo_gateway::AuditError {
    fn code(&self) -> &'static str {
        nexo_gateway::AuditError::code(self)
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<String> {
        Some(nexo_gateway::AuditError::hint(self))
    }
}

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

    /// Ctrl-C ended the work.
    pub fn interrupted() -> Self {
        Self {
            exit: Exit::Interrupted,
            code: "interrupted",
            message: "interrupted".into(),
            causes: Vec::new(),
            hint: None,
        }
    }

    /// Any error a person can meet, as [`Hinted`] describes it.
    pub fn from_error<E: Hinted>(error: &E) -> Self {
        Self {
            exit: error.exit(),
            code: error.code(),
            message: error.to_string(),
            causes: error.causes(),
            hint: error.hint(),
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

    /// Writes `human` (the report for people, already worded) and then,
    /// for scripts, the JSON line to stderr, and gives the exit status. On
    /// a terminal the person reads the error once: the JSON line is written
    /// when stderr is not a terminal or `--json` was given.
    pub fn report_after(&self, human: &str) -> ExitCode {
        let mut error = serde_json::json!({ "code": self.code, "message": self.message });
        if !self.causes.is_empty() {
            error["causes"] = serde_json::json!(self.causes);
        }
        if let Some(hint) = &self.hint {
            error["hint"] = serde_json::json!(hint);
        }
        let mut text = crate::output::paint_labels(human, crate::output::colour());
        if !std::io::stderr().is_terminal() || json_requested() {
            text.push_str(&serde_json::json!({ "error": error }).to_string());
            text.push('\n');
        }
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

impl Hinted for nexo_bench::BenchError {
    fn code(&self) -> &'static str {
        nexo_bench::BenchError::code(self)
    }

    fn exit(&self) -> Exit {
        use nexo_bench::BenchError as E;
        match self {
            E::Usage { .. } | E::Remote { .. } | E::File { .. } | E::NotAResult { .. } => {
                Exit::Usage
            }
            E::Unreachable { .. } => Exit::Unreachable,
            E::Sample { class, .. } => match class.as_str() {
                "transport" | "timeout" => Exit::Unreachable,
                "http_401" | "http_403" => Exit::Unauthorized,
                _ => Exit::Remote,
            },
            E::Client(error) => Exit::of(error.kind()),
        }
    }

    fn hint(&self) -> Option<String> {
        nexo_bench::BenchError::hint(self)
    }
}

impl From<nexo_bench::BenchError> for Failure {
    fn from(error: nexo_bench::BenchError) -> Self {
        Self::from_error(&error)
    }
}

impl Hinted for nexo_check::CheckError {
    fn code(&self) -> &'static str {
        nexo_check::CheckError::code(self)
    }

    fn exit(&self) -> Exit {
        match self {
            nexo_check::CheckError::Usage { .. } => Exit::Usage,
            nexo_check::CheckError::Unreachable { .. } => Exit::Unreachable,
        }
    }

    fn hint(&self) -> Option<String> {
        nexo_check::CheckError::hint(self)
    }
}

impl From<nexo_check::CheckError> for Failure {
    fn from(error: nexo_check::CheckError) -> Self {
        Self::from_error(&error)
    }
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Self::from_error(&error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nexo bench`'s failures, each to its exit status.
    #[test]
    fn bench_errors_map_to_their_exit_statuses() {
        use nexo_bench::BenchError as E;
        let sample = |class: &str| E::Sample {
            class: class.to_owned(),
            message: String::new(),
        };
        let table = [
            (sample("transport"), Exit::Unreachable),
            (sample("timeout"), Exit::Unreachable),
            (sample("http_401"), Exit::Unauthorized),
            (sample("http_403"), Exit::Unauthorized),
            (sample("http_500"), Exit::Remote),
            (sample("tool_error"), Exit::Remote),
            (sample("jsonrpc_-32601"), Exit::Remote),
            (sample("mismatch"), Exit::Remote),
            (
                E::Unreachable {
                    message: String::new(),
                },
                Exit::Unreachable,
            ),
            (
                E::Remote {
                    host: "example.com".to_owned(),
                },
                Exit::Usage,
            ),
            (
                E::Usage {
                    message: String::new(),
                    hint: None,
                },
                Exit::Usage,
            ),
        ];
        for (error, exit) in table {
            assert_eq!(Hinted::exit(&error), exit, "{error:?}");
        }
        assert_eq!(Exit::AssertionFailed as u8, 7);
    }

    /// `nexo check`'s failures, each to its exit status; findings are 8.
    #[test]
    fn check_errors_map_to_their_exit_statuses() {
        use nexo_check::CheckError as E;
        let usage = E::Usage {
            message: String::new(),
            hint: None,
        };
        let unreachable = E::Unreachable {
            message: String::new(),
        };
        assert_eq!(Hinted::exit(&usage), Exit::Usage);
        assert_eq!(Hinted::exit(&unreachable), Exit::Unreachable);
        assert_eq!(Exit::Findings as u8, 8);
    }

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

    /// Issue 15, point 7: every library error reports through [`Hinted`],
    /// with the code, exit status and hint the JSON line carries.
    #[test]
    fn issue_15_every_error_reports_through_one_trait() {
        let bad_address = nexo_serve::ServeError::BadAddress {
            addr: "99999".into(),
        };
        let foreign = nexo_bundled::OptionsError::NoRoots;
        let unknown = nexo_bundled::UnknownServer("nope".into());
        let tool = ClientError::UnknownTool {
            tool: "x".into(),
            known: vec!["a".into()],
        };
        let not_a_trace = nexo_trace::ReadError::NotATrace {
            path: "calls.jsonl".into(),
            line: 1,
            reason: "missing field `v`".into(),
            looks_like: Some(nexo_trace::Lookalike::CallLog),
        };
        let failures = [
            (Failure::from_error(&bad_address), "usage", Exit::Usage),
            (
                Failure::from_error(&not_a_trace),
                "not_a_trace",
                Exit::Usage,
            ),
            (Failure::from_error(&foreign), "usage", Exit::Usage),
            (Failure::from_error(&unknown), "usage", Exit::Usage),
            (Failure::from(tool), "unknown_tool", Exit::Remote),
        ];
        for (failure, code, exit) in failures {
            assert_eq!((failure.code, failure.exit), (code, exit), "{failure:?}");
            assert!(failure.hint.is_some(), "{failure:?}");
        }
    }

    #[test]
    fn exit_statuses_follow_the_inspector_cli() {
        let table = [
            (ErrorKind::Usage, 1),
            (ErrorKind::Protocol, 1),
            (ErrorKind::Unauthorized, 3),
            (ErrorKind::Unreachable, 4),
            (ErrorKind::Remote, 5),
            (ErrorKind::NeedsConfirmation, 6),
        ];
        for (kind, status) in table {
            assert_eq!(Exit::of(kind) as u8, status, "{kind:?}");
        }
    }
}
