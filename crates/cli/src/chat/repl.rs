//! The conversation on a terminal: a prompt, the model's answer as it
//! comes, the approval questions, the slash commands. With no model to
//! talk to it still starts: the commands work, and a message gets how to
//! configure one. Ctrl-C during a turn cancels it (the calls under way
//! are cancelled on their servers) and the conversation goes on; at the
//! prompt it clears the line; Ctrl-D or /quit leaves. The ids of tasks
//! under way are saved with the conversation as they start, for
//! `--resume` should the process end before them; `/resume` takes up
//! those of the conversation it switches to.

use std::path::{Path, PathBuf};

use nexo_client::config::Config;
use nexo_client::hub::Hub;
use nexo_hint::Report;
use nexo_host::agent::{Agent, AgentEvent, Toolset};
use nexo_host::chatlog::ChatLog;
use nexo_host::conversations::Conversation;
use nexo_host::error::ProviderError;
use nexo_host::provider::{Content, Message, ResultPart, Role};
use nexo_host::slash::{self, Attachment, Command, Line, TraceSwitch};
use nexo_host::tasks::Keeper;
use rmcp::model::JsonObject;
use serde_json::Value;

use super::markdown::Markdown;
use super::terminal::{self, Input, Terminal};
use super::{Saved, Tracing};
use crate::failure::Failure;
use crate::{env, host, inspect, output};

/// What the servers' tools and skills are now, as a string to compare.
fn tools_identity(hub: &Hub) -> String {
    serde_json::to_string(&(hub.tools(), hub.skills())).unwrap_or_default()
}

/// The chat's state between turns.
struct Repl<'a, 'h> {
    hub: &'h Hub,
    /// The model, and the tools it is offered; or why there is none.
    agent: Result<(&'a Agent<'h>, Toolset), &'a ProviderError>,
    config: &'a Config,
    log: Option<&'a ChatLog>,
    terminal: Terminal,
    conversation: Conversation,
    saved: &'a Saved,
    /// The servers' tools the toolset was built from, to notice a change.
    tools_seen: String,
    tracing: Tracing,
}

/// What the conversation runs with besides the model.
pub struct Session<'a, 'h> {
    pub hub: &'h Hub,
    pub config: &'a Config,
    pub log: Option<&'a ChatLog>,
    pub saved: &'a Saved,
    pub terminal: Terminal,
    pub tracing: Tracing,
}

pub async fn run(
    session: Session<'_, '_>,
    agent: Result<Agent<'_>, ProviderError>,
    conversation: Conversation,
) -> Result<(), Failure> {
    let Session {
        hub,
        config,
        log,
        saved,
        terminal,
        tracing,
    } = session;
    let mut repl = Repl {
        hub,
        agent: agent.as_ref().map(|agent| (agent, agent.toolset())),
        config,
        log,
        terminal,
        conversation,
        saved,
        tools_seen: tools_identity(hub),
        tracing,
    };
    repl.greet();
    loop {
        let line = match repl.terminal.read("> ", true).await {
            Input::Line(line) => line,
            Input::Interrupted => continue,
            Input::End => break,
        };
        match slash::parse(&line) {
            Err(error) => output::status(&format!("error: {error}")),
            Ok(Line::Empty) => {}
            Ok(Line::Command(Command::Quit)) => break,
            Ok(Line::Command(command)) => repl.command(command).await,
            Ok(Line::Message { text, attachments }) => {
                let mut content = vec![Content::Text(text.clone())];
                for attachment in &attachments {
                    match repl.attach(attachment).await {
                        Ok(text) => content.push(Content::Text(text)),
                        Err(error) => {
                            output::status(&format!("error: {error}"));
                            content.clear();
                            break;
                        }
                    }
                }
                if !content.is_empty() {
                    repl.turn(&text, content).await;
                }
            }
        }
    }
    if !repl.conversation.messages.is_empty() {
        output::status(&format!(
            "go on with this conversation: `nexo --resume {}`",
            repl.conversation.id
        ));
    }
    Ok(())
}

