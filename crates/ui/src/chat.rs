//! The chat on the page: the person's messages go to a worker that runs
//! nexo-host's agent loop turn by turn; what happens in a turn (the
//! model's words as they stream, each tool call with its arguments, the
//! approval asked in the inbox, the result and how long it took, and the
//! tool's MCP App when it names one) is drawn as it happens and kept, so a
//! reload shows the conversation as it stands.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use nexo_hint::Report;
use nexo_host::agent::{Agent, AgentEvent};
use nexo_host::provider::{Content, Message, Role};
use tokio::sync::{mpsc, watch};

use crate::apps::Apps;
use crate::error::error_block;
use crate::events::Events;
use crate::inbox::{Inbox, PageApprover};
use crate::render::{escape, json_tree};

/// How many messages may wait for the worker.
const QUEUE: usize = 16;

/// One part of the conversation as the page shows it.
enum Part {
    User(String),
    /// The start of the model's answer to a message.
    Answer(u64),
    Text(u64, String),
    Call {
        id: u64,
        server: String,
        tool: String,
        arguments: serde_json::Value,
        status: String,
        /// The frame of its MCP App, once drawn.
        app: Option<String>,
    },
    Aside(Aside),
}

/// What is said about the turn rather than by the model.
enum Aside {
    Notice(String),
    /// The turn failed: the error, as the page draws every error.
    Failed(Report),
}

impl Aside {
    fn html(&self) -> String {
        match self {
            Aside::Notice(text) => format!("<p class=\"notice\">{}</p>", escape(text)),
            Aside::Failed(report) => error_block(report),
        }
    }
}

/// The conversation as drawn, and where new pieces go.
#[derive(Default)]
struct Drawn {
    parts: Vec<Part>,
    next_id: u64,
    /// The answer being written: its element id, and the id of the text
    /// block new words go to.
    answer: u64,
    text: u64,
    /// Calls waiting for their result, per (server, tool), oldest first.
    calls: HashMap<(String, String), VecDeque<u64>>,
    busy: bool,
}

/// The page's side of the chat.
pub struct Chat {
    drawn: Mutex<Drawn>,
    events: Arc<Events>,
    /// Where the person's messages go, or the report of why there is no
    /// model to take them.
    sender: Result<mpsc::Sender<String>, Report>,
    /// The model, or the report of why there is none.
    pub model: Result<String, Report>,
    /// Counts the person's stops; a turn ends at the first after its start.
    stops: watch::Sender<u64>,
    /// Where the tools' MCP Apps are drawn.
    apps: Arc<Apps>,
}

/// Why a message was not taken.
#[derive(Debug)]
pub enum Refused {
    NoModel(Report),
    Busy,
    Empty,
}

impl Chat {
    /// A chat with the model of `model` (its name, or why there is none);
    /// the receiver goes to [`work`].
    pub fn new(
        events: Arc<Events>,
        model: Result<String, Report>,
        apps: Arc<Apps>,
    ) -> (Self, Option<mpsc::Receiver<String>>) {
        let (sender, receiver) = match &model {
            Ok(_) => {
                let (sender, receiver) = mpsc::channel(QUEUE);
                (Ok(sender), Some(receiver))
            }
            Err(report) => (Err(report.clone()), None),
        };
        (
            Self {
                drawn: Mutex::default(),
                events,
                sender,
                model,
                stops: watch::Sender::new(0),
                apps,
            },
            receiver,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Drawn> {
        self.drawn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a turn is under way.
    pub fn busy(&self) -> bool {
        self.lock().busy
    }

    /// Takes the person's message for the model.
    pub fn send(&self, text: &str) -> Result<(), Refused> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Refused::Empty);
        }
        let sender = self
            .sender
            .as_ref()
            .map_err(|report| Refused::NoModel(report.clone()))?;
        {
            let mut drawn = self.lock();
            if drawn.busy {
                return Err(Refused::Busy);
            }
            drawn.busy = true;
        }
        if sender.try_send(text.to_owned()).is_err() {
            self.lock().busy = false;
            return Err(Refused::Busy);
        }
        Ok(())
    }

    /// Stops the turn under way, if any: its calls are cancelled on their
    /// servers and the model is told the person stopped it.
    pub fn stop(&self) -> bool {
        let busy = self.busy();
        if busy {
            self.stops.send_modify(|stops| *stops += 1);
        }
        busy
    }

