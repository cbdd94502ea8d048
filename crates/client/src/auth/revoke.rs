//! Logging out of a server (`nexo logout`): every token record kept for it
//! is revoked at the authorization server that minted it (RFC 7009), then
//! deleted. The record is deleted whatever the revocation's outcome, since
//! that is what the person asked for; the outcome says whether the tokens
//! are dead at the server too or stay valid there until they expire.
//!
//! The authorization server is found from the issuer the record names
//! (RFC 8414 and OpenID Connect discovery through rmcp), not from the MCP
//! server, which may be gone by the time its user logs out.

use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadataSource, CredentialStore,
};
use serde_json::Value;

use nexo_hint::{Exit, Hint, Hinted};

use super::store::TokenStore;
use crate::secret::Secret;

/// Tokens deleted here that the authorization server did not revoke,
/// although it offers revocation: they stay valid there.
#[derive(Debug, thiserror::Error)]
#[error("the tokens were deleted here but not revoked: {reason}")]
pub struct NotRevoked {
    pub reason: String,
}

impl Hinted for NotRevoked {
    fn code(&self) -> &'static str {
        "revocation_failed"
    }

    fn exit(&self) -> Exit {
        Exit::Unreachable
    }

    fn hint(&self) -> Option<Hint> {
        Some(Hint::new(
            "they stay valid at the authorization server until they expire; revoke them there \
             (its account or application settings) if they may have leaked",
        ))
    }
}

/// What became of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedOut {
    /// The authorization server that minted the tokens.
    pub issuer: String,
    pub revocation: Revocation,
}

/// Whether the authorization server was told to forget the tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revocation {
    /// Revoked: the kinds of token sent (`refresh_token`, `access_token`).
    Revoked(Vec<&'static str>),
    /// The authorization server offers no revocation (its metadata names no
    /// `revocation_endpoint`, or it publishes none): the tokens stay valid
    /// there until they expire.
    NotOffered(String),
    /// It offers revocation and refused it, or could not be reached.
    Failed(String),
}

/// Revokes and deletes every record kept for `resource` (the server's URL
/// as it was given when the tokens were obtained). `client_secret` is that
/// of a confidential client registered out of band; a public client (every
/// dynamically registered one) authenticates with its id alone. Fails only
/// when the store cannot be read or a record cannot be deleted.
pub async fn log_out(
    store: &TokenStore,
    resource: &str,
    client_secret: Option<&Secret>,
    timeout: Duration,
) -> Result<Vec<LoggedOut>, AuthError> {
    let mut done = Vec::new();
    for (issuer, entry) in store.records_for(resource)? {
        let revocation = match entry.load().await? {
            Some(credentials) => {
                let tokens = serde_json::to_value(&credentials.token_response).unwrap_or_default();
                revoke(
                    &issuer,
                    &credentials.client_id,
                    client_secret,
                    &tokens,
                    timeout,
                )
                .await
            }
            None => Revocation::NotOffered("the record held no token".to_owned()),
        };
        entry.clear().await?;
        done.push(LoggedOut { issuer, revocation });
    }
    Ok(done)
}

/// Sends the refresh token, then the access token, to `issuer`'s
/// revocation endpoint. The refresh token goes first: revoking it ends the
/// grant, and with it, at most servers, the access tokens (RFC 7009 §2.1).
async fn revoke(
    issuer: &str,
    client_id: &str,
    client_secret: Option<&Secret>,
    tokens: &Value,
    timeout: Duration,
) -> Revocation {
    let metadata = match AuthorizationManager::new(issuer).await {
        Ok(manager) => manager.resolve_metadata().await,
        Err(error) => Err(error),
    };
    let metadata = match metadata {
        Ok(resolution)
            if resolution.source != AuthorizationMetadataSource::LegacyEndpointFallback =>
        {
            resolution.metadata
        }
        Ok(_) => {
            return Revocation::NotOffered(format!(
                "`{issuer}` publishes no authorization server metadata"
            ));
        }
        Err(error) => {
            return Revocation::Failed(format!("cannot read the metadata of `{issuer}`: {error}"));
        }
    };
    let Some(endpoint) = metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(Value::as_str)
    else {
        return Revocation::NotOffered(format!("`{issuer}` names no revocation endpoint"));
    };
    let secret_in_body = metadata
        .additional_fields
        .get("revocation_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .is_some_and(|methods| {
            let named = |method: &str| methods.iter().any(|m| m.as_str() == Some(method));
            named("client_secret_post") && !named("client_secret_basic")
        });
    let client = match crate::http::client_builder(timeout)
        .timeout(timeout)
        .build()
    {
        Ok(client) => client,
        Err(error) => return Revocation::Failed(format!("cannot build the HTTP client: {error}")),
    };
    let mut sent = Vec::new();
    for kind in ["refresh_token", "access_token"] {
        let Some(token) = tokens[kind].as_str() else {
            continue;
        };
        let mut form = vec![("token", token), ("token_type_hint", kind)];
        let mut request = client.post(endpoint);
        match client_secret {
            Some(secret) if secret_in_body => {
                form.push(("client_id", client_id));
                form.push(("client_secret", secret.expose()));
            }
            Some(secret) => request = request.basic_auth(client_id, Some(secret.expose())),
            None => form.push(("client_id", client_id)),
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&form)
            .finish();
        let request = request
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        match request.send().await {
            // RFC 7009 §2.2: 200 whether or not the token was still valid.
            Ok(answer) if answer.status().is_success() => sent.push(kind),
            Ok(answer) => {
                let status = answer.status();
                let body = answer.text().await.unwrap_or_default();
                let error = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|body| body["error"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| status.to_string());
                return Revocation::Failed(format!(
                    "`{endpoint}` refused to revoke the {}: {error}",
                    kind.replace('_', " ")
                ));
            }
            Err(error) => {
                return Revocation::Failed(format!(
                    "cannot reach `{endpoint}`: {}",
                    crate::classify::innermost(&error)
                ));
            }
        }
    }
    Revocation::Revoked(sent)
}
