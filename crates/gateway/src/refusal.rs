//! What the gateway answers instead of an upstream's result, and how: each
//! case's JSON-RPC error code decided in one exhaustive match
//! ([`Refusal::code`]). A refused tool call is answered as a tool error
//! (`isError`), because hosts show a model the text of a tool error and
//! often hide a protocol error's; prompts and resources have no such
//! result, so theirs are JSON-RPC errors. Either way the message names the
//! rule, the detector or the upstream, and `data` (or the result's `_meta`
//! under [`META_KEY`]) carries it for programs.

use nexo_hint::Hinted;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, MetaObject};
use serde_json::{Value, json};

use crate::detect::Finding;
use crate::federation::Upstream;
use crate::limits::{Exceeded, Unchecked};
use crate::policy::Decision;

/// The key of the gateway's part of a refused tool call's `_meta`.
pub const META_KEY: &str = "dev.nexo/gateway";

/// The policy denied the request.
pub const DENIED: ErrorCode = ErrorCode(-32001);
/// A detector blocked the arguments, the result or a description.
pub const BLOCKED: ErrorCode = ErrorCode(-32003);
/// The upstream could not be reached, or went away; or the store the rate
/// limits are kept in (Redis) did not answer.
pub const UNAVAILABLE: ErrorCode = ErrorCode(-32004);
/// A rate limit refused the request (-32029, for HTTP's 429).
pub const LIMITED: ErrorCode = ErrorCode(-32029);
/// The upstream needs the user to visit a URL first (2025-11-25): relayed
/// as the upstream sent it, message and `data.elicitations` untouched, for
/// the client to open them.
pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

/// Why a request got no upstream answer.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// No tool, prompt or resource goes by that name at this endpoint.
    Unknown {
        what: &'static str,
        name: String,
        endpoint: String,
    },
    Denied(Box<Decision>),
    Blocked {
        /// `arguments` or `result`.
        place: &'static str,
        findings: Vec<Finding>,
    },
    /// The upstream answered a JSON-RPC error: relayed with its code.
    UpstreamError {
        server: String,
        code: i32,
        message: String,
        data: Option<Value>,
    },
    Unavailable(Box<Upstream>),
    /// A rate limit refused the request.
    Limited(Box<Exceeded>),
    /// A rate limit could not be checked (Redis did not answer) and
    /// `whenDown` refuses what it cannot count.
    Unchecked(Unchecked),
}

impl Refusal {
    pub fn upstream(failure: Upstream) -> Self {
        match failure.error {
            nexo_client::ClientError::Rpc {
                code,
                message,
                data,
                ..
            } => Refusal::UpstreamError {
                server: failure.server,
                code,
                message,
                data,
            },
            _ => Refusal::Unavailable(Box::new(failure)),
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::Unknown {
                what: "resource", ..
            } => ErrorCode::RESOURCE_NOT_FOUND,
            Refusal::Unknown { .. } => ErrorCode::INVALID_PARAMS,
            Refusal::Denied(_) => DENIED,
            Refusal::Blocked { .. } => BLOCKED,
            Refusal::UpstreamError { code, .. } => ErrorCode(*code),
            Refusal::Unavailable(_) => UNAVAILABLE,
            Refusal::Limited(_) => LIMITED,
            Refusal::Unchecked(_) => UNAVAILABLE,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Refusal::Unknown {
                what,
                name,
                endpoint,
            } if *what == "task" => format!(
                "the gateway knows no task `{name}` at {endpoint}; a task's id is the one the \
                 `tools/call` that started it answered"
            ),
            Refusal::Unknown {
                what,
                name,
                endpoint,
            } => format!(
                "the gateway offers no {what} `{name}` at {endpoint}; list them with `{what}s/list`"
            ),
            Refusal::Denied(decision) => match &decision.rule {
                Some(rule) => format!(
                    "denied by the gateway's policy, rule `{rule}`: {}",
                    decision.reason
                ),
                None => format!("denied by the gateway's policy: {}", decision.reason),
            },
            Refusal::Blocked { place, findings } => {
                let kinds: Vec<&str> = findings
                    .iter()
                    .filter(|finding| finding.action == crate::detect::Action::Block)
                    .map(|finding| finding.kind)
                    .collect();
                let shown: Vec<String> = kinds.iter().map(|kind| format!("`{kind}`")).collect();
                format!(
                    "blocked by the gateway: the {place} hold what the detector{} {} block{}",
                    if kinds.len() == 1 { "" } else { "s" },
                    shown.join(", "),
                    if kinds.len() == 1 { "s" } else { "" },
                )
            }
            Refusal::UpstreamError { code, message, .. } if *code == URL_ELICITATION_REQUIRED.0 => {
                message.clone()
            }
            Refusal::UpstreamError {
                server, message, ..
            } => format!("upstream `{server}`: {message}"),
            Refusal::Limited(exceeded) => exceeded.message(),
            Refusal::Unchecked(unchecked) => unchecked.message(),
            Refusal::Unavailable(failure) => {
                // The client library's hints speak to a person at nexo's
                // command line (`nexo servers`); the gateway's caller is not.
                let hint = match failure.error.kind() {
                    nexo_client::ErrorKind::Unreachable => {
                        "the gateway reconnects to it by itself: try again in a moment; a call \
                         it was running when it went away was repeated only if the tool is \
                         annotated read-only or idempotent (the gateway's operator sees the \
                         upstream's state in its log and in `nexo_gateway_upstream_up` at \
                         /metrics)"
                            .to_owned()
                    }
                    _ => failure
                        .error
                        .hint()
                        .map(|hint| hint.terminal())
                        .unwrap_or_default(),
                };
                if hint.is_empty() {
                    format!("upstream `{}` failed: {}", failure.server, failure.error)
                } else {
                    format!(
                        "upstream `{}` failed: {}; {hint}",
                        failure.server, failure.error
                    )
                }
            }
        }
    }

