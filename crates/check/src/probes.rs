//! The behaviour probes every transport shares, each a real exchange whose
//! evidence is kept: errors answered as the revision requires (an unknown
//! tool, bad arguments, exceptions), safe tools' results against their
//! output schemas, concurrent requests answered by id (footgun 6),
//! resource URIs stable across two lists (footgun 7), version negotiation,
//! capabilities honest, definitions that change within a session, and for
//! a stdio child its stray stdout, its stderr and its exit on EOF.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::Run;
use crate::finding::{Finding, Group, Severity};
use crate::link::{Exchange, Link, LinkError};

/// A tool name no server has.
const NO_SUCH_TOOL: &str = "nexo_check_no_such_tool";
/// How many requests the concurrency probe has in flight at once.
const CONCURRENT: usize = 8;
/// The most safe tools called.
const MAX_CALLS: usize = 20;

pub(crate) async fn run(run: &mut Run) {
    if run.runs(Group::Errors) {
        unknown_tool(run).await;
        bad_arguments(run).await;
    }
    safe_calls(run).await;
    // A call may have changed a list.
    run.relist().await;
    if run.runs(Group::Protocol) {
        concurrency(run).await;
        cancellation(run).await;
    }
    if run.runs(Group::Resources) {
        resources(run).await;
    }
    if run.runs(Group::Capabilities) {
        capabilities(run).await;
    }
    if run.runs(Group::Protocol) {
        version_negotiation(run).await;
        crate::stateless::probe(run).await;
    }
    if run.runs(Group::Security) {
        definitions_change(run).await;
    }
}

/// Whether a tool says it is safe to call: read-only and closed-world.
pub(crate) fn safe_to_call(tool: &Value) -> bool {
    let hint = |key: &str| {
        tool.get("annotations")
            .and_then(|annotations| annotations.get(key))
            .and_then(Value::as_bool)
    };
    hint("readOnlyHint") == Some(true)
        && hint("openWorldHint") == Some(false)
        && hint("destructiveHint") != Some(true)
}

pub(crate) fn name_of(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("")
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Arguments a tool's schema takes: each required property given a plain
/// value of its type (`"."` for a path, the first of an enum).
pub(crate) fn sample_arguments(schema: &Value, text: &str) -> Map<String, Value> {
    let mut arguments = Map::new();
    for name in required(schema) {
        let property = schema
            .get("properties")
            .and_then(|properties| properties.get(&name))
            .unwrap_or(&Value::Null);
        let value = if let Some(first) = property
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|values| values.first())
        {
            first.clone()
        } else {
            match property.get("type").and_then(Value::as_str) {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ if name.contains("path") || name.contains("dir") => json!("."),
                _ => json!(text),
            }
        };
        arguments.insert(name, value);
    }
    arguments
}

/// What a request that found no answer says, as a finding (a crash or a
/// silence), or `None` when it was answered.
fn unanswered(exchange: &Exchange, probe: &str, subject: &str) -> Option<Finding> {
    match &exchange.answer {
        Ok(_) => None,
        Err(LinkError::Ended(why)) => Some(
            Finding::new(
                "server-crashed",
                Severity::Critical,
                Group::Errors,
                format!("the server ended during the {probe} probe ({why})"),
                "spec, error handling: a bad request gets an error answer, never a crash; seed 002 §16.4",
                "catch the failure and answer it (a JSON-RPC error, or a result with isError: true)",
            )
            .evidence(exchange.evidence())
            .subject(subject),
        ),
        Err(LinkError::Timeout) => Some(
            Finding::new(
                "no-answer",
                Severity::Error,
                Group::Errors,
                format!("the server never answered the {probe} probe"),
                "spec, error handling: every request gets a response; seed 002 §16.4",
                "answer every request, with an error if it cannot be served",
            )
            .evidence(exchange.evidence())
            .subject(subject),
        ),
        Err(_) => None,
    }
}

