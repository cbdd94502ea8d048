//! Bearer JWTs checked as an OAuth 2.1 resource server checks them: the
//! signature against the issuer's JSON Web Key Set, `iss` equal to the
//! configured issuer, `aud` holding the server's canonical URI, `exp` and
//! `nbf` with [`LEEWAY`], and only asymmetric algorithms ([`ALLOWED`]): no
//! `none`, no HMAC, so a public key can never be used as a shared secret.
//!
//! The key set comes from `jwksUri` when configured, otherwise from the
//! `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID Connect
//! discovery). It is cached, and fetched again when a token names a key
//! it does not hold, at most once per [`REFETCH_AFTER`], so that a stream
//! of made-up key ids cannot make the server hammer the issuer.
//!
//! A token that passed is remembered by its SHA-256 digest until it
//! expires ([`MAX_REMEMBERED`] at most), so a client presenting it on
//! every call pays a lookup, not a signature verification. Only the clock
//! can change a verified token's verdict (issuer and audience are fixed,
//! its bytes are signed), except a key the issuer withdraws: every
//! remembered token is forgotten when the key set fetched differs from
//! the one held.

use std::collections::HashMap;
use std::sync::PoisonError;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use url::Url;

use super::{Authenticated, BearerToken, OAuthSettings, Rejection};

/// The signature algorithms accepted: asymmetric ones only.
pub const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];
/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY: Duration = Duration::from_secs(30);
/// The shortest time between two fetches of the key set.
pub const REFETCH_AFTER: Duration = Duration::from_secs(10);
/// How long the issuer has to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or key set document read.
const MAX_DOCUMENT: usize = 1 << 20;
/// The most verified tokens remembered at once.
pub const MAX_REMEMBERED: usize = 4096;

/// Checks tokens of one issuer for one audience.
#[derive(Debug)]
pub struct Verifier {
    /// `gateway`, `server`, for messages.
    noun: &'static str,
    issuer: String,
    audience: String,
    jwks_uri: Option<Url>,
    http: reqwest::Client,
    cache: Mutex<Cache>,
    remembered: std::sync::Mutex<HashMap<[u8; 32], Remembered>>,
}

#[derive(Debug, Default)]
struct Cache {
    keys: Vec<Key>,
    /// The digest of the key set's `keys`, to tell a changed set.
    fingerprint: Option<[u8; 32]>,
    fetched: Option<Instant>,
}

/// What a verified token established, and until when it holds.
#[derive(Debug)]
struct Remembered {
    subject: Option<String>,
    scopes: Vec<String>,
    /// `exp` plus [`LEEWAY`], in seconds since the epoch.
    valid_until: u64,
}

struct Key {
    id: Option<String>,
    /// The `alg` the key is bound to, when the key set says.
    algorithm: Option<Algorithm>,
    family: Family,
    key: DecodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Key")
            .field("id", &self.id)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Rsa,
    Ec,
    Ed,
}

fn family_of(algorithm: Algorithm) -> Option<Family> {
    match algorithm {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => Some(Family::Rsa),
        Algorithm::ES256 | Algorithm::ES384 => Some(Family::Ec),
        Algorithm::EdDSA => Some(Family::Ed),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => None,
    }
}

impl Verifier {
    /// A verifier of `settings`' tokens, fetching the issuer's metadata
    /// and key set with `http` (each fetch limited to [`FETCH_TIMEOUT`]).
    pub fn new(settings: &OAuthSettings, noun: &'static str, http: reqwest::Client) -> Self {
        Self {
            noun,
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
            jwks_uri: settings.jwks_uri.clone(),
            http,
            cache: Mutex::new(Cache::default()),
            remembered: std::sync::Mutex::default(),
        }
    }

