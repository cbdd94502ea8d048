//! An OAuth 2.1 authorization server for tests, on 127.0.0.1: its RFC 8414
//! metadata, a JSON Web Key Set of P-256 keys made here, dynamic client
//! registration (RFC 7591), an authorization endpoint that approves at
//! once (it redirects to the client's `redirect_uri` with a code), and a
//! token endpoint that checks PKCE (S256) and issues JWTs signed by the
//! current key, for the `resource` the client named (RFC 8707). Tests
//! also sign tokens of their own ([`AuthServer::sign`]), rotate the key
//! ([`AuthServer::rotate`]) and count the fetches of the key set.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::{Form, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use sha2::Digest;

use crate::Error;

/// A P-256 signing key and its public JWK.
pub struct SigningKey {
    pub kid: String,
    pkcs8: Vec<u8>,
    pub jwk: Value,
}

impl SigningKey {
    pub fn new(kid: &str) -> Result<Self, Error> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot make a P-256 key")?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| "cannot read the P-256 key")?;
        // The uncompressed point: 0x04, x, y.
        let point = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Self {
            kid: kid.to_owned(),
            pkcs8: pkcs8.as_ref().to_vec(),
            jwk,
        })
    }

    /// A token with `claims`, signed by this key and naming `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> Result<String, Error> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        Ok(jsonwebtoken::encode(
            &header,
            claims,
            &EncodingKey::from_ec_der(&self.pkcs8),
        )?)
    }

    pub fn sign(&self, claims: &Value) -> Result<String, Error> {
        self.sign_as(&self.kid, claims)
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

struct Grant {
    challenge: String,
    scope: String,
    resource: Option<String>,
}

struct AuthState {
    issuer: String,
    /// The published keys; the last one signs.
    keys: Mutex<Vec<SigningKey>>,
    jwks_fetches: AtomicUsize,
    registrations: AtomicUsize,
    /// The audience of a token whose client named no `resource`.
    audience: Mutex<Option<String>>,
    /// The subject of the tokens the token endpoint issues.
    subject: Mutex<String>,
    codes: Mutex<HashMap<String, Grant>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The authorization server, served on its own thread for the rest of the
/// test process.
pub struct AuthServer {
    state: Arc<AuthState>,
}

impl AuthServer {
    /// Starts the server on 127.0.0.1 with one key (`key-1`).
    pub fn start() -> Result<Self, Error> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let issuer = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(AuthState {
            issuer,
            keys: Mutex::new(vec![SigningKey::new("key-1")?]),
            jwks_fetches: AtomicUsize::new(0),
            registrations: AtomicUsize::new(0),
            audience: Mutex::new(None),
            subject: Mutex::new("alice".to_owned()),
            codes: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/.well-known/openid-configuration", get(metadata))
            .route("/jwks", get(jwks))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(state.clone());
        std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
                    let _ = axum::serve(listener, app).await;
                }
            });
        });
        Ok(Self { state })
    }

    /// The issuer (`http://127.0.0.1:PORT`), as tokens name it in `iss`.
    pub fn issuer(&self) -> &str {
        &self.state.issuer
    }

    /// Claims of a token for `audience`, from this issuer, valid for an
    /// hour.
    pub fn claims(&self, subject: &str, audience: &str, scope: &str) -> Value {
        json!({
            "iss": self.issuer(),
            "sub": subject,
            "aud": audience,
            "scope": scope,
            "iat": now(),
            "exp": now() + 3600,
        })
    }

    /// A token with `claims`, signed by the current key.
    pub fn sign(&self, claims: &Value) -> Result<String, Error> {
        let keys = lock(&self.state.keys);
        let key = keys.last().ok_or("no key")?;
        key.sign(claims)
    }

    /// A token with `claims`, signed by the current key but naming `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> Result<String, Error> {
        let keys = lock(&self.state.keys);
        let key = keys.last().ok_or("no key")?;
        key.sign_as(kid, claims)
    }

    /// Replaces every key with a new one, `kid`: the key set publishes
    /// only it from now on.
    pub fn rotate(&self, kid: &str) -> Result<(), Error> {
        *lock(&self.state.keys) = vec![SigningKey::new(kid)?];
        Ok(())
    }

    /// How many times the key set was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.state.jwks_fetches.load(Ordering::SeqCst)
    }

    /// How many clients registered.
    pub fn registrations(&self) -> usize {
        self.state.registrations.load(Ordering::SeqCst)
    }

    /// The audience of tokens whose client named no `resource`.
    pub fn set_audience(&self, audience: &str) {
        *lock(&self.state.audience) = Some(audience.to_owned());
    }

    /// The subject of the tokens the token endpoint issues from now on.
    pub fn set_subject(&self, subject: &str) {
        *lock(&self.state.subject) = subject.to_owned();
    }
}

