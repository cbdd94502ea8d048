//! The hub with real children: plain-Python and shell stdio servers that
//! answer, crash in the middle of a call, never answer, print garbage or
//! exit at once, beside an in-process server. No timed assertions: each
//! test waits for states, never for a duration.

#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::PathBuf;
use std::time::Duration;

use nexo_client::hub::{Hub, RestartPolicy, ServerPlan, State, ToolLimits};
use nexo_client::{CallLimits, ClientError, ConnectOptions, InProcess, Target};
use nexo_hint::Hinted;
use rmcp::model::CallToolResult;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn limits(idle: f64) -> ToolLimits {
    ToolLimits::uniform(CallLimits {
        idle: Duration::from_secs_f64(idle),
        total: None,
    })
}

fn stdio(name: &str, command: &str, log: Option<PathBuf>) -> ServerPlan {
    ServerPlan {
        name: name.to_owned(),
        target: Target::stdio(command, Vec::new()).unwrap(),
        limits: limits(10.0),
        log,
        oauth: None,
        startup: None,
    }
}

fn flaky(name: &str, extra: &str) -> ServerPlan {
    stdio(
        name,
        &format!("python3 {} {extra}", fixture("flaky_server.py")),
        None,
    )
}

/// A quick policy, so that a crash loop is given up on in well under a second.
fn quick() -> RestartPolicy {
    RestartPolicy {
        first_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        max_failures: 3,
        healthy_after: Duration::from_secs(30),
    }
}

/// `timeout` for each exchange and for a stdio server's start alike.
fn options(timeout: f64) -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs_f64(timeout),
        startup: Duration::from_secs_f64(timeout),
        ..ConnectOptions::default()
    }
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

