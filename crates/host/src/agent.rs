//! The agent loop: one user turn, as many model steps as it takes. The
//! model is offered the tools of every connected server (named
//! `server__tool`, schemas normalized for its provider; a tool that cannot
//! be sent, or whose definition changed since the user approved it (see
//! [`crate::pins`]), is withheld, with the reason, and never fails the
//! turn); each
//! tool call it asks for goes through the approval policy (asking the
//! person where the policy says to) and then to its server through the hub,
//! the calls of one answer at the same time; the results, errors included,
//! go back to the model so it can correct itself, until it answers without
//! calling a tool or the step limit is reached.
//!
//! A call its server runs as a task is followed to its end by the hub; the
//! task's id and each change of it are told as [`AgentEvent::Task`] (see
//! [`crate::tasks`]).
//!
//! A result longer than the model should read at once is shortened, the
//! whole of it kept for nexo's own tool to read on ([`crate::long_results`]).
//! The servers' skills the person approved are offered through nexo's own
//! tool that loads one ([`crate::skills`]).
//!
//! A local model that writes a tool call as JSON text instead of using the
//! tools API gets that call run too, for a tool it was offered only, and
//! through the same approvals.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, join_all};
use nexo_client::hub::Hub;
use nexo_client::namespace::Namespace;
use nexo_client::{ClientError, TaskObserver, TaskUpdate};
use nexo_hint::Hinted;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ResourceContents, ToolAnnotations};
use serde_json::Value;

use crate::approval::{Answer, ApprovalGate, Refused, Scope};
use crate::context::{self, Fitted};
use crate::error::AgentError;
use crate::long_results::{self, LongResults};
use crate::provider::{
    Content, Image, Message, Provider, ProviderKind, Request, ResultPart, ToolCall, ToolDefinition,
    ToolResult, Usage, tool_calls_in_text,
};
use crate::schema::{Dialect, Normalization, normalize, truncate_description};
use crate::skills::{self, SkillTrust, Skillset};
use crate::tool_search::{self, Loaded, ToolSelection};

/// How many model steps one turn may take by default.
pub const DEFAULT_MAX_STEPS: usize = 25;
/// The most tokens one answer may take by default.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The tools offered to the model: every connected server's the
/// configuration selects, by their qualified names; with many, their names
/// and the search tool ([`crate::tool_search`]).
pub struct Toolset {
    definitions: Vec<ToolDefinition>,
    names: Namespace,
    annotations: HashMap<String, Option<ToolAnnotations>>,
    withheld: Vec<WithheldTool>,
    /// Search mode: the tools always sent in full, and those found so far.
    search: Option<(BTreeSet<String>, Loaded)>,
    /// The skills the model may load.
    skills: Skillset,
}

/// A tool the model is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithheldTool {
    pub server: String,
    pub tool: String,
    pub reason: String,
}

impl Toolset {
    /// The tools of `tools` (as the hub lists them: `(server, tool)`) that
    /// `selection` offers, in the form `dialect`'s provider takes, but those
    /// `blocked` (by their pins).
    pub fn new(
        tools: &[(String, rmcp::model::Tool)],
        dialect: Dialect,
        blocked: &[WithheldTool],
        selection: &ToolSelection,
    ) -> Self {
        let names = Namespace::build(
            tools
                .iter()
                .map(|(server, tool)| (server.as_str(), tool.name.as_ref())),
        );
        let mut definitions = Vec::new();
        let mut annotations = HashMap::new();
        let mut withheld = Vec::new();
        withheld.extend_from_slice(blocked);
        for (server, tool) in tools {
            let Some(name) = names.qualified(server, &tool.name) else {
                continue;
            };
            if !selection.offers(&nexo_client::namespace::join(server, &tool.name)) {
                continue;
            }
            if blocked
                .iter()
                .any(|block| &block.server == server && block.tool == tool.name.as_ref())
            {
                continue;
            }
            if !visible_to(tool, "model") {
                withheld.push(WithheldTool {
                    server: server.clone(),
                    tool: tool.name.to_string(),
                    reason: "it is for its app's interface only (MCP Apps visibility)".to_owned(),
                });
                continue;
            }
            let schema = Value::Object(tool.input_schema.as_ref().clone());
            match normalize(&schema, dialect) {
                Normalization::Normalized { schema, .. } => {
                    definitions.push(ToolDefinition {
                        name: name.to_owned(),
                        description: truncate_description(
                            tool.description.as_deref().unwrap_or_default(),
                        )
                        .into_owned(),
                        input_schema: Value::Object(schema),
                    });
                    annotations.insert(name.to_owned(), tool.annotations.clone());
                }
                Normalization::Withheld { reason } => withheld.push(WithheldTool {
                    server: server.clone(),
                    tool: tool.name.to_string(),
                    reason: reason.to_string(),
                }),
            }
        }
        Self {
            definitions,
            names,
            annotations,
            withheld,
            search: None,
            skills: Skillset::default(),
        }
    }

