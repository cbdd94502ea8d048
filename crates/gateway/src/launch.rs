//! The gateway's start sequence, from a configuration's `gateway` section
//! and its servers' plans to an endpoint serving: the settings read (the
//! command line's authentication beside the file's), the policies and the
//! audit log checked before any upstream starts, the resolver URL rules
//! use, the token exchanges, the upstreams started, and the gateway served.
//! What a person should know on the way (an upstream not connected, a
//! resolver missing, where the gateway listens) is told through a
//! callback; the binary only parses its flags, builds the plans (bundled
//! servers are its to know) and wires.

use std::net::SocketAddr;
use std::sync::Arc;

use nexo_client::ConnectOptions;
use nexo_client::config::GatewaySection;
use nexo_client::hub::{Hub, RestartPolicy, ServerPlan, State};
use nexo_serve::ServeOptions;

use crate::exchange::Exchanges;
use crate::policy::{Resolver, StaticResolver, SystemResolver};
use crate::{Prepared, Settings, SettingsError, StartError};

/// What a gateway is started from.
pub struct Launch<'a> {
    /// The configuration's `gateway` section.
    pub section: &'a GatewaySection,
    /// The plan of every upstream (the configuration's servers that are
    /// not disabled), in the configuration's order.
    pub plans: Vec<ServerPlan>,
    /// The listening flags, `nexo serve`'s.
    pub serve: ServeOptions,
    pub addr: SocketAddr,
    /// How the upstreams are reached.
    pub connect: ConnectOptions,
}

/// Starts the gateway `launch` describes and serves it until it stops;
/// `tell` hears what a person should know, in sentences.
pub async fn launch(launch: Launch<'_>, tell: &(dyn Fn(&str) + Sync)) -> Result<(), StartError> {
    let Launch {
        section,
        plans,
        serve,
        addr,
        connect,
    } = launch;
    let names: Vec<&str> = plans.iter().map(|plan| plan.name.as_str()).collect();
    let settings = Settings::read(section, &names)?
        .with_flag_auth(serve.auth.clone())
        .map_err(|message| SettingsError {
            location: section.location.to_string(),
            message,
            hint: "remove `auth` from the file, or the flags from the command line".to_owned(),
        })?;
    let policy = settings.policy.clone();
    let audit = settings.audit.clone();
    let auth = crate::settings::auth_summary(&settings.auth);
    let redis = match &settings.redis {
        Some(redis) => format!("; shared through Redis `{}`", redis.url),
        None => String::new(),
    };
    // The policies and the audit log are checked before any upstream starts.
    let prepared = Prepared::load(settings)?;
    let resolver: Arc<dyn Resolver> = match SystemResolver::from_system() {
        Ok(resolver) => Arc::new(resolver),
        Err(reason) => {
            tell(&format!(
                "warning: {reason}; host names in URL arguments will not resolve, so URL rules \
                 refuse them"
            ));
            Arc::new(StaticResolver::new())
        }
    };
    let exchanged = plans
        .iter()
        .filter_map(|plan| {
            let exchange = prepared.token_exchange().get(&plan.name)?;
            Some((plan.name.clone(), exchange.clone(), plan.target.clone()))
        })
        .collect();
    let exchanges = Exchanges::new(exchanged, &connect).map_err(|message| SettingsError {
        location: section.location.to_string(),
        message,
        hint: "trade tokens only for upstreams of `\"type\": \"http\"` (or `sse`)".to_owned(),
    })?;
    let names: Vec<String> = plans.iter().map(|plan| plan.name.clone()).collect();
    let hub = Hub::start(plans, connect, RestartPolicy::default()).await;
    for status in hub.status() {
        if let Some(error) = &status.last_error
            && status.state != State::Connected
        {
            tell(&format!(
                "warning: upstream `{}` is {}: {error}",
                status.name,
                status.state.name()
            ));
        }
    }
    let upstreams = names.len();
    let gateway = prepared.start(hub, names, exchanges, resolver);
    let endpoints: Vec<String> = gateway
        .virtual_servers()
        .map(|name| format!("{}/{name}", nexo_serve::MCP_PATH))
        .collect();
    let scheme = serve.scheme();
    gateway
        .serve(addr, &serve, |bound| {
            tracing::info!(
                "gateway serving MCP at {scheme}://{bound}{}",
                nexo_serve::MCP_PATH
            );
            let virtual_servers = if endpoints.is_empty() {
                String::new()
            } else {
                format!(", virtual servers at {}", endpoints.join(", "))
            };
            tell(&format!(
                "nexo: gateway for {upstreams} upstream{} at {scheme}://{bound}{} (legacy SSE at \
                 /sse{virtual_servers}); policy `{}`, audit `{}`; {auth}{redis}",
                if upstreams == 1 { "" } else { "s" },
                nexo_serve::MCP_PATH,
                policy.display(),
                audit.display()
            ));
        })
        .await
}
