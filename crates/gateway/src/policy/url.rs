//! The URL matcher: a URL an argument names is refused when its scheme is
//! not allowed, its host is denied or not allowed, or its host is, or
//! resolves to, an address that is not public (see [`super::address`])
//! and the policy does not allow private addresses. A name that does not
//! resolve is refused too: a gateway cannot vouch for where it leads.
//!
//! URLs are read as browsers and `reqwest` read them (the url crate, WHATWG
//! rules), so `http://2130706433/`, `http://0x7f.1/` and `http:\\host` mean
//! what an HTTP client would make of them; other schemes' hosts are read
//! with `inet_aton`'s loose IPv4 spellings too.

use std::net::IpAddr;

use globset::GlobSet;
use ipnet::IpNet;

use super::address::{loose_ipv4, non_public};
use super::resolve::Resolver;

/// The lists of one URL matcher, compiled.
#[derive(Debug, Clone)]
pub struct UrlRules {
    pub schemes: Vec<String>,
    pub allow_hosts: Option<GlobSet>,
    pub deny_hosts: Option<GlobSet>,
    pub allow_private: bool,
    pub allow_addresses: Vec<IpNet>,
}

/// Whether a URL is refused, and why or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlCheck {
    pub refused: bool,
    pub detail: String,
}

impl UrlCheck {
    fn refused(value: &str, why: impl std::fmt::Display) -> Self {
        Self {
            refused: true,
            detail: format!("`{value}` is refused: {why}"),
        }
    }
}

impl UrlRules {
    /// Checks `value` against the lists, resolving its host name with
    /// `resolver` unless private addresses are allowed.
    pub async fn check(&self, value: &str, resolver: &dyn Resolver) -> UrlCheck {
        let url = match url::Url::parse(value.trim()) {
            Ok(url) => url,
            Err(error) => return UrlCheck::refused(value, format!("it is not a URL ({error})")),
        };
        let scheme = url.scheme();
        if !self.schemes.iter().any(|allowed| allowed == scheme) {
            return UrlCheck::refused(
                value,
                format!(
                    "the scheme `{scheme}` is not one of {}",
                    self.schemes.join(", ")
                ),
            );
        }
        let Some(host) = url.host() else {
            return UrlCheck::refused(value, "it names no host");
        };
        let (name, literal) = match host {
            url::Host::Domain(domain) => {
                let name = domain.trim_end_matches('.').to_ascii_lowercase();
                let literal = loose_ipv4(&name).map(IpAddr::V4);
                (name, literal)
            }
            url::Host::Ipv4(v4) => (v4.to_string(), Some(IpAddr::V4(v4))),
            url::Host::Ipv6(v6) => (v6.to_string(), Some(IpAddr::V6(v6))),
        };
        if self
            .deny_hosts
            .as_ref()
            .is_some_and(|deny| deny.is_match(&name))
        {
            return UrlCheck::refused(value, format!("the host `{name}` is denied"));
        }
        if let Some(allow) = &self.allow_hosts
            && !allow.is_match(&name)
        {
            return UrlCheck::refused(
                value,
                format!("the host `{name}` is not in the allowed hosts"),
            );
        }
        if self.allow_private {
            return UrlCheck {
                refused: false,
                detail: format!("`{value}` is allowed (private addresses allowed)"),
            };
        }
        let addresses = match literal {
            Some(address) => vec![address],
            None if name == "localhost" || name.ends_with(".localhost") => {
                vec![IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)]
            }
            None => match resolver.resolve(&name).await {
                Ok(addresses) => addresses,
                Err(reason) => {
                    return UrlCheck::refused(
                        value,
                        format!("its host cannot be resolved ({reason})"),
                    );
                }
            },
        };
        for address in &addresses {
            if self.allow_addresses.iter().any(|net| net.contains(address)) {
                continue;
            }
            if let Some(class) = non_public(*address) {
                let how = if literal.is_some() {
                    format!("the host `{name}` is {address}, {class}")
                } else {
                    format!("the host `{name}` resolves to {address}, {class}")
                };
                return UrlCheck::refused(value, how);
            }
        }
        UrlCheck {
            refused: false,
            detail: format!("`{value}` is allowed: `{name}` is a public address"),
        }
    }
}