/// `tools/call` of a tool that does not exist: a JSON-RPC error.
async fn unknown_tool(run: &mut Run) {
    if !run.declares("tools") {
        run.probe(
            "unknown-tool",
            Group::Errors,
            "not-applicable",
            "no tools declared",
        );
        return;
    }
    let exchange = run
        .link
        .request("tools/call", json!({"name": NO_SUCH_TOOL, "arguments": {}}))
        .await;
    run.probe("unknown-tool", Group::Errors, "ran", "");
    if let Some(finding) = unanswered(&exchange, "unknown-tool", NO_SUCH_TOOL) {
        run.push(finding);
        return;
    }
    const WHY: &str = "spec 2025-11-25, server/tools (error handling): an unknown tool is a protocol error (-32602)";
    if let Some(result) = exchange.result() {
        let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
        run.push(
            Finding::new(
                if is_error {
                    "unknown-tool-is-error-result"
                } else {
                    "unknown-tool-accepted"
                },
                if is_error { Severity::Warning } else { Severity::Error },
                Group::Errors,
                if is_error {
                    "an unknown tool is answered with `isError: true` instead of a JSON-RPC error".to_owned()
                } else {
                    "a call of an unknown tool is answered as a success".to_owned()
                },
                WHY,
                "answer a call of an unknown tool with a JSON-RPC error, code -32602 (invalid params)",
            )
            .evidence(exchange.evidence())
            .subject(NO_SUCH_TOOL),
        );
    } else if let Some(code) = exchange.error_code()
        && code != -32602
    {
        run.push(
            Finding::new(
                "unknown-tool-error-code",
                Severity::Info,
                Group::Errors,
                format!("an unknown tool is answered with error code {code}, not -32602"),
                WHY,
                "use -32602 (invalid params) for an unknown tool",
            )
            .evidence(exchange.evidence())
            .subject(NO_SUCH_TOOL),
        );
    }
}

/// A safe tool called without its required arguments: `isError: true`
/// (2025-11-25) or -32602, never a success, a crash or an exception.
async fn bad_arguments(run: &mut Run) {
    let tool = run
        .tools
        .iter()
        .find(|tool| {
            safe_to_call(tool)
                && !required(tool.get("inputSchema").unwrap_or(&Value::Null)).is_empty()
        })
        .cloned();
    let Some(tool) = tool else {
        run.probe(
            "bad-arguments",
            Group::Errors,
            "skipped",
            "no read-only, closed-world tool with required arguments to call",
        );
        return;
    };
    let name = name_of(&tool).to_owned();
    let exchange = run
        .link
        .request("tools/call", json!({"name": name, "arguments": {}}))
        .await;
    run.probe(
        "bad-arguments",
        Group::Errors,
        "ran",
        format!("tool `{name}`"),
    );
    if let Some(finding) = unanswered(&exchange, "bad-arguments", &name) {
        run.push(finding);
        return;
    }
    if let Some(result) = exchange.result()
        && result.get("isError").and_then(Value::as_bool) != Some(true)
    {
        run.push(
            Finding::new(
                "bad-arguments-accepted",
                Severity::Warning,
                Group::Errors,
                format!("tool `{name}` succeeded without its required arguments"),
                "spec 2025-11-25, server/tools: input validation errors are tool execution errors (isError: true); best practices §16.7",
                "validate arguments against the input schema and answer a failure with isError: true and a message the model can act on",
            )
            .evidence(exchange.evidence())
            .subject(name.as_str()),
        );
    }
    exception(run, &exchange, &name);
}

/// A JSON-RPC internal error where a tool failed (footgun 9).
fn exception(run: &mut Run, exchange: &Exchange, tool: &str) {
    let Some(code) = exchange.error_code() else {
        return;
    };
    if code == -32603 || (-32099..=-32000).contains(&code) {
        run.push(
            Finding::new(
                "exception-as-protocol-error",
                Severity::Warning,
                Group::Errors,
                format!("tool `{tool}`'s failure is a JSON-RPC error ({code}), not `isError: true`"),
                "footgun 9 (seed 002, Appendix B); best practices §16.4: the model never sees a protocol error",
                "catch the failure in the tool and return a result with isError: true and a message",
            )
            .evidence(exchange.evidence())
            .subject(tool),
        );
    }
}

