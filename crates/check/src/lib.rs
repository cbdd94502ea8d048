//! Auditing any MCP server for its author (`nexo check`): what is wrong
//! with a server, by behaviour and by definition, offline, with an exit
//! code CI can use.
//!
//! A run opens a raw JSON-RPC [`link`] to the server (a stdio child's pipes,
//! Streamable HTTP, or a legacy HTTP+SSE stream, [`legacy`]; a bundled
//! server is checked as the child `nexo serve NAME`, which the CLI
//! arranges), begins a 2025-era session, lists what the server offers and
//! then probes it; [`changes`] lists again between the probes and at the
//! end, for list_changed after a real change. [`definitions`] lints the lists
//! (names, descriptions, schemas, annotations, provider portability,
//! tokens); [`poison`] reads every string for hidden Unicode and
//! instructions aimed at the model; [`probes`] makes real exchanges (stdio
//! pollution, errors versus `isError`, concurrent requests answered by id,
//! stable resource URIs, definitions that change, version negotiation),
//! [`stateless`] the 2026-07-28 revision where the server speaks it,
//! [`stdio`] a child's stray output and exit, and [`http`] probes the HTTP
//! transport itself (sessions, Origin and Host,
//! content negotiation, body limits, latency, authorization), [`legacy`]
//! the legacy transport's own. Each
//! [`Finding`] keeps its evidence; the [`Report`] renders them as text,
//! versioned JSON or SARIF.
//!
//! Only tools that say they are safe are called: `readOnlyHint: true` and
//! `openWorldHint: false`. A destructive tool, or one that reaches the
//! world (the network), is never called; the error probes use a tool name
//! that does not exist, and arguments a safe tool must refuse.
//!
//! Why it judges as it does (which revision's rule, what is called, the
//! severities) is in the README beside this crate.
//!
//! It depends on nexo-client only (its targets and headers), and prints
//! nothing: the CLI does.

mod changes;
pub mod definitions;
mod error;
pub mod finding;
mod http;
mod legacy;
pub mod link;
pub mod poison;
mod probes;
pub mod report;
mod stateless;
mod stdio;

use std::sync::Arc;
use std::time::Duration;

use nexo_client::Target;
use serde_json::Value;

pub use crate::error::CheckError;
pub use crate::finding::{Finding, Group, Selection, Severity};
pub use crate::report::{Report, SCHEMA};

use crate::link::{HttpLink, Link, LinkError, SseLink, StdioLink};
use crate::report::Probe;

/// How to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The time limit of one exchange.
    pub timeout: Duration,
    /// The time limit of a stdio server's first answer, which starts it.
    pub startup: Duration,
    /// Which probe groups run.
    pub selection: Selection,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(15),
            startup: nexo_client::DEFAULT_STARTUP,
            selection: Selection::default(),
        }
    }
}

/// Checks the server `target` names.
pub async fn check(target: &Target, options: &Options) -> Result<Report, CheckError> {
    let link = match open(target, options).await {
        Ok(link) => link,
        // Nothing is posted to another origin: the finding is the report.
        Err(OpenFailure::Foreign(finding)) => {
            let mut report = Report {
                target: target.to_string(),
                transport: "sse".to_owned(),
                findings: vec![*finding],
                ..Report::default()
            };
            report.probes.push(Probe {
                name: "legacy-sse-transport",
                group: Group::Http,
                outcome: "ran",
                note: "the endpoint event was read".to_owned(),
            });
            return Ok(report);
        }
        Err(OpenFailure::Check(error)) => return Err(error),
    };
    let mut run = Run {
        link: Arc::new(link),
        target: target.clone(),
        options: options.clone(),
        report: Report {
            target: target.to_string(),
            ..Report::default()
        },
        initialize: Value::Null,
        tools: Vec::new(),
        resources: Vec::new(),
        templates: Vec::new(),
        prompts: Vec::new(),
        watched: Default::default(),
        listener: None,
    };
    run.report.transport = run.link.transport().to_owned();
    run.go().await?;
    let selection = &options.selection;
    run.report
        .findings
        .retain(|finding| selection.runs(finding.group));
    run.report.sort();
    run.report
        .findings
        .dedup_by(|a, b| a.id == b.id && a.title == b.title);
    // A crash is told once: the probes after it fail for the same reason.
    let mut crashed = false;
    run.report.findings.retain(|finding| {
        let first = !(crashed && finding.id == "server-crashed");
        crashed |= finding.id == "server-crashed";
        first
    });
    Ok(run.report)
}

