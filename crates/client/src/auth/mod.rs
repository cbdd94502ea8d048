//! OAuth 2.1 for HTTP targets, driven by what the server says: a 401 starts
//! authorization, a 403 `insufficient_scope` steps the scopes up, and the
//! request that met either is sent again with the new token.
//!
//! The protocol pieces are rmcp's (`rmcp::transport::auth`): Protected
//! Resource Metadata and authorization-server metadata discovery with their
//! fallbacks, PKCE S256 (refusing servers that advertise methods without
//! it), RFC 8707 resource indicators with resource-mismatch detection,
//! Client ID Metadata Documents, dynamic registration, pre-registered
//! clients, token-endpoint authentication as advertised, scope selection and
//! `offline_access`, RFC 9207 `iss` checks, and token refresh. What is here
//! is what rmcp leaves to its caller: [`OAuthHttp`], the HTTP client that
//! decides when to authorize and retries; the [`agent`]s that carry the
//! authorization URL to the server and the redirect back; the per-issuer
//! [`store`] that keeps tokens between runs (refreshes locked across
//! processes); and logging out, [`revoke`].

pub mod agent;
pub mod revoke;
pub mod store;

use std::fmt;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, WWWAuthenticateParams,
};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use url::Url;

pub use self::agent::{AuthorizationAgent, DeferredAgent, HeadlessAgent, LoopbackAgent};
pub use self::store::TokenStore;
use crate::forward::{Exchanged, Forward, HttpError, Layer, Unseen};
use crate::http::RetryingHttp;
pub use crate::secret::Secret;

/// How many authorizations (a 401's, then 403 step-ups) one request may
/// cause before its failure is final: a server that keeps refusing every
/// token must not loop the client forever.
pub const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3;

/// Who nexo is to an authorization server. With none of the optional parts
/// nexo registers itself dynamically (RFC 7591).
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    /// The `client_name` sent in dynamic registration.
    pub name: String,
    /// A client registered out of band.
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    /// An HTTPS URL serving nexo's Client ID Metadata Document, used as the
    /// client id where the server advertises support for it.
    pub metadata_url: Option<String>,
}

impl Default for ClientIdentity {
    fn default() -> Self {
        Self {
            name: "nexo".into(),
            client_id: None,
            client_secret: None,
            metadata_url: None,
        }
    }
}

/// Everything OAuth needs from the caller.
#[derive(Clone)]
pub struct OAuthOptions {
    pub store: TokenStore,
    pub agent: Arc<dyn AuthorizationAgent>,
    pub identity: ClientIdentity,
}

impl OAuthOptions {
    /// OAuth whose authorization URLs `agent` carries, with tokens kept in
    /// `store`; nexo registers itself dynamically unless told otherwise.
    pub fn new(store: TokenStore, agent: Arc<dyn AuthorizationAgent>) -> Self {
        Self {
            store,
            agent,
            identity: ClientIdentity::default(),
        }
    }

    /// A client registered out of band, with its secret for confidential
    /// clients.
    pub fn with_client(mut self, client_id: Option<String>, secret: Option<Secret>) -> Self {
        self.identity.client_id = client_id;
        self.identity.client_secret = secret;
        self
    }

    /// A Client ID Metadata Document's URL, used as the client id where the
    /// authorization server supports it.
    pub fn with_metadata_url(mut self, url: Option<String>) -> Self {
        self.identity.metadata_url = url;
        self
    }

