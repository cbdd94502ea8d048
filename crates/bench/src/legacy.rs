//! The deprecated HTTP+SSE transport of 2024-11-05 as the generator
//! speaks it (`--transport sse`), on nexo-client's raw link
//! ([`nexo_client::raw::legacy::LegacyLink`]): a GET opens the session's
//! stream, whose first event names where to POST (held to the stream's
//! origin; seed 001's `connect` and wrapped messages understood too); each
//! JSON-RPC message is POSTed there (202 Accepted) and its answer, matched
//! by id, comes back on the stream. The server's requests meanwhile are
//! answered from the scenario; notifications and answers to requests given
//! up on are skipped. The time to the first event is when the answer was
//! read off the stream, the POST's 202 being no event.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexo_client::raw::legacy::{self, OpenError};
use nexo_client::raw::{LinkError, Observer};
use serde_json::{Map, Value};

use crate::check::{ErrorClass, Failed};
use crate::http::{Endpoint, Reply};
use crate::wire;

/// One legacy session at a time: its stream, opened when first needed.
pub struct LegacyLink {
    stream: Endpoint,
    timeout: Duration,
    session: Option<legacy::LegacyLink>,
    scenario: Arc<Scenario>,
}

/// What answers the server's requests: the step's `[step.answers]`.
#[derive(Default)]
struct Scenario(Mutex<Option<Map<String, Value>>>);

impl Observer for Scenario {
    fn request(&self, request: &Value) -> Value {
        let answers = self.0.lock().ok().and_then(|answers| answers.clone());
        crate::answers::respond(request, answers.as_ref())
    }
}

fn failed(error: LinkError) -> Failed {
    match error {
        LinkError::Timeout => Failed::new(ErrorClass::Timeout, error.to_string()),
        LinkError::Http { status, .. } => Failed::new(
            ErrorClass::Http(status),
            format!("{error}, to a request of the legacy session"),
        ),
        LinkError::Ended(_) | LinkError::Transport(_) => {
            Failed::new(ErrorClass::Transport, error.to_string())
        }
    }
}

impl LegacyLink {
    /// A link to the stream at `stream`, each exchange limited to `timeout`.
    pub fn new(stream: Endpoint, timeout: Duration) -> Self {
        Self {
            stream,
            timeout,
            session: None,
            scenario: Arc::default(),
        }
    }

    /// Forgets the session (after a failure or a timeout); the next
    /// request opens another stream.
    pub fn reset(&mut self) {
        self.session = None;
    }

    /// The session, its stream opened if there is none.
    async fn open(&mut self) -> Result<&legacy::LegacyLink, Failed> {
        if let Some(session) = &self.session {
            if session.is_open() {
                return self
                    .session
                    .as_ref()
                    .ok_or_else(|| Failed::new(ErrorClass::Transport, "no session"));
            }
            // A new stream would be a new session, not yet begun.
            self.session = None;
            return Err(Failed::new(
                ErrorClass::Transport,
                "the session's SSE stream ended",
            ));
        }
        let observer = Arc::clone(&self.scenario) as Arc<dyn Observer>;
        let session = legacy::LegacyLink::open(
            &self.stream.url,
            self.stream.headers(),
            self.timeout,
            observer,
        )
        .await
        .map_err(|error| match error {
            OpenError::Link(error) => failed(error),
            OpenError::Foreign { named, .. } => Failed::new(
                ErrorClass::Transport,
                format!("the stream's endpoint `{named}` is on another origin"),
            ),
        })?;
        Ok(self.session.insert(session))
    }

    /// POSTs `message` and, for a request, waits for its answer on the
    /// stream.
    pub async fn exchange(
        &mut self,
        message: &Value,
        id: Option<u64>,
        answers: Option<&Map<String, Value>>,
    ) -> Result<Reply, Failed> {
        if let Ok(mut scenario) = self.scenario.0.lock() {
            *scenario = answers.cloned();
        }
        let session = self.open().await?;
        if id.is_none() {
            session.post(message).await.map_err(failed)?;
            return Ok(Reply {
                message: Value::Null,
                first_event: None,
            });
        }
        let ((message, read_at), _) = session.send(message).await.map_err(failed)?;
        Ok(Reply {
            message,
            first_event: Some(read_at),
        })
    }

    /// Begins the session: `initialize`, then `initialized`.
    pub async fn initialize(&mut self, id: u64, capabilities: &Value) -> Result<(), Failed> {
        self.reset();
        let reply = self
            .exchange(&wire::initialize(id, capabilities), Some(id), None)
            .await?;
        crate::check::answer(&reply.message, id, "initialize", &[])?;
        self.exchange(&wire::initialized(), None, None).await?;
        Ok(())
    }

    /// A session is begun and its stream still read: requests can go on
    /// it (else the link begins another with [`LegacyLink::initialize`]).
    pub fn is_open(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(legacy::LegacyLink::is_open)
    }
}
