//! The gateway's settings: the `gateway` object of the configuration file
//! whose `mcpServers` (or `servers`) are its upstreams, so that one file
//! says what runs behind the gateway and how it is guarded.
//!
//! ```json
//! "gateway": {
//!   "policy": "policy.toml",
//!   "audit": "audit.jsonl",
//!   "policyCheckSeconds": 2,
//!   "virtualServers": {
//!     "readonly": {
//!       "policy": "readonly.toml",
//!       "prefix": "ro_",
//!       "tools": {
//!         "utils__time": {},
//!         "morse__echo": {"name": "say", "description": "Repeats the text."}
//!       },
//!       "prompts": {"everything__test_simple_prompt": {}},
//!       "resources": ["everything"]
//!     }
//!   }
//! }
//! ```
//!
//! `auth` says who may call (see [`crate::auth`]); one of:
//!
//! ```json
//! "auth": {"oauth": {
//!   "issuer": "https://login.example.com",
//!   "audience": "https://gateway.example.com/mcp",
//!   "jwksUri": "https://login.example.com/keys",
//!   "requiredScopes": ["mcp"],
//!   "toolScopes": {"files__*": ["files:read"]}
//! }}
//! "auth": {"apiKeys": [{"name": "ci", "keyFile": "ci.key", "scopes": ["mcp"]},
//!                      {"name": "ops", "sha256": "9f86d08...", "scopes": []}]}
//! "auth": "none"
//! ```
//!
//! Without `auth` the gateway is open but listens on loopback addresses
//! only; `"auth": "none"` opens it on any address by choice. An API key is
//! kept as its SHA-256 digest only: `sha256` gives the digest, `keyFile` a
//! file holding the key (read and hashed at load).
//!
//! `redis` names the Redis that several instances share (see
//! [`crate::shared`]): `"redis": "redis://127.0.0.1:6379/0"`, or an object
//! with `url`, `prefix`, `whenDown` and `sessionTtlSeconds`.
//!
//! Paths are taken from the configuration file's directory. The detectors'
//! actions are the policy file's (`[detectors]`), so that a reload changes
//! them with the rules. A virtual server's tools and prompts are chosen by
//! their federated names (`server__tool`); each is offered as its own name
//! (or `name`) after `prefix`, and two that would be offered under one name
//! are refused here, at load.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nexo_client::config::GatewaySection;
use nexo_client::namespace::{SEPARATOR, is_safe, split};
use serde::Deserialize;

use crate::error::SettingsError;
use crate::limits::LimitSettings;
use crate::shared::RedisSettings;

/// How often the policy files are checked for changes by default.
pub const DEFAULT_POLICY_CHECK: Duration = Duration::from_secs(2);

/// What the settings say, paths made absolute.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The policy every request to `/mcp` is decided by.
    pub policy: PathBuf,
    /// Where the audit log is appended.
    pub audit: PathBuf,
    /// How often the policy files are checked for changes.
    pub policy_check: Duration,
    /// By name, each served at `/mcp/NAME`.
    pub virtual_servers: BTreeMap<String, VirtualServer>,
    /// The `rateLimits` object (crate::limits); none when absent.
    pub rate_limits: LimitSettings,
    /// Who may call the gateway.
    pub auth: AuthSettings,
    /// The Redis instances share; none: everything in this process.
    pub redis: Option<RedisSettings>,
    /// Where spans are exported; none: nowhere.
    pub otlp: Option<OtlpSettings>,
    /// By upstream, how its calls get a token of their own
    /// ([`crate::exchange`]).
    pub token_exchange: BTreeMap<String, TokenExchange>,
}

/// Where the gateway's spans are exported (crate::otlp).
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The collector's OTLP/HTTP address (`http://HOST:4318`), or its full
    /// traces URL (a path other than `/`).
    pub endpoint: url::Url,
    /// Sent with every export (an API key, say).
    pub headers: BTreeMap<String, nexo_client::Secret>,
    /// The `service.name` of the spans.
    pub service_name: String,
}