    /// These options for `target`, or `None` where OAuth does not apply: a
    /// stdio target, or a URL target that brings its own `Authorization`.
    pub fn for_target(self, target: &crate::Target) -> Option<Self> {
        match target {
            crate::Target::Url { headers, .. }
                if !headers
                    .iter()
                    .any(|header| header.name() == http::header::AUTHORIZATION) =>
            {
                Some(self)
            }
            _ => None,
        }
    }
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("store", &self.store)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// The HTTP client for a target that may require authorization: rmcp's
/// [`AuthClient`] (which attaches the token and refreshes it once when the
/// server rejects it) around [`RetryingHttp`], plus the decisions rmcp leaves
/// open: authorize on a 401, step up on a 403, and send the request again.
pub type OAuthHttp = Forward<Authorizing>;

/// What [`OAuthHttp`] does around rmcp's `AuthClient` (see [`Layer`]).
#[derive(Clone)]
pub struct Authorizing {
    inner: Unseen<AuthClient<RetryingHttp>>,
    resource: Arc<str>,
    options: Arc<OAuthOptions>,
    /// One authorization at a time, whatever the number of requests waiting.
    flow: Arc<tokio::sync::Mutex<()>>,
    /// True while the agent has the authorization URL (a person may be in
    /// a browser): time limits do not run then.
    agent_busy: Arc<tokio::sync::watch::Sender<bool>>,
}

/// Marks the agent busy for as long as it lives.
struct Busy<'a>(&'a tokio::sync::watch::Sender<bool>);

impl<'a> Busy<'a> {
    fn new(flag: &'a tokio::sync::watch::Sender<bool>) -> Self {
        flag.send_replace(true);
        Self(flag)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

impl fmt::Debug for Authorizing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthHttp")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// Why the server asked again, as the next authorization needs it.
enum Refusal {
    /// 401: no token, or one the server no longer accepts.
    Unauthorized(Option<String>),
    /// 403 `insufficient_scope`: the token lacks a scope.
    InsufficientScope(String),
}

fn refusal(error: &HttpError) -> Option<Refusal> {
    match error {
        StreamableHttpError::AuthRequired(challenge) => Some(Refusal::Unauthorized(Some(
            challenge.www_authenticate_header.clone(),
        ))),
        StreamableHttpError::InsufficientScope(challenge) => Some(Refusal::InsufficientScope(
            challenge.www_authenticate_header.clone(),
        )),
        // A 401 without `WWW-Authenticate` is an unexpected response, as
        // rmcp makes it; only its error comes up through rmcp's
        // `AuthClient`, so its status is read back from what
        // `streamable` wrote there.
        StreamableHttpError::UnexpectedServerResponse(message)
            if crate::streamable::status_of_unexpected(message) == Some(401) =>
        {
            Some(Refusal::Unauthorized(None))
        }
        _ => None,
    }
}

/// The scopes a 403 challenge asks for (RFC 6750 §3.1).
pub fn challenged_scope(www_authenticate: &str, resource: &Url) -> Option<String> {
    let params = WWWAuthenticateParams::parse(www_authenticate, resource);
    params.scope.filter(|scope| !scope.trim().is_empty())
}

/// The issuer whose tokens these are: the metadata's `issuer`, or the
/// authorization endpoint's origin for servers that publish none (the
/// 2025-03-26 default endpoints).
fn issuer_of(metadata: &AuthorizationMetadata) -> String {
    if let Some(issuer) = &metadata.issuer {
        return issuer.clone();
    }
    Url::parse(&metadata.authorization_endpoint)
        .map(|url| url.origin().ascii_serialization())
        .unwrap_or_else(|_| metadata.authorization_endpoint.clone())
}

impl OAuthHttp {
    /// `agent_busy` is set while the agent has the authorization URL.
    pub async fn new(
        http: RetryingHttp,
        resource: &str,
        options: OAuthOptions,
        agent_busy: Arc<tokio::sync::watch::Sender<bool>>,
    ) -> Result<Self, AuthError> {
        let manager = AuthorizationManager::new(resource).await?;
        Ok(Forward(Authorizing {
            inner: Unseen(AuthClient::new(http, manager)),
            resource: resource.into(),
            options: Arc::new(options),
            flow: Arc::default(),
            agent_busy,
        }))
    }

    /// Follows whether the authorization agent has the authorization URL
    /// (a person may be in a browser), so that time limits can pause.
    pub fn agent_busy(&self) -> tokio::sync::watch::Receiver<bool> {
        self.0.agent_busy.subscribe()
    }
}

impl Authorizing {
    /// Runs `call`, authorizing and calling again while the server refuses
    /// and the per-request budget lasts.
    async fn authorized<T, F, Fut>(&self, call: F) -> Result<T, HttpError>
    where
        F: Fn() -> Fut + Send,
        Fut: Future<Output = Result<T, HttpError>> + Send,
        T: Send,
    {
        let mut authorizations = 0;
        loop {
            let result = call().await;
            let Err(error) = &result else {
                return result;
            };
            let Some(refusal) = refusal(error) else {
                return result;
            };
            if authorizations >= MAX_AUTHORIZATIONS_PER_REQUEST {
                tracing::warn!(
                    authorizations,
                    "the server still refuses after {MAX_AUTHORIZATIONS_PER_REQUEST} authorizations; giving up"
                );
                return result;
            }
            authorizations += 1;
            match refusal {
                Refusal::Unauthorized(challenge) => self.authorize(challenge.as_deref()).await?,
                Refusal::InsufficientScope(challenge) => self.step_up(&challenge).await?,
            }
        }
    }

    /// After a 401: discover afresh (the server may have moved to another
    /// authorization server), then use a stored token of that issuer that
    /// is not the one just refused, or run the authorization-code flow.
    async fn authorize(&self, challenge: Option<&str>) -> Result<(), AuthError> {
        let _one_at_a_time = self.flow.lock().await;
        let refused = self.inner.0.get_access_token().await.ok();
        let mut manager = AuthorizationManager::new(self.resource.as_ref()).await?;
        let resolution = manager.resolve_metadata_from_challenge(challenge).await?;
        if !resolution.source.is_discovered() {
            tracing::info!("the server publishes no OAuth metadata; trying the default endpoints");
        }
        let issuer = issuer_of(&resolution.metadata);
        tracing::debug!(%issuer, "authorization server discovered");
        manager.set_metadata(resolution.metadata);
        manager.set_credential_store(self.options.store.entry(&issuer, &self.resource));

        if manager.initialize_from_store().await? {
            match manager.get_access_token().await {
                Ok(token) if Some(&token) != refused.as_ref() => {
                    tracing::debug!("using the stored token");
                    return self.install(manager).await;
                }
                _ => {
                    if manager.refresh_token().await.is_ok() {
                        tracing::debug!("refreshed the stored token");
                        return self.install(manager).await;
                    }
                }
            }
        }

        let identity = &self.options.identity;
        let mut request = AuthorizationRequest::new(self.options.agent.redirect_uri().await?)
            .with_client_name(identity.name.clone())
            .with_initial_scope_selection();
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        if let Some(client_id) = &identity.client_id {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &identity.client_secret {
                request = request.with_client_secret(secret.expose());
            }
        }
        if let Some(url) = &identity.metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, error)| error)?;
        let callback = {
            let _busy = Busy::new(&self.agent_busy);
            self.options
                .agent
                .authorize(session.get_authorization_url())
                .await?
        };
        if let Some(error) = agent::redirect_error(&callback) {
            return Err(error);
        }
        session.handle_callback_url(&callback).await?;
        self.install(session.auth_manager).await
    }

