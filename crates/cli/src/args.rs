//! The command line: a contract that scripts and docs depend on (DESIGN.md).

use std::convert::Infallible;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use nexo_client::config::ProviderKind;
use nexo_client::{Secret, TargetUrl};

use crate::server_options::ServerOptionArgs;

/// nexo: an MCP toolkit in one binary.
///
/// Chat with an LLM that uses the tools of MCP servers (`nexo` alone), serve
/// ready-made MCP servers, and call or inspect any MCP server by hand.
#[derive(Debug, Parser)]
#[command(
    name = "nexo",
    version = VERSION,
    propagate_version = true,
    args_conflicts_with_subcommands = true,
    after_help = EXIT_STATUS
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Trust the certificates of FILE (PEM) for HTTPS servers, beside the
    /// system's: an authority's, or a server's own, even a self-signed one
    /// with `CA:TRUE` as `openssl req -x509` makes it (its names and dates
    /// are still checked).
    #[arg(long, value_name = "FILE", global = true)]
    pub cacert: Option<PathBuf>,
    /// Without a command, `nexo` is the chat: these are `nexo chat`'s options.
    #[command(flatten)]
    pub chat: ChatArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a bundled MCP server over stdio (the default) or HTTP.
    Serve(ServeArgs),
    /// List a server's tools, or describe one: `nexo tools TARGET [NAME]`.
    #[command(after_help = TOOLS_EXAMPLES)]
    Tools(ToolsArgs),
    /// Call one tool: `nexo call TARGET TOOL key=value ...` or `TOOL '{"json":...}'`.
    #[command(after_help = CALL_EXAMPLES)]
    Call(CallArgs),
    /// List a server's resources.
    #[command(after_help = RESOURCES_EXAMPLES)]
    Resources(ListArgs),
    /// Read one resource by URI.
    #[command(after_help = READ_EXAMPLES)]
    Read(ReadArgs),
    /// List a server's prompts.
    #[command(after_help = PROMPTS_EXAMPLES)]
    Prompts(ListArgs),
    /// Get one prompt, filled with `key=value` arguments.
    #[command(after_help = PROMPT_EXAMPLES)]
    Prompt(PromptArgs),
    /// Show the server's identity, protocol revision, capabilities and transport.
    #[command(after_help = DISCOVER_EXAMPLES)]
    Discover(ListArgs),
    /// Analyse a trace written with `--trace FILE`: its summary, or its flow
    /// as a sequence diagram.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Connect to every configured server at once and show each one's state.
    #[command(after_help = SERVERS_EXAMPLES)]
    Servers(ServersArgs),
    /// Find why a server cannot be reached: an ordered checklist, each
    /// step timed, each failure with what to do.
    ///
    /// For a URL: name resolution, TCP, TLS (version, certificate names and
    /// dates), the HTTP answer (and where MCP answers if the path is
    /// wrong), CORS as a browser client meets it, the OAuth metadata a 401
    /// points at. For a command: whether it is on PATH, how long until its
    /// first byte and first answer, what it wrote to stdout that is not
    /// JSON-RPC, its stderr and exit status. Then both protocol eras,
    /// `tools/list` and one `ping`. With no target, every server of the
    /// configuration.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(DoctorArgs),
    /// Sign out of a server: revoke the OAuth tokens kept for it at the
    /// authorization server that issued them (RFC 7009), then delete them.
    #[command(after_help = LOGOUT_EXAMPLES)]
    Logout(LogoutArgs),
    /// The security gateway: every server of a configuration behind one HTTP
    /// endpoint, each request decided by a policy, inspected for secrets and
    /// prompt injection, and written to a hash-chained audit log; and its
    /// offline checks (check-policy, verify-audit).
    #[command(
        after_help = GATEWAY_EXAMPLES,
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true
    )]
    Gateway(GatewayArgs),
    /// Load-test a server: latency percentiles, errors, the server's CPU per call.
    ///
    /// Calls one tool (or `--method`, or a `--scenario` mix) in closed or
    /// open loop and reports latency percentiles (coordinated omission
    /// corrected), requests per second, errors by class and the server's CPU
    /// per call; `nexo bench compare A.json B.json` compares two results.
    #[command(
        after_help = BENCH_EXAMPLES,
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true
    )]
    Bench(Box<BenchArgs>),
    /// Audit a server for its author: behaviour probes, definition lints,
    /// tool poisoning; findings with evidence, a score and an exit code for CI.
    ///
    /// Probes the server by real exchanges (stdout pollution, errors versus
    /// isError, concurrent requests answered by id, stable resource URIs,
    /// definitions that change, HTTP sessions, Origin and Host, version
    /// negotiation, latency, authorization) and lints what it lists (names,
    /// descriptions, schemas, annotations, provider portability, tokens,
    /// hidden Unicode and instructions aimed at the model). Only tools that
    /// say readOnlyHint: true and openWorldHint: false are ever called.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(Box<CheckArgs>),
    /// Chat with an LLM that uses the tools of every configured server (also `nexo` alone).
    #[command(after_help = CHAT_EXAMPLES)]
    Chat(ChatArgs),
    /// The local web page: every configured server's state, tools (a form for
    /// each), resources and prompts, and the protocol trace live.
    #[command(after_help = UI_EXAMPLES)]
    Ui(UiArgs),
    /// Print a completion script for a shell: `nexo completions bash`.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print nexo's manual page (roff): `nexo man | man -l -`.
    Man,
    /// The client the official MCP conformance suite drives: connects to URL,
    /// lists and calls its tools, answers elicitation with schema defaults.
    #[command(hide = true)]
    ConformanceClient(ConformanceArgs),
}