/// Calls the safe tools once each: results read for hidden instructions,
/// structured content checked against the output schema.
async fn safe_calls(run: &mut Run) {
    let tools: Vec<Value> = run
        .tools
        .iter()
        .filter(|tool| safe_to_call(tool))
        .take(MAX_CALLS)
        .cloned()
        .collect();
    let skipped = run.tools.len() - tools.len();
    if tools.is_empty() {
        run.probe(
            "tool-results",
            Group::Definitions,
            "skipped",
            "no tool says readOnlyHint: true and openWorldHint: false",
        );
        return;
    }
    for tool in &tools {
        let name = name_of(tool).to_owned();
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        let arguments = sample_arguments(schema, "nexo-check");
        let exchange = run
            .link
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        if matches!(exchange.answer, Err(LinkError::Timeout)) {
            // A real call may be slow on purpose (everything's
            // trigger-long-running-operation takes 10 s by default).
            run.push(
                Finding::new(
                    "tool-call-slow",
                    Severity::Info,
                    Group::Errors,
                    format!(
                        "tool `{name}` did not answer within {} s",
                        run.options.timeout.as_secs_f64()
                    ),
                    "spec, utilities/progress: long operations report progress when the request carries a progressToken",
                    "send progress notifications for long calls; raise --timeout if the call is slow on purpose",
                )
                .evidence(exchange.evidence())
                .subject(name.as_str()),
            );
            continue;
        }
        if let Some(finding) = unanswered(&exchange, "tool-results", &name) {
            run.push(finding);
            if run_ended(run) {
                return;
            }
            continue;
        }
        if run.runs(Group::Errors) {
            exception(run, &exchange, &name);
        }
        let Some(result) = exchange.result().cloned() else {
            continue;
        };
        let findings = crate::poison::result(&name, &result);
        run.report.findings.extend(findings);
        image_without_text(run, &name, &result);
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(schema) = tool.get("outputSchema") {
            output_schema(run, &name, schema, &result, &exchange);
        }
    }
    run.probe(
        "tool-results",
        Group::Definitions,
        "ran",
        format!(
            "{} safe tools called; {skipped} not called (not read-only and closed-world)",
            tools.len()
        ),
    );
}

fn run_ended(run: &Run) -> bool {
    match &*run.link {
        Link::Stdio(stdio) => stdio.has_ended(),
        Link::Http(_) | Link::Sse(_) => false,
    }
}

fn output_schema(run: &mut Run, name: &str, schema: &Value, result: &Value, exchange: &Exchange) {
    const WHY: &str = "spec 2025-11-25, server/tools (output schema): a tool with an outputSchema MUST return conforming structuredContent";
    let Some(structured) = result.get("structuredContent") else {
        run.push(
            Finding::new(
                "structured-content-missing",
                Severity::Error,
                Group::Definitions,
                format!("tool `{name}` declares an outputSchema but returned no structuredContent"),
                WHY,
                "return structuredContent matching the outputSchema with every successful result",
            )
            .evidence(exchange.evidence())
            .subject(name),
        );
        return;
    };
    let problem = match jsonschema::validator_for(schema) {
        Err(error) => Some(format!("the output schema itself is invalid: {error}")),
        Ok(validator) => validator.iter_errors(structured).next().map(|error| {
            let at = error.instance_path().to_string();
            format!("at `{at}`: {error}")
        }),
    };
    if let Some(problem) = problem {
        run.push(
            Finding::new(
                "output-schema-mismatch",
                Severity::Error,
                Group::Definitions,
                format!("tool `{name}`'s structuredContent does not match its outputSchema"),
                WHY,
                "make the result match the schema, or correct the schema",
            )
            .evidence(format!("{problem}\nstructuredContent: {structured}"))
            .subject(name),
        );
    }
}

/// Image content with no text beside it (footgun 11).
fn image_without_text(run: &mut Run, name: &str, result: &Value) {
    let content = result.get("content").and_then(Value::as_array);
    let kinds: Vec<&str> = content
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("type").and_then(Value::as_str))
        .collect();
    if kinds.contains(&"image") && !kinds.contains(&"text") {
        run.push(
            Finding::new(
                "image-without-text",
                Severity::Info,
                Group::Definitions,
                format!("tool `{name}` returns an image with no text alternative"),
                "footgun 11 (seed 002, Appendix B): not every client shows images",
                "add a text block describing the image",
            )
            .subject(name),
        );
    }
}

