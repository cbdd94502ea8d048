//! `nexo serve`: wires a bundled server to the serving runtime.

use futures::future::BoxFuture;
use nexo_bundled::{Bundled, ServerOptions, ServerVisitor};
use nexo_serve::ServeOptions;
use rmcp::ServerHandler;
use rmcp::model::Tool;

use crate::args::{DnsArgs, FilesArgs, MusicArgs, ServeArgs};
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
            // An address that cannot be listened on is bad usage.
            Some(
                nexo_serve::listen_address(spec, env::var(env::PORT).as_deref())
                    .map_err(|error| Failure::usage(error.to_string(), error.hint()))?,
            )
        }
        None => None,
    };
    let server_options = server_options(bundled, &args.dns, &args.files, &args.music)?;
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
            let hint = error.hint();
            Failure::unexpected(&anyhow::Error::new(error), Some(hint))
        })?;
    launch.await.map_err(serve_failure)
}

/// The options of the chosen server; a server's options given to another
/// server are a usage error.
fn server_options(
    bundled: Bundled,
    dns: &DnsArgs,
    files: &FilesArgs,
    music: &MusicArgs,
) -> Result<ServerOptions, Failure> {
    refuse_foreign(bundled, Bundled::Dns, dns.first_given().map(str::to_owned))?;
    refuse_foreign(bundled, Bundled::Files, files.first_given())?;
    refuse_foreign(
        bundled,
        Bundled::Music,
        music.first_given().map(str::to_owned),
    )?;
    let mut options = ServerOptions::default();
    match bundled {
        Bundled::Dns => options.dns = dns_options(dns)?,
        Bundled::Files => options.files = files_options(files)?,
        Bundled::Music => options.music.db = music_db(music)?,
        _ => {}
    }
    Ok(options)
}

/// A usage error when `given`, an option of `owner`, was given to `bundled`.
fn refuse_foreign(bundled: Bundled, owner: Bundled, given: Option<String>) -> Result<(), Failure> {
    match given {
        Some(given) if bundled != owner => Err(Failure::usage(
            format!("`{given}` is an option of `nexo serve {owner}`, not of `{bundled}`"),
            Some(format!("remove `{given}`, or run `nexo serve {owner}`")),
        )),
        _ => Ok(()),
    }
}

fn files_options(files: &FilesArgs) -> Result<nexo_bundled::files::FilesOptions, Failure> {
    if files.roots.is_empty() {
        return Err(Failure::usage(
            "`nexo serve files` needs the directories it may read",
            Some("give one or more: `nexo serve files ./project ./docs`".into()),
        ));
    }
    let mut options = nexo_bundled::files::FilesOptions {
        roots: files.roots.clone(),
        allow_reports: files.allow_reports,
        ..Default::default()
    };
    if !files.allow_ext.is_empty() {
        options.extensions = nexo_bundled::files::AllowedExtensions::from_list(&files.allow_ext)
            .map_err(|error| Failure::usage(error.to_string(), Some(error.hint())))?;
    }
    Ok(options)
}

/// The music library's file: `--db`, else the default under the user's data
/// directory.
fn music_db(music: &MusicArgs) -> Result<std::path::PathBuf, Failure> {
    match &music.db {
        Some(db) => Ok(db.clone()),
        None => env::music_db().ok_or_else(|| {
            Failure::usage(
                "no data directory to keep the music library in (neither `XDG_DATA_HOME` \
                 nor `HOME` is set)",
                Some("give the library's file with `--db FILE`".into()),
            )
        }),
    }
}

fn dns_options(dns: &DnsArgs) -> Result<nexo_bundled::dns::DnsOptions, Failure> {
    let mut options = nexo_bundled::dns::DnsOptions::default();
    if let Some(text) = &dns.resolver {
        let address = nexo_bundled::dns::parse_address(text).ok_or_else(|| {
            Failure::usage(
                format!("`{text}` is not a resolver address"),
                Some("give an IP address with an optional port: `--resolver 192.0.2.1:53`".into()),
            )
        })?;
        options.resolver = Some(address);
    }
    if let Some(timeout) = dns.timeout {
        options.timeout = timeout;
    }
    if let Some(port) = dns.auth_port {
        options.auth_port = port;
    }
    options.log = env::dns_log();
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