    /// After a 403 `insufficient_scope`: authorize again with the scopes
    /// already granted plus those the challenge names, with the same client.
    async fn step_up(&self, challenge: &str) -> Result<(), AuthError> {
        let _one_at_a_time = self.flow.lock().await;
        let resource = Url::parse(&self.resource)?;
        let Some(scope) = challenged_scope(challenge, &resource) else {
            return Err(AuthError::InsufficientScope {
                required_scope: "(the server named none)".into(),
                upgrade_url: None,
            });
        };
        let manager = self.inner.0.auth_manager.lock().await;
        let url = match manager.request_scope_upgrade(&scope).await {
            Ok(url) => url,
            // No client yet (the 403 came before any 401): a full authorization.
            Err(AuthError::InternalError(_)) => {
                drop(manager);
                drop(_one_at_a_time);
                return self.authorize(Some(challenge)).await;
            }
            Err(error) => return Err(error),
        };
        tracing::debug!(%scope, "stepping up the token's scopes");
        let callback_url = {
            let _busy = Busy::new(&self.agent_busy);
            self.options.agent.authorize(&url).await?
        };
        if let Some(error) = agent::redirect_error(&callback_url) {
            return Err(error);
        }
        let callback = AuthorizationCallback::from_redirect_url(&callback_url)?;
        manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await?;
        Ok(())
    }