/// `nexo --version`: the version, the commit and the profile it was built
/// from (crates/cli/build.rs), so that a report names its build exactly.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NEXO_GIT_COMMIT"),
    ", profile ",
    env!("NEXO_BUILD_PROFILE"),
    ")"
);

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  mkdir -p ~/.local/share/bash-completion/completions
  nexo completions bash > ~/.local/share/bash-completion/completions/nexo
  mkdir -p ~/.zfunc && nexo completions zsh > ~/.zfunc/_nexo   # with fpath+=~/.zfunc in ~/.zshrc
  mkdir -p ~/.config/fish/completions
  nexo completions fish > ~/.config/fish/completions/nexo.fish";

#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The scenario server's URL (the suite appends it).
    pub url: String,
    /// Seconds to wait for each exchange.
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[arg(help = server_help())]
    pub server: String,
    /// Serve Streamable HTTP at /mcp instead of stdio. ADDR is HOST:PORT,
    /// HOST, or PORT; without a port, $PORT or 8000; without a host, 127.0.0.1.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = "",
        value_parser = not_a_server_name
    )]
    pub http: Option<String>,
    #[command(flatten)]
    pub hosting: HostingArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The bundled servers' own options, made from their description in
    /// nexo-bundled.
    #[command(flatten)]
    pub options: ServerOptionArgs,
}

/// How a server is hosted, whatever it serves: the flags `nexo serve` and
/// `nexo gateway` share.
#[derive(Debug, Args)]
pub struct HostingArgs {
    /// Append one JSON line per tool call to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Append one JSON line per message, in and out, on every connection to
    /// FILE (read it with `nexo trace summary FILE`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Leave the messages themselves out of the trace (methods, ids, sizes,
    /// times and error codes are kept).
    #[arg(long, requires = "trace")]
    pub trace_redact: bool,
    /// Largest request body (HTTP) or message line (stdio) accepted, in bytes.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = nexo_serve::DEFAULT_MAX_BODY,
        value_parser = positive_bytes
    )]
    pub max_body: usize,
    /// A browser origin allowed to call the server (repeatable; `*` for any).
    /// Default: loopback origins only.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// A Host name the server answers (repeatable). Default: loopback names
    /// when listening on loopback, any name otherwise.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Serve HTTPS with this PEM certificate chain (the server's certificate
    /// first). HTTP/2 and HTTP/1.1 are offered; both files are read again
    /// when either changes. With SSLKEYLOGFILE set, the TLS secrets are
    /// written there (for Wireshark).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub auth: AuthArgs,
}

/// Who may call over HTTP: the flags `nexo serve` and `nexo gateway` share.
#[derive(Debug, Args)]
#[command(next_help_heading = "Who may call (HTTP)")]
pub struct AuthArgs {
    /// Accept the bearer tokens whose SHA-256 digests FILE lists, one a
    /// line, optionally followed by the caller's name; `#` comments and
    /// blank lines allowed. Add a token with
    /// `printf %s "$TOKEN" | sha256sum >> FILE`.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Be an OAuth 2.1 resource server: accept JWTs this authorization
    /// server issued (its keys found from its metadata, cached, and fetched
    /// again for a key it has not seen).
    #[arg(long, value_name = "URL", requires = "auth_audience")]
    pub auth_issuer: Option<String>,
    /// This server's canonical URI (`https://HOST/mcp`), which a token's
    /// `aud` must hold.
    #[arg(long, value_name = "URI", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// The scopes tokens need, a JSON file:
    /// `{"requiredScopes": ["mcp"], "toolScopes": {"encode": ["morse:write"]}}`
    /// (tool names may be globs).
    #[arg(long, value_name = "FILE", requires = "auth_issuer")]
    pub auth_scopes: Option<PathBuf>,
    /// Listen on a non-loopback address without authentication, on purpose
    /// (the gateway's `"auth": "none"`).
    #[arg(long, conflicts_with_all = ["token_file", "auth_issuer"])]
    pub no_auth: bool,
}

impl AuthArgs {
    pub fn flags(&self) -> nexo_serve::auth::AuthFlags {
        nexo_serve::auth::AuthFlags {
            token_file: self.token_file.clone(),
            issuer: self.auth_issuer.clone(),
            audience: self.auth_audience.clone(),
            scopes: self.auth_scopes.clone(),
            none: self.no_auth,
        }
    }
}

/// `nexo serve`'s rate limits over HTTP.
#[derive(Debug, Args)]
#[command(next_help_heading = "Rate limits (HTTP)")]
pub struct LimitArgs {
    /// Calls (`tools/call`, `prompts/get`, `resources/read`) each caller
    /// may make: `N/s`, `N/min` or `N/h`. A caller is its token's subject,
    /// or its address without authentication. Past it: 429 with
    /// Retry-After.
    #[arg(long, value_name = "RATE")]
    pub rate_limit: Option<String>,
    /// Calls one tool may take from every caller together, as
    /// `TOOL=RATE` (`encode=5/s`; TOOL may be a glob); repeatable.
    #[arg(long, value_name = "TOOL=RATE")]
    pub tool_rate_limit: Vec<String>,
    /// How many calls may come at once within a rate [default: its N].
    #[arg(long, value_name = "N")]
    pub rate_burst: Option<std::num::NonZeroU32>,
}

impl HostingArgs {
    /// The hosting of the server named `server_name` in its logs; `limits`
    /// for `nexo serve`. Reads the token or scopes file the flags name.
    pub fn into_options(
        self,
        server_name: &str,
        limits: Option<&LimitArgs>,
    ) -> Result<nexo_serve::ServeOptions, nexo_serve::ServeError> {
        let auth = self
            .auth
            .flags()
            .settings()
            .map_err(nexo_serve::ServeError::Access)?;
        let limits = match limits {
            Some(limits) => nexo_serve::limits::LimitSettings::from_flags(
                limits.rate_limit.as_deref(),
                &limits.tool_rate_limit,
                limits.rate_burst,
            )
            .map_err(nexo_serve::ServeError::Access)?,
            None => nexo_serve::limits::LimitSettings::default(),
        };
        Ok(nexo_serve::ServeOptions {
            server_name: server_name.to_owned(),
            tools: Vec::new(),
            max_body: self.max_body,
            log: self.log,
            trace: self.trace,
            trace_redact: self.trace_redact,
            allow_origins: self.allow_origins,
            allow_hosts: self.allow_hosts,
            tls: self
                .tls_cert
                .zip(self.tls_key)
                .map(|(cert, key)| nexo_serve::TlsFiles { cert, key }),
            auth,
            limits,
            http: nexo_client::http::client_builder(ISSUER_FETCH_CONNECT)
                .build()
                .map_err(|error| {
                    nexo_serve::ServeError::Access(format!(
                        "cannot build the HTTP client that fetches the issuer's keys: {error}"
                    ))
                })?,
        })
    }
}

