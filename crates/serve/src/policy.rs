//! Who may talk to an HTTP server: the `Origin` and `Host` checks that stop
//! DNS-rebinding attacks on a server running on someone's machine, and the
//! CORS answers for the browsers that are allowed.

use std::net::IpAddr;

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
    is_loopback_host(host_without_port(authority))
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
        let host = host.to_ascii_lowercase();
        let name = host_without_port(&host);
        if allowed.is_empty() {
            return is_loopback_host(name);
        }
        allowed
            .iter()
            .any(|allowed| allowed == name || *allowed == host)
    }
}

/// `host[:port]` or `[v6][:port]` without the port and brackets.
fn host_without_port(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.split(':').next().unwrap_or(authority)
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
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
