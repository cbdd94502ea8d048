//! The DNS diagnostics server of seed 000's local server, as a library:
//! [`Dns`] is an rmcp server handler with five tools, `ping()`,
//! `salud_dns(dominio)`, `correo_politicas(dominio)`,
//! `estado_dnssec(dominio)` and `propagacion(dominio, resolutores?)`. It
//! knows nothing of transports or of the command line: whoever hosts it
//! builds it from [`DnsOptions`] (the recursive resolver, the port of
//! authoritative servers, the timeout, the call log) and hands it a
//! connection; [`tools`] gives the tool list for a health document.
//!
//! Questions go over the wire with hickory-proto messages (`query.rs`); every
//! finding is a `{tipo, severidad, detalle}` whose codes live in
//! `findings.rs` (the README's table).

mod alias;
mod dnssec;
mod error;
mod findings;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod health;
mod log;
mod mail;
mod name;
mod net;
mod propagation;
mod query;
mod server;
mod verdict;
mod walk;

pub use error::{DomainError, ResolverError};
pub use findings::{Severidad, Tipo};
pub use server::{DNS_PORT, Dns, DnsOptions, OptionsError, parse_address, tools};
