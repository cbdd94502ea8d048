//! `nexo serve`: wires a bundled server to the serving runtime.

use futures::future::BoxFuture;
use nexo_bundled::{Bundled, ServerVisitor};
use nexo_serve::ServeOptions;
use rmcp::ServerHandler;
use rmcp::model::Tool;

use crate::args::ServeArgs;
use crate::env;
use crate::failure::Failure;

pub async fn run(args: ServeArgs) -> Result<(), Failure> {
    let bundled: Bundled = args
        .server
        .parse()
        .map_err(|error: nexo_bundled::UnknownServer| {
            Failure::usage(
                error.to_string(),
                Some("run `nexo serve --help` to see the servers".into()),
            )
        })?;
    let http = match &args.http {
        Some(spec) => {
            let spec = (!spec.is_empty()).then_some(spec.as_str());
            Some(
                nexo_serve::listen_address(spec, env::var(env::PORT).as_deref())
                    .map_err(serve_failure)?,
            )
        }
        None => None,
    };
    let options = ServeOptions {
        server_name: bundled.name().to_owned(),
        tools: Vec::new(),
        max_body: args.max_body,
        log: args.log,
        allow_origins: args.allow_origins,
        allow_hosts: args.allow_hosts,
    };
    bundled
        .visit(Launch { http, options })
        .await
        .map_err(serve_failure)
}

fn serve_failure(error: nexo_serve::ServeError) -> Failure {
    let hint = error.hint();
    Failure::unexpected(&anyhow::Error::new(error), hint)
}

struct Launch {
    http: Option<std::net::SocketAddr>,
    options: ServeOptions,
}

impl ServerVisitor for Launch {
    type Output = BoxFuture<'static, Result<(), nexo_serve::ServeError>>;

    fn visit<S>(self, server: S, tools: Vec<Tool>) -> Self::Output
    where
        S: ServerHandler + Clone + Send + Sync + 'static,
    {
        let options = ServeOptions {
            tools,
            ..self.options
        };
        Box::pin(async move {
            match self.http {
                None => nexo_serve::serve_stdio(server, &options).await,
                Some(addr) => nexo_serve::serve_http(server, addr, &options, |bound| {
                    tracing::info!("serving MCP at http://{bound}{}", nexo_serve::MCP_PATH);
                    crate::output::status(&format!(
                        "nexo: serving `{}` at http://{bound}{} (legacy SSE at /sse, health at /)",
                        options.server_name,
                        nexo_serve::MCP_PATH
                    ));
                })
                .await,
            }
        })
    }
}
