//! `nexo check`: the target chosen as every client command chooses it, the
//! probe groups and `--fail-on` read, the report written (text, `--json`,
//! `--sarif FILE`) and the exit status decided. Probing and linting live
//! in `nexo-check`; this module parses, wires and prints.

use nexo_bundled::{Bundled, GivenOptions};
use nexo_check::{Options, Selection};
use nexo_client::Target;
use nexo_client::config::ServerSpec;

use crate::args::CheckArgs;
use crate::failure::{Exit, Failure};
use crate::output;

pub async fn run(args: CheckArgs) -> Result<(), Failure> {
    let chosen = crate::inspect::choose(&args.target)?;
    let target = match chosen.target {
        Target::InProcess(server) => {
            let given = match (&args.target.server, args.target.builtin) {
                // A configuration entry `{"builtin": NAME, ...options}`.
                (Some(name), _) => entry_options(args.target.config.as_deref(), name)?,
                // The directories `--builtin files` reads by default.
                (None, Some(bundled)) => crate::builtin::defaults(bundled),
                (None, None) => GivenOptions::default(),
            };
            as_child(server.name(), &given)?
        }
        other => other,
    };
    let options = Options {
        timeout: args.target.timeout,
        startup: args.target.startup.seconds,
        selection: Selection {
            only: args.only.clone(),
            skip: args.skip.clone(),
        },
    };
    if !args.target.json {
        output::status(&format!("checking {target} ..."));
    }
    let report = nexo_check::check(&target, &options).await?;
    if let Some(path) = &args.sarif {
        let text = serde_json::to_string_pretty(&report.to_sarif()).unwrap_or_default();
        std::fs::write(path, format!("{text}\n")).map_err(|error| {
            Failure::new(
                Exit::Usage,
                "io_error",
                format!("cannot write `{}`", path.display()),
            )
            .caused_by(vec![error.to_string()])
            .hint("give --sarif a path in a directory you can write to")
        })?;
    }
    if args.target.json {
        output::json(&report.to_json());
    } else {
        output::data(&report.render());
    }
    let failing = report
        .findings
        .iter()
        .filter(|finding| finding.severity >= args.fail_on)
        .count();
    if failing == 0 {
        return Ok(());
    }
    Err(Failure::new(
        Exit::Findings,
        "findings",
        format!(
            "{failing} finding(s) at or above `{}`; {}",
            args.fail_on,
            report.score_line()
        ),
    )
    .hint(
        "each finding above says why it matters and how to fix it; --fail-on sets the level that fails",
    ))
}

/// The options of the configuration entry `name` (a `builtin` one).
fn entry_options(config: Option<&std::path::Path>, name: &str) -> Result<GivenOptions, Failure> {
    let config = crate::host::load(config)?;
    let server = crate::host::find(&config, name)?;
    let ServerSpec::Builtin {
        server: bundled,
        options,
        base_dir,
    } = &server.spec
    else {
        return Ok(GivenOptions::default());
    };
    let bundled: Bundled = bundled.parse()?;
    GivenOptions::from_json(bundled, options, base_dir).map_err(Failure::from)
}

/// A bundled server as the child `nexo serve NAME` of this very binary
/// (in-process there is no wire to probe), its options given as the
/// flags `nexo serve` reads them from.
fn as_child(name: &str, given: &GivenOptions) -> Result<Target, Failure> {
    let program = std::env::current_exe().map_err(|error| {
        Failure::new(
            Exit::Usage,
            "usage",
            "cannot find nexo's own executable to run the bundled server",
        )
        .caused_by(vec![error.to_string()])
        .hint(format!(
            "check it as a child: nexo check --stdio 'nexo serve {name}'"
        ))
    })?;
    let mut command = vec![
        program.to_string_lossy().into_owned(),
        "serve".to_owned(),
        name.to_owned(),
    ];
    command.extend(crate::server_options::serve_flags(given));
    Ok(Target::Stdio {
        command,
        env: Vec::new(),
        cwd: None,
    })
}