/// How long `nexo serve` gives a connection to an OAuth issuer.
const ISSUER_FETCH_CONNECT: Duration = Duration::from_secs(5);

/// `--startup-timeout`, of every command that starts stdio servers.
#[derive(Debug, Args)]
pub struct StartupArgs {
    /// Seconds a stdio server has to start and answer its handshake
    /// (`npx -y` and `uvx` download the server on a cold cache); a
    /// server's own `startupTimeout` in the configuration wins.
    #[arg(long = "startup-timeout", value_name = "SECONDS", default_value = "60", value_parser = positive_seconds)]
    pub seconds: Duration,
}

/// Reads every `--timeout`: a positive number of seconds, fractions allowed,
/// no longer than a [`Duration`] holds.
pub(crate) fn positive_seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| "not a positive number of seconds (for example `2.5`)".to_owned())
}

/// Reads `--max-body`: a positive number of bytes (0 would refuse every
/// message, each with a message about its size rather than the option).
fn positive_bytes(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|bytes| *bytes > 0)
        .ok_or_else(|| "not a positive number of bytes (for example `4194304`)".to_owned())
}

/// Reads `--http`'s optional address, refusing a server's name, which is
/// what `nexo serve --http morse` means to say.
fn not_a_server_name(text: &str) -> Result<String, String> {
    match text.parse::<nexo_bundled::Bundled>() {
        Ok(server) => Err(format!(
            "`{server}` is a server, not an address; write `nexo serve {server} --http [ADDR]`"
        )),
        Err(_) => Ok(text.to_owned()),
    }
}

/// Reads `--builtin`: the name of a bundled server.
fn bundled_name(text: &str) -> Result<nexo_bundled::Bundled, String> {
    text.parse()
        .map_err(|error: nexo_bundled::UnknownServer| error.to_string())
}

/// Reads a value that may hold a credential into a type that never prints
/// it; what it must look like is checked later, by errors that do not
/// quote it (clap's own would).
fn secret(text: &str) -> Result<Secret, Infallible> {
    Ok(Secret::new(text))
}

/// The help of `nexo serve <SERVER>`, naming every bundled server.
fn server_help() -> String {
    let names: Vec<&str> = nexo_bundled::Bundled::ALL
        .iter()
        .map(|bundled| bundled.name())
        .collect();
    format!("The server to run: {}", names.join(", "))
}

/// Which server to talk to: exactly one of `--url`, `--stdio`, `--builtin`
/// and `--server`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["url", "stdio", "builtin", "server"])))]
pub struct TargetArgs {
    /// The server's URL, e.g. http://127.0.0.1:8000/mcp (Streamable HTTP) or
    /// http://127.0.0.1:8000/sse (the legacy HTTP+SSE transport).
    #[arg(
        long,
        value_name = "URL",
        value_parser = |text: &str| Ok::<_, Infallible>(TargetUrl::new(text))
    )]
    pub url: Option<TargetUrl>,
    /// A command that speaks MCP on stdin/stdout, quoted as one argument.
    #[arg(long, value_name = "COMMAND")]
    pub stdio: Option<String>,
    /// A bundled server run inside nexo, with no child process and no
    /// socket (`files` reads the working directory).
    #[arg(long, value_name = "NAME", value_parser = bundled_name)]
    pub builtin: Option<nexo_bundled::Bundled>,
    /// A server of the configuration file, by its name there.
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// The configuration file for --server [default: ./.mcp.json, else
    /// ~/.config/nexo/config.json].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// HTTP transport for --url.
    #[arg(long, value_enum, default_value_t = TransportArg::Auto, conflicts_with_all = ["stdio", "builtin", "server"])]
    pub transport: TransportArg,
    /// Extra HTTP header for --url, 'Name: value' (repeatable).
    #[arg(
        long = "header",
        value_name = "'NAME: VALUE'",
        conflicts_with_all = ["stdio", "builtin", "server"],
        value_parser = secret
    )]
    pub headers: Vec<Secret>,
    /// Environment variable for the --stdio child, KEY=VALUE (repeatable).
    #[arg(short = 'e', value_name = "KEY=VALUE", conflicts_with_all = ["url", "builtin", "server"], value_parser = secret)]
    pub env: Vec<Secret>,
    /// OAuth client id registered with the server's authorization server
    /// (default: register dynamically, or a Client ID Metadata Document).
    #[arg(long, value_name = "ID", conflicts_with = "stdio")]
    pub client_id: Option<String>,
    /// The secret of --client-id, for confidential clients.
    #[arg(long, value_name = "SECRET", requires = "client_id", value_parser = secret)]
    pub client_secret: Option<Secret>,
    /// HTTPS URL of a Client ID Metadata Document describing this client,
    /// used as the client id where the authorization server supports it.
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    pub client_metadata_url: Option<String>,
    /// Seconds to wait for each exchange (a `--stdio` server's start:
    /// `--startup-timeout`).
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub startup: StartupArgs,
    /// Protocol era: auto tries 2026-07-28 `server/discover` then `initialize`.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub protocol: EraArg,
    /// Print the exact MCP result object as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show what a --stdio server writes to its stderr (its logs); without
    /// this only its last lines are shown, when it fails.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TransportArg {
    /// Streamable HTTP; if the server refuses the first POST with 400, 404
    /// or 405, the legacy HTTP+SSE transport.
    Auto,
    /// Streamable HTTP only.
    Http,
    /// The legacy HTTP+SSE transport of 2024-11-05 only.
    Sse,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EraArg {
    Auto,
    /// 2025-11-25 and older: `initialize` and sessions.
    #[value(name = "2025")]
    Initialize,
    /// 2026-07-28: stateless, `server/discover`.
    #[value(name = "2026")]
    Discover,
}