    async fn install(&self, manager: AuthorizationManager) -> Result<(), AuthError> {
        *self.inner.0.auth_manager.lock().await = manager;
        Ok(())
    }
}

impl Layer for Authorizing {
    type Inner = Unseen<AuthClient<RetryingHttp>>;

    fn inner(&self) -> &Self::Inner {
        &self.inner
    }

    /// Runs `call`, authorizing and sending it again as the server asks.
    /// rmcp's `AuthClient` hands up no answers, so none is handed on.
    async fn run<T, F, Fut>(&self, call: F) -> Exchanged<T>
    where
        T: Send,
        F: Fn() -> Fut + Send,
        Fut: Future<Output = Exchanged<T>> + Send,
    {
        let outcome = self
            .authorized(move || {
                let attempt = call();
                async move { attempt.await.outcome }
            })
            .await;
        Exchanged {
            outcome,
            answer: None,
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("s3cr3t");
        assert!(!format!("{secret} {secret:?}").contains("s3cr3t"));
        let identity = ClientIdentity {
            client_secret: Some(secret),
            ..ClientIdentity::default()
        };
        assert!(!format!("{identity:?}").contains("s3cr3t"));
    }

    #[test]
    fn scopes_from_challenges() {
        let resource = Url::parse("http://127.0.0.1:9/mcp").unwrap();
        let header = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            challenged_scope(header, &resource).as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(challenged_scope(r#"Bearer scope="""#, &resource), None);
        assert_eq!(challenged_scope("Bearer", &resource), None);
    }

    #[test]
    fn issuers_without_metadata_fall_back_to_the_origin() {
        let mut metadata = AuthorizationMetadata::default();
        metadata.authorization_endpoint = "http://127.0.0.1:9/authorize".into();
        assert_eq!(issuer_of(&metadata), "http://127.0.0.1:9");
        metadata.issuer = Some("http://127.0.0.1:9/tenant".into());
        assert_eq!(issuer_of(&metadata), "http://127.0.0.1:9/tenant");
    }

    /// Issue 15, point 6: a 401 without `WWW-Authenticate` is an unexpected
    /// response whose text holds the status; this reads what the client
    /// really makes of one.
    #[tokio::test]
    async fn issue_15_a_bare_401_on_the_wire_is_a_refusal() {
        use std::collections::HashMap;

        use rmcp::transport::streamable_http_client::StreamableHttpClient;
        let bare = crate::http::refusing::serve(401, &[], "{}").await;
        let challenged = crate::http::refusing::serve(
            401,
            &[("www-authenticate", r#"Bearer resource_metadata="x""#)],
            "{}",
        )
        .await;
        let client = RetryingHttp::new(std::time::Duration::from_secs(10), None).unwrap();
        for (url, with_challenge) in [(bare, false), (challenged, true)] {
            let message = crate::http::refusing::first_message("initialize");
            let error = client
                .post_message(url.into(), message, None, None, HashMap::new())
                .await
                .unwrap_err();
            match refusal(&error) {
                Some(Refusal::Unauthorized(challenge)) => {
                    assert_eq!(challenge.is_some(), with_challenge, "{error:?}")
                }
                _ => panic!("not read as a 401: {error:?}"),
            }
        }
    }

    #[test]
    fn refusals() {
        use rmcp::transport::streamable_http_client::AuthRequiredError;
        let unauthorized =
            StreamableHttpError::AuthRequired(AuthRequiredError::new("Bearer".into()));
        assert!(matches!(
            refusal(&unauthorized),
            Some(Refusal::Unauthorized(Some(_)))
        ));
        let bare =
            StreamableHttpError::UnexpectedServerResponse("HTTP 401 Unauthorized: {}".into());
        assert!(matches!(refusal(&bare), Some(Refusal::Unauthorized(None))));
        let other: HttpError = StreamableHttpError::UnexpectedServerResponse("HTTP 500".into());
        assert!(refusal(&other).is_none());
        let longer: HttpError =
            StreamableHttpError::UnexpectedServerResponse("HTTP 4010 Unknown: {}".into());
        assert!(refusal(&longer).is_none(), "4010 is no 401");
    }
}
