//! The chat host (`nexo chat`): an LLM that uses the tools of every
//! connected server, on nexo-client's hub. Its parts, each a module: the
//! providers' APIs, the agent loop, the approval policy and tool pinning,
//! the client side of elicitation, sampling and roots, the servers' skills,
//! the slash commands, tool calls run as tasks kept across chats, the
//! chat log, and the errors of them all ([`error`]).

pub mod agent;
pub mod approval;
pub mod chatlog;
pub mod context;
pub mod conversations;
pub mod elicitation;
pub mod error;
pub mod long_results;
pub mod pins;
pub mod provider;
pub mod sampling;
pub mod schema;
pub mod skills;
pub mod slash;
mod store;
pub mod tasks;
pub mod tool_search;
