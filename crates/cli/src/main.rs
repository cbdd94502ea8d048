//! The `nexo` binary: argument parsing and wiring, nothing else. Serving
//! lives in `nexo-serve`, reaching servers in `nexo-client`, the servers
//! themselves behind `nexo-bundled`, traces and their analysis in
//! `nexo-trace`, the gateway's policy and audit checks in `nexo-gateway`,
//! load generation and measurement in `nexo-bench`, auditing a server in
//! `nexo-check`.

mod args;
mod bench;
mod builtin;
mod chat;
mod check;
mod completions;
mod conformance;
mod doctor;
mod env;
mod failure;
mod gateway;
mod gateway_serve;
mod host;
mod inspect;
mod logout;
mod output;
mod serve;
mod server_options;
mod trace;
mod ui;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::filter::Targets;

use crate::args::{Cli, Command};
use crate::failure::Failure;

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(arguments()) {
        Ok(cli) => cli,
        Err(error) if is_requested_output(&error) => {
            return match error.print() {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            };
        }
        Err(error) => return Failure::bad_arguments(&error),
    };
    init_logging();
    // Before anything can build an HTTP client: the binary's rustls has no
    // default crypto provider (tests link one in, so they would not notice).
    nexo_client::http::install_tls_provider();
    if let Some(file) = &cli.cacert
        && let Err(error) = nexo_client::tls::trust_file(file)
    {
        return Failure::from(error).report();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return Failure::unexpected(
                &anyhow::Error::new(error).context("cannot start the async runtime"),
                None,
            )
            .report();
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            None => chat::run(cli.chat).await,
            Some(Command::Serve(args)) => serve::run(args).await,
            Some(Command::Tools(args)) => inspect::tools(args).await,
            Some(Command::Call(args)) => inspect::call(args).await,
            Some(Command::Resources(args)) => inspect::resources(args).await,
            Some(Command::Read(args)) => inspect::read(args).await,
            Some(Command::Prompts(args)) => inspect::prompts(args).await,
            Some(Command::Prompt(args)) => inspect::prompt(args).await,
            Some(Command::Discover(args)) => inspect::discover(args).await,
            Some(Command::Trace(command)) => trace::run(command),
            Some(Command::Servers(args)) => host::servers(args).await,
            Some(Command::Doctor(args)) => doctor::run(args).await,
            Some(Command::Logout(args)) => logout::run(args).await,
            Some(Command::Gateway(args)) => match args.command {
                Some(command) => gateway::run(command).await,
                None => gateway_serve::run(args).await,
            },
            Some(Command::Bench(args)) => bench::run(*args).await,
            Some(Command::Check(args)) => check::run(*args).await,
            Some(Command::Chat(args)) => chat::run(args).await,
            Some(Command::Ui(args)) => ui::run(args).await,
            Some(Command::Completions(args)) => completions::completions(&args),
            Some(Command::Man) => completions::man(),
            Some(Command::ConformanceClient(args)) => conformance::run(args).await,
        }
    });
    // Child processes and open streams are not waited for past this point.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// The command line, without `-h`/`--help` after `nexo help`: clap's `help`
/// subcommand takes them for the name of a subcommand (`nexo help -h`
/// exited 1), where they can only ask for help.
fn arguments() -> Vec<std::ffi::OsString> {
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments.get(1).is_some_and(|word| word == "help") {
        let tail = arguments.split_off(2);
        arguments.extend(
            tail.into_iter()
                .filter(|word| word != "-h" && word != "--help"),
        );
    }
    arguments
}

/// `--help` and `--version`: what was asked for, not an error.
fn is_requested_output(error: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    )
}

/// Diagnostics go to stderr only: stdout belongs to the protocol (stdio
/// servers) or to results (client commands). `RUST_LOG` sets the filter as
/// comma-separated `level` or `target=level` directives; a plain target
/// filter rather than `EnvFilter` keeps the regex engine out of the binary,
/// which is a good part of an idle server's memory.
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    // rmcp's transport worker logs a failed connection at ERROR, and its
    // service every error response at WARN, before nexo reports them with a
    // hint; those lines are noise unless asked for.
    const DEFAULT_FILTER: &str = "warn,rmcp::transport::worker=off,rmcp::service=error";
    let requested = env::var(env::LOG_FILTER);
    let filter = requested
        .as_deref()
        .and_then(|directives| directives.parse::<Targets>().ok())
        .unwrap_or_else(|| {
            DEFAULT_FILTER
                .parse()
                .unwrap_or_else(|_| Targets::new().with_default(tracing::Level::WARN))
        });
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        )
        .with(filter)
        .init();
}
