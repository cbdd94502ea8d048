//! Which HTTP headers carry credentials, decided in one place for the trace
//! writer (which writes their values as [`REDACTED`]) and for nexo-client
//! (which never prints them and marks them sensitive).

/// What a redacted value is written as, everywhere in nexo (nexo-client
/// and the gateway's detectors re-export it).
pub const REDACTED: &str = "[redacted]";

/// Parts of a header name that mark a credential.
const MARKS: [&str; 8] = [
    "auth",
    "token",
    "secret",
    "key",
    "password",
    "credential",
    "cookie",
    "session",
];

/// Headers whose names hold a mark but whose values are no credential, and
/// which a trace needs to be read: the MCP session (pairing is by session),
/// and the challenges of a 401 or 407 (where to get a token, not a token).
const NOT_CREDENTIALS: [&str; 3] = ["mcp-session-id", "www-authenticate", "proxy-authenticate"];

/// Whether a header of this name (any case) carries a credential:
/// `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`,
/// `X-Api-Key`, and any name holding `auth`, `token`, `secret`, `key`,
/// `password`, `credential`, `cookie` or `session`; except `Mcp-Session-Id`
/// (which a trace needs to pair messages, and records anyway as the
/// session) and the `WWW-Authenticate` and `Proxy-Authenticate` challenges.
pub fn is_credential_header(name: &str) -> bool {
    if NOT_CREDENTIALS
        .iter()
        .any(|plain| name.eq_ignore_ascii_case(plain))
    {
        return false;
    }
    MARKS.iter().any(|mark| contains_ignoring_case(name, mark))
}

/// Whether `haystack` holds `needle` (lower-case ASCII), in any case.
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_told_apart() {
        for name in [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "Set-Cookie",
            "X-Api-Key",
            "x-auth-token",
            "Client-Secret",
            "apikey",
            "X-Session",
            "Private-Token",
        ] {
            assert!(is_credential_header(name), "{name}");
        }
        for name in [
            "Mcp-Session-Id",
            "mcp-session-id",
            "WWW-Authenticate",
            "Content-Type",
            "Accept",
            "Mcp-Protocol-Version",
            "Keep-Alive",
            "Last-Event-ID",
        ] {
            assert!(!is_credential_header(name), "{name}");
        }
    }
}
