//! Who may call the gateway: the OAuth 2.1 resource server of the MCP
//! authorization specification, or static API keys as a simple mode. It
//! knows HTTP headers and tokens, nothing of MCP messages.
//!
//! [`Auth`] checks each request's `Authorization: Bearer` credential before
//! any endpoint sees it ([`crate::app::GatewayApp`]): a JWT by its
//! signature against the issuer's keys ([`jwt`]), its issuer, its audience
//! (the gateway's canonical URI), its lifetime and the scopes every request
//! needs; or an API key by its SHA-256 digest, compared in constant time.
//! What it establishes, [`Authenticated`], rides in the request's
//! extensions to the policy and the audit log. It answers the Protected
//! Resource Metadata document (RFC 9728) and the 401 and 403 challenges
//! that point clients to it. The inbound token goes no further: upstreams
//! are reached with their own configured credentials only.
//!
//! Scopes a tool needs (`toolScopes`) are found by
//! [`Auth::missing_tool_scopes`]. A `tools/call` over Streamable HTTP is
//! read before any endpoint sees it ([`crate::app::GatewayApp`]) and one
//! whose tool needs a scope the token lacks gets the step-up challenge:
//! 403 with `error="insufficient_scope"` and the scopes to ask for
//! ([`Rejection::ToolScope`]). Where no HTTP status can answer a call (the
//! legacy SSE transport answers on its stream), the server refuses it as
//! a policy denial instead (a tool error naming the scope).

pub mod jwt;

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use globset::GlobMatcher;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::settings::{ApiKey, AuthSettings, OAuthSettings};

/// Where the Protected Resource Metadata is served (RFC 9728), and the
/// prefix of its path-suffixed forms.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What authentication established about the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authenticated {
    /// The token's `sub`, or the API key's name.
    pub subject: Option<String>,
    pub scopes: Vec<String>,
    /// The bearer token itself, when it is an OAuth one: what a token
    /// exchange trades ([`crate::exchange`]); never passed upstream as is.
    pub token: Option<nexo_client::Secret>,
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

/// The gateway's authentication, built from its settings.
#[derive(Debug)]
pub struct Auth {
    mode: Mode,
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
    pub fn new(settings: &AuthSettings) -> Arc<Self> {
        let mode = match settings {
            AuthSettings::Unset | AuthSettings::None => Mode::Open,
            AuthSettings::ApiKeys(keys) => Mode::Keys(keys.clone()),
            AuthSettings::OAuth(oauth) => Mode::OAuth(Box::new(OAuth {
                verifier: jwt::Verifier::new(oauth),
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
        Arc::new(Self { mode })
    }

    /// No authentication at all.
    pub fn open() -> Arc<Self> {
        Arc::new(Self { mode: Mode::Open })
    }

    /// Whether requests are let in without a credential.
    pub fn is_open(&self) -> bool {
        matches!(self.mode, Mode::Open)
    }

    /// Checks the request's credential: `Ok(None)` when the gateway is
    /// open.
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
                    None => Err(Rejection::Invalid(
                        "the API key is not one of the gateway's".to_owned(),
                    )),
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

    /// The scopes the federated tool `server__tool` needs that `scopes`
    /// lacks; `None` when nothing is missing.
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

    /// The Protected Resource Metadata document, for a `GET` of `path`
    /// when the gateway is an OAuth resource server.
    pub fn metadata(&self, path: &str) -> Option<Response> {
        let Mode::OAuth(oauth) = &self.mode else {
            return None;
        };
        if path != METADATA_PATH && !path.starts_with(&format!("{METADATA_PATH}/")) {
            return None;
        }
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
            "resource_name": "nexo gateway",
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
                "this gateway needs `Authorization: Bearer` with a token (or API key)".to_owned(),
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
                    "the tool `{tool}` needs the scope{} {} the token lacks (rule \
                     `auth.oauth.toolScopes[{}]`); ask the authorization server for a token \
                     with the scopes of this challenge",
                    if missing.missing.len() == 1 { "" } else { "s" },
                    missing.missing.join(" "),
                    missing.pattern,
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
            _ => params.insert(0, "realm=\"nexo-gateway\"".to_owned()),
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
        let auth = Auth::new(&AuthSettings::ApiKeys(vec![ApiKey {
            name: "ci".to_owned(),
            digest,
            scopes: vec!["tools".to_owned()],
        }]));
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
}
