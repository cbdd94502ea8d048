//! One DNS question asked of one server, over the wire: UDP first with EDNS0
//! (and the DO bit when DNSSEC records are wanted), TCP when the answer comes
//! back truncated. Messages are built and
//! parsed with hickory-proto; the sockets are ours because the tools need
//! what a stub resolver hides: the response code, the AA and TC flags, every
//! record with its TTL, and exactly which server answered. hickory-resolver
//! would cache and retry across servers, hiding the differences between them
//! that these diagnostics look for.
//!
//! A peer's answer is never trusted: a reply with another id, a malformed
//! message or one that does not echo our question is an error, never a panic.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_proto::op::{Edns, Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

use crate::name::show;

/// The EDNS0 UDP payload size we advertise (the DNS Flag Day 2020 value).
pub const EDNS_PAYLOAD: u16 = 1232;

/// What a server said.
#[derive(Debug, Clone)]
pub struct Answer {
    pub rcode: ResponseCode,
    /// The AA flag: the server claims authority for the name.
    pub authoritative: bool,
    pub answers: Vec<Record>,
    pub authorities: Vec<Record>,
    /// The additional section: the addresses of name servers in a
    /// referral (glue), among others.
    pub additionals: Vec<Record>,
    /// The answer came over TCP after a truncated UDP answer.
    pub via_tcp: bool,
}

impl Answer {
    /// The RDATA of the answers of `rtype` owned by `name`.
    pub fn rdata(&self, name: &Name, rtype: RecordType) -> impl Iterator<Item = &RData> {
        self.records(name, rtype).map(|record| &record.data)
    }

    /// What a zone's own server gives: the AA flag with NOERROR or
    /// NXDOMAIN. A referral, a refusal or a failure is not.
    pub fn is_authoritative_answer(&self) -> bool {
        self.authoritative && self.is_answer()
    }

    /// An answer about the name: NOERROR or NXDOMAIN. SERVFAIL, REFUSED
    /// and the other codes say nothing about the records.
    pub fn is_answer(&self) -> bool {
        matches!(self.rcode, ResponseCode::NoError | ResponseCode::NXDomain)
    }

    /// The target of the CNAME `owner` has in this answer, if any. A
    /// resolver asked for another type of an alias answers with its CNAME
    /// (RFC 1034 4.3.2), so no CNAME question is needed to learn it.
    pub fn alias_target(&self, owner: &Name) -> Option<Name> {
        self.rdata(owner, RecordType::CNAME)
            .find_map(|data| match data {
                RData::CNAME(cname) => Some(cname.0.to_lowercase()),
                _ => None,
            })
    }

    /// The CNAME chain this answer holds from `name`, `name` alone when it
    /// is no alias here.
    pub fn chain(&self, name: &Name) -> Chain {
        let mut chain = Chain::start(name);
        chain.follow(self);
        chain
    }

    /// Whether the answer says that `name` itself does not exist: NXDOMAIN
    /// with no CNAME of `name` in the answer section. After a CNAME the
    /// code belongs to the chain's last name (RFC 6604 section 3, RFC 1034
    /// 3.6.2): the name asked exists, its target does not.
    pub fn denies(&self, name: &Name) -> bool {
        self.rcode == ResponseCode::NXDomain && !self.chain(name).is_alias()
    }

    /// The RDATA of the answers of `rtype` that `name` resolves to: owned
    /// by the end of its CNAME chain in this answer, as a resolver hands
    /// them to an application (a TXT record read through an alias, as
    /// SPF and DMARC read them). A CNAME question asks for the alias
    /// itself.
    pub fn resolved(&self, name: &Name, rtype: RecordType) -> impl Iterator<Item = &RData> {
        let owner = if rtype == RecordType::CNAME {
            name.clone()
        } else {
            self.chain(name).end().clone()
        };
        self.answers
            .iter()
            .filter(move |record| record.record_type() == rtype && record.name == owner)
            .map(|record| &record.data)
    }

    /// The answers of `rtype` owned by `name`.
    pub fn records(&self, name: &Name, rtype: RecordType) -> impl Iterator<Item = &Record> {
        let name = name.clone();
        self.answers
            .iter()
            .filter(move |record| record.record_type() == rtype && record.name == name)
    }
}

/// The longest CNAME chain resolvers follow (BIND stops after 16 links):
/// a longer one is reported as a loop.
pub const MAX_CHAIN: usize = 16;

/// A CNAME chain (RFC 1034 3.6.2): a name, then each alias target in
/// turn, as far as the answers read so far go. The records and the
/// response code of an answer that holds a chain are about its last name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The name asked first, lower-cased.
    first: Name,
    /// Each alias target in turn, lower-cased.
    targets: Vec<Name>,
    /// The chain comes back to a name it has passed (or runs past
    /// [`MAX_CHAIN`] links): it never ends.
    looped: bool,
}

impl Chain {
    /// The chain of `name` before any answer is read: `name` alone.
    pub fn start(name: &Name) -> Self {
        Self {
            first: name.to_lowercase(),
            targets: Vec::new(),
            looped: false,
        }
    }

    /// Follows the CNAMEs `answer` holds from the chain's end on.
    pub fn follow(&mut self, answer: &Answer) {
        while !self.looped {
            let Some(target) = answer.alias_target(self.end()) else {
                return;
            };
            self.looped = target == self.first
                || self.targets.contains(&target)
                || self.targets.len() >= MAX_CHAIN;
            self.targets.push(target);
        }
    }

    /// The name at the chain's end: the one whose records an answer gives.
    pub fn end(&self) -> &Name {
        self.targets.last().unwrap_or(&self.first)
    }

