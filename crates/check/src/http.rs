//! The probes of the Streamable HTTP transport itself, each one request
//! with a header changed: a missing and an unknown `Mcp-Session-Id` (an
//! expired one cannot be forced, and the report says so), a DNS
//! rebinding attempt (`Origin: http://evil.example`, a foreign `Host`),
//! content negotiation (`Accept`, `Content-Type`), an oversized body, a
//! DELETE of the session; the latency of a tiny call (about 40 ms points
//! at Nagle's algorithm); and, when the server answers 401, its protected
//! resource metadata and `WWW-Authenticate` challenge.

use std::sync::Arc;

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::Run;
use crate::finding::{Finding, Group, Severity};
use crate::link::{HttpLink, Link, RawReply};
use crate::report::Measurement;

/// The body of the oversized request, in bytes.
const OVERSIZED: usize = 8 * 1024 * 1024;
/// Tiny calls timed for the latency smell.
const LATENCY_SAMPLES: usize = 7;

pub(crate) async fn run(run: &mut Run) {
    let link = Arc::clone(&run.link);
    let Link::Http(http) = &*link else {
        return;
    };
    if run.runs(Group::Latency) {
        latency(run, http).await;
    }
    if run.runs(Group::Http) {
        transport(run, http).await;
    }
}

fn ping(http: &HttpLink) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": http.next_id(), "method": "ping"})
        .to_string()
        .into_bytes()
}

/// `→ POST url (what changed)` and `← HTTP status: body`.
fn evidence(
    http: &HttpLink,
    method: &Method,
    changed: &str,
    reply: &Result<RawReply, crate::link::LinkError>,
) -> String {
    let answer = match reply {
        Ok(reply) => reply.describe(),
        Err(error) => format!("({error})"),
    };
    format!("→ {method} {} {changed}\n← {answer}", http.url)
}

async fn send(
    http: &HttpLink,
    method: Method,
    headers: HeaderMap,
    body: Option<Vec<u8>>,
    changed: &str,
) -> (Option<u16>, String) {
    let reply = http.raw(method.clone(), &http.url, headers, body).await;
    let text = evidence(http, &method, changed, &reply);
    (reply.ok().map(|reply| reply.status), text)
}

fn ok(status: Option<u16>) -> bool {
    status.is_some_and(|status| (200..300).contains(&status))
}

