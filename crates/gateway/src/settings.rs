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
use nexo_client::namespace::{SEPARATOR, is_safe};
use serde::Deserialize;

use crate::error::SettingsError;
use crate::limits::LimitSettings;

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
                 `virtualServers` and `rateLimits`; examples/gateway/config.json shows each",
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
        Ok(Self {
            rate_limits,
            policy: path(&policy),
            audit: path(file.audit.as_deref().unwrap_or("audit.jsonl")),
            policy_check,
            virtual_servers,
        })
    }
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
        let Some((server, own)) = split_federated(&federated, servers) else {
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

/// `server__name` split at the longest configured server name it starts
/// with.
fn split_federated<'a>(federated: &'a str, servers: &[&str]) -> Option<(&'a str, &'a str)> {
    servers
        .iter()
        .filter_map(|server| {
            let own = federated
                .strip_prefix(server)?
                .strip_prefix(SEPARATOR)
                .filter(|own| !own.is_empty())?;
            Some((&federated[..server.len()], own))
        })
        .max_by_key(|(server, _)| server.len())
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
}
