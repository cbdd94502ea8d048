//! nexo-gateway: the security gateway, one endpoint in front of many MCP
//! servers that reads every call, enforces policy on its arguments and
//! proves what it did.
//!
//! The parts that decide and prove: [`policy`] decides each request from
//! rules over identity, server, tool and arguments (path, URL, SQL, shell
//! and regular-expression matchers); [`detect`] finds secrets and prompt
//! injection in arguments, results and tool descriptions; [`audit`] writes
//! one hash-chained JSON line per decision and verifies a log; [`check`]
//! explains a policy's decision for `nexo gateway check-policy`.
//!
//! The serving side (`nexo gateway --config FILE`): [`settings`] reads the
//! configuration's `gateway` object; [`auth`] says who is calling (OAuth
//! bearer tokens or API keys); [`federation`] puts the upstreams of a
//! nexo-client hub behind one set of names; [`view`] says what each
//! endpoint (`/mcp`, a virtual server's `/mcp/NAME`) offers; [`server`] is
//! the MCP server that guards every request with the policy, the detectors,
//! the rate limits ([`limits`]) and the audit log, counted in [`metrics`],
//! the W3C trace context carried upstream ([`tracecontext`]), each
//! caller's own upstream token where one is traded for ([`exchange`]),
//! each request's span exported over OTLP ([`otlp`]);
//! [`app`] serves it all with nexo-serve. Several instances share their
//! rate limits and 2025-era sessions through Redis ([`shared`]). Refusals are
//! worded and coded in [`refusal`]. It knows no particular server and
//! prints nothing.

pub mod app;
/// Who may call the gateway: nexo-serve's authentication, shared with
/// `nexo serve`.
pub use nexo_serve::auth;
pub mod audit;
pub mod check;
pub mod detect;
pub mod error;
pub mod exchange;
pub mod federation;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod launch;
pub mod limits;
pub mod metrics;
pub mod otlp;
pub mod policy;
pub mod refusal;
pub mod server;
pub mod settings;
pub mod shared;
pub mod tracecontext;
pub mod view;
mod walk;

pub use app::{Gateway, GatewayApp, Prepared};
pub use settings::Settings;

pub use audit::{AuditLog, AuditReport, Entry, Outcome};
pub use check::{CheckError, PolicyReport, check_policy, parse_request};
pub use detect::{Action, Detectors, Finding, Inspection, Place};
pub use error::{AuditError, PolicyError, RequestError, SettingsError, StartError};
pub use policy::{
    Decision, Explanation, Identity, Policy, PolicyHandle, Request, Resolver, StaticResolver,
    SystemResolver, Verdict,
};
