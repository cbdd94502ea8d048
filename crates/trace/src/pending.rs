//! The writer's table of requests waiting for their answers, so that a
//! response or error line can name the method it answers and its latency.
//!
//! Requests are keyed by (side, server, session, direction, id): two
//! servers, or two sessions of one server, may use the same id. Requests
//! that reuse a waiting key (concurrent stateless clients that all count
//! from 1) queue under it and are answered first come, first served. The
//! table is bounded ([`MAX_PENDING`]): when it is full, the older half is
//! forgotten and counted. A forgotten request costs only the `method` and
//! `latency_us` of its answer's line; the analysis pairs requests and
//! answers again from the file.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use crate::record::{Direction, Side};

/// The most requests waiting at once, over every connection of a tracer.
pub const MAX_PENDING: usize = 10_000;

/// Where a request was seen and what it asked.
#[derive(Debug)]
pub struct Waiting {
    pub method: Box<str>,
    pub started: Instant,
    seq: u64,
}

/// The requests seen and not answered yet.
#[derive(Debug, Default)]
pub struct PendingTable {
    waiting: HashMap<String, VecDeque<Waiting>>,
    len: usize,
    next_seq: u64,
    limit: usize,
}

/// Who a request is waiting under.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    pub side: Side,
    pub server: &'a str,
    pub session: Option<&'a str>,
    /// The request's direction.
    pub direction: Direction,
    /// The id's JSON text.
    pub id: &'a str,
}

impl Key<'_> {
    /// The key as one string (built by hand: this runs for every request
    /// and answer traced).
    fn text(&self) -> String {
        let session = self.session.unwrap_or_default();
        let mut text =
            String::with_capacity(self.server.len() + session.len() + self.id.len() + 16);
        for part in [
            self.side.as_str(),
            "\0",
            self.server,
            "\0",
            if self.session.is_some() { "s" } else { "-" },
            session,
            "\0",
            self.direction.as_str(),
            "\0",
            self.id,
        ] {
            text.push_str(part);
        }
        text
    }
}

impl PendingTable {
    pub fn new() -> Self {
        Self::with_limit(MAX_PENDING)
    }

    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit: limit.max(2),
            ..Self::default()
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Notes a request; returns how many older ones were forgotten to make
    /// room.
    pub fn insert(&mut self, key: Key<'_>, method: &str, started: Instant) -> usize {
        let forgotten = if self.len >= self.limit {
            self.forget_older_half()
        } else {
            0
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.waiting
            .entry(key.text())
            .or_default()
            .push_back(Waiting {
                method: method.into(),
                started,
                seq,
            });
        self.len += 1;
        forgotten
    }

    /// The request an answer with `key` (its own direction reversed
    /// already) answers. An answer in a session may answer a request made
    /// outside any: the `initialize` that opened the session.
    pub fn take(&mut self, key: Key<'_>) -> Option<Waiting> {
        if let Some(found) = self.take_exact(&key.text()) {
            return Some(found);
        }
        if key.session.is_some() {
            let outside = Key {
                session: None,
                ..key
            };
            return self.take_exact(&outside.text());
        }
        None
    }

    fn take_exact(&mut self, key: &str) -> Option<Waiting> {
        let queue = self.waiting.get_mut(key)?;
        let found = queue.pop_front();
        if queue.is_empty() {
            self.waiting.remove(key);
        }
        if found.is_some() {
            self.len -= 1;
        }
        found
    }

    /// Forgets the older half of the waiting requests; returns how many.
    fn forget_older_half(&mut self) -> usize {
        let mut seqs: Vec<u64> = self
            .waiting
            .values()
            .flat_map(|queue| queue.iter().map(|waiting| waiting.seq))
            .collect();
        let middle = seqs.len() / 2;
        let (_, cut, _) = seqs.select_nth_unstable(middle);
        let cut = *cut;
        let before = self.len;
        self.waiting.retain(|_, queue| {
            queue.retain(|waiting| waiting.seq >= cut);
            !queue.is_empty()
        });
        self.len = self.waiting.values().map(VecDeque::len).sum();
        before - self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(server: &'a str, session: Option<&'a str>, id: &'a str) -> Key<'a> {
        Key {
            side: Side::Server,
            server,
            session,
            direction: Direction::Received,
            id,
        }
    }

    #[test]
    fn same_id_on_two_servers_or_sessions_does_not_collide() {
        let mut table = PendingTable::new();
        let now = Instant::now();
        table.insert(key("a", Some("s1"), "1"), "tools/call", now);
        table.insert(key("b", Some("s1"), "1"), "ping", now);
        table.insert(key("a", Some("s2"), "1"), "tools/list", now);
        let method = |found: Option<Waiting>| found.map(|waiting| waiting.method.to_string());
        assert_eq!(
            method(table.take(key("b", Some("s1"), "1"))).as_deref(),
            Some("ping")
        );
        assert_eq!(
            method(table.take(key("a", Some("s2"), "1"))).as_deref(),
            Some("tools/list")
        );
        assert_eq!(
            method(table.take(key("a", Some("s1"), "1"))).as_deref(),
            Some("tools/call")
        );
        assert!(table.take(key("a", Some("s1"), "1")).is_none());
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn an_answer_in_a_new_session_finds_the_request_made_outside_one() {
        let mut table = PendingTable::new();
        table.insert(key("a", None, "0"), "initialize", Instant::now());
        let found = table.take(key("a", Some("new"), "0"));
        assert_eq!(
            found.map(|w| w.method.to_string()).as_deref(),
            Some("initialize")
        );
    }

    #[test]
    fn reused_ids_queue_first_come_first_served() {
        let mut table = PendingTable::new();
        let now = Instant::now();
        table.insert(key("a", None, "1"), "first", now);
        table.insert(key("a", None, "1"), "second", now);
        let first = table
            .take(key("a", None, "1"))
            .map(|w| w.method.to_string());
        let second = table
            .take(key("a", None, "1"))
            .map(|w| w.method.to_string());
        assert_eq!(
            (first.as_deref(), second.as_deref()),
            (Some("first"), Some("second"))
        );
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_oldest() {
        let mut table = PendingTable::with_limit(100);
        let now = Instant::now();
        let mut forgotten = 0;
        let ids: Vec<String> = (0..1000).map(|id| id.to_string()).collect();
        for id in &ids {
            forgotten += table.insert(key("a", None, id), "tools/call", now);
            assert!(table.len() <= 100);
        }
        assert_eq!(forgotten + table.len(), 1000);
        assert!(
            table.take(key("a", None, "999")).is_some(),
            "the newest is kept"
        );
        assert!(
            table.take(key("a", None, "0")).is_none(),
            "the oldest is gone"
        );
    }
}
