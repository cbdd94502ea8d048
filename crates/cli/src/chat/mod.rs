//! `nexo chat` and bare `nexo`: the chat. Wiring only: the servers start
//! as `nexo servers` starts them; the model, the agent loop, the approval
//! policy and the slash commands are nexo-host's. With `-p PROMPT` (or a
//! prompt piped on stdin) one turn is answered ([`once`]); on a terminal
//! the conversation goes on ([`repl`]).

mod markdown;
mod once;
mod repl;
mod terminal;

use std::collections::HashMap;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nexo_client::config::{Config, Location};
use nexo_client::hub::Hub;
use nexo_client::{ConnectOptions, ElicitationPolicy};
use nexo_hint::Report;
use nexo_host::agent::{Agent, WithheldTool};
use nexo_host::approval::{
    ApprovalGate, ApprovalStore, Approvals, Origin, Pattern, Rule, RuleSource,
};
use nexo_host::chatlog::ChatLog;
use nexo_host::conversations::{Conversation, Conversations};
use nexo_host::error::ProviderError;
use nexo_host::long_results::LongResults;
use nexo_host::pins::{PinStore, ServerIdentity};
use nexo_host::provider::{Provider, Settings};
use nexo_host::skills::SkillTrust;
use nexo_host::tool_search::ToolSelection;
use nexo_trace::{TraceOptions, Tracer};
use rmcp::model::{Skill, Tool};

use crate::args::{ChatArgs, ModelArgs};
use crate::failure::Failure;
use crate::{env, host, output};
use terminal::Terminal;

/// What the model is told about where it runs.
const SYSTEM_PROMPT: &str = "You are nexo's assistant. You may call the tools of the MCP servers \
     the user connected; a tool's name is its server's and its own, joined by `__`. Call a \
     tool when it helps answer; say plainly when a tool fails or a call was not approved.";

pub async fn run(args: ChatArgs) -> Result<(), Failure> {
    let prompt = one_shot_prompt(&args)?;
    let config = host::load(args.config.as_deref())?;
    let mut store = host::consent_store()?;
    // Traced from the start with `--trace`; else idle until `/trace on`.
    let tracing = match host::trace_choice(&args.trace, Some(&config)) {
        Some((path, options)) => Tracing {
            tracer: host::tracer(&path, options)?,
            file: Some(path),
        },
        None => Tracing {
            tracer: Tracer::idle(TraceOptions {
                redact_messages: args.trace.trace_redact || config.trace_redact,
            }),
            file: None,
        },
    };
    let trace = tracing.tracer.clone();
    let provider =
        nexo_host::provider::select(&settings(&args.llm, &config), env::provider()).await;
    // One turn needs a model: say so before starting any server.
    let provider = match (provider, &prompt) {
        (Err(error), Some(_)) => return Err(Failure::from(error)),
        (provider, _) => provider,
    };
    // On a terminal the person answers the servers' forms; with `-p` no
    // one does, and they are declined.
    let terminal = match prompt {
        Some(_) => None,
        None => Some(Terminal::open(env::chat_history()).map_err(|error| {
            Failure::usage(
                format!("cannot use the terminal: {error}"),
                Some("give the prompt with `nexo chat -p PROMPT` instead".into()),
            )
        })?),
    };
    let options = ConnectOptions {
        trace: Some(trace.clone()),
        startup: args.startup.seconds,
        notices: Some(Arc::new(output::notice)),
        // The working directory, for servers that still ask for roots.
        roots: std::env::current_dir()
            .ok()
            .and_then(|cwd| nexo_client::handler::root_of(&cwd))
            .into_iter()
            .collect(),
        sampling: terminal.as_ref().map(|terminal| {
            Arc::new(terminal::Sampler {
                terminal: terminal.clone(),
                provider: provider.as_ref().ok().cloned(),
            }) as Arc<dyn nexo_client::handler::SamplingResponder>
        }),
        elicitation: match &terminal {
            Some(terminal) => ElicitationPolicy::Responder(Arc::new(terminal.clone())),
            None => ElicitationPolicy::Decline,
        },
        ..ConnectOptions::default()
    };
    let host::Started { hub, skipped } =
        host::start(&config, &mut store, args.timeout, options).await?;
    host::tell_skipped(&store, &skipped);
    let outcome = converse(&hub, provider, prompt, terminal, tracing, &config, &args).await;
    hub.close().await;
    if let Err(error) = trace.flush() {
        tracing::warn!(%error, "cannot write the trace file");
    }
    outcome
}

