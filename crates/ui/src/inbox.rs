//! What waits for the person at the page: the chat's tool calls to approve,
//! the servers' elicitation forms (and URL requests) and their sampling
//! requests to review. Each question is server-side state, shown at the top
//! of every view and answered by a POST, so a reload or a second tab shows
//! the same queue and either can answer; whoever asked waits on its own
//! channel. A question nobody answers waits as long as its asker does (a
//! call's time limits stop while a person is answering).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::future::BoxFuture;
use nexo_client::handler::{ElicitationResponder, SamplingResponder};
use nexo_host::agent::{Approver, Pending, Reply};
use nexo_host::approval::{Answer, Scope};
use nexo_host::elicitation::{self, Field, Kind};
use nexo_host::provider::{Provider, Request, Role};
use nexo_host::sampling::{self, Asked};
#[expect(
    deprecated,
    reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::events::Events;
use crate::render::{escape, json_tree};

/// A question waiting.
enum Question {
    /// Answered by one of `choices` (value, label).
    Choice {
        body: String,
        choices: Vec<(&'static str, String)>,
        reply: oneshot::Sender<&'static str>,
    },
    /// A server's form: filled, declined or cancelled.
    Form {
        body: String,
        fields: Vec<Field>,
        /// Why the last answers would not do, and what was typed.
        problem: Option<String>,
        typed: BTreeMap<String, String>,
        reply: oneshot::Sender<ElicitResult>,
    },
}

/// The questions waiting, in the order they were asked.
pub struct Inbox {
    waiting: Mutex<BTreeMap<u64, Question>>,
    next: AtomicU64,
    events: Arc<Events>,
}

/// Why an answer was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum NotTaken {
    /// No such question is waiting (answered in another tab, or its asker
    /// gave up).
    Gone,
    /// The form's answers would not do; it waits still, saying why.
    Invalid,
}

impl Inbox {
    pub fn new(events: Arc<Events>) -> Self {
        Self {
            waiting: Mutex::default(),
            next: AtomicU64::new(1),
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Question>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The queue as HTML (the content of `#inbox`).
    pub fn html(&self) -> String {
        let waiting = self.lock();
        let mut out = String::new();
        for (id, question) in waiting.iter() {
            draw(&mut out, *id, question);
        }
        out
    }

    /// How many questions wait.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn publish(&self) {
        let html = self.html();
        self.events.publish(
            "inbox",
            format!("<div hx-swap-oob=\"innerHTML:#inbox\">{html}</div>"),
        );
    }

    fn push(&self, question: Question) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, question);
        self.publish();
    }

    /// Asks, and waits for one of `choices`; `None` when the page went away.
    async fn choose(
        &self,
        body: String,
        choices: Vec<(&'static str, String)>,
    ) -> Option<&'static str> {
        let (reply, answer) = oneshot::channel();
        self.push(Question::Choice {
            body,
            choices,
            reply,
        });
        answer.await.ok()
    }

    /// Takes an answer to question `id`: `answer` (a choice's value, or for
    /// a form `accept`, `decline` or `cancel`) and the form's fields.
    pub fn answer(
        &self,
        id: u64,
        answer: &str,
        fields: &BTreeMap<String, String>,
    ) -> Result<(), NotTaken> {
        let mut waiting = self.lock();
        let Some(question) = waiting.remove(&id) else {
            return Err(NotTaken::Gone);
        };
        let taken = match question {
            Question::Choice {
                body,
                choices,
                reply,
            } => match choices.iter().find(|(value, _)| *value == answer) {
                Some((value, _)) => {
                    let _ = reply.send(value);
                    Ok(())
                }
                None => {
                    waiting.insert(
                        id,
                        Question::Choice {
                            body,
                            choices,
                            reply,
                        },
                    );
                    Err(NotTaken::Invalid)
                }
            },
            Question::Form {
                body,
                fields: form,
                reply,
                ..
            } => match answer {
                "accept" => match read_form(&form, fields) {
                    Ok(content) => {
                        let _ = reply.send(
                            ElicitResult::new(ElicitationAction::Accept).with_content(content),
                        );
                        Ok(())
                    }
                    Err(problem) => {
                        waiting.insert(
                            id,
                            Question::Form {
                                body,
                                fields: form,
                                problem: Some(problem),
                                typed: fields.clone(),
                                reply,
                            },
                        );
                        Err(NotTaken::Invalid)
                    }
                },
                "cancel" => {
                    let _ = reply.send(ElicitResult::new(ElicitationAction::Cancel));
                    Ok(())
                }
                _ => {
                    let _ = reply.send(ElicitResult::new(ElicitationAction::Decline));
                    Ok(())
                }
            },
        };
        drop(waiting);
        self.publish();
        taken
    }

    /// Forgets questions whose asker gave up (a call cancelled, a server
    /// gone); says whether any was.
    pub fn sweep(&self) -> bool {
        let mut waiting = self.lock();
        let before = waiting.len();
        waiting.retain(|_, question| match question {
            Question::Choice { reply, .. } => !reply.is_closed(),
            Question::Form { reply, .. } => !reply.is_closed(),
        });
        let swept = waiting.len() != before;
        drop(waiting);
        if swept {
            self.publish();
        }
        swept
    }
}