/// Several requests in flight on one connection, each answered by id with
/// its own answer (footgun 6).
async fn concurrency(run: &mut Run) {
    // A safe tool with one required string argument that it echoes lets
    // each answer be matched to its own request; otherwise `ping`.
    let mut echo_tool: Option<(String, String)> = None;
    for tool in run.tools.iter().filter(|tool| safe_to_call(tool)) {
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        let names = required(schema);
        let [argument] = names.as_slice() else {
            continue;
        };
        let is_string = schema
            .get("properties")
            .and_then(|properties| properties.get(argument))
            .and_then(|property| property.get("type"))
            .and_then(Value::as_str)
            == Some("string");
        if !is_string {
            continue;
        }
        let name = name_of(tool).to_owned();
        let marker = "nexocheckprobe0";
        let exchange = run
            .link
            .request(
                "tools/call",
                json!({"name": name, "arguments": {argument.clone(): marker}}),
            )
            .await;
        if exchange
            .result()
            .is_some_and(|result| result.to_string().contains(marker))
        {
            echo_tool = Some((name, argument.clone()));
            break;
        }
    }
    let mut requests = Vec::new();
    for index in 1..=CONCURRENT {
        let id = run.link.next_id();
        let request = match &echo_tool {
            Some((name, argument)) => json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": {argument.clone(): format!("nexocheckprobe{index}")}}
            }),
            None => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        };
        requests.push(request);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (index, request) in requests.into_iter().enumerate() {
        let link = Arc::clone(&run.link);
        tasks.spawn(async move { (index + 1, link.send(request).await) });
    }
    let mut answers = Vec::new();
    while let Some(Ok(answer)) = tasks.join_next().await {
        answers.push(answer);
    }
    answers.sort_by_key(|(index, _)| *index);
    let how = match &echo_tool {
        Some((name, _)) => format!("{CONCURRENT} calls of `{name}` in flight at once"),
        None => format!("{CONCURRENT} pings in flight at once (no safe tool echoes its argument)"),
    };
    run.probe("concurrent-requests", Group::Protocol, "ran", how.clone());
    let unanswered: Vec<&Exchange> = answers
        .iter()
        .filter(|(_, exchange)| exchange.answer.is_err())
        .map(|(_, exchange)| exchange)
        .collect();
    if let Some(first) = unanswered.first() {
        run.push(
            Finding::new(
                "concurrent-requests-unanswered",
                Severity::Error,
                Group::Protocol,
                format!(
                    "{} of {CONCURRENT} concurrent requests got no answer with their id",
                    unanswered.len()
                ),
                "footgun 6 (seed 002, Appendix B): clients send requests concurrently and match answers by id",
                "answer every request with its own id; do not assume one request at a time",
            )
            .evidence(format!("{how}\n{}", first.evidence())),
        );
        return;
    }
    if echo_tool.is_none() {
        return;
    }
    let mixed: Vec<String> = answers
        .iter()
        .filter_map(|(index, exchange)| {
            let own = format!("nexocheckprobe{index}");
            let text = exchange.result()?.to_string();
            (!text.contains(&own)).then(|| {
                format!(
                    "request {} (argument {own}) ← {}",
                    exchange.request["id"],
                    crate::finding::trim(&text, 160)
                )
            })
        })
        .collect();
    if !mixed.is_empty() {
        run.push(
            Finding::new(
                "answers-mixed",
                Severity::Error,
                Group::Protocol,
                format!(
                    "{} of {CONCURRENT} concurrent calls were answered with another call's result",
                    mixed.len()
                ),
                "footgun 6 (seed 002, Appendix B): a server that assumes FIFO order or shares mutable state mixes answers",
                "keep each request's state to itself (or lock shared state) and answer with the request's own id",
            )
            .evidence(format!("{how}\n{}", mixed.join("\n"))),
        );
    }
}

