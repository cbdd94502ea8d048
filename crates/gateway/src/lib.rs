//! nexo-gateway: the parts of the security gateway that decide and prove.
//! [`policy`] decides each request from rules over identity, server, tool
//! and arguments (path, URL, SQL, shell and regular-expression matchers);
//! [`detect`] finds secrets and prompt injection in arguments, results and
//! tool descriptions; [`audit`] writes one hash-chained JSON line per
//! decision and verifies a log; [`check`] explains a policy's decision for
//! `nexo gateway check-policy`.
//!
//! A library without I/O of its own beyond the policy and audit files: the
//! serving side (inbound transports, federation of upstreams, auth, rate
//! limits, metrics) builds on it and hands it requests. It knows no
//! particular server and prints nothing.

pub mod audit;
pub mod check;
pub mod detect;
pub mod error;
pub mod policy;
mod walk;

pub use audit::{AuditLog, AuditReport, Entry, Outcome};
pub use check::{CheckError, PolicyReport, check_policy, parse_request};
pub use detect::{Action, Detectors, Finding, Inspection, Place};
pub use error::{AuditError, PolicyError, RequestError};
pub use policy::{
    Decision, Explanation, Identity, Policy, PolicyHandle, Request, Resolver, StaticResolver,
    SystemResolver, Verdict,
};
