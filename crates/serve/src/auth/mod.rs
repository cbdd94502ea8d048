//! Who may call an HTTP server (`nexo serve --http`, the gateway): the
//! OAuth 2.1 resource server of the MCP authorization specification, or
//! static bearer tokens (API keys) kept as their SHA-256 digests. It knows
//! HTTP headers and tokens, nothing of MCP messages.
//!
//! [`Auth`] checks each request's `Authorization: Bearer` credential before
//! any endpoint sees it ([`crate::guard`] for `nexo serve`, the gateway's
//! application for the gateway): a JWT by its signature against the
//! issuer's keys ([`jwt`]), its issuer, its audience (the server's
//! canonical URI), its lifetime and the scopes every request needs; or a
//! static token by its SHA-256 digest, compared in constant time. What it
//! establishes, [`Authenticated`], rides in the request's extensions (to
//! the gateway's policy and audit log). It answers the Protected Resource
//! Metadata document (RFC 9728) and the 401 and 403 challenges that point
//! clients to it.
//!
//! Scopes a tool needs (`toolScopes`) are found by
//! [`Auth::missing_tool_scopes`]. A `tools/call` over Streamable HTTP whose
//! tool needs a scope the token lacks gets the step-up challenge: 403 with
//! `error="insufficient_scope"` and the scopes to ask for
//! ([`Rejection::ToolScope`]). Where no HTTP status can answer a call (the
//! legacy SSE transport answers on its stream), it is refused as a tool
//! error naming the scope instead.

pub mod jwt;

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use globset::GlobMatcher;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Where the Protected Resource Metadata is served (RFC 9728), and the
/// prefix of its path-suffixed forms.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Who may call.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthSettings {
    /// Not configured: open, on loopback addresses only.
    Unset,
    /// Open on any address, by choice.
    None,
    ApiKeys(Vec<ApiKey>),
    OAuth(OAuthSettings),
}

/// A static bearer token (API key), kept as its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The caller's subject when this key is used.
    pub name: String,
    /// The key's SHA-256 digest.
    pub digest: [u8; 32],
    pub scopes: Vec<String>,
}

/// An OAuth 2.1 resource server's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthSettings {
    /// The authorization server, as tokens name it in `iss`.
    pub issuer: String,
    /// The server's canonical URI, which tokens must hold in `aud`.
    pub audience: String,
    /// Where the issuer's keys are; from its metadata when `None`.
    pub jwks_uri: Option<url::Url>,
    /// Scopes every request needs.
    pub required_scopes: Vec<String>,
    /// Scopes the tools matching each pattern (globs) need.
    pub tool_scopes: Vec<(globset::Glob, Vec<String>)>,
}

/// Whom the messages name, and where tool scopes are configured.
#[derive(Debug, Clone, Copy)]
pub struct Naming {
    /// `gateway`, `server`: "this gateway needs ...".
    pub noun: &'static str,
    /// Where a tool scope rule is written, `{}` the pattern:
    /// `auth.oauth.toolScopes[{}]`.
    pub tool_scope_rule: &'static str,
}

impl Naming {
    /// The rule a tool scope pattern is written as.
    pub fn rule(&self, pattern: &str) -> String {
        self.tool_scope_rule.replace("{}", pattern)
    }
}

/// A bearer token as presented; its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    pub fn new(token: &str) -> Self {
        Self(token.to_owned())
    }

    /// The token itself, for a token exchange.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("BearerToken(..)")
    }
}

/// What authentication established about the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authenticated {
    /// The token's `sub`, or the API key's name.
    pub subject: Option<String>,
    pub scopes: Vec<String>,
    /// The bearer token itself, when it is an OAuth one: what the
    /// gateway's token exchange trades; never passed upstream as is.
    pub token: Option<BearerToken>,
}

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// No `Authorization: Bearer` credential.
    Missing,
    /// A credential that is not valid; the reason never holds the token.
    Invalid(String),
    /// A valid token without the scopes every request needs.
    InsufficientScope(Vec<String>),
    /// A valid token without the scopes the tool called needs.
    ToolScope {
        tool: String,
        missing: MissingScopes,
    },
    /// The issuer's keys could not be had, so no token can be checked.
    Unavailable(String),
}

