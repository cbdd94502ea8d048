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
    command.extend(serve_flags(given));
    Ok(Target::Stdio {
        command,
        env: Vec::new(),
        cwd: None,
    })
}

/// `nexo serve`'s flags for `given` (the inverse of its own reading of
/// them): the files server's roots first, then each option that is set.
fn serve_flags(given: &GivenOptions) -> Vec<String> {
    let path = |path: &std::path::Path| path.to_string_lossy().into_owned();
    let mut flags: Vec<String> = given.roots.iter().map(|root| path(root)).collect();
    let mut flag = |name: &str, value: Option<String>| {
        flags.push(format!("--{name}"));
        flags.extend(value);
    };
    if let Some(resolver) = &given.resolver {
        flag("resolver", Some(resolver.clone()));
    }
    if let Some(timeout) = given.dns_timeout {
        flag("timeout", Some(timeout.as_secs_f64().to_string()));
    }
    if let Some(port) = given.auth_port {
        flag("auth-port", Some(port.to_string()));
    }
    if !given.root_hints.is_empty() {
        flag("root-hints", Some(given.root_hints.join(",")));
    }
    if given.allow_reports {
        flag("allow-reports", None);
    }
    if !given.allow_ext.is_empty() {
        flag("allow-ext", Some(given.allow_ext.join(",")));
    }
    if given.allow_hard_links {
        flag("allow-hard-links", None);
    }
    if let Some(db) = &given.db {
        flag("db", Some(path(db)));
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_becomes_its_serve_flag() {
        let given = GivenOptions {
            resolver: Some("127.0.0.1:53".to_owned()),
            dns_timeout: Some(std::time::Duration::from_millis(2500)),
            auth_port: Some(5353),
            root_hints: vec!["1.2.3.4".to_owned(), "5.6.7.8".to_owned()],
            roots: vec!["/srv/a".into(), "/srv/b".into()],
            allow_reports: true,
            allow_ext: vec!["md".to_owned(), "txt".to_owned()],
            allow_hard_links: true,
            db: Some("/tmp/music.db".into()),
        };
        assert_eq!(
            serve_flags(&given),
            [
                "/srv/a",
                "/srv/b",
                "--resolver",
                "127.0.0.1:53",
                "--timeout",
                "2.5",
                "--auth-port",
                "5353",
                "--root-hints",
                "1.2.3.4,5.6.7.8",
                "--allow-reports",
                "--allow-ext",
                "md,txt",
                "--allow-hard-links",
                "--db",
                "/tmp/music.db"
            ]
        );
        assert!(serve_flags(&GivenOptions::default()).is_empty());
    }
}
