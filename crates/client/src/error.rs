//! Errors of reaching and calling a server, each with the kind that decides
//! its exit class ([`ErrorKind::exit`]) and a hint saying what to try
//! ([`Hinted`]).

use nexo_hint::{Exit, Hint, Hinted};
use rmcp::model::ErrorCode;

/// What kind of failure this was; each is one exit class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself was wrong (bad arguments, unknown target form).
    Usage,
    /// The server wants authorization (HTTP 401/403).
    Unauthorized,
    /// The server could not be reached (refused, DNS, timeout, no such command).
    Unreachable,
    /// The server answered with an error (JSON-RPC error, unknown tool, `isError`).
    Remote,
    /// The call did nothing: the server asks for a confirmation first.
    NeedsConfirmation,
    /// The peer broke the protocol, or something unexpected failed.
    Protocol,
}

impl ErrorKind {
    /// The exit status of a failure of this kind (the MCP Inspector CLI's).
    pub fn exit(self) -> Exit {
        match self {
            Self::Usage | Self::Protocol => Exit::Usage,
            Self::Unauthorized => Exit::Unauthorized,
            Self::Unreachable => Exit::Unreachable,
            Self::Remote => Exit::Remote,
            Self::NeedsConfirmation => Exit::NeedsConfirmation,
        }
    }
}

/// The request a [`ClientError::Rpc`] answered, which decides its hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    ListTools,
    CallTool,
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
    ListSkills,
    GetSkill,
    /// `tasks/get`, `tasks/update` or `tasks/cancel` (the tasks extension).
    Task,
    /// `completion/complete`.
    Complete,
    Ping,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    #[error("{message}")]
    Usage { message: String, hint: Option<Hint> },
    #[error("the server at `{target}` requires authorization")]
    Unauthorized { target: String, detail: String },
    /// A 401/403 although the user gave an `Authorization` header.
    #[error("the server at `{target}` refused the authorization given")]
    TokenRefused { target: String, detail: String },
    /// An authorization server would not trade a token for another (OAuth
    /// token exchange, RFC 8693, as the gateway does for its upstreams).
    #[error("the authorization server at `{endpoint}` would not trade the token: {detail}")]
    ExchangeRefused { endpoint: String, detail: String },
    #[error("cannot reach `{target}`: {detail}")]
    Unreachable {
        target: String,
        detail: String,
        hint: Hint,
        /// The last lines a stdio server wrote to its stderr, if it failed.
        stderr: Vec<String>,
    },
    /// A stdio server whose command cannot be run at all (not found, not
    /// executable): no restart can help.
    #[error("cannot reach `{target}`: cannot start `{program}`: {detail}")]
    CannotStart {
        target: String,
        program: String,
        detail: String,
        hint: Hint,
    },
    #[error("`{target}` did not answer within {seconds} s")]
    Timeout { target: String, seconds: f64 },
    /// A request that went on past its maximum, progress or not.
    #[error("`{target}` did not finish within its maximum of {seconds} s")]
    Overran { target: String, seconds: f64 },
    #[error("the server returned error {code}: {message}")]
    Rpc {
        method: Method,
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
    #[error("the tool `{tool}` reported an error: {message}")]
    Tool { tool: String, message: String },
    /// A result whose `structuredContent.status` is `needs_confirmation`
    /// (the music server's `add_song` and `clear_library` without a client
    /// that can be asked): nothing was done.
    #[error("`{tool}` did nothing yet: {message}")]
    NeedsConfirmation {
        tool: String,
        message: String,
        /// The arguments to call again with (`confirm`, `playlist`).
        retry_with: Vec<String>,
    },
    /// A tool run as a task that failed: the server's JSON-RPC error.
    #[error("the task `{task}` of `{tool}` failed: {message}")]
    TaskFailed {
        tool: String,
        task: String,
        code: i32,
        message: String,
    },
    /// A tool run as a task that was cancelled (not by this call).
    #[error("the task `{task}` of `{tool}` was cancelled ({detail})")]
    TaskCancelled {
        tool: String,
        task: String,
        detail: String,
    },
    /// A tool run as a task that the server no longer has, or whose time
    /// to live passed before it finished.
    #[error("the task `{task}` of `{tool}` is gone: {detail}")]
    TaskLost {
        tool: String,
        task: String,
        detail: String,
    },
    #[error("the server has no tool `{tool}`")]
    UnknownTool {
        tool: String,
        /// The tools the server has.
        known: Vec<String>,
    },
    #[error("the connection to `{target}` failed: {detail}")]
    Protocol {
        target: String,
        detail: String,
        hint: Hint,
        /// The last lines a stdio server wrote to its stderr, if it failed.
        stderr: Vec<String>,
    },
}

