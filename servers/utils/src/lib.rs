//! The utilities server of seed 001's remote server, as a library: [`Utils`]
//! is an rmcp server handler with four tools, `time(timezone?)`,
//! `sha256(text)`, `echo(text)` and `calc(expression)`. It knows nothing of
//! transports: whoever hosts it (stdio, Streamable HTTP, legacy SSE, an
//! in-process pair) hands it a connection, and [`tools`] gives the tool list
//! for a health document.
//!
//! The work itself lives in plain modules that know nothing of MCP: the safe
//! arithmetic evaluator ([`evaluate`], [`format_number`]) and the clock
//! ([`now`]).

mod calc;
mod clock;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod server;

pub use calc::{MAX_DEPTH, MAX_LENGTH, evaluate, format_number};
pub use clock::{DEFAULT_ZONE, Now, now};
pub use error::{CalcError, TimeError};
pub use server::{Utils, tools};