    /// The conversation so far (the content of `#chat-log`).
    pub fn html(&self) -> String {
        let drawn = self.lock();
        let mut out = String::new();
        let mut open = false;
        for part in &drawn.parts {
            match part {
                Part::User(text) => {
                    if open {
                        out.push_str("</div>");
                        open = false;
                    }
                    out.push_str(&user_html(text));
                }
                Part::Answer(id) => {
                    if open {
                        out.push_str("</div>");
                    }
                    let _ = write!(
                        out,
                        "<div class=\"msg assistant\" id=\"answer-{id}\"><p class=\"who\">model</p>"
                    );
                    open = true;
                }
                Part::Text(id, text) => {
                    let streaming = drawn.busy && *id == drawn.text;
                    out.push_str(&text_html(*id, text, !streaming));
                }
                Part::Call {
                    id,
                    server,
                    tool,
                    arguments,
                    status,
                    app,
                } => out.push_str(&call_html(
                    *id,
                    server,
                    tool,
                    arguments,
                    status,
                    app.as_deref(),
                )),
                Part::Aside(aside) => out.push_str(&aside.html()),
            }
        }
        if open {
            out.push_str("</div>");
        }
        out
    }

    fn publish(&self, html: String) {
        self.events.publish("chat", html);
    }

    /// Starts the answer to the person's `text`.
    fn begin(&self, text: &str) {
        let mut drawn = self.lock();
        drawn.parts.push(Part::User(text.to_owned()));
        drawn.next_id += 1;
        let answer = drawn.next_id;
        drawn.next_id += 1;
        let block = drawn.next_id;
        drawn.answer = answer;
        drawn.text = block;
        drawn.parts.push(Part::Answer(answer));
        drawn.parts.push(Part::Text(block, String::new()));
        drop(drawn);
        self.publish(format!(
            "<div hx-swap-oob=\"beforeend:#chat-log\">{}<div class=\"msg assistant\" id=\"answer-{answer}\"><p class=\"who\">model</p><div class=\"text\" id=\"text-{block}\"></div></div></div>\
             <div hx-swap-oob=\"innerHTML:#chat-state\">{}</div>",
            user_html(text),
            state_html(true)
        ));
    }

    /// Draws one event of the turn.
    fn event(self: &Arc<Self>, event: &AgentEvent) {
        let mut drawn = self.lock();
        let html = match event {
            AgentEvent::Text(piece) => {
                let current = drawn.text;
                if let Some(Part::Text(_, text)) = drawn
                    .parts
                    .iter_mut()
                    .rev()
                    .find(|part| matches!(part, Part::Text(id, _) if *id == current))
                {
                    text.push_str(piece);
                }
                format!(
                    "<div hx-swap-oob=\"beforeend:#text-{}\">{}</div>",
                    drawn.text,
                    escape(piece)
                )
            }
            AgentEvent::ToolCall {
                server,
                tool,
                arguments,
            } => {
                let closed = closed_text(&drawn);
                drawn.next_id += 1;
                let id = drawn.next_id;
                drawn.next_id += 1;
                let block = drawn.next_id;
                drawn.text = block;
                drawn
                    .calls
                    .entry((server.clone(), tool.clone()))
                    .or_default()
                    .push_back(id);
                let status = "asked for".to_owned();
                let html = format!(
                    "{closed}<div hx-swap-oob=\"beforeend:#answer-{}\">{}<div class=\"text\" id=\"text-{block}\"></div></div>",
                    drawn.answer,
                    call_html(id, server, tool, arguments, &status, None)
                );
                drawn.parts.push(Part::Call {
                    id,
                    server: server.clone(),
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    status,
                    app: None,
                });
                drawn.parts.push(Part::Text(block, String::new()));
                html
            }
            AgentEvent::Approval {
                server,
                tool,
                refused,
                reason,
            } => {
                let status = if refused.is_none() {
                    format!("allowed: {reason}")
                } else {
                    format!("not run: {reason}")
                };
                let waiting = drawn
                    .calls
                    .get(&(server.clone(), tool.clone()))
                    .and_then(|calls| calls.front().copied());
                if refused.is_some()
                    && let Some(calls) = drawn.calls.get_mut(&(server.clone(), tool.clone()))
                {
                    calls.pop_front();
                }
                set_status(&mut drawn, waiting, &status)
            }
            AgentEvent::ToolResult {
                server,
                tool,
                arguments,
                duration,
                bytes,
                error,
                result,
            } => {
                let id = drawn
                    .calls
                    .get_mut(&(server.clone(), tool.clone()))
                    .and_then(VecDeque::pop_front);
                let took = duration.as_secs_f64() * 1000.0;
                let status = match error {
                    Some(error) => format!("failed after {took:.0} ms: {error}"),
                    None => format!("done in {took:.0} ms ({bytes} bytes to the model)"),
                };
                if let (Some(id), Some(result)) = (id, result) {
                    self.draw_app(id, server, tool, arguments, result);
                }
                set_status(&mut drawn, id, &status)
            }
            AgentEvent::Task {
                server,
                tool,
                update,
                ..
            } => {
                let id = drawn
                    .calls
                    .get(&(server.clone(), tool.clone()))
                    .and_then(|calls| calls.front().copied());
                let status = format!(
                    "task {}: {:?}{}",
                    update.task,
                    update.status,
                    update
                        .message
                        .as_deref()
                        .map(|message| format!(" ({message})"))
                        .unwrap_or_default()
                );
                set_status(&mut drawn, id, &status)
            }
            AgentEvent::Fitted { fitted, .. } => notice(
                &mut drawn,
                Aside::Notice(format!(
                    "the conversation was shortened to fit the model's context ({} results shortened, {} messages left out)",
                    fitted.shortened, fitted.dropped
                )),
            ),
            AgentEvent::Skill { skill, error, .. } => notice(
                &mut drawn,
                Aside::Notice(match error {
                    Some(error) => format!("the skill `{skill}` was not loaded: {error}"),
                    None => format!("the model loaded the skill `{skill}`"),
                }),
            ),
            AgentEvent::Answer { .. } => return,
        };
        drop(drawn);
        self.publish(html);
    }

