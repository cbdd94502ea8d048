//! The chat on a terminal: the line editor (history, completion of slash
//! commands and tool names), the approval question, the servers' forms
//! (elicitation), and how a turn's events are shown. Everything a server or the model wrote goes through
//! [`output::printable`] first.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use nexo_client::ElicitationResponder;
use nexo_client::handler::SamplingResponder;
use nexo_host::agent::{AgentEvent, Approver, Pending, Reply, TurnEnd};
use nexo_host::approval::{Answer, Scope};
use nexo_host::provider::{Content, Provider, Request, Role};
use nexo_host::sampling::{self, Asked};
use nexo_host::{elicitation, slash};
#[expect(
    deprecated,
    reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use super::markdown::Markdown;
use crate::output;

/// What the person typed.
pub enum Input {
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the terminal went away.
    End,
}

/// The terminal's line editor, shared by the prompt and the approval
/// questions (never both at once). Reads happen on a blocking thread.
#[derive(Clone)]
pub struct Terminal {
    editor: Arc<Mutex<Editor<Completions, DefaultHistory>>>,
    history: Option<PathBuf>,
    /// Ctrl-C at an approval question: the turn is to end.
    cancel: Arc<tokio::sync::Notify>,
}

impl Terminal {
    /// The editor, with the history kept at `history` (loaded now, each
    /// line appended as it is typed).
    pub fn open(history: Option<PathBuf>) -> Result<Self, String> {
        let config = rustyline::Config::builder()
            .max_history_size(1000)
            .map_err(|error| error.to_string())?
            .history_ignore_dups(true)
            .map_err(|error| error.to_string())?
            .history_ignore_space(true)
            .completion_type(rustyline::CompletionType::List)
            .build();
        let mut editor = Editor::with_config(config).map_err(|error| error.to_string())?;
        editor.set_helper(Some(Completions::default()));
        if let Some(path) = &history {
            // No history yet is the usual first run.
            let _ = editor.load_history(path);
        }
        Ok(Self {
            editor: Arc::new(Mutex::new(editor)),
            history,
            cancel: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// The tool names `/call` completes.
    pub fn set_tools(&self, names: Vec<String>) {
        if let Some(helper) = self.lock().helper_mut() {
            helper.tools = names;
        }
    }

    /// One line, after `prompt`; a typed line goes into the history.
    pub async fn read(&self, prompt: &str, remember: bool) -> Input {
        let this = self.clone();
        let prompt = prompt.to_owned();
        let read = tokio::task::spawn_blocking(move || {
            let mut editor = this.lock();
            let read = editor.readline(&prompt);
            if let (Ok(line), true) = (&read, remember)
                && !line.trim().is_empty()
            {
                let _ = editor.add_history_entry(line.as_str());
                if let Some(path) = &this.history {
                    if let Some(dir) = path.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    let _ = editor.append_history(path);
                }
            }
            read
        })
        .await;
        match read {
            Ok(Ok(line)) => Input::Line(line),
            Ok(Err(ReadlineError::Interrupted)) => Input::Interrupted,
            Ok(Err(_)) | Err(_) => Input::End,
        }
    }

    /// Resolves when the person presses Ctrl-C during a turn: as a signal
    /// while the model or a tool works, or at an approval question (where
    /// the line editor reads it as a key).
    pub async fn interrupted(&self) {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = self.cancel.notified() => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Editor<Completions, DefaultHistory>> {
        self.editor.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Approver for Terminal {
    fn ask<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            output::end_progress();
            let arguments = serde_json::to_string_pretty(&pending.arguments)
                .unwrap_or_else(|_| pending.arguments.to_string());
            let mut question = format!(
                "\n? run {}__{} ({})\n",
                pending.server,
                pending.tool,
                output::printable(&pending.reason)
            );
            for line in output::printable(&arguments).lines() {
                question.push_str(&format!("    {line}\n"));
            }
            question.push_str("  [y] yes, once  [n] no");
            let offered = |answer| pending.answers.contains(&answer);
            if offered(Answer::AlwaysTool) {
                question.push_str("  [t] always this tool");
            }
            if offered(Answer::AlwaysServer) {
                question.push_str(&format!("  [s] always `{}`'s tools", pending.server));
            }
            output::status(&question);
            let answer = loop {
                let line = match self.read("  answer: ", false).await {
                    Input::Line(line) => line,
                    Input::Interrupted => {
                        self.cancel.notify_one();
                        return Reply::NO;
                    }
                    Input::End => return Reply::NO,
                };
                match line.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => break Answer::Yes,
                    "n" | "no" | "" => break Answer::No,
                    "t" if offered(Answer::AlwaysTool) => break Answer::AlwaysTool,
                    "s" if offered(Answer::AlwaysServer) => break Answer::AlwaysServer,
                    _ => output::status("  answer y, n, or one of the letters shown"),
                }
            };
            let scope = if matches!(answer, Answer::AlwaysTool | Answer::AlwaysServer)
                && pending.scopes.len() > 1
            {
                output::status(
                    "  remember it for  [s] this session  [p] this project (this directory)  [a] always",
                );
                loop {
                    let line = match self.read("  for: ", false).await {
                        Input::Line(line) => line,
                        Input::Interrupted | Input::End => break Scope::Session,
                    };
                    match line.trim().to_ascii_lowercase().as_str() {
                        "s" | "" => break Scope::Session,
                        "p" => break Scope::Project,
                        "a" => break Scope::Always,
                        _ => output::status("  answer s, p or a"),
                    }
                }
            } else {
                Scope::Session
            };
            Reply { answer, scope }
        })
    }
}

/// A server's question (elicitation), asked field by field; Ctrl-C
/// cancels it, and nothing is sent that the person did not confirm.
#[async_trait::async_trait]
impl ElicitationResponder for Terminal {
    /// A URL-mode request is shown with its URL and asks the person's
    /// consent (nexo never opens it).
    fn takes_urls(&self) -> bool {
        true
    }

    async fn respond(&self, request: ElicitRequestParams) -> ElicitResult {
        output::end_progress();
        let answer = ElicitResult::new;
        match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                output::status(&format!(
                    "\n? a server asks: {}",
                    output::printable(&message)
                ));
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                let fields = match elicitation::fields(&schema) {
                    Ok(fields) => fields,
                    Err(why) => {
                        output::status(&format!(
                            "  declined: the form cannot be filled here ({})",
                            output::printable(&why)
                        ));
                        return answer(ElicitationAction::Decline);
                    }
                };
                let mut answers = Vec::new();
                for field in &fields {
                    if let Some(description) = &field.description {
                        output::status(&format!("  {}", output::printable(description)));
                    }
                    let hint = field.hint();
                    let prompt = if hint.is_empty() {
                        format!("  {}: ", output::printable(&field.label))
                    } else {
                        format!(
                            "  {} ({}): ",
                            output::printable(&field.label),
                            output::printable(&hint)
                        )
                    };
                    loop {
                        let typed = match self.read(&prompt, false).await {
                            Input::Line(typed) => typed,
                            Input::Interrupted | Input::End => {
                                output::status("  cancelled");
                                return answer(ElicitationAction::Cancel);
                            }
                        };
                        match field.read(&typed) {
                            Ok(Some(value)) => {
                                answers.push((field.name.clone(), value));
                                break;
                            }
                            Ok(None) => break,
                            Err(why) => output::status(&format!("  {why}")),
                        }
                    }
                }
                match self
                    .confirm("  send these answers? [y] yes  [n] no, decline: ")
                    .await
                {
                    Some(true) => ElicitResult::new(ElicitationAction::Accept)
                        .with_content(elicitation::content(answers)),
                    Some(false) => answer(ElicitationAction::Decline),
                    None => answer(ElicitationAction::Cancel),
                }
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                output::status(&format!(
                    "\n? a server asks you to open a page: {}\n  {}\n  (nexo does not open it: check where it leads first)",
                    output::printable(&message),
                    output::printable(&url)
                ));
                match self
                    .confirm("  done there? [y] yes  [n] no, decline: ")
                    .await
                {
                    Some(true) => answer(ElicitationAction::Accept),
                    Some(false) => answer(ElicitationAction::Decline),
                    None => answer(ElicitationAction::Cancel),
                }
            }
            _ => {
                output::status("a server asked a kind of question nexo does not know; declined");
                answer(ElicitationAction::Decline)
            }
        }
    }
}