/// A call cancelled as soon as it is sent (`notifications/cancelled`):
/// whether or not its answer comes, the server goes on serving.
async fn cancellation(run: &mut Run) {
    let tool = run.tools.iter().find(|tool| safe_to_call(tool)).cloned();
    let id = run.link.next_id();
    let request = match &tool {
        Some(tool) => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": name_of(tool),
            "arguments": sample_arguments(tool.get("inputSchema").unwrap_or(&Value::Null), "nexo-check"),
        }}),
        None => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
    };
    let link = Arc::clone(&run.link);
    // Its answer may come or not (both are allowed); it is not waited for.
    let call = tokio::spawn(async move { link.send(request).await });
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "nexo check: cancellation probe"}});
    let _ = run.link.notify_with(cancelled.clone()).await;
    let ping = run.link.request("ping", json!({})).await;
    call.abort();
    if let Link::Stdio(stdio) = &*run.link {
        stdio.forget(&json!(id));
    }
    run.probe(
        "cancellation",
        Group::Protocol,
        "ran",
        "a call cancelled as soon as sent, then a ping",
    );
    if ping.answer.is_err() {
        run.push(
            Finding::new(
                "cancellation-breaks-server",
                Severity::Error,
                Group::Protocol,
                "after a cancelled request the server no longer answers",
                "spec, utilities/cancellation: a cancelled request may be dropped, the connection goes on",
                "on notifications/cancelled, stop the work (or let it finish) and keep serving; ignore unknown request ids",
            )
            .evidence(format!("→ {cancelled}\n{}", ping.evidence())),
        );
    }
}

/// Two lists give the same URIs (footgun 7); a missing resource is an
/// error; each template has a variable.
async fn resources(run: &mut Run) {
    if !run.declares("resources") {
        run.probe(
            "resources",
            Group::Resources,
            "not-applicable",
            "no resources declared",
        );
        return;
    }
    run.probe("resources", Group::Resources, "ran", "");
    let uris = |list: &[Value]| -> Vec<String> {
        let mut uris: Vec<String> = list
            .iter()
            .filter_map(|resource| resource.get("uri").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        uris.sort();
        uris
    };
    let first = uris(&run.resources);
    if let Ok(again) = run.list("resources/list", "resources").await {
        let second = uris(&again);
        if first != second {
            let gone: Vec<&String> = first.iter().filter(|uri| !second.contains(uri)).collect();
            let new: Vec<&String> = second.iter().filter(|uri| !first.contains(uri)).collect();
            run.push(
                Finding::new(
                    "resource-uris-unstable",
                    Severity::Error,
                    Group::Resources,
                    "two `resources/list` in a row give different URIs",
                    "footgun 7 (seed 002, Appendix B): a resource URI is a stable identifier, it must survive restarts",
                    "build URIs from the object's identity (`propiedad://las-condes/depto-456`), never from UUIDs or timestamps",
                )
                .evidence(format!(
                    "first list only: {}\nsecond list only: {}",
                    crate::finding::trim(&format!("{gone:?}"), 250),
                    crate::finding::trim(&format!("{new:?}"), 250)
                )),
            );
        }
    }
    if let Some(uri) = first.first() {
        let exchange = run
            .link
            .request("resources/read", json!({"uri": uri}))
            .await;
        if let Some(finding) = unanswered(&exchange, "resources/read", uri) {
            run.push(finding);
        } else if exchange.result().is_none() {
            run.push(
                Finding::new(
                    "listed-resource-unreadable",
                    Severity::Error,
                    Group::Resources,
                    format!("listed resource `{uri}` cannot be read"),
                    "spec, server/resources: a listed resource can be read",
                    "make every listed URI readable, or leave it out of the list",
                )
                .evidence(exchange.evidence())
                .subject(uri.as_str()),
            );
        }
    }
    let subscribes = run
        .initialize
        .pointer("/capabilities/resources/subscribe")
        .and_then(Value::as_bool)
        == Some(true);
    if let (true, Some(uri)) = (subscribes, first.first()) {
        let exchange = run
            .link
            .request("resources/subscribe", json!({"uri": uri}))
            .await;
        if exchange.result().is_none() {
            run.push(
                Finding::new(
                    "declared-capability-fails",
                    Severity::Error,
                    Group::Capabilities,
                    "`resources.subscribe` is declared but `resources/subscribe` failed",
                    "spec, server/resources (subscriptions): a server that declares subscribe accepts it",
                    "handle resources/subscribe and unsubscribe, or do not declare subscribe",
                )
                .evidence(exchange.evidence())
                .subject("resources/subscribe"),
            );
        } else {
            let _ = run
                .link
                .request("resources/unsubscribe", json!({"uri": uri}))
                .await;
        }
    }
    let missing = "nexo-check://no-such-resource";
    let exchange = run
        .link
        .request("resources/read", json!({"uri": missing}))
        .await;
    if let Some(finding) = unanswered(&exchange, "resource-not-found", missing) {
        run.push(finding);
    } else if exchange.result().is_some() {
        run.push(
            Finding::new(
                "missing-resource-answered",
                Severity::Warning,
                Group::Resources,
                "reading a resource that does not exist succeeds",
                "spec, server/resources (error handling): resource not found is an error (-32002; -32602 from 2026-07-28)",
                "answer a read of an unknown URI with a JSON-RPC error",
            )
            .evidence(exchange.evidence())
            .subject(missing),
        );
    }
    let mut read = 0;
    for template in run.templates.clone() {
        let text = template
            .get("uriTemplate")
            .and_then(Value::as_str)
            .unwrap_or("");
        let balanced = text.matches('{').count() == text.matches('}').count();
        if !text.contains('{') || !balanced {
            run.push(
                Finding::new(
                    "resource-template-invalid",
                    Severity::Warning,
                    Group::Resources,
                    format!("resource template `{text}` has no variable or unbalanced braces"),
                    "spec, server/resources: templates are RFC 6570 URI templates",
                    "write the template with {variables}; list a fixed URI as a resource instead",
                )
                .subject(text),
            );
            continue;
        }
        if read < MAX_TEMPLATES {
            read += 1;
            template_read(run, text).await;
        }
    }
}

/// The most templates expanded and read.
const MAX_TEMPLATES: usize = 10;

/// A template expanded with plausible values and read: a success or
/// resource-not-found (-32002, -32602) is fine; a crash, a silence or any
/// other error is a finding.
async fn template_read(run: &mut Run, template: &str) {
    let mut values = std::collections::HashMap::new();
    for name in template_variables(template) {
        let value = completed(run, template, &name)
            .await
            .unwrap_or_else(|| plausible(&name).to_owned());
        values.insert(name, value);
    }
    let uri = expand(template, &values);
    run.probe(
        "resource-template-read",
        Group::Resources,
        "ran",
        uri.clone(),
    );
    let exchange = run
        .link
        .request("resources/read", json!({"uri": uri}))
        .await;
    if let Some(finding) = unanswered(&exchange, "resource-template-read", template) {
        run.push(finding);
        return;
    }
    match exchange.error_code() {
        None | Some(-32002 | -32602) => {}
        Some(code) => run.push(
            Finding::new(
                "resource-template-read-error",
                Severity::Warning,
                Group::Resources,
                format!("reading `{uri}` (template `{template}`) fails with error {code}"),
                "spec, server/resources: a URI a template expands to is read, or answered resource-not-found (-32002; -32602 from 2026-07-28)",
                "serve the URIs your templates describe; answer one that names nothing with resource-not-found, not an internal error",
            )
            .evidence(exchange.evidence())
            .subject(template),
        ),
    }
}

/// A value the server itself proposes for `name` (`completion/complete`),
/// where it declares completions.
async fn completed(run: &Run, template: &str, name: &str) -> Option<String> {
    if !run.declares("completions") {
        return None;
    }
    let exchange = run
        .link
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": name, "value": ""}}),
        )
        .await;
    exchange
        .result()?
        .pointer("/completion/values/0")?
        .as_str()
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
}

