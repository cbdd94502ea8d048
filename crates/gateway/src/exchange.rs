//! Per-caller upstream credentials by OAuth 2.0 Token Exchange (RFC 8693).
//!
//! The caller's token is never passed upstream (see [`crate::app`]). For
//! an upstream named in `tokenExchange`, the gateway trades the caller's
//! validated bearer token at the authorization server's token endpoint for
//! one meant for that upstream (its `audience`, `resource` and `scope`),
//! and calls the upstream over a session of that caller's own, which sends
//! the new token. The session and its token are kept, keyed by a digest of
//! the caller's token, until shortly before the new token expires; callers
//! never share one. The gateway's shared connection to such an upstream
//! (the hub's, with the upstream's configured `headers`) only lists what
//! it offers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nexo_client::{ClientError, ConnectOptions, Header, Secret, Session, Target};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::settings::TokenExchange;

/// RFC 8693's grant type and token type of an access token.
const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// How long an exchanged token is kept when the answer does not say.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// A token is traded again this long before it expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// The longest the token endpoint may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// The upstreams whose calls go with exchanged tokens.
pub struct Exchanges {
    upstreams: HashMap<String, Exchanged>,
    http: reqwest::Client,
}

/// One upstream's exchange: how to trade, whom to call, and the sessions
/// of the callers it has traded for.
struct Exchanged {
    settings: TokenExchange,
    target: Target,
    options: ConnectOptions,
    sessions: Mutex<HashMap<[u8; 32], Arc<OnceCell<Granted>>>>,
}

/// A caller's session with an upstream, and when its token runs out.
struct Granted {
    session: Arc<Session>,
    until: Instant,
}

/// The token endpoint's answer (RFC 8693, section 2.2.1).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// The token endpoint's refusal (RFC 6749, section 5.2).
#[derive(Deserialize)]
struct TokenRefusal {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

impl std::fmt::Debug for Exchanges {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut servers: Vec<&String> = self.upstreams.keys().collect();
        servers.sort();
        formatter
            .debug_struct("Exchanges")
            .field("servers", &servers)
            .finish_non_exhaustive()
    }
}

impl Exchanges {
    /// Exchanges for `upstreams`: `(server, how to trade, its target)`,
    /// connected with `options`; the error names an upstream that is not
    /// reached by URL (a traded token goes in an HTTP header).
    pub fn new(
        upstreams: Vec<(String, TokenExchange, Target)>,
        options: &ConnectOptions,
    ) -> Result<Self, String> {
        if let Some((server, ..)) = upstreams
            .iter()
            .find(|(_, _, target)| !matches!(target, Target::Url { .. }))
        {
            return Err(format!(
                "`tokenExchange.{server}`: `{server}` is not reached by URL, and a traded token \
                 can only be sent in an HTTP request's `Authorization` header"
            ));
        }
        // Built or refused: a default client would drop the time limit.
        let http = nexo_client::http::client_builder(EXCHANGE_TIMEOUT)
            .timeout(EXCHANGE_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build the token exchange's HTTP client: {error}"))?;
        let upstreams = upstreams
            .into_iter()
            .map(|(server, settings, target)| {
                let options = ConnectOptions {
                    server_name: Some(server.clone()),
                    ..options.clone()
                };
                let exchanged = Exchanged {
                    settings,
                    target,
                    options,
                    sessions: Mutex::default(),
                };
                (server, exchanged)
            })
            .collect();
        Ok(Self { upstreams, http })
    }

    /// Whether calls to `server` go with exchanged tokens.
    pub fn covers(&self, server: &str) -> bool {
        self.upstreams.contains_key(server)
    }

    /// `caller`'s own session with `server` (which [`Self::covers`]),
    /// trading its token first when no session holds a token still good.
    pub async fn session(
        &self,
        server: &str,
        caller: Option<&Secret>,
    ) -> Result<Arc<Session>, ClientError> {
        let Some(exchanged) = self.upstreams.get(server) else {
            return Err(ClientError::usage(
                format!("`{server}` is not an upstream of token exchange"),
                None,
            ));
        };
        let Some(caller) = caller else {
            return Err(ClientError::Unauthorized {
                target: server.to_owned(),
                detail: "calls to this upstream go with a token traded for the caller's own \
                         (tokenExchange), and this caller has no OAuth token"
                    .to_owned(),
            });
        };
        let key: [u8; 32] = Sha256::digest(caller.expose().as_bytes()).into();
        let cell = exchanged.cell(key);
        let granted = cell
            .get_or_try_init(|| Box::pin(self.grant(exchanged, caller)))
            .await?;
        if granted.until > Instant::now() && !granted.session.is_ended() {
            return Ok(granted.session.clone());
        }
        // Expired, or the upstream ended the session: traded and connected
        // again, once, by whoever comes first.
        exchanged.forget(key, &cell);
        let cell = exchanged.cell(key);
        let granted = cell
            .get_or_try_init(|| Box::pin(self.grant(exchanged, caller)))
            .await?;
        Ok(granted.session.clone())
    }

    /// Trades `caller` at the token endpoint and connects with the result.
    async fn grant(&self, exchanged: &Exchanged, caller: &Secret) -> Result<Granted, ClientError> {
        let (token, lifetime) = self.trade(&exchanged.settings, caller).await?;
        let mut target = exchanged.target.clone();
        if let Target::Url { headers, .. } = &mut target {
            headers.retain(|header| header.name() != http::header::AUTHORIZATION);
            headers.push(Header::new(
                "Authorization",
                &format!("Bearer {}", token.expose()),
            )?);
        }
        // Boxed: a connection's future is large, and this one is polled
        // deep inside a request's.
        let session = Box::pin(nexo_client::connect(&target, &exchanged.options)).await?;
        let until = Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN);
        Ok(Granted {
            session: Arc::new(session),
            until,
        })
    }