/// A server's request for the model (sampling) on the terminal: shown
/// whole (system prompt, messages, token budget), sent to the chat's model
/// only when the person says so (the last message may be rewritten first),
/// and the model's answer returned to the server only when approved.
pub struct Sampler {
    pub terminal: Terminal,
    /// The chat's model; none configured refuses every request.
    pub provider: Option<Provider>,
}

#[expect(
    deprecated,
    reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
)]
#[async_trait::async_trait]
impl SamplingResponder for Sampler {
    async fn respond(
        &self,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, String> {
        output::end_progress();
        let Some(provider) = &self.provider else {
            output::status(
                "a server asked the model for an answer; no model is configured, refused",
            );
            return Err("no model is configured to answer".into());
        };
        let mut asked = Asked::of(&request);
        let mut shown = format!(
            "\n? a server asks the model ({}) for an answer of up to {} tokens:",
            provider.model(),
            asked.max_tokens
        );
        if let Some(system) = &asked.system {
            shown.push_str(&format!("\n  system: {}", output::printable(system)));
        }
        for message in &asked.messages {
            let role = if message.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            shown.push_str(&format!(
                "\n  {role}: {}",
                output::printable(&message.text())
            ));
        }
        output::status(&shown);
        loop {
            let typed = match self
                .terminal
                .read(
                    "  [y] send it  [e] rewrite the last message  [n] refuse: ",
                    false,
                )
                .await
            {
                Input::Line(typed) => typed,
                Input::Interrupted | Input::End => {
                    return Err("the user refused the request".into());
                }
            };
            match typed.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => break,
                "n" | "no" => return Err("the user refused the request".into()),
                "e" => {
                    if let Input::Line(text) =
                        self.terminal.read("  the last message: ", false).await
                        && let Some(last) = asked.messages.last_mut()
                    {
                        last.content = vec![Content::Text(text)];
                    }
                }
                _ => output::status("  answer y, e or n"),
            }
        }
        let answer = provider
            .complete(&Request {
                system: asked.system.as_deref(),
                messages: &asked.messages,
                tools: &[],
                max_tokens: asked.max_tokens,
            })
            .await
            .map_err(|error| format!("the model could not answer: {error}"))?;
        output::status(&format!(
            "  the model answers: {}",
            output::printable(&answer.message.text())
        ));
        match self
            .terminal
            .confirm("  return it to the server? [y] yes  [n] no: ")
            .await
        {
            Some(true) => Ok(sampling::result(&answer, provider.model())),
            _ => Err("the user refused the model's answer".into()),
        }
    }
}