    /// The identity `token` carries, once it has passed every check.
    pub async fn verify(&self, token: &str) -> Result<Authenticated, Rejection> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(identity) = self.recall(&digest, token) {
            return Ok(identity);
        }
        let claims = self.check(token).await?;
        let identity = Authenticated {
            subject: claims.get("sub").and_then(Value::as_str).map(str::to_owned),
            scopes: scopes(&claims),
            token: Some(BearerToken::new(token)),
        };
        if let Some(expires) = claims.get("exp").and_then(Value::as_u64) {
            self.remember(digest, &identity, expires.saturating_add(LEEWAY.as_secs()));
        }
        Ok(identity)
    }

    /// The identity of a token verified before and not expired since.
    fn recall(&self, digest: &[u8; 32], token: &str) -> Option<Authenticated> {
        let mut remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = remembered.get(digest)?;
        if entry.valid_until < unix_now() {
            // Checked again in full, for the refusal to say why.
            remembered.remove(digest);
            return None;
        }
        Some(Authenticated {
            subject: entry.subject.clone(),
            scopes: entry.scopes.clone(),
            token: Some(BearerToken::new(token)),
        })
    }

    fn remember(&self, digest: [u8; 32], identity: &Authenticated, valid_until: u64) {
        let mut remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if remembered.len() >= MAX_REMEMBERED {
            let now = unix_now();
            remembered.retain(|_, entry| entry.valid_until >= now);
            if remembered.len() >= MAX_REMEMBERED {
                remembered.clear();
            }
        }
        remembered.insert(
            digest,
            Remembered {
                subject: identity.subject.clone(),
                scopes: identity.scopes.clone(),
                valid_until,
            },
        );
    }

    /// Forgets every verified token (the key set changed).
    fn forget_all(&self) {
        self.remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The claims of `token` after every check: signature, algorithm,
    /// issuer, audience, lifetime.
    async fn check(&self, token: &str) -> Result<Map<String, Value>, Rejection> {
        let invalid = |reason: &str| Rejection::Invalid(reason.to_owned());
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid("the bearer token is not a JWT"))?;
        let Some(family) = ALLOWED
            .contains(&header.alg)
            .then(|| family_of(header.alg))
            .flatten()
        else {
            return Err(Rejection::Invalid(format!(
                "the token is signed with `{:?}`, which the {} does not accept",
                header.alg, self.noun
            )));
        };
        let key = self.key(header.kid.as_deref(), header.alg, family).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|error| Rejection::Invalid(describe(&error, self.noun)))
    }

    /// The key that signed a token with header `kid` and `alg`, fetching
    /// the key set when it is not known yet (and not fetched just now).
    async fn key(
        &self,
        id: Option<&str>,
        algorithm: Algorithm,
        family: Family,
    ) -> Result<DecodingKey, Rejection> {
        let mut cache = self.cache.lock().await;
        if let Some(key) = cache.find(id, algorithm, family) {
            return Ok(key);
        }
        let due = cache
            .fetched
            .is_none_or(|fetched| fetched.elapsed() >= REFETCH_AFTER);
        if due {
            cache.fetched = Some(Instant::now());
            match self.fetch().await {
                Ok((keys, fingerprint)) => {
                    if cache.fingerprint.is_some_and(|held| held != fingerprint) {
                        self.forget_all();
                    }
                    cache.keys = keys;
                    cache.fingerprint = Some(fingerprint);
                }
                Err(reason) if cache.keys.is_empty() => {
                    // Tried again at the next token, not REFETCH_AFTER later.
                    cache.fetched = None;
                    return Err(Rejection::Unavailable(reason));
                }
                Err(reason) => {
                    tracing::warn!(%reason, "the issuer's keys could not be fetched again")
                }
            }
            if let Some(key) = cache.find(id, algorithm, family) {
                return Ok(key);
            }
        }
        Err(Rejection::Invalid(match id {
            Some(id) => {
                format!("the token is signed by a key (`{id}`) the issuer does not publish")
            }
            None => "the token names no key (`kid`) and no published key fits it".to_owned(),
        }))
    }

    /// The issuer's signing keys, and the digest of the set read.
    async fn fetch(&self) -> Result<(Vec<Key>, [u8; 32]), String> {
        let uri = match &self.jwks_uri {
            Some(uri) => uri.clone(),
            None => self.discover().await?,
        };
        let set = self.get(&uri).await?;
        let Some(keys) = set.get("keys").and_then(Value::as_array) else {
            return Err(format!("the key set at {uri} has no `keys`"));
        };
        let fingerprint = Sha256::digest(Value::Array(keys.clone()).to_string()).into();
        let keys: Vec<Key> = keys.iter().filter_map(key).collect();
        tracing::debug!(%uri, keys = keys.len(), "fetched the issuer's keys");
        Ok((keys, fingerprint))
    }

    /// The `jwks_uri` of the issuer's metadata.
    async fn discover(&self) -> Result<Url, String> {
        let issuer = Url::parse(&self.issuer).map_err(|error| error.to_string())?;
        let path = issuer.path().trim_end_matches('/');
        let origin = issuer.origin().ascii_serialization();
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ];
        let mut failures = Vec::new();
        for candidate in candidates {
            let Ok(url) = Url::parse(&candidate) else {
                continue;
            };
            match self.get(&url).await {
                Ok(metadata) => {
                    if metadata.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str())
                    {
                        failures.push(format!("{url} names another issuer"));
                        continue;
                    }
                    return metadata
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .and_then(|uri| Url::parse(uri).ok())
                        .ok_or_else(|| format!("the metadata at {url} has no `jwks_uri`"));
                }
                Err(reason) => failures.push(reason),
            }
        }
        Err(format!(
            "the issuer's metadata could not be had ({}); name the issuer's key set (the \
             gateway's `auth.oauth.jwksUri`)",
            failures.join("; ")
        ))
    }

    async fn get(&self, url: &Url) -> Result<Value, String> {
        let response = self
            .http
            .get(url.clone())
            .timeout(FETCH_TIMEOUT)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| format!("cannot reach {url}: {}", without_url(&error)))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let body = response
            .bytes()
            .await
            .map_err(|error| format!("cannot read {url}: {}", without_url(&error)))?;
        if body.len() > MAX_DOCUMENT {
            return Err(format!("{url} answered more than {MAX_DOCUMENT} bytes"));
        }
        serde_json::from_slice(&body).map_err(|_| format!("{url} did not answer JSON"))
    }
}

