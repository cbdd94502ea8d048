//! Matching answers to requests while reading a trace, independently of
//! the `method` and `latency_us` a writer may have filled in, so that the
//! analysis holds for traces written by any version or tool.
//!
//! The rules are the writer's ([`crate::pending`]): a request waits under
//! (side, server, session, direction, id); an answer (a response or an
//! error with an id) travelling the other way takes the first request
//! waiting under its key, or, when it comes in a session, the first one
//! waiting outside any session (the `initialize` that opened it). An answer
//! that finds none is an orphan; what is still waiting at the end is
//! unanswered.
//!
//! A request its sender gave up on is marked so, and its answer, if one
//! still comes, is late rather than an answer like the others: a request
//! named by a `notifications/cancelled` of the same sender, and a
//! `server/discover` era probe still waiting when the same client sent
//! `initialize` (a server slow to start reads and answers both). A given-up
//! request never answered is not unanswered: nobody waits for it.

use std::collections::{HashMap, VecDeque};

use crate::record::{Direction, Kind, TraceRecord};

/// A request seen and not answered yet.
#[derive(Debug, Clone)]
pub struct Waiting {
    /// The request's position among the records read.
    pub index: usize,
    pub time_us: u64,
    pub method: Option<String>,
    pub server: String,
    pub session: Option<String>,
    pub from_client: bool,
    pub id: Option<serde_json::Value>,
    /// Why its sender stopped waiting, if it did.
    pub given_up: Option<GivenUp>,
}

/// Why a request's sender stopped waiting for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GivenUp {
    /// A `notifications/cancelled` named it.
    Cancelled,
    /// An era probe (`server/discover`) the client gave up on for `initialize`.
    AbandonedProbe,
}

impl GivenUp {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::AbandonedProbe => "probe abandoned for initialize",
        }
    }
}

/// What a record is to the pairing.
#[derive(Debug)]
pub enum Paired {
    /// A request, now waiting.
    Request,
    /// An answer to `request`, which waited `latency_us`; late when the
    /// request was given up ([`Waiting::given_up`]).
    Answer { request: Waiting, latency_us: u64 },
    /// An answer to no request seen.
    Orphan,
    /// Nothing to pair: a notification, an error without an id, an invalid
    /// message.
    Unpaired,
}

#[derive(Debug, Default)]
pub struct Pairing {
    waiting: HashMap<String, VecDeque<Waiting>>,
}

fn key(record: &TraceRecord, direction: Direction, session: Option<&str>, id: &str) -> String {
    let present = if session.is_some() { "s" } else { "-" };
    format!(
        "{}\0{}\0{present}{}\0{}\0{id}",
        record.side.as_str(),
        record.server,
        session.unwrap_or_default(),
        direction.as_str()
    )
}

impl Pairing {
    /// Pairs `record`, the `index`th read.
    pub fn observe(&mut self, index: usize, record: &TraceRecord) -> Paired {
        if record.kind == Kind::Notification
            && record.method.as_deref() == Some("notifications/cancelled")
        {
            self.cancelled(record);
        }
        if record.kind == Kind::Request && record.method.as_deref() == Some("initialize") {
            self.abandon_probes(record);
        }
        let Some(id) = record.id_key() else {
            return Paired::Unpaired;
        };
        match record.kind {
            Kind::Request => {
                let key = key(record, record.direction, record.session.as_deref(), &id);
                self.waiting.entry(key).or_default().push_back(Waiting {
                    index,
                    time_us: record.time_us,
                    method: record.method.clone(),
                    server: record.server.clone(),
                    session: record.session.clone(),
                    from_client: record.from_client(),
                    id: record.id.clone(),
                    given_up: None,
                });
                Paired::Request
            }
            Kind::Response | Kind::Error => {
                let direction = record.direction.reversed();
                let mut found = self.take(&key(record, direction, record.session.as_deref(), &id));
                if found.is_none() && record.session.is_some() {
                    found = self.take(&key(record, direction, None, &id));
                }
                match found {
                    Some(request) => Paired::Answer {
                        latency_us: record.time_us.saturating_sub(request.time_us),
                        request,
                    },
                    None => Paired::Orphan,
                }
            }
            Kind::Notification | Kind::Invalid => Paired::Unpaired,
        }
    }

    /// Marks the request a `notifications/cancelled` names (its
    /// `params.requestId`, read from the message where the trace kept it)
    /// as given up: the sender sent both, the same way.
    fn cancelled(&mut self, record: &TraceRecord) {
        #[derive(serde::Deserialize)]
        struct Cancel {
            params: Params,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            request_id: serde_json::Value,
        }
        let Some(cancel) = record
            .message
            .as_ref()
            .and_then(|message| serde_json::from_str::<Cancel>(message.get()).ok())
        else {
            return;
        };
        let id = cancel.params.request_id.to_string();
        let keys = [
            key(record, record.direction, record.session.as_deref(), &id),
            key(record, record.direction, None, &id),
        ];
        for key in keys {
            if let Some(request) = self
                .waiting
                .get_mut(&key)
                .and_then(|queue| queue.iter_mut().find(|request| request.given_up.is_none()))
            {
                request.given_up = Some(GivenUp::Cancelled);
                return;
            }
        }
    }

    /// Marks every `server/discover` the same client still waits for on
    /// the same server as abandoned: `initialize` is sent instead.
    fn abandon_probes(&mut self, record: &TraceRecord) {
        let prefix = key(record, record.direction, None, "");
        for (key, queue) in &mut self.waiting {
            if !key.starts_with(&prefix) {
                continue;
            }
            for request in queue.iter_mut() {
                if request.method.as_deref() == Some("server/discover") {
                    request.given_up.get_or_insert(GivenUp::AbandonedProbe);
                }
            }
        }
    }

    fn take(&mut self, key: &str) -> Option<Waiting> {
        let queue = self.waiting.get_mut(key)?;
        let found = queue.pop_front();
        if queue.is_empty() {
            self.waiting.remove(key);
        }
        found
    }

    /// The requests never answered and not given up, in the order they
    /// were read.
    pub fn unanswered(self) -> Vec<Waiting> {
        let mut waiting: Vec<Waiting> = self
            .waiting
            .into_values()
            .flatten()
            .filter(|request| request.given_up.is_none())
            .collect();
        waiting.sort_by_key(|request| request.index);
        waiting
    }
}