/// Where the messages of a client command are traced.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Append one JSON line per message exchanged to FILE (`nexo trace
    /// summary FILE` analyses it) [default: the configuration's "trace"].
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Leave the messages themselves out of the trace (methods, ids, sizes,
    /// times and error codes are kept).
    #[arg(long, requires = "trace")]
    pub trace_redact: bool,
}

/// `nexo doctor [TARGET] [--json]`: without a target, every server of the
/// configuration.
#[derive(Debug, Args)]
#[command(mut_group("target", |group| group.required(false)))]
pub struct DoctorArgs {
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `nexo logout --url URL | --server NAME`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["url", "server"])))]
pub struct LogoutArgs {
    /// The server's URL, as it was given when signing in.
    #[arg(
        long,
        value_name = "URL",
        value_parser = |text: &str| Ok::<_, Infallible>(TargetUrl::new(text))
    )]
    pub url: Option<TargetUrl>,
    /// A server of the configuration file, by its name there.
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// The configuration file for --server [default: ./.mcp.json, else
    /// ~/.config/nexo/config.json].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The client secret, for a confidential client registered out of band
    /// (`--client-id` when signing in); a public client needs none.
    #[arg(long, value_name = "SECRET", value_parser = secret)]
    pub client_secret: Option<Secret>,
    /// Seconds to wait for the authorization server.
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
    /// Print what was revoked and deleted as JSON.
    #[arg(long)]
    pub json: bool,
}

const LOGOUT_EXAMPLES: &str = "\
Examples:
  nexo logout --url https://mcp.example.com/mcp
  nexo logout --server github --json

The tokens are deleted whatever the authorization server says. Exit status:
0 when they were revoked there, or the server offers no revocation (they
stay valid there until they expire, and nexo says so); 4 when it offers
revocation and could not be reached or refused it.";

#[derive(Debug, Args)]
pub struct ServersArgs {
    /// The configuration file [default: ./.mcp.json, else
    /// ~/.config/nexo/config.json, else the bundled servers in-process].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Allow a server of a project's `.mcp.json` to start (repeatable);
    /// asked again when its entry changes.
    #[arg(long, value_name = "NAME")]
    pub allow: Vec<String>,
    /// Seconds each URL server has to connect (a command's start:
    /// `--startup-timeout`).
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub startup: StartupArgs,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Print the states as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Answer PROMPT and exit (no terminal needed; a prompt piped on stdin
    /// does the same). Without it, on a terminal, the conversation goes on.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// The configuration file [default: ./.mcp.json, else
    /// ~/.config/nexo/config.json, else the bundled servers in-process].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run the tool calls the policy would ask about (never one it denies).
    /// It never approves a tool whose definition changed.
    #[arg(long)]
    pub yes: bool,
    /// Offer, and pin, the tools and skills whose definitions changed (or
    /// that are new) since you approved their server's: review the changes
    /// shown first.
    #[arg(long)]
    pub approve_tool_changes: bool,
    #[command(flatten)]
    pub llm: ModelArgs,
    /// Seconds each URL server has to connect (a command's start:
    /// `--startup-timeout`), and each tool call without progress.
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub startup: StartupArgs,
    /// Go on with a saved conversation: ID, or without one the latest of
    /// this directory (`/resume` in the chat lists them).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Append the conversation to FILE, one JSON line per message, tool
    /// call and approval [default: chat_log.jsonl in $XDG_STATE_HOME/nexo;
    /// `off` for none].
    #[arg(long, value_name = "FILE")]
    pub chat_log: Option<PathBuf>,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Print the turn as JSON (the answer, every tool call and its result,
    /// usage) instead of the answer as it comes.
    #[arg(long)]
    pub json: bool,
}

/// Which model answers, for the chat and the web page's chat.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The provider's API [default: from the environment, else a local Ollama].
    #[arg(long, value_name = "PROVIDER", value_parser = provider())]
    pub provider: Option<ProviderKind>,
    /// The model [default: the provider's usual one].
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible server: Ollama, vLLM,
    /// llama.cpp, LM Studio) [default: ANTHROPIC_BASE_URL or OPENAI_BASE_URL].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The most model steps (answers that call tools) in a turn
    /// [default: the configuration's `chat.maxSteps`, else 25].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_steps: Option<u32>,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// The configuration file [default: ./.mcp.json, else
    /// ~/.config/nexo/config.json, else the bundled servers in-process].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The port on 127.0.0.1 [default: any free port]. The page never listens
    /// on another address.
    #[arg(long, value_name = "N", default_value = "0", hide_default_value = true)]
    pub port: u16,
    /// Print the page's URL without opening it in the default browser.
    #[arg(long)]
    pub no_open: bool,
    #[command(flatten)]
    pub llm: ModelArgs,
    /// Seconds each URL server has to connect (a command's start:
    /// `--startup-timeout`), and each tool call without progress.
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub startup: StartupArgs,
}

const UI_EXAMPLES: &str = "\
Examples:
  nexo ui                          the bundled servers, the page opened in your browser
  nexo ui --config .mcp.json --no-open
  nexo ui --port 7777

The page listens on 127.0.0.1 only. The URL printed carries a one-time token:
open it as printed (the token becomes a cookie of that browser); the page
refuses any other site, and any request without the token. Ctrl-C stops it.";

/// Reads `--provider`: the name of an LLM API nexo-client knows, the
/// possible values listed (with what each reads) in help and errors.
fn provider() -> impl TypedValueParser<Value = ProviderKind> {
    let values = ProviderKind::ALL.iter().map(|kind| {
        PossibleValue::new(kind.name()).help(match kind {
            ProviderKind::Anthropic => {
                "The Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)"
            }
            ProviderKind::OpenAi => {
                "OpenAI Chat Completions and the servers that speak it (OPENAI_API_KEY, \
                 OPENAI_BASE_URL)"
            }
        })
    });
    PossibleValuesParser::new(values).try_map(|name| name.parse::<ProviderKind>())
}

const CHAT_EXAMPLES: &str = "\
Examples:
  nexo                                   the conversation, on a terminal (/help inside)
  nexo chat -p 'what is sos in Morse code?'
  ANTHROPIC_API_KEY=... nexo chat -p 'check the mail policies of example.com'
  nexo chat --provider openai --base-url http://127.0.0.1:11434/v1 --model qwen3 -p 'hi'
  echo 'add a song' | nexo chat --config .mcp.json --yes --json

Tools annotated read-only on servers you configured run without asking; on a
terminal any other call is asked about (yes, no, always), with -p it is refused
unless --yes or a rule in the configuration's \"chat\": {\"approvals\": ...} allows it.";

const SERVERS_EXAMPLES: &str = "\
Examples:
  nexo servers
  nexo servers --config ~/.config/Claude/claude_desktop_config.json --json
  nexo servers --allow dns-lab

With no configuration file, the bundled dns, morse, utils, files (the
working directory) and music servers run in-process. Servers of a project's
.mcp.json start only once allowed with --allow.";

/// `nexo gateway --config FILE`: serving the gateway; or one of its
/// offline checks.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    #[command(subcommand)]
    pub command: Option<GatewayCommand>,
    /// The configuration: its `mcpServers` (or `servers`) are the upstreams,
    /// its `gateway` object the policy, the audit log and virtual servers.
    /// Given explicitly, its servers start without a consent prompt.
    #[arg(long, value_name = "FILE", required = true)]
    pub config: Option<PathBuf>,
    /// Where to listen: HOST:PORT, HOST, or PORT; without a port, $PORT or
    /// 8000; without a host, 127.0.0.1.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Seconds each URL upstream has to connect (a command's start:
    /// `--startup-timeout`), and each call to answer (a
    /// server's own `timeout` in the configuration wins).
    #[arg(long, value_name = "SECONDS", default_value = "15", value_parser = positive_seconds)]
    pub timeout: Duration,
    #[command(flatten)]
    pub startup: StartupArgs,
    #[command(flatten)]
    pub hosting: HostingArgs,
}

