//! The doctor's steps for a URL, one layer at a time as the bytes meet
//! them: name resolution, TCP, TLS, the HTTP answer to a first MCP request
//! (and, for a wrong path, where MCP does answer), the CORS preflight a
//! browser client sends, and the authorization metadata a 401 points at.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderMap;
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use serde_json::{Value, json};
use tokio::net::TcpStream;

use super::{Checklist, Status, Step};
use crate::secret::Header;
use crate::{ErrorKind, era};

/// The steps after `connect`, skipped together when it fails.
const AFTER_CONNECT: &[&str] = &["tls", "http", "cors"];

/// The origin a browser client is taken to call from: the MCP Inspector's
/// page, the browser client most people meet.
const BROWSER_ORIGIN: &str = "http://localhost:6274";

/// Where servers mount MCP, tried when the URL's own path holds nothing.
const USUAL_PATHS: &[&str] = &["/mcp", "/api/mcp", "/mcp/", "/v1/mcp", "/"];

/// A certificate closer than this to its end is a warning.
const EXPIRY_WARNING: Duration = Duration::from_secs(14 * 24 * 3600);

/// Runs the URL steps; whether MCP can be tried over it.
pub(super) async fn check(
    url: &str,
    headers: &[Header],
    timeout: Duration,
    checklist: &mut Checklist<'_>,
) -> bool {
    let since = Instant::now();
    let parsed = match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() => {
            parsed
        }
        _ => {
            checklist.add(Step::failed(
                "resolve",
                ErrorKind::Usage,
                "the target is not an http:// or https:// URL",
                "give the server's URL, such as http://127.0.0.1:8000/mcp",
                since,
            ));
            checklist.skip(&["connect"], "no URL");
            checklist.skip(AFTER_CONNECT, "no URL");
            return false;
        }
    };
    let Some(addresses) = resolve(&parsed, timeout, checklist).await else {
        checklist.skip(&["connect"], "no address");
        checklist.skip(AFTER_CONNECT, "no address");
        return false;
    };
    let Some(stream) = connect(&addresses, timeout, checklist).await else {
        checklist.skip(AFTER_CONNECT, "no connection");
        return false;
    };
    if parsed.scheme() == "https" {
        if !tls(stream, &parsed, timeout, checklist).await {
            checklist.skip(&["http", "cors"], "no TLS session");
            return false;
        }
    } else {
        drop(stream);
        checklist.add(Step::skipped("tls", "an http:// URL: no TLS"));
    }
    let http = match crate::http::client_builder(timeout)
        .timeout(timeout)
        .build()
    {
        Ok(http) => http,
        Err(error) => {
            checklist.add(Step::failed(
                "http",
                ErrorKind::Protocol,
                format!("cannot build an HTTP client: {error}"),
                "check the TLS settings (`--cacert`, SSL_CERT_FILE)",
                Instant::now(),
            ));
            checklist.skip(&["cors"], "no HTTP client");
            return false;
        }
    };
    let extra = crate::header_map(headers);
    let challenge = match answer_http(&http, &parsed, &extra, checklist).await {
        Some(challenge) => challenge,
        None => {
            checklist.skip(&["cors"], "no MCP endpoint at this URL");
            return false;
        }
    };
    cors(&http, &parsed, checklist).await;
    if let Some(challenge) = challenge {
        let authorized_by_hand = headers
            .iter()
            .any(|header| header.name() == http::header::AUTHORIZATION);
        authorization(&http, &parsed, &challenge, authorized_by_hand, checklist).await;
    }
    true
}

