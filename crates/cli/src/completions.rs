//! What a shell and `man` need to know of the command line, generated from
//! its clap definitions (`args.rs`), so that neither can drift from it:
//! `nexo completions SHELL` prints a completion script, `nexo man` the
//! manual page in roff.

use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs};
use crate::failure::Failure;
use crate::output;

/// Prints the completion script for the shell asked for.
pub fn completions(args: &CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "nexo", &mut script);
    output::data(&String::from_utf8_lossy(&script));
    Ok(())
}

/// Prints the manual page, `nexo(1)`.
pub fn man() -> Result<(), Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|error| {
            Failure::unexpected(
                &anyhow::Error::new(error).context("cannot render the manual page"),
                None,
            )
        })?;
    output::data(&String::from_utf8_lossy(&page));
    Ok(())
}
