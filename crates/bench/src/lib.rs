//! Load generation and measurement of any MCP server (`nexo bench`).
//!
//! The generator writes raw JSON-RPC on links it owns: explicit HTTP/1.1
//! keep-alive connections for Streamable HTTP ([`http`]), the pipes of a
//! child it starts for stdio ([`stdio`]), and nexo-client's in-process
//! transport for a bundled server ([`inprocess`]). A [`plan::Plan`] says
//! what to send and how: closed or open loop ([`run`]), 2025-era sessions
//! or 2026-07-28 stateless requests ([`wire`]). Every answer is checked
//! ([`check`]); latencies go into HDR histograms ([`stats`]); the server's
//! process tree is sampled from /proc ([`cpu`]). [`report`] turns the
//! records into a versioned JSON document, a table, CSV, an SVG plot and
//! a sparkline; [`assert`] checks figures against limits; [`compare`]
//! reads two documents; [`ceiling`] raises an open loop's rate until an
//! objective breaks; [`measure`] makes a whole run of the command line's
//! step, sample, repetitions or ceiling search, and document. This crate
//! prints nothing: the CLI does, told of each moment of the run.
//!
//! It knows no particular server, and depends on nexo-client only (its
//! targets, argument reader and in-process transport).

pub mod answers;
pub mod assert;
pub mod ceiling;
pub mod check;
pub mod compare;
pub mod cpu;
mod error;
pub mod http;
pub mod inprocess;
pub mod legacy;
pub mod measure;
pub mod plan;
pub mod report;
pub mod run;
pub mod scenario;
pub mod stats;
pub mod stdio;
pub mod wire;

pub use crate::error::BenchError;
pub use crate::plan::Plan;
pub use crate::run::Bench;