/// The URL's host, resolved as the system resolves it (an address needs no
/// look-up).
async fn resolve(
    url: &url::Url,
    timeout: Duration,
    checklist: &mut Checklist<'_>,
) -> Option<Vec<SocketAddr>> {
    let since = Instant::now();
    let port = url.port_or_known_default().unwrap_or(80);
    let name = match url.host() {
        Some(url::Host::Ipv4(address)) => {
            checklist.add(Step::passed(
                "resolve",
                format!("{address} is an address: nothing to look up"),
                since,
            ));
            return Some(vec![SocketAddr::new(address.into(), port)]);
        }
        Some(url::Host::Ipv6(address)) => {
            checklist.add(Step::passed(
                "resolve",
                format!("{address} is an address: nothing to look up"),
                since,
            ));
            return Some(vec![SocketAddr::new(address.into(), port)]);
        }
        Some(url::Host::Domain(name)) => name.to_owned(),
        None => return None,
    };
    let looked_up =
        tokio::time::timeout(timeout, tokio::net::lookup_host((name.as_str(), port))).await;
    match looked_up {
        Ok(Ok(found)) => {
            let addresses: Vec<SocketAddr> = found.collect();
            if addresses.is_empty() {
                checklist.add(no_address(&name, "no address".to_owned(), since));
                return None;
            }
            let shown: Vec<String> = addresses
                .iter()
                .map(|address| address.ip().to_string())
                .collect();
            checklist.add(Step::passed(
                "resolve",
                format!("`{name}` is {}", shown.join(", ")),
                since,
            ));
            Some(addresses)
        }
        Ok(Err(error)) => {
            checklist.add(no_address(&name, error.to_string(), since));
            None
        }
        Err(_) => {
            checklist.add(no_address(
                &name,
                format!("no answer within {} s", timeout.as_secs_f64()),
                since,
            ));
            None
        }
    }
}

fn no_address(name: &str, why: String, since: Instant) -> Step {
    Step::failed(
        "resolve",
        ErrorKind::Unreachable,
        format!("`{name}` does not resolve: {why}"),
        format!(
            "check the host name's spelling, and this machine's DNS (`getent hosts {name}` asks as nexo does)"
        ),
        since,
    )
}

/// A TCP connection to the first of `addresses` that accepts one; each
/// refusal on the way is a detail.
async fn connect(
    addresses: &[SocketAddr],
    timeout: Duration,
    checklist: &mut Checklist<'_>,
) -> Option<TcpStream> {
    let since = Instant::now();
    let mut refusals = Vec::new();
    let mut timed_out = false;
    for address in addresses {
        match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let mut step = Step::passed("connect", format!("connected to {address}"), since);
                step.details = refusals;
                checklist.add(step);
                return Some(stream);
            }
            Ok(Err(error)) => refusals.push(format!("{address}: {error}")),
            Err(_) => {
                timed_out = true;
                refusals.push(format!(
                    "{address}: no answer within {} s",
                    timeout.as_secs_f64()
                ));
            }
        }
    }
    let shown: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    let mut step = if timed_out {
        Step::failed(
            "connect",
            ErrorKind::Unreachable,
            format!("no answer from {}", shown.join(", ")),
            "the host is down, or a firewall drops the connection; check the address and port",
            since,
        )
    } else {
        Step::failed(
            "connect",
            ErrorKind::Unreachable,
            format!("nothing listens on {}", shown.join(", ")),
            "start the server, or check the port in the URL (`ss -ltn` lists what listens here)",
            since,
        )
    };
    step.details = refusals;
    checklist.add(step);
    None
}