/// The chat itself, once the servers are up: one turn for `prompt`, else
/// the conversation (which starts without a model, saying why).
async fn converse(
    hub: &Hub,
    provider: Result<Provider, ProviderError>,
    prompt: Option<String>,
    terminal: Option<Terminal>,
    tracing: Tracing,
    config: &Config,
    args: &ChatArgs,
) -> Result<(), Failure> {
    let (blocked, skills) = pinned(config, hub, args.approve_tool_changes).await?;
    let log = chat_log(args);
    let agent = match provider {
        Ok(provider) => {
            let gate = Arc::new(gate(config, args.yes)?);
            Ok(agent(
                hub, provider, config, &args.llm, gate, blocked, skills,
            )?)
        }
        Err(error) => Err(error),
    };
    let model = agent
        .as_ref()
        .map(|agent| agent.provider.model().to_owned())
        .unwrap_or_default();
    let saved = Saved {
        store: env::conversations().map(Conversations::new),
    };
    let mut conversation = saved.open(args.resume.as_deref(), &model)?;
    take_up(agent.as_ref().ok(), &mut conversation, &saved, log.as_ref()).await;
    match (prompt, agent, terminal) {
        (Some(prompt), Ok(agent), _) => {
            once::run(
                &agent,
                &prompt,
                conversation,
                &saved,
                log.as_ref(),
                args.json,
            )
            .await
        }
        (Some(_), Err(error), _) => Err(Failure::from(error)),
        (None, agent, Some(terminal)) => {
            let session = repl::Session {
                hub,
                config,
                log: log.as_ref(),
                saved: &saved,
                terminal,
                tracing,
            };
            repl::run(session, agent, conversation).await
        }
        (None, _, None) => Err(Failure::usage(
            "nothing to ask: give a prompt with -p, or run on a terminal",
            None,
        )),
    }
}

/// The chat's trace of its servers' messages, and the file it goes to
/// while it is on.
pub struct Tracing {
    pub tracer: Tracer,
    pub file: Option<PathBuf>,
}

/// Where the chat's conversations are saved (nowhere without a state
/// directory).
pub struct Saved {
    store: Option<Conversations>,
}

impl Saved {
    /// A new conversation, or with `--resume` the saved one (`""`: the
    /// latest of this directory).
    fn open(&self, resume: Option<&str>, model: &str) -> Result<Conversation, Failure> {
        let directory = std::env::current_dir().unwrap_or_default();
        let Some(id) = resume else {
            return Ok(Conversation::new(directory, model));
        };
        let Some(store) = &self.store else {
            return Err(Failure::usage(
                "there is no state directory, where conversations are saved",
                Some("set HOME (or XDG_STATE_HOME)".into()),
            ));
        };
        let conversation = if id.is_empty() {
            store.latest(&directory)
        } else {
            store.load(id)
        }?;
        output::status(&format!(
            "resumed the conversation {} ({} messages): {}",
            conversation.id,
            conversation.messages.len(),
            output::printable(&conversation.title())
        ));
        Ok(conversation)
    }

    /// Saves `conversation`, or says why it could not.
    pub fn save(&self, conversation: &mut Conversation) {
        if let Some(store) = &self.store
            && let Err(error) = store.save(conversation)
        {
            let mut report = Report::of(&error);
            report.message = format!("the conversation is not saved: {}", report.message);
            output::status(report.warning().trim_end());
        }
    }

    /// The saved conversations, newest first.
    pub fn list(&self) -> Vec<Conversation> {
        self.store
            .as_ref()
            .map(Conversations::list)
            .unwrap_or_default()
    }

    /// The saved conversation `id`.
    pub fn load(&self, id: &str) -> Result<Conversation, Failure> {
        match &self.store {
            Some(store) => Ok(store.load(id)?),
            None => Err(Failure::usage(
                "there is no state directory, where conversations are saved",
                None,
            )),
        }
    }
}

