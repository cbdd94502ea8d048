//! `nexo check`: the target chosen as every client command chooses it, the
//! probe groups and `--fail-on` read, the report written (text, `--json`,
//! `--sarif FILE`) and the exit status decided. Probing and linting live
//! in `nexo-check`; this module parses, wires and prints.

use nexo_check::{Options, Selection};
use nexo_client::Target;

use crate::args::CheckArgs;
use crate::failure::{Exit, Failure};
use crate::output;

pub async fn run(args: CheckArgs) -> Result<(), Failure> {
    let chosen = crate::inspect::choose(&args.target)?;
    let target = match chosen.target {
        Target::InProcess(server) => {
            // The directories `--builtin files` reads by default.
            let roots = args
                .target
                .builtin
                .map(|bundled| crate::builtin::defaults(bundled).roots)
                .unwrap_or_default();
            as_child(server.name(), &roots)?
        }
        other => other,
    };
    let options = Options {
        timeout: args.target.timeout,
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
        std::fs::write(path, format!("{text}\n")).map_err(|error| Failure {
            exit: Exit::Usage,
            code: "io_error",
            message: format!("cannot write `{}`", path.display()),
            causes: vec![error.to_string()],
            hint: Some("give --sarif a path in a directory you can write to".to_owned()),
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
    Err(Failure {
        exit: Exit::Findings,
        code: "findings",
        message: format!(
            "{failing} finding(s) at or above `{}`; {}",
            args.fail_on,
            report.score_line()
        ),
        causes: Vec::new(),
        hint: Some(
            "each finding above says why it matters and how to fix it; --fail-on sets the level that fails"
                .to_owned(),
        ),
    })
}

/// A bundled server as the child `nexo serve NAME` of this very binary:
/// in-process there is no wire to probe.
fn as_child(name: &str, roots: &[std::path::PathBuf]) -> Result<Target, Failure> {
    let program = std::env::current_exe().map_err(|error| Failure {
        exit: Exit::Usage,
        code: "usage",
        message: "cannot find nexo's own executable to run the bundled server".to_owned(),
        causes: vec![error.to_string()],
        hint: Some(format!(
            "check it as a child: nexo check --stdio 'nexo serve {name}'"
        )),
    })?;
    let mut command = vec![
        program.to_string_lossy().into_owned(),
        "serve".to_owned(),
        name.to_owned(),
    ];
    command.extend(roots.iter().map(|root| root.to_string_lossy().into_owned()));
    Ok(Target::Stdio {
        command,
        env: Vec::new(),
        cwd: None,
    })
}