impl OtlpSettings {
    /// Where spans are posted: the endpoint's `/v1/traces` when it names
    /// no path of its own.
    pub fn traces_url(&self) -> String {
        if self.endpoint.path() == "/" {
            let mut url = self.endpoint.clone();
            url.set_path("/v1/traces");
            url.to_string()
        } else {
            self.endpoint.to_string()
        }
    }
}

impl std::fmt::Debug for OtlpSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OtlpSettings")
            .field("endpoint", &self.endpoint.as_str())
            .field("headers", &self.headers)
            .field("service_name", &self.service_name)
            .finish()
    }
}

/// How the caller's token is traded for one an upstream accepts (RFC 8693).
#[derive(Clone, PartialEq, Eq)]
pub struct TokenExchange {
    pub token_endpoint: url::Url,
    /// The gateway's own client at the authorization server, sent with
    /// HTTP Basic authentication; none sends no client credentials.
    pub client_id: Option<String>,
    pub client_secret: Option<nexo_client::Secret>,
    pub audience: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenExchange {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TokenExchange")
            .field("token_endpoint", &self.token_endpoint.as_str())
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("audience", &self.audience)
            .field("resource", &self.resource)
            .field("scope", &self.scope)
            .finish()
    }
}

pub use nexo_serve::auth::{ApiKey, AuthSettings, OAuthSettings};

impl Settings {
    /// The settings with who may call as the command line says it
    /// (`--token-file`, `--auth-issuer`/`--auth-audience`, `--no-auth`):
    /// flags stand in for a missing `auth`; beside an `auth` in the file
    /// they are an error, so that no one wonders which of the two holds.
    pub fn with_flag_auth(mut self, flags: AuthSettings) -> Result<Self, String> {
        match (&self.auth, flags) {
            (_, AuthSettings::Unset) => {}
            (AuthSettings::Unset, flags) => self.auth = flags,
            _ => {
                return Err(
                    "who may call is given twice: by the flags and by the `auth` of the \
                     `gateway` settings; keep one"
                        .to_owned(),
                );
            }
        }
        Ok(self)
    }
}

/// Who may call, in a few words for the start line.
pub fn auth_summary(auth: &AuthSettings) -> String {
    match auth {
        AuthSettings::Unset => {
            "no authentication, so loopback only (add `auth` to open it)".to_owned()
        }
        AuthSettings::None => "no authentication (`\"auth\": \"none\"`)".to_owned(),
        AuthSettings::ApiKeys(keys) => format!(
            "{} API key{}",
            keys.len(),
            if keys.len() == 1 { "" } else { "s" }
        ),
        AuthSettings::OAuth(oauth) => format!(
            "OAuth tokens of `{}` for `{}`",
            oauth.issuer, oauth.audience
        ),
    }
}

/// A named subset of the upstreams' tools, prompts and resources.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualServer {
    pub name: String,
    /// Its own policy; the gateway's when `None`.
    pub policy: Option<PathBuf>,
    /// Tools by the name they are offered as.
    pub tools: BTreeMap<String, Chosen>,
    /// Prompts by the name they are offered as.
    pub prompts: BTreeMap<String, Chosen>,
    /// The upstreams whose resources it offers.
    pub resources: BTreeSet<String>,
}