/// Takes up the tasks kept with `conversation`, left running on their
/// servers when an earlier chat ended (nexo-host's `tasks`): waits for
/// each to end, shows how, and saves their results into the conversation
/// as the results of the calls they stand for. Ctrl-C cancels them; with
/// no model they wait for a chat that has one.
async fn take_up(
    agent: Option<&Agent<'_>>,
    conversation: &mut Conversation,
    saved: &Saved,
    log: Option<&ChatLog>,
) {
    if conversation.tasks.is_empty() {
        return;
    }
    let names: Vec<String> = conversation
        .tasks
        .iter()
        .map(|kept| format!("{} (`{}__{}`)", kept.task, kept.server, kept.tool))
        .collect();
    let Some(agent) = agent else {
        output::status(&format!(
            "this conversation has tasks that were still running: {}; they are taken up when a model is configured",
            output::printable(&names.join(", "))
        ));
        return;
    };
    output::status(&format!(
        "taking up the tasks still running when this conversation was saved: {}",
        output::printable(&names.join(", "))
    ));
    let mut markdown = markdown::Markdown::new(false);
    let mut on_event = |event: nexo_host::agent::AgentEvent| {
        if let Some(log) = log {
            log.event(&event);
        }
        terminal::show(&event, &mut markdown);
    };
    let mut taking_up = conversation.clone();
    let taken = tokio::select! {
        taken = agent.take_up(&mut taking_up, &mut on_event) => taken,
        _ = tokio::signal::ctrl_c() => {
            conversation.tasks.clear();
            saved.save(conversation);
            output::status("cancelled: the tasks were cancelled on their servers");
            return;
        }
    };
    *conversation = taking_up;
    for taken in &taken {
        let outcome = if taken.failed { "failed: " } else { "" };
        output::status(&format!(
            "task {} of `{}__{}` ended: {outcome}{}",
            taken.task.task,
            taken.task.server,
            taken.task.tool,
            output::printable(&output::summary(Some(&taken.text)))
        ));
    }
    output::status("the model reads these results with your next message");
    saved.save(conversation);
}

/// The prompt of a one-shot chat: `-p`, else what is piped on stdin;
/// `None` on a terminal, where the conversation goes on.
fn one_shot_prompt(args: &ChatArgs) -> Result<Option<String>, Failure> {
    if let Some(prompt) = &args.prompt {
        return Ok(Some(prompt.clone()));
    }
    if std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let mut piped = String::new();
    if let Err(error) = std::io::stdin().read_to_string(&mut piped) {
        return Err(Failure::usage(
            format!("cannot read the prompt from stdin: {error}"),
            Some("give it with `-p PROMPT`".into()),
        ));
    }
    if piped.trim().is_empty() {
        return Err(Failure::usage(
            "nothing to ask: stdin is not a terminal and held no prompt",
            Some("give the prompt with `nexo chat -p PROMPT` (or pipe it in), or run `nexo` on a terminal".into()),
        ));
    }
    Ok(Some(piped))
}

/// The provider's settings: the flags, else the configuration's `chat`.
pub(crate) fn settings(args: &ModelArgs, config: &Config) -> Settings {
    let kind = args.provider.or(config.chat.provider);
    Settings {
        kind,
        model: args.model.clone().or_else(|| config.chat.model.clone()),
        base_url: args
            .base_url
            .clone()
            .or_else(|| config.chat.base_url.clone()),
        ..Settings::default()
    }
}

/// The approval policy of the chat and of the web page's MCP Apps: the
/// configuration's approval rules and the answers remembered in
/// `approvals.json`, and the servers' origins.
pub(crate) fn gate(config: &Config, yes: bool) -> Result<ApprovalGate, Failure> {
    let origins: HashMap<String, Origin> = config
        .servers
        .iter()
        .map(|server| {
            let origin = if server.project_file.is_some() {
                Origin::Project
            } else {
                Origin::User
            };
            (server.name.clone(), origin)
        })
        .collect();
    let mut rules = Vec::new();
    for rule in &config.chat.approvals {
        rules.push(Rule {
            pattern: pattern(&rule.pattern, Some(&rule.location))?,
            action: rule.action,
            source: if rule.from_project {
                RuleSource::ProjectConfig
            } else {
                RuleSource::Config
            },
        });
    }
    let store = match env::config_dir() {
        Some(dir) => Some(ApprovalStore::open(dir.join("approvals.json"))?),
        None => None,
    };
    let project = std::env::current_dir().unwrap_or_default();
    Ok(ApprovalGate::new(
        Approvals::new(rules, store, project),
        origins,
        yes,
    ))
}