impl ClientError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Usage { .. } => ErrorKind::Usage,
            Self::Unauthorized { .. }
            | Self::TokenRefused { .. }
            | Self::ExchangeRefused { .. } => ErrorKind::Unauthorized,
            Self::Unreachable { .. }
            | Self::CannotStart { .. }
            | Self::Timeout { .. }
            | Self::Overran { .. } => ErrorKind::Unreachable,
            Self::Rpc { .. }
            | Self::Tool { .. }
            | Self::UnknownTool { .. }
            | Self::TaskFailed { .. }
            | Self::TaskCancelled { .. }
            | Self::TaskLost { .. } => ErrorKind::Remote,
            Self::NeedsConfirmation { .. } => ErrorKind::NeedsConfirmation,
            Self::Protocol { .. } => ErrorKind::Protocol,
        }
    }

    /// This error with `hint` in place of its own, for the kinds that carry
    /// one (an unreachable or misbehaving server).
    pub(crate) fn with_hint(mut self, new: Hint) -> Self {
        if let Self::Unreachable { hint, .. } | Self::Protocol { hint, .. } = &mut self {
            *hint = new;
        }
        self
    }

    /// This error with the last lines `program` wrote to its stderr, where
    /// they explain it (the child exited, or broke the protocol).
    pub(crate) fn with_stderr(mut self, program: &str, lines: Vec<String>) -> Self {
        if let Self::Unreachable { stderr, .. } | Self::Protocol { stderr, .. } = &mut self {
            *stderr = lines
                .into_iter()
                .map(|line| format!("{program} (stderr): {line}"))
                .collect();
        }
        self
    }

    /// This error with every occurrence of `secrets` in its text replaced
    /// by [`crate::secret::REDACTED`].
    pub(crate) fn redacted(self, secrets: &[String]) -> Self {
        if secrets.is_empty() {
            return self;
        }
        let scrub = |mut text: String| {
            for secret in secrets {
                if text.contains(secret.as_str()) {
                    text = text.replace(secret.as_str(), crate::secret::REDACTED);
                }
            }
            text
        };
        match self {
            Self::Usage { message, hint } => Self::Usage {
                message: scrub(message),
                hint: hint.map(|hint| hint.map(scrub)),
            },
            Self::Unauthorized { target, detail } => Self::Unauthorized {
                target: scrub(target),
                detail: scrub(detail),
            },
            Self::TokenRefused { target, detail } => Self::TokenRefused {
                target: scrub(target),
                detail: scrub(detail),
            },
            Self::ExchangeRefused { endpoint, detail } => Self::ExchangeRefused {
                endpoint: scrub(endpoint),
                detail: scrub(detail),
            },
            Self::Unreachable {
                target,
                detail,
                hint,
                stderr,
            } => Self::Unreachable {
                target: scrub(target),
                detail: scrub(detail),
                hint: hint.map(scrub),
                stderr: stderr.into_iter().map(scrub).collect(),
            },
            Self::CannotStart {
                target,
                program,
                detail,
                hint,
            } => Self::CannotStart {
                target: scrub(target),
                program: scrub(program),
                detail: scrub(detail),
                hint: hint.map(scrub),
            },
            Self::Timeout { target, seconds } => Self::Timeout {
                target: scrub(target),
                seconds,
            },
            Self::Overran { target, seconds } => Self::Overran {
                target: scrub(target),
                seconds,
            },
            Self::Rpc {
                method,
                code,
                message,
                data,
            } => Self::Rpc {
                method,
                code,
                message: scrub(message),
                data,
            },
            Self::Tool { tool, message } => Self::Tool {
                tool,
                message: scrub(message),
            },
            unknown @ Self::UnknownTool { .. } => unknown,
            Self::TaskFailed {
                tool,
                task,
                code,
                message,
            } => Self::TaskFailed {
                tool,
                task,
                code,
                message: scrub(message),
            },
            Self::TaskCancelled { tool, task, detail } => Self::TaskCancelled {
                tool,
                task,
                detail: scrub(detail),
            },
            Self::TaskLost { tool, task, detail } => Self::TaskLost {
                tool,
                task,
                detail: scrub(detail),
            },
            Self::NeedsConfirmation {
                tool,
                message,
                retry_with,
            } => Self::NeedsConfirmation {
                tool,
                message: scrub(message),
                retry_with,
            },
            Self::Protocol {
                target,
                detail,
                hint,
                stderr,
            } => Self::Protocol {
                target: scrub(target),
                detail: scrub(detail),
                hint,
                stderr: stderr.into_iter().map(scrub).collect(),
            },
        }
    }

    /// Bad usage, with what to do in words the same on every surface.
    pub fn usage(message: impl Into<String>, hint: impl Into<Option<String>>) -> Self {
        Self::Usage {
            message: message.into(),
            hint: hint.into().map(Hint::new),
        }
    }
}

