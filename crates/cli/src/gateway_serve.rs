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
use nexo_gateway::StartError;
use nexo_gateway::launch::{Launch, launch};

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
    let serve = args.hosting.into_options("gateway", None)?;
    let addr = nexo_serve::listen_address(args.http.as_deref(), env::var(env::PORT).as_deref())?;
    // Tokens a person's command stored are used for upstreams that ask.
    let oauth = OAuthOptions::new(env::token_store(), Arc::new(DeferredAgent));
    let plans = config
        .servers
        .iter()
        .filter(|server| !server.disabled)
        .map(|server| host::plan_of(server, &oauth, args.timeout))
        .collect::<Result<Vec<_>, _>>()?;
    let connect = ConnectOptions {
        timeout: args.timeout,
        startup: args.startup.seconds,
        ..ConnectOptions::default()
    };
    let launching = Launch {
        section,
        plans,
        serve,
        addr,
        connect,
    };
    launch(launching, &|line: &str| output::status(line))
        .await
        .map_err(Failure::from)
}
