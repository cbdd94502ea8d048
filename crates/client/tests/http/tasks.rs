//! Tool calls a real server (nexo-testkit's `Tasks`, over Streamable HTTP
//! on 127.0.0.1) runs as tasks: followed at the server's interval to their
//! result, their input asked through the handler, their failures and
//! cancellations said, a call given up cancelling its task, and a task
//! taken up by its id alone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use nexo_client::handler::Notice;
use nexo_client::{
    CallLimits, ClientError, ConnectOptions, ElicitationPolicy, ElicitationResponder,
    HttpTransport, Session, Target, TargetUrl, TaskObserver, TaskUpdate,
};
use nexo_hint::Hinted;
use nexo_testkit::Tasks;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, TaskStatus};

/// `fixture` served, and a session to it with `options`.
async fn session(fixture: &Tasks, options: ConnectOptions) -> Session {
    let served = fixture.clone();
    let (url, _, _stop) = super::serve_handler(move || served.clone()).await;
    let target = Target::Url {
        url: TargetUrl::new(url),
        transport: HttpTransport::Http,
        headers: Vec::new(),
    };
    nexo_client::connect(&target, &options).await.unwrap()
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

fn arguments(value: serde_json::Value) -> rmcp::model::JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

/// What an observer was told.
fn recorder() -> (TaskObserver, Arc<Mutex<Vec<TaskUpdate>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    let observer: TaskObserver = Arc::new(move |update: &TaskUpdate| {
        keep.lock().unwrap().push(update.clone());
    });
    (observer, seen)
}

#[tokio::test]
async fn a_task_is_polled_at_the_servers_interval_to_its_result() {
    let fixture = Tasks::new(Some(300));
    let notices = Arc::new(Mutex::new(Vec::new()));
    let kept = notices.clone();
    let options = ConnectOptions {
        notices: Some(Arc::new(move |notice| kept.lock().unwrap().push(notice))),
        ..ConnectOptions::default()
    };
    let session = session(&fixture, options).await;
    assert_eq!(session.revision().as_deref(), Some("2026-07-28"));
    let (observer, seen) = recorder();
    let limits = CallLimits {
        idle: Duration::from_secs(10),
        total: None,
    };
    let result = session
        .call_tool_observed(
            "slow",
            arguments(serde_json::json!({"steps": 2})),
            limits,
            Some(observer),
        )
        .await
        .unwrap();
    // Run as a task (the capability was declared), not at once.
    assert_eq!(text(&result), "done after 2 steps");
    let gets = fixture.gets("task-1");
    assert_eq!(gets.len(), 3, "{gets:?}");
    for pair in gets.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(290),
            "polled faster than the server asked: {gets:?}"
        );
    }
    let seen = seen.lock().unwrap().clone();
    let statuses: Vec<(TaskStatus, Option<&str>)> = seen
        .iter()
        .map(|update| (update.status, update.message.as_deref()))
        .collect();
    assert_eq!(
        statuses,
        [
            (TaskStatus::Working, Some("started")),
            (TaskStatus::Working, Some("step 1 of 2")),
            (TaskStatus::Working, Some("step 2 of 2")),
            (TaskStatus::Completed, None),
        ]
    );
    assert!(seen.iter().all(|update| update.task == "task-1"));
    let notices = notices.lock().unwrap().clone();
    assert!(
        notices.contains(&Notice::Task {
            task: "task-1".into(),
            status: TaskStatus::Working,
            message: Some("step 1 of 2".into()),
        }),
        "{notices:?}"
    );
}

/// Accepts every form with `{"ok": true}`, counting them.
#[derive(Default)]
struct Yes(Mutex<Vec<String>>);

#[async_trait]
impl ElicitationResponder for Yes {
    async fn respond(&self, request: ElicitRequestParams) -> ElicitResult {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.0.lock().unwrap().push(message);
        }
        ElicitResult::new(ElicitationAction::Accept).with_content(serde_json::json!({"ok": true}))
    }
}

