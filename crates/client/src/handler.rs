//! nexo's side of server-to-client messages: the notifications that tell
//! about a request in progress (log messages, progress), handed to the
//! caller's [`NoticeSink`]; tool, prompt and resource list changes,
//! counted; roots and sampling (2025-era features) answered by what the
//! caller gives; and elicitation, answered by a policy the caller picks
//! (rmcp declines by default): decline, fill in the schema's defaults, or
//! hand each form to the caller's own [`ElicitationResponder`] (a person at
//! a prompt, a test's script). The same
//! answers serve both eras: an `elicitation/create` request over a 2025-era
//! session, and the input requests (elicitation, sampling, roots) that a
//! 2026-07-28 `input_required` result or a task's `tasks/get` carries,
//! which [`Handler::answer`] fulfils through the same paths. The handler
//! declares the tasks extension (`io.modelcontextprotocol/tasks`): the
//! session follows a tool call that a server runs as a task
//! ([`crate::tasks`]).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
#[expect(
    deprecated,
    reason = "SEP-2577 deprecates logging, but servers of every revision before it still log"
)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, InputRequest, JsonObject, ProgressNotificationParam,
    TASKS_EXTENSION_ID, TaskStatus, UrlElicitationCapability,
};
#[expect(
    deprecated,
    reason = "roots are a 2025-era feature (SEP-2577 drops them); servers of those revisions still ask"
)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ListRootsResult, Root, RootsCapabilities,
    SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;
use tokio::sync::watch;

use crate::arguments::Schema;

/// A notification about work in progress, for whoever shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A log message (`notifications/message`): its level (`info`,
    /// `warning`, ...), the logger's name and the text.
    Log {
        level: String,
        logger: Option<String>,
        text: String,
    },
    /// Progress (`notifications/progress`) of a request that asked for it.
    Progress {
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A tool call the server runs as a task, seen to start or change:
    /// its id, status and the server's message about it.
    Task {
        task: String,
        status: TaskStatus,
        message: Option<String>,
    },
    /// A stdio server still starting (its handshake unanswered), once a
    /// second after the first two; `ready` once it has answered.
    Starting {
        command: String,
        elapsed: std::time::Duration,
        ready: bool,
    },
}

/// Receives the [`Notice`]s of a session.
pub type NoticeSink = Arc<dyn Fn(Notice) + Send + Sync>;

/// Answers elicitation requests on a user's behalf.
#[async_trait]
pub trait ElicitationResponder: Send + Sync {
    /// The answer to `request`: accept with content, decline or cancel.
    async fn respond(&self, request: ElicitRequestParams) -> ElicitResult;

    /// Whether this responder shows URL-mode requests to a person (the
    /// URL, and a consent to go there): only then is URL elicitation
    /// declared, as the 2026-07-28 revision requires of a client that takes
    /// it. A responder that cannot declines them.
    fn takes_urls(&self) -> bool {
        false
    }
}

/// Answers a server's sampling requests (`sampling/createMessage`, a
/// 2025-era feature): a person approves, a model answers; the error says
/// why not (a person's refusal included).
#[expect(
    deprecated,
    reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
)]
#[async_trait]
pub trait SamplingResponder: Send + Sync {
    async fn respond(
        &self,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, String>;
}

/// How to answer a server's elicitation request.
#[derive(Clone, Default)]
pub enum ElicitationPolicy {
    /// Do not advertise elicitation; decline any request that comes anyway.
    #[default]
    Decline,
    /// Advertise form elicitation and accept each request with the defaults
    /// its schema gives (fields without a default are left out).
    SchemaDefaults,
    /// Advertise form elicitation and let this responder answer each request.
    Responder(Arc<dyn ElicitationResponder>),
}

impl fmt::Debug for ElicitationPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitationPolicy::Decline => "Decline",
            ElicitationPolicy::SchemaDefaults => "SchemaDefaults",
            ElicitationPolicy::Responder(_) => "Responder(..)",
        })
    }
}

/// The client handler behind every [`crate::Session`].
#[derive(Clone)]
pub struct Handler {
    info: ClientConfig,
    elicitation: ElicitationPolicy,
    notices: Option<NoticeSink>,
    /// Counts progress notifications, for limits that they start again.
    progress: Arc<watch::Sender<u64>>,
    /// Whether a person is answering a form of the server's: the call that
    /// waits on it is not timed meanwhile.
    answering: Arc<watch::Sender<bool>>,
    /// Counts the server's `notifications/tools/list_changed`.
    tools_changed: Arc<watch::Sender<u64>>,
    /// Counts its `notifications/prompts/list_changed`.
    prompts_changed: Arc<watch::Sender<u64>>,
    /// Counts its `notifications/resources/list_changed`.
    resources_changed: Arc<watch::Sender<u64>>,
    /// The roots offered (`file://` URIs).
    roots: Vec<String>,
    /// Who answers sampling requests; none declared without one.
    sampling: Option<Arc<dyn SamplingResponder>>,
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handler")
            .field("info", &self.info)
            .field("elicitation", &self.elicitation)
            .finish_non_exhaustive()
    }
}

