//! The page's routes: the views (the chat, servers, tools, a tool's form
//! and its call, resources, prompts, the trace), the answers to the
//! inbox's questions, the live stream, the trace export and the embedded
//! assets. Each view is a whole page rendered from the
//! current state, so a reload or a second tab shows the same thing; what
//! changes afterwards arrives on the live stream.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askama::Template;
use axum::Router;
use axum::extract::{Form, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures::future::join_all;
use nexo_client::ClientError;
use nexo_client::hub::{ServerStatus, State as ServerState};
use nexo_hint::Report;
use rmcp::model::{JsonObject, Prompt, Tool};
use serde::Deserialize;

use crate::chat::Refused;
use crate::error::{error_block, report_html};
use crate::form::{self, Fields};
use crate::inbox::NotTaken;
use crate::render::{self, escape, json_tree};
use crate::{Page, events, guard};

/// How long a view waits for a server that is (re)connecting.
const SESSION_WAIT: Duration = Duration::from_secs(2);
/// How much of a server's log the page shows.
const LOG_TAIL: u64 = 16 * 1024;
/// How often the servers' state is looked at for the live table.
const SERVERS_EVERY: Duration = Duration::from_millis(500);

pub fn router(page: Arc<Page>) -> Router {
    Router::new()
        .route("/", get(chat_view))
        .route("/chat", post(chat_send))
        .route("/chat/stop", post(chat_stop))
        .route("/inbox/{id}", post(answer))
        .route("/servers", get(servers))
        .route("/servers/{server}/reconnect", post(reconnect))
        .route("/servers/{server}/log", get(server_log))
        .route("/tools", get(tools))
        .route("/tools/{server}/{tool}", get(tool).post(call_tool))
        .route("/resources", get(resources))
        .route("/resources/{server}/read", post(read_resource))
        .route("/prompts", get(prompts))
        .route("/prompts/{server}/{prompt}", get(prompt).post(get_prompt))
        .route("/trace", get(trace))
        .route("/trace.jsonl", get(trace_export))
        .route("/events", get(events::stream))
        .route("/assets/{file}", get(asset))
        .route("/apps/{id}/rpc", post(app_rpc))
        .layer(axum::middleware::from_fn_with_state(
            page.clone(),
            guard::check,
        ))
        .with_state(page)
}

/// What every view shows around its content.
pub struct Shell {
    pub csrf: String,
    pub nav: Vec<(&'static str, &'static str)>,
    pub current: &'static str,
    pub summary: String,
    /// The id of the last live update, which this render includes.
    pub after: u64,
    pub inbox: String,
}

impl Shell {
    fn of(page: &Page, current: &'static str) -> Self {
        let after = page.events.last_id();
        Self {
            csrf: page.guard.csrf.expose().to_owned(),
            nav: vec![
                ("/", "Chat"),
                ("/servers", "Servers"),
                ("/tools", "Tools"),
                ("/resources", "Resources"),
                ("/prompts", "Prompts"),
                ("/trace", "Trace"),
            ],
            current,
            summary: summary(&page.hub.status()),
            after,
            inbox: page.inbox.html(),
        }
    }
}

/// How many of the servers are connected, as the header says it.
fn summary(statuses: &[ServerStatus]) -> String {
    let connected = statuses
        .iter()
        .filter(|status| status.state == ServerState::Connected)
        .count();
    format!("{connected} of {} servers connected", statuses.len())
}

fn html(template: &impl Template) -> Response {
    match template.render() {
        Ok(body) => Html(body).into_response(),
        Err(error) => {
            tracing::error!(%error, "a page did not render");
            (StatusCode::INTERNAL_SERVER_ERROR, "the page did not render").into_response()
        }
    }
}

/// A failed call as a fragment: what failed and what to do.
fn call_error(error: &ClientError) -> String {
    error_block(&Report::of(error))
}

// --- chat and inbox ------------------------------------------------------

#[derive(Template)]
#[template(path = "chat.html")]
struct ChatView {
    shell: Shell,
    /// The model's name, or why there is none (drawn as every error is).
    model: Result<String, String>,
    log: String,
    state: &'static str,
}

async fn chat_view(State(page): State<Arc<Page>>) -> Response {
    html(&ChatView {
        shell: Shell::of(&page, "/"),
        model: page
            .chat
            .model
            .clone()
            .map_err(|report| report_html(&report)),
        log: page.chat.html(),
        state: crate::chat::state_html(page.chat.busy()),
    })
}

#[derive(Deserialize)]
struct ChatForm {
    text: String,
}

/// Takes a message for the model: 202 when taken (the answer arrives on
/// the live stream), else a sentence saying why not.
async fn chat_send(State(page): State<Arc<Page>>, Form(form): Form<ChatForm>) -> Response {
    let why = match page.chat.send(&form.text) {
        Ok(()) => return (StatusCode::ACCEPTED, Html("")).into_response(),
        Err(Refused::Busy) => "the model is still answering; send this when it is done".to_owned(),
        Err(Refused::Empty) => "write a message first".to_owned(),
        Err(Refused::NoModel(report)) => {
            let html = format!(
                "<p class=\"error\">no model is configured</p>{}",
                report_html(&report)
            );
            return (StatusCode::OK, Html(html)).into_response();
        }
    };
    (
        StatusCode::OK,
        Html(format!("<p class=\"error\">{}</p>", escape(&why))),
    )
        .into_response()
}

/// Stops the turn under way (204 either way).
async fn chat_stop(State(page): State<Arc<Page>>) -> StatusCode {
    page.chat.stop();
    StatusCode::NO_CONTENT
}

/// An answer to a question of the inbox: `answer` and, for a form, its
/// `f:NAME` fields (a name given several times, from a list of choices,
/// is joined by commas).
async fn answer(
    State(page): State<Arc<Page>>,
    Path(id): Path<u64>,
    Form(submitted): Form<Vec<(String, String)>>,
) -> Response {
    let mut answer = String::new();
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in submitted {
        if name == "answer" {
            answer = value;
        } else if let Some(field) = name.strip_prefix("f:") {
            fields
                .entry(field.to_owned())
                .and_modify(|joined| {
                    joined.push(',');
                    joined.push_str(&value);
                })
                .or_insert(value);
        }
    }
    // The inbox as it now stands, whatever happened (htmx swaps only 2xx
    // answers): an invalid form waits in it saying why; an answered or
    // abandoned question is gone from it.
    let gone = match page.inbox.answer(id, &answer, &fields) {
        Err(NotTaken::Gone) => {
            "<p class=\"muted\">That question was already answered, or its asker gave up.</p>"
        }
        Ok(()) | Err(NotTaken::Invalid) => "",
    };
    Html(format!("{gone}{}", page.inbox.html())).into_response()
}

// --- servers -------------------------------------------------------------

struct ServerRow {
    name: String,
    target: String,
    state: &'static str,
    state_class: &'static str,
    transport: &'static str,
    revision: String,
    tools: String,
    restarts: u32,
    /// The last error, drawn as every error is.
    error: Option<String>,
    has_log: bool,
}

#[derive(Template)]
#[template(path = "servers_table.html")]
struct ServersTable {
    servers: Vec<ServerRow>,
    oob: bool,
}

impl ServersTable {
    fn of(statuses: Vec<ServerStatus>, oob: bool) -> Self {
        let servers = statuses
            .into_iter()
            .map(|status| ServerRow {
                state: status.state.name(),
                state_class: match status.state {
                    ServerState::Connected => "ok",
                    ServerState::Starting | ServerState::Restarting => "wait",
                    ServerState::Failed | ServerState::NeedsAuthorization => "bad",
                },
                transport: status.transport.unwrap_or("—"),
                revision: status.revision.unwrap_or_else(|| "—".to_owned()),
                tools: status
                    .tools
                    .map_or_else(|| "—".to_owned(), |tools| tools.to_string()),
                restarts: status.restarts,
                error: status
                    .last_error
                    .as_ref()
                    .map(|error| report_html(&Report::of(error.as_ref()))),
                has_log: status.log.is_some(),
                name: status.name,
                target: status.target,
            })
            .collect();
        Self { servers, oob }
    }
}

#[derive(Template)]
#[template(path = "servers.html")]
struct ServersView {
    shell: Shell,
    table: String,
}

async fn servers(State(page): State<Arc<Page>>) -> Response {
    let table = ServersTable::of(page.hub.status(), false)
        .render()
        .unwrap_or_default();
    html(&ServersView {
        shell: Shell::of(&page, "/servers"),
        table,
    })
}

async fn reconnect(State(page): State<Arc<Page>>, Path(server): Path<String>) -> Response {
    match page.hub.reconnect(&server) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => (StatusCode::NOT_FOUND, Html(call_error(&error))).into_response(),
    }
}

