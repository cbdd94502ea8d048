//! The `nexo` binary: argument parsing and wiring, nothing else. Serving
//! lives in `nexo-serve`, reaching servers in `nexo-client`, the servers
//! themselves behind `nexo-bundled`.

mod args;
mod conformance;
mod env;
mod failure;
mod inspect;
mod output;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::failure::Failure;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
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
            Command::Serve(args) => serve::run(args).await,
            Command::Tools(args) => inspect::tools(args).await,
            Command::Call(args) => inspect::call(args).await,
            Command::Resources(args) => inspect::resources(args).await,
            Command::Read(args) => inspect::read(args).await,
            Command::Prompts(args) => inspect::prompts(args).await,
            Command::Prompt(args) => inspect::prompt(args).await,
            Command::Discover(args) => inspect::discover(args).await,
            Command::ConformanceClient(args) => conformance::run(args).await,
        }
    });
    // Child processes and open streams are not waited for past this point.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// Diagnostics go to stderr only: stdout belongs to the protocol (stdio
/// servers) or to results (client commands). `RUST_LOG` sets the filter.
fn init_logging() {
    // rmcp's transport worker logs a failed connection at ERROR before nexo
    // reports it with a hint; that line is noise unless asked for.
    let filter =
        env::var(env::LOG_FILTER).unwrap_or_else(|| "warn,rmcp::transport::worker=off".into());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