/// The TLS handshake on `stream`, verified as every nexo client verifies
/// (the platform's trust, `--cacert`, `SSL_CERT_FILE`); whether it passed.
async fn tls(
    stream: TcpStream,
    url: &url::Url,
    timeout: Duration,
    checklist: &mut Checklist<'_>,
) -> bool {
    let since = Instant::now();
    let Some(config) = crate::tls::client_config() else {
        checklist.add(Step::failed(
            "tls",
            ErrorKind::Protocol,
            "cannot build the TLS verifier",
            "check this machine's certificate store, or name one with SSL_CERT_FILE",
            since,
        ));
        return false;
    };
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_owned();
    let Ok(name) = rustls::pki_types::ServerName::try_from(host.clone()) else {
        checklist.add(Step::failed(
            "tls",
            ErrorKind::Usage,
            format!("`{host}` cannot be checked against a certificate"),
            "give the host as a DNS name or an IP address",
            since,
        ));
        return false;
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(&config));
    let handshake = tokio::time::timeout(timeout, connector.connect(name, stream)).await;
    let session = match handshake {
        Ok(Ok(session)) => session,
        Ok(Err(error)) => {
            let (summary, hint) = match crate::classify::tls_failure(&error) {
                Some(tls) => crate::classify::tls_explained(tls),
                None => (
                    format!("the handshake ended: {error}"),
                    "check that the port serves TLS; a server without TLS is reached with `http://`",
                ),
            };
            checklist.add(Step::failed(
                "tls",
                ErrorKind::Unreachable,
                summary,
                hint,
                since,
            ));
            return false;
        }
        Err(_) => {
            checklist.add(Step::failed(
                "tls",
                ErrorKind::Unreachable,
                format!("no TLS answer within {} s", timeout.as_secs_f64()),
                "the port may not serve TLS: a server without TLS is reached with `http://`",
                since,
            ));
            return false;
        }
    };
    let (_, connection) = session.get_ref();
    let version = connection
        .protocol_version()
        .and_then(|version| version.as_str())
        .unwrap_or("?");
    let suite = connection
        .negotiated_cipher_suite()
        .and_then(|suite| suite.suite().as_str())
        .unwrap_or("?");
    let mut step = Step::passed("tls", format!("{version}, {suite}"), since);
    let held = connection
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| crate::tls::certificate::Held::read(leaf));
    if let Some(held) = held {
        step = step.detail(format!("certificate for {}", held.names().join(", ")));
        let now = jiff::Timestamp::now().as_second();
        let left = Duration::from_secs(u64::try_from(held.not_after - now).unwrap_or(0));
        let until = jiff::Timestamp::from_second(held.not_after)
            .map_or_else(|_| "?".to_owned(), |time| time.to_string());
        step = step.detail(format!(
            "valid until {until} ({} days)",
            left.as_secs() / 86_400
        ));
        if left < EXPIRY_WARNING {
            step.status = Status::Warning;
            step.hint =
                Some("the certificate ends soon: renew it before clients refuse it".to_owned());
        }
    }
    if let Some(chain) = connection.peer_certificates() {
        step = step.detail(format!(
            "{} certificate(s) in the chain the server sent",
            chain.len()
        ));
    }
    checklist.add(step);
    true
}

/// A first MCP request, as `--protocol auto` sends it: `server/discover`
/// with the 2026-07-28 headers.
fn discover_request() -> Value {
    let params = era::stateless_params(Value::Null, &era::client_info("nexo-doctor"), &json!({}));
    json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": params})
}

/// How an HTTP answer to a first MCP request reads.
enum Answered {
    /// An MCP endpoint answered (a result, a JSON-RPC error, or a 400 of
    /// an older server).
    Mcp,
    /// It wants authorization; the `WWW-Authenticate` challenge.
    Unauthorized(String),
    /// Nothing at this path (404, 405), or not MCP (a web page).
    Elsewhere(String),
    /// The server failed.
    Broken(String),
}

async fn post_first_request(
    http: &reqwest::Client,
    url: &url::Url,
    extra: &HeaderMap,
) -> Result<(u16, String, Answered), reqwest::Error> {
    let response = http
        .post(url.as_str())
        .headers(extra.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, crate::streamable::ACCEPTED_TYPES)
        .header(era::PROTOCOL_VERSION_HEADER, era::REVISION_2026)
        .headers(era::method_headers("server/discover", None).collect())
        .json(&discover_request())
        .send()
        .await?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("no content type")
        .to_owned();
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let speaks_mcp = content_type.starts_with("application/json")
        || content_type.starts_with("text/event-stream");
    let answered = match status {
        401 | 403 => Answered::Unauthorized(challenge),
        200..=299 | 400 if speaks_mcp => Answered::Mcp,
        // A 2025-era server may refuse a request of an era it does not
        // know with a bare 400; the era steps say which it speaks.
        400 => Answered::Mcp,
        200..=299 => Answered::Elsewhere(format!(
            "answered {status} with {content_type}, not JSON-RPC"
        )),
        404 | 405 => {
            Answered::Elsewhere(format!("answered {status}: no MCP endpoint at this path"))
        }
        _ => {
            let body = response.text().await.unwrap_or_default();
            let body: String = body.chars().take(200).collect();
            Answered::Broken(format!(
                "answered {status} ({content_type}): {}",
                body.trim()
            ))
        }
    };
    Ok((status, content_type, answered))
}

