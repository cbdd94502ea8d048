//! The commands that work from a configuration file: `nexo servers`, and
//! `--server NAME` on the direct commands. Wiring only: reading the file
//! is nexo-client's `config`, consent its `consent`, running many servers
//! at once its `hub`, the bundled servers nexo-bundled's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nexo_client::auth::{DeferredAgent, OAuthOptions};
use nexo_client::config::{self, Config, ServerConfig, ServerSpec, Source};
use nexo_client::consent::ConsentStore;
use nexo_client::hub::{Hub, RestartPolicy, ServerPlan, ServerStatus, State, ToolLimits};
use nexo_client::{CallLimits, ClientError, ConnectOptions, Target};
use nexo_hint::Hinted;

use nexo_trace::{TraceOptions, Tracer};

use crate::args::{ServersArgs, TraceArgs};
use crate::env;
use crate::failure::Failure;
use crate::output;

/// The default maximum of one call, progress or not, where the
/// configuration gives none.
pub const DEFAULT_MAX_CALL: Duration = Duration::from_secs(600);

/// Reads the configuration: `--config FILE`, else `./.mcp.json`, else the
/// user's `config.json`, else the bundled servers in-process.
pub fn load(explicit: Option<&Path>) -> Result<Config, Failure> {
    let cwd = std::env::current_dir().map_err(|error| {
        Failure::from(ClientError::usage(
            format!("cannot read the working directory: {error}"),
            None,
        ))
    })?;
    let lookup = |name: &str| env::var(name);
    let check =
        |server: &str, options: &serde_json::Map<String, serde_json::Value>, base: &Path| {
            let bundled: nexo_bundled::Bundled =
                server
                    .parse()
                    .map_err(
                        |error: nexo_bundled::UnknownServer| config::BuiltinProblem {
                            option: None,
                            message: error.to_string(),
                            hint: None,
                        },
                    )?;
            nexo_bundled::GivenOptions::from_json(bundled, options, base)
                .map(|_| ())
                .map_err(|error| config::BuiltinProblem {
                    option: error.option().map(str::to_owned),
                    message: error.to_string(),
                    hint: error.hint().map(|hint| hint.terminal()),
                })
        };
    let request = config::LoadRequest {
        explicit: explicit.map(Path::to_path_buf),
        cwd,
        user_config_dir: env::config_dir(),
        home: env::var(env::HOME).map(PathBuf::from),
        env: &lookup,
        check_builtin: Some(&check),
    };
    config::load(&request).map_err(Failure::from)
}

/// Where `nexo servers` and `--server` remember which project servers the
/// user allowed: `consent.json` in nexo's configuration directory.
pub fn consent_store() -> Result<ConsentStore, Failure> {
    let dir = env::config_dir().ok_or_else(|| {
        Failure::from(ClientError::usage(
            "no configuration directory to keep consent in",
            Some(format!("set `{}` or `{}`", env::XDG_CONFIG_HOME, env::HOME)),
        ))
    })?;
    ConsentStore::open(dir.join("consent.json")).map_err(Failure::from)
}

/// The server called `name`, if the configuration has it and may start it.
pub fn find<'a>(config: &'a Config, name: &str) -> Result<&'a ServerConfig, Failure> {
    let Some(server) = config.servers.iter().find(|server| server.name == name) else {
        let known: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        return Err(ClientError::usage(
            format!("{} has no server called `{name}`", shown(&config.source)),
            Some(format!("the servers it names: {}", known.join(", "))),
        )
        .into());
    };
    if server.disabled {
        return Err(ClientError::usage(
            format!(
                "the server `{name}` is disabled in {}",
                shown(&config.source)
            ),
            Some("remove `\"disabled\": true` from its entry to use it".to_owned()),
        )
        .into());
    }
    if server.project_file.is_some() && !allowed(&mut consent_store()?, server)? {
        return Err(ClientError::usage(
            format!(
                "the server `{name}` comes from the project file {} and has not been allowed to start",
                shown(&config.source)
            ),
            Some(allow_hint(&[name])),
        )
        .into());
    }
    Ok(server)
}

/// Whether `server` may start: allowed before, or allowed now by the
/// person at the terminal, shown what it runs (never without a terminal).
fn allowed(store: &mut ConsentStore, server: &ServerConfig) -> Result<bool, Failure> {
    if store.is_granted(server) {
        return Ok(true);
    }
    let question = format!("{}\nallow it to start?", store.describe(server));
    if output::ask(&question) != Some(true) {
        return Ok(false);
    }
    store.grant(server)?;
    output::status(&format!("allowed `{}` to start", server.name));
    Ok(true)
}

fn shown(source: &Source) -> String {
    match source.path() {
        Some(path) => format!("`{}`", path.display()),
        None => "the default configuration".to_owned(),
    }
}

fn allow_hint(names: &[&str]) -> String {
    format!(
        "review what it runs with `nexo servers`, then allow it with `nexo servers --allow {}`",
        names.join(" --allow ")
    )
}