/// Why no link was opened.
enum OpenFailure {
    Check(CheckError),
    /// A legacy stream whose endpoint is on another origin: the finding.
    Foreign(Box<Finding>),
}

impl OpenFailure {
    fn into_check(self) -> CheckError {
        match self {
            OpenFailure::Check(error) => error,
            OpenFailure::Foreign(finding) => CheckError::Unreachable {
                message: finding.title,
            },
        }
    }
}

/// A fresh link to the same server (a new child, a new HTTP client, or a
/// new legacy stream).
async fn open(target: &Target, options: &Options) -> Result<Link, OpenFailure> {
    match target {
        Target::Stdio { command, env, cwd } => {
            let env: Vec<(String, String)> = env
                .iter()
                .map(|var| (var.key.clone(), var.value.expose().to_owned()))
                .collect();
            StdioLink::spawn(
                command,
                &env,
                cwd.as_deref(),
                options.timeout,
                options.startup,
            )
            .map(Link::Stdio)
            .map_err(|message| OpenFailure::Check(CheckError::Unreachable { message }))
        }
        Target::Url {
            url,
            transport,
            headers,
        } => {
            if *transport == nexo_client::HttpTransport::Sse {
                return match SseLink::open(url.expose(), headers, options.timeout).await {
                    Ok(link) => Ok(Link::Sse(link)),
                    Err(legacy::OpenError::Foreign(data, named)) => Err(OpenFailure::Foreign(
                        Box::new(legacy::foreign_endpoint(url.expose(), &data, &named)),
                    )),
                    Err(legacy::OpenError::Link(error)) => {
                        Err(OpenFailure::Check(CheckError::Unreachable {
                            message: format!("cannot open the legacy SSE stream: {error}"),
                        }))
                    }
                };
            }
            HttpLink::new(url.expose(), headers, options.timeout)
                .map(Link::Http)
                .map_err(|message| OpenFailure::Check(CheckError::usage(message, None)))
        }
        Target::InProcess(server) => Err(OpenFailure::Check(CheckError::usage(
            format!(
                "the in-process server `{}` has no wire to probe",
                server.name()
            ),
            Some(format!(
                "check it as a child process: nexo check --stdio 'nexo serve {}'",
                server.name()
            )),
        ))),
    }
}

/// What [`Run::legacy_sse`] found.
enum Legacy {
    /// Not a legacy endpoint.
    Not,
    /// A legacy endpoint: the run goes on over its stream.
    Switched,
    /// A legacy endpoint that cannot be probed (said in the report).
    Stopped,
}

/// One run's state: the link, what the server listed, the report so far.
pub(crate) struct Run {
    pub(crate) link: Arc<Link>,
    pub(crate) target: Target,
    pub(crate) options: Options,
    pub(crate) report: Report,
    pub(crate) initialize: Value,
    pub(crate) tools: Vec<Value>,
    pub(crate) resources: Vec<Value>,
    pub(crate) templates: Vec<Value>,
    pub(crate) prompts: Vec<Value>,
    /// Changes seen in the tools, resources and prompts lists.
    pub(crate) watched: [changes::Watched; 3],
    /// A 2026-07-28 `subscriptions/listen` stream opened at the start.
    pub(crate) listener: Option<changes::Listener>,
}

/// The most pages of a list read.
const MAX_PAGES: usize = 20;

impl Run {
    pub(crate) fn push(&mut self, finding: Finding) {
        self.report.findings.push(finding);
    }

    pub(crate) fn probe(
        &mut self,
        name: &'static str,
        group: Group,
        outcome: &'static str,
        note: impl Into<String>,
    ) {
        self.report.probes.push(Probe {
            name,
            group,
            outcome,
            note: note.into(),
        });
    }

    pub(crate) fn runs(&self, group: Group) -> bool {
        self.options.selection.runs(group)
    }

    pub(crate) async fn fresh_link(&self) -> Result<Link, CheckError> {
        open(&self.target, &self.options)
            .await
            .map_err(OpenFailure::into_check)
    }

    /// Whether the server declared capability `name`.
    pub(crate) fn declares(&self, name: &str) -> bool {
        self.initialize
            .get("capabilities")
            .and_then(|capabilities| capabilities.get(name))
            .is_some_and(|capability| !capability.is_null())
    }