    /// Every tool that may be called, in full.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// Whether the model gets names and the search tool.
    pub fn searched(&self) -> bool {
        self.search.is_some()
    }

    /// What the next request sends: every definition, or in search mode
    /// those always sent and those found, and the search tool naming the
    /// others; nexo's tool that reads long results; and with skills to
    /// offer, nexo's tool that loads one.
    pub fn offered(&self) -> Vec<ToolDefinition> {
        let mut offered: Vec<ToolDefinition> = match &self.search {
            None => self.definitions.clone(),
            Some((always, loaded)) => {
                let (full, named): (Vec<&ToolDefinition>, Vec<&ToolDefinition>) = self
                    .definitions
                    .iter()
                    .partition(|tool| always.contains(&tool.name) || loaded.contains(&tool.name));
                let names: Vec<&str> = named.iter().map(|tool| tool.name.as_str()).collect();
                let mut offered: Vec<ToolDefinition> = full.into_iter().cloned().collect();
                offered.push(tool_search::definition(&names));
                offered
            }
        };
        offered.push(LongResults::definition());
        offered.extend(self.skills.definition());
        offered
    }

    /// The skills offered, and those withheld.
    pub fn skills(&self) -> &Skillset {
        &self.skills
    }

    pub fn withheld(&self) -> &[WithheldTool] {
        &self.withheld
    }

    /// The server and tool an offered name stands for.
    fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.annotations
            .contains_key(name)
            .then(|| self.names.resolve(name))
            .flatten()
    }
}

/// Where a call goes.
enum Target<'t> {
    /// A server's tool: the server, the tool's own name.
    Server(&'t str, &'t str),
    ReadResult,
    SearchTools,
    LoadSkill,
}

/// The dialect of schemas a provider takes.
pub fn dialect_of(kind: ProviderKind) -> Dialect {
    match kind {
        ProviderKind::Anthropic => Dialect::Anthropic,
        ProviderKind::OpenAi => Dialect::OpenAiCompatible,
    }
}

/// A tool call waiting for a person's answer.
#[derive(Debug, Clone)]
pub struct Pending {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    /// Who asks for the call when it is not the model (an MCP App).
    pub asked_by: Option<String>,
    /// Why it is asked (the rule or annotation that decided).
    pub reason: String,
    /// The answers that may be given.
    pub answers: Vec<Answer>,
    /// How long an "always" answer may be remembered.
    pub scopes: Vec<Scope>,
}

/// A person's answer, and for an "always" one how long it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub answer: Answer,
    pub scope: Scope,
}

impl Reply {
    pub const NO: Reply = Reply {
        answer: Answer::No,
        scope: Scope::Session,
    };
}

/// Who answers the policy's questions: a person at a terminal or on the
/// web page, or, with no one there, a refusal.
pub trait Approver: Send + Sync {
    fn ask<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Reply>;
}

/// No one to ask: every question is answered no.
pub struct NoOneToAsk;

impl Approver for NoOneToAsk {
    fn ask<'a>(&'a self, _: &'a Pending) -> BoxFuture<'a, Reply> {
        Box::pin(std::future::ready(Reply::NO))
    }
}