/// What connects to `server`: its target, or the bundled server in-process.
pub fn target_of(server: &ServerConfig) -> Result<Target, Failure> {
    match &server.spec {
        ServerSpec::Builtin {
            server: name,
            options,
            base_dir,
        } => {
            let bundled: nexo_bundled::Bundled = name.parse()?;
            let given = nexo_bundled::GivenOptions::from_json(bundled, options, base_dir)?;
            Ok(Target::InProcess(crate::builtin::in_process(
                bundled, &given,
            )?))
        }
        spec => spec
            .target()
            .ok_or_else(|| Failure::from(ClientError::usage("the entry has no target", None))),
    }
}

/// How a hub runs `server`: its target, its log file (a stdio child's),
/// `oauth` where it may ask for it, and its calls' time limits (`idle`
/// unless it sets its own).
pub fn plan_of(
    server: &ServerConfig,
    oauth: &OAuthOptions,
    idle: Duration,
) -> Result<ServerPlan, Failure> {
    let target = target_of(server)?;
    Ok(ServerPlan {
        name: server.name.clone(),
        log: matches!(target, Target::Stdio { .. })
            .then(|| env::server_log(&server.name))
            .flatten(),
        oauth: oauth.clone().for_target(&target),
        target,
        limits: limits(server, idle),
        startup: server.timeouts.startup,
    })
}

/// The time limits of `server`'s calls: its own, else `idle` and
/// [`DEFAULT_MAX_CALL`].
pub fn limits(server: &ServerConfig, idle: Duration) -> ToolLimits {
    let of = |timeouts: config::ToolTimeouts| CallLimits {
        idle: timeouts.idle.unwrap_or(idle),
        total: Some(timeouts.max.unwrap_or(DEFAULT_MAX_CALL)),
    };
    ToolLimits {
        server: of(server.timeouts.for_tool("")),
        tools: server
            .timeouts
            .tools
            .keys()
            .map(|tool| (tool.clone(), of(server.timeouts.for_tool(tool))))
            .collect(),
    }
}

/// Where to trace: `--trace`, else the configuration's `"trace"`.
pub fn trace_choice(flags: &TraceArgs, config: Option<&Config>) -> Option<(PathBuf, TraceOptions)> {
    match (&flags.trace, config) {
        (Some(path), _) => Some((
            path.clone(),
            TraceOptions {
                redact_messages: flags.trace_redact,
            },
        )),
        (None, Some(config)) => config.trace.clone().map(|path| {
            (
                path,
                TraceOptions {
                    redact_messages: config.trace_redact,
                },
            )
        }),
        (None, None) => None,
    }
}

/// The trace file, opened for appending.
pub fn tracer(path: &Path, options: TraceOptions) -> Result<Tracer, Failure> {
    Tracer::open(path, options).map_err(|error| {
        Failure::from(ClientError::usage(
            format!("cannot open the trace file `{}`: {error}", path.display()),
            Some("give `--trace` (or the configuration's \"trace\") a file in a directory you can write to".to_owned()),
        ))
    })
}

/// The configuration's servers, connected through one hub.
pub struct Started<'c> {
    pub hub: Hub,
    /// Servers of a project file not allowed to start.
    pub skipped: Vec<&'c ServerConfig>,
}

/// Starts every enabled server of `config` that may start (asking on a
/// terminal for a project's), each connecting within `timeout`; `options`
/// gives the rest of how they are reached (the trace, who answers their
/// questions).
pub async fn start<'c>(
    config: &'c Config,
    store: &mut ConsentStore,
    timeout: Duration,
    options: ConnectOptions,
) -> Result<Started<'c>, Failure> {
    // Tokens a person's command stored are used; a new sign-in is left to
    // a person (the server's state says how).
    let oauth = OAuthOptions::new(env::token_store(), Arc::new(DeferredAgent));
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for server in config.servers.iter().filter(|server| !server.disabled) {
        if !allowed(store, server)? {
            skipped.push(server);
            continue;
        }
        plans.push(plan_of(server, &oauth, timeout)?);
    }
    let options = ConnectOptions { timeout, ..options };
    let hub = Hub::start(plans, options, RestartPolicy::default()).await;
    Ok(Started { hub, skipped })
}

/// Skipped servers named, with how to allow them (stderr).
pub fn tell_skipped(store: &ConsentStore, skipped: &[&ServerConfig]) {
    for server in skipped {
        output::status(&format!(
            "skipped, not allowed yet: {}",
            store.describe(server)
        ));
    }
    if !skipped.is_empty() {
        let names: Vec<&str> = skipped.iter().map(|s| s.name.as_str()).collect();
        output::status(&format!("hint: {}", allow_hint(&names)));
    }
}