/// The agent for `provider`: the approval policy ([`gate`]), the tools held
/// back by their pins and the skills approved.
pub(crate) fn agent<'h>(
    hub: &'h Hub,
    provider: Provider,
    config: &Config,
    args: &ModelArgs,
    gate: Arc<ApprovalGate>,
    blocked: Vec<WithheldTool>,
    skills: SkillTrust,
) -> Result<Agent<'h>, Failure> {
    let max_steps = args
        .max_steps
        .or(config.chat.max_steps)
        .map_or(nexo_host::agent::DEFAULT_MAX_STEPS, |steps| steps as usize);
    let tools = &config.chat.tools;
    let patterns = |texts: &[String]| -> Result<Vec<Pattern>, Failure> {
        texts
            .iter()
            .map(|text| pattern(text, tools.location.as_ref()))
            .collect()
    };
    let selection = ToolSelection {
        include: patterns(&tools.include)?,
        exclude: patterns(&tools.exclude)?,
        always_load: patterns(&tools.always_load)?,
    };
    let context_window = config
        .chat
        .context_window
        .unwrap_or_else(|| nexo_host::context::window_of(provider.model()));
    Ok(Agent {
        hub,
        provider,
        gate,
        blocked,
        skills,
        system: Some(SYSTEM_PROMPT.to_owned()),
        max_steps,
        max_tokens: nexo_host::agent::DEFAULT_MAX_TOKENS,
        context_window,
        selection,
        search_share: tools
            .search_share
            .unwrap_or(nexo_host::tool_search::DEFAULT_SHARE),
        long_results: LongResults::new(
            env::long_results().unwrap_or_else(|| std::env::temp_dir().join("nexo-results")),
            nexo_host::long_results::DEFAULT_LIMIT,
        ),
    })
}

/// A pattern of the configuration's, or an error placed at `location`.
fn pattern(text: &str, location: Option<&Location>) -> Result<Pattern, Failure> {
    Pattern::new(text).map_err(|error| {
        let mut failure = Failure::from(error);
        if let Some(at) = location {
            failure.report.message = format!("{at}: {}", failure.report.message);
        }
        failure
    })
}

/// Says what the model is not offered, and why (but the tools and skills
/// held back by their pins, said when they were), and whether it searches
/// the tools.
fn tell_offered(agent: &Agent<'_>, toolset: &nexo_host::agent::Toolset) {
    if toolset.searched() {
        output::status(&format!(
            "the {} tools' definitions would take more than {:.0}% of the model's context window: it gets their names and searches them",
            toolset.definitions().len(),
            agent.search_share * 100.0
        ));
    }
    for withheld in toolset
        .withheld()
        .iter()
        .filter(|withheld| !agent.blocked.contains(withheld))
    {
        output::status(&format!(
            "not offered to the model: `{}` of `{}`: {}",
            withheld.tool, withheld.server, withheld.reason
        ));
    }
    for withheld in toolset.skills().withheld().iter().filter(|withheld| {
        !agent
            .skills
            .held()
            .iter()
            .any(|held| held.server == withheld.server && held.uri == withheld.uri)
    }) {
        output::status(&output::printable(&format!(
            "not offered to the model: the skill `{}` of `{}`: {}",
            withheld.name, withheld.server, withheld.reason
        )));
    }
}

/// The failure to show when there is no model.
fn no_model(error: &ProviderError) -> String {
    let mut report = Report::of(error);
    report.message = format!("no model to talk to: {}", report.message);
    report.human().trim_end().to_owned()
}