impl Terminal {
    /// A yes or no; `None` for Ctrl-C or the end of input.
    async fn confirm(&self, prompt: &str) -> Option<bool> {
        loop {
            match self.read(prompt, false).await {
                Input::Line(typed) => match typed.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => return Some(true),
                    "n" | "no" => return Some(false),
                    _ => output::status("  answer y or n"),
                },
                Input::Interrupted | Input::End => return None,
            }
        }
    }
}

/// Completes slash commands, and tool names after `/call`.
#[derive(Default)]
pub struct Completions {
    tools: Vec<String>,
}

impl Completer for Completions {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let before = &line[..pos];
        if !before.contains(char::is_whitespace) {
            let names = slash::complete_command(before);
            return Ok((0, names.into_iter().map(str::to_owned).collect()));
        }
        if let Some(start) = before.strip_prefix("/call ")
            && !start.contains(char::is_whitespace)
        {
            let names = self
                .tools
                .iter()
                .filter(|name| name.starts_with(start))
                .cloned()
                .collect();
            return Ok(("/call ".len(), names));
        }
        Ok((pos, Vec::new()))
    }
}

impl Hinter for Completions {
    type Hint = String;
}
impl Highlighter for Completions {}
impl Validator for Completions {}
impl Helper for Completions {}

/// An event as the person sees it: the answer on stdout as it comes
/// (rendered by `markdown`), the tool calls on stderr.
pub fn show(event: &AgentEvent, markdown: &mut Markdown) {
    match event {
        AgentEvent::Text(text) => output::data(&markdown.push(&output::printable(text))),
        AgentEvent::Answer { .. } => output::data(&markdown.finish()),
        AgentEvent::ToolCall {
            server,
            tool,
            arguments,
        } => output::status(&format!(
            "-> {server}__{tool} {}",
            output::printable(&arguments.to_string())
        )),
        AgentEvent::Approval {
            server,
            tool,
            refused: Some(_),
            reason,
        } => output::status(&format!(
            "   {server}__{tool} not run: {}",
            output::printable(reason)
        )),
        AgentEvent::Fitted { fitted, window } => {
            let mut done = Vec::new();
            if fitted.shortened > 0 {
                done.push(format!("shortened {} old tool results", fitted.shortened));
            }
            if fitted.dropped > 0 {
                done.push(format!("left out the {} oldest messages", fitted.dropped));
            }
            output::status(&format!(
                "context: {} to stay inside the model's {window}-token window (about {} tokens, now {})",
                done.join(" and "),
                fitted.tokens_before,
                fitted.tokens_after
            ));
        }
        // Shown as the session's notices, like progress.
        AgentEvent::Approval { .. } | AgentEvent::Task { .. } => {}
        AgentEvent::Skill {
            server,
            skill,
            file,
            bytes,
            error,
        } => {
            let from = server
                .as_ref()
                .map(|server| format!(" of `{server}`"))
                .unwrap_or_default();
            output::status(&output::printable(&match error {
                None => format!(
                    "skill: loaded {file} of `{skill}`{from} ({bytes} bytes, digest checked)"
                ),
                Some(error) => format!("skill: not loaded: {error}"),
            }));
        }
        AgentEvent::ToolResult {
            server,
            tool,
            duration,
            bytes,
            error,
            ..
        } => {
            output::end_progress();
            let outcome = match error {
                Some(error) => format!(
                    "failed: {}",
                    output::printable(&output::summary(Some(error)))
                ),
                None => format!("{bytes} bytes"),
            };
            output::status(&format!(
                "<- {server}__{tool} {outcome} ({:.0} ms)",
                duration.as_secs_f64() * 1000.0
            ));
        }
    }
}

/// The turn's steps, tokens and, at the model's list prices, cost; and a
/// warning when the step limit cut it short.
pub fn tell_end(end: &TurnEnd, provider: &Provider) {
    let cost = provider
        .cost(&end.usage)
        .map(|dollars| format!(", ≈ ${dollars:.4}"))
        .unwrap_or_default();
    output::status(&format!(
        "{} steps, {} tokens in, {} out{cost}",
        end.steps, end.usage.input_tokens, end.usage.output_tokens
    ));
    if end.cut_short {
        output::status(&format!(
            "warning: the turn ended after {} steps with the model still calling tools; raise `--max-steps`",
            end.steps
        ));
    }
}
