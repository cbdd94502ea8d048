//! `nexo doctor`: the target chosen as every client command chooses it (or
//! every server of a configuration), the checklist run by nexo-client's
//! `doctor`, its steps printed as they finish, and the exit status taken
//! from the first step that failed.

use nexo_client::doctor::{self, Step};
use nexo_client::{ConnectOptions, ElicitationPolicy, Era, ErrorKind, Target};
use serde_json::json;

use crate::args::DoctorArgs;
use crate::failure::{Exit, Failure};
use crate::output;

pub async fn run(args: DoctorArgs) -> Result<(), Failure> {
    let (targets, named) = chosen(&args)?;
    let json = args.target.json;
    let mut reports = Vec::new();
    for (name, target) in &targets {
        let options = options(&args, name.clone());
        if !json {
            output::data(&format!("{}\n", heading(name.as_deref(), target)));
        }
        let progress = |step: &Step| {
            if !json {
                output::data(&step.render());
            }
        };
        let report = doctor::diagnose(target, &options, &progress).await;
        if !json {
            output::data(&format!("{}\n", report.verdict()));
        }
        reports.push((name.clone(), report));
    }
    if json {
        let documents: Vec<_> = reports
            .iter()
            .map(|(name, report)| {
                let mut document = report.to_json();
                if let (Some(name), Some(object)) = (name, document.as_object_mut()) {
                    object.insert("server".to_owned(), json!(name));
                }
                document
            })
            .collect();
        match documents.as_slice() {
            [one] if named => output::json(one),
            _ => output::json(&json!({ "servers": documents })),
        }
    }
    let failed: Vec<(String, &Step)> = reports
        .iter()
        .filter_map(|(name, report)| {
            report
                .first_failure()
                .map(|step| (name.clone().unwrap_or_else(|| report.target.clone()), step))
        })
        .collect();
    let Some((first_name, first_step)) = failed.first() else {
        return Ok(());
    };
    let message = match reports.len() {
        1 => format!(
            "`{first_name}`: the `{}` step failed: {}",
            first_step.name, first_step.summary
        ),
        all => format!(
            "{} of {all} servers failed a step; the first, `{first_name}`, at `{}`: {}",
            failed.len(),
            first_step.name,
            first_step.summary
        ),
    };
    let failure = Failure::new(
        first_step.kind.map_or(Exit::Usage, ErrorKind::exit),
        "doctor_failed",
        message,
    );
    Err(match &first_step.hint {
        Some(hint) => failure.hint(hint.as_str()),
        None => failure,
    })
}

/// A target with its name in the configuration, if it has one.
type Named = (Option<String>, Target);

/// The targets to check: the one the flags name (and `true`), else every
/// server of the configuration.
fn chosen(args: &DoctorArgs) -> Result<(Vec<Named>, bool), Failure> {
    let flags = &args.target;
    if flags.url.is_some()
        || flags.stdio.is_some()
        || flags.builtin.is_some()
        || flags.server.is_some()
    {
        let chosen = crate::inspect::choose(flags)?;
        return Ok((vec![(flags.server.clone(), chosen.target)], true));
    }
    let config = crate::host::load(flags.config.as_deref())?;
    let mut targets = Vec::new();
    for server in config.servers.iter().filter(|server| !server.disabled) {
        let allowed = crate::host::find(&config, &server.name)?;
        targets.push((Some(server.name.clone()), crate::host::target_of(allowed)?));
    }
    if targets.is_empty() {
        return Err(Failure::usage(
            "the configuration names no server to check",
            Some(
                "name one: --url URL, --stdio 'COMMAND', --builtin NAME or --server NAME"
                    .to_owned(),
            ),
        ));
    }
    Ok((targets, false))
}

/// How to connect: as the other client commands do, without OAuth (the
/// doctor reports what a 401 asks for, and never opens a browser to sign
/// in) and with no server output shown but in the steps.
fn options(args: &DoctorArgs, server_name: Option<String>) -> ConnectOptions {
    ConnectOptions {
        timeout: args.target.timeout,
        startup: args.target.startup.seconds,
        era: Era::Auto,
        oauth: None,
        elicitation: ElicitationPolicy::Decline,
        child_stderr: None,
        notices: None,
        trace: None,
        server_name,
        roots: Vec::new(),
        sampling: None,
        extensions: Default::default(),
    }
}

fn heading(name: Option<&str>, target: &Target) -> String {
    match name {
        Some(name) => format!("{name}: {target}"),
        None => target.to_string(),
    }
}
