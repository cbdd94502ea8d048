//! The "everything" server: the fixture the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) runs its server scenarios against,
//! and a handy peer for anyone testing a client. [`Everything`] is an rmcp
//! server handler offering `test_*` tools (every content type, log messages,
//! progress, errors, sampling and elicitation over a 2025-era session, and
//! the `input_required` Multi Round-Trip Requests of 2026-07-28, and an MCP
//! App: a counter drawn by hosts of the `io.modelcontextprotocol/ui`
//! extension), `test://` resources and a template, `test_*` prompts, completion, resource
//! subscriptions and list-change notifications, for both protocol eras.
//!
//! It knows nothing of transports: whoever hosts it hands it a connection
//! (rmcp decides, per request, which protocol era it speaks), and [`tools`]
//! gives its tool list for a health document. The names and texts are the
//! ones the suite checks; nothing else in nexo depends on them.

mod app;
mod fixtures;
mod mrtr;
mod prompts;
mod resources;
mod server;
mod tools;

pub use server::Everything;
pub use tools::list as tools;