    /// Draws the MCP App of the call `id`, if its tool names one, once its
    /// document is read (the turn goes on meanwhile).
    fn draw_app(
        self: &Arc<Self>,
        id: u64,
        server: &str,
        tool: &str,
        arguments: &serde_json::Value,
        result: &rmcp::model::CallToolResult,
    ) {
        let Some(tool) = self.apps.tool(server, tool) else {
            return;
        };
        if crate::apps::interface_of(&tool).is_none() {
            return;
        }
        let result = serde_json::to_value(result).unwrap_or_default();
        let (chat, server, arguments) = (self.clone(), server.to_owned(), arguments.clone());
        tokio::spawn(async move {
            let drawn = crate::apps::drawn(
                chat.apps
                    .for_call(&server, &tool, &arguments, &result)
                    .await,
            );
            let mut parts = chat.lock();
            for part in &mut parts.parts {
                if let Part::Call { id: call, app, .. } = part
                    && *call == id
                {
                    *app = Some(drawn.clone());
                }
            }
            drop(parts);
            chat.publish(format!(
                "<div hx-swap-oob=\"beforeend:#call-{id}\">{drawn}</div>"
            ));
        });
    }

    /// Ends the turn: a notice of how it ended (or the error it failed
    /// with), and the box ready again.
    fn end(&self, ending: Option<Aside>) {
        let mut drawn = self.lock();
        drawn.busy = false;
        drawn.calls.clear();
        let closed = closed_text(&drawn);
        let html = match ending {
            Some(aside) => closed + &notice(&mut drawn, aside),
            None => closed,
        };
        drop(drawn);
        self.publish(format!(
            "{html}<div hx-swap-oob=\"innerHTML:#chat-state\">{}</div>",
            state_html(false)
        ));
    }
}

/// A block of the model's words: as Markdown once written, as text while
/// they stream.
fn text_html(id: u64, text: &str, written: bool) -> String {
    if written && !text.is_empty() {
        format!(
            "<div class=\"text md\" id=\"text-{id}\">{}</div>",
            crate::render::markdown(text)
        )
    } else {
        format!(
            "<div class=\"text\" id=\"text-{id}\">{}</div>",
            escape(text)
        )
    }
}

