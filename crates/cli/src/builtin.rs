//! Bundled servers as in-process targets (`--builtin NAME`, and `builtin`
//! entries of a configuration file): the wiring between nexo-bundled,
//! which knows the servers and their options, and nexo-client, which runs
//! any rmcp handler in-process.

use nexo_bundled::{Bundled, GivenOptions, ServerOptions};
use nexo_client::InProcess;

use crate::failure::Failure;

/// `bundled` built with `given` options, ready to run in-process.
pub fn in_process(bundled: Bundled, given: &GivenOptions) -> Result<InProcess, Failure> {
    let options = ServerOptions::for_server(bundled, given, crate::serve::defaults(bundled))?;
    let built = bundled.build(&options)?;
    Ok(InProcess::new(bundled.name(), built.server))
}

/// What `--builtin NAME` runs: the server's defaults, and for `files`
/// the working directory as its root.
pub fn defaults(bundled: Bundled) -> GivenOptions {
    GivenOptions::defaults_in(bundled, std::path::Path::new("."))
}
