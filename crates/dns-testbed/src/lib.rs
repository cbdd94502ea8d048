//! A DNS test bed: real DNS servers (hickory-server) on loopback addresses
//! `127.53.x.y` to `127.56.x.y`, all on one port chosen at start, serving
//! zones written in zone-file syntax. Nothing is mocked: the servers speak
//! DNS over UDP and TCP, truncate UDP answers past the size the asker
//! advertises, and answer with the AA flag only for zones they hold.
//!
//! The hierarchy is a private one: a root zone `.` with two servers, which
//! delegates the TLD `test.`, itself on two servers, which delegates every
//! child zone a [`Zone`] describes (and publishes their DS records). One
//! address, [`RESOLVER`], plays the recursive resolver: it holds every zone
//! as it "really" is, so what it says is what a resolver would find; a
//! second, [`RESOLVER2`], may see some zones differently (a change still
//! propagating). Each child zone has its own name servers, which may serve
//! a stale or different copy, time out, refuse, or not exist at all.
//!
//! A [`Bed`] runs its servers on a thread of its own with its own tokio
//! runtime, so synchronous tests, async tests and a benchmark use it the
//! same way; dropping it stops them. [`Bed::validating`] adds a real
//! validating resolver at [`VALIDATOR`]: BIND's `named` (Debian's `bind9`,
//! which `scripts/test` installs), recursing from the bed's signed root
//! with the root's key as its trust anchor. [`zones::standard`] is the catalogue of
//! healthy and broken zones the tests and the benchmark share. It counts
//! the questions its servers receive ([`Bed::queries`]).
//!
//! Dev-only: nexo crates take it as a dev-dependency, never a normal one. It
//! knows nothing of nexo-dns; the expected findings live in the tests.

mod bed;
mod build;
mod spec;
mod validator;
pub mod zones;

pub use bed::{Bed, Error, NOBODY, RESOLVER, RESOLVER2, VALIDATOR};
pub use build::ROOT as ROOT_SERVERS;
pub use spec::{DsKind, Ns, Serves, SigDefect, Signing, Window, Zone};