    async fn go(&mut self) -> Result<(), CheckError> {
        let mut init = self
            .link
            .request(
                "initialize",
                link::initialize_params(nexo_client::era::REVISION_2025),
            )
            .await;
        if matches!(
            &init.answer,
            Err(LinkError::Http {
                status: 400 | 404 | 405,
                ..
            })
        ) {
            match self.legacy_sse().await {
                Legacy::Not => {}
                Legacy::Switched => {
                    init = self
                        .link
                        .request(
                            "initialize",
                            link::initialize_params(nexo_client::era::REVISION_2025),
                        )
                        .await;
                }
                Legacy::Stopped => return Ok(()),
            }
        }
        match &init.answer {
            Err(LinkError::Http {
                status: 401 | 403,
                www_authenticate,
                ..
            }) => {
                let challenge = www_authenticate.clone();
                http::authorization(self, challenge).await;
                return Ok(());
            }
            Err(LinkError::Transport(message))
                if matches!(*self.link, Link::Http(_) | Link::Sse(_)) =>
            {
                return Err(CheckError::Unreachable {
                    message: message.clone(),
                });
            }
            Err(error) => {
                let mut evidence = init.evidence();
                if let Link::Stdio(stdio) = &*self.link {
                    stdio.kill().await;
                    for (_, line) in stdio.stray().iter().take(5) {
                        evidence.push_str(&format!("\nstdout: {line}"));
                    }
                    for line in stdio.stderr().0.iter().take(5) {
                        evidence.push_str(&format!("\nstderr: {line}"));
                    }
                }
                self.push(
                    Finding::new(
                        "initialize-unanswered",
                        Severity::Critical,
                        Group::Protocol,
                        format!("the server did not answer `initialize` ({error})"),
                        "spec, lifecycle: initialization is the first exchange and must be answered",
                        "answer `initialize` with protocolVersion, capabilities and serverInfo; keep stdout for JSON-RPC only",
                    )
                    .evidence(evidence),
                );
                self.stdio_findings().await;
                return Ok(());
            }
            Ok(_) => {}
        }
        let Some(result) = init.result().cloned() else {
            self.push(
                Finding::new(
                    "initialize-refused",
                    Severity::Critical,
                    Group::Protocol,
                    "the server refused `initialize`",
                    "spec, lifecycle: a server answers initialize with a revision it supports",
                    "answer initialize; if the requested revision is unknown, answer with the latest one you support",
                )
                .evidence(init.evidence()),
            );
            self.shut_down().await;
            return Ok(());
        };
        self.report.server = result.get("serverInfo").cloned();
        self.report.protocol_version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Link::Http(http) = &*self.link {
            http.set_version(self.report.protocol_version.clone());
        }
        self.initialize = result;
        if let Link::Stdio(stdio) = &*self.link {
            stdio.set_phase(link::Phase::Calls);
        }
        let _ = self.link.notify("notifications/initialized").await;
        if let Link::Http(http) = &*self.link {
            http.open_get_stream().await;
        }
        self.lists().await;
        self.listen().await;
        self.lint();
        probes::run(self).await;
        self.relist().await;
        match &*self.link {
            Link::Http(_) => http::run(self).await,
            Link::Sse(_) => legacy::run(self).await,
            Link::Stdio(_) => {}
        }
        self.relist().await;
        probes::used_is_declared(self);
        changes::judge(self);
        self.listener = None;
        self.shut_down().await;
        Ok(())
    }