impl Repl<'_, '_> {
    /// Who is listening, with what, and how to get help.
    fn greet(&self) {
        let servers = self.hub.status();
        let connected = servers
            .iter()
            .filter(|server| server.tools.is_some())
            .count();
        match &self.agent {
            Ok((agent, toolset)) => {
                super::tell_offered(agent, toolset);
                let skills = match toolset.skills().offered().len() {
                    0 => String::new(),
                    skills => format!(" ({skills} skills, /skills)"),
                };
                output::status(&format!(
                    "nexo chat: {} at {}; {connected} of {} servers connected, {} tools offered{skills}. /help lists the commands, Ctrl-D leaves.",
                    agent.provider.model(),
                    agent.provider.base_url(),
                    servers.len(),
                    toolset.definitions().len(),
                ));
            }
            Err(error) => {
                output::status(&format!(
                    "nexo chat: {connected} of {} servers connected; the slash commands work (/help), Ctrl-D leaves.",
                    servers.len()
                ));
                output::status(&super::no_model(error));
            }
        }
        self.terminal.set_tools(self.tool_names());
    }

    /// The tools `/call` completes: every connected server's.
    fn tool_names(&self) -> Vec<String> {
        let names = self.hub.tool_names();
        self.hub
            .tools()
            .iter()
            .filter_map(|(server, tool)| names.qualified(server, &tool.name).map(str::to_owned))
            .collect()
    }

    /// When a server's tools changed (`list_changed`, a restart), they go
    /// through the pins again and the toolset is built anew: a changed or
    /// new tool is held back, as at start-up.
    async fn refresh_tools(&mut self) {
        let now = tools_identity(self.hub);
        if now == self.tools_seen {
            return;
        }
        self.tools_seen = now;
        let Ok((agent, toolset)) = &mut self.agent else {
            return;
        };
        match super::pinned(self.config, self.hub, false).await {
            Ok((blocked, skills)) => {
                *toolset = agent.toolset_with(&blocked, &skills);
                output::status(&format!(
                    "the servers' tools changed: {} offered now",
                    toolset.definitions().len()
                ));
            }
            Err(failure) => output::status(&format!(
                "error: the changed tools cannot be checked against their pins: {}",
                failure.report.message
            )),
        }
        self.terminal.set_tools(self.tool_names());
    }

    /// One turn of the model on `content`, the person's message; Ctrl-C
    /// cancels it.
    async fn turn(&mut self, text: &str, content: Vec<Content>) {
        self.refresh_tools().await;
        let (agent, toolset) = match &self.agent {
            Ok((agent, toolset)) => (*agent, toolset),
            Err(error) => {
                output::status(&super::no_model(error));
                return;
            }
        };
        if let Some(log) = self.log {
            log.user(text);
        }
        let before = self.conversation.messages.len();
        self.conversation.messages.push(Message {
            role: Role::User,
            content,
        });
        let log = self.log;
        let saved = self.saved;
        let mut keeper = Keeper::new(&self.conversation);
        let mut markdown = Markdown::new(output::colour_stdout());
        let mut on_event = |event: AgentEvent| {
            if let Some(log) = log {
                log.event(&event);
            }
            if let Some(kept) = keeper.event(&event) {
                saved.save(kept);
            }
            terminal::show(&event, &mut markdown);
        };
        let turn = tokio::select! {
            turn = agent.turn(toolset, &mut self.conversation.messages, &self.terminal, &mut on_event) => Some(turn),
            _ = self.terminal.interrupted() => None,
        };
        match turn {
            Some(Ok(end)) => {
                output::data("\n");
                terminal::tell_end(&end, &agent.provider);
            }
            Some(Err(error)) => {
                self.conversation.messages.truncate(before);
                let failure = Failure::from(error);
                output::status(&format!(
                    "{}Your message was not added to the conversation; send it again when that is fixed.",
                    failure.report.human()
                ));
            }
            None => {
                // What the model did is dropped; the question stays, answered
                // by the cancellation, so that the next turn reads in order.
                self.conversation.messages.truncate(before + 1);
                self.conversation.messages.push(Message {
                    role: Role::Assistant,
                    content: vec![Content::Text("(The user cancelled this turn.)".into())],
                });
                output::status("\ncancelled: the calls under way were cancelled on their servers");
            }
        }
        self.saved.save(&mut self.conversation);
    }