/// The `http` step; `None` when there is no MCP endpoint to go on with,
/// else the `WWW-Authenticate` challenge if the server asked for one.
async fn answer_http(
    http: &reqwest::Client,
    url: &url::Url,
    extra: &HeaderMap,
    checklist: &mut Checklist<'_>,
) -> Option<Option<String>> {
    let since = Instant::now();
    let (status, content_type, answered) = match post_first_request(http, url, extra).await {
        Ok(answer) => answer,
        Err(error) => {
            checklist.add(Step::failed(
                "http",
                ErrorKind::Unreachable,
                format!(
                    "the POST got no HTTP answer: {}",
                    crate::classify::innermost(&error)
                ),
                "the port may serve something other than HTTP; check the URL",
                since,
            ));
            return None;
        }
    };
    match answered {
        Answered::Mcp => {
            checklist.add(Step::passed(
                "http",
                format!("POST answered {status} ({content_type})"),
                since,
            ));
            Some(None)
        }
        Answered::Unauthorized(challenge) => {
            checklist.add(Step::passed(
                "http",
                format!("POST answered {status}: the server wants authorization"),
                since,
            ));
            Some(Some(challenge))
        }
        Answered::Elsewhere(what) => {
            let mut step = Step::failed(
                "http",
                ErrorKind::Unreachable,
                what,
                "check the URL's path (most servers mount MCP at /mcp)",
                since,
            );
            if let Some(found) = probe_usual_paths(http, url, extra).await {
                step.hint = Some(elsewhere_hint(&found));
            }
            checklist.add(step);
            None
        }
        Answered::Broken(what) => {
            checklist.add(Step::failed(
                "http",
                ErrorKind::Protocol,
                what,
                "the server failed on a first request; its own log says why",
                since,
            ));
            None
        }
    }
}

/// Where MCP answers on the server of `url` when `url` itself holds
/// nothing (a 404 or 405 to the first POST): the hint of a failed
/// connection, for any client command. `None` when no usual path answers
/// either, or no client can be built.
pub(crate) async fn where_mcp_answers(
    url: &str,
    extra: &HeaderMap,
    timeout: Duration,
) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let http = crate::http::client_builder(timeout)
        .timeout(timeout)
        .build()
        .ok()?;
    probe_usual_paths(&http, &url, extra).await
}

/// The first of the usual paths (other than the URL's own) where an MCP
/// endpoint answers, as a URL; then a legacy HTTP+SSE stream at `/sse`.
async fn probe_usual_paths(
    http: &reqwest::Client,
    url: &url::Url,
    extra: &HeaderMap,
) -> Option<String> {
    let at = |path: &str| {
        let mut candidate = url.clone();
        candidate.set_path(path);
        candidate.set_query(None);
        candidate
    };
    for path in USUAL_PATHS {
        if *path == url.path() {
            continue;
        }
        let candidate = at(path);
        if let Ok((_, _, Answered::Mcp | Answered::Unauthorized(_))) =
            post_first_request(http, &candidate, extra).await
        {
            return Some(candidate.to_string());
        }
    }
    let legacy = at("/sse");
    if legacy.path() == url.path() {
        return None;
    }
    // The stream's headers are enough; dropping the response closes it.
    let response = http
        .get(legacy.as_str())
        .headers(extra.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .ok()?;
    let streams = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|content_type| content_type.starts_with("text/event-stream"));
    (response.status().is_success() && streams)
        .then(|| format!("{legacy} (the legacy HTTP+SSE transport)"))
}

/// What to do when MCP answers at `found` rather than at the URL given.
pub(crate) fn elsewhere_hint(found: &str) -> String {
    let url = found.split(' ').next().unwrap_or(found);
    format!("MCP answers at {found}: use --url {url}")
}