/// The answers of a form: each field read as the terminal reads it.
fn read_form(form: &[Field], typed: &BTreeMap<String, String>) -> Result<Value, String> {
    let mut answers = Vec::new();
    for field in form {
        let text = typed
            .get(&field.name)
            .map(String::as_str)
            .unwrap_or_default();
        match field.read(text) {
            Ok(Some(value)) => answers.push((field.name.clone(), value)),
            Ok(None) => {}
            Err(why) => return Err(format!("{}: {why}", field.label)),
        }
    }
    Ok(elicitation::content(answers))
}

fn draw(out: &mut String, id: u64, question: &Question) {
    let _ = write!(
        out,
        "<form class=\"ask\" id=\"ask-{id}\" hx-post=\"/inbox/{id}\" hx-target=\"#inbox\" hx-swap=\"innerHTML\">"
    );
    match question {
        Question::Choice { body, choices, .. } => {
            out.push_str(body);
            out.push_str("<p class=\"choices\">");
            for (value, label) in choices {
                let _ = write!(
                    out,
                    "<button type=\"submit\" name=\"answer\" value=\"{value}\" class=\"choice-{value}\">{}</button> ",
                    escape(label)
                );
            }
            out.push_str("</p>");
        }
        Question::Form {
            body,
            fields,
            problem,
            typed,
            ..
        } => {
            out.push_str(body);
            if let Some(problem) = problem {
                let _ = write!(
                    out,
                    "<p class=\"error\" role=\"alert\">{}</p>",
                    escape(problem)
                );
            }
            for (index, field) in fields.iter().enumerate() {
                form_field(out, id, index, field, typed.get(&field.name));
            }
            out.push_str(
                "<p class=\"choices\"><button type=\"submit\" name=\"answer\" value=\"accept\">Send</button> \
                 <button type=\"submit\" name=\"answer\" value=\"decline\" formnovalidate>Decline</button> \
                 <button type=\"submit\" name=\"answer\" value=\"cancel\" formnovalidate>Cancel</button></p>",
            );
        }
    }
    out.push_str("</form>");
}