const GATEWAY_EXAMPLES: &str = "\
Examples:
  nexo gateway --config examples/gateway/config.json
  nexo gateway --config gateway.json --http 0.0.0.0:8443 --allow-host gw.example.com
  nexo call --url http://127.0.0.1:8000/mcp morse__echo texto=hola

Every server of the file is an upstream; its tools and prompts go by
`server__name`, its resources by `nexo://server/URI`. Virtual servers are
served at /mcp/NAME. The policy file is read again when it changes.";

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// One tool to describe in full: its description, its arguments
    /// (required ones first) and its output schema.
    pub name: Option<String>,
}

/// The exit statuses (DESIGN.md; the MCP Inspector CLI's, plus 6).
const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  bad usage, or an unexpected error (a peer breaking the protocol included)
  3  the server requires authorization (401/403)
  4  the server could not be reached (refused, DNS, timeout, child failed)
  5  the tool or server reported an error (isError, JSON-RPC error, unknown tool)
  6  the call did nothing: the server asks for a confirmation first
  7  `nexo bench`: an --assert failed
  8  `nexo check`: findings at or above --fail-on
On failure the last line on stderr is JSON: {\"error\":{\"code\",\"message\",\"hint\"}}";

/// The examples of a client command, then the exit statuses they share.
macro_rules! client_help {
    ($examples:literal) => {
        concat!(
            "Examples:\n",
            $examples,
            "\n\nExit status: 0 success, 1 bad usage, 3 authorization required, 4 unreachable,\n",
            "5 the server reported an error; the last line on stderr is then one JSON object."
        )
    };
}

const RESOURCES_EXAMPLES: &str = client_help!(
    "  nexo resources --stdio 'nexo serve everything'\n  \
     nexo resources --url http://127.0.0.1:8000/mcp --json"
);
const READ_EXAMPLES: &str = client_help!(
    "  nexo read --stdio 'nexo serve everything' test://static-text\n  \
     nexo read --url http://127.0.0.1:8000/mcp file:///README.md --json"
);
const PROMPTS_EXAMPLES: &str = client_help!(
    "  nexo prompts --stdio 'nexo serve everything'\n  \
     nexo prompts --url http://127.0.0.1:8000/mcp --json"
);
const PROMPT_EXAMPLES: &str = client_help!(
    "  nexo prompt --stdio 'nexo serve everything' test_prompt_with_arguments arg1=a arg2=b\n  \
     nexo prompt --url http://127.0.0.1:8000/mcp summary topic=dns --json"
);
const DISCOVER_EXAMPLES: &str = client_help!(
    "  nexo discover --stdio 'nexo serve morse'\n  \
     nexo discover --url http://127.0.0.1:8000/mcp --protocol 2025 --json"
);

const TOOLS_EXAMPLES: &str = "\
Examples:
  nexo tools --stdio 'nexo serve morse'
  nexo tools --stdio 'nexo serve morse' morse
  nexo tools --url http://127.0.0.1:8000/mcp --json

Exit status: 0 success, 1 bad usage, 3 authorization required, 4 unreachable,
5 the server reported an error (an unknown tool included); the last line on
stderr is then one JSON object.";

const CALL_EXAMPLES: &str = "\
Examples:
  nexo call --stdio 'nexo serve morse' morse texto='SOS prueba'
  nexo call --stdio 'nexo serve utils' calc expression='2 * (3 + 4)'
  nexo call --url http://127.0.0.1:8000/mcp morse '{\"texto\": \"hola\"}' --json
  nexo call --stdio 'nexo serve music' add_song @song.json

Exit status: 0 success, 1 bad usage, 3 authorization required, 4 unreachable,
5 the tool or server reported an error, 6 the call did nothing because the
server asks for a confirmation (call again as the hint says); the last line
on stderr is then one JSON object.";

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The tool's name.
    pub tool: String,
    /// Arguments: key=value pairs (coerced by the tool's schema), one JSON
    /// object, `@FILE` (a JSON object in FILE) or `-` (one on stdin).
    pub arguments: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The resource's URI.
    pub uri: String,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The prompt's name.
    pub name: String,
    /// Arguments as key=value pairs.
    pub arguments: Vec<String>,
}