async fn metadata(State(state): State<Arc<AuthState>>) -> Json<Value> {
    let issuer = &state.issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

async fn jwks(State(state): State<Arc<AuthState>>) -> Json<Value> {
    state.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys: Vec<Value> = lock(&state.keys)
        .iter()
        .map(|key| key.jwk.clone())
        .collect();
    Json(json!({ "keys": keys }))
}

async fn register(State(state): State<Arc<AuthState>>, Json(request): Json<Value>) -> Response {
    let number = state.registrations.fetch_add(1, Ordering::SeqCst) + 1;
    let mut answer = request;
    answer["client_id"] = json!(format!("client-{number}"));
    answer["client_id_issued_at"] = json!(now());
    answer["token_endpoint_auth_method"] = json!("none");
    (StatusCode::CREATED, Json(answer)).into_response()
}

async fn authorize(
    State(state): State<Arc<AuthState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (Some(redirect), Some(challenge)) =
        (query.get("redirect_uri"), query.get("code_challenge"))
    else {
        return (
            StatusCode::BAD_REQUEST,
            "redirect_uri and code_challenge are required",
        )
            .into_response();
    };
    if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "PKCE S256 is required").into_response();
    }
    let code = format!("code-{:x}", rand_u64());
    lock(&state.codes).insert(
        code.clone(),
        Grant {
            challenge: challenge.clone(),
            scope: query.get("scope").cloned().unwrap_or_default(),
            resource: query.get("resource").cloned(),
        },
    );
    let mut location = match url::Url::parse(redirect) {
        Ok(url) => url,
        Err(_) => return (StatusCode::BAD_REQUEST, "bad redirect_uri").into_response(),
    };
    location.query_pairs_mut().append_pair("code", &code);
    if let Some(given) = query.get("state") {
        location.query_pairs_mut().append_pair("state", given);
    }
    location.query_pairs_mut().append_pair("iss", &state.issuer);
    (
        StatusCode::FOUND,
        [(header::LOCATION, location.to_string())],
    )
        .into_response()
}

async fn token(
    State(state): State<Arc<AuthState>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let refuse =
        |error: &str| (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response();
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return refuse("unsupported_grant_type");
    }
    let Some(grant) = form
        .get("code")
        .and_then(|code| lock(&state.codes).remove(code))
    else {
        return refuse("invalid_grant");
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let computed = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    if computed != grant.challenge {
        return refuse("invalid_grant");
    }
    let audience = grant
        .resource
        .or_else(|| form.get("resource").cloned())
        .or_else(|| lock(&state.audience).clone())
        .unwrap_or_default();
    let claims = json!({
        "iss": state.issuer,
        "sub": lock(&state.subject).clone(),
        "aud": audience,
        "scope": grant.scope,
        "iat": now(),
        "exp": now() + 3600,
    });
    let signed = {
        let keys = lock(&state.keys);
        match keys.last().map(|key| key.sign(&claims)) {
            Some(Ok(token)) => token,
            _ => return refuse("server_error"),
        }
    };
    Json(json!({
        "access_token": signed,
        "token_type": "Bearer",
        "expires_in": 3600,
        "scope": grant.scope,
    }))
    .into_response()
}

/// 64 random bits, for codes.
fn rand_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    u64::from_le_bytes(bytes)
}
