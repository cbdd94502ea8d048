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
                RData::CNAME(cname) => Some(cname.0.clone()),
                _ => None,
            })
    }

    /// Whether the answer holds an address (A or AAAA) of any owner, the
    /// end of a CNAME chain included.
    pub fn holds_address(&self) -> bool {
        self.answers
            .iter()
            .any(|record| matches!(record.record_type(), RecordType::A | RecordType::AAAA))
    }

    /// The answers of `rtype` owned by `name`.
    pub fn records(&self, name: &Name, rtype: RecordType) -> impl Iterator<Item = &Record> {
        let name = name.clone();
        self.answers
            .iter()
            .filter(move |record| record.record_type() == rtype && record.name == name)
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