async fn wait_for_state(hub: &Hub, server: &str, state: State) -> nexo_client::hub::ServerStatus {
    for _ in 0..600 {
        let status = hub.status().into_iter().find(|s| s.name == server).unwrap();
        if status.state == state {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{server} never reached {state:?}: {:?}", hub.status());
}

/// Issue 16: every kind of server at once; the broken ones neither delay
/// nor break the others, and each shows why.
#[tokio::test]
async fn issue_16_broken_servers_do_not_break_the_others() {
    let logs = tempfile::tempdir().unwrap();
    let exiting_log = logs.path().join("exits.log");
    let plans = vec![
        ServerPlan {
            name: "inside".into(),
            target: Target::InProcess(InProcess::new("hello", nexo_testkit::Echo)),
            limits: limits(10.0),
            log: None,
            oauth: None,
            startup: None,
        },
        flaky("python", ""),
        stdio("silent", "sh -c 'sleep 30'", None),
        stdio("garbage", "sh -c 'echo Listening on stdio; sleep 30'", None),
        stdio(
            "exits",
            "sh -c 'echo cannot open the database >&2; exit 3'",
            Some(exiting_log.clone()),
        ),
        stdio("missing", "/nonexistent/nexo-missing-server", None),
    ];
    let hub = Hub::start(plans, options(1.0), quick()).await;
    let status = hub.status();
    let state = |name: &str| status.iter().find(|s| s.name == name).unwrap().clone();

    assert_eq!(state("inside").state, State::Connected);
    assert_eq!(state("inside").transport, Some("in-process"));
    assert_eq!(state("inside").tools, Some(1));
    assert_eq!(state("python").state, State::Connected);
    assert_eq!(state("python").transport, Some("stdio"));
    assert_eq!(state("python").tools, Some(3));
    assert!(state("python").revision.is_some());
    // The connected ones say when they were ready; the silent one never was.
    assert!(state("inside").ready.is_some());
    assert!(state("python").ready.is_some());

    let silent = state("silent");
    assert_ne!(silent.state, State::Connected);
    assert_eq!(silent.ready, None);
    assert!(matches!(
        silent.last_error.as_deref(),
        Some(ClientError::Timeout { .. })
    ));
    let garbage = state("garbage");
    assert!(
        garbage
            .last_error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("`Listening on stdio`"),
        "{garbage:?}"
    );

    // The calls of the healthy servers go through meanwhile.
    let hello = hub
        .call_tool("inside", "echo", Default::default())
        .await
        .unwrap();
    assert_eq!(text(&hello), "hello");
    let look = hub
        .call_tool("python", "look", Default::default())
        .await
        .unwrap();
    assert!(text(&look).starts_with("look done by"));

    // The child that exits at once is given up on after three failures.
    let exits = wait_for_state(&hub, "exits", State::Failed).await;
    let error = exits.last_error.unwrap();
    assert!(
        error
            .to_string()
            .contains("gave up after 3 failures in a row"),
        "{error}"
    );
    assert!(
        error.hint().unwrap().terminal().contains("exits.log"),
        "{error:?}"
    );
    // Issue 39: three attempts are the first and two restarts.
    assert_eq!(exits.restarts, 2);
    // A command that cannot be run is failed at once, never restarted.
    let missing = wait_for_state(&hub, "missing", State::Failed).await;
    assert_eq!(missing.restarts, 0);
    assert!(
        matches!(
            missing.last_error.as_deref(),
            Some(ClientError::CannotStart { .. })
        ),
        "{missing:?}"
    );
    let said = |log: &str| {
        log.lines()
            .filter(|line| line.ends_with("Z cannot open the database"))
            .count()
    };
    let log = std::fs::read_to_string(&exiting_log).unwrap();
    assert_eq!(said(&log), 3, "{log}");

    // Asked to, the hub tries again.
    hub.reconnect("exits").unwrap();
    wait_for_state(&hub, "exits", State::Failed).await;
    let log = std::fs::read_to_string(&exiting_log).unwrap();
    assert!(said(&log) >= 4, "{log}");

    let unknown = hub
        .call_tool("nobody", "x", Default::default())
        .await
        .unwrap_err();
    assert!(
        unknown
            .hint()
            .unwrap()
            .terminal()
            .contains("inside, python"),
        "{unknown:?}"
    );
    hub.close().await;
}

/// Issue 16: a child killed in the middle of a call. A read-only tool is
/// called again on the restarted server; any other tool fails, saying it
/// was not repeated.
#[tokio::test]
async fn issue_16_a_child_killed_mid_call() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("crashed-look");
    let plans = vec![flaky("py", &format!("--crash-once {}", marker.display()))];
    let hub = Hub::start(plans, options(5.0), quick()).await;
    let before = hub.status()[0].clone();
    assert_eq!(before.state, State::Connected);
    let look = hub
        .call_tool("py", "look", Default::default())
        .await
        .unwrap();
    assert!(text(&look).starts_with("look done by"), "{look:?}");
    assert!(marker.exists());
    assert_eq!(hub.status()[0].restarts, 1);
    hub.close().await;

    let marker = dir.path().join("crashed-write");
    let plans = vec![flaky("py", &format!("--crash-once {}", marker.display()))];
    let hub = Hub::start(plans, options(5.0), quick()).await;
    let failed = hub
        .call_tool("py", "write", Default::default())
        .await
        .unwrap_err();
    assert_eq!(failed.code(), "unreachable");
    assert!(
        failed
            .to_string()
            .contains("went away while `write` was running"),
        "{failed}"
    );
    assert!(
        failed
            .hint()
            .unwrap()
            .terminal()
            .contains("was not called again"),
        "{failed:?}"
    );
    // The server is back for the next call.
    wait_for_state(&hub, "py", State::Connected).await;
    let again = hub
        .call_tool("py", "write", Default::default())
        .await
        .unwrap();
    assert!(text(&again).starts_with("write done by"));
    hub.close().await;
}

/// Issue 16: progress starts the idle limit again; the maximum stops a
/// call whatever its progress.
#[tokio::test]
async fn issue_16_progress_resets_the_idle_limit_but_not_the_maximum() {
    let mut plan = flaky("py", "--steps 4 --step 0.4");
    plan.limits = ToolLimits::uniform(CallLimits {
        idle: Duration::from_secs(1),
        total: None,
    });
    plan.limits.tools.insert(
        "look".into(),
        CallLimits {
            idle: Duration::from_millis(50),
            total: None,
        },
    );
    let hub = Hub::start(vec![plan.clone()], options(5.0), quick()).await;
    // Four steps of 0.4 s: longer than the idle limit of 1 s in all, but
    // never silent for that long.
    let slow = hub
        .call_tool("py", "slow", Default::default())
        .await
        .unwrap();
    assert!(text(&slow).starts_with("slow done by"));
    hub.close().await;

    plan.limits.server = CallLimits {
        idle: Duration::from_millis(200),
        total: None,
    };
    let hub = Hub::start(vec![plan.clone()], options(5.0), quick()).await;
    let idle = hub
        .call_tool("py", "slow", Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(idle, ClientError::Timeout { seconds, .. } if seconds == 0.2),
        "{idle:?}"
    );
    hub.close().await;

    plan.limits.server = CallLimits {
        idle: Duration::from_secs(1),
        total: Some(Duration::from_millis(900)),
    };
    let hub = Hub::start(vec![plan], options(5.0), quick()).await;
    let overran = hub
        .call_tool("py", "slow", Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(overran, ClientError::Overran { .. }),
        "{overran:?}"
    );
    assert!(overran.hint().unwrap().terminal().contains("maxTimeout"));
    hub.close().await;
}

/// Issue 17: a server that declares the skills extension has its skills
/// listed beside its tools, as it describes them (a wrong digest
/// included: checking is the host's), counted in its status; a session
/// gets one skill's entry by URI; a server without the extension has none.
#[tokio::test]
async fn issue_17_the_skills_of_a_server_with_the_extension_are_gathered() {
    let skills = nexo_testkit::Skills::new()
        .with_skill("acme/review", "Reviews a change", "Read the diff first.")
        .with_file("acme/review", "CHECKLIST.md", "- tests\n")
        .with_skill("notes", "Takes notes", "Write them down.")
        .with_wrong_digest("notes");
    let plan = |name: &str, target| ServerPlan {
        name: name.to_owned(),
        target,
        limits: limits(10.0),
        log: None,
        oauth: None,
        startup: None,
    };
    let plans = vec![
        plan(
            "shelf",
            Target::InProcess(InProcess::new("skills", skills.clone())),
        ),
        plan(
            "plain",
            Target::InProcess(InProcess::new("hello", nexo_testkit::Echo)),
        ),
    ];
    let hub = Hub::start(plans, options(5.0), quick()).await;
    let status = hub.status();
    let state = |name: &str| status.iter().find(|s| s.name == name).unwrap().clone();
    assert_eq!(state("shelf").skills, Some(2));
    assert_eq!(state("plain").skills, None);

    let listed = hub.skills();
    let uris: Vec<(&str, &str)> = listed
        .iter()
        .map(|(server, skill)| (server.as_str(), skill.uri.as_str()))
        .collect();
    assert_eq!(
        uris,
        [
            ("shelf", "skill://acme/review/SKILL.md"),
            ("shelf", "skill://notes/SKILL.md")
        ]
    );
    let review = &listed[0].1;
    assert_eq!(review.name(), "review");
    assert_eq!(review.frontmatter.description, "Reviews a change");
    let rmcp::model::SkillResources::Files(files) = &review.resources else {
        panic!("{review:?}");
    };
    assert_eq!(files.len(), 2);

    let session = hub.session("shelf", Duration::ZERO).await.unwrap();
    assert!(session.supports_skills());
    let entry = session
        .get_skill("skill://acme/review/SKILL.md")
        .await
        .unwrap();
    assert_eq!(&entry, review);
    let unknown = session
        .get_skill("skill://nowhere/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        unknown
            .hint()
            .map(|hint| hint.terminal())
            .unwrap_or_default()
            .contains("skills again"),
        "{unknown:?}"
    );
    let read = session.read_resource(&files[1].uri).await.unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("{read:?}");
    };
    assert!(files[1].verify(text.as_bytes()).is_ok());
    hub.close().await;
}