    /// The text of `@server:uri`, as it goes to the model.
    async fn attach(&self, attachment: &Attachment) -> Result<String, String> {
        let session = self
            .hub
            .session(&attachment.server, std::time::Duration::ZERO)
            .await
            .map_err(|error| {
                format!(
                    "cannot attach `@{}:{}`: {error}",
                    attachment.server, attachment.uri
                )
            })?;
        let read = session
            .read_resource(&attachment.uri)
            .await
            .map_err(|error| {
                format!(
                    "cannot read `{}` of `{}`: {error}",
                    attachment.uri, attachment.server
                )
            })?;
        output::status(&format!(
            "attached {} of `{}`",
            attachment.uri, attachment.server
        ));
        Ok(format!(
            "[resource {} of the server `{}`]\n{}",
            attachment.uri,
            attachment.server,
            inspect::read_text(&read)
        ))
    }

    /// `/trace`: every message to and from the servers recorded from now
    /// on (to FILE, or the conversation's own file in the state
    /// directory), or no more.
    fn trace(&mut self, switch: TraceSwitch) {
        let read_it = |file: &Path| {
            format!(
                "read it with `nexo trace summary {}` (or `nexo trace flow`)",
                file.display()
            )
        };
        match switch {
            TraceSwitch::Show => match &self.tracing.file {
                Some(file) => output::status(&format!(
                    "the trace is on: every message goes to {}",
                    file.display()
                )),
                None => output::status("the trace is off; `/trace on [FILE]` starts it"),
            },
            TraceSwitch::On { file } => {
                let file = match file {
                    Some(file) => PathBuf::from(file),
                    None => match env::traces() {
                        Some(directory) => {
                            if let Err(error) = std::fs::create_dir_all(&directory) {
                                output::status(&format!(
                                    "cannot make {}: {error}; give a file: `/trace on FILE`",
                                    directory.display()
                                ));
                                return;
                            }
                            directory.join(format!("{}.jsonl", self.conversation.id))
                        }
                        None => {
                            output::status(
                                "there is no state directory for traces; give a file: `/trace on FILE`",
                            );
                            return;
                        }
                    },
                };
                match self.tracing.tracer.start(&file) {
                    Ok(()) => {
                        output::status(&format!(
                            "tracing every message to and from the servers to {}",
                            file.display()
                        ));
                        self.tracing.file = Some(file);
                    }
                    Err(error) => output::status(&format!(
                        "cannot trace to {}: {error}; give a file in a directory you can write to",
                        file.display()
                    )),
                }
            }
            TraceSwitch::Off => match self.tracing.file.take() {
                None => output::status("the trace is already off"),
                Some(file) => match self.tracing.tracer.stop() {
                    Ok(()) => output::status(&format!(
                        "the trace is off; it is in {}: {}",
                        file.display(),
                        read_it(&file)
                    )),
                    Err(error) => output::status(&format!(
                        "the trace is off, but its last lines could not be written to {}: {error}",
                        file.display()
                    )),
                },
            },
        }
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Help => {
                let rows = slash::COMMANDS
                    .iter()
                    .map(|command| {
                        vec![
                            format!("{} {}", command.name, command.arguments),
                            command.does.to_owned(),
                        ]
                    })
                    .collect();
                output::data(&output::rows(rows));
                output::status(
                    "Anything else is a message for the model; @SERVER:URI in it attaches a resource, and //text sends /text.",
                );
            }
            Command::Tools { filter } => self.tools(filter.as_deref()),
            Command::Servers => output::data(&host::table(&self.hub.status(), None)),
            Command::Call { tool, words } => self.call(&tool, &words).await,
            Command::Resources { server } => {
                for (name, session) in self.sessions(server.as_deref()).await {
                    match session.list_resources().await {
                        Ok(resources) if resources.is_empty() => {}
                        Ok(resources) => {
                            output::status(&format!("{name}:"));
                            output::data(&output::printable(&inspect::resources_table(&resources)));
                        }
                        Err(error) => output::status(&format!("{name}: {error}")),
                    }
                }
            }
            Command::Read { server, uri } => match self.attach(&Attachment { server, uri }).await {
                Ok(text) => output::data(&output::printable(&format!("{text}\n"))),
                Err(error) => output::status(&format!("error: {error}")),
            },
            Command::Prompts { server } => {
                for (name, session) in self.sessions(server.as_deref()).await {
                    match session.list_prompts().await {
                        Ok(prompts) if prompts.is_empty() => {}
                        Ok(prompts) => {
                            output::status(&format!("{name}:"));
                            output::data(&output::printable(&inspect::prompts_table(&prompts)));
                        }
                        Err(error) => output::status(&format!("{name}: {error}")),
                    }
                }
            }
            Command::Prompt { prompt, arguments } => self.prompt(&prompt, arguments).await,
            Command::Trace(switch) => self.trace(switch),
            Command::Skills { filter } => self.skills(filter.as_deref()),
            Command::Skill { skill, text } => self.skill(&skill, text).await,
            Command::Resume { id: None } => {
                let saved = self.saved.list();
                if saved.is_empty() {
                    output::status("no conversation is saved yet");
                }
                let rows = saved
                    .iter()
                    .take(20)
                    .map(|conversation| {
                        vec![
                            conversation.id.clone(),
                            conversation.updated.chars().take(16).collect(),
                            conversation.messages.len().to_string(),
                            output::printable(&conversation.title()).into_owned(),
                        ]
                    })
                    .collect();
                output::data(&output::table(
                    &["ID", "UPDATED", "MESSAGES", "FIRST MESSAGE"],
                    rows,
                    output::Overflow::Cut,
                ));
                output::status("go on with one: /resume ID");
            }
            Command::Resume { id: Some(id) } => match self.saved.load(&id) {
                Ok(mut conversation) => {
                    output::status(&format!(
                        "resumed the conversation {} ({} messages): {}",
                        conversation.id,
                        conversation.messages.len(),
                        output::printable(&conversation.title())
                    ));
                    let agent = self.agent.as_ref().ok().map(|(agent, _)| *agent);
                    super::take_up(agent, &mut conversation, self.saved, self.log).await;
                    self.conversation = conversation;
                }
                Err(failure) => output::status(failure.report.human().trim_end()),
            },
            Command::Clear => {
                self.conversation = Conversation::new(
                    self.conversation.directory.clone(),
                    &self.conversation.model,
                );
                output::status("the conversation starts afresh (the last one stays saved)");
            }
            Command::Quit => {}
        }
    }

    fn tools(&self, filter: Option<&str>) {
        let filter = filter.map(str::to_lowercase);
        let matches = |text: &str| {
            filter
                .as_deref()
                .is_none_or(|filter| text.to_lowercase().contains(filter))
        };
        let rows: Vec<Vec<String>> = match &self.agent {
            Ok((_, toolset)) => toolset
                .definitions()
                .iter()
                .filter(|tool| matches(&tool.name) || matches(&tool.description))
                .map(|tool| {
                    vec![
                        tool.name.clone(),
                        output::printable(&output::summary(Some(&tool.description))).into_owned(),
                    ]
                })
                .collect(),
            Err(_) => self
                .tool_names()
                .into_iter()
                .filter(|name| matches(name))
                .map(|name| vec![name, String::new()])
                .collect(),
        };
        if rows.is_empty() {
            output::status("no tool matches");
        } else {
            output::data(&output::rows(rows));
        }
        if let Ok((_, toolset)) = &self.agent {
            for withheld in toolset.withheld() {
                output::status(&format!(
                    "withheld: `{}` of `{}`: {}",
                    withheld.tool,
                    withheld.server,
                    output::printable(&withheld.reason)
                ));
            }
        }
    }

    /// `/skills`: the skills offered to the model (or with no model, the
    /// servers' skills as listed), and those withheld and why.
    fn skills(&self, filter: Option<&str>) {
        let filter = filter.map(str::to_lowercase);
        let matches = |name: &str, description: &str| {
            filter.as_deref().is_none_or(|filter| {
                name.to_lowercase().contains(filter) || description.to_lowercase().contains(filter)
            })
        };
        let row = |name: String, description: &str| {
            vec![
                name,
                output::printable(&output::summary(Some(description))).into_owned(),
            ]
        };
        let rows: Vec<Vec<String>> = match &self.agent {
            Ok((_, toolset)) => toolset
                .skills()
                .offered()
                .iter()
                .filter(|offered| matches(&offered.name, &offered.skill.frontmatter.description))
                .map(|offered| row(offered.name.clone(), &offered.skill.frontmatter.description))
                .collect(),
            Err(_) => self
                .hub
                .skills()
                .iter()
                .filter(|(_, skill)| matches(skill.name(), &skill.frontmatter.description))
                .map(|(server, skill)| {
                    row(
                        format!("{server}__{}", skill.name()),
                        &skill.frontmatter.description,
                    )
                })
                .collect(),
        };
        if rows.is_empty() {
            output::status(
                "no skill matches (a server offers skills when it declares the skills extension)",
            );
        } else {
            output::data(&output::rows(rows));
        }
        if let Ok((_, toolset)) = &self.agent {
            for withheld in toolset.skills().withheld() {
                output::status(&format!(
                    "withheld: `{}` of `{}`: {}",
                    withheld.name,
                    withheld.server,
                    output::printable(&withheld.reason)
                ));
            }
        }
    }

    /// `/skill NAME [TEXT]`: the person loads a skill; checked as the
    /// model's loads are, it goes to the model with TEXT as the next
    /// message.
    async fn skill(&mut self, name: &str, text: Option<String>) {
        let Ok((agent, toolset)) = &self.agent else {
            if let Err(error) = &self.agent {
                output::status(&super::no_model(error));
            }
            return;
        };
        let Some(offered) = toolset.skills().named(name) else {
            output::status(&format!(
                "error: no skill `{name}` is offered; /skills lists them and those withheld"
            ));
            return;
        };
        let arguments = serde_json::json!({"skill": offered.name});
        let loaded = toolset.skills().load(self.hub, &arguments).await;
        let mut markdown = Markdown::new(output::colour_stdout());
        terminal::show(&toolset.skills().event(&arguments, &loaded), &mut markdown);
        let (parts, failed) = loaded;
        if failed {
            return;
        }
        let text = text
            .filter(|text| !text.is_empty())
            .unwrap_or_else(|| format!("Use the skill `{}`.", offered.name));
        let mut content = vec![Content::Text(text.clone())];
        content.extend(
            agent
                .long_results
                .cap(parts)
                .into_iter()
                .map(|part| match part {
                    ResultPart::Text(text) => Content::Text(text),
                    ResultPart::Image(image) => Content::Image(image),
                }),
        );
        self.turn(&text, content).await;
    }

    /// `/call`: the person's own call, run without asking; its words read
    /// against the tool's schema as `nexo call` reads them.
    async fn call(&self, name: &str, words: &[String]) {
        let names = self.hub.tool_names();
        let Some((server, tool)) = names.resolve(name) else {
            output::status(&format!(
                "error: there is no tool `{name}`; /tools lists them (Tab completes the names)"
            ));
            return;
        };
        let schema = self
            .hub
            .tools()
            .into_iter()
            .find(|(listed_by, listed)| listed_by == server && listed.name == tool)
            .map(|(_, listed)| listed.input_schema.as_ref().clone())
            .unwrap_or_default();
        let arguments = match nexo_client::arguments::tool_arguments(&schema, words) {
            Ok(read) => read.arguments,
            Err(error) => {
                output::status(Report::of(&error).human().trim_end());
                return;
            }
        };
        match self.hub.call_tool(server, tool, arguments).await {
            Ok(result) => {
                output::data(&output::printable(&inspect::call_text(&result)));
                if result.is_error == Some(true) {
                    output::status("(the tool reported an error)");
                }
            }
            Err(error) => output::status(Report::of(&error).human().trim_end()),
        }
    }

    /// `/prompt server__name key=value ...`: the prompt's messages join
    /// the conversation, and the model answers them.
    async fn prompt(&mut self, qualified: &str, arguments: Vec<(String, String)>) {
        let Some((server, name)) = nexo_client::namespace::split(
            qualified,
            self.config
                .servers
                .iter()
                .map(|server| server.name.as_str()),
        ) else {
            output::status(&format!(
                "error: `{qualified}` names no server's prompt; write `/prompt SERVER__PROMPT` (/prompts lists them)"
            ));
            return;
        };
        let session = match self.hub.session(server, std::time::Duration::ZERO).await {
            Ok(session) => session,
            Err(error) => {
                output::status(&format!("error: {error}"));
                return;
            }
        };
        let arguments: JsonObject = arguments
            .into_iter()
            .map(|(key, value)| (key, Value::String(value)))
            .collect();
        let result = match session.get_prompt(name, arguments).await {
            Ok(result) => result,
            Err(error) => {
                output::status(&format!("error: {error}"));
                return;
            }
        };
        let mut messages: Vec<(Role, String)> = Vec::new();
        for message in &result.messages {
            let role = match serde_json::to_value(&message.role)
                .ok()
                .as_ref()
                .and_then(Value::as_str)
            {
                Some("assistant") => Role::Assistant,
                _ => Role::User,
            };
            let text =
                inspect::block_text(&serde_json::to_value(&message.content).unwrap_or_default());
            output::status(&format!(
                "{}: {}",
                if role == Role::User {
                    "user"
                } else {
                    "assistant"
                },
                output::printable(&text)
            ));
            messages.push((role, text));
        }
        // The last user message is the turn's; those before it join the
        // conversation as they are.
        let Some(last_user) = messages.iter().rposition(|(role, _)| *role == Role::User) else {
            output::status("the prompt gave no message of the user's to answer");
            return;
        };
        let (_, text) = messages.remove(last_user);
        for (role, text) in messages.into_iter().take(last_user) {
            self.conversation.messages.push(Message {
                role,
                content: vec![Content::Text(text)],
            });
        }
        self.turn(&text, vec![Content::Text(text.clone())]).await;
    }

    /// Every connected server's session, or `only`'s.
    async fn sessions(
        &self,
        only: Option<&str>,
    ) -> Vec<(String, std::sync::Arc<nexo_client::Session>)> {
        let mut sessions = Vec::new();
        for server in &self.config.servers {
            if only.is_some_and(|only| only != server.name) {
                continue;
            }
            if let Ok(session) = self
                .hub
                .session(&server.name, std::time::Duration::ZERO)
                .await
            {
                sessions.push((server.name.clone(), session));
            }
        }
        if sessions.is_empty() {
            output::status(match only {
                Some(_) => "that server is not connected (/servers shows them)",
                None => "no server is connected (/servers shows them)",
            });
        }
        sessions
    }
}
