//! The commands that work from a configuration file: `nexo servers`, and
//! `--server NAME` on the direct commands. Wiring only: reading the file
//! is nexo-client's `config`, consent its `consent`, running many servers
//! at once its `hub`, the bundled servers nexo-bundled's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nexo_client::config::{self, Config, ServerConfig, ServerSpec, Source};
use nexo_client::consent::ConsentStore;
use nexo_client::hub::{Hub, RestartPolicy, ServerPlan, ServerStatus, ToolLimits};
use nexo_client::{CallLimits, ClientError, ConnectOptions, Target};

use crate::args::ServersArgs;
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
                    option: None,
                    message: error.to_string(),
                    hint: Some(error.hint()),
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
    config::load(&request).map_err(|error| Failure::from_error(&error))
}

/// Where `nexo servers` and `--server` remember which project servers the
/// user allowed: `consent.json` in nexo's configuration directory.
fn consent_store() -> Result<ConsentStore, Failure> {
    let dir = env::config_dir().ok_or_else(|| {
        Failure::from(ClientError::usage(
            "no configuration directory to keep consent in",
            Some(format!("set `{}` or `{}`", env::XDG_CONFIG_HOME, env::HOME)),
        ))
    })?;
    ConsentStore::open(dir.join("consent.json")).map_err(|error| Failure::from_error(&error))
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
    if server.project_file.is_some() && !consent_store()?.is_granted(server) {
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
            let bundled: nexo_bundled::Bundled =
                name.parse().map_err(|error| Failure::from_error(&error))?;
            let given = nexo_bundled::GivenOptions::from_json(bundled, options, base_dir)
                .map_err(|error| Failure::from_error(&error))?;
            Ok(Target::InProcess(crate::builtin::in_process(
                bundled, &given,
            )?))
        }
        spec => spec
            .target()
            .ok_or_else(|| Failure::from(ClientError::usage("the entry has no target", None))),
    }
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
        store
            .grant(server)
            .map_err(|error| Failure::from_error(&error))?;
        output::status(&format!("allowed `{name}` to start"));
    }
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for server in config.servers.iter().filter(|server| !server.disabled) {
        if !store.is_granted(server) {
            skipped.push(server);
            continue;
        }
        let target = target_of(server)?;
        plans.push(ServerPlan {
            name: server.name.clone(),
            log: matches!(target, Target::Stdio { .. })
                .then(|| env::server_log(&server.name))
                .flatten(),
            target,
            limits: limits(server, args.timeout),
            oauth: None,
        });
    }
    let options = ConnectOptions {
        timeout: args.timeout,
        ..ConnectOptions::default()
    };
    let hub = Hub::start(plans, options, RestartPolicy::default()).await;
    let ready = began.elapsed();
    let status = hub.status();
    if args.json {
        output::json(&serde_json::json!({
            "config": config.source.path(),
            "readyMs": millis(ready),
            "servers": status.iter().map(status_json).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|server| skipped_json(&store, server)).collect::<Vec<_>>(),
        }));
    } else if status.is_empty() {
        output::status(&format!("no server started from {}", shown(&config.source)));
    } else {
        output::data(&table(&status));
        for server in &skipped {
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
    hub.close().await;
    Ok(())
}

fn table(status: &[ServerStatus]) -> String {
    let rows = status
        .iter()
        .map(|server| {
            vec![
                server.name.clone(),
                server.state.name().to_owned(),
                server.transport.unwrap_or("-").to_owned(),
                server.revision.clone().unwrap_or_else(|| "-".into()),
                server
                    .tools
                    .map_or_else(|| "-".to_owned(), |tools| tools.to_string()),
                match &server.last_error {
                    Some(error) => match error.hint() {
                        Some(hint) => format!("{error} (hint: {hint})"),
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
    )
}

fn status_json(server: &ServerStatus) -> serde_json::Value {
    serde_json::json!({
        "name": server.name,
        "target": server.target,
        "state": server.state.name(),
        "transport": server.transport,
        "revision": server.revision,
        "tools": server.tools,
        "restarts": server.restarts,
        "readyMs": server.ready.map(millis),
        "log": server.log,
        "lastError": server.last_error.as_ref().map(|error| serde_json::json!({
            "code": error.code(),
            "message": error.to_string(),
            "hint": error.hint(),
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