/// `nexo servers`: every configured server, connected concurrently.
pub async fn servers(args: ServersArgs) -> Result<(), Failure> {
    let began = Instant::now();
    let config = load(args.config.as_deref())?;
    let mut store = consent_store()?;
    for name in &args.allow {
        let server = config
            .servers
            .iter()
            .find(|server| &server.name == name)
            .ok_or_else(|| {
                Failure::from(ClientError::usage(
                    format!("{} has no server called `{name}`", shown(&config.source)),
                    None,
                ))
            })?;
        store.grant(server)?;
        output::status(&format!("allowed `{name}` to start"));
    }
    let trace = match trace_choice(&args.trace, Some(&config)) {
        Some((path, options)) => Some(tracer(&path, options)?),
        None => None,
    };
    let options = ConnectOptions {
        trace: trace.clone(),
        startup: args.startup.seconds,
        // A server slow to start is shown as it starts ("starting `npx -y
        // ...`: 12 s"), as every client command shows it.
        notices: Some(Arc::new(output::notice)),
        ..ConnectOptions::default()
    };
    let Started { hub, skipped } = start(&config, &mut store, args.timeout, options).await?;
    let ready = began.elapsed();
    let status = hub.status();
    let names = hub.tool_names();
    if args.json {
        output::json(&serde_json::json!({
            "config": config.source.path(),
            "readyMs": millis(ready),
            "servers": status.iter().map(|server| status_json(server, args.config.as_deref())).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|server| skipped_json(&store, server)).collect::<Vec<_>>(),
            "renamed": names.renamed().iter().map(|renaming| serde_json::json!({
                "server": renaming.server,
                "tool": renaming.name,
                "name": renaming.qualified,
                "why": renaming.to_string(),
            })).collect::<Vec<_>>(),
        }));
    } else {
        if status.is_empty() {
            output::status(&format!("no server started from {}", shown(&config.source)));
        } else {
            output::data(&table(&status, args.config.as_deref()));
        }
        for renaming in names.renamed() {
            output::status(&format!("tool name for the model: {renaming}"));
        }
        tell_skipped(&store, &skipped);
    }
    hub.close().await;
    if let Some(trace) = trace
        && let Err(error) = trace.flush()
    {
        tracing::warn!(%error, "cannot write the trace file");
    }
    if !status.is_empty() && status.iter().all(|server| server.state != State::Connected) {
        let count = status.len();
        return Err(Failure::new(
            crate::failure::Exit::Unreachable,
            "unreachable",
            if count == 1 {
                "the configured server did not connect".to_owned()
            } else {
                format!("none of the {count} configured servers connected")
            },
        )
        .hint(if args.json {
            "each server's `lastError` says why".to_owned()
        } else {
            "each server's last error, above, says why".to_owned()
        }));
    }
    Ok(())
}

pub fn table(status: &[ServerStatus], config_flag: Option<&Path>) -> String {
    let rows = status
        .iter()
        .map(|server| {
            vec![
                server.name.clone(),
                server.state.name().to_owned(),
                server.transport.unwrap_or("-").to_owned(),
                server.revision.clone().unwrap_or_else(|| "-".into()),
                match (server.tools, server.skills) {
                    (None, _) => "-".to_owned(),
                    (Some(tools), None | Some(0)) => tools.to_string(),
                    (Some(tools), Some(skills)) => format!("{tools} (+{skills} skills)"),
                },
                match &server.last_error {
                    Some(error) => match hint_of(server, config_flag) {
                        Some(hint) => format!("{error}\nhint: {hint}"),
                        None => error.to_string(),
                    },
                    None => String::new(),
                },
            ]
        })
        .collect();
    output::table(
        &[
            "SERVER",
            "STATE",
            "TRANSPORT",
            "REVISION",
            "TOOLS",
            "LAST ERROR",
        ],
        rows,
        output::Overflow::Wrap,
    )
}

/// What to do about a server's last error: for one that needs
/// authorization, the command that signs in (in a browser) and stores the
/// token the next `nexo servers` uses.
fn hint_of(server: &ServerStatus, config_flag: Option<&Path>) -> Option<String> {
    let config = config_flag
        .map(|path| format!(" --config {}", path.display()))
        .unwrap_or_default();
    if server.state == State::NeedsAuthorization {
        return Some(format!(
            "sign in with `nexo tools --server {}{config}` (it opens the authorization page), then run `nexo servers{config}` again",
            server.name
        ));
    }
    // The server is known here: its commands name it.
    let target = format!("--server {}{config}", server.name);
    server
        .last_error
        .as_ref()
        .and_then(|error| error.hint())
        .map(|hint| hint.at(&target).terminal())
}

fn status_json(server: &ServerStatus, config_flag: Option<&Path>) -> serde_json::Value {
    serde_json::json!({
        "name": server.name,
        "target": server.target,
        "state": server.state.name(),
        "transport": server.transport,
        "revision": server.revision,
        "tools": server.tools,
        "skills": server.skills,
        "restarts": server.restarts,
        "readyMs": server.ready.map(millis),
        "log": server.log,
        "lastError": server.last_error.as_ref().map(|error| serde_json::json!({
            "code": error.code(),
            "message": error.to_string(),
            "hint": hint_of(server, config_flag),
        })),
    })
}

/// A duration in milliseconds, to the microsecond.
fn millis(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

fn skipped_json(store: &ConsentStore, server: &ServerConfig) -> serde_json::Value {
    serde_json::json!({
        "name": server.name,
        "reason": "not allowed yet",
        "entry": store.describe(server).to_string(),
    })
}