/// What happens during a turn, for the terminal, the web page and the
/// chat log.
#[derive(Debug, Clone)]
pub enum AgentEvent {
    /// A piece of the model's answer.
    Text(String),
    /// The model asked for a tool call.
    ToolCall {
        server: String,
        tool: String,
        arguments: Value,
    },
    /// The policy's decision on it (after the person's answer, if asked):
    /// `refused` is `None` when it runs.
    Approval {
        server: String,
        tool: String,
        refused: Option<Refused>,
        reason: String,
    },
    /// A tool call ended.
    ToolResult {
        server: String,
        tool: String,
        arguments: Value,
        duration: Duration,
        /// Bytes of text the result gave the model.
        bytes: usize,
        error: Option<String>,
        /// The result as the server sent it (none when the call failed
        /// before one came), for a host that draws more than the model
        /// reads (an MCP App's interface).
        result: Option<Box<CallToolResult>>,
    },
    /// A call the server runs as a task: the task started or changed.
    Task {
        server: String,
        tool: String,
        /// The model's call it stands for.
        call: ToolCall,
        update: TaskUpdate,
    },
    /// A model step ended: its whole text (tool calls aside) and usage.
    Answer { text: String, usage: Usage },
    /// The conversation was shortened to fit the model's context window.
    Fitted { fitted: Fitted, window: u64 },
    /// The model loaded (or was refused) a skill, or a file of one.
    Skill {
        /// The skill's server, when it names an offered skill.
        server: Option<String>,
        /// Its name in its front matter (as asked, when unknown).
        skill: String,
        /// `SKILL.md`, or the file's path inside the skill.
        file: String,
        /// Bytes of text the model was given.
        bytes: usize,
        /// Why it was refused.
        error: Option<String>,
    },
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// Model steps taken.
    pub steps: usize,
    pub usage: Usage,
    /// The step limit ended it while the model still asked for tools.
    pub cut_short: bool,
}

/// The model, the servers and the policy a conversation runs with.
pub struct Agent<'h> {
    pub hub: &'h Hub,
    pub provider: Provider,
    /// The approval policy every call the model asks for goes through
    /// (shared with the web page's MCP Apps).
    pub gate: Arc<ApprovalGate>,
    /// Tools not offered, whose definitions are not approved (pins).
    pub blocked: Vec<WithheldTool>,
    /// The skills approved (pins), offered when nexo can load them.
    pub skills: SkillTrust,
    pub system: Option<String>,
    pub max_steps: usize,
    pub max_tokens: u32,
    /// Where results too long for the model are kept.
    pub long_results: LongResults,
    /// The model's context window, in tokens ([`crate::context`]).
    pub context_window: u64,
    /// The tools offered, of those the servers have.
    pub selection: ToolSelection,
    /// The share of the context window past which the model searches for
    /// tools rather than getting them all ([`crate::tool_search`]).
    pub search_share: f64,
}

