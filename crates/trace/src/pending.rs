//! The writer's table of requests waiting for their answers, so that a
//! response or error line can name the method it answers and its latency.
//!
//! Requests are keyed by their connection (side, server and session, as a
//! digest worked out once per connection: [`crate::origin`]), direction
//! and id: two servers, or two sessions of one server, may use the same
//! id. Keys are short, so they are hashed quickly and kept without an
//! allocation of their own. Requests
//! that reuse a waiting key (concurrent stateless clients that all count
//! from 1) queue under it and are answered first come, first served. The
//! table is bounded ([`MAX_PENDING`]): when it is full, the older half is
//! forgotten and counted. A forgotten request costs only the `method` and
//! `latency_us` of its answer's line; the analysis pairs requests and
//! answers again from the file.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::Instant;

use crate::record::Direction;

/// The most requests waiting at once, over every connection of a tracer.
pub const MAX_PENDING: usize = 10_000;

/// Where a request was seen and what it asked.
#[derive(Debug)]
pub struct Waiting {
    pub method: Cow<'static, str>,
    pub started: Instant,
    seq: u64,
}

/// The requests waiting under one key, oldest first: nearly always one,
/// kept without an allocation of its own.
#[derive(Debug)]
struct Queue {
    first: Waiting,
    more: VecDeque<Waiting>,
}

impl Queue {
    /// Keeps the requests from `seq` on; whether any are left.
    fn keep_from(&mut self, seq: u64) -> bool {
        self.more.retain(|waiting| waiting.seq >= seq);
        if self.first.seq < seq {
            // A queue is in the order its requests came: what is left of
            // `more` is newer than `first`.
            match self.more.pop_front() {
                Some(next) => self.first = next,
                None => return false,
            }
        }
        true
    }

    fn len(&self) -> usize {
        1 + self.more.len()
    }
}

/// The requests seen and not answered yet.
#[derive(Debug, Default)]
pub struct PendingTable {
    waiting: HashMap<KeyBytes, Queue>,
    len: usize,
    next_seq: u64,
    limit: usize,
    /// The key being looked up, built here to spare an allocation.
    key: Vec<u8>,
}

/// Who a request is waiting under.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    /// The connection's digest ([`crate::origin::Origin::connection`]).
    pub connection: u64,
    /// In a session, the connection's digest outside any.
    pub outside: Option<u64>,
    /// The request's direction.
    pub direction: Direction,
    /// The id's JSON text.
    pub id: &'a [u8],
}

impl Key<'_> {
    /// The key as one string of bytes, into `out`: the connection, the
    /// direction and the id's JSON text.
    fn write(&self, connection: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&connection.to_le_bytes());
        out.push(match self.direction {
            Direction::Sent => b'>',
            Direction::Received => b'<',
        });
        out.extend_from_slice(self.id);
    }
}

/// A key's bytes, kept inline when they are short, as they nearly always
/// are (an id of up to 21 bytes).
#[derive(Debug)]
enum KeyBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Long(Box<[u8]>),
}

const INLINE: usize = 30;

impl KeyBytes {
    fn new(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..key.len()].copy_from_slice(key);
                Self::Inline { len, bytes }
            }
            _ => Self::Long(key.into()),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Self::Long(bytes) => bytes,
        }
    }
}

// A key is hashed and compared as its bytes.
impl Hash for KeyBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.as_slice());
    }
}

impl PartialEq for KeyBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for KeyBytes {}

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
    pub fn insert(&mut self, key: Key<'_>, method: Cow<'static, str>, started: Instant) -> usize {
        let forgotten = if self.len >= self.limit {
            self.forget_older_half()
        } else {
            0
        };
        let waiting = Waiting {
            method,
            started,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        key.write(key.connection, &mut self.key);
        // The key is nearly always new: made owned at once, it is hashed once.
        match self.waiting.entry(KeyBytes::new(&self.key)) {
            Entry::Occupied(mut queue) => queue.get_mut().more.push_back(waiting),
            Entry::Vacant(vacant) => {
                vacant.insert(Queue {
                    first: waiting,
                    more: VecDeque::new(),
                });
            }
        }
        self.len += 1;
        forgotten
    }

    /// The request an answer with `key` (its own direction reversed
    /// already) answers. An answer in a session may answer a request made
    /// outside any: the `initialize` that opened the session.
    pub fn take(&mut self, key: Key<'_>) -> Option<Waiting> {
        if let Some(found) = self.take_exact(key, key.connection) {
            return Some(found);
        }
        self.take_exact(key, key.outside?)
    }

    fn take_exact(&mut self, key: Key<'_>, connection: u64) -> Option<Waiting> {
        key.write(connection, &mut self.key);
        // Taken out whole, the key hashed once; put back in the rare case
        // that more requests wait under it.
        let (key, mut queue) = self.waiting.remove_entry(&KeyBytes::new(&self.key))?;
        self.len -= 1;
        match queue.more.pop_front() {
            Some(next) => {
                let found = std::mem::replace(&mut queue.first, next);
                self.waiting.insert(key, queue);
                Some(found)
            }
            None => Some(queue.first),
        }
    }

    /// Forgets the older half of the waiting requests; returns how many.
    fn forget_older_half(&mut self) -> usize {
        let mut seqs: Vec<u64> = self
            .waiting
            .values()
            .flat_map(|queue| {
                std::iter::once(&queue.first)
                    .chain(&queue.more)
                    .map(|waiting| waiting.seq)
            })
            .collect();
        let middle = seqs.len() / 2;
        let (_, cut, _) = seqs.select_nth_unstable(middle);
        let cut = *cut;
        let before = self.len;
        self.waiting.retain(|_, queue| queue.keep_from(cut));
        self.len = self.waiting.values().map(Queue::len).sum();
        before - self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::digest;
    use crate::record::Side;

    fn key<'a>(server: &'a str, session: Option<&'a str>, id: &'a str) -> Key<'a> {
        Key {
            connection: digest(Side::Server, server, session),
            outside: session.map(|_| digest(Side::Server, server, None)),
            direction: Direction::Received,
            id: id.as_bytes(),
        }
    }

    #[test]
    fn same_id_on_two_servers_or_sessions_does_not_collide() {
        let mut table = PendingTable::new();
        let now = Instant::now();
        table.insert(key("a", Some("s1"), "1"), "tools/call".into(), now);
        table.insert(key("b", Some("s1"), "1"), "ping".into(), now);
        table.insert(key("a", Some("s2"), "1"), "tools/list".into(), now);
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
        table.insert(key("a", None, "0"), "initialize".into(), Instant::now());
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
        table.insert(key("a", None, "1"), "first".into(), now);
        table.insert(key("a", None, "1"), "second".into(), now);
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
    fn long_ids_are_kept_as_well_as_short_ones() {
        let mut table = PendingTable::new();
        let long = format!(r#""{}""#, "x".repeat(100));
        table.insert(key("a", None, &long), "long".into(), Instant::now());
        table.insert(key("a", None, "7"), "short".into(), Instant::now());
        let method = |found: Option<Waiting>| found.map(|waiting| waiting.method.to_string());
        assert_eq!(
            method(table.take(key("a", None, &long))).as_deref(),
            Some("long")
        );
        assert_eq!(
            method(table.take(key("a", None, "7"))).as_deref(),
            Some("short")
        );
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_oldest() {
        let mut table = PendingTable::with_limit(100);
        let now = Instant::now();
        let mut forgotten = 0;
        let ids: Vec<String> = (0..1000).map(|id| id.to_string()).collect();
        for id in &ids {
            forgotten += table.insert(key("a", None, id), "tools/call".into(), now);
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
