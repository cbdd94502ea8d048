//! Every environment variable nexo reads, in one place.

/// The port `nexo serve --http` listens on when the address names none
/// (set by platforms such as Cloud Run).
pub const PORT: &str = "PORT";
/// Log filter for the diagnostics nexo writes to stderr (`info`, `debug`, ...).
pub const LOG_FILTER: &str = "RUST_LOG";

/// The value of `name`, if set and valid UTF-8.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
