//! `nexo gateway --config FILE`: wires the configuration's servers (a
//! nexo-client hub, bundled servers in-process) to nexo-gateway and serves
//! it with the listening flags of `nexo serve`.
//!
//! The file is named explicitly, so it is the operator's: its servers start
//! without the consent prompt a project's `.mcp.json` gets (nexo-client's
//! `Source::Explicit`), and no other file is looked for.

use std::sync::Arc;

use nexo_client::ConnectOptions;
use nexo_client::auth::{DeferredAgent, OAuthOptions};
use nexo_client::hub::{Hub, RestartPolicy};
use nexo_gateway::exchange::Exchanges;
use nexo_gateway::policy::{Resolver, StaticResolver, SystemResolver};
use nexo_gateway::{Prepared, Settings, SettingsError, StartError};

use crate::args::GatewayArgs;
use crate::failure::Failure;
use crate::{env, host, output};

pub async fn run(args: GatewayArgs) -> Result<(), Failure> {
    // Required by the parser unless a subcommand is given.
    let Some(path) = args.config.clone() else {
        return Err(Failure::usage(
            "give the gateway its configuration",
            Some("nexo gateway --config FILE (see examples/gateway/config.json)".into()),
        ));
    };
    let config = host::load(Some(&path))?;
    let section = config
        .gateway
        .as_ref()
        .ok_or_else(|| Failure::from(StartError::NoSettings { config: path }))?;
    let servers: Vec<_> = config
        .servers
        .iter()
        .filter(|server| !server.disabled)
        .collect();
    let names: Vec<&str> = servers.iter().map(|server| server.name.as_str()).collect();
    let serve_options = args.hosting.into_options("gateway", None)?;
    let settings = Settings::read(section, &names)
        .map_err(|error| Failure::from(StartError::from(error)))?
        .with_flag_auth(serve_options.auth.clone())
        .map_err(|message| {
            Failure::from(StartError::from(SettingsError {
                location: section.location.to_string(),
                message,
                hint: "remove `auth` from the file, or the flags from the command line".to_owned(),
            }))
        })?;
    let addr = nexo_serve::listen_address(args.http.as_deref(), env::var(env::PORT).as_deref())?;
    let policy = settings.policy.clone();
    let audit = settings.audit.clone();
    let auth = nexo_gateway::settings::auth_summary(&settings.auth);
    let redis = match &settings.redis {
        Some(redis) => format!("; shared through Redis `{}`", redis.url),
        None => String::new(),
    };
    // The policies and the audit log are checked before any upstream starts.
    let prepared = Prepared::load(settings)?;
    let resolver: Arc<dyn Resolver> = match SystemResolver::from_system() {
        Ok(resolver) => Arc::new(resolver),
        Err(reason) => {
            output::status(&format!(
                "warning: {reason}; host names in URL arguments will not resolve, so URL rules \
                 refuse them"
            ));
            Arc::new(StaticResolver::new())
        }
    };
    // Tokens a person's command stored are used for upstreams that ask.
    let oauth = OAuthOptions::new(env::token_store(), Arc::new(DeferredAgent));
    let plans = servers
        .iter()
        .map(|server| host::plan_of(server, &oauth, args.timeout))
        .collect::<Result<Vec<_>, _>>()?;
    let options = ConnectOptions {
        timeout: args.timeout,
        startup: args.startup.seconds,
        ..ConnectOptions::default()
    };
    let exchanged = plans
        .iter()
        .filter_map(|plan| {
            let exchange = prepared.token_exchange().get(&plan.name)?;
            Some((plan.name.clone(), exchange.clone(), plan.target.clone()))
        })
        .collect();
    let exchanges = Exchanges::new(exchanged, &options).map_err(|message| {
        Failure::from(StartError::from(SettingsError {
            location: section.location.to_string(),
            message,
            hint: "trade tokens only for upstreams of `\"type\": \"http\"` (or `sse`)".to_owned(),
        }))
    })?;
    let hub = Hub::start(plans, options, RestartPolicy::default()).await;
    for status in hub.status() {
        if let Some(error) = &status.last_error
            && status.state != nexo_client::hub::State::Connected
        {
            output::status(&format!(
                "warning: upstream `{}` is {}: {error}",
                status.name,
                status.state.name()
            ));
        }
    }
    let names = servers.iter().map(|server| server.name.clone()).collect();
    let gateway = prepared.start(hub, names, exchanges, resolver);
    let endpoints: Vec<String> = gateway
        .virtual_servers()
        .map(|name| format!("{}/{name}", nexo_serve::MCP_PATH))
        .collect();
    let upstreams = servers.len();
    let scheme = serve_options.scheme();
    gateway
        .serve(addr, &serve_options, |bound| {
            tracing::info!(
                "gateway serving MCP at {scheme}://{bound}{}",
                nexo_serve::MCP_PATH
            );
            let virtual_servers = if endpoints.is_empty() {
                String::new()
            } else {
                format!(", virtual servers at {}", endpoints.join(", "))
            };
            output::status(&format!(
                "nexo: gateway for {upstreams} upstream{} at {scheme}://{bound}{} (legacy SSE at \
                 /sse{virtual_servers}); policy `{}`, audit `{}`; {auth}{redis}",
                if upstreams == 1 { "" } else { "s" },
                nexo_serve::MCP_PATH,
                policy.display(),
                audit.display()
            ));
        })
        .await
        .map_err(Failure::from)
}
