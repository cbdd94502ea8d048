//! Where a message was seen (the side, server, direction, transport and
//! session of its line), worked out once for all the lines of a
//! connection: the part of the line that says it, encoded, and the digests
//! under which the connection's requests wait for their answers. The
//! writer keeps the origins of its last lines; the lines of a connection
//! follow each other, so a handful is plenty, and a tracer serving many
//! connections at once only works them out more often (into the room of
//! the origin it forgets, without allocating).

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

use crate::line;
use crate::record::{Direction, Observed, Side};

/// How many origins the writer keeps.
const KEPT: usize = 8;

/// One origin, worked out.
pub(crate) struct Origin {
    side: Side,
    direction: Direction,
    server: String,
    transport: String,
    session: Option<String>,
    /// The line's fields from `server` to `session`, encoded.
    pub(crate) encoded: Vec<u8>,
    /// The connection (side, server and session) among the requests
    /// waiting for an answer.
    pub(crate) connection: u64,
    /// In a session, the same connection outside any: an answer in a
    /// session may answer the request that opened it (an `initialize`
    /// sent before there was a session).
    pub(crate) outside: Option<u64>,
}

impl Origin {
    fn new(observed: &Observed<'_>) -> Self {
        let mut origin = Self {
            side: observed.side,
            direction: observed.direction,
            server: String::new(),
            transport: String::new(),
            session: None,
            encoded: Vec::new(),
            connection: 0,
            outside: None,
        };
        origin.set(observed);
        origin
    }

    /// Makes this the origin of `observed`, in the room it has.
    fn set(&mut self, observed: &Observed<'_>) {
        self.side = observed.side;
        self.direction = observed.direction;
        refill(&mut self.server, observed.server);
        refill(&mut self.transport, observed.transport);
        match (&mut self.session, observed.session) {
            (Some(kept), Some(session)) => refill(kept, session),
            (kept, session) => *kept = session.map(str::to_owned),
        }
        self.encoded.clear();
        line::encode_origin(
            &mut self.encoded,
            observed.server,
            observed.side,
            observed.direction,
            observed.transport,
            observed.session,
        );
        self.connection = digest(observed.side, observed.server, observed.session);
        self.outside = observed
            .session
            .map(|_| digest(observed.side, observed.server, None));
    }

    fn is(&self, observed: &Observed<'_>) -> bool {
        self.side == observed.side
            && self.direction == observed.direction
            && self.session.as_deref() == observed.session
            && self.server == observed.server
            && self.transport == observed.transport
    }
}

/// The origins a thread worked out last.
#[derive(Default)]
pub(crate) struct Origins {
    kept: Vec<Origin>,
    /// Which one a new origin replaces once `KEPT` are kept.
    next: usize,
}

impl Origins {
    /// The origin of `observed`, worked out now if it is not kept.
    pub(crate) fn of(&mut self, observed: &Observed<'_>) -> &Origin {
        let at = match self.kept.iter().position(|origin| origin.is(observed)) {
            Some(at) => at,
            None if self.kept.len() < KEPT => {
                self.kept.push(Origin::new(observed));
                self.kept.len() - 1
            }
            None => {
                let at = self.next;
                self.kept[at].set(observed);
                self.next = (at + 1) % KEPT;
                at
            }
        };
        &self.kept[at]
    }
}

fn refill(kept: &mut String, text: &str) {
    kept.clear();
    kept.push_str(text);
}

/// A connection's digest: the same for the same side, server and session
/// in every thread of the process, and keyed at random, so that no peer
/// can choose names that collide.
pub(crate) fn digest(side: Side, server: &str, session: Option<&str>) -> u64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new)
        .hash_one((side, server, session))
}