impl Rejection {
    /// How the metrics count it.
    pub fn refused(&self) -> crate::metrics::Refused {
        match self {
            Rejection::InsufficientScope(_) | Rejection::ToolScope { .. } => {
                crate::metrics::Refused::Scope
            }
            Rejection::Missing | Rejection::Invalid(_) | Rejection::Unavailable(_) => {
                crate::metrics::Refused::Auth
            }
        }
    }
}

/// The scopes a tool needs that a token lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingScopes {
    /// The `toolScopes` pattern that asks for them.
    pub pattern: String,
    /// Every scope the pattern asks for.
    pub needed: Vec<String>,
    /// Those of `needed` the token lacks.
    pub missing: Vec<String>,
}

/// The authentication in force, built from its settings.
#[derive(Debug)]
pub struct Auth {
    mode: Mode,
    naming: Naming,
}

#[derive(Debug)]
enum Mode {
    /// No authentication (loopback only, or `"auth": "none"`).
    Open,
    Keys(Vec<ApiKey>),
    OAuth(Box<OAuth>),
}

#[derive(Debug)]
struct OAuth {
    settings: OAuthSettings,
    verifier: jwt::Verifier,
    tool_scopes: Vec<(GlobMatcher, Vec<String>, String)>,
}

impl Auth {
    /// The authentication `settings` ask for; `http` fetches an OAuth
    /// issuer's metadata and key set (the caller's client, with the trust
    /// and proxies of the rest of nexo: nexo_client::http::client_builder).
    pub fn new(settings: &AuthSettings, naming: Naming, http: reqwest::Client) -> Arc<Self> {
        let mode = match settings {
            AuthSettings::Unset | AuthSettings::None => Mode::Open,
            AuthSettings::ApiKeys(keys) => Mode::Keys(keys.clone()),
            AuthSettings::OAuth(oauth) => Mode::OAuth(Box::new(OAuth {
                verifier: jwt::Verifier::new(oauth, naming.noun, http),
                tool_scopes: oauth
                    .tool_scopes
                    .iter()
                    .map(|(glob, scopes)| {
                        (
                            glob.compile_matcher(),
                            scopes.clone(),
                            glob.glob().to_owned(),
                        )
                    })
                    .collect(),
                settings: oauth.clone(),
            })),
        };
        Arc::new(Self { mode, naming })
    }

    /// Whether requests are let in without a credential.
    pub fn is_open(&self) -> bool {
        matches!(self.mode, Mode::Open)
    }

    /// Checks the request's credential: `Ok(None)` when nothing is
    /// asked of callers.
    pub async fn check(&self, headers: &HeaderMap) -> Result<Option<Authenticated>, Rejection> {
        let presented = || bearer(headers).ok_or(Rejection::Missing);
        match &self.mode {
            Mode::Open => Ok(None),
            Mode::Keys(keys) => {
                let presented = presented()?;
                let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
                // Every key is compared, so the time taken says nothing of
                // which one came close.
                let mut found = None;
                for key in keys {
                    if bool::from(key.digest.ct_eq(&digest)) {
                        found = Some(key);
                    }
                }
                match found {
                    Some(key) => Ok(Some(Authenticated {
                        subject: Some(key.name.clone()),
                        scopes: key.scopes.clone(),
                        token: None,
                    })),
                    None => Err(Rejection::Invalid(format!(
                        "the API key is not one of the {}'s",
                        self.naming.noun
                    ))),
                }
            }
            Mode::OAuth(oauth) => {
                let presented = presented()?;
                let identity = oauth.verifier.verify(presented).await?;
                let missing: Vec<String> = oauth
                    .settings
                    .required_scopes
                    .iter()
                    .filter(|scope| !identity.scopes.contains(scope))
                    .cloned()
                    .collect();
                if !missing.is_empty() {
                    return Err(Rejection::InsufficientScope(missing));
                }
                Ok(Some(identity))
            }
        }
    }

    /// Whether some tool needs scopes of its own (`toolScopes`).
    pub fn has_tool_scopes(&self) -> bool {
        matches!(&self.mode, Mode::OAuth(oauth) if !oauth.tool_scopes.is_empty())
    }

