//! End-to-end tests of the `nexo` binary: real processes, real pipes and real
//! sockets on 127.0.0.1, nothing in-process and nothing on the internet.
//!
//! Protocol behaviour is checked twice: with raw wire JSON ([`stdio_wire`],
//! [`http_wire`], [`http_policy`], [`legacy_sse`]) and through `nexo`'s own
//! client ([`client`]), so that a bug shared by our client and our server
//! cannot hide; [`sse_client`] runs that client against fake legacy SSE
//! servers written in the test. [`shutdown`] covers signals, [`snapshots`] the exact CLI output,
//! [`utils`] the utilities server, [`files`] the files server's attack
//! corpus, [`music`] the music server on real SQLite files, [`trace`] the
//! traces `nexo serve --trace` writes and `nexo trace` reads, [`gateway`]
//! `nexo gateway` in front of real upstreams, and its policy and audit checks,
//! [`bench`] `nexo bench` against real servers, [`check`] `nexo check`
//! on the bundled servers and a buggy one, [`serve_tls`] HTTPS with a test
//! CA.
//! Every process a test starts is owned by a [`support::Proc`], which kills
//! and reaps it when the test ends, however it ends.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly, with the value that broke them"
)]

mod bench;
mod chat;
mod check;
mod client;
mod dns;
mod doctor;
mod exit_codes;
mod files;
mod gateway;
mod gateway_auth;
mod gateway_limits;
mod gateway_otlp;
mod gateway_protocol;
mod gateway_redis;
mod gateway_serve;
mod host;
mod http_policy;
mod http_wire;
mod legacy_sse;
mod music;
mod oauth;
mod secrets;
mod serve_auth;
mod serve_tls;
mod shutdown;
mod snapshots;
mod sse_client;
mod stdio_wire;
mod support;
mod trace;
mod ui;
mod ui_browser;
mod utils;

/// Seed 000's example, `SOS prueba`, encoded.
const SOS_PRUEBA: &str = "... --- ... / .--. .-. ..- . -... .-";
/// Seed 000's captured call, `Hola mundo otra vez`, encoded.
const HOLA_MUNDO: &str = ".... --- .-.. .- / -- ..- -. -.. --- / --- - .-. .- / ...- . --..";
/// The morse server's tools, as `tools/list` orders them.
const TOOL_NAMES: [&str; 3] = ["demorse", "echo", "morse"];