impl Agent<'_> {
    /// The tools offered now.
    pub fn toolset(&self) -> Toolset {
        self.toolset_without(&self.blocked)
    }

    /// The tools offered now but `blocked` (by their pins, checked again
    /// when a server's tools changed).
    pub fn toolset_without(&self, blocked: &[WithheldTool]) -> Toolset {
        self.toolset_with(blocked, &self.skills)
    }

    /// The tools offered now but `blocked`, and the skills `skills`
    /// approves (both checked again when a server's tools or skills
    /// changed).
    pub fn toolset_with(&self, blocked: &[WithheldTool], skills: &SkillTrust) -> Toolset {
        let tools = self.hub.tools();
        let mut toolset = Toolset::new(
            &tools,
            dialect_of(self.provider.kind()),
            blocked,
            &self.selection,
        );
        let size = context::estimate(None, &toolset.definitions, &[]);
        if size as f64 > self.search_share * self.context_window as f64 {
            let always = tools
                .iter()
                .filter(|(server, tool)| {
                    self.selection
                        .always(&nexo_client::namespace::join(server, &tool.name))
                })
                .filter_map(|(server, tool)| toolset.names.qualified(server, &tool.name))
                .map(str::to_owned)
                .collect();
            toolset.search = Some((always, Loaded::default()));
        }
        toolset.skills = Skillset::new(&self.hub.skills(), skills);
        toolset
    }

    /// Runs one turn on `conversation` (whose last message is the user's)
    /// with the tools of `toolset` ([`Agent::toolset`]), adding the model's
    /// messages and the tool results to it.
    pub async fn turn(
        &self,
        toolset: &Toolset,
        conversation: &mut Vec<Message>,
        approver: &dyn Approver,
        events: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<TurnEnd, AgentError> {
        let mut usage = Usage::default();
        let fixed = context::estimate(self.system.as_deref(), &toolset.offered(), &[]);
        // Room for the answer, and a tenth for the estimate's error.
        let budget = self
            .context_window
            .saturating_sub(u64::from(self.max_tokens))
            .saturating_mul(9)
            / 10;
        for step in 1..=self.max_steps {
            let fitted = context::fit(conversation, fixed, budget);
            if fitted.changed() {
                events(AgentEvent::Fitted {
                    fitted,
                    window: self.context_window,
                });
            }
            let tools = toolset.offered();
            let request = Request {
                system: self.system.as_deref(),
                messages: conversation,
                tools: &tools,
                max_tokens: self.max_tokens,
            };
            let mut reply = self.provider.stream(&request).await?;
            while let Some(event) = reply.next().await? {
                if let crate::provider::Event::TextDelta(text) = event {
                    events(AgentEvent::Text(text));
                }
            }
            let answer = reply.finish().await?;
            add_usage(&mut usage, &answer.usage);
            events(AgentEvent::Answer {
                text: answer.message.text(),
                usage: answer.usage,
            });
            let mut message = answer.message;
            let mut calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
            if calls.is_empty() {
                calls = tool_calls_in_text(&message.text(), |name| toolset.resolve(name).is_some());
                if !calls.is_empty() {
                    message.content = calls.iter().cloned().map(Content::ToolCall).collect();
                }
            }
            conversation.push(message);
            if calls.is_empty() {
                return Ok(TurnEnd {
                    steps: step,
                    usage,
                    cut_short: false,
                });
            }
            let results = self.run_calls(&calls, toolset, approver, events).await;
            conversation.push(Message::tool_results(results));
        }
        Ok(TurnEnd {
            steps: self.max_steps,
            usage,
            cut_short: true,
        })
    }

    /// Decides on every call in order (asking where needed), then runs the
    /// allowed ones at the same time; one result per call, in order.
    async fn run_calls(
        &self,
        calls: &[ToolCall],
        toolset: &Toolset,
        approver: &dyn Approver,
        events: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Vec<ToolResult> {
        let mut planned = Vec::new();
        for call in calls {
            // nexo's own, reading what a tool already returned or the
            // tools' definitions: not asked about.
            if call.name == long_results::READ_TOOL {
                planned.push(Ok(Target::ReadResult));
                continue;
            }
            if call.name == tool_search::SEARCH_TOOL && toolset.searched() {
                planned.push(Ok(Target::SearchTools));
                continue;
            }
            // Loading a skill the person approved (pins): not asked about.
            if call.name == skills::LOAD_TOOL && !toolset.skills.offered().is_empty() {
                planned.push(Ok(Target::LoadSkill));
                continue;
            }
            let Some((server, tool)) = toolset.resolve(&call.name) else {
                planned.push(Err(format!(
                    "there is no tool `{}`; the tools offered are the ones to call",
                    call.name
                )));
                continue;
            };
            events(AgentEvent::ToolCall {
                server: server.to_owned(),
                tool: tool.to_owned(),
                arguments: call.arguments.clone(),
            });
            let annotations = toolset.annotations.get(&call.name).and_then(Option::as_ref);
            let decision = self
                .gate
                .decide(server, tool, annotations, &call.arguments, None, approver)
                .await;
            let (refused, reason) = match &decision {
                Ok(reason) => (None, reason.clone()),
                Err(refusal) => (Some(refusal.refused), refusal.reason.clone()),
            };
            events(AgentEvent::Approval {
                server: server.to_owned(),
                tool: tool.to_owned(),
                refused,
                reason,
            });
            planned.push(
                decision
                    .map(|_| Target::Server(server, tool))
                    .map_err(|refusal| refusal.reason),
            );
        }
        // Tasks' changes come while the calls run, through a channel.
        let (tasks, mut task_updates) = tokio::sync::mpsc::unbounded_channel();
        let observers: Vec<TaskObserver> = (0..calls.len())
            .map(|index| {
                let tasks = tasks.clone();
                std::sync::Arc::new(move |update: &TaskUpdate| {
                    let _ = tasks.send((index, update.clone()));
                }) as TaskObserver
            })
            .collect();
        let plans: Vec<_> = planned.iter().zip(observers).collect();
        let runs = calls.iter().zip(plans).map(|(call, plan)| async move {
            let (plan, observer) = plan;
            let started = Instant::now();
            let mut raw = None;
            let outcome = match plan {
                Ok(Target::Server(server, tool)) => {
                    let called = self.call(server, tool, &call.arguments, observer).await;
                    raw = called.as_ref().ok().cloned().map(Box::new);
                    Some(outcome_parts(called))
                }
                Ok(Target::ReadResult) => Some(self.long_results.read(&call.arguments)),
                Ok(Target::SearchTools) => {
                    let loaded = toolset.search.as_ref().map(|(_, loaded)| loaded);
                    let (text, failed) = match loaded {
                        Some(loaded) => {
                            tool_search::search(&call.arguments, toolset.definitions(), loaded)
                        }
                        None => (String::new(), true),
                    };
                    Some((vec![ResultPart::Text(text)], failed))
                }
                Ok(Target::LoadSkill) => Some(toolset.skills.load(self.hub, &call.arguments).await),
                Err(_) => None,
            };
            (outcome, raw, started.elapsed())
        });
        drop(tasks);
        let outcomes = {
            let mut tell = |(index, update): (usize, TaskUpdate)| {
                if let (Some(call), Some(Ok(Target::Server(server, tool)))) =
                    (calls.get(index), planned.get(index))
                {
                    events(AgentEvent::Task {
                        server: (*server).to_owned(),
                        tool: (*tool).to_owned(),
                        call: call.clone(),
                        update,
                    });
                }
            };
            let mut all = std::pin::pin!(join_all(runs));
            let outcomes = loop {
                tokio::select! {
                    outcomes = &mut all => break outcomes,
                    Some(update) = task_updates.recv() => tell(update),
                }
            };
            while let Ok(update) = task_updates.try_recv() {
                tell(update);
            }
            outcomes
        };
        calls
            .iter()
            .zip(planned)
            .zip(outcomes)
            .map(|((call, plan), (outcome, raw, duration))| {
                let (content, is_error) = match (plan, outcome) {
                    (Ok(Target::ReadResult | Target::SearchTools), Some(result)) => result,
                    (Ok(Target::LoadSkill), Some(result)) => {
                        events(toolset.skills.event(&call.arguments, &result));
                        (self.long_results.cap(result.0), result.1)
                    }
                    (Ok(Target::Server(server, tool)), Some(result)) => {
                        let bytes = text_bytes(&result.0);
                        events(AgentEvent::ToolResult {
                            server: server.to_owned(),
                            tool: tool.to_owned(),
                            arguments: call.arguments.clone(),
                            duration,
                            bytes,
                            error: result.1.then(|| first_text(&result.0)),
                            result: raw,
                        });
                        (self.long_results.cap(result.0), result.1)
                    }
                    (Err(refusal), _) => (vec![ResultPart::Text(refusal)], true),
                    (Ok(_), None) => (Vec::new(), true),
                };
                ToolResult {
                    call_id: call.id.clone(),
                    content,
                    is_error,
                }
            })
            .collect()
    }

    /// Calls the tool, `observer` told of the task it runs as, if it does.
    async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
        observer: TaskObserver,
    ) -> Result<CallToolResult, ClientError> {
        let arguments: JsonObject = match arguments {
            Value::Object(map) => map.clone(),
            _ => JsonObject::new(),
        };
        self.hub
            .call_tool_observed(server, tool, arguments, Some(observer))
            .await
    }
}