    /// Whether the URL is a legacy HTTP+SSE endpoint (its GET streams an
    /// `endpoint` event); if so, that is a finding, and the run goes on
    /// over a legacy session.
    async fn legacy_sse(&mut self) -> Legacy {
        let Link::Http(http) = &*self.link else {
            return Legacy::Not;
        };
        let Some(start) = http.peek_stream().await else {
            return Legacy::Not;
        };
        if !nexo_client::legacy_sse::opens_a_session(&start) {
            return Legacy::Not;
        }
        let url = http.url.to_string();
        self.report.transport = "sse".to_owned();
        self.push(
            Finding::new(
                "legacy-sse-only",
                Severity::Warning,
                Group::Protocol,
                "this endpoint speaks only the deprecated HTTP+SSE transport (2024-11-05)",
                "spec 2025-03-26 on: Streamable HTTP replaced HTTP+SSE; clients are dropping the old transport",
                "serve Streamable HTTP (one endpoint taking POST, e.g. /mcp); keep /sse only for old clients, and check the new endpoint with nexo check",
            )
            .evidence(format!("→ GET {url} (Accept: text/event-stream)\n← {}", finding::trim(start.trim(), 200)))
            .subject(url),
        );
        if let Target::Url { transport, .. } = &mut self.target {
            *transport = nexo_client::HttpTransport::Sse;
        }
        match open(&self.target, &self.options).await {
            Ok(link) => {
                self.link = Arc::new(link);
                Legacy::Switched
            }
            Err(OpenFailure::Foreign(finding)) => {
                self.push(*finding);
                Legacy::Stopped
            }
            Err(OpenFailure::Check(error)) => {
                self.probe(
                    "legacy-sse-transport",
                    Group::Http,
                    "skipped",
                    error.to_string(),
                );
                Legacy::Stopped
            }
        }
    }

    /// Every page of a list; the failed exchange, if one failed.
    pub(crate) async fn list(&self, method: &str, key: &str) -> Result<Vec<Value>, link::Exchange> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => serde_json::json!({"cursor": cursor}),
                None => serde_json::json!({}),
            };
            let exchange = self.link.request(method, params).await;
            let Some(result) = exchange.result() else {
                return Err(exchange);
            };
            items.extend(
                result
                    .get(key)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(items)
    }

    async fn lists(&mut self) {
        for (capability, method, key) in [
            ("tools", "tools/list", "tools"),
            ("resources", "resources/list", "resources"),
            ("resources", "resources/templates/list", "resourceTemplates"),
            ("prompts", "prompts/list", "prompts"),
        ] {
            if !self.declares(capability) {
                continue;
            }
            match self.list(method, key).await {
                Ok(items) => match method {
                    "tools/list" => self.tools = items,
                    "resources/list" => self.resources = items,
                    "resources/templates/list" => self.templates = items,
                    _ => self.prompts = items,
                },
                Err(exchange) => {
                    // Templates are optional even where resources are declared.
                    if method == "resources/templates/list" && exchange.error_code() == Some(-32601)
                    {
                        continue;
                    }
                    self.push(
                        Finding::new(
                            "declared-capability-fails",
                            Severity::Error,
                            Group::Capabilities,
                            format!("`{capability}` is declared but `{method}` failed"),
                            "spec, lifecycle (capability negotiation): what is declared must work",
                            "make the method work, or do not declare the capability",
                        )
                        .evidence(exchange.evidence())
                        .subject(method),
                    );
                }
            }
        }
        self.report.tools = definitions::sizes(&self.tools);
    }

    /// The lints of the definitions (no wire).
    fn lint(&mut self) {
        let mut findings = definitions::server_info(&self.initialize);
        findings.extend(definitions::tools(&self.tools));
        findings.extend(definitions::resources(&self.resources, &self.templates));
        findings.extend(definitions::prompts(&self.prompts));
        for tool in &self.tools {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            findings.extend(poison::definition("tool", name, tool));
        }
        for resource in self.resources.iter().chain(&self.templates) {
            let name = resource
                .get("uri")
                .or_else(|| resource.get("uriTemplate"))
                .and_then(Value::as_str)
                .unwrap_or("");
            findings.extend(poison::definition("resource", name, resource));
        }
        for prompt in &self.prompts {
            let name = prompt.get("name").and_then(Value::as_str).unwrap_or("");
            findings.extend(poison::definition("prompt", name, prompt));
        }
        if let Some(instructions) = self.initialize.get("instructions") {
            findings.extend(poison::definition(
                "server instructions",
                "initialize",
                instructions,
            ));
        }
        self.report.findings.extend(findings);
        for group in [Group::Definitions, Group::Portability, Group::Security] {
            self.probe(
                "definitions",
                group,
                "ran",
                format!(
                    "{} tools, {} resources, {} templates, {} prompts",
                    self.tools.len(),
                    self.resources.len(),
                    self.templates.len(),
                    self.prompts.len()
                ),
            );
        }
    }

    /// Ends the session: a stdio child gets EOF on stdin and is watched.
    async fn shut_down(&mut self) {
        if let Link::Stdio(_) = &*self.link {
            self.stdio_findings().await;
        }
    }
}