    /// The scopes the tool `tool` (the gateway's federated `server__tool`)
    /// needs that `scopes` lacks; `None` when nothing is missing.
    pub fn missing_tool_scopes(&self, scopes: &[String], federated: &str) -> Option<MissingScopes> {
        let Mode::OAuth(oauth) = &self.mode else {
            return None;
        };
        oauth.tool_scopes.iter().find_map(|(glob, needed, shown)| {
            if !glob.is_match(federated) {
                return None;
            }
            let missing: Vec<String> = needed
                .iter()
                .filter(|scope| !scopes.contains(scope))
                .cloned()
                .collect();
            (!missing.is_empty()).then(|| MissingScopes {
                pattern: shown.clone(),
                needed: needed.clone(),
                missing,
            })
        })
    }

    /// The answer to a `GET` of the Protected Resource Metadata at `path`,
    /// public by RFC 9728 whatever the mode: the document when this is an
    /// OAuth resource server, else 404 (static tokens name no
    /// authorization server). `None` for any other path.
    pub fn metadata(&self, path: &str) -> Option<Response> {
        if path != METADATA_PATH && !path.starts_with(&format!("{METADATA_PATH}/")) {
            return None;
        }
        let Mode::OAuth(oauth) = &self.mode else {
            let document = json!({
                "error": "not_found",
                "error_description": "this server takes static tokens and names no authorization server",
            });
            return Some(json_response(StatusCode::NOT_FOUND, &document));
        };
        let settings = &oauth.settings;
        let mut scopes: Vec<&str> = settings
            .required_scopes
            .iter()
            .map(String::as_str)
            .collect();
        for (_, needed, _) in &oauth.tool_scopes {
            scopes.extend(needed.iter().map(String::as_str));
        }
        scopes.sort_unstable();
        scopes.dedup();
        let document = json!({
            "resource": settings.audience,
            "authorization_servers": [settings.issuer],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": format!("nexo {}", self.naming.noun),
        });
        let mut response = json_response(StatusCode::OK, &document);
        response.headers_mut().insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        Some(response)
    }

    /// The answer to a rejected request: 401 (or 403 for missing scopes)
    /// with a `WWW-Authenticate` challenge that points an OAuth client to
    /// the Protected Resource Metadata. A tool's missing scopes ask for
    /// the scopes every request needs and those of the tool together, so
    /// that the token the client gets next serves both (the step-up of
    /// the MCP authorization specification).
    pub fn challenge(&self, rejection: &Rejection) -> Response {
        let mut params = Vec::new();
        let (status, error, description) = match rejection {
            Rejection::Missing => (
                StatusCode::UNAUTHORIZED,
                None,
                format!(
                    "this {} needs `Authorization: Bearer` with a token (or API key)",
                    self.naming.noun
                ),
            ),
            Rejection::Invalid(reason) => (
                StatusCode::UNAUTHORIZED,
                Some("invalid_token"),
                reason.clone(),
            ),
            Rejection::InsufficientScope(missing) => (
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                format!(
                    "the token lacks the scope{} {}",
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(" ")
                ),
            ),
            Rejection::ToolScope { tool, missing } => (
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                format!(
                    "the tool `{tool}` needs the scope{} {} the token lacks (rule `{}`); ask \
                     the authorization server for a token with the scopes of this challenge",
                    if missing.missing.len() == 1 { "" } else { "s" },
                    missing.missing.join(" "),
                    self.naming.rule(&missing.pattern),
                ),
            ),
            Rejection::Unavailable(reason) => {
                tracing::warn!(%reason, "a token could not be checked");
                return json_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &json!({"error": "temporarily_unavailable", "error_description": reason}),
                );
            }
        };
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
            params.push(format!("error_description=\"{}\"", quoted(&description)));
        }
        match &self.mode {
            Mode::OAuth(oauth) => {
                let scope = match rejection {
                    Rejection::InsufficientScope(_) | Rejection::Missing
                        if !oauth.settings.required_scopes.is_empty() =>
                    {
                        Some(oauth.settings.required_scopes.join(" "))
                    }
                    Rejection::ToolScope { missing, .. } => {
                        let mut scopes = oauth.settings.required_scopes.clone();
                        for scope in &missing.needed {
                            if !scopes.contains(scope) {
                                scopes.push(scope.clone());
                            }
                        }
                        Some(scopes.join(" "))
                    }
                    _ => None,
                };
                if let Some(scope) = scope {
                    params.push(format!("scope=\"{}\"", quoted(&scope)));
                }
                params.push(format!(
                    "resource_metadata=\"{}\"",
                    metadata_url(&oauth.settings.audience)
                ));
            }
            _ => params.insert(0, format!("realm=\"nexo-{}\"", self.naming.noun)),
        }
        let mut response = json_response(
            status,
            &json!({"error": error.unwrap_or("unauthorized"), "error_description": description}),
        );
        let challenge = if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// Who may call, as the command line says it (`nexo serve`, `nexo