impl Hinted for ClientError {
    fn code(&self) -> &'static str {
        match self {
            Self::Usage { .. } => "usage",
            Self::Unauthorized { .. } | Self::TokenRefused { .. } => "unauthorized",
            Self::ExchangeRefused { .. } => "exchange_refused",
            Self::Unreachable { .. } | Self::CannotStart { .. } => "unreachable",
            Self::Timeout { .. } | Self::Overran { .. } => "timeout",
            Self::Rpc { .. } => "server_error",
            Self::Tool { .. } => "tool_error",
            Self::UnknownTool { .. } => "unknown_tool",
            Self::TaskFailed { .. } => "task_failed",
            Self::TaskCancelled { .. } => "task_cancelled",
            Self::TaskLost { .. } => "task_lost",
            Self::NeedsConfirmation { .. } => "needs_confirmation",
            Self::Protocol { .. } => "protocol_error",
        }
    }

    fn exit(&self) -> Exit {
        self.kind().exit()
    }

    /// What to try next.
    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Usage { hint, .. } => hint.clone(),
            Self::TokenRefused { .. } => Some(
                "the server refused the `Authorization` header given with `--header`: check \
                 that the token is valid and not expired, or leave the header out to let nexo \
                 authorize with OAuth"
                    .into(),
            ),
            Self::ExchangeRefused { .. } => Some(
                "the caller's token must be one the authorization server trades (RFC 8693 token \
                 exchange): check the gateway's `tokenExchange` settings (clientId, audience, \
                 scope) against what that server allows"
                    .into(),
            ),
            Self::Unauthorized { .. } => Some(
                "nexo authorizes with OAuth when the server asks; if its authorization server \
                 needs a registered client, pass `--client-id` (and `--client-secret`), or pass \
                 a token with `--header 'Authorization: Bearer TOKEN'`"
                    .into(),
            ),
            Self::Unreachable { hint, .. } | Self::CannotStart { hint, .. } => Some(hint.clone()),
            Self::Timeout { .. } => Some(
                "raise the limit with `--timeout SECONDS` (`timeout` in a config entry; progress \
                 notifications start it again), or check the server's logs"
                    .into(),
            ),
            Self::Overran { .. } => Some(
                "raise the maximum with `maxTimeout` in the server's config entry (or the \
                 tool's, under `toolTimeouts`)"
                    .into(),
            ),
            Self::Rpc { code, .. } if *code == ErrorCode::METHOD_NOT_FOUND.0 => Some(
                Hint::new("the server does not implement this method")
                    .command("nexo discover TARGET", "shows what it offers")
                    .on_page("the Servers view shows what it offers"),
            ),
            Self::Rpc { method, code, .. }
                if *code == ErrorCode::INVALID_PARAMS.0
                    || *code == ErrorCode::RESOURCE_NOT_FOUND.0 =>
            {
                match method {
                    Method::CallTool => {
                        Some(schema_hint("check the arguments against the tool's schema"))
                    }
                    Method::ReadResource => Some(
                        Hint::new("check the URI")
                            .command("nexo resources TARGET", "lists them")
                            .on_page("the Resources view lists them"),
                    ),
                    Method::GetPrompt => Some(
                        Hint::new("check the prompt's name and arguments")
                            .command("nexo prompts TARGET", "lists them")
                            .on_page("the Prompts view lists them"),
                    ),
                    Method::GetSkill => Some(
                        "the server serves no skill at that URI now; list its skills again".into(),
                    ),
                    _ => None,
                }
            }
            Self::NeedsConfirmation { retry_with, .. } if retry_with.is_empty() => {
                Some("call the tool again once you have decided".into())
            }
            Self::NeedsConfirmation { retry_with, .. } => Some(Hint::new(format!(
                "to go ahead, call it again with the same arguments and {}",
                retry_with
                    .iter()
                    .map(|name| if name == "confirm" {
                        "`confirm=true`".to_owned()
                    } else {
                        format!("`{name}=...`")
                    })
                    .collect::<Vec<_>>()
                    .join(" or ")
            ))),
            Self::UnknownTool { known, .. } if known.is_empty() => {
                Some("the server lists no tools".into())
            }
            Self::UnknownTool { known, .. } => Some(
                Hint::new(format!("the server's tools: {}", known.join(", ")))
                    .command("nexo tools TARGET NAME", "describes one")
                    .on_page("the Tools view describes each"),
            ),
            Self::TaskFailed { .. } => Some(
                "the server ran the tool as a task and reported this error; see the server's \
                 logs, then call the tool again"
                    .into(),
            ),
            Self::TaskCancelled { .. } => {
                Some("call the tool again to run it anew, if it is still wanted".into())
            }
            Self::TaskLost { .. } => Some(
                "the server discarded the task (or restarted without it); call the tool again \
                 to run it anew"
                    .into(),
            ),
            Self::Rpc { .. } | Self::Tool { .. } => None,
            Self::Protocol { hint, .. } => Some(hint.clone()),
        }
    }

    /// What lies under the message, for `caused by:` lines: the detail of
    /// a refused authorization, the last stderr lines of a failed child.
    fn causes(&self) -> Vec<String> {
        match self {
            Self::Unauthorized { detail, .. } | Self::TokenRefused { detail, .. } => {
                vec![detail.clone()]
            }
            Self::Unreachable { stderr, .. } | Self::Protocol { stderr, .. } => stderr.clone(),
            _ => Vec::new(),
        }
    }
}