/// Each connected server's tools and skills against their pins
/// (`pins.json` in nexo's configuration directory): a server seen for the
/// first time is pinned as it is; a tool or skill changed or added since
/// is not offered, and the person is shown the change and how to approve
/// it.
pub(crate) async fn pinned(
    config: &Config,
    hub: &Hub,
    approve_changes: bool,
) -> Result<(Vec<WithheldTool>, SkillTrust), Failure> {
    let skills = hub.skills();
    let listed_skills = |server: &str| -> Vec<Skill> {
        skills
            .iter()
            .filter(|(name, _)| name == server)
            .map(|(_, skill)| skill.clone())
            .collect()
    };
    let mut trust = SkillTrust::default();
    let Some(dir) = env::config_dir() else {
        output::status(
            "warning: no configuration directory to keep tool pins in; tools and skills are not pinned",
        );
        for server in &config.servers {
            trust.trust(&server.name, &listed_skills(&server.name));
        }
        return Ok((Vec::new(), trust));
    };
    let mut store = PinStore::open(dir.join("pins.json"))?;
    let tools = hub.tools();
    let mut blocked = Vec::new();
    for server in &config.servers {
        let listed: Vec<Tool> = tools
            .iter()
            .filter(|(name, _)| name == &server.name)
            .map(|(_, tool)| tool.clone())
            .collect();
        let Ok(session) = hub.session(&server.name, Duration::ZERO).await else {
            continue;
        };
        let instructions = session
            .server_info()
            .and_then(|info| info.instructions.clone());
        let fingerprint = server.fingerprint.to_text();
        let identity = ServerIdentity {
            name: &server.name,
            fingerprint: &fingerprint,
        };
        let admitted = store.admit(&identity, &listed, instructions.as_deref(), approve_changes)?;
        if admitted.first_use {
            output::status(&format!(
                "pinned the tools of `{}` as they are now ({} of them); a later change is shown and held back",
                server.name,
                admitted.approved.len()
            ));
        } else if !admitted.approved.is_empty() {
            output::status(&format!(
                "approved the changed or new tools of `{}`: {}",
                server.name,
                admitted.approved.join(", ")
            ));
        }
        for (tool, status) in admitted.blocked {
            let Some(reason) = status.held_back_because() else {
                continue;
            };
            output::status(&format!(
                "held back `{tool}` of `{}`: {reason}",
                server.name
            ));
            blocked.push(WithheldTool {
                server: server.name.clone(),
                tool,
                reason,
            });
        }
        let listed = listed_skills(&server.name);
        let admitted = store.admit_skills(&identity, &listed, approve_changes)?;
        if admitted.first_use && !admitted.approved.is_empty() {
            output::status(&format!(
                "pinned the skills of `{}` as they are now ({} of them); a later change is shown and held back",
                server.name,
                admitted.approved.len()
            ));
        } else if !admitted.first_use && !admitted.approved.is_empty() {
            output::status(&format!(
                "approved the changed or new skills of `{}`: {}",
                server.name,
                admitted.approved.join(", ")
            ));
        }
        trust.admit(&server.name, &listed, &admitted);
    }
    for held in trust.held() {
        output::status(&output::printable(&format!(
            "held back the skill {} of `{}`: {}",
            held.uri, held.server, held.reason
        )));
    }
    if !blocked.is_empty() || !trust.held().is_empty() {
        output::status(
            "hint: after reviewing the changes, run again with `--approve-tool-changes` to offer them",
        );
    }
    Ok((blocked, trust))
}

/// The chat log: `--chat-log FILE`, else `chat_log.jsonl` in nexo's state
/// directory; none with `--chat-log off` or when it cannot be opened (said
/// once).
fn chat_log(args: &ChatArgs) -> Option<ChatLog> {
    let path = match args.chat_log.as_deref() {
        Some(path) if path.as_os_str() == "off" => return None,
        Some(path) => path.to_owned(),
        None => env::chat_log()?,
    };
    match ChatLog::open(&path) {
        Ok(log) => Some(log),
        Err(error) => {
            output::status(&format!(
                "warning: cannot open the chat log `{}`: {error}; this chat is not logged",
                path.display()
            ));
            None
        }
    }
}