/// `nexo check TARGET [--json] [--sarif FILE] [--fail-on LEVEL] [--only G,..] [--skip G,..]`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Also write the findings to FILE as SARIF 2.1.0, for code-scanning tools.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Exit 8 when a finding at or above LEVEL exists: info, warning, error
    /// or critical.
    #[arg(long, value_name = "LEVEL", default_value = "error", value_parser = severity)]
    pub fail_on: nexo_check::Severity,
    /// Run only these probe groups, comma-separated: stdio, http, protocol,
    /// errors, resources, capabilities, definitions, security, portability,
    /// latency, auth.
    #[arg(long, value_name = "GROUPS", value_delimiter = ',', value_parser = group, conflicts_with = "skip")]
    pub only: Vec<nexo_check::Group>,
    /// Leave these probe groups out, comma-separated.
    #[arg(long, value_name = "GROUPS", value_delimiter = ',', value_parser = group)]
    pub skip: Vec<nexo_check::Group>,
}

fn severity(text: &str) -> Result<nexo_check::Severity, String> {
    text.parse()
}

fn group(text: &str) -> Result<nexo_check::Group, String> {
    text.parse()
}

/// `nexo bench TARGET TOOL [ARGS] [load options]`, or `nexo bench compare`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The tool to call (with `--method resources/read`, the URI; with
    /// `--method prompts/get`, the prompt).
    pub tool: Option<String>,
    /// Its arguments as for `nexo call`: key=value pairs (coerced by the
    /// tool's schema) or one JSON object; `{{seq}}`, `{{worker}}`,
    /// `{{random}}` and `{{random:N}}` (from `--seed`) are filled for each
    /// request.
    pub arguments: Vec<String>,
    #[command(flatten)]
    pub load: BenchLoad,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Each figure of B against A (`--json` results), with a 95%
    /// confidence interval when both hold several repetitions (`--reps`).
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// Print the deltas as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How `nexo bench` loads the server and what it reports.
#[derive(Debug, Args)]
#[command(next_help_heading = "Load")]
pub struct BenchLoad {
    /// The request to send instead of a tool call: ping, tools/list,
    /// resources/read (URI as TOOL), prompts/get (name as TOOL), or any
    /// method with `--params`.
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,
    /// The params of `--method`, as one JSON object.
    #[arg(long, value_name = "JSON", requires = "method")]
    pub params: Option<String>,
    /// A mix of requests and its load in a TOML file (see the README).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tool", "method"])]
    pub scenario: Option<PathBuf>,
    /// Closed loop: N requests at a time, each sent when the last is
    /// answered [default: 1].
    #[arg(short = 'c', long, value_name = "N", conflicts_with = "rate")]
    pub concurrency: Option<usize>,
    /// Open loop: start R requests a second whatever the server does
    /// (`500`, `500/s`); latency is measured from when each was due.
    #[arg(long, value_name = "R/s", value_parser = rate)]
    pub rate: Option<f64>,
    /// Open loop arrivals: evenly spaced, or a Poisson process from `--seed`.
    #[arg(long, value_enum, default_value_t = ArrivalsArg::Uniform, requires = "rate")]
    pub arrivals: ArrivalsArg,
    /// The seed of Poisson arrivals and of `{{random}}` values: the same
    /// seed, the same arrivals and arguments.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Open loop: requests queued or in flight at most; a start due beyond
    /// this is dropped and counted.
    #[arg(long, value_name = "N", default_value_t = nexo_bench::plan::DEFAULT_MAX_OUTSTANDING)]
    pub max_outstanding: usize,
    /// HTTP connections, stdio server processes or in-process sessions
    /// [default: the concurrency for HTTP in closed loop, 8 for HTTP in
    /// open loop, else 1].
    #[arg(long, value_name = "N")]
    pub connections: Option<usize>,
    /// How long the measured run lasts (`10s`, `500ms`, `2m`) [default:
    /// 10s, or until `--requests`].
    #[arg(short = 'd', long, value_name = "TIME", value_parser = duration)]
    pub duration: Option<Duration>,
    /// Stop after N measured requests.
    #[arg(short = 'n', long, value_name = "N")]
    pub requests: Option<u64>,
    /// Load sent and not measured before the run.
    #[arg(long, value_name = "TIME", value_parser = duration, default_value = "0s")]
    pub warmup: Duration,
    /// Measured runs, one after the other (their spread gives `compare` its
    /// confidence intervals).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub reps: u32,
    /// 2025-era sessions: one for all connections, one per connection, or
    /// a new one for every request (HTTP; `initialize` timed on its own).
    #[arg(long, value_enum, default_value_t = SessionsArg::PerConnection)]
    pub sessions: SessionsArg,
    /// Ask for Streamable HTTP answers as SSE streams (`text/event-stream,
    /// application/json;q=0`); without it both types are accepted and the
    /// server picks. The time to the first event is reported.
    #[arg(long)]
    pub sse: bool,
    /// Each answer's result must hold VALUE at the JSON pointer (JSON, else
    /// a string), e.g. `/structuredContent/result=SOS` (repeatable).
    #[arg(long, value_name = "POINTER=VALUE")]
    pub expect: Vec<String>,
    /// Each answer's result, as JSON text, must match REGEX.
    #[arg(long, value_name = "REGEX")]
    pub expect_regex: Option<String>,
    /// Each answer's structuredContent must match the output schema the
    /// tool lists in tools/list.
    #[arg(long)]
    pub expect_schema: bool,
    /// Fail the run (exit 7) unless a figure holds: 'p99<5ms', 'p95>1ms',
    /// 'errors==0', 'rps>1000', 'cpu_per_call<200us' (repeatable;
    /// latencies are response times, `service.p99` the service time).
    #[arg(long = "assert", value_name = "EXPR")]
    pub assertions: Vec<String>,
    /// Find the server's ceiling: open-loop steps from `--rate` (default
    /// 100/s), each `--ceiling-factor` times faster and `--duration` long
    /// (default 2s), until an objective breaks ('p99<10ms',
    /// 'error_rate<1%'; repeatable) or a start is dropped.
    #[arg(long, value_name = "EXPR", conflicts_with_all = ["concurrency", "reps", "requests"])]
    pub find_ceiling: Vec<String>,
    /// How much faster each find-ceiling step is than the last.
    #[arg(long, value_name = "X", default_value_t = 1.5)]
    pub ceiling_factor: f64,
    /// Write one CSV row a second to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a latency-by-percentile plot to FILE (SVG).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Sample this process's tree for CPU and memory (a server you started;
    /// with `--stdio`, bench samples the child it starts).
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// Send load to an address that is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// Lift the caps on a run's time (10 minutes) and count (10 million).
    #[arg(long)]
    pub no_limits: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalsArg {
    Uniform,
    Poisson,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SessionsArg {
    Shared,
    PerConnection,
    Churn,
}

/// Reads `--rate`: a positive number, `/s` allowed.
fn rate(text: &str) -> Result<f64, String> {
    text.trim_end_matches("/s")
        .parse::<f64>()
        .ok()
        .filter(|rate| *rate > 0.0 && rate.is_finite())
        .ok_or_else(|| "not a rate (for example `500/s`)".to_owned())
}

/// Reads a time: `500ms`, `10s`, `2m`, or seconds.
fn duration(text: &str) -> Result<Duration, String> {
    nexo_bench::scenario::duration(text)
        .ok_or_else(|| "not a time (for example `10s`, `500ms` or `2m`)".to_owned())
}

const DOCTOR_EXAMPLES: &str = "\
Examples:
  nexo doctor --url https://mcp.example.com/mcp
  nexo doctor --stdio 'npx -y @modelcontextprotocol/server-everything' --startup-timeout 120
  nexo doctor --server github
  nexo doctor --config .mcp.json --json

Steps: resolve, connect, tls, http, cors, authorization (URL); command,
start (command); era_2026, era_2025, tools, ping (every target). A step
runs only when those it stands on passed. The doctor never signs in: for a
server behind OAuth it reports the metadata, and `nexo tools` on the same
target signs in. --json prints one document per target (`servers` for a
whole configuration). Exit status: 0 when no step failed (warnings
included), else that of the first failure (3 authorization, 4 unreachable,
1 anything else).";

const CHECK_EXAMPLES: &str = "\
Examples:
  nexo check --stdio 'python server.py'
  nexo check --url http://127.0.0.1:8000/mcp --json
  nexo check --stdio 'npx -y my-server' --sarif check.sarif --fail-on warning
  nexo check --builtin morse --only stdio,errors,protocol
  nexo check --url http://127.0.0.1:8000/mcp --skip latency,http

--json prints the report as one `nexo-check/1` document. A bundled server
(--builtin, or a builtin of the configuration) is checked as the child
`nexo serve NAME`, so that its wire can be probed. Tool definition sizes
are approximate tokens (JSON bytes / 4). --trace, --protocol, -v and the
OAuth flags are not used by `nexo check`: it writes its own raw JSON-RPC and
begins a 2025-11-25 session.

Exit status: 0 no finding at or above --fail-on (default error), 1 bad
usage, 4 the server could not be started or reached, 8 findings at or above
--fail-on; the last line on stderr is then one JSON object.";

const BENCH_EXAMPLES: &str = "\
Examples:
  nexo bench --stdio 'nexo serve morse' morse texto=SOS -n 1000
  nexo bench --url http://127.0.0.1:8000/mcp echo texto=hola -c 8 -d 10s
  nexo bench --url http://127.0.0.1:8000/mcp echo texto=hola --rate 2000/s -d 10s --assert 'p99<5ms'
  nexo bench --builtin morse --method tools/list -n 10000 --json > a.json
  nexo bench --url http://127.0.0.1:8000/mcp --scenario mix.toml --plot mix.svg
  nexo bench --url http://127.0.0.1:8000/sse --transport sse echo texto=hola -c 4
  nexo bench compare a.json b.json

The target is loopback only unless --allow-remote; a run is capped at 10
minutes and 10 million requests unless --no-limits. --protocol 2026 sends
2026-07-28 stateless requests; auto and 2025 begin 2025-era sessions.

Exit status: 0 the run finished (errors are counted, not fatal: assert
'errors==0' to fail on them), 1 bad usage, 3 authorization required, 4 the
server could not be reached or started, 5 the sample request sent before the
run failed (a tool error, a JSON-RPC error or an unmet --expect), 7 an
--assert failed; the last line on stderr is then one JSON object.";

/// `nexo trace summary` and `nexo trace flow`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Counts by kind and method, latency per method (p50, p95, max),
    /// errors, unanswered requests and answers to no request, bytes each way.
    #[command(after_help = TRACE_SUMMARY_EXAMPLES)]
    Summary(TraceSummaryArgs),
    /// The exchange as a sequence diagram: requests, responses,
    /// notifications and errors drawn apart, the lifecycle boxed.
    #[command(after_help = TRACE_FLOW_EXAMPLES)]
    Flow(TraceFlowArgs),
}

#[derive(Debug, Args)]
pub struct TraceSummaryArgs {
    /// The trace file (JSON lines, as `--trace FILE` writes them).
    pub file: PathBuf,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TraceFlowArgs {
    /// The trace file (JSON lines, as `--trace FILE` writes them).
    pub file: PathBuf,
    /// How to draw it: aligned text, or the source of a Mermaid or PlantUML
    /// diagram.
    #[arg(long, value_enum, default_value_t = FlowFormatArg::Text)]
    pub format: FlowFormatArg,
    /// Draw at most N messages, the first ones; 0 draws them all.
    #[arg(long, value_name = "N", default_value_t = nexo_trace::flow::DEFAULT_LIMIT)]
    pub limit: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FlowFormatArg {
    Text,
    Mermaid,
    Plantuml,
}

const TRACE_SUMMARY_EXAMPLES: &str = "\
Examples:
  nexo serve morse --trace trace.jsonl        (then use it from a client)
  nexo trace summary trace.jsonl
  nexo trace summary trace.jsonl --json | jq '.methods'

Exit status: 0 success, 1 the file cannot be read or is no trace; the last
line on stderr is then one JSON object.";

const TRACE_FLOW_EXAMPLES: &str = "\
Examples:
  nexo trace flow trace.jsonl
  nexo trace flow trace.jsonl --format mermaid > flow.mmd
  nexo trace flow trace.jsonl --format plantuml --limit 0 > flow.puml

Exit status: 0 success, 1 the file cannot be read or is no trace; the last
line on stderr is then one JSON object.";

/// `nexo gateway check-policy` and `nexo gateway verify-audit`.
#[derive(Debug, Subcommand)]
pub enum GatewayCommand {
    /// Validate a policy file; with `--request`, explain how it decides that
    /// request: each rule in order, matched or skipped and why, and the
    /// decision.
    #[command(after_help = GATEWAY_CHECK_EXAMPLES)]
    CheckPolicy(CheckPolicyArgs),
    /// Verify an audit log's hash chain: every edited, removed, inserted or
    /// moved line is reported with its line number.
    #[command(after_help = GATEWAY_VERIFY_EXAMPLES)]
    VerifyAudit(VerifyAuditArgs),
}

#[derive(Debug, Args)]
pub struct CheckPolicyArgs {
    /// The policy file: TOML, or YAML (`.yaml`, `.yml`) or JSON (`.json`) with the same fields.
    pub file: PathBuf,
    /// A sample request as JSON: `{"identity": {...}, "server", "method",
    /// "tool", "arguments"}`, or a JSON-RPC `tools/call` message whose tool
    /// is named `server__tool`.
    #[arg(long, value_name = "JSON")]
    pub request: Option<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyAuditArgs {
    /// The audit log (JSON lines, as the gateway writes them).
    pub file: PathBuf,
    /// The hash of the last line recorded earlier (the `head` a previous
    /// run printed): proves that the end of the log was not changed or cut.
    #[arg(long, value_name = "SHA256")]
    pub head: Option<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

const GATEWAY_CHECK_EXAMPLES: &str = "\
Examples:
  nexo gateway check-policy examples/gateway/policy.toml
  nexo gateway check-policy examples/gateway/policy.toml \\
    --request '{\"server\": \"files\", \"tool\": \"read_file\", \"arguments\": {\"path\": \"/etc/passwd\"}}'
  nexo gateway check-policy policy.toml --json --request \"$(cat request.json)\" | jq .explanation

Exit status: 0 the policy is valid (whatever it decides for the request),
1 the file cannot be read, the policy is not valid or the request cannot be
read; the last line on stderr is then one JSON object.";

const GATEWAY_VERIFY_EXAMPLES: &str = "\
Examples:
  nexo gateway verify-audit audit.jsonl
  nexo gateway verify-audit audit.jsonl --head 3f1c...e9  (the head printed last time)
  nexo gateway verify-audit audit.jsonl --json | jq '.problems'

Exit status: 0 the chain is intact, 1 the log cannot be read or the chain is
broken (the report still goes to stdout; the last line on stderr is then one
JSON object with the code `audit_broken`).";

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    #[test]
    fn timeouts_are_positive_seconds_a_duration_holds() {
        assert_eq!(positive_seconds("15"), Ok(Duration::from_secs(15)));
        assert_eq!(positive_seconds("2.5"), Ok(Duration::from_millis(2500)));
        for refused in ["0", "-1", "1e-12", "NaN", "inf", "1e300", "soon", ""] {
            assert!(positive_seconds(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn every_timeout_flag_is_read_by_the_same_parser() {
        let commands: [&[&str]; 3] = [
            &[
                "nexo",
                "tools",
                "--url",
                "http://127.0.0.1:9/mcp",
                "--timeout",
            ],
            &[
                "nexo",
                "conformance-client",
                "http://127.0.0.1:9/mcp",
                "--timeout",
            ],
            &["nexo", "serve", "dns", "--timeout"],
        ];
        for command in commands {
            for (value, accepted) in [("2.5", true), ("0", false), ("1e300", false)] {
                let parsed = Cli::try_parse_from(command.iter().copied().chain([value]));
                match parsed {
                    Ok(_) => assert!(accepted, "{command:?} {value}"),
                    Err(error) => {
                        assert!(!accepted, "{command:?} {value}: {error}");
                        assert_eq!(error.kind(), ErrorKind::ValueValidation, "{error}");
                        assert!(
                            error
                                .to_string()
                                .contains("not a positive number of seconds"),
                            "{error}"
                        );
                    }
                }
            }
        }
    }
}