/// The CORS preflight a browser client sends before its first POST. Only
/// browser clients need it, so what is missing is a warning.
async fn cors(http: &reqwest::Client, url: &url::Url, checklist: &mut Checklist<'_>) {
    let since = Instant::now();
    let asked = "content-type, mcp-protocol-version, mcp-method, mcp-session-id";
    let answer = http
        .request(http::Method::OPTIONS, url.as_str())
        .header(http::header::ORIGIN, BROWSER_ORIGIN)
        .header(http::header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .header(http::header::ACCESS_CONTROL_REQUEST_HEADERS, asked)
        .send()
        .await;
    let response = match answer {
        Ok(response) => response,
        Err(error) => {
            checklist.add(Step::warning(
                "cors",
                format!(
                    "the preflight got no answer: {}",
                    crate::classify::innermost(&error)
                ),
                "only browser clients need CORS",
                since,
            ));
            return;
        }
    };
    let header = |name: http::HeaderName| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_ascii_lowercase)
    };
    let origin = header(http::header::ACCESS_CONTROL_ALLOW_ORIGIN);
    let allowed = header(http::header::ACCESS_CONTROL_ALLOW_HEADERS).unwrap_or_default();
    let exposed = header(http::header::ACCESS_CONTROL_EXPOSE_HEADERS).unwrap_or_default();
    let status = response.status().as_u16();
    let Some(origin) = origin.filter(|origin| origin == "*" || origin == BROWSER_ORIGIN) else {
        checklist.add(Step::warning(
            "cors",
            format!("a browser page at {BROWSER_ORIGIN} cannot call it (preflight {status}, no Access-Control-Allow-Origin for it)"),
            "only browser clients (the Inspector's page, web apps) need this: answer OPTIONS with Access-Control-Allow-Origin and Access-Control-Allow-Headers",
            since,
        ));
        return;
    };
    let missing: Vec<&str> = asked
        .split(", ")
        .filter(|name| allowed != "*" && !allowed.split(',').any(|given| given.trim() == *name))
        .collect();
    let mut step = Step::passed(
        "cors",
        format!("a browser page may call it (Access-Control-Allow-Origin: {origin})"),
        since,
    );
    if !missing.is_empty() {
        step.status = Status::Warning;
        step.summary = format!(
            "a browser page may call it, but not send {}",
            missing.join(", ")
        );
        step.hint = Some("add them to Access-Control-Allow-Headers".to_owned());
    } else if !exposed.contains("mcp-session-id") && exposed != "*" {
        step.status = Status::Warning;
        step.summary = "a browser page may call it, but cannot read Mcp-Session-Id".to_owned();
        step.hint = Some("add Mcp-Session-Id to Access-Control-Expose-Headers".to_owned());
    }
    checklist.add(step);
}