async fn transport(run: &mut Run, http: &HttpLink) {
    run.probe("http-transport", Group::Http, "ran", "");
    let session = http.session();
    let loopback = http.url.host_str().is_some_and(|host| {
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
            || host == "[::1]"
    });
    if session.is_some() {
        run.push(
            Finding::new(
                "session-expiry-not-probed",
                Severity::Info,
                Group::Http,
                "an expired session cannot be forced from outside: not probed",
                "spec 2025-11-25, transports (session management): a session the server has ended gets 404, and the client starts a new one",
                "test by hand: let a session idle past your server's expiry (or restart the server), then POST with its Mcp-Session-Id; it must get 404 (not 400 or 500), and a new initialize must work",
            )
            .subject("Mcp-Session-Id"),
        );
        let mut headers = http.base_headers();
        headers.remove(nexo_client::era::SESSION_HEADER);
        let (status, text) = send(
            http,
            Method::POST,
            headers,
            Some(ping(http)),
            "without Mcp-Session-Id",
        )
        .await;
        if ok(status) {
            run.push(
                Finding::new(
                    "session-not-enforced",
                    Severity::Warning,
                    Group::Http,
                    "a request without `Mcp-Session-Id` is served, though the server issued one",
                    "footgun 2 (seed 002, Appendix B); spec 2025-11-25, transports: servers that require a session SHOULD answer 400 without it",
                    "answer requests without the session header with 400 Bad Request",
                )
                .evidence(text)
                .subject("Mcp-Session-Id"),
            );
        }
        let mut headers = http.base_headers();
        headers.insert(
            nexo_client::era::SESSION_HEADER,
            HeaderValue::from_static("nexo-check-no-such-session"),
        );
        let (status, text) = send(
            http,
            Method::POST,
            headers,
            Some(ping(http)),
            "with an unknown Mcp-Session-Id",
        )
        .await;
        if ok(status) {
            run.push(
                Finding::new(
                    "unknown-session-accepted",
                    Severity::Error,
                    Group::Http,
                    "a request with an unknown `Mcp-Session-Id` is served",
                    "spec 2025-11-25, transports (session management): an unknown or ended session gets 404",
                    "answer an unknown session id with 404 Not Found, so clients start a new session",
                )
                .evidence(text)
                .subject("Mcp-Session-Id"),
            );
        } else if status.is_some_and(|status| status != 404) {
            run.push(
                Finding::new(
                    "unknown-session-status",
                    Severity::Info,
                    Group::Http,
                    format!("an unknown `Mcp-Session-Id` gets HTTP {}, not 404", status.unwrap_or_default()),
                    "spec 2025-11-25, transports (session management): clients start a new session on 404",
                    "answer an unknown session id with 404",
                )
                .evidence(text)
                .subject("Mcp-Session-Id"),
            );
        }
    }
    let mut headers = http.base_headers();
    headers.insert("origin", HeaderValue::from_static("http://evil.example"));
    let (status, text) = send(
        http,
        Method::POST,
        headers,
        Some(ping(http)),
        "with Origin: http://evil.example",
    )
    .await;
    if ok(status) {
        run.push(
            Finding::new(
                "origin-not-validated",
                Severity::Error,
                Group::Http,
                "a request from `Origin: http://evil.example` is served (DNS rebinding)",
                "spec 2025-11-25, transports (security warning): servers MUST validate Origin and answer an invalid one with 403; footgun 3",
                "refuse requests whose Origin is not one you serve with 403 Forbidden (and never treat Origin as authentication)",
            )
            .evidence(text)
            .subject("Origin"),
        );
    }
    if loopback {
        let mut headers = http.base_headers();
        headers.insert("host", HeaderValue::from_static("evil.example"));
        let (status, text) = send(
            http,
            Method::POST,
            headers,
            Some(ping(http)),
            "with Host: evil.example",
        )
        .await;
        if ok(status) {
            run.push(
                Finding::new(
                    "host-not-validated",
                    Severity::Warning,
                    Group::Http,
                    "a loopback server serves a request for `Host: evil.example` (DNS rebinding)",
                    "spec 2025-11-25, transports (security warning): local servers bind to loopback and guard against DNS rebinding",
                    "accept only the Host names you serve (localhost, 127.0.0.1, [::1]) and answer others with 421 or 403",
                )
                .evidence(text)
                .subject("Host"),
            );
        }
    }
    let mut headers = http.base_headers();
    headers.insert("accept", HeaderValue::from_static("text/html"));
    let (status, text) = send(
        http,
        Method::POST,
        headers,
        Some(ping(http)),
        "with Accept: text/html",
    )
    .await;
    if ok(status) {
        run.push(
            Finding::new(
                "accept-not-checked",
                Severity::Info,
                Group::Http,
                "a POST that accepts neither JSON nor SSE is served",
                "spec 2025-11-25, transports: the client lists application/json and text/event-stream in Accept",
                "answer a POST whose Accept allows neither with 406 Not Acceptable",
            )
            .evidence(text)
            .subject("Accept"),
        );
    }
    let mut headers = http.base_headers();
    headers.insert("content-type", HeaderValue::from_static("text/plain"));
    let (status, text) = send(
        http,
        Method::POST,
        headers,
        Some(ping(http)),
        "with Content-Type: text/plain",
    )
    .await;
    if ok(status) {
        run.push(
            Finding::new(
                "content-type-not-checked",
                Severity::Info,
                Group::Http,
                "a POST with `Content-Type: text/plain` is served",
                "spec 2025-11-25, transports: messages are POSTed as application/json",
                "answer other content types with 415 Unsupported Media Type",
            )
            .evidence(text)
            .subject("Content-Type"),
        );
    }
    let padding = "x".repeat(OVERSIZED);
    let body = json!({"jsonrpc": "2.0", "id": http.next_id(), "method": "ping", "params": {"_meta": {"padding": padding}}})
        .to_string()
        .into_bytes();
    let (status, text) = send(
        http,
        Method::POST,
        http.base_headers(),
        Some(body),
        "with an 8 MiB body",
    )
    .await;
    if ok(status) {
        run.push(
            Finding::new(
                "no-body-limit",
                Severity::Warning,
                Group::Http,
                "an 8 MiB request body is read and served",
                "spec, security best practices (resource exhaustion): bound what one request may cost",
                "limit request bodies (a few MiB at most) and answer larger ones with 413",
            )
            .evidence(text)
            .subject("Content-Length"),
        );
    }
    if session.is_some() {
        let (status, text) = send(
            http,
            Method::DELETE,
            http.base_headers(),
            None,
            "of the session",
        )
        .await;
        if ok(status) {
            let (after, later) = send(
                http,
                Method::POST,
                http.base_headers(),
                Some(ping(http)),
                "in the deleted session",
            )
            .await;
            if ok(after) {
                run.push(
                    Finding::new(
                        "deleted-session-alive",
                        Severity::Warning,
                        Group::Http,
                        "a session ended with DELETE still serves requests",
                        "spec 2025-11-25, transports (session management): after termination, requests with its id get 404",
                        "forget the session on DELETE and answer its id with 404",
                    )
                    .evidence(format!("{text}\n{later}"))
                    .subject("Mcp-Session-Id"),
                );
            }
        } else if status.is_some_and(|status| status != 405) {
            run.push(
                Finding::new(
                    "session-delete-status",
                    Severity::Info,
                    Group::Http,
                    format!("DELETE of the session gets HTTP {}", status.unwrap_or_default()),
                    "spec 2025-11-25, transports (session management): DELETE ends a session, or 405 if clients may not",
                    "answer DELETE with 2xx, or 405 Method Not Allowed",
                )
                .evidence(text)
                .subject("Mcp-Session-Id"),
            );
        }
    }
}