impl Cache {
    fn find(&self, id: Option<&str>, algorithm: Algorithm, family: Family) -> Option<DecodingKey> {
        self.keys
            .iter()
            .filter(|key| key.family == family)
            .filter(|key| key.algorithm.is_none_or(|bound| bound == algorithm))
            .find(|key| match id {
                Some(id) => key.id.as_deref() == Some(id),
                None => true,
            })
            .map(|key| key.key.clone())
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// A signing key of the set; `None` for symmetric keys, encryption keys
/// and what cannot be read.
fn key(value: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(value.clone()).ok()?;
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Family::Rsa,
        AlgorithmParameters::EllipticCurve(_) => Family::Ec,
        AlgorithmParameters::OctetKeyPair(_) => Family::Ed,
        AlgorithmParameters::OctetKey(_) => return None,
    };
    let algorithm = match &jwk.common.key_algorithm {
        None => None,
        Some(bound) => {
            let name = serde_json::to_value(bound).ok()?;
            let algorithm: Algorithm = serde_json::from_value(name).ok()?;
            if family_of(algorithm) != Some(family) {
                return None;
            }
            Some(algorithm)
        }
    };
    Some(Key {
        id: jwk.common.key_id.clone(),
        algorithm,
        family,
        key: DecodingKey::from_jwk(&jwk).ok()?,
    })
}

/// The token's scopes: OAuth's space-separated `scope`, or `scp` as some
/// issuers write it (a list or a string).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let words = |text: &str| {
        text.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(text)) => words(text),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A token's failure, worded for the person holding it.
fn describe(error: &jsonwebtoken::errors::Error, noun: &str) -> String {
    use jsonwebtoken::errors::ErrorKind;
    let text = match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)",
        ErrorKind::InvalidAudience => return format!("the token is not for this {noun} (`aud`)"),
        ErrorKind::InvalidIssuer => "the token comes from another issuer (`iss`)",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks `exp`, `iss` or `aud`",
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key",
        _ => "the token is not valid",
    };
    text.to_owned()
}

