//! A server whose tools run as tasks (the tasks extension,
//! `io.modelcontextprotocol/tasks`, of 2026-07-28), for the tests of the
//! clients that follow them. [`Tasks`] answers `tools/call` with a task
//! handle when the request declares the extension (`slow` runs at once when
//! it does not; the others need it) and records what the client did, each
//! `tasks/get`, `tasks/update` and `tasks/cancel`, for the test to read.
//!
//! Its tools, each a task that moves on as it is polled or as time passes:
//! `slow(steps?)` works for `steps` polls (3 by default), saying which step
//! it is at; `sleep(ms)` works until `ms` have passed since it was created;
//! `confirm` asks a form (`input_required`, an elicitation of `{ok}`) and
//! says what was answered; `fail` fails with a JSON-RPC error; `forever`
//! works until it is cancelled; `vanish` is forgotten at once (`tasks/get`
//! answers that it is not found); `expire` works on with a time to live of
//! 300 ms. Its task ids are counted, not unguessable as a real server's
//! must be.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, InputRequest,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Task,
    TaskPayload, TaskStatus, Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// The key of `confirm`'s one input request.
pub const CONFIRM_KEY: &str = "confirm-1";

/// The server; clones share its tasks and its record.
#[derive(Clone)]
pub struct Tasks {
    state: Arc<Mutex<State>>,
    poll_interval_ms: Option<u64>,
}

#[derive(Default)]
struct State {
    next: u64,
    tasks: HashMap<String, Entry>,
    gets: Vec<(String, Instant)>,
    updates: Vec<(String, Value)>,
    cancels: Vec<String>,
}

struct Entry {
    kind: Kind,
    created: Instant,
    created_at: String,
    polls: u32,
    /// Why it was cancelled, once it was.
    cancelled: Option<&'static str>,
    answer: Option<Value>,
}

#[derive(Clone, Copy)]
enum Kind {
    Slow(u32),
    Sleep(u64),
    Confirm,
    Fail,
    Forever,
    Expire,
}

impl Default for Tasks {
    fn default() -> Self {
        Self::new(Some(100))
    }
}

