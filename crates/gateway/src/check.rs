//! The offline checks behind `nexo gateway check-policy`: validate a policy
//! file and explain how it decides a sample request, as a typed report
//! with a text form for people. (`verify-audit` is [`crate::audit::verify`].)

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use nexo_hint::{Exit, Hint, Hinted};
use serde::Serialize;
use serde_json::Value;

use crate::detect::Actions;
use crate::error::{PolicyError, RequestError};
use crate::policy::{DefaultDecision, Explanation, Identity, Policy, Request, Resolver, Verdict};

/// Why `check-policy` could not report.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Request(#[from] RequestError),
}

impl Hinted for CheckError {
    fn code(&self) -> &'static str {
        match self {
            Self::Policy(error) => error.code(),
            Self::Request(error) => error.code(),
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::Policy(error) => error.exit(),
            Self::Request(error) => error.exit(),
        }
    }

    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Policy(error) => error.hint(),
            Self::Request(error) => error.hint(),
        }
    }
}

/// A valid policy, and how it decides the sample request if one was given.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyReport {
    pub path: PathBuf,
    pub default: DefaultDecision,
    pub rules: Vec<String>,
    pub secrets: Actions,
    pub injection: Actions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// Loads the policy at `path` and, given a sample `request` (JSON, see
/// [`parse_request`]), explains its decision.
pub async fn check_policy(
    path: &Path,
    request: Option<&str>,
    resolver: &dyn Resolver,
) -> Result<PolicyReport, CheckError> {
    let policy = Policy::load(path)?;
    let request = request.map(parse_request).transpose()?;
    let explanation = match &request {
        Some(request) => Some(policy.explain(request, resolver).await),
        None => None,
    };
    let (secrets, injection) = policy.detectors().actions();
    Ok(PolicyReport {
        path: path.to_owned(),
        default: policy.default_decision(),
        rules: policy.rule_names().into_iter().map(str::to_owned).collect(),
        secrets,
        injection,
        request,
        explanation,
    })
}

/// Reads a sample request: either the policy's view of it (`identity`,
/// `server`, `method` (default `tools/call`), `tool`, `arguments`) or a
/// JSON-RPC message whose `params.name` is `server__tool`, with an optional
/// `identity` beside `method`.
pub fn parse_request(text: &str) -> Result<Request, RequestError> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| RequestError::NotJson(error.to_string()))?;
    let Value::Object(object) = &value else {
        return Err(RequestError::NotJson("it is not a JSON object".to_owned()));
    };
    let identity = match object.get("identity") {
        None | Some(Value::Null) => Identity::default(),
        Some(identity) => identity_of(identity)?,
    };
    let method = match object.get("method") {
        None => "tools/call".to_owned(),
        Some(Value::String(method)) => method.clone(),
        Some(_) => {
            return Err(RequestError::Invalid {
                field: "method",
                reason: "it is not a string".to_owned(),
            });
        }
    };
    let string =
        |field: &'static str, value: Option<&Value>| -> Result<Option<String>, RequestError> {
            match value {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(_) => Err(RequestError::Invalid {
                    field,
                    reason: "it is not a string".to_owned(),
                }),
            }
        };
    if let Some(params) = object.get("params") {
        let name = string("params.name", params.get("name"))?;
        let (server, tool) = match (string("server", object.get("server"))?, name) {
            (Some(server), name) => (server, name),
            // No configuration names the servers here: the server is
            // read up to the first separator.
            (None, Some(name)) => match name.split_once(nexo_client::namespace::SEPARATOR) {
                Some((server, tool)) => (server.to_owned(), Some(tool.to_owned())),
                None => {
                    return Err(RequestError::Missing(
                        "the server (name the tool `server__tool`)",
                    ));
                }
            },
            (None, None) => return Err(RequestError::Missing("the server")),
        };
        let arguments = if method == "tools/call" || method == "prompts/get" {
            params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
        } else {
            params.clone()
        };
        return Ok(Request {
            identity,
            server,
            method,
            tool,
            arguments,
        });
    }
    let server =
        string("server", object.get("server"))?.ok_or(RequestError::Missing("the server"))?;
    Ok(Request {
        identity,
        server,
        method,
        tool: string("tool", object.get("tool"))?,
        arguments: object
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(serde_json::Map::new())),
    })
}

fn identity_of(value: &Value) -> Result<Identity, RequestError> {
    let invalid = |reason: String| RequestError::Invalid {
        field: "identity",
        reason,
    };
    let Value::Object(object) = value else {
        return Err(invalid("it is not an object".to_owned()));
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !matches!(key.as_str(), "subject" | "scopes" | "client"))
    {
        return Err(invalid(format!(
            "`{unknown}` is not one of `subject`, `scopes`, `client`"
        )));
    }
    let subject = match object.get("subject") {
        None | Some(Value::Null) => None,
        Some(Value::String(subject)) => Some(subject.clone()),
        Some(_) => return Err(invalid("`subject` is not a string".to_owned())),
    };
    let scopes = match object.get("scopes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(scopes)) => scopes.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| invalid("`scopes` holds something other than strings".to_owned()))?,
        Some(_) => return Err(invalid("`scopes` is not a list of strings".to_owned())),
    };
    let client = match object.get("client") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(
            text.parse::<IpAddr>()
                .map_err(|_| invalid(format!("`client` `{text}` is not an IP address")))?,
        ),
        Some(_) => return Err(invalid("`client` is not a string".to_owned())),
    };
    Ok(Identity {
        subject,
        scopes,
        client,
    })
}

impl PolicyReport {
    /// The report for people.
    pub fn to_text(&self) -> String {
        let default = match self.default {
            DefaultDecision::Allow => "allow",
            DefaultDecision::Deny => "deny",
        };
        let mut text = format!(
            "{}: valid, {} rules, default {default}\n",
            self.path.display(),
            self.rules.len()
        );
        let Some(explanation) = &self.explanation else {
            for (index, rule) in self.rules.iter().enumerate() {
                text.push_str(&format!("  {}. {rule}\n", index + 1));
            }
            return text;
        };
        if let Some(request) = &self.request {
            let who = request.identity.subject.as_deref().unwrap_or("anonymous");
            let tool = request
                .tool
                .as_deref()
                .map(|tool| format!(" `{tool}`"))
                .unwrap_or_default();
            text.push_str(&format!(
                "request: {who} asks `{}` for {}{tool}\n",
                request.server, request.method
            ));
        }
        for (index, step) in explanation.steps.iter().enumerate() {
            let fate = if step.matched { "matched" } else { "skipped" };
            text.push_str(&format!(
                "  {}. {}: {fate}: {}\n",
                index + 1,
                step.rule,
                step.why
            ));
        }
        let decision = &explanation.decision;
        let verdict = match decision.verdict {
            Verdict::Allow => "allow",
            Verdict::Redact => "allow with redactions",
            Verdict::Deny => "deny",
        };
        let by = decision
            .rule
            .as_deref()
            .map_or_else(|| "the default".to_owned(), |rule| format!("rule `{rule}`"));
        text.push_str(&format!(
            "decision: {verdict} by {by}: {}\n",
            decision.reason
        ));
        for redaction in &decision.redactions {
            text.push_str(&format!(
                "  redacted `{}` (rule `{}`)\n",
                redaction.pointer, redaction.rule
            ));
        }
        if let Some(arguments) = &decision.arguments {
            text.push_str(&format!("arguments passed on: {arguments}\n"));
        }
        text
    }
}