/// The block the model was writing, drawn again as Markdown now that it
/// is written.
fn closed_text(drawn: &Drawn) -> String {
    let current = drawn.text;
    drawn
        .parts
        .iter()
        .rev()
        .find_map(|part| match part {
            Part::Text(id, text) if *id == current && !text.is_empty() => Some(format!(
                "<div hx-swap-oob=\"outerHTML:#text-{id}\">{}</div>",
                text_html(*id, text, true)
            )),
            _ => None,
        })
        .unwrap_or_default()
}

/// A notice or a failure at the end of the answer being written.
fn notice(drawn: &mut Drawn, aside: Aside) -> String {
    let html = format!(
        "<div hx-swap-oob=\"beforeend:#answer-{}\">{}</div>",
        drawn.answer,
        aside.html()
    );
    drawn.parts.push(Part::Aside(aside));
    html
}

fn set_status(drawn: &mut Drawn, call: Option<u64>, status: &str) -> String {
    let Some(call) = call else {
        return String::new();
    };
    for part in &mut drawn.parts {
        if let Part::Call {
            id, status: shown, ..
        } = part
            && *id == call
        {
            *shown = status.to_owned();
        }
    }
    format!(
        "<div hx-swap-oob=\"innerHTML:#call-{call}-status\">{}</div>",
        escape(status)
    )
}

fn user_html(text: &str) -> String {
    format!(
        "<div class=\"msg user\"><p class=\"who\">you</p><div class=\"text\">{}</div></div>",
        escape(text)
    )
}

/// A tool call as drawn; `app` is the frame of its MCP App (already
/// safe HTML, made by [`Apps`]).
fn call_html(
    id: u64,
    server: &str,
    tool: &str,
    arguments: &serde_json::Value,
    status: &str,
    app: Option<&str>,
) -> String {
    format!(
        "<div class=\"call\" id=\"call-{id}\"><p><span class=\"badge\">tool</span> <code>{}__{}</code> \
         <span class=\"call-status\" id=\"call-{id}-status\">{}</span></p>\
         <details><summary>arguments</summary>{}</details>{}</div>",
        escape(server),
        escape(tool),
        escape(status),
        json_tree(arguments),
        app.unwrap_or_default()
    )
}

/// What the chat's box says while a turn runs, or not.
pub fn state_html(busy: bool) -> &'static str {
    if busy {
        "<span class=\"busy\">the model is answering…</span> \
         <button type=\"button\" class=\"stop\" hx-post=\"/chat/stop\" hx-swap=\"none\">Stop</button>"
    } else {
        ""
    }
}

/// Runs the turns: each message from the page, answered by `agent`, its
/// questions asked in `inbox`.
pub async fn work(
    chat: Arc<Chat>,
    agent: &Agent<'_>,
    inbox: Arc<Inbox>,
    mut messages: mpsc::Receiver<String>,
) {
    let approver = PageApprover(inbox);
    let mut conversation: Vec<Message> = Vec::new();
    while let Some(text) = messages.recv().await {
        chat.begin(&text);
        let before = conversation.len();
        let mut message = Message::user(text);
        // What the page's apps asked the model to know, since the last message.
        message.content.extend(
            chat.apps
                .take_model_context()
                .into_iter()
                .map(Content::Text),
        );
        conversation.push(message);
        let mut stops = chat.stops.subscribe();
        stops.mark_unchanged();
        let toolset = agent.toolset();
        let mut on_event = |event: AgentEvent| chat.event(&event);
        let ended = tokio::select! {
            ended = agent.turn(&toolset, &mut conversation, &approver, &mut on_event) => Some(ended),
            _ = stops.changed() => None,
        };
        chat.end(match ended {
            Some(Ok(end)) if end.cut_short => Some(Aside::Notice(format!(
                "the turn stopped after {} steps while the model still asked for tools",
                end.steps
            ))),
            Some(Ok(_)) => None,
            Some(Err(error)) => {
                let mut report = Report::of(&error);
                report.message = format!("the model could not answer: {}", report.message);
                Some(Aside::Failed(report))
            }
            None => {
                // The question stays, answered by the stop; the calls under
                // way were cancelled when the turn was dropped.
                conversation.truncate(before + 1);
                conversation.push(Message {
                    role: Role::Assistant,
                    content: vec![Content::Text("(The user stopped this turn.)".into())],
                });
                Some(Aside::Notice(
                    "you stopped this turn; the calls under way were cancelled".to_owned(),
                ))
            }
        });
    }
}