/// What a 401 points at: the Protected Resource Metadata (RFC 9728) and
/// the authorization server's metadata (RFC 8414), as a client signing in
/// reads them.
async fn authorization(
    http: &reqwest::Client,
    url: &url::Url,
    challenge: &str,
    authorized_by_hand: bool,
    checklist: &mut Checklist<'_>,
) {
    let since = Instant::now();
    let mut candidates = Vec::new();
    if let Some(named) = challenge_parameter(challenge, "resource_metadata") {
        candidates.push(named);
    }
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let mut metadata = None;
    for candidate in &candidates {
        if let Some(document) = fetch_json(http, candidate).await {
            metadata = Some((candidate.clone(), document));
            break;
        }
    }
    let Some((where_found, metadata)) = metadata else {
        let mut step = Step::warning(
            "authorization",
            "a 401 with no OAuth metadata: the server wants a token given by hand",
            "give it with --header 'Authorization: Bearer TOKEN' (or the configuration's \"headers\")",
            since,
        );
        if !authorized_by_hand {
            step.status = Status::Failed;
            step.kind = Some(ErrorKind::Unauthorized);
        }
        step.details = candidates
            .iter()
            .map(|candidate| format!("nothing at {candidate}"))
            .collect();
        checklist.add(step);
        return;
    };
    let servers: Vec<String> = metadata
        .get("authorization_servers")
        .and_then(Value::as_array)
        .map(|servers| {
            servers
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut step = Step::passed(
        "authorization",
        format!(
            "OAuth, by {}",
            if servers.is_empty() {
                "no authorization server named".to_owned()
            } else {
                servers.join(", ")
            }
        ),
        since,
    )
    .detail(format!("protected resource metadata at {where_found}"));
    let Some(issuer) = servers.first() else {
        step.status = Status::Failed;
        step.kind = Some(ErrorKind::Unauthorized);
        step.hint = Some(
            "the metadata must name its authorization server (`authorization_servers`, RFC 9728)"
                .to_owned(),
        );
        checklist.add(step);
        return;
    };
    match authorization_server_metadata(http, issuer).await {
        Some((found, document)) => {
            step = step.detail(format!("authorization server metadata at {found}"));
            let has = |key: &str| document.get(key).is_some_and(|value| !value.is_null());
            let pkce = document
                .get("code_challenge_methods_supported")
                .and_then(Value::as_array)
                .is_some_and(|methods| methods.iter().any(|method| method == "S256"));
            let registration = if has("registration_endpoint") {
                "dynamic client registration"
            } else if document.get("client_id_metadata_document_supported")
                == Some(&Value::Bool(true))
            {
                "client ID metadata documents"
            } else {
                "no registration a client can do by itself (a client id given by hand: --client-id)"
            };
            step = step.detail(format!("clients register by {registration}"));
            if !pkce {
                step.status = Status::Warning;
                step.hint = Some("the authorization server does not say it supports PKCE with S256, which MCP clients require".to_owned());
            } else if !authorized_by_hand {
                step.hint = Some("sign in once with `nexo tools` on this URL (a browser opens); the doctor does not sign in".to_owned());
                step.status = Status::Warning;
            }
        }
        None => {
            step.status = Status::Failed;
            step.kind = Some(ErrorKind::Unauthorized);
            step.summary = format!("the authorization server {issuer} publishes no metadata");
            step.hint = Some("it must answer /.well-known/oauth-authorization-server (RFC 8414) or /.well-known/openid-configuration".to_owned());
        }
    }
    checklist.add(step);
}

/// An authorization server's metadata, where RFC 8414 and OpenID Connect
/// put it for `issuer`.
async fn authorization_server_metadata(
    http: &reqwest::Client,
    issuer: &str,
) -> Option<(String, Value)> {
    let parsed = url::Url::parse(issuer).ok()?;
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
    ];
    for candidate in candidates {
        if let Some(document) = fetch_json(http, &candidate).await {
            return Some((candidate, document));
        }
    }
    None
}

/// A JSON object served at `url` with 200, if there is one.
async fn fetch_json(http: &reqwest::Client, url: &str) -> Option<Value> {
    let response = http
        .get(url)
        .header(ACCEPT, "application/json")
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let document: Value = response.json().await.ok()?;
    document.is_object().then_some(document)
}

/// A parameter of a `WWW-Authenticate` challenge (`resource_metadata="..."`).
fn challenge_parameter(challenge: &str, name: &str) -> Option<String> {
    let start = challenge.find(&format!("{name}="))? + name.len() + 1;
    let rest = &challenge[start..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    (!value.is_empty()).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::challenge_parameter;

    #[test]
    fn a_challenge_parameter_is_read_quoted_or_bare() {
        let challenge = r#"Bearer error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            challenge_parameter(challenge, "resource_metadata").as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            challenge_parameter(
                "Bearer resource_metadata=https://b.example/x, scope=a",
                "resource_metadata"
            )
            .as_deref(),
            Some("https://b.example/x")
        );
        assert_eq!(challenge_parameter("Bearer", "resource_metadata"), None);
        assert_eq!(
            challenge_parameter("Bearer resource_metadata=\"\"", "resource_metadata"),
            None
        );
    }
}
