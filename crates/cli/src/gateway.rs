//! `nexo gateway check-policy` and `nexo gateway verify-audit`: run
//! nexo-gateway's checks and print their reports. Serving (`nexo gateway
//! --config`) is not here yet.

use nexo_gateway::audit;
use nexo_gateway::check;
use nexo_gateway::policy::{Resolver, StaticResolver, SystemResolver};

use crate::args::{CheckPolicyArgs, GatewayCommand, VerifyAuditArgs};
use crate::failure::{Exit, Failure};
use crate::output;

pub async fn run(command: GatewayCommand) -> Result<(), Failure> {
    match command {
        GatewayCommand::CheckPolicy(args) => check_policy(&args).await,
        GatewayCommand::VerifyAudit(args) => verify_audit(&args),
    }
}

async fn check_policy(args: &CheckPolicyArgs) -> Result<(), Failure> {
    // Host names in the request's URLs are resolved as the gateway would;
    // without a resolver configuration none resolves, and the explanation
    // says so.
    let resolver: Box<dyn Resolver> = match args.request {
        Some(_) => match SystemResolver::from_system() {
            Ok(resolver) => Box::new(resolver),
            Err(reason) => {
                output::status(&format!("warning: {reason}; host names will not resolve"));
                Box::new(StaticResolver::new())
            }
        },
        None => Box::new(StaticResolver::new()),
    };
    let report =
        check::check_policy(&args.file, args.request.as_deref(), resolver.as_ref()).await?;
    if args.json {
        output::json(&report);
    } else {
        output::data(&report.to_text());
    }
    Ok(())
}

fn verify_audit(args: &VerifyAuditArgs) -> Result<(), Failure> {
    let report = audit::verify(&args.file, args.head.as_deref())?;
    if args.json {
        output::json(&report);
    } else {
        output::data(&report.to_text());
    }
    let Some(first) = report.problems.first() else {
        return Ok(());
    };
    let count = report.problems.len();
    let noun = if count == 1 { "problem" } else { "problems" };
    Err(Failure::new(
        Exit::Usage,
        "audit_broken",
        format!(
            "the audit log `{}` has {count} {noun}; the first is at line {}: {}",
            args.file.display(),
            first.line,
            first.detail
        ),
    )
    .hint(
        "keep the file as evidence and find out who could write it; the gateway starts a \
             new chain in a new file"
            .to_owned(),
    ))
}