    /// What programs read: the decision, rule and findings, or the
    /// upstream.
    pub fn data(&self) -> Option<Value> {
        match self {
            Refusal::Unknown { .. } => None,
            Refusal::Denied(decision) => Some(json!({
                "decision": "deny",
                "rule": decision.rule,
                "reason": decision.reason,
            })),
            Refusal::Blocked { place, findings } => Some(json!({
                "decision": "block",
                "place": place,
                "findings": findings,
            })),
            Refusal::UpstreamError { code, data, .. } if *code == URL_ELICITATION_REQUIRED.0 => {
                data.clone()
            }
            Refusal::UpstreamError { server, data, .. } => Some(json!({
                "upstream": server,
                "data": data,
            })),
            Refusal::Unavailable(failure) => Some(json!({
                "upstream": failure.server,
                "code": failure.error.code(),
            })),
            Refusal::Limited(exceeded) => Some(json!({
                "decision": "limit",
                "limit": exceeded.scope.name(),
                "rate": exceeded.rate,
                "key": exceeded.key,
                "retryAfterSeconds": exceeded.retry_after.as_secs_f64(),
            })),
            Refusal::Unchecked(unchecked) => Some(json!({
                "decision": "limit",
                "limit": unchecked.scope.name(),
                "unchecked": Unchecked::RULE,
                "retryAfterSeconds": Unchecked::RETRY_AFTER.as_secs_f64(),
            })),
        }
    }

    pub fn to_error(&self) -> ErrorData {
        ErrorData::new(self.code(), self.message(), self.data())
    }

    /// A tool call's answer: a tool error for what the gateway refused or
    /// could not reach, the JSON-RPC error for an unknown tool and for an
    /// upstream's own JSON-RPC error.
    pub fn to_tool_answer(&self) -> Result<CallToolResult, ErrorData> {
        match self {
            Refusal::Unknown { .. } | Refusal::UpstreamError { .. } => Err(self.to_error()),
            Refusal::Denied(_)
            | Refusal::Blocked { .. }
            | Refusal::Unavailable(_)
            | Refusal::Limited(_)
            | Refusal::Unchecked(_) => {
                let mut result = CallToolResult::error(vec![ContentBlock::text(self.message())]);
                let mut meta = MetaObject::new();
                meta.0.insert(
                    META_KEY.to_owned(),
                    json!({"code": self.code().0, "data": self.data()}),
                );
                result.meta = Some(meta);
                Ok(result)
            }
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use crate::policy::Verdict;

    #[test]
    fn each_refusal_has_its_code() {
        let decision = Decision {
            verdict: Verdict::Deny,
            rule: Some("no-etc".to_owned()),
            reason: "no".to_owned(),
            evidence: Vec::new(),
            redactions: Vec::new(),
            arguments: None,
        };
        let unavailable = Upstream {
            server: "morse".to_owned(),
            error: nexo_client::ClientError::Timeout {
                target: "morse".to_owned(),
                seconds: 1.0,
            },
        };
        let table = [
            (
                Refusal::Unknown {
                    what: "tool",
                    name: "x".to_owned(),
                    endpoint: "/mcp".to_owned(),
                },
                -32602,
            ),
            (
                Refusal::Unknown {
                    what: "resource",
                    name: "x".to_owned(),
                    endpoint: "/mcp".to_owned(),
                },
                -32002,
            ),
            (Refusal::Denied(Box::new(decision)), -32001),
            (
                Refusal::Blocked {
                    place: "arguments",
                    findings: Vec::new(),
                },
                -32003,
            ),
            (
                Refusal::UpstreamError {
                    server: "morse".to_owned(),
                    code: -32602,
                    message: "bad".to_owned(),
                    data: None,
                },
                -32602,
            ),
            (Refusal::Unavailable(Box::new(unavailable)), -32004),
            (
                Refusal::Limited(Box::new(crate::limits::Exceeded {
                    by: "the gateway",
                    scope: crate::limits::Scope::Identity,
                    rate: "1/s".to_owned(),
                    key: "127.0.0.1".to_owned(),
                    retry_after: std::time::Duration::from_secs(1),
                })),
                -32029,
            ),
            (
                Refusal::Unchecked(Unchecked {
                    scope: crate::limits::Scope::Tool,
                }),
                -32004,
            ),
        ];
        for (refusal, code) in table {
            assert_eq!(refusal.code().0, code, "{refusal:?}");
        }
    }

    #[test]
    fn url_elicitation_required_is_relayed_as_the_upstream_sent_it() {
        let data = json!({"elicitations": [{"mode": "url", "elicitationId": "e1",
                                            "url": "https://auth.example.test/start"}]});
        let refusal = Refusal::UpstreamError {
            server: "shop".to_owned(),
            code: -32042,
            message: "sign in first".to_owned(),
            data: Some(data.clone()),
        };
        let error = refusal.to_tool_answer().unwrap_err();
        assert_eq!(error.code, URL_ELICITATION_REQUIRED);
        assert_eq!(error.message, "sign in first");
        assert_eq!(error.data, Some(data));
    }
}