/// The median of a few pings on a kept-alive connection.
async fn latency(run: &mut Run, http: &HttpLink) {
    let mut samples = Vec::new();
    for _ in 0..LATENCY_SAMPLES {
        match http
            .raw(
                Method::POST,
                &http.url,
                http.base_headers(),
                Some(ping(http)),
            )
            .await
        {
            Ok(reply) if reply.status == 200 => samples.push(reply.elapsed.as_secs_f64() * 1000.0),
            _ => break,
        }
    }
    if samples.len() < LATENCY_SAMPLES {
        run.probe(
            "latency",
            Group::Latency,
            "skipped",
            "ping was not answered with 200",
        );
        return;
    }
    // The first opens the connection.
    samples.remove(0);
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    run.report.measurements.push(Measurement {
        name: "ping_median",
        value: (median * 100.0).round() / 100.0,
        unit: "ms",
    });
    run.probe(
        "latency",
        Group::Latency,
        "ran",
        format!("median ping {median:.2} ms"),
    );
    if (35.0..=60.0).contains(&median) {
        run.push(
            Finding::new(
                "latency-nagle",
                Severity::Warning,
                Group::Latency,
                format!("a tiny call takes {median:.0} ms: Nagle's algorithm?"),
                "a ~40 ms floor on small answers is TCP_NODELAY missing (delayed ACK meets Nagle); one server went from 382 to 71,687 calls/s by setting it",
                "set TCP_NODELAY on accepted sockets (most frameworks have an option)",
            )
            .evidence(format!("{} pings on one kept-alive connection; median {median:.2} ms", samples.len())),
        );
    }
}