/// One field of a server's form, as an input the browser checks too.
fn form_field(
    out: &mut String,
    question: u64,
    index: usize,
    field: &Field,
    typed: Option<&String>,
) {
    let id = format!("ask-{question}-{index}");
    let name = format!("f:{}", field.name);
    let shown = typed.cloned().or_else(|| {
        field.default.as_ref().map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    });
    let value = escape(shown.as_deref().unwrap_or_default());
    let required = if field.required { " required" } else { "" };
    let _ = write!(
        out,
        "<div class=\"field\"><label for=\"{id}\">{}{}</label>",
        escape(&field.label),
        if field.required {
            " <span class=\"required\" title=\"required\">*</span>"
        } else {
            ""
        }
    );
    match &field.kind {
        Kind::Text { format, .. } => {
            let kind = match format.as_deref() {
                Some("email") => "email",
                Some("uri") => "url",
                Some("date") => "date",
                _ => "text",
            };
            let _ = write!(
                out,
                "<input id=\"{id}\" name=\"{}\" type=\"{kind}\" value=\"{value}\"{required}>",
                escape(&name)
            );
        }
        Kind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let _ = write!(
                out,
                "<input id=\"{id}\" name=\"{}\" type=\"number\" step=\"{}\" value=\"{value}\"{}{}{required}>",
                escape(&name),
                if *integer { "1" } else { "any" },
                minimum
                    .map(|min| format!(" min=\"{min}\""))
                    .unwrap_or_default(),
                maximum
                    .map(|max| format!(" max=\"{max}\""))
                    .unwrap_or_default(),
            );
        }
        Kind::Boolean => {
            let _ = write!(
                out,
                "<select id=\"{id}\" name=\"{}\"{required}>",
                escape(&name)
            );
            for (option, label) in [("", "(not given)"), ("yes", "yes"), ("no", "no")] {
                let selected = if value == option { " selected" } else { "" };
                let _ = write!(out, "<option value=\"{option}\"{selected}>{label}</option>");
            }
            out.push_str("</select>");
        }
        Kind::Choice { options } | Kind::Choices { options, .. } => {
            let many = matches!(field.kind, Kind::Choices { .. });
            let _ = write!(
                out,
                "<select id=\"{id}\" name=\"{}\"{}{required}>",
                escape(&name),
                if many { " multiple" } else { "" }
            );
            if !many {
                out.push_str("<option value=\"\">choose…</option>");
            }
            for (_, label) in options {
                let _ = write!(out, "<option value=\"{0}\">{0}</option>", escape(label));
            }
            out.push_str("</select>");
        }
    }
    if let Some(description) = &field.description {
        let _ = write!(out, "<p class=\"about\">{}</p>", escape(description));
    }
    out.push_str("</div>");
}

/// The chat's questions about tool calls, asked on the page.
pub struct PageApprover(pub Arc<Inbox>);

impl Approver for PageApprover {
    fn ask<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let asker = pending
                .asked_by
                .as_deref()
                .map(|asker| {
                    format!(
                        "<p class=\"asker\">Asked by {}, not the model.</p>",
                        escape(asker)
                    )
                })
                .unwrap_or_default();
            let body = format!(
                "<h2>Run <code>{}__{}</code>?</h2>{asker}<p>{}</p>{}",
                escape(&pending.server),
                escape(&pending.tool),
                escape(&pending.reason),
                json_tree(&pending.arguments)
            );
            let mut choices = vec![("yes", "Yes, once".to_owned()), ("no", "No".to_owned())];
            if pending.answers.contains(&Answer::AlwaysTool) {
                choices.push(("tool", "Always this tool (this session)".to_owned()));
            }
            if pending.answers.contains(&Answer::AlwaysServer) {
                choices.push((
                    "server",
                    format!("Always {}'s tools (this session)", pending.server),
                ));
            }
            let answer = match self.0.choose(body, choices).await {
                Some("yes") => Answer::Yes,
                Some("tool") => Answer::AlwaysTool,
                Some("server") => Answer::AlwaysServer,
                _ => Answer::No,
            };
            Reply {
                answer,
                scope: Scope::Session,
            }
        })
    }
}

/// The servers' elicitation requests, asked on the page.
pub struct PageElicitation(pub Arc<Inbox>);

#[async_trait]
impl ElicitationResponder for PageElicitation {
    /// A URL request is shown with its URL; nexo never opens it.
    fn takes_urls(&self) -> bool {
        true
    }

    async fn respond(&self, request: ElicitRequestParams) -> ElicitResult {
        match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let body = format!(
                    "<h2>A server asks</h2><p class=\"description\">{}</p>",
                    escape(&message)
                );
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                let fields = match elicitation::fields(&schema) {
                    Ok(fields) => fields,
                    Err(_) => return ElicitResult::new(ElicitationAction::Decline),
                };
                let (reply, answer) = oneshot::channel();
                self.0.push(Question::Form {
                    body,
                    fields,
                    problem: None,
                    typed: BTreeMap::new(),
                    reply,
                });
                answer
                    .await
                    .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel))
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                let body = format!(
                    "<h2>A server asks you to open a page</h2><p class=\"description\">{}</p>\
                     <p><code>{}</code></p><p class=\"muted\">nexo does not open it: check where it leads, \
                     open it yourself, then say whether you are done there.</p>",
                    escape(&message),
                    escape(&url)
                );
                let choices = vec![
                    ("done", "Done there".to_owned()),
                    ("no", "Decline".to_owned()),
                ];
                match self.0.choose(body, choices).await {
                    Some("done") => ElicitResult::new(ElicitationAction::Accept),
                    Some(_) => ElicitResult::new(ElicitationAction::Decline),
                    None => ElicitResult::new(ElicitationAction::Cancel),
                }
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        }
    }
}