impl Handler {
    pub fn new(mut info: ClientConfig, elicitation: ElicitationPolicy) -> Self {
        info.capabilities
            .extensions
            .get_or_insert_default()
            .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        let takes_urls = match &elicitation {
            ElicitationPolicy::Decline => None,
            ElicitationPolicy::SchemaDefaults => Some(false),
            ElicitationPolicy::Responder(responder) => Some(responder.takes_urls()),
        };
        if let Some(takes_urls) = takes_urls {
            let form = ElicitationCapability::new().with_form(FormElicitationCapability::new());
            info.capabilities.elicitation = Some(if takes_urls {
                form.with_url(UrlElicitationCapability::new())
            } else {
                form
            });
        }
        Self {
            info,
            elicitation,
            notices: None,
            progress: Arc::new(watch::channel(0).0),
            answering: Arc::new(watch::channel(false).0),
            tools_changed: Arc::new(watch::channel(0).0),
            prompts_changed: Arc::new(watch::channel(0).0),
            resources_changed: Arc::new(watch::channel(0).0),
            roots: Vec::new(),
            sampling: None,
        }
    }

    /// Lets `responder` answer sampling requests (declared when given).
    pub fn with_sampling(mut self, responder: Option<Arc<dyn SamplingResponder>>) -> Self {
        if responder.is_some() {
            self.info.capabilities.sampling = Some(SamplingCapability::default());
        }
        self.sampling = responder;
        self
    }

    /// Offers `roots` (`file://` URIs) to servers that ask; none, and the
    /// capability not declared, when empty.
    pub fn with_roots(mut self, roots: Vec<String>) -> Self {
        if !roots.is_empty() {
            self.info.capabilities.roots = Some(RootsCapabilities::default());
        }
        self.roots = roots;
        self
    }

    /// The answer to a server's elicitation: the responder's, the
    /// schema's defaults, or a decline (a URL-mode request to a responder
    /// that does not take URLs included).
    async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        match (&self.elicitation, request) {
            (ElicitationPolicy::Responder(responder), request)
                if responder.takes_urls()
                    || !matches!(request, ElicitRequestParams::UrlElicitationParams { .. }) =>
            {
                let _answering = Answering::start(&self.answering);
                responder.respond(request).await
            }
            (
                ElicitationPolicy::SchemaDefaults,
                ElicitRequestParams::FormElicitationParams {
                    requested_schema, ..
                },
            ) => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(schema_defaults(&schema)))
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        }
    }

    /// Changes each time the server says its tools changed.
    pub fn tools_changed(&self) -> watch::Receiver<u64> {
        self.tools_changed.subscribe()
    }

    /// Changes each time the server says its prompts changed.
    pub fn prompts_changed(&self) -> watch::Receiver<u64> {
        self.prompts_changed.subscribe()
    }

    /// Changes each time the server says its resources changed.
    pub fn resources_changed(&self) -> watch::Receiver<u64> {
        self.resources_changed.subscribe()
    }

    /// Says whether a person is answering one of the server's forms.
    pub fn answering(&self) -> watch::Receiver<bool> {
        self.answering.subscribe()
    }

    /// Changes at each progress notification the server sends.
    pub fn progress(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// Hands log and progress notifications to `sink`.
    pub fn with_notices(mut self, sink: Option<NoticeSink>) -> Self {
        self.notices = sink;
        self
    }

    pub(crate) fn notify(&self, notice: Notice) {
        if let Some(sink) = &self.notices {
            sink(notice);
        }
    }

    /// The answer to one of the requests an `input_required` result or
    /// task carries, given as the standalone request would be.
    pub(crate) async fn answer(&self, request: InputRequest) -> Result<Value, ErrorData> {
        let encoded = |result: Result<Value, serde_json::Error>| {
            result.map_err(|error| {
                ErrorData::internal_error(format!("cannot encode the answer: {error}"), None)
            })
        };
        match request {
            InputRequest::Elicitation(request) => {
                encoded(serde_json::to_value(self.elicit(request.params).await))
            }
            InputRequest::CreateMessage(request) => {
                let result = self.sample(request.params).await?;
                encoded(serde_json::to_value(result))
            }
            InputRequest::ListRoots(_) => encoded(serde_json::to_value(self.roots())),
            _ => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "this client does not take requests of this kind",
                None,
            )),
        }
    }

    #[expect(
        deprecated,
        reason = "roots are a 2025-era feature (SEP-2577 drops them); servers of those revisions still ask"
    )]
    fn roots(&self) -> ListRootsResult {
        ListRootsResult::new(
            self.roots
                .iter()
                .map(|uri| Root::new(uri.clone()))
                .collect(),
        )
    }

    #[expect(
        deprecated,
        reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
    )]
    async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(responder) = &self.sampling else {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "this client does not take sampling requests",
                None,
            ));
        };
        let answer = {
            let _answering = Answering::start(&self.answering);
            responder.respond(params).await
        };
        // -1: the specification's code for a request the user refused.
        answer.map_err(|why| ErrorData::new(rmcp::model::ErrorCode(-1), why, None))
    }
}

