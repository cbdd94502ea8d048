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
}

/// What a record is to the pairing.
#[derive(Debug)]
pub enum Paired {
    /// A request, now waiting.
    Request,
    /// An answer to `request`, which waited `latency_us`.
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

    fn take(&mut self, key: &str) -> Option<Waiting> {
        let queue = self.waiting.get_mut(key)?;
        let found = queue.pop_front();
        if queue.is_empty() {
            self.waiting.remove(key);
        }
        found
    }

    /// The requests never answered, in the order they were read.
    pub fn unanswered(self) -> Vec<Waiting> {
        let mut waiting: Vec<Waiting> = self.waiting.into_values().flatten().collect();
        waiting.sort_by_key(|request| request.index);
        waiting
    }
}