/// A reqwest error's wording without the URL (which the caller names).
fn without_url(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "no answer in time".to_owned()
    } else if error.is_connect() {
        "connection failed".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use nexo_testkit::AuthServer;

    use super::*;

    const AUDIENCE: &str = "https://morse.example.com/mcp";

    fn verifier(issuer: &AuthServer) -> Verifier {
        let names = ["issuer", "audience", "jwksUri", "toolScopes"];
        let settings = OAuthSettings::new(
            issuer.issuer(),
            AUDIENCE,
            None,
            Vec::new(),
            Vec::new(),
            names,
        )
        .unwrap();
        Verifier::new(&settings, "server", crate::auth::tests_http())
    }

    fn digest(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }

    #[tokio::test]
    async fn a_token_verified_once_is_recalled_until_it_expires() {
        let issuer = AuthServer::start().unwrap();
        let verifier = verifier(&issuer);
        let token = issuer
            .sign(&issuer.claims("alice", AUDIENCE, "mcp morse:read"))
            .unwrap();
        let first = verifier.verify(&token).await.unwrap();
        assert_eq!(first.subject.as_deref(), Some("alice"));
        assert_eq!(first.scopes, ["mcp", "morse:read"]);
        assert_eq!(verifier.remembered.lock().unwrap().len(), 1);
        assert_eq!(verifier.verify(&token).await.unwrap(), first);

        // What is recalled is what was remembered, with no check at all:
        // the proof that a repeated token skips the verification.
        let remembered = Authenticated {
            subject: Some("bob".to_owned()),
            scopes: vec!["mcp".to_owned()],
            token: None,
        };
        verifier.remember(digest("not a JWT"), &remembered, unix_now() + 60);
        assert_eq!(
            verifier
                .verify("not a JWT")
                .await
                .unwrap()
                .subject
                .as_deref(),
            Some("bob")
        );
        // Past its time it is checked in full again, and refused.
        verifier.remember(digest("not a JWT"), &remembered, unix_now() - 1);
        assert_eq!(
            verifier.verify("not a JWT").await,
            Err(Rejection::Invalid(
                "the bearer token is not a JWT".to_owned()
            ))
        );
        assert!(
            !verifier
                .remembered
                .lock()
                .unwrap()
                .contains_key(&digest("not a JWT"))
        );
    }

    #[tokio::test]
    async fn an_expired_token_is_not_remembered() {
        let issuer = AuthServer::start().unwrap();
        let verifier = verifier(&issuer);
        let mut claims = issuer.claims("alice", AUDIENCE, "mcp");
        claims["exp"] = serde_json::json!(unix_now() - 3600);
        let token = issuer.sign(&claims).unwrap();
        assert_eq!(
            verifier.verify(&token).await,
            Err(Rejection::Invalid("the token has expired".to_owned()))
        );
        assert!(verifier.remembered.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_changed_key_set_forgets_every_token_verified_with_the_old_one() {
        let issuer = AuthServer::start().unwrap();
        let verifier = verifier(&issuer);
        let old = issuer
            .sign(&issuer.claims("alice", AUDIENCE, "mcp"))
            .unwrap();
        verifier.verify(&old).await.unwrap();
        issuer.rotate("key-2").unwrap();
        let new = issuer
            .sign(&issuer.claims("alice", AUDIENCE, "mcp"))
            .unwrap();
        // Past REFETCH_AFTER, a token of the new key fetches the set
        // again: key-1 is gone.
        verifier.cache.lock().await.fetched = None;
        verifier.verify(&new).await.unwrap();
        assert_eq!(issuer.jwks_fetches(), 2);
        let refused = verifier.verify(&old).await.unwrap_err();
        assert!(
            matches!(&refused, Rejection::Invalid(reason) if reason.contains("key-1")),
            "{refused:?}"
        );
    }

    #[test]
    fn the_remembered_tokens_stay_bounded() {
        let issuer_settings = OAuthSettings::new(
            "https://issuer.example.com",
            AUDIENCE,
            None,
            Vec::new(),
            Vec::new(),
            ["issuer", "audience", "jwksUri", "toolScopes"],
        )
        .unwrap();
        let verifier = Verifier::new(&issuer_settings, "server", crate::auth::tests_http());
        let identity = Authenticated::default();
        for index in 0..MAX_REMEMBERED + 10 {
            verifier.remember(digest(&index.to_string()), &identity, unix_now() + 60);
        }
        assert!(verifier.remembered.lock().unwrap().len() <= MAX_REMEMBERED);
    }
}