/// gateway`).
#[derive(Debug, Clone, Default)]
pub struct AuthFlags {
    /// `--token-file`.
    pub token_file: Option<std::path::PathBuf>,
    /// `--auth-issuer`.
    pub issuer: Option<String>,
    /// `--auth-audience`.
    pub audience: Option<String>,
    /// `--auth-scopes`.
    pub scopes: Option<std::path::PathBuf>,
    /// `--no-auth`.
    pub none: bool,
}

impl AuthFlags {
    /// Whether any flag was given.
    pub fn given(&self) -> bool {
        self.token_file.is_some()
            || self.issuer.is_some()
            || self.audience.is_some()
            || self.scopes.is_some()
            || self.none
    }

    /// The settings the flags make: [`AuthSettings::Unset`] when none was
    /// given.
    pub fn settings(&self) -> Result<AuthSettings, String> {
        match self {
            Self {
                none: true,
                token_file: None,
                issuer: None,
                audience: None,
                scopes: None,
            } => Ok(AuthSettings::None),
            Self { none: true, .. } => {
                Err("`--no-auth` leaves the server open; give it alone".to_owned())
            }
            Self {
                token_file: Some(path),
                issuer: None,
                audience: None,
                scopes: None,
                ..
            } => read_token_file(path).map(AuthSettings::ApiKeys),
            Self {
                token_file: Some(_),
                ..
            } => Err(
                "`--token-file` and `--auth-issuer`/`--auth-audience`/`--auth-scopes` are two \
                 ways of saying who may call; give one"
                    .to_owned(),
            ),
            Self {
                issuer: Some(issuer),
                audience: Some(audience),
                scopes,
                ..
            } => {
                let ScopesFile {
                    required_scopes: required,
                    tool_scopes: tools,
                } = match scopes {
                    Some(path) => ScopesFile::read(path)?,
                    None => ScopesFile::default(),
                };
                OAuthSettings::new(
                    issuer,
                    audience,
                    None,
                    required,
                    tools,
                    ["--auth-issuer", "--auth-audience", "jwksUri", "toolScopes"],
                )
                .map(AuthSettings::OAuth)
            }
            Self {
                issuer: None,
                audience: None,
                scopes: None,
                ..
            } => Ok(AuthSettings::Unset),
            Self {
                scopes: Some(_),
                issuer: None,
                audience: None,
                ..
            } => Err(
                "`--auth-scopes` says which scopes OAuth tokens need; give it with \
                 `--auth-issuer` and `--auth-audience`"
                    .to_owned(),
            ),
            _ => Err("`--auth-issuer` and `--auth-audience` go together".to_owned()),
        }
    }
}

/// How `nexo serve` names itself and its tool scope rules.
pub const SERVER: Naming = Naming {
    noun: "server",
    tool_scope_rule: "toolScopes[{}]",
};

/// How to make a line of a token file, for messages and `--help`.
pub const TOKEN_FILE_HINT: &str = "printf %s \"$TOKEN\" | sha256sum >> FILE";

