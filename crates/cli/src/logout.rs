//! `nexo logout`: the server's URL (given, or a configured server's), its
//! token records revoked and deleted by nexo-client's `auth::revoke`, and
//! what became of each one told.

use nexo_client::auth::revoke::{self, LoggedOut, NotRevoked, Revocation};
use nexo_client::{ClientError, Target};
use serde_json::json;

use crate::args::LogoutArgs;
use crate::failure::Failure;
use crate::{env, output};

pub async fn run(args: LogoutArgs) -> Result<(), Failure> {
    let url = match (&args.url, &args.server) {
        (Some(url), _) => url.clone(),
        (None, Some(name)) => {
            let config = crate::host::load(args.config.as_deref())?;
            match crate::host::target_of(crate::host::find(&config, name)?)? {
                Target::Url { url, .. } => url,
                _ => {
                    return Err(Failure::from(ClientError::usage(
                        format!("`{name}` is not reached over HTTP, so it keeps no OAuth tokens"),
                        None,
                    )));
                }
            }
        }
        (None, None) => {
            return Err(Failure::usage(
                "name the server: --url URL or --server NAME",
                None,
            ));
        }
    };
    let store = env::token_store();
    let done = revoke::log_out(
        &store,
        url.expose(),
        args.client_secret.as_ref(),
        args.timeout,
    )
    .await
    .map_err(|error| {
        Failure::from(ClientError::usage(
            format!("cannot log out of {url}: {error}"),
            Some(format!(
                "the tokens are kept under {}",
                env::token_dir().map_or_else(
                    || "this run's memory".to_owned(),
                    |dir| format!("`{}`", dir.display())
                )
            )),
        ))
    })?;
    if args.json {
        output::json(&json!({
            "url": url.to_string(),
            "records": done.iter().map(record_json).collect::<Vec<_>>(),
        }));
    } else if done.is_empty() {
        output::data(&format!("no tokens are kept for {url}\n"));
    } else {
        for record in &done {
            output::data(&format!("{}\n", told(record)));
        }
    }
    match done.iter().find_map(|record| match &record.revocation {
        Revocation::Failed(reason) => Some(reason),
        _ => None,
    }) {
        Some(reason) => Err(Failure::from(NotRevoked {
            reason: reason.clone(),
        })),
        None => Ok(()),
    }
}

/// One record's outcome, in a sentence.
fn told(record: &LoggedOut) -> String {
    let issuer = &record.issuer;
    match &record.revocation {
        Revocation::Revoked(kinds) if kinds.is_empty() => {
            format!("deleted the record of {issuer} (it held no token to revoke)")
        }
        Revocation::Revoked(kinds) => format!(
            "revoked at {issuer} ({}) and deleted",
            kinds
                .iter()
                .map(|kind| kind.replace('_', " "))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Revocation::NotOffered(reason) => format!(
            "deleted the tokens of {issuer}; {reason}, so they stay valid there until they expire"
        ),
        Revocation::Failed(reason) => {
            format!("deleted the tokens of {issuer}, but could not revoke them: {reason}")
        }
    }
}

fn record_json(record: &LoggedOut) -> serde_json::Value {
    let (revoked, tokens, reason) = match &record.revocation {
        Revocation::Revoked(kinds) => (true, kinds.clone(), None),
        Revocation::NotOffered(reason) | Revocation::Failed(reason) => {
            (false, Vec::new(), Some(reason))
        }
    };
    json!({
        "issuer": record.issuer,
        "deleted": true,
        "revoked": revoked,
        "tokens": tokens,
        "offered": !matches!(record.revocation, Revocation::NotOffered(_)),
        "reason": reason,
    })
}