/// A plain value for a variable: a number where the name says so.
fn plausible(name: &str) -> &'static str {
    let name = name.to_ascii_lowercase();
    let numeric = [
        "id", "n", "number", "count", "index", "page", "year", "limit",
    ]
    .iter()
    .any(|word| name == *word || name.ends_with(&format!("_{word}")))
        || name.ends_with("id");
    if numeric { "1" } else { "example" }
}

/// The variable names of an RFC 6570 template, in order.
fn template_variables(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    for expression in expressions(template) {
        for name in variable_list(expression) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The text between each `{` and `}`.
fn expressions(template: &str) -> Vec<&str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(expression, _)| expression))
        .collect()
}

fn variable_list(expression: &str) -> Vec<String> {
    expression
        .trim_start_matches(['+', '#', '.', '/', ';', '?', '&'])
        .split(',')
        .map(|name| {
            name.trim_end_matches('*')
                .split(':')
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// `template` with each expression replaced (RFC 6570 level 3, one value a
/// variable; values are plain words, so no encoding is needed).
fn expand(template: &str, values: &std::collections::HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(length) = rest[start..].find('}') else {
            break;
        };
        let expression = &rest[start + 1..start + length];
        rest = &rest[start + length + 1..];
        let operator = expression.chars().next().filter(|c| "+#./;?&".contains(*c));
        let (prefix, separator, named) = match operator {
            Some('#') => ("#", ",", false),
            Some('.') => (".", ".", false),
            Some('/') => ("/", "/", false),
            Some(';') => (";", ";", true),
            Some('?') => ("?", "&", true),
            Some('&') => ("&", "&", true),
            _ => ("", ",", false),
        };
        let parts: Vec<String> = variable_list(expression)
            .into_iter()
            .map(|name| {
                let value = values.get(&name).cloned().unwrap_or_default();
                if named {
                    format!("{name}={value}")
                } else {
                    value
                }
            })
            .collect();
        out.push_str(prefix);
        out.push_str(&parts.join(separator));
    }
    out.push_str(rest);
    out
}

/// What is declared works; what is used is declared.
async fn capabilities(run: &mut Run) {
    run.probe("capabilities", Group::Capabilities, "ran", "");
    // A prompt that needs no argument can be got.
    let prompt = run
        .prompts
        .iter()
        .find(|prompt| {
            prompt
                .get("arguments")
                .and_then(Value::as_array)
                .is_none_or(|arguments| {
                    !arguments
                        .iter()
                        .any(|argument| argument.get("required") == Some(&Value::Bool(true)))
                })
        })
        .cloned();
    if let Some(prompt) = prompt {
        let name = name_of(&prompt).to_owned();
        let exchange = run.link.request("prompts/get", json!({"name": name})).await;
        if exchange.result().is_none() {
            run.push(
                Finding::new(
                    "listed-prompt-fails",
                    Severity::Error,
                    Group::Capabilities,
                    format!("listed prompt `{name}` (no required argument) cannot be got"),
                    "spec, server/prompts: a listed prompt can be got with its arguments",
                    "make every listed prompt work, or leave it out of the list",
                )
                .evidence(exchange.evidence())
                .subject(name.as_str()),
            );
        }
    }
    if run.declares("logging") {
        let exchange = run
            .link
            .request("logging/setLevel", json!({"level": "warning"}))
            .await;
        if exchange.result().is_none() {
            run.push(
                Finding::new(
                    "declared-capability-fails",
                    Severity::Error,
                    Group::Capabilities,
                    "`logging` is declared but `logging/setLevel` failed",
                    "spec, server/utilities/logging: a server that declares logging accepts setLevel",
                    "handle logging/setLevel, or do not declare logging",
                )
                .evidence(exchange.evidence())
                .subject("logging/setLevel"),
            );
        }
    }
}

/// What the server used, it declared: checked once every probe has run,
/// over everything the server sent in the session (on stdout, a legacy
/// stream, or within Streamable HTTP answers).
pub(crate) fn used_is_declared(run: &mut Run) {
    if !run.runs(Group::Capabilities) {
        return;
    }
    // nexo check declares no client capability: a server that asks for
    // sampling, elicitation or roots uses one it was not given.
    let (requests, notifications) = (run.link.requests(), run.link.notifications());
    for request in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if method == "ping" {
            continue;
        }
        run.push(
            Finding::new(
                "undeclared-client-capability-used",
                Severity::Warning,
                Group::Capabilities,
                format!("the server sent `{method}` to a client that declared no capabilities"),
                "spec, lifecycle (capability negotiation): a server only uses the client capabilities the client declared",
                "check the client's capabilities (sampling, elicitation, roots) before sending their requests",
            )
            .evidence(request.to_string())
            .subject(method),
        );
    }
    for (method, capability, key) in [
        ("notifications/tools/list_changed", "tools", "listChanged"),
        (
            "notifications/resources/list_changed",
            "resources",
            "listChanged",
        ),
        (
            "notifications/prompts/list_changed",
            "prompts",
            "listChanged",
        ),
        ("notifications/message", "logging", ""),
    ] {
        let sent = notifications
            .iter()
            .find(|message| message.get("method").and_then(Value::as_str) == Some(method));
        let declared = run
            .initialize
            .get("capabilities")
            .and_then(|capabilities| capabilities.get(capability))
            .is_some_and(|capability| {
                key.is_empty() || capability.get(key).and_then(Value::as_bool) == Some(true)
            });
        if let Some(sent) = sent
            && !declared
        {
            run.push(
                Finding::new(
                    "undeclared-capability-used",
                    Severity::Warning,
                    Group::Capabilities,
                    format!("the server sent `{method}` without declaring it"),
                    "spec, lifecycle (capability negotiation): only negotiated capabilities are used",
                    "declare the capability in the initialize result, or do not send the notification",
                )
                .evidence(sent.to_string())
                .subject(method),
            );
        }
    }
}

/// `initialize` with a revision no one has: the server answers with one it
/// supports, never the unknown one echoed back.
async fn version_negotiation(run: &mut Run) {
    let link = match run.fresh_link().await {
        Ok(link) => link,
        Err(error) => {
            run.probe(
                "version-negotiation",
                Group::Protocol,
                "skipped",
                error.to_string(),
            );
            return;
        }
    };
    let unknown = "1999-01-01";
    let exchange = link
        .request("initialize", crate::link::initialize_params(unknown))
        .await;
    if let Link::Stdio(stdio) = &link {
        stdio.kill().await;
    }
    run.probe(
        "version-negotiation",
        Group::Protocol,
        "ran",
        format!("asked for `{unknown}`"),
    );
    if let Some(finding) = unanswered(&exchange, "version-negotiation", "initialize") {
        run.push(finding);
        return;
    }
    let answered = exchange
        .result()
        .and_then(|result| result.get("protocolVersion"))
        .and_then(Value::as_str);
    if answered == Some(unknown) {
        run.push(
            Finding::new(
                "version-echoed",
                Severity::Error,
                Group::Protocol,
                format!("the server accepts protocol revision `{unknown}`, which does not exist"),
                "spec, lifecycle (version negotiation): a server answers with a revision it supports",
                "answer an unsupported protocolVersion with the latest revision you support",
            )
            .evidence(exchange.evidence()),
        );
    }
}

/// A second `tools/list` in the same session: the definitions must not
/// change unless the server said so (a "rug pull").
async fn definitions_change(run: &mut Run) {
    if !run.declares("tools") {
        return;
    }
    let Ok(again) = run.list("tools/list", "tools").await else {
        return;
    };
    run.probe(
        "definitions-change",
        Group::Security,
        "ran",
        "tools/list twice in one session",
    );
    let announced = run.link.notifications().iter().any(|message| {
        message.get("method").and_then(Value::as_str) == Some("notifications/tools/list_changed")
    });
    let mut changes = Vec::new();
    for tool in &run.tools {
        let name = name_of(tool);
        match again.iter().find(|other| name_of(other) == name) {
            None => changes.push(format!("`{name}` is gone")),
            Some(other) if other != tool => changes.push(format!(
                "`{name}` changed:\n  before: {}\n  after:  {}",
                crate::finding::trim(&tool.to_string(), 200),
                crate::finding::trim(&other.to_string(), 200)
            )),
            Some(_) => {}
        }
    }
    for other in &again {
        if !run.tools.iter().any(|tool| name_of(tool) == name_of(other)) {
            changes.push(format!("`{}` is new", name_of(other)));
        }
    }
    if changes.is_empty() {
        return;
    }
    run.push(
        Finding::new(
            "tool-definitions-changed",
            if announced { Severity::Info } else { Severity::Error },
            Group::Security,
            if announced {
                "the tool definitions changed within the session (announced with list_changed)".to_owned()
            } else {
                "the tool definitions changed within the session, unannounced".to_owned()
            },
            "MCP security best practices (rug pull: a definition approved once and changed later); hosts pin definitions",
            "keep definitions fixed for a session; when they must change, send notifications/tools/list_changed",
        )
        .evidence(changes.join("\n")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_expanded_with_plausible_values() {
        let template = "notes://{folder}/{note_id}{?format,lang}{#section}";
        let names = template_variables(template);
        assert_eq!(names, ["folder", "note_id", "format", "lang", "section"]);
        let values = names
            .iter()
            .map(|name| (name.clone(), plausible(name).to_owned()))
            .collect();
        assert_eq!(
            expand(template, &values),
            "notes://example/1?format=example&lang=example#example"
        );
        let values = [("path".to_owned(), "a".to_owned())].into_iter().collect();
        assert_eq!(expand("file://{+path}{/path*}", &values), "file://a/a");
    }
}