async fn server_log(State(page): State<Arc<Page>>, Path(server): Path<String>) -> Response {
    let Some(path) = page
        .hub
        .status()
        .into_iter()
        .find(|status| status.name == server)
        .and_then(|status| status.log)
    else {
        return (StatusCode::NOT_FOUND, "no log for this server").into_response();
    };
    let tail = tokio::task::spawn_blocking(move || tail(&path))
        .await
        .unwrap_or_else(|_| "the log could not be read".to_owned());
    Html(escape(&tail)).into_response()
}

/// The last [`LOG_TAIL`] bytes of the file at `path`.
fn tail(path: &std::path::Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return "(no log yet)".to_owned();
    };
    let length = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(LOG_TAIL)));
    let mut bytes = Vec::new();
    let _ = file.take(LOG_TAIL).read_to_end(&mut bytes);
    if bytes.is_empty() {
        return "(the log is empty)".to_owned();
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Publishes the servers' table whenever what it shows changes.
pub async fn watch_servers(page: Arc<Page>) {
    let mut shown = String::new();
    loop {
        let statuses = page.hub.status();
        let summary = summary(&statuses);
        let table = ServersTable::of(statuses, true)
            .render()
            .unwrap_or_default();
        if table != shown {
            page.events.publish(
                "servers",
                format!(
                    "{table}<span id=\"server-summary\" class=\"summary\" hx-swap-oob=\"outerHTML\">{}</span>",
                    escape(&summary)
                ),
            );
            shown = table;
        }
        tokio::time::sleep(SERVERS_EVERY).await;
    }
}

// --- tools -----------------------------------------------------------------

struct ToolCard {
    name: String,
    title: Option<String>,
    description: String,
    /// (class, label, explanation)
    badges: Vec<(&'static str, &'static str, &'static str)>,
}

impl ToolCard {
    fn of(tool: &Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        let hint =
            |get: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| annotations.and_then(get);
        let mut badges = Vec::new();
        if hint(|a| a.read_only_hint) == Some(true) {
            badges.push(("ro", "read-only", "the server says it changes nothing"));
        }
        if hint(|a| a.read_only_hint) != Some(true) && hint(|a| a.destructive_hint) != Some(false) {
            badges.push((
                "destructive",
                "may destroy",
                "not read-only, and not said to be non-destructive",
            ));
        }
        if hint(|a| a.idempotent_hint) == Some(true) {
            badges.push((
                "idem",
                "idempotent",
                "calling it twice does no more than once",
            ));
        }
        if hint(|a| a.open_world_hint) != Some(false) {
            badges.push((
                "open",
                "open world",
                "it may reach things outside the server (the web, other systems)",
            ));
        }
        if tool.output_schema.is_some() {
            badges.push(("schema", "structured", "it declares an output schema"));
        }
        if crate::apps::interface_of(tool).is_some() {
            badges.push(("app", "app", "it has an MCP App, drawn with its result"));
        }
        if !nexo_host::agent::visible_to(tool, "model") {
            badges.push((
                "app-only",
                "for apps only",
                "its server keeps it from the model: only its app (or you) may call it",
            ));
        }
        Self {
            name: tool.name.to_string(),
            title: tool
                .title
                .clone()
                .or_else(|| annotations.and_then(|a| a.title.clone())),
            description: nexo_host::schema::truncate_description(
                tool.description.as_deref().unwrap_or_default(),
            )
            .into_owned(),
            badges,
        }
    }
}

struct ToolGroup {
    server: String,
    tools: Vec<ToolCard>,
}

#[derive(Template)]
#[template(path = "tools.html")]
struct ToolsView {
    shell: Shell,
    groups: Vec<ToolGroup>,
}

async fn tools(State(page): State<Arc<Page>>) -> Response {
    let groups = page
        .hub
        .tool_lists()
        .into_iter()
        .map(|(server, tools)| ToolGroup {
            server,
            tools: tools.iter().map(ToolCard::of).collect(),
        })
        .collect();
    html(&ToolsView {
        shell: Shell::of(&page, "/tools"),
        groups,
    })
}

fn find_tool(page: &Page, server: &str, name: &str) -> Option<Tool> {
    page.hub
        .tool_lists()
        .into_iter()
        .find(|(listed, _)| listed == server)
        .and_then(|(_, tools)| tools.iter().find(|tool| tool.name == name).cloned())
}

#[derive(Template)]
#[template(path = "tool.html")]
struct ToolView {
    shell: Shell,
    server: String,
    tool: ToolCard,
    fields: String,
    input_schema: String,
    output_schema: Option<String>,
}

async fn tool(
    State(page): State<Arc<Page>>,
    Path((server, name)): Path<(String, String)>,
) -> Response {
    let Some(tool) = find_tool(&page, &server, &name) else {
        return (
            StatusCode::NOT_FOUND,
            Html(format!(
                "<p>The server `{}` offers no tool `{}` now. <a href=\"/tools\">See the tools</a>.</p>",
                escape(&server),
                escape(&name)
            )),
        )
            .into_response();
    };
    let fields = form::fields(&tool.input_schema);
    html(&ToolView {
        shell: Shell::of(&page, "/tools"),
        server,
        fields: Fields { fields: &fields }.render().unwrap_or_default(),
        input_schema: json_tree(&serde_json::Value::Object((*tool.input_schema).clone())),
        output_schema: tool
            .output_schema
            .as_ref()
            .map(|schema| json_tree(&serde_json::Value::Object((**schema).clone()))),
        tool: ToolCard::of(&tool),
    })
}

async fn call_tool(
    State(page): State<Arc<Page>>,
    Path((server, name)): Path<(String, String)>,
    Form(submitted): Form<Vec<(String, String)>>,
) -> Response {
    let Some(tool) = find_tool(&page, &server, &name) else {
        return Html(format!(
            "<div class=\"error-block\" role=\"alert\"><p>The server `{}` offers no tool `{}` now.</p></div>",
            escape(&server),
            escape(&name)
        ))
        .into_response();
    };
    let arguments = match form::arguments(&tool.input_schema, &submitted) {
        Ok(arguments) => arguments,
        Err(error) => return Html(call_error(&error)).into_response(),
    };
    let started = Instant::now();
    let called = page.hub.call_tool(&server, &name, arguments.clone()).await;
    let took = started.elapsed().as_millis();
    match called {
        Ok(result) => {
            let mut html = render::tool_result(&result, Some(&tool), took);
            let raw = serde_json::to_value(&result).unwrap_or_default();
            let arguments = serde_json::Value::Object(arguments);
            html.push_str(&crate::apps::drawn(
                page.apps.for_call(&server, &tool, &arguments, &raw).await,
            ));
            Html(html).into_response()
        }
        Err(error) => Html(call_error(&error)).into_response(),
    }
}

/// One JSON-RPC message of an MCP App, relayed by the page's script: the
/// messages to post back to the app.
async fn app_rpc(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    axum::Json(message): axum::Json<serde_json::Value>,
) -> Response {
    let messages = page.apps.answer(&id, &message).await;
    axum::Json(serde_json::json!({ "messages": messages })).into_response()
}

// --- resources -------------------------------------------------------------

#[derive(Template)]
#[template(path = "resources.html")]
struct ResourcesView {
    shell: Shell,
    servers: Vec<ServerResources>,
}

struct ServerResources {
    server: String,
    resources: Vec<(String, String, String)>,
    templates: Vec<(String, String, String)>,
    error: Option<String>,
}

async fn connected_servers(page: &Page) -> Vec<(String, Option<Arc<nexo_client::Session>>)> {
    let names: Vec<String> = page
        .hub
        .status()
        .into_iter()
        .map(|status| status.name)
        .collect();
    join_all(names.into_iter().map(|name| async move {
        let session = page.hub.session(&name, SESSION_WAIT).await.ok();
        (name, session)
    }))
    .await
}

async fn resources(State(page): State<Arc<Page>>) -> Response {
    let servers = join_all(connected_servers(&page).await.into_iter().map(
        |(server, session)| async move {
            let Some(session) = session else {
                return ServerResources {
                    server,
                    resources: Vec::new(),
                    templates: Vec::new(),
                    error: Some("not connected".to_owned()),
                };
            };
            let listed = session.list_resources().await;
            let templates = session.list_resource_templates().await.unwrap_or_default();
            ServerResources {
                server,
                error: listed.as_ref().err().map(|error| error.to_string()),
                resources: listed
                    .unwrap_or_default()
                    .iter()
                    .map(|resource| {
                        (
                            resource.uri.clone(),
                            resource
                                .title
                                .clone()
                                .unwrap_or_else(|| resource.name.clone()),
                            resource.description.clone().unwrap_or_default(),
                        )
                    })
                    .collect(),
                templates: templates
                    .iter()
                    .map(|template| {
                        (
                            template.uri_template.clone(),
                            template
                                .title
                                .clone()
                                .unwrap_or_else(|| template.name.clone()),
                            template.description.clone().unwrap_or_default(),
                        )
                    })
                    .collect(),
            }
        },
    ))
    .await;
    html(&ResourcesView {
        shell: Shell::of(&page, "/resources"),
        servers,
    })
}

#[derive(Deserialize)]
struct ReadForm {
    uri: String,
}

async fn read_resource(
    State(page): State<Arc<Page>>,
    Path(server): Path<String>,
    Form(form): Form<ReadForm>,
) -> Response {
    let session = match page.hub.session(&server, SESSION_WAIT).await {
        Ok(session) => session,
        Err(error) => return Html(call_error(&error)).into_response(),
    };
    match session.read_resource(&form.uri).await {
        Ok(read) => {
            let mut out = String::from("<section class=\"result\">");
            for contents in &read.contents {
                out.push_str(&render::resource_contents(contents));
            }
            // An MCP App's document is drawn too, in its sandbox, with no
            // tool input or result.
            let drawn = page.apps.keep(
                &server,
                &form.uri,
                &read.contents,
                None,
                serde_json::Value::Null,
                None,
            );
            out.push_str(&crate::apps::drawn(drawn));
            if read.contents.is_empty() {
                out.push_str("<p class=\"muted\">the resource is empty</p>");
            }
            out.push_str("</section>");
            Html(out).into_response()
        }
        Err(error) => Html(call_error(&error)).into_response(),
    }
}

// --- prompts ---------------------------------------------------------------

#[derive(Template)]
#[template(path = "prompts.html")]
struct PromptsView {
    shell: Shell,
    servers: Vec<ServerPrompts>,
}

struct ServerPrompts {
    server: String,
    /// (name, description)
    prompts: Vec<(String, String)>,
    error: Option<String>,
}

async fn list_prompts(page: &Page, server: &str) -> Result<Vec<Prompt>, ClientError> {
    page.hub
        .session(server, SESSION_WAIT)
        .await?
        .list_prompts()
        .await
}

async fn prompts(State(page): State<Arc<Page>>) -> Response {
    let names: Vec<String> = page.hub.status().into_iter().map(|s| s.name).collect();
    let servers = join_all(names.into_iter().map(|server| {
        let page = &page;
        async move {
            match list_prompts(page, &server).await {
                Ok(prompts) => {
                    let listed = prompts
                        .iter()
                        .map(|prompt| {
                            (
                                prompt.name.clone(),
                                prompt.description.clone().unwrap_or_default(),
                            )
                        })
                        .collect();
                    ServerPrompts {
                        server,
                        prompts: listed,
                        error: None,
                    }
                }
                Err(error) => ServerPrompts {
                    server,
                    prompts: Vec::new(),
                    error: Some(error.to_string()),
                },
            }
        }
    }))
    .await;
    html(&PromptsView {
        shell: Shell::of(&page, "/prompts"),
        servers,
    })
}

#[derive(Template)]
#[template(path = "prompt.html")]
struct PromptView {
    shell: Shell,
    server: String,
    name: String,
    description: String,
    /// (name, description, required)
    arguments: Vec<(String, String, bool)>,
}

async fn prompt(
    State(page): State<Arc<Page>>,
    Path((server, name)): Path<(String, String)>,
) -> Response {
    let found = list_prompts(&page, &server)
        .await
        .ok()
        .and_then(|prompts| prompts.into_iter().find(|prompt| prompt.name == name));
    let Some(found) = found else {
        return (
            StatusCode::NOT_FOUND,
            Html(format!(
                "<p>The server `{}` offers no prompt `{}` now. <a href=\"/prompts\">See the prompts</a>.</p>",
                escape(&server),
                escape(&name)
            )),
        )
            .into_response();
    };
    html(&PromptView {
        shell: Shell::of(&page, "/prompts"),
        server,
        name: found.name,
        description: found.description.unwrap_or_default(),
        arguments: found
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|argument| {
                (
                    argument.name,
                    argument.description.unwrap_or_default(),
                    argument.required == Some(true),
                )
            })
            .collect(),
    })
}

async fn get_prompt(
    State(page): State<Arc<Page>>,
    Path((server, name)): Path<(String, String)>,
    Form(submitted): Form<Vec<(String, String)>>,
) -> Response {
    let mut arguments = JsonObject::new();
    for (field, value) in submitted {
        if let Some(argument) = field.strip_prefix("a:")
            && !value.is_empty()
        {
            arguments.insert(argument.to_owned(), serde_json::Value::String(value));
        }
    }
    let session = match page.hub.session(&server, SESSION_WAIT).await {
        Ok(session) => session,
        Err(error) => return Html(call_error(&error)).into_response(),
    };
    match session.get_prompt(&name, arguments).await {
        Ok(got) => {
            let mut out = String::from("<section class=\"result\">");
            if let Some(description) = &got.description {
                let _ = write!(out, "<p class=\"muted\">{}</p>", escape(description));
            }
            for message in &got.messages {
                let role = match message.role {
                    rmcp::model::Role::User => "user",
                    rmcp::model::Role::Assistant => "assistant",
                };
                let _ = write!(
                    out,
                    "<div class=\"message role-{role}\"><p class=\"role\">{role}</p>{}</div>",
                    render::content_block(&message.content)
                );
            }
            out.push_str("</section>");
            Html(out).into_response()
        }
        Err(error) => Html(call_error(&error)).into_response(),
    }
}

// --- trace -----------------------------------------------------------------

#[derive(Template)]
#[template(path = "trace.html")]
struct TraceView {
    shell: Shell,
    rows: String,
    kept: usize,
}

async fn trace(State(page): State<Arc<Page>>) -> Response {
    html(&TraceView {
        shell: Shell::of(&page, "/trace"),
        rows: page.trace.html(),
        kept: page.trace.kept_lines(),
    })
}

async fn trace_export(State(page): State<Arc<Page>>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"nexo-trace.jsonl\"",
            ),
        ],
        page.trace.export(),
    )
        .into_response()
}

// --- assets ----------------------------------------------------------------

async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind): (&'static str, &'static str) = match file.as_str() {
        "htmx.min.js" => (
            include_str!("../assets/vendor/htmx-2.0.11.min.js"),
            "text/javascript",
        ),
        "sse.min.js" => (
            include_str!("../assets/vendor/htmx-ext-sse-2.2.4.min.js"),
            "text/javascript",
        ),
        "app.js" => (include_str!("../assets/app.js"), "text/javascript"),
        "app.css" => (include_str!("../assets/app.css"), "text/css"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        body,
    )
        .into_response()
}
