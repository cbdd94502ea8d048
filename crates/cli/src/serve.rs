//! `nexo serve`: wires a bundled server to the serving runtime.

use futures::future::BoxFuture;
use nexo_bundled::{BuildError, Bundled, ServerOptions, ServerVisitor};
use nexo_serve::ServeOptions;
use rmcp::ServerHandler;
use rmcp::model::Tool;

use crate::args::{DnsArgs, MusicArgs, ServeArgs};
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
    let server_options = server_options(bundled, &args.dns, &args.music)?;
    let options = ServeOptions {
        server_name: bundled.name().to_owned(),
        tools: Vec::new(),
        max_body: args.max_body,
        log: args.log,
        allow_origins: args.allow_origins,
        allow_hosts: args.allow_hosts,
    };
    let launch = bundled
        .visit(&server_options, Launch { http, options })
        .map_err(|error| {
            let hint = match &error {
                BuildError::Dns(_) => "give the resolver with `--resolver ADDR[:PORT]`",
                BuildError::Music(_) => {
                    "check that the file's directory can be written, or give another file with `--db FILE`"
                }
            };
            Failure::unexpected(&anyhow::Error::new(error), Some(hint.into()))
        })?;
    launch.await.map_err(serve_failure)
}

/// The options of the chosen server; a server's options given to another
/// server are a usage error.
fn server_options(
    bundled: Bundled,
    dns: &DnsArgs,
    music: &MusicArgs,
) -> Result<ServerOptions, Failure> {
    let mut options = ServerOptions::default();
    if bundled == Bundled::Music {
        options.music.db = match &music.db {
            Some(db) => db.clone(),
            None => env::music_db().ok_or_else(|| {
                Failure::usage(
                    "no data directory to keep the music library in (neither `XDG_DATA_HOME` \
                     nor `HOME` is set)",
                    Some("give the library's file with `--db FILE`".into()),
                )
            })?,
        };
    } else if let Some(flag) = music.first_given() {
        return Err(Failure::usage(
            format!("`{flag}` is an option of `nexo serve music`, not of `{bundled}`"),
            Some(format!("remove `{flag}`, or run `nexo serve music`")),
        ));
    }
    if bundled != Bundled::Dns {
        if let Some(flag) = dns.first_given() {
            return Err(Failure::usage(
                format!("`{flag}` is an option of `nexo serve dns`, not of `{bundled}`"),
                Some(format!("remove `{flag}`, or run `nexo serve dns`")),
            ));
        }
        return Ok(options);
    }
    if let Some(text) = &dns.resolver {
        let address = nexo_bundled::dns::parse_address(text).ok_or_else(|| {
            Failure::usage(
                format!("`{text}` is not a resolver address"),
                Some("give an IP address with an optional port: `--resolver 192.0.2.1:53`".into()),
            )
        })?;
        options.dns.resolver = Some(address);
    }
    if let Some(seconds) = dns.timeout {
        options.dns.timeout = std::time::Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|timeout| !timeout.is_zero())
            .ok_or_else(|| {
                Failure::usage(
                    format!("`--timeout {seconds}` is not a positive number of seconds"),
                    Some("for example `--timeout 2.5`".into()),
                )
            })?;
    }
    if let Some(port) = dns.auth_port {
        options.dns.auth_port = port;
    }
    options.dns.log = env::dns_log();
    Ok(options)
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
