//! How a child zone of `test.` is described: its records, its name servers
//! and what each one does ([`Ns`], [`Serves`]), how it is signed
//! ([`Signing`]), and what the resolvers see of it. Plain data; [`crate::build`]
//! turns it into zone handlers.

use std::net::Ipv4Addr;

/// A child zone `<label>.test.`.
#[derive(Debug, Clone)]
pub struct Zone {
    pub label: &'static str,
    /// The records after SOA and NS (which the bed writes from
    /// [`Zone::servers`]), in zone-file syntax with `$ORIGIN` the zone.
    pub records: String,
    pub servers: Vec<Ns>,
    pub signing: Option<Signing>,
    /// What both resolvers see instead of `records` (a stale cache).
    pub resolver_view: Option<String>,
    /// What [`crate::RESOLVER2`] alone sees instead (a change that has not
    /// reached it).
    pub resolver2_view: Option<String>,
}

/// One name server of a zone.
#[derive(Debug, Clone)]
pub struct Ns {
    /// Its host label under the zone (`ns1` is `ns1.<zone>`).
    pub host: &'static str,
    /// Its address; `None` publishes no A record for it anywhere.
    pub ip: Option<Ipv4Addr>,
    pub serves: Serves,
    /// The parent `test.` delegates to it (the zone's own NS set always
    /// lists it).
    pub delegated: bool,
}

/// What the server at an [`Ns`] address does for the zone.
#[derive(Debug, Clone)]
pub enum Serves {
    /// Serves the zone with this SOA serial, and other records than the
    /// zone's when `records` is given.
    Zone {
        serial: u32,
        records: Option<String>,
    },
    /// Nothing listens: questions are refused at once (ICMP port
    /// unreachable, or a TCP reset).
    Nothing,
    /// A socket is bound but never read: every question times out.
    Silent,
    /// A DNS server that does not hold the zone: it answers REFUSED,
    /// without the AA flag.
    Refuses,
}

/// Signatures valid from `inception` to `expiration`, in seconds relative
/// to the moment the bed starts.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub inception: i64,
    pub expiration: i64,
}

/// A DS record the parent publishes for a signed zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DsKind {
    /// SHA-256 digest of the zone's first key.
    Sha256,
    /// SHA-1 digest of the zone's first key.
    Sha1,
    /// A digest of type 3 (GOST R 34.11-94), made up: no key matches it.
    Gost,
    /// SHA-256 digest of a key the zone does not publish.
    OtherKey,
}

/// A way the signing goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigDefect {
    /// The zone publishes no DNSKEY and signs nothing (the DS stays at the
    /// parent).
    KeysUnpublished,
    /// The DNSKEY set is signed, the SOA is not.
    SoaUnsigned,
    /// The SOA's signatures have a flipped bit.
    SoaSignatureCorrupt,
    /// The DNSKEY set is signed only by keys the DS does not name (the
    /// first key, which the DS names, signs everything else): the chain
    /// of trust breaks between the DS and the zone's keys.
    DnskeyNotSignedByDsKey,
}

/// How a zone is signed: Ed25519 keys (the first a key-signing key, flags
/// 257, the rest 256), each signing every RRset of the zone, with an NSEC
/// chain for the names and types it does not hold.
#[derive(Debug, Clone)]
pub struct Signing {
    pub keys: usize,
    pub window: Window,
    /// The DS records the parent publishes.
    pub ds: Vec<DsKind>,
    pub defect: Option<SigDefect>,
    /// Algorithm numbers of more DNSKEYs the zone publishes but signs
    /// nothing with (keys left over from an old algorithm); their key
    /// material is made up.
    pub unused_keys: Vec<u8>,
}

const DAY: i64 = 86_400;

impl Signing {
    /// One key, a DS of it, signatures valid from a day ago for 30 days.
    pub fn good() -> Self {
        Self {
            keys: 1,
            window: Window {
                inception: -DAY,
                expiration: 30 * DAY,
            },
            ds: vec![DsKind::Sha256],
            defect: None,
            unused_keys: Vec::new(),
        }
    }

    pub fn keys(self, keys: usize) -> Self {
        Self { keys, ..self }
    }

    /// Signatures valid from `inception` to `expiration` days from now.
    pub fn days(self, inception: i64, expiration: i64) -> Self {
        Self {
            window: Window {
                inception: inception * DAY,
                expiration: expiration * DAY,
            },
            ..self
        }
    }

    pub fn ds(self, ds: Vec<DsKind>) -> Self {
        Self { ds, ..self }
    }

    /// Also publishes a DNSKEY of `algorithm` that signs nothing.
    pub fn unused_key(mut self, algorithm: u8) -> Self {
        self.unused_keys.push(algorithm);
        self
    }

    pub fn defect(self, defect: SigDefect) -> Self {
        Self {
            defect: Some(defect),
            ..self
        }
    }
}

impl Ns {
    /// A delegated server at `ip` serving the zone with serial 1.
    pub fn serving(host: &'static str, ip: Ipv4Addr) -> Self {
        Self {
            host,
            ip: Some(ip),
            serves: Serves::Zone {
                serial: 1,
                records: None,
            },
            delegated: true,
        }
    }

    /// A delegated server at `ip` doing `serves`.
    pub fn doing(host: &'static str, ip: Ipv4Addr, serves: Serves) -> Self {
        Self {
            serves,
            ..Self::serving(host, ip)
        }
    }

    /// A delegated server whose name has no address.
    pub fn without_address(host: &'static str) -> Self {
        Self {
            host,
            ip: None,
            serves: Serves::Nothing,
            delegated: true,
        }
    }

    /// Listed by the zone, not delegated to by the parent.
    pub fn undelegated(self) -> Self {
        Self {
            delegated: false,
            ..self
        }
    }
}

impl Zone {
    /// A zone on `servers`, unsigned, seen alike by every resolver.
    pub fn new(label: &'static str, records: impl Into<String>, servers: Vec<Ns>) -> Self {
        Self {
            label,
            records: records.into(),
            servers,
            signing: None,
            resolver_view: None,
            resolver2_view: None,
        }
    }

    pub fn signed(self, signing: Signing) -> Self {
        Self {
            signing: Some(signing),
            ..self
        }
    }

    pub fn resolver_sees(self, records: impl Into<String>) -> Self {
        Self {
            resolver_view: Some(records.into()),
            ..self
        }
    }

    pub fn resolver2_sees(self, records: impl Into<String>) -> Self {
        Self {
            resolver2_view: Some(records.into()),
            ..self
        }
    }
}
