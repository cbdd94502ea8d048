//! The DNS handler driven through rmcp in-process (a `tokio::io::duplex`
//! pair and rmcp's own client) against real DNS servers on loopback: the
//! standard bed of `nexo-dns-testbed` (a private root, the TLD `test.`,
//! healthy zones and one zone per defect), started once for this binary
//! ([`support::bed`]). Nothing reaches the internet.
//!
//! [`findings`] holds the table of what every tool must find in every zone,
//! and checks that every finding code has a zone that shows it; [`tools`]
//! checks the rest of the results (fields, the TCP fallback, arguments).

mod findings;
mod questions;
mod support;
mod tools;