/// Reads a token file (`--token-file`): one SHA-256 digest a line (64
/// hexadecimal digits), optionally followed by the caller's name (the
/// subject); `#` comments and blank lines allowed. What `sha256sum` writes
/// (`DIGEST  -`) is a valid line. A line that is no digest, a token in
/// clear most likely, is refused with the way to make one.
pub fn read_token_file(path: &std::path::Path) -> Result<Vec<ApiKey>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read the token file `{}`: {error}", path.display()))?;
    let mut keys = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        let Some(digest) = parse_digest(first) else {
            return Err(format!(
                "line {} of the token file `{}` is not a SHA-256 digest (64 hexadecimal \
                 digits); a token is never stored in clear: store its digest, made with \
                 `{TOKEN_FILE_HINT}`",
                number + 1,
                path.display()
            ));
        };
        let name = match words.next() {
            Some(name) if name != "-" => name.to_owned(),
            _ => format!("token-{}", &first[..8].to_ascii_lowercase()),
        };
        keys.push(ApiKey {
            name,
            digest,
            scopes: Vec::new(),
        });
    }
    if keys.is_empty() {
        return Err(format!(
            "the token file `{}` holds no digest; add one with `{TOKEN_FILE_HINT}`",
            path.display()
        ));
    }
    Ok(keys)
}

/// A SHA-256 digest written as 64 hexadecimal digits.
pub fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(digest)
}

/// An `https` URL, or `http` to a loopback host (a local issuer, tests);
/// `field` names it in the error.
pub fn web_url(field: &str, written: &str) -> Result<url::Url, String> {
    let url =
        url::Url::parse(written).map_err(|error| format!("`{field}` `{written}`: {error}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(format!(
            "`{field}` `{written}` must be an https URL (http only to a loopback host)"
        )),
    }
}

impl OAuthSettings {
    /// Checked settings: `issuer` and `audience` web URLs (`audience`
    /// without a fragment), each tool scope pattern a glob. `names` says
    /// how each field is written where it came from (`issuer`,
    /// `--auth-issuer`).
    pub fn new(
        issuer: &str,
        audience: &str,
        jwks_uri: Option<&str>,
        required_scopes: Vec<String>,
        tool_scopes: impl IntoIterator<Item = (String, Vec<String>)>,
        names: [&str; 4],
    ) -> Result<Self, String> {
        let [issuer_name, audience_name, jwks_name, scopes_name] = names;
        web_url(issuer_name, issuer)?;
        let checked = web_url(audience_name, audience)?;
        if checked.fragment().is_some() {
            return Err(format!(
                "`{audience_name}` is the canonical URI of this server and has no fragment"
            ));
        }
        let jwks_uri = jwks_uri.map(|uri| web_url(jwks_name, uri)).transpose()?;
        let mut globs = Vec::new();
        for (pattern, scopes) in tool_scopes {
            let glob = globset::Glob::new(&pattern).map_err(|error| {
                format!("`{scopes_name}` pattern `{pattern}`: {}", error.kind())
            })?;
            globs.push((glob, scopes));
        }
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            jwks_uri,
            required_scopes,
            tool_scopes: globs,
        })
    }
}

/// The scopes file of `--auth-scopes`, in the words of the gateway's
/// `auth.oauth`:
/// `{"requiredScopes": ["mcp"], "toolScopes": {"encode": ["morse:write"]}}`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScopesFile {
    pub required_scopes: Vec<String>,
    /// Tool name patterns (globs) and their scopes.
    pub tool_scopes: Vec<(String, Vec<String>)>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ScopesJson {
    #[serde(default)]
    required_scopes: Vec<String>,
    #[serde(default)]
    tool_scopes: std::collections::BTreeMap<String, Vec<String>>,
}

impl ScopesFile {
    /// Reads a JSON scopes file.
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            format!("cannot read the scopes file `{}`: {error}", path.display())
        })?;
        let file: ScopesJson = serde_json::from_str(&text)
            .map_err(|error| format!("the scopes file `{}`: {error}", path.display()))?;
        Ok(Self {
            required_scopes: file.required_scopes,
            tool_scopes: file.tool_scopes.into_iter().collect(),
        })
    }
}