/// A call's outcome as the model reads it, and whether it failed: the
/// result, or the error with its hint.
pub(crate) fn outcome_parts(
    outcome: Result<CallToolResult, ClientError>,
) -> (Vec<ResultPart>, bool) {
    match outcome {
        Ok(result) => {
            let is_error = result.is_error == Some(true);
            (result_parts(&result), is_error)
        }
        Err(error) => {
            let text = match error.hint() {
                Some(hint) => format!("{error} (hint: {})", hint.terminal()),
                None => error.to_string(),
            };
            (vec![ResultPart::Text(text)], true)
        }
    }
}

/// A tool's result as the model reads it: text, images, the text of
/// embedded resources, resource links named; structured content as JSON
/// when there is nothing else.
fn result_parts(result: &CallToolResult) -> Vec<ResultPart> {
    let mut parts: Vec<ResultPart> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => ResultPart::Text(text.text.clone()),
            ContentBlock::Image(image) => ResultPart::Image(Image {
                media_type: image.mime_type.clone(),
                data: image.data.clone(),
            }),
            ContentBlock::Resource(resource) => ResultPart::Text(match &resource.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => format!(
                    "[resource {uri}, {}, binary]",
                    mime_type.as_deref().unwrap_or("no type")
                ),
                _ => "[a resource of a kind nexo does not know]".to_owned(),
            }),
            ContentBlock::ResourceLink(link) => {
                ResultPart::Text(format!("[resource link {} ({})]", link.uri, link.name))
            }
            ContentBlock::Audio(audio) => ResultPart::Text(format!("[audio, {}]", audio.mime_type)),
            _ => ResultPart::Text("[content of a kind nexo does not know]".to_owned()),
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(ResultPart::Text(structured.to_string()));
    }
    parts
}

