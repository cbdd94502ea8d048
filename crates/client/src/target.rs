//! Where a server is: a URL or a command to spawn. A target prints (and
//! debug-prints) without its credentials: URL userinfo, credential headers
//! and `-e` values are redacted ([`crate::secret`]).

use std::fmt;
use std::path::PathBuf;

use crate::inprocess::InProcess;
use crate::secret::{EnvVar, Header, TargetUrl};

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
        url: TargetUrl,
        transport: HttpTransport,
        /// Extra request headers.
        headers: Vec<Header>,
    },
    Stdio {
        /// The command line, split like a shell would.
        command: Vec<String>,
        /// Extra environment for the child.
        env: Vec<EnvVar>,
        /// The child's working directory; `None` inherits nexo's.
        cwd: Option<PathBuf>,
    },
    /// A server run inside this process (a bundled one).
    InProcess(InProcess),
}

impl Target {
    /// A stdio target from one command-line string (`'npx -y server /tmp'`).
    pub fn stdio(command_line: &str, env: Vec<EnvVar>) -> Result<Self, crate::ClientError> {
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
        Ok(Self::Stdio {
            command,
            env,
            cwd: None,
        })
    }
}

impl Target {
    /// The credentials this target carries, as text to scrub from anything a
    /// peer sends back (a server may quote a refused token in its error):
    /// credential header values and their last word (the token after
    /// `Bearer`), the URL's userinfo, and `-e` values long enough not to
    /// be ordinary words.
    pub(crate) fn secrets(&self) -> Vec<String> {
        /// Shorter `-e` values (`1`, `true`, `debug`) are left alone.
        const SHORTEST_ENV_SECRET: usize = 8;
        let mut secrets = Vec::new();
        match self {
            Target::Url { url, headers, .. } => {
                for header in headers.iter().filter(|header| header.is_credential()) {
                    if let Ok(value) = header.value().to_str() {
                        secrets.push(value.trim().to_owned());
                        if let Some(last) = value.split_whitespace().last() {
                            secrets.push(last.to_owned());
                        }
                    }
                }
                if let Ok(parsed) = url::Url::parse(url.expose()) {
                    secrets.push(parsed.username().to_owned());
                    secrets.extend(parsed.password().map(str::to_owned));
                }
            }
            Target::Stdio { env, .. } => secrets.extend(
                env.iter()
                    .map(|var| var.value.expose().to_owned())
                    .filter(|value| value.len() >= SHORTEST_ENV_SECRET),
            ),
            Target::InProcess(_) => {}
        }
        secrets.retain(|secret| !secret.is_empty());
        // Longest first, so that a value is redacted whole before its parts.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Url { url, .. } => url.fmt(f),
            Target::Stdio { command, .. } => f.write_str(&shell_words::join(command)),
            Target::InProcess(server) => write!(f, "builtin:{}", server.name()),
        }
    }
}