/// One upstream tool (or prompt) offered by a virtual server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub server: String,
    /// Its name on the upstream.
    pub name: String,
    /// What replaces the upstream's description (a poisoned one, say).
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SettingsFile {
    policy: Option<String>,
    audit: Option<String>,
    policy_check_seconds: Option<f64>,
    #[serde(default)]
    virtual_servers: BTreeMap<String, VirtualFile>,
    rate_limits: Option<serde_json::Value>,
    auth: Option<serde_json::Value>,
    redis: Option<serde_json::Value>,
    otlp: Option<OtlpFile>,
    #[serde(default)]
    token_exchange: BTreeMap<String, TokenExchangeFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OtlpFile {
    endpoint: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    service_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TokenExchangeFile {
    token_endpoint: String,
    client_id: Option<String>,
    client_secret_file: Option<String>,
    audience: Option<String>,
    resource: Option<String>,
    scope: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
enum AuthFile {
    ApiKeys(Vec<ApiKeyFile>),
    #[serde(rename = "oauth")]
    OAuth(OAuthFile),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ApiKeyFile {
    name: String,
    sha256: Option<String>,
    key_file: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OAuthFile {
    issuer: String,
    audience: String,
    jwks_uri: Option<String>,
    #[serde(default)]
    required_scopes: Vec<String>,
    #[serde(default)]
    tool_scopes: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VirtualFile {
    policy: Option<String>,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    tools: BTreeMap<String, ChosenFile>,
    #[serde(default)]
    prompts: BTreeMap<String, ChosenFile>,
    #[serde(default)]
    resources: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChosenFile {
    name: Option<String>,
    description: Option<String>,
}

impl Settings {
    /// Reads the `gateway` object of a configuration whose upstreams are
    /// named `servers`.
    pub fn read(section: &GatewaySection, servers: &[&str]) -> Result<Self, SettingsError> {
        let fail = |message: String, hint: &str| SettingsError {
            location: section.location.to_string(),
            message,
            hint: hint.to_owned(),
        };
        let file: SettingsFile =
            serde_json::from_value(section.value.clone()).map_err(|error| {
                fail(
                    format!("the `gateway` settings are not valid: {error}"),
                    "the `gateway` object takes `policy`, `audit`, `policyCheckSeconds`, \
                 `virtualServers`, `rateLimits`, `auth`, `redis`, `tokenExchange` and `otlp`; \
                 examples/gateway/config.json shows each",
                )
            })?;
        let path = |written: &str| section.base_dir.join(written);
        let Some(policy) = file.policy else {
            return Err(fail(
                "the `gateway` settings name no policy".to_owned(),
                "add `\"policy\": \"policy.toml\"`; examples/gateway/policy.toml is one to start \
                 from",
            ));
        };
        let policy_check = match file.policy_check_seconds {
            None => DEFAULT_POLICY_CHECK,
            Some(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0 => {
                Duration::from_secs_f64(seconds)
            }
            Some(seconds) => {
                return Err(fail(
                    format!("`policyCheckSeconds` is {seconds}"),
                    "write a number of seconds above 0 and at most 3600",
                ));
            }
        };
        let mut virtual_servers = BTreeMap::new();
        for (name, written) in file.virtual_servers {
            let server = virtual_server(&name, written, servers, &path).map_err(|message| {
                fail(
                    format!("virtual server `{name}`: {message}"),
                    "choose tools and prompts by their federated names (`server__tool`, \
                     servers of this file), and give each a name of its own with `name` or \
                     `prefix`",
                )
            })?;
            virtual_servers.insert(name, server);
        }
        let rate_limits = match &file.rate_limits {
            None => LimitSettings::default(),
            Some(value) => LimitSettings::read(value).map_err(|message| {
                fail(
                    message,
                    "write `\"rateLimits\": {\"perIdentity\": \"60/min\", \"perTool\": \
                     {\"server__tool\": \"10/s\"}, \"burst\": 10}`, each part optional",
                )
            })?,
        };
        let auth = match file.auth {
            None => AuthSettings::Unset,
            Some(written) => auth(written, &path).map_err(|message| {
                fail(
                    format!("`auth`: {message}"),
                    "write `\"auth\": {\"oauth\": {\"issuer\": URL, \"audience\": \
                     \"https://HOST/mcp\"}}`, `\"auth\": {\"apiKeys\": [{\"name\": \"ci\", \
                     \"keyFile\": \"ci.key\"}]}` or `\"auth\": \"none\"` (README, gateway, \
                     Authentication)",
                )
            })?,
        };
        let mut token_exchange = BTreeMap::new();
        for (server, written) in file.token_exchange {
            let exchange = token_exchange_settings(&server, written, servers, &auth, &path)
                .map_err(|message| {
                    fail(
                        format!("`tokenExchange.{server}`: {message}"),
                        "write `\"tokenExchange\": {\"SERVER\": {\"tokenEndpoint\": URL, \
                         \"clientId\": ID, \"clientSecretFile\": FILE, \"audience\": URI}}` \
                         for an upstream of this file, with `\"auth\": {\"oauth\": ...}` \
                         (README, gateway, Upstream credentials)",
                    )
                })?;
            token_exchange.insert(server, exchange);
        }
        let redis = file
            .redis
            .as_ref()
            .map(|value| {
                RedisSettings::read(value).map_err(|message| {
                    fail(
                        message,
                        "write `\"redis\": \"redis://HOST:6379/0\"`, or `\"redis\": {\"url\": \
                         \"redis://HOST:6379/0\", \"prefix\": \"nexo:gateway:\", \"whenDown\": \
                         \"refuse\", \"sessionTtlSeconds\": 1800}` (README, gateway, Two \
                         instances)",
                    )
                })
            })
            .transpose()?;
        let otlp = file
            .otlp
            .map(|written| {
                let endpoint = url::Url::parse(&written.endpoint)
                    .ok()
                    .filter(|url| matches!(url.scheme(), "http" | "https"))
                    .ok_or_else(|| {
                        fail(
                            format!(
                                "`otlp.endpoint` `{}` is not an http or https URL",
                                written.endpoint
                            ),
                            "write `\"otlp\": {\"endpoint\": \"http://HOST:4318\"}`, the \
                             collector's OTLP/HTTP address (README, gateway, Metrics)",
                        )
                    })?;
                Ok(OtlpSettings {
                    endpoint,
                    headers: written
                        .headers
                        .into_iter()
                        .map(|(name, value)| (name, nexo_client::Secret::new(value)))
                        .collect(),
                    service_name: written
                        .service_name
                        .unwrap_or_else(|| "nexo-gateway".to_owned()),
                })
            })
            .transpose()?;
        Ok(Self {
            rate_limits,
            auth,
            token_exchange,
            redis,
            otlp,
            policy: path(&policy),
            audit: path(file.audit.as_deref().unwrap_or("audit.jsonl")),
            policy_check,
            virtual_servers,
        })
    }
}

/// The `auth` settings, checked.
fn auth(
    written: serde_json::Value,
    path: &dyn Fn(&str) -> PathBuf,
) -> Result<AuthSettings, String> {
    if written.as_str() == Some("none") {
        return Ok(AuthSettings::None);
    }
    let file: AuthFile = serde_json::from_value(written).map_err(|error| error.to_string())?;
    match file {
        AuthFile::ApiKeys(keys) => {
            if keys.is_empty() {
                return Err("`apiKeys` lists no key".to_owned());
            }
            keys.into_iter()
                .map(|key| api_key(key, path))
                .collect::<Result<_, _>>()
                .map(AuthSettings::ApiKeys)
        }
        AuthFile::OAuth(oauth) => oauth_settings(oauth).map(AuthSettings::OAuth),
    }
}

/// One upstream's `tokenExchange`, checked.
fn token_exchange_settings(
    server: &str,
    written: TokenExchangeFile,
    servers: &[&str],
    auth: &AuthSettings,
    path: &dyn Fn(&str) -> PathBuf,
) -> Result<TokenExchange, String> {
    if !servers.contains(&server) {
        return Err(format!(
            "`{server}` is not a server of this file (it has {})",
            servers.join(", ")
        ));
    }
    if !matches!(auth, AuthSettings::OAuth(_)) {
        return Err(
            "a token can be traded only for a caller's OAuth token, and `auth` is not `oauth`"
                .to_owned(),
        );
    }
    let token_endpoint = url::Url::parse(&written.token_endpoint)
        .map_err(|error| format!("`tokenEndpoint` is not a URL: {error}"))?;
    let loopback = token_endpoint.host_str().is_some_and(|host| {
        nexo_serve::is_loopback_host(host.trim_start_matches('[').trim_end_matches(']'))
    });
    if token_endpoint.scheme() != "https" && !(token_endpoint.scheme() == "http" && loopback) {
        return Err(format!(
            "`tokenEndpoint` {token_endpoint} is not https (plain http only on loopback): the \
             caller's token would cross the network in the clear"
        ));
    }
    let client_secret = match written.client_secret_file {
        None => None,
        Some(file) => {
            let file = path(&file);
            let text = std::fs::read_to_string(&file).map_err(|error| {
                format!(
                    "cannot read `clientSecretFile` `{}`: {error}",
                    file.display()
                )
            })?;
            Some(nexo_client::Secret::new(text.trim()))
        }
    };
    if client_secret.is_some() && written.client_id.is_none() {
        return Err("`clientSecretFile` is given without `clientId`".to_owned());
    }
    Ok(TokenExchange {
        token_endpoint,
        client_id: written.client_id,
        client_secret,
        audience: written.audience,
        resource: written.resource,
        scope: written.scope,
    })
}

/// The shortest API key accepted from a `keyFile`.
const MIN_KEY_LENGTH: usize = 16;

fn api_key(key: ApiKeyFile, path: &dyn Fn(&str) -> PathBuf) -> Result<ApiKey, String> {
    use sha2::Digest;
    let name = key.name;
    let digest = match (key.sha256, key.key_file) {
        (Some(hex), None) => nexo_serve::auth::parse_digest(&hex)
            .ok_or_else(|| format!("the key `{name}`: `sha256` is not 64 hexadecimal digits"))?,
        (None, Some(file)) => {
            let file = path(&file);
            let text = std::fs::read_to_string(&file).map_err(|error| {
                format!(
                    "the key `{name}`: cannot read `{}`: {error}",
                    file.display()
                )
            })?;
            let secret = text.trim();
            if secret.len() < MIN_KEY_LENGTH {
                return Err(format!(
                    "the key `{name}` in `{}` is shorter than {MIN_KEY_LENGTH} characters; \
                     make one with `openssl rand -hex 32`",
                    file.display()
                ));
            }
            sha2::Sha256::digest(secret.as_bytes()).into()
        }
        _ => {
            return Err(format!(
                "the key `{name}` needs one of `sha256` and `keyFile`"
            ));
        }
    };
    Ok(ApiKey {
        name,
        digest,
        scopes: key.scopes,
    })
}

fn oauth_settings(oauth: OAuthFile) -> Result<OAuthSettings, String> {
    OAuthSettings::new(
        &oauth.issuer,
        &oauth.audience,
        oauth.jwks_uri.as_deref(),
        oauth.required_scopes,
        oauth.tool_scopes,
        ["issuer", "audience", "jwksUri", "toolScopes"],
    )
}

/// One virtual server, checked against the configured upstreams.
fn virtual_server(
    name: &str,
    written: VirtualFile,
    servers: &[&str],
    path: &dyn Fn(&str) -> PathBuf,
) -> Result<VirtualServer, String> {
    if !is_safe(name) {
        return Err(
            "its name is served as `/mcp/NAME`: use only A-Z, a-z, 0-9, `_` and `-`, \
                    at most 64 characters"
                .to_owned(),
        );
    }
    let tools = chosen(written.tools, &written.prefix, servers, "tool")?;
    let prompts = chosen(written.prompts, &written.prefix, servers, "prompt")?;
    if tools.is_empty() && prompts.is_empty() && written.resources.is_empty() {
        return Err("it offers no tool, prompt or resource".to_owned());
    }
    let mut resources = BTreeSet::new();
    for server in written.resources {
        if !servers.contains(&server.as_str()) {
            return Err(format!(
                "`resources` names `{server}`, which is not a server of this file"
            ));
        }
        resources.insert(server);
    }
    Ok(VirtualServer {
        name: name.to_owned(),
        policy: written.policy.as_deref().map(path),
        tools,
        prompts,
        resources,
    })
}

/// The chosen tools (or prompts) by the names they are offered as.
fn chosen(
    written: BTreeMap<String, ChosenFile>,
    prefix: &str,
    servers: &[&str],
    what: &str,
) -> Result<BTreeMap<String, Chosen>, String> {
    let mut offered: BTreeMap<String, Chosen> = BTreeMap::new();
    for (federated, file) in written {
        let Some((server, own)) = split(&federated, servers.iter().copied()) else {
            return Err(format!(
                "`{federated}` is not `server{SEPARATOR}{what}` for a server of this file \
                 ({})",
                servers.join(", ")
            ));
        };
        let name = format!("{prefix}{}", file.name.as_deref().unwrap_or(own));
        if !is_safe(&name) {
            return Err(format!(
                "the {what} `{federated}` would be offered as `{name}`: names take only A-Z, \
                 a-z, 0-9, `_` and `-`, at most 64 characters"
            ));
        }
        if let Some(first) = offered.get(&name) {
            return Err(format!(
                "the {what}s `{}{SEPARATOR}{}` and `{federated}` would both be offered as \
                 `{name}`",
                first.server, first.name
            ));
        }
        offered.insert(
            name,
            Chosen {
                server: server.to_owned(),
                name: own.to_owned(),
                description: file.description,
            },
        );
    }
    Ok(offered)
}

impl Settings {
    /// Every policy file the settings name, the gateway's first.
    pub fn policies(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.policy.as_path()).chain(
            self.virtual_servers
                .values()
                .filter_map(|server| server.policy.as_deref()),
        )
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use nexo_client::config::Location;

    fn section(value: serde_json::Value) -> GatewaySection {
        GatewaySection {
            value,
            location: Location {
                file: PathBuf::from("gw.json"),
                line: 3,
                column: 14,
            },
            base_dir: PathBuf::from("/etc/nexo"),
        }
    }

    #[test]
    fn paths_are_taken_from_the_file_and_the_audit_has_a_default() {
        let settings = Settings::read(
            &section(serde_json::json!({"policy": "policy.toml"})),
            &["morse"],
        )
        .unwrap();
        assert_eq!(settings.policy, PathBuf::from("/etc/nexo/policy.toml"));
        assert_eq!(settings.audit, PathBuf::from("/etc/nexo/audit.jsonl"));
        assert_eq!(settings.policy_check, DEFAULT_POLICY_CHECK);
    }

    #[test]
    fn a_virtual_server_renames_and_prefixes() {
        let settings = Settings::read(
            &section(serde_json::json!({
                "policy": "p.toml",
                "virtualServers": {"ro": {
                    "prefix": "ro_",
                    "tools": {
                        "my__server__echo": {"name": "say", "description": "Says it."},
                        "morse__echo": {}
                    },
                    "resources": ["morse"]
                }}
            })),
            &["morse", "my", "my__server"],
        )
        .unwrap();
        let ro = &settings.virtual_servers["ro"];
        assert_eq!(
            ro.tools["ro_say"],
            Chosen {
                server: "my__server".to_owned(),
                name: "echo".to_owned(),
                description: Some("Says it.".to_owned()),
            }
        );
        assert_eq!(ro.tools["ro_echo"].server, "morse");
    }

    #[test]
    fn collisions_are_refused_at_load() {
        let error = Settings::read(
            &section(serde_json::json!({
                "policy": "p.toml",
                "virtualServers": {"v": {"tools": {"a__echo": {}, "b__echo": {}}}}
            })),
            &["a", "b"],
        )
        .unwrap_err();
        assert_eq!(error.location, "gw.json:3:14");
        assert!(
            error
                .message
                .contains("the tools `a__echo` and `b__echo` would both be offered as `echo`"),
            "{}",
            error.message
        );
    }

    #[test]
    fn rate_limits_are_read_and_a_bad_rate_says_what_to_write() {
        let settings = Settings::read(
            &section(serde_json::json!({
                "policy": "p.toml",
                "rateLimits": {"perIdentity": "60/min", "perTool": {"utils__*": "10/s"}}
            })),
            &["utils"],
        )
        .unwrap();
        assert_eq!(settings.rate_limits.per_identity.unwrap().written, "60/min");
        assert_eq!(settings.rate_limits.per_tool[0].0, "utils__*");
        let error = Settings::read(
            &section(serde_json::json!({
                "policy": "p.toml",
                "rateLimits": {"perIdentity": "60 a minute"}
            })),
            &[],
        )
        .unwrap_err();
        assert!(
            error.message.contains("`60 a minute` is not a rate"),
            "{}",
            error.message
        );
        assert!(error.hint.contains("perIdentity"), "{}", error.hint);
    }

    #[test]
    fn otlp_takes_a_collector_address_and_names_its_traces_url() {
        let read = |otlp: serde_json::Value| {
            Settings::read(
                &section(serde_json::json!({"policy": "p.toml", "otlp": otlp})),
                &[],
            )
        };
        let base = read(serde_json::json!({"endpoint": "http://127.0.0.1:4318"})).unwrap();
        let base = base.otlp.unwrap();
        assert_eq!(base.traces_url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(base.service_name, "nexo-gateway");
        let full = read(
            serde_json::json!({"endpoint": "https://otel.example.com/custom/traces",
                                           "serviceName": "edge", "headers": {"x-key": "k"}}),
        )
        .unwrap()
        .otlp
        .unwrap();
        assert_eq!(full.traces_url(), "https://otel.example.com/custom/traces");
        assert!(
            !format!("{full:?}").contains("\"k\""),
            "a header's value is never shown"
        );
        let bad = read(serde_json::json!({"endpoint": "grpc://127.0.0.1:4317"})).unwrap_err();
        assert!(
            bad.message.contains("not an http or https URL"),
            "{}",
            bad.message
        );
    }

    #[test]
    fn token_exchange_needs_oauth_a_known_server_and_a_safe_endpoint() {
        let oauth = serde_json::json!({"oauth": {"issuer": "https://id.example.com",
                                                 "audience": "https://gw.example.com/mcp"}});
        let read = |auth: &serde_json::Value, exchange: serde_json::Value| {
            Settings::read(
                &section(serde_json::json!({
                    "policy": "p.toml", "auth": auth, "tokenExchange": exchange,
                })),
                &["github"],
            )
        };
        let good = read(
            &oauth,
            serde_json::json!({"github": {"tokenEndpoint": "https://id.example.com/token",
                                          "audience": "https://api.example.com"}}),
        )
        .unwrap();
        let exchange = &good.token_exchange["github"];
        assert_eq!(
            exchange.token_endpoint.as_str(),
            "https://id.example.com/token"
        );
        assert_eq!(
            exchange.audience.as_deref(),
            Some("https://api.example.com")
        );
        let refusals = [
            (
                read(
                    &serde_json::json!("none"),
                    serde_json::json!({"github": {"tokenEndpoint": "https://id.example.com/t"}}),
                ),
                "`auth` is not `oauth`",
            ),
            (
                read(
                    &oauth,
                    serde_json::json!({"gitlab": {"tokenEndpoint": "https://id.example.com/t"}}),
                ),
                "`gitlab` is not a server",
            ),
            (
                read(
                    &oauth,
                    serde_json::json!({"github": {"tokenEndpoint": "http://id.example.com/t"}}),
                ),
                "not https",
            ),
            (
                read(
                    &oauth,
                    serde_json::json!({"github": {"tokenEndpoint": "https://id.example.com/t",
                                                  "clientSecretFile": "s"}}),
                ),
                "cannot read",
            ),
        ];
        for (refused, expected) in refusals {
            let error = refused.unwrap_err();
            assert!(error.message.contains(expected), "{}", error.message);
        }
        let loopback = read(
            &oauth,
            serde_json::json!({"github": {"tokenEndpoint": "http://127.0.0.1:9000/token"}}),
        );
        assert!(loopback.is_ok(), "plain http is allowed on loopback");
    }

    #[test]
    fn redis_is_read_and_a_bad_one_says_what_to_write() {
        let read = |redis: serde_json::Value| {
            Settings::read(
                &section(serde_json::json!({"policy": "p.toml", "redis": redis})),
                &[],
            )
        };
        let settings = read(serde_json::json!("redis://127.0.0.1:6379/0")).unwrap();
        assert_eq!(
            settings.redis.unwrap().url.expose(),
            "redis://127.0.0.1:6379/0"
        );
        let error = read(serde_json::json!("rediss://:secret@db:6380/0")).unwrap_err();
        assert!(error.message.contains("TLS"), "{}", error.message);
        assert!(!error.message.contains("secret"), "{}", error.message);
        assert!(error.hint.contains("redis://HOST:6379/0"), "{}", error.hint);
        assert!(
            Settings::read(&section(serde_json::json!({"policy": "p.toml"})), &[])
                .unwrap()
                .redis
                .is_none()
        );
    }

    #[test]
    fn unknown_servers_and_fields_are_refused() {
        let unknown = Settings::read(
            &section(serde_json::json!({
                "policy": "p.toml",
                "virtualServers": {"v": {"tools": {"nowhere__echo": {}}}}
            })),
            &["morse"],
        )
        .unwrap_err();
        assert!(
            unknown.message.contains("`nowhere__echo`"),
            "{}",
            unknown.message
        );
        let field = Settings::read(
            &section(serde_json::json!({"policy": "p.toml", "polcy": "x"})),
            &[],
        )
        .unwrap_err();
        assert!(field.message.contains("polcy"), "{}", field.message);
    }

    #[test]
    fn auth_is_read_and_checked() {
        let read = |auth: serde_json::Value| {
            Settings::read(
                &section(serde_json::json!({"policy": "p.toml", "auth": auth})),
                &["utils"],
            )
        };
        assert_eq!(
            read(serde_json::json!("none")).unwrap().auth,
            AuthSettings::None
        );
        let oauth = read(serde_json::json!({"oauth": {
            "issuer": "https://login.example.com",
            "audience": "https://gw.example.com/mcp",
            "toolScopes": {"utils__*": ["tools"]}
        }}))
        .unwrap();
        let AuthSettings::OAuth(oauth) = oauth.auth else {
            panic!("not OAuth: {oauth:?}");
        };
        assert_eq!(oauth.issuer, "https://login.example.com");
        assert_eq!(oauth.tool_scopes[0].0.glob(), "utils__*");
        let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let keys =
            read(serde_json::json!({"apiKeys": [{"name": "ops", "sha256": digest}]})).unwrap();
        let AuthSettings::ApiKeys(keys) = keys.auth else {
            panic!("not API keys");
        };
        assert_eq!(keys[0].digest[0], 0x9f);
        for (auth, says) in [
            (
                serde_json::json!({"oauth": {"issuer": "http://login.example.com",
                                             "audience": "https://gw/mcp"}}),
                "must be an https URL",
            ),
            (
                serde_json::json!({"apiKeys": [{"name": "ops", "sha256": "abc"}]}),
                "not 64 hexadecimal digits",
            ),
            (
                serde_json::json!({"apiKeys": [{"name": "ops"}]}),
                "needs one of `sha256` and `keyFile`",
            ),
            (serde_json::json!({"oath": {}}), "oath"),
        ] {
            let error = read(auth).unwrap_err();
            assert!(error.message.contains(says), "{}", error.message);
        }
    }
}