    /// One token exchange request: the new token and how long it lasts.
    async fn trade(
        &self,
        settings: &TokenExchange,
        caller: &Secret,
    ) -> Result<(Secret, Duration), ClientError> {
        let endpoint = settings.token_endpoint.as_str();
        let refused = |detail: String| ClientError::ExchangeRefused {
            endpoint: endpoint.to_owned(),
            detail,
        };
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", GRANT_TYPE),
            ("subject_token", caller.expose()),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
            ("requested_token_type", ACCESS_TOKEN_TYPE),
        ];
        for (name, value) in [
            ("audience", &settings.audience),
            ("resource", &settings.resource),
            ("scope", &settings.scope),
        ] {
            if let Some(value) = value {
                form.push((name, value));
            }
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&form)
            .finish();
        let mut request = self
            .http
            .post(endpoint)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        if let Some(client_id) = &settings.client_id {
            request = request.basic_auth(
                client_id,
                settings.client_secret.as_ref().map(Secret::expose),
            );
        }
        let response = request
            .send()
            .await
            .map_err(|error| ClientError::Unreachable {
                target: endpoint.to_owned(),
                detail: format!("the token exchange failed: {}", without_url(&error)),
                hint: "check `tokenExchange.tokenEndpoint` and that the authorization server is up"
                    .into(),
                stderr: Vec::new(),
            })?;
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        if !status.is_success() {
            let detail = match serde_json::from_slice::<TokenRefusal>(&body) {
                Ok(refusal) => match refusal.error_description {
                    Some(description) => format!("{}: {description}", refusal.error),
                    None => refusal.error,
                },
                Err(_) => format!("HTTP {status}"),
            };
            return Err(refused(detail));
        }
        let answer: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|error| refused(format!("its answer is not a token response: {error}")))?;
        if answer.access_token.is_empty() {
            return Err(refused("it answered with an empty token".to_owned()));
        }
        let lifetime = answer
            .expires_in
            .map_or(DEFAULT_LIFETIME, Duration::from_secs);
        Ok((Secret::new(answer.access_token), lifetime))
    }

    /// Drops every session whose token has run out.
    pub fn sweep(&self) {
        let now = Instant::now();
        for exchanged in self.upstreams.values() {
            exchanged
                .lock()
                .retain(|_, cell| cell.get().is_none_or(|granted| granted.until > now));
        }
    }
}

impl Exchanged {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Arc<OnceCell<Granted>>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cell(&self, key: [u8; 32]) -> Arc<OnceCell<Granted>> {
        self.lock().entry(key).or_default().clone()
    }

    /// Forgets `cell` under `key`, unless another caller replaced it already.
    fn forget(&self, key: [u8; 32], cell: &Arc<OnceCell<Granted>>) {
        let mut sessions = self.lock();
        if sessions
            .get(&key)
            .is_some_and(|held| Arc::ptr_eq(held, cell))
        {
            sessions.remove(&key);
        }
    }
}

/// A reqwest error without its URL (whose query could hold a secret).
fn without_url(error: &reqwest::Error) -> String {
    let mut error = error.to_string();
    if let Some(start) = error.find(" for url (") {
        error.truncate(start);
    }
    error
}