/// The server answered 401: its challenge and its protected resource
/// metadata (RFC 9728) are checked, and what cannot be probed is named.
pub(crate) async fn authorization(run: &mut Run, challenge: Option<String>) {
    let link = Arc::clone(&run.link);
    let Link::Http(http) = &*link else {
        return;
    };
    run.probe(
        "authorization",
        Group::Auth,
        "ran",
        "the server answered initialize with 401/403",
    );
    const WHY: &str = "spec 2025-11-25, basic/authorization (RFC 9728 protected resource metadata)";
    run.push(
        Finding::new(
            "auth-required",
            Severity::Info,
            Group::Auth,
            "the server requires authorization: only its authorization front was checked",
            WHY,
            "to check the rest, give a token: --header 'Authorization: Bearer …'",
        )
        .evidence(format!(
            "WWW-Authenticate: {}",
            challenge.as_deref().unwrap_or("(absent)")
        )),
    );
    let metadata_url = match &challenge {
        None => {
            run.push(
                Finding::new(
                    "auth-no-www-authenticate",
                    Severity::Error,
                    Group::Auth,
                    "the 401 carries no `WWW-Authenticate` header",
                    WHY,
                    "answer 401 with WWW-Authenticate: Bearer resource_metadata=\"https://…/.well-known/oauth-protected-resource\"",
                )
                .subject("WWW-Authenticate"),
            );
            None
        }
        Some(challenge) => {
            let found = challenge
                .split(['"', ',', ' '])
                .zip(challenge.split(['"', ',', ' ']).skip(1))
                .find(|(key, _)| key.trim().ends_with("resource_metadata="))
                .map(|(_, value)| value.to_owned());
            if found.is_none() {
                run.push(
                    Finding::new(
                        "auth-no-resource-metadata",
                        Severity::Warning,
                        Group::Auth,
                        "the `WWW-Authenticate` challenge names no `resource_metadata`",
                        WHY,
                        "add resource_metadata=\"<URL of your protected resource metadata>\" to the challenge",
                    )
                    .evidence(format!("WWW-Authenticate: {challenge}"))
                    .subject("WWW-Authenticate"),
                );
            }
            found
        }
    };
    let metadata_url = metadata_url
        .and_then(|url| url::Url::parse(&url).ok())
        .or_else(|| {
            let mut url = http.url.clone();
            let path = url.path().trim_end_matches('/').to_owned();
            url.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
            url.set_query(None);
            Some(url)
        });
    if let Some(url) = metadata_url {
        let reply = http.raw(Method::GET, &url, HeaderMap::new(), None).await;
        let document = reply
            .as_ref()
            .ok()
            .filter(|reply| reply.status == 200)
            .and_then(|reply| serde_json::from_str::<Value>(&reply.body).ok());
        match document {
            None => run.push(
                Finding::new(
                    "auth-no-protected-resource-metadata",
                    Severity::Error,
                    Group::Auth,
                    "no protected resource metadata could be read",
                    WHY,
                    "serve the metadata (resource, authorization_servers) at the URL the challenge names",
                )
                .evidence(format!(
                    "→ GET {url}\n← {}",
                    match &reply {
                        Ok(reply) => reply.describe(),
                        Err(error) => error.to_string(),
                    }
                )),
            ),
            Some(document) => {
                let servers = document
                    .get("authorization_servers")
                    .and_then(Value::as_array)
                    .is_some_and(|servers| !servers.is_empty());
                if !servers {
                    run.push(
                        Finding::new(
                            "auth-no-authorization-servers",
                            Severity::Error,
                            Group::Auth,
                            "the protected resource metadata names no authorization server",
                            WHY,
                            "list your authorization server's issuer in authorization_servers",
                        )
                        .evidence(document.to_string()),
                    );
                }
                let resource = document.get("resource").and_then(Value::as_str).unwrap_or("");
                let own = http.url.as_str().trim_end_matches('/');
                let origin = http.url.origin().ascii_serialization();
                if resource.trim_end_matches('/') != own && resource.trim_end_matches('/') != origin {
                    run.push(
                        Finding::new(
                            "auth-resource-mismatch",
                            Severity::Warning,
                            Group::Auth,
                            format!("the metadata's resource `{resource}` is not this server's URL"),
                            "spec 2025-11-25, basic/authorization: tokens are bound to the resource (RFC 8707 audience)",
                            "set resource to the server's canonical URL and check each token's audience against it",
                        )
                        .evidence(document.to_string()),
                    );
                }
            }
        }
    }
    run.push(Finding::new(
        "auth-token-passthrough-unprobed",
        Severity::Info,
        Group::Auth,
        "token passthrough cannot be probed from outside",
        "footgun 4 (seed 002, Appendix B): a token is bound to this server; passing it on to other APIs breaks its audience",
        "check the code: tokens are validated for this server's audience and never forwarded; upstream APIs get the server's own credentials",
    ));
}
