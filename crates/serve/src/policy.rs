//! Who may talk to an HTTP server: the `Origin` and `Host` checks that stop
//! DNS-rebinding attacks on a server running on someone's machine, and the
//! CORS answers for the browsers that are allowed.

use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Which browser origins may call the server (`--allow-origin`).
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Origins given on the command line, lower-cased; empty means loopback
    /// origins only.
    allowed: Vec<String>,
    /// `*` was given explicitly: any origin.
    any: bool,
}

impl OriginPolicy {
    /// From the `--allow-origin` values: `*` allows any origin, anything else
    /// is an exact `scheme://host[:port]`; none given means loopback only.
    pub fn new(values: &[String]) -> Self {
        let any = values.iter().any(|value| value == "*");
        let allowed = values
            .iter()
            .filter(|value| *value != "*")
            .map(|value| value.trim_end_matches('/').to_ascii_lowercase())
            .collect();
        Self { allowed, any }
    }

    pub fn allows_any(&self) -> bool {
        self.any
    }

    /// Whether a request carrying `Origin: origin` may be served.
    pub fn allows(&self, origin: &str) -> bool {
        if self.any {
            return true;
        }
        let origin = origin.to_ascii_lowercase();
        if self.allowed.is_empty() {
            return is_loopback_origin(&origin);
        }
        self.allowed.contains(&origin)
    }
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    host_of(authority).is_some_and(is_loopback_host)
}

/// Which `Host` headers the server answers (`--allow-host`).
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// Host names without port; `None` means any host.
    allowed: Option<Vec<String>>,
}

impl HostPolicy {
    /// From the `--allow-host` values and the address listened on: with no
    /// values, a server on a loopback address answers only loopback names
    /// (the DNS-rebinding defence), and one on any other address answers any
    /// name, since it is meant to be reached from elsewhere.
    pub fn new(values: &[String], listening_on: IpAddr) -> Self {
        let allowed = if !values.is_empty() {
            Some(values.iter().map(|v| v.to_ascii_lowercase()).collect())
        } else if listening_on.is_loopback() {
            Some(Vec::new())
        } else {
            None
        };
        Self { allowed }
    }

    /// A policy that answers any host (stdio has no `Host`).
    pub fn any() -> Self {
        Self { allowed: None }
    }

    /// Whether a request carrying `Host: host` may be served.
    pub fn allows(&self, host: &str) -> bool {
        let Some(allowed) = &self.allowed else {
            return true;
        };
        let name = host_of(host);
        if allowed.is_empty() {
            return name.is_some_and(is_loopback_host);
        }
        // The allowed names are lower-cased already; every request passes
        // here, so the header is compared without a lower-cased copy.
        allowed.iter().any(|allowed| {
            allowed.eq_ignore_ascii_case(host)
                || name.is_some_and(|name| allowed.eq_ignore_ascii_case(name))
        })
    }
}

/// The host of `host[:port]` or `[v6][:port]`, without the port and
/// brackets; `None` for anything malformed (a port that is not 1 to 5
/// digits, brackets around something other than an IPv6 address or
/// followed by more than a port, an empty host), which no check admits.
fn host_of(authority: &str) -> Option<&str> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            inside.parse::<std::net::Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':')?),
            };
            (inside, port)
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port_ok = port.is_none_or(|port| {
        (1..=5).contains(&port.len()) && port.bytes().all(|byte| byte.is_ascii_digit())
    });
    (!host.is_empty() && port_ok).then_some(host)
}

/// Whether `host` (a name or an address, without port or brackets) is
/// `localhost` or a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// The methods a browser may use, as a preflight answer lists them.
const CORS_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// The response headers a browser script may read: the session id it must
/// send back, the negotiated revision, an authentication challenge (which
/// points to the Protected Resource Metadata) and a rate limit's wait.
const CORS_EXPOSED: &str = "mcp-session-id, mcp-protocol-version, www-authenticate, retry-after";
/// Answers differ by these request headers, which caches must know.
const CORS_VARY: &str = "origin, access-control-request-method, access-control-request-headers";

/// The answer to any `OPTIONS` request (a CORS preflight): every method the
/// server serves, the request headers asked for, and the origin when it
/// came with one. Only allowed origins get here; others were refused first.
pub(crate) fn preflight(origins: &OriginPolicy, request: &HeaderMap) -> Response {
    let mut response = StatusCode::OK.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(CORS_METHODS),
    );
    if let Some(asked) = request.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
    }
    allow_origin(headers, origins, request.get(header::ORIGIN));
    response
}

/// Adds the CORS headers of an ordinary answer (the application's, and the
/// guard's own: challenges, metadata, 429s). A request without `Origin` is
/// not a browser's cross-origin call: it gets only `Vary`; an origin the
/// policy does not allow is never named.
pub fn add_cors_headers(
    headers: &mut HeaderMap,
    origins: &OriginPolicy,
    origin: Option<&HeaderValue>,
) {
    let origin = origin.filter(|origin| origin.to_str().is_ok_and(|text| origins.allows(text)));
    if origin.is_some() {
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(CORS_EXPOSED),
        );
    }
    allow_origin(headers, origins, origin);
}

fn allow_origin(headers: &mut HeaderMap, origins: &OriginPolicy, origin: Option<&HeaderValue>) {
    headers.insert(header::VARY, HeaderValue::from_static(CORS_VARY));
    if let Some(origin) = origin {
        let allowed = if origins.allows_any() {
            HeaderValue::from_static("*")
        } else {
            origin.clone()
        };
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_are_the_default() {
        let policy = OriginPolicy::new(&[]);
        for origin in [
            "http://localhost:6274",
            "http://127.0.0.1",
            "https://[::1]:8443",
        ] {
            assert!(policy.allows(origin), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
        ] {
            assert!(!policy.allows(origin), "{origin}");
        }
    }

    #[test]
    fn star_must_be_given_explicitly() {
        assert!(OriginPolicy::new(&["*".into()]).allows("http://evil.example"));
        let listed = OriginPolicy::new(&["https://app.example.com".into()]);
        assert!(listed.allows("https://APP.example.com"));
        assert!(!listed.allows("http://localhost:3000"));
    }

    #[test]
    fn hosts_on_loopback_are_checked() {
        let loopback = HostPolicy::new(&[], IpAddr::from([127, 0, 0, 1]));
        assert!(loopback.allows("127.0.0.1:8000"));
        assert!(loopback.allows("localhost"));
        assert!(loopback.allows("[::1]:8000"));
        assert!(!loopback.allows("attacker.example:8000"));
        let public = HostPolicy::new(&[], IpAddr::from([0, 0, 0, 0]));
        assert!(public.allows("mcp.example.com"));
        let listed = HostPolicy::new(&["mcp.example.com".into()], IpAddr::from([0, 0, 0, 0]));
        assert!(listed.allows("mcp.example.com:443"));
        assert!(!listed.allows("other.example.com"));
    }
}