/// A person answering the server: the call waiting on it is not timed
/// meanwhile. Says the person is done when the answer is given or no
/// longer awaited.
struct Answering<'a>(&'a watch::Sender<bool>);

impl<'a> Answering<'a> {
    fn start(answering: &'a watch::Sender<bool>) -> Self {
        answering.send_replace(true);
        Self(answering)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

/// A log message's data as one line of text: a string as is, anything
/// else as compact JSON.
fn log_text(data: &Value) -> String {
    match data {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The root a directory is offered as: its `file://` URI.
pub fn root_of(directory: &std::path::Path) -> Option<String> {
    url::Url::from_file_path(directory).ok().map(String::from)
}

/// The `default` of each property of an elicitation schema.
pub fn schema_defaults(schema: &Value) -> JsonObject {
    Schema::of_value(schema)
        .properties()
        .filter_map(|property| {
            let default = property.schema.get("default")?;
            Some((property.name.to_owned(), default.clone()))
        })
        .collect()
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    #[expect(
        deprecated,
        reason = "roots are a 2025-era feature (SEP-2577 drops them); servers of those revisions still ask"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(self.roots())
    }

    #[expect(
        deprecated,
        reason = "sampling is a 2025-era feature (SEP-2577 drops it); servers of those revisions still ask"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sample(params).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.prompts_changed
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.resources_changed
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .send_modify(|count| *count = count.wrapping_add(1));
        self.notify(Notice::Progress {
            progress: params.progress,
            total: params.total,
            message: params.message,
        });
    }

    #[expect(
        deprecated,
        reason = "SEP-2577 deprecates logging, but servers of every revision before it still log"
    )]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|level| level.as_str().map(str::to_owned))
            .unwrap_or_else(|| "info".into());
        self.notify(Notice::Log {
            level,
            logger: params.logger,
            text: log_text(&params.data),
        });
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.elicit(request).await)
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    struct Accepting;

    #[async_trait]
    impl ElicitationResponder for Accepting {
        async fn respond(&self, _request: ElicitRequestParams) -> ElicitResult {
            ElicitResult::new(ElicitationAction::Accept)
        }
    }

    #[test]
    fn form_elicitation_is_declared_unless_declining() {
        let declared = |policy: ElicitationPolicy| {
            Handler::new(ClientConfig::default(), policy)
                .get_info()
                .capabilities
                .elicitation
                .is_some_and(|elicitation| elicitation.form.is_some())
        };
        assert!(!declared(ElicitationPolicy::Decline));
        assert!(declared(ElicitationPolicy::SchemaDefaults));
        assert!(declared(ElicitationPolicy::Responder(Arc::new(Accepting))));
        assert_eq!(
            format!("{:?}", ElicitationPolicy::Responder(Arc::new(Accepting))),
            "Responder(..)"
        );
    }

    struct ShowingUrls;

    #[async_trait]
    impl ElicitationResponder for ShowingUrls {
        async fn respond(&self, _request: ElicitRequestParams) -> ElicitResult {
            ElicitResult::new(ElicitationAction::Accept)
        }

        fn takes_urls(&self) -> bool {
            true
        }
    }

    /// URL elicitation is declared only by a responder that shows URLs to
    /// a person; one that cannot has such requests declined for it.
    #[tokio::test]
    async fn url_elicitation_is_declared_only_by_a_responder_that_takes_urls() {
        let url_declared = |policy: ElicitationPolicy| {
            Handler::new(ClientConfig::default(), policy)
                .get_info()
                .capabilities
                .elicitation
                .is_some_and(|elicitation| elicitation.url.is_some())
        };
        assert!(!url_declared(ElicitationPolicy::SchemaDefaults));
        assert!(!url_declared(ElicitationPolicy::Responder(Arc::new(
            Accepting
        ))));
        assert!(url_declared(ElicitationPolicy::Responder(Arc::new(
            ShowingUrls
        ))));
        let request: ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "url",
            "message": "sign in",
            "url": "https://example.com/sign-in",
            "elicitationId": "e1"
        }))
        .unwrap();
        let answer = |responder: Arc<dyn ElicitationResponder>| {
            let handler = Handler::new(
                ClientConfig::default(),
                ElicitationPolicy::Responder(responder),
            );
            let request = request.clone();
            async move { handler.elicit(request).await.action }
        };
        assert_eq!(
            answer(Arc::new(Accepting)).await,
            ElicitationAction::Decline
        );
        assert_eq!(
            answer(Arc::new(ShowingUrls)).await,
            ElicitationAction::Accept
        );
    }

    #[test]
    fn defaults_of_each_kind() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }
        });
        assert_eq!(
            Value::Object(schema_defaults(&schema)),
            serde_json::json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "a", "verified": true})
        );
        assert!(schema_defaults(&serde_json::json!({})).is_empty());
    }
}
