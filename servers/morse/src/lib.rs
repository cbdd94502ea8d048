//! The Morse server of seed 000's remote server, as a library: [`Morse`] is an
//! rmcp server handler with three tools, `echo(texto)`, `morse(texto)` and
//! `demorse(codigo)`, converting text to and from International Morse code
//! (Recommendation ITU-R M.1677-1). It knows nothing of transports: whoever
//! hosts it (stdio, Streamable HTTP, legacy SSE, an in-process pair) hands it
//! a connection, and [`tools`] gives the tool list for a health document.
//!
//! The conversions themselves, [`encode`] and [`decode`], are plain functions
//! in their own module and know nothing of MCP.

mod code;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod server;

pub use code::{decode, encode};
pub use error::{DecodeError, EncodeError};
pub use server::{Morse, tools};
