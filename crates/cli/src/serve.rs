//! `nexo serve`: wires a bundled server to the serving runtime.

use nexo_bundled::{Built, Bundled, Defaults, ServerOptions};
use nexo_serve::ServeOptions;

use crate::args::ServeArgs;
use crate::env;
use crate::failure::Failure;

pub async fn run(args: ServeArgs) -> Result<(), Failure> {
    let bundled: Bundled = args.server.parse()?;
    let http = match &args.http {
        Some(spec) => {
            let spec = (!spec.is_empty()).then_some(spec.as_str());
            Some(nexo_serve::listen_address(
                spec,
                env::var(env::PORT).as_deref(),
            )?)
        }
        None => None,
    };
    let server_options = ServerOptions::for_server(bundled, &args.options.0, defaults(bundled))?;
    let options = args
        .hosting
        .into_options(bundled.name(), Some(&args.limits))?;
    let Built { server, tools } = bundled.build(&server_options)?;
    let options = ServeOptions { tools, ..options };
    let served =
        match http {
            None => nexo_serve::serve_stdio(server, &options).await,
            Some(addr) => nexo_serve::serve_http(server, addr, &options, |bound| {
                let scheme = options.scheme();
                tracing::info!("serving MCP at {scheme}://{bound}{}", nexo_serve::MCP_PATH);
                crate::output::status(&format!(
                    "nexo: serving `{}` at {scheme}://{bound}{} (legacy SSE at /sse, health at /)",
                    options.server_name,
                    nexo_serve::MCP_PATH
                ));
            })
            .await,
        };
    served.map_err(Failure::from)
}

/// The defaults the environment gives `server` (only what it uses is
/// looked up: finding the DNS log's directory creates it).
pub(crate) fn defaults(server: Bundled) -> Defaults {
    Defaults {
        dns_log: (server == Bundled::Dns).then(env::dns_log).flatten(),
        music_db: (server == Bundled::Music).then(env::music_db).flatten(),
    }
}