impl Tasks {
    /// A server whose tasks ask to be polled every `poll_interval_ms` (or
    /// say nothing of it).
    pub fn new(poll_interval_ms: Option<u64>) -> Self {
        Self {
            state: Arc::default(),
            poll_interval_ms,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ids of the tasks created so far, in order.
    pub fn created(&self) -> Vec<String> {
        let state = self.state();
        (1..=state.next).map(|n| format!("task-{n}")).collect()
    }

    /// When each `tasks/get` of `task` came.
    pub fn gets(&self, task: &str) -> Vec<Instant> {
        self.state()
            .gets
            .iter()
            .filter(|(id, _)| id == task)
            .map(|(_, at)| *at)
            .collect()
    }

    /// Each `tasks/update`: the task and its `inputResponses`.
    pub fn updates(&self) -> Vec<(String, Value)> {
        self.state().updates.clone()
    }

    /// The tasks a `tasks/cancel` named, in order.
    pub fn cancels(&self) -> Vec<String> {
        self.state().cancels.clone()
    }

    /// Cancels `task` on the server's side, as its operator would.
    pub fn cancel(&self, task: &str) {
        if let Some(entry) = self.state().tasks.get_mut(task) {
            entry.cancelled = Some("cancelled by the server");
        }
    }

    fn task(&self, id: &str, status: TaskStatus, entry: &Entry) -> Task {
        let mut task = Task::new(id, status, entry.created_at.clone(), now());
        task.ttl_ms = matches!(entry.kind, Kind::Expire).then_some(300);
        task.poll_interval_ms = self.poll_interval_ms;
        task
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn text(text: String) -> Result<JsonObject, rmcp::ErrorData> {
    match serde_json::to_value(CallToolResult::success(vec![ContentBlock::text(text)])) {
        Ok(Value::Object(result)) => Ok(result),
        _ => Err(rmcp::ErrorData::internal_error(
            "cannot encode a result",
            None,
        )),
    }
}

fn not_found(id: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::invalid_params(
        format!("Failed to retrieve task `{id}`: Task not found"),
        None,
    )
}

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    let schema = json!({"type": "object", "properties": properties});
    let schema = match schema {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, Arc::new(schema)).annotate(ToolAnnotations::new().read_only(true))
}

impl ServerHandler for Tasks {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "slow",
                "Works for a few polls, then says so.",
                json!({"steps": {"type": "integer"}}),
            ),
            tool(
                "sleep",
                "Works for `ms` milliseconds.",
                json!({"ms": {"type": "integer"}}),
            ),
            tool("confirm", "Asks whether to go ahead.", json!({})),
            tool("fail", "Fails.", json!({})),
            tool("forever", "Works until cancelled.", json!({})),
            tool("vanish", "Forgets its task at once.", json!({})),
            tool("expire", "Works past its time to live.", json!({})),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let number = |name: &str, default: u64| {
            request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get(name))
                .and_then(Value::as_u64)
                .unwrap_or(default)
        };
        let steps = u32::try_from(number("steps", 3)).unwrap_or(3);
        let kind = match request.name.as_ref() {
            "slow" => Kind::Slow(steps),
            "sleep" => Kind::Sleep(number("ms", 1000)),
            "confirm" => Kind::Confirm,
            "fail" => Kind::Fail,
            "forever" | "vanish" => Kind::Forever,
            "expire" => Kind::Expire,
            other => {
                return Err(rmcp::ErrorData::invalid_params(
                    format!("no tool `{other}`"),
                    None,
                ));
            }
        };
        let declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if !declared {
            return match kind {
                Kind::Slow(steps) => Ok(CallToolResult::success(vec![ContentBlock::text(
                    format!("done after {steps} steps, at once"),
                )])
                .into()),
                _ => Err(rmcp::ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                )),
            };
        }
        let mut state = self.state();
        state.next += 1;
        let id = format!("task-{}", state.next);
        let entry = Entry {
            kind,
            created: Instant::now(),
            created_at: now(),
            polls: 0,
            cancelled: None,
            answer: None,
        };
        let task = self
            .task(&id, TaskStatus::Working, &entry)
            .with_status_message("started");
        if request.name != "vanish" {
            state.tasks.insert(id, entry);
        }
        Ok(CreateTaskResult::new(task).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, rmcp::ErrorData> {
        let id = request.task_id;
        let mut state = self.state();
        state.gets.push((id.clone(), Instant::now()));
        let entry = state.tasks.get_mut(&id).ok_or_else(|| not_found(&id))?;
        entry.polls += 1;
        let (payload, message) = if let Some(why) = entry.cancelled {
            (TaskPayload::Cancelled, Some(why.to_owned()))
        } else {
            match entry.kind {
                Kind::Slow(steps) if entry.polls > steps => (
                    TaskPayload::Completed {
                        result: text(format!("done after {steps} steps"))?,
                    },
                    None,
                ),
                Kind::Slow(steps) => (
                    TaskPayload::Working,
                    Some(format!("step {} of {steps}", entry.polls)),
                ),
                Kind::Sleep(ms) if entry.created.elapsed().as_millis() >= u128::from(ms) => (
                    TaskPayload::Completed {
                        result: text(format!("slept {ms} ms"))?,
                    },
                    None,
                ),
                Kind::Sleep(_) => (TaskPayload::Working, Some("sleeping".to_owned())),
                Kind::Confirm => match &entry.answer {
                    None => {
                        let request: InputRequest = serde_json::from_value(json!({
                            "method": "elicitation/create",
                            "params": {
                                "mode": "form",
                                "message": "Go ahead with the task?",
                                "requestedSchema": {
                                    "type": "object",
                                    "properties": {"ok": {"type": "boolean", "title": "Go ahead"}},
                                    "required": ["ok"]
                                }
                            }
                        }))
                        .map_err(|error| {
                            rmcp::ErrorData::internal_error(error.to_string(), None)
                        })?;
                        (
                            TaskPayload::InputRequired {
                                input_requests: [(CONFIRM_KEY.to_owned(), request)].into(),
                            },
                            Some("waiting for an answer".to_owned()),
                        )
                    }
                    Some(answer) => (
                        TaskPayload::Completed {
                            result: text(format!("answered {answer}"))?,
                        },
                        None,
                    ),
                },
                Kind::Fail => (
                    TaskPayload::Failed {
                        error: match json!({"code": -32603, "message": "the build broke"}) {
                            Value::Object(error) => error,
                            _ => JsonObject::new(),
                        },
                    },
                    Some("the build broke".to_owned()),
                ),
                Kind::Forever | Kind::Expire => {
                    (TaskPayload::Working, Some("still at it".to_owned()))
                }
            }
        };
        let mut task = self.task(&id, payload.status(), entry);
        task.status_message = message;
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        let mut state = self.state();
        let responses = serde_json::to_value(&request.input_responses).unwrap_or_default();
        state
            .updates
            .push((request.task_id.clone(), responses.clone()));
        let entry = state
            .tasks
            .get_mut(&request.task_id)
            .ok_or_else(|| not_found(&request.task_id))?;
        if let Some(answer) = responses.get(CONFIRM_KEY) {
            entry.answer = Some(answer.clone());
        }
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        let mut state = self.state();
        state.cancels.push(request.task_id.clone());
        let entry = state
            .tasks
            .get_mut(&request.task_id)
            .ok_or_else(|| not_found(&request.task_id))?;
        entry.cancelled = Some("cancelled by the client");
        Ok(())
    }
}
