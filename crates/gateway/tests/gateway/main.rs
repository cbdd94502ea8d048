//! The gateway library's tests: the policy matrix (each matcher allowing
//! and denying), policy files with mistakes, reloads, detectors on planted
//! secrets and injection, the audit chain under tampering, and
//! `check-policy`'s explanations; and what instances share through Redis.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]

mod audit;
mod check;
mod detect;
mod policy;
mod shared;
mod support;
