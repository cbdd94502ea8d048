//! The music server against real SQLite files in temporary directories:
//! the library itself ([`store`]: persistence, migrations, workspaces,
//! concurrent writers, rules, refusals) and the rmcp handler driven
//! in-process over a `tokio::io::duplex` pipe by rmcp's client ([`tools`]:
//! tools, resources, prompt, exports, the argument retry; [`confirmations`]:
//! elicitation over a 2025-11-25 session and `input_required` rounds over
//! 2026-07-28, answered by a scripted client handler).

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly, with the value that broke them"
)]

mod confirmations;
mod store;
mod tools;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use nexo_music::{Music, MusicOptions};
use nexo_testkit::{call_tool, serve_in_process};
use rmcp::model::{
    CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, RequestContext, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, ErrorData, RoleClient};
use serde_json::{Value, json};

/// A database file in a fresh temporary directory, removed with it.
pub struct TempDb {
    dir: tempfile::TempDir,
}

impl TempDb {
    pub fn create() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("music.sqlite3")
    }

    pub fn music(&self) -> Music {
        Music::new(MusicOptions { db: self.path() }).unwrap()
    }
}

/// How the scripted client answers an elicitation.
#[derive(Debug, Clone)]
pub enum Answer {
    Accept(Value),
    Decline,
    Cancel,
    /// Answers with a JSON-RPC error, as a client whose user interface failed.
    Fail,
}

/// A client that declares form elicitation (or not) and answers every form
/// with one scripted answer, keeping the forms it was shown.
#[derive(Debug, Clone)]
pub struct Scripted {
    elicitation: bool,
    answer: Answer,
    forms: Arc<Mutex<Vec<Value>>>,
}

impl Scripted {
    /// A client that declares no elicitation.
    pub fn plain() -> Self {
        Self {
            elicitation: false,
            answer: Answer::Decline,
            forms: Arc::default(),
        }
    }

    pub fn answering(answer: Answer) -> Self {
        Self {
            elicitation: true,
            answer,
            forms: Arc::default(),
        }
    }

    /// The forms shown so far, as `elicitation/create` params.
    pub fn forms(&self) -> Vec<Value> {
        self.forms.lock().unwrap().clone()
    }
}

impl ClientHandler for Scripted {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        if self.elicitation {
            info.capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.forms
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap());
        Ok(match &self.answer {
            Answer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Answer::Fail => return Err(ErrorData::internal_error("no user interface", None)),
        })
    }
}

/// The protocol era a test client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize`, 2025-11-25.
    Session,
    /// `server/discover`, 2026-07-28.
    Stateless,
}

pub type Client = RunningService<RoleClient, Scripted>;

/// `handler` connected to `music` over an in-memory pipe.
pub async fn connect(music: Music, handler: Scripted, era: Era) -> Client {
    let lifecycle = match era {
        Era::Session => ClientLifecycleMode::Initialize,
        Era::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    };
    handler
        .serve_with_lifecycle(serve_in_process(music), lifecycle)
        .await
        .unwrap()
}

/// Calls `tool` with `arguments`, driving any `input_required` rounds.
pub async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    call_tool(client, tool, arguments).await.unwrap()
}

/// The structured content of a successful result.
pub fn structured(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:#?}");
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// The text of a result's only content.
pub fn text(result: &CallToolResult) -> &str {
    match result.content.as_slice() {
        [only] => &only.as_text().expect("text content").text,
        _ => panic!("expected one content block: {result:#?}"),
    }
}

/// A song with a genre and a year: two playlists fit, so adding it needs a choice.
pub fn bohemian() -> Value {
    json!({
        "title": "Bohemian Rhapsody",
        "artist": "Queen",
        "album": "A Night at the Opera",
        "genre": "rock",
        "year": 1975,
        "duration_s": 354
    })
}

/// `base` with `extra`'s keys added.
pub fn with(base: Value, extra: Value) -> Value {
    let (Value::Object(mut base), Value::Object(extra)) = (base, extra) else {
        panic!("objects only");
    };
    base.extend(extra);
    Value::Object(base)
}