/// Where the Protected Resource Metadata of `resource` is, by RFC 9728's
/// rule: the well-known path put between the host and the resource's path.
pub fn metadata_url(resource: &str) -> String {
    match url::Url::parse(resource) {
        Ok(url) => {
            let path = url.path().trim_end_matches('/');
            format!(
                "{}{METADATA_PATH}{path}",
                url.origin().ascii_serialization()
            )
        }
        // Checked when the settings were read.
        Err(_) => METADATA_PATH.to_owned(),
    }
}

/// The credential of an `Authorization: Bearer` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    let credential = credential.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !credential.is_empty()).then_some(credential)
}

/// `text` made safe inside a quoted-string of a header.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .map(|c| if c == '"' || c == '\\' { '\'' } else { c })
        .collect()
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An HTTP client for the unit tests' fetches (plain HTTP on loopback).
#[cfg(test)]
pub(crate) fn tests_http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_takes_the_resource_path() {
        assert_eq!(
            metadata_url("https://gw.example.com/mcp"),
            "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8000/"),
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn api_keys_are_compared_by_digest() {
        let digest: [u8; 32] = Sha256::digest(b"k3y-for-the-gateway-tests").into();
        let auth = Auth::new(
            &AuthSettings::ApiKeys(vec![ApiKey {
                name: "ci".to_owned(),
                digest,
                scopes: vec!["tools".to_owned()],
            }]),
            SERVER,
            tests_http(),
        );
        let mut headers = HeaderMap::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(auth.check(&headers)), Err(Rejection::Missing));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer k3y-for-the-gateway-tests"),
        );
        let found = rt.block_on(auth.check(&headers)).unwrap().unwrap();
        assert_eq!(found.subject.as_deref(), Some("ci"));
        assert_eq!(found.scopes, ["tools"]);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer wrong"),
        );
        assert!(matches!(
            rt.block_on(auth.check(&headers)),
            Err(Rejection::Invalid(_))
        ));
    }

    #[test]
    fn a_token_file_holds_digests_and_refuses_a_token_in_clear() {
        let dir = std::env::temp_dir().join(format!("nexo-token-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens");
        let alice = hex(&Sha256::digest(b"alice's token"));
        let bob = hex(&Sha256::digest(b"bob's token"));
        std::fs::write(&path, format!("# callers\n\n{alice}  -\n{bob}  bob\n")).unwrap();
        let keys = read_token_file(&path).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].name, format!("token-{}", &alice[..8]));
        assert_eq!(keys[1].name, "bob");
        assert_eq!(hex(&keys[1].digest), bob);

        std::fs::write(&path, "alice's token\n").unwrap();
        let error = read_token_file(&path).unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("sha256sum"),
            "{error}"
        );
        assert!(!error.contains("alice's token"), "{error}");
        std::fs::write(&path, "# nothing yet\n").unwrap();
        assert!(
            read_token_file(&path)
                .unwrap_err()
                .contains("holds no digest")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    #[test]
    fn the_flags_say_one_thing_or_are_refused() {
        assert_eq!(
            AuthFlags::default().settings().unwrap(),
            AuthSettings::Unset
        );
        let none = AuthFlags {
            none: true,
            ..AuthFlags::default()
        };
        assert_eq!(none.settings().unwrap(), AuthSettings::None);
        let oauth = AuthFlags {
            issuer: Some("http://127.0.0.1:9000".to_owned()),
            audience: Some("https://morse.example.com/mcp".to_owned()),
            ..AuthFlags::default()
        };
        let AuthSettings::OAuth(settings) = oauth.settings().unwrap() else {
            panic!("not OAuth");
        };
        assert_eq!(settings.audience, "https://morse.example.com/mcp");
        let both = AuthFlags {
            token_file: Some("tokens".into()),
            ..oauth.clone()
        };
        assert!(both.settings().unwrap_err().contains("give one"));
        let plain = AuthFlags {
            issuer: Some("http://auth.example.com".to_owned()),
            ..oauth
        };
        assert!(plain.settings().unwrap_err().contains("https"));
        let scopes_alone = AuthFlags {
            scopes: Some("scopes.json".into()),
            ..AuthFlags::default()
        };
        assert!(
            scopes_alone
                .settings()
                .unwrap_err()
                .contains("--auth-issuer")
        );
    }
}
