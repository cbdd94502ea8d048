//! Where a server is: a URL, a command to spawn, or an in-process handler.

use std::fmt;

/// How to speak HTTP to a URL target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpTransport {
    /// Streamable HTTP, falling back to the legacy HTTP+SSE transport when
    /// the server refuses the first POST with 400, 404 or 405.
    #[default]
    Auto,
    /// Streamable HTTP only.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05) only.
    Sse,
}

/// One server to reach.
#[derive(Debug, Clone)]
pub enum Target {
    Url {
        url: String,
        transport: HttpTransport,
        /// Extra request headers, `Name: value`.
        headers: Vec<(String, String)>,
    },
    Stdio {
        /// The command line, split like a shell would.
        command: Vec<String>,
        /// Extra environment for the child, `KEY=VALUE`.
        env: Vec<(String, String)>,
    },
}

impl Target {
    /// A stdio target from one command-line string (`'npx -y server /tmp'`).
    pub fn stdio(
        command_line: &str,
        env: Vec<(String, String)>,
    ) -> Result<Self, crate::ClientError> {
        let command = shell_words::split(command_line).map_err(|error| {
            crate::ClientError::usage(
                format!("cannot split the command `{command_line}`: {error}"),
                Some("quote the whole command once: --stdio 'server --flag value'".to_owned()),
            )
        })?;
        if command.is_empty() {
            return Err(crate::ClientError::usage(
                "the `--stdio` command is empty",
                Some("give the server's command line: --stdio 'nexo serve morse'".to_owned()),
            ));
        }
        Ok(Self::Stdio { command, env })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Url { url, .. } => f.write_str(url),
            Target::Stdio { command, .. } => f.write_str(&shell_words::join(command)),
        }
    }
}