pub(crate) fn text_bytes(parts: &[ResultPart]) -> usize {
    parts
        .iter()
        .map(|part| match part {
            ResultPart::Text(text) => text.len(),
            ResultPart::Image(image) => image.data.len(),
        })
        .sum()
}

pub(crate) fn first_text(parts: &[ResultPart]) -> String {
    parts
        .iter()
        .find_map(|part| match part {
            ResultPart::Text(text) => Some(text.clone()),
            ResultPart::Image(_) => None,
        })
        .unwrap_or_default()
}

fn add_usage(total: &mut Usage, step: &Usage) {
    total.input_tokens += step.input_tokens;
    total.output_tokens += step.output_tokens;
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    total.cache_read_tokens = add(total.cache_read_tokens, step.cache_read_tokens);
    total.cache_write_tokens = add(total.cache_write_tokens, step.cache_write_tokens);
}

/// Whether `audience` (`"model"` or `"app"`) may use `tool`: MCP Apps lets
/// a server keep a tool for its interface alone, or from it
/// (`_meta.ui.visibility`); a tool that says nothing is visible to both.
pub fn visible_to(tool: &rmcp::model::Tool, audience: &str) -> bool {
    let visibility = tool
        .meta
        .as_ref()
        .and_then(|meta| meta.0.get("ui"))
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array);
    visibility.is_none_or(|audiences| audiences.iter().any(|listed| listed == audience))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_only_tools_are_never_offered_to_the_model() {
        let tool = |name: &str, meta: Value| {
            let mut tool = rmcp::model::Tool::new(
                name.to_owned(),
                "a tool",
                std::sync::Arc::new(serde_json::Map::new()),
            );
            if let Value::Object(meta) = meta {
                tool.meta = Some(rmcp::model::MetaObject(meta));
            }
            ("app".to_owned(), tool)
        };
        let tools = vec![
            tool("plain", Value::Null),
            tool(
                "both",
                serde_json::json!({"ui": {"visibility": ["model", "app"]}}),
            ),
            tool(
                "refresh",
                serde_json::json!({"ui": {"visibility": ["app"]}}),
            ),
        ];
        let toolset = Toolset::new(&tools, Dialect::Anthropic, &[], &ToolSelection::default());
        let offered: Vec<&str> = toolset
            .definitions()
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(offered, ["app__plain", "app__both"]);
        assert!(toolset.withheld().iter().any(|w| w.tool == "refresh"));
        let for_apps: Vec<&str> = tools
            .iter()
            .filter(|(_, tool)| visible_to(tool, "app"))
            .map(|(_, tool)| tool.name.as_ref())
            .collect();
        assert_eq!(for_apps, ["plain", "both", "refresh"]);
        let model_only = tool(
            "secret",
            serde_json::json!({"ui": {"visibility": ["model"]}}),
        );
        assert!(!visible_to(&model_only.1, "app"));
    }
}