#[tokio::test]
async fn a_tasks_input_is_asked_through_the_handler_and_sent_with_tasks_update() {
    let fixture = Tasks::default();
    let yes = Arc::new(Yes::default());
    let options = ConnectOptions {
        elicitation: ElicitationPolicy::Responder(yes.clone()),
        ..ConnectOptions::default()
    };
    let session = session(&fixture, options).await;
    let result = session
        .call_tool("confirm", Default::default())
        .await
        .unwrap();
    assert!(text(&result).contains(r#""ok":true"#), "{}", text(&result));
    assert_eq!(*yes.0.lock().unwrap(), ["Go ahead with the task?"]);
    let updates = fixture.updates();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].0, "task-1");
    assert_eq!(
        updates[0].1[nexo_testkit::CONFIRM_KEY]["action"],
        "accept",
        "{updates:?}"
    );
}

#[tokio::test]
async fn failed_and_lost_tasks_are_errors_that_say_so() {
    let fixture = Tasks::default();
    let session = session(&fixture, ConnectOptions::default()).await;
    let call = |tool: &'static str| session.call_tool(tool, Default::default());
    match call("fail").await {
        Err(error @ ClientError::TaskFailed { code: -32603, .. }) => {
            assert!(error.to_string().contains("the build broke"), "{error}");
            assert_eq!(error.code(), "task_failed");
        }
        other => panic!("{other:?}"),
    }
    match call("vanish").await {
        Err(error @ ClientError::TaskLost { .. }) => {
            assert!(error.to_string().contains("Task not found"), "{error}");
            assert!(
                error
                    .hint()
                    .unwrap()
                    .terminal()
                    .contains("call the tool again")
            );
        }
        other => panic!("{other:?}"),
    }
    match call("expire").await {
        Err(error @ ClientError::TaskLost { .. }) => {
            assert!(error.to_string().contains("time to live"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

/// Waits until `fixture` was asked to cancel `task`.
async fn cancelled(fixture: &Tasks, task: &str) -> bool {
    for _ in 0..100 {
        if fixture.cancels().iter().any(|cancelled| cancelled == task) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_call_given_up_cancels_its_task() {
    let fixture = Tasks::default();
    let session = session(&fixture, ConnectOptions::default()).await;
    // Dropped, as a chat's cancelled turn drops it.
    let dropped = tokio::time::timeout(
        Duration::from_millis(400),
        session.call_tool("forever", Default::default()),
    )
    .await;
    assert!(dropped.is_err());
    assert!(
        cancelled(&fixture, "task-1").await,
        "{:?}",
        fixture.cancels()
    );
    // Past its maximum.
    let limits = CallLimits {
        idle: Duration::from_secs(5),
        total: Some(Duration::from_millis(400)),
    };
    let overran = session
        .call_tool_within("forever", Default::default(), limits)
        .await;
    assert!(
        matches!(overran, Err(ClientError::Overran { .. })),
        "{overran:?}"
    );
    assert!(
        cancelled(&fixture, "task-2").await,
        "{:?}",
        fixture.cancels()
    );
    // A task cancelled on the server says so.
    let (observer, seen) = recorder();
    let limits = CallLimits {
        idle: Duration::from_secs(5),
        total: None,
    };
    let call = session.call_tool_observed("forever", Default::default(), limits, Some(observer));
    let cancel_it = async {
        while seen.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        fixture.cancel("task-3");
    };
    let (called, ()) = tokio::join!(call, cancel_it);
    match called {
        Err(error @ ClientError::TaskCancelled { .. }) => {
            assert!(
                error.to_string().contains("cancelled by the server"),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_kept_task_is_taken_up_by_its_id() {
    let fixture = Tasks::default();
    let session = Arc::new(session(&fixture, ConnectOptions::default()).await);
    let (observer, seen) = recorder();
    let limits = CallLimits {
        idle: Duration::from_secs(5),
        total: None,
    };
    let first = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool_observed(
                    "sleep",
                    arguments(serde_json::json!({"ms": 800})),
                    limits,
                    Some(observer),
                )
                .await
        })
    };
    while seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let id = seen.lock().unwrap()[0].task.clone();
    let taken_up = session.follow_task("sleep", &id, None).await.unwrap();
    assert_eq!(text(&taken_up), "slept 800 ms");
    assert_eq!(text(&first.await.unwrap().unwrap()), "slept 800 ms");
    assert!(fixture.cancels().is_empty());
}