    /// Whether the first name is an alias.
    pub fn is_alias(&self) -> bool {
        !self.targets.is_empty()
    }

    pub fn looped(&self) -> bool {
        self.looped
    }

    /// Each alias target in turn.
    pub fn targets(&self) -> impl Iterator<Item = &Name> {
        self.targets.iter()
    }

    /// How many links the chain holds.
    pub fn links(&self) -> usize {
        self.targets.len()
    }

    /// `a is a CNAME to b, which is a CNAME to c`.
    pub fn describe(&self) -> String {
        let mut text = show(&self.first);
        for (index, target) in self.targets.iter().enumerate() {
            text.push_str(if index == 0 {
                " is a CNAME to "
            } else {
                ", which is a CNAME to "
            });
            text.push_str(&show(target));
        }
        text
    }
}

/// Why a question got no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum QueryError {
    #[error("no answer within {0} ms")]
    Timeout(u128),
    #[error("network error: {0}")]
    Io(String),
    #[error("malformed answer: {0}")]
    Malformed(String),
    #[error("{0} refuses to answer (REFUSED)")]
    Refused(SocketAddr),
}

/// How to ask: recursion desired (a resolver) or not (an authoritative
/// server), whether to ask for DNSSEC records (the DO bit), and whether a
/// validating resolver should skip validation (the CD bit: it then answers
/// with the data it would otherwise judge bogus).
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub recursive: bool,
    pub dnssec: bool,
    pub checking_disabled: bool,
    pub timeout: Duration,
}

/// Asks `server` for `rtype` records of `name`.
pub async fn ask(
    server: SocketAddr,
    name: &Name,
    rtype: RecordType,
    how: Ask,
) -> Result<Answer, QueryError> {
    let mut message = Message::query();
    message.metadata.recursion_desired = how.recursive;
    message.metadata.checking_disabled = how.checking_disabled;
    message.add_query(Query::query(name.clone(), rtype));
    let mut edns = Edns::new();
    edns.set_max_payload(EDNS_PAYLOAD);
    edns.set_dnssec_ok(how.dnssec);
    message.set_edns(edns);
    let bytes = message
        .to_vec()
        .map_err(|error| QueryError::Malformed(error.to_string()))?;
    let id = message.metadata.id;

    let udp = tokio::time::timeout(how.timeout, udp_exchange(server, &bytes, id)).await;
    let (response, via_tcp) = match udp {
        Ok(Ok(response)) if !response.metadata.truncation => (response, false),
        Ok(Ok(_truncated)) => (
            tcp_with_timeout(server, &bytes, id, how.timeout).await?,
            true,
        ),
        Ok(Err(error)) => return Err(error),
        Err(_) => return Err(QueryError::Timeout(how.timeout.as_millis())),
    };
    if response.queries.first() != message.queries.first() {
        return Err(QueryError::Malformed(
            "the answer does not repeat the question".to_owned(),
        ));
    }
    let Message {
        metadata,
        answers,
        authorities,
        additionals,
        ..
    } = response;
    Ok(Answer {
        rcode: metadata.response_code,
        authoritative: metadata.authoritative,
        answers,
        authorities,
        additionals,
        via_tcp,
    })
}

async fn tcp_with_timeout(
    server: SocketAddr,
    bytes: &[u8],
    id: u16,
    timeout: Duration,
) -> Result<Message, QueryError> {
    tokio::time::timeout(timeout, tcp_exchange(server, bytes, id))
        .await
        .map_err(|_| QueryError::Timeout(timeout.as_millis()))?
}

fn io(error: std::io::Error) -> QueryError {
    QueryError::Io(error.to_string())
}

async fn udp_exchange(server: SocketAddr, bytes: &[u8], id: u16) -> Result<Message, QueryError> {
    let local: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).await.map_err(io)?;
    socket.connect(server).await.map_err(io)?;
    socket.send(bytes).await.map_err(io)?;
    let mut buffer = vec![0_u8; 65_535];
    loop {
        let length = socket.recv(&mut buffer).await.map_err(io)?;
        let Some(received) = buffer.get(..length) else {
            continue;
        };
        // A datagram with another id is not ours (a late answer to an
        // earlier question, or a spoof): keep waiting for ours.
        match Message::from_vec(received) {
            Ok(message) if message.metadata.id == id => return Ok(message),
            Ok(_) => continue,
            Err(error) => return Err(QueryError::Malformed(error.to_string())),
        }
    }
}

async fn tcp_exchange(server: SocketAddr, bytes: &[u8], id: u16) -> Result<Message, QueryError> {
    let mut stream = TcpStream::connect(server).await.map_err(io)?;
    let length = u16::try_from(bytes.len())
        .map_err(|_| QueryError::Malformed("question too long".to_owned()))?;
    let mut framed = Vec::with_capacity(bytes.len() + 2);
    framed.extend_from_slice(&length.to_be_bytes());
    framed.extend_from_slice(bytes);
    stream.write_all(&framed).await.map_err(io)?;
    let mut prefix = [0_u8; 2];
    stream.read_exact(&mut prefix).await.map_err(io)?;
    let mut buffer = vec![0_u8; usize::from(u16::from_be_bytes(prefix))];
    stream.read_exact(&mut buffer).await.map_err(io)?;
    let message =
        Message::from_vec(&buffer).map_err(|error| QueryError::Malformed(error.to_string()))?;
    if message.metadata.id != id {
        return Err(QueryError::Malformed(
            "the answer carries another id".to_owned(),
        ));
    }
    Ok(message)
}