/// The servers' sampling requests, reviewed on the page: the request is
/// shown whole and sent to the model only when the person says so, and the
/// model's answer returned only when approved.
pub struct PageSampling {
    pub inbox: Arc<Inbox>,
    /// The chat's model; none configured refuses every request.
    pub provider: Option<Provider>,
}

#[expect(
    deprecated,
    reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
)]
#[async_trait]
impl SamplingResponder for PageSampling {
    async fn respond(
        &self,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, String> {
        let Some(provider) = &self.provider else {
            return Err("no model is configured to answer".into());
        };
        let asked = Asked::of(&request);
        let mut body = format!(
            "<h2>A server asks the model ({}) for an answer</h2><p class=\"muted\">up to {} tokens</p>",
            escape(provider.model()),
            asked.max_tokens
        );
        if let Some(system) = &asked.system {
            let _ = write!(
                body,
                "<p><strong>system:</strong></p><pre>{}</pre>",
                escape(system)
            );
        }
        for message in &asked.messages {
            let role = if message.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            let _ = write!(
                body,
                "<p><strong>{role}:</strong></p><pre>{}</pre>",
                escape(&message.text())
            );
        }
        let send = vec![
            ("send", "Send it to the model".to_owned()),
            ("no", "Refuse".to_owned()),
        ];
        if self.inbox.choose(body, send).await != Some("send") {
            return Err("the user refused the request".into());
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
        let review = format!(
            "<h2>The model answers the server's request</h2><pre>{}</pre>",
            escape(&answer.message.text())
        );
        let back = vec![
            ("return", "Return it to the server".to_owned()),
            ("no", "Refuse".to_owned()),
        ];
        match self.inbox.choose(review, back).await {
            Some("return") => Ok(sampling::result(&answer, provider.model())),
            _ => Err("the user refused the model's answer".into()),
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    fn inbox() -> Arc<Inbox> {
        Arc::new(Inbox::new(Arc::default()))
    }

    fn id_in(html: &str) -> u64 {
        html.split("hx-post=\"/inbox/")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|id| id.parse().ok())
            .unwrap()
    }

    #[tokio::test]
    async fn a_form_waits_until_its_answers_will_do() {
        let inbox = inbox();
        let responder = PageElicitation(inbox.clone());
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "<script>alert(1)</script> How many?",
            "requestedSchema": {"type": "object",
                "properties": {"count": {"type": "integer", "minimum": 1}},
                "required": ["count"]}
        }))
        .unwrap();
        let asked = tokio::spawn(async move { responder.respond(request).await });
        while inbox.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        let html = inbox.html();
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains("name=\"f:count\"") && html.contains("min=\"1\""),
            "{html}"
        );
        let id = id_in(&html);
        let mut typed = BTreeMap::new();
        typed.insert("count".to_owned(), "zero".to_owned());
        assert_eq!(inbox.answer(id, "accept", &typed), Err(NotTaken::Invalid));
        assert!(inbox.html().contains("role=\"alert\""), "it says why");
        typed.insert("count".to_owned(), "3".to_owned());
        assert_eq!(inbox.answer(id, "accept", &typed), Ok(()));
        let answered = asked.await.unwrap();
        assert_eq!(answered.action, ElicitationAction::Accept);
        assert_eq!(answered.content, Some(json!({"count": 3})));
        assert_eq!(inbox.answer(id, "accept", &typed), Err(NotTaken::Gone));
        assert_eq!(inbox.waiting(), 0);
    }

    #[tokio::test]
    async fn a_question_whose_asker_gave_up_is_swept() {
        let inbox = inbox();
        let waiting = inbox.clone();
        let asked = tokio::spawn(async move {
            waiting
                .choose("<p>go?</p>".to_owned(), vec![("yes", "Yes".to_owned())])
                .await
        });
        while inbox.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        asked.abort();
        let _ = asked.await;
        assert!(inbox.sweep());
        assert_eq!(inbox.waiting(), 0);
    }
}