/// `advice` about a tool's schema, with where it is seen: `nexo tools
/// TARGET --json` on the terminal, the Tools view on the page.
pub(crate) fn schema_hint(advice: &str) -> Hint {
    Hint::new(advice)
        .command("nexo tools TARGET --json", "shows it")
        .on_page("the Tools view shows it")
}

/// Failures of the legacy HTTP+SSE transport ([`crate::legacy_sse`]).
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("`{0}` is not a valid URL")]
    BadUrl(String),
    #[error("the HTTP request failed")]
    Request(#[source] reqwest::Error),
    #[error("no answer within {0:.1} s")]
    TimedOut(f64),
    /// The stream opened and then carried nothing at all: what a proxy that
    /// buffers responses (nginx's default) makes of an event stream.
    #[error(
        "the event stream opened but carried nothing within {0:.1} s, not even its `endpoint` event"
    )]
    Silent(f64),
    #[error("the server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the server answered with content type `{0}`, not an event stream")]
    NotAStream(String),
    #[error("the stream ended before its `endpoint` event")]
    NoEndpoint,
    #[error("the stream broke: {0}")]
    Broken(String),
    #[error("the `endpoint` event names `{0}`, which is not a URL")]
    BadEndpoint(String),
    #[error(
        "the `endpoint` event names `{0}`, on another origin than the stream; refusing to post there"
    )]
    ForeignEndpoint(String),
    #[error("cannot encode a message")]
    Encode(#[from] serde_json::Error),
    #[error("the SSE stream is closed and could not be reopened")]
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(kind.exit().status(), status, "{kind:?}");
        }
    }

    /// Issue 15, point 7: an unknown tool is the server's error (5), with
    /// the tools it has; the terminal names the command, the page its view.
    #[test]
    fn issue_15_an_unknown_tool_reports_its_code_and_the_known_tools() {
        let tool = ClientError::UnknownTool {
            tool: "x".into(),
            known: vec!["a".into()],
        };
        assert_eq!((tool.code(), tool.exit()), ("unknown_tool", Exit::Remote));
        let hint = tool.hint().map(|hint| (hint.terminal(), hint.page()));
        assert_eq!(
            hint,
            Some((
                "the server's tools: a; `nexo tools TARGET NAME` describes one".to_owned(),
                "the server's tools: a; the Tools view describes each".to_owned()
            ))
        );
    }
}
