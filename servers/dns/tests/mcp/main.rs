//! The DNS handler driven through rmcp in-process (a `tokio::io::duplex`
//! pair and rmcp's own client) against real DNS servers on loopback: the
//! standard bed of `nexo-dns-testbed` (a private signed root, the TLD
//! `test.`, healthy zones and one zone per defect, and BIND as a
//! validating resolver), started once for this binary
//! ([`support::bed`]). Nothing reaches the internet.
//!
//! [`findings`] holds the table of what every tool must find in every zone,
//! through each kind of resolver, and checks that every finding code has a
//! zone that shows it; [`tools`] checks the rest of the results (fields,
//! the TCP fallback, arguments); [`bogus`] the results for zones whose
//! DNSSEC is broken, through the validating resolver.

mod bogus;
mod findings;
mod questions;
mod support;
mod tools;
