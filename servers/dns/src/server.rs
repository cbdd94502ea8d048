//! The MCP face of the crate: [`Dns`], an rmcp [`ServerHandler`] with the
//! five tools of seed 000's DNS server, its options ([`DnsOptions`]) and
//! [`tools`], their list.
//!
//! Every successful result carries its JSON object twice: as structured
//! content matching the tool's output schema, and as its text (pretty JSON)
//! for clients that read text only. A `dominio` that is not a domain name is
//! a tool error (`isError: true`); what DNS servers say, or fail to say, is
//! never an error but findings in the result. Each call is logged as one
//! JSON line when a log file is configured.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::schema_for_output, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Tool},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::log::CallLog;
use crate::net::{Net, ROOT_HINTS};
use crate::{dnssec, health, mail, name, propagation};

/// The tool router, built once per process and shared by every handler.
static ROUTER: LazyLock<Arc<ToolRouter<Dns>>> = LazyLock::new(|| Arc::new(Dns::tool_router()));

/// The port DNS servers listen on.
pub const DNS_PORT: u16 = 53;

/// How the server asks.
#[derive(Debug, Clone)]
pub struct DnsOptions {
    /// The recursive resolver; `None` takes the system's first name server
    /// (`/etc/resolv.conf` on Unix).
    pub resolver: Option<SocketAddr>,
    /// The port authoritative servers are asked on: 53, or a test bed's.
    pub auth_port: u16,
    /// How long to wait for each answer.
    pub timeout: Duration,
    /// Where to append one JSON line per call; `None` logs nothing.
    pub log: Option<PathBuf>,
    /// The root servers a walk down to a zone starts from when the
    /// resolver names no zone above it (it does not answer at all):
    /// IANA's root servers, or a test bed's.
    pub roots: Vec<IpAddr>,
}

impl Default for DnsOptions {
    fn default() -> Self {
        Self {
            resolver: None,
            auth_port: DNS_PORT,
            timeout: Duration::from_secs(3),
            log: None,
            roots: ROOT_HINTS.map(IpAddr::V4).to_vec(),
        }
    }
}

/// Why the options cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("cannot read the system's resolver configuration: {0}")]
    SystemConfig(String),
    #[error("the system's resolver configuration names no name server")]
    NoSystemResolver,
}

/// The DNS diagnostics server. Cheap to clone; whoever runs it chooses the
/// transport.
#[derive(Debug, Clone)]
pub struct Dns {
    tool_router: Arc<ToolRouter<Dns>>,
    net: Net,
    log: CallLog,
}

impl Dns {
    /// A handler asking as `options` say. Fails only when no resolver is
    /// given and the system names none.
    pub fn new(options: DnsOptions) -> Result<Self, OptionsError> {
        let resolver = match options.resolver {
            Some(resolver) => resolver,
            None => system_resolver()?,
        };
        Ok(Self {
            tool_router: Arc::clone(&ROUTER),
            net: Net::new(resolver, options.auth_port, options.timeout, options.roots),
            log: CallLog::new(options.log),
        })
    }
}

/// The system's first name server.
fn system_resolver() -> Result<SocketAddr, OptionsError> {
    let (config, _) = hickory_resolver::system_conf::read_system_conf()
        .map_err(|error| OptionsError::SystemConfig(error.to_string()))?;
    let server = config
        .name_servers()
        .first()
        .ok_or(OptionsError::NoSystemResolver)?;
    let port = server
        .connections
        .first()
        .map_or(DNS_PORT, |connection| connection.port);
    Ok(SocketAddr::new(server.ip, port))
}

/// The tools [`Dns`] offers, sorted by name, as `tools/list` returns them.
pub fn tools() -> Vec<Tool> {
    ROUTER.list_all()
}

/// Arguments of the tools that take one domain.
#[derive(Debug, Deserialize, JsonSchema)]
struct DominioArgs {
    /// A domain name such as `example.com`; internationalized names are
    /// accepted and converted to A-labels (`café.example` ->
    /// `xn--caf-dma.example`).
    dominio: String,
}

/// Arguments of `propagacion`.
#[derive(Debug, Deserialize, JsonSchema)]
struct PropagacionArgs {
    /// A domain name such as `example.com`.
    dominio: String,
    /// Resolver addresses to compare, each an IP address with an optional
    /// port (`192.0.2.1`, `192.0.2.1:5353`, `[2001:db8::1]:53`). Default:
    /// 1.1.1.1, 8.8.8.8 and 9.9.9.9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    resolutores: Option<Vec<String>>,
}

/// The structured result of `ping`.
#[derive(Debug, Serialize, JsonSchema)]
struct PingOutput {
    /// Always `pong`.
    result: String,
}

/// A successful result: `found` as structured content and as text.
fn reply(found: &impl Serialize) -> CallToolResult {
    let structured = serde_json::to_value(found).unwrap_or(Value::Null);
    let text = serde_json::to_string_pretty(&structured).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A tool error whose only content is the message.
fn failure(error: &impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

/// The size of a result for the call log: the bytes of its content text.
fn size(result: &CallToolResult) -> usize {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.len()))
        .sum()
}

impl Dns {
    /// Runs one domain tool: parses `dominio` (a tool error when it is not
    /// a domain name), runs `work` on it, logs the call.
    async fn run<F, Fut>(&self, tool: &str, dominio: &str, work: F) -> CallToolResult
    where
        F: FnOnce(hickory_proto::rr::Name) -> Fut,
        Fut: Future<Output = CallToolResult>,
    {
        let started = Instant::now();
        let result = match name::parse(dominio) {
            Ok(name) => work(name).await,
            Err(error) => failure(&error),
        };
        let ok = result.is_error != Some(true);
        self.log
            .record(tool, dominio, started.elapsed(), size(&result), ok);
        result
    }
}

#[tool_router]
impl Dns {
    #[tool(
        title = "Ping",
        description = "Answers `pong`: checks that the server is up. Asks no DNS server.",
        output_schema = schema_for_output::<PingOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn ping(&self) -> CallToolResult {
        let started = Instant::now();
        let mut result = CallToolResult::success(vec![ContentBlock::text("pong")]);
        result.structured_content = Some(serde_json::json!({ "result": "pong" }));
        self.log.record("ping", "", started.elapsed(), 4, true);
        result
    }

    #[tool(
        title = "DNS health",
        description = "Health of a domain's DNS: A, AAAA, NS and SOA from the recursive \
                       resolver and from every authoritative server directly; findings for \
                       a nonexistent domain, lame delegation (a server that does not answer \
                       or not authoritatively), parent/child NS mismatch, SOA serial \
                       mismatch, a single NS or all NS in one /24 or /48, wildcard, \
                       dangling CNAME (apex and www), unbalanced or inconsistent TTLs, and \
                       recursive answers that differ from the authoritative ones.",
        output_schema = schema_for_output::<health::Salud>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn salud_dns(
        &self,
        Parameters(DominioArgs { dominio }): Parameters<DominioArgs>,
    ) -> CallToolResult {
        self.run("salud_dns", &dominio, |name| async move {
            reply(&health::salud_dns(&self.net.for_call(), &name).await)
        })
        .await
    }

    #[tool(
        title = "Mail policies",
        description = "A domain's mail policies: MX (preference, host, addresses; null MX, \
                       CNAME hosts, hosts without address), SPF (RFC 7208: mechanisms, \
                       DNS lookups counted recursively against the limit of 10, void \
                       lookups, several records, +all/?all), DMARC (RFC 7489: p, sp, pct, \
                       rua, ruf, adkim, aspf; missing, p=none, malformed, several), and \
                       MTA-STS and TLS-RPT records when present.",
        output_schema = schema_for_output::<mail::Correo>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn correo_politicas(
        &self,
        Parameters(DominioArgs { dominio }): Parameters<DominioArgs>,
    ) -> CallToolResult {
        self.run("correo_politicas", &dominio, |name| async move {
            reply(&mail::correo_politicas(&self.net.for_call(), &name).await)
        })
        .await
    }

    #[tool(
        title = "DNSSEC status",
        description = "A zone's DNSSEC: DS at the parent (asked of the parent's servers), \
                       DNSKEY algorithms and key tags, DS-to-DNSKEY match, the RRSIG over \
                       the SOA verified cryptographically (EDNS0 with the DO bit, TCP when \
                       truncated), its validity window, and algorithms RFC 8624 deprecates. \
                       `soa_firmada_valida` is true or false, and null only when the zone is \
                       unsigned or could not be reached (`detalles` says which).",
        output_schema = schema_for_output::<dnssec::Dnssec>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn estado_dnssec(
        &self,
        Parameters(DominioArgs { dominio }): Parameters<DominioArgs>,
    ) -> CallToolResult {
        self.run("estado_dnssec", &dominio, |name| async move {
            reply(&dnssec::estado_dnssec(&self.net.for_call(), &name).await)
        })
        .await
    }

    #[tool(
        title = "Propagation",
        description = "Asks several resolvers (default 1.1.1.1, 8.8.8.8, 9.9.9.9) in \
                       parallel, each with its own timeout, for A, AAAA, NS and TXT of a \
                       domain; `diferencias` lists, per type, the resolvers whose answers \
                       disagree. An unreachable resolver is reported, not fatal.",
        output_schema = schema_for_output::<propagation::Propagacion>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn propagacion(
        &self,
        Parameters(PropagacionArgs {
            dominio,
            resolutores,
        }): Parameters<PropagacionArgs>,
    ) -> CallToolResult {
        self.run("propagacion", &dominio, |name| async move {
            match propagation::resolvers(resolutores.as_deref()) {
                Ok(resolvers) => {
                    reply(&propagation::propagacion(&self.net.for_call(), &name, &resolvers).await)
                }
                Err(error) => failure(&error),
            }
        })
        .await
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "nexo-dns",
    instructions = "DNS diagnostics: `salud_dns` checks a zone's delegation and servers, \
                    `correo_politicas` its MX, SPF and DMARC, `estado_dnssec` its DNSSEC \
                    signatures, `propagacion` compares resolvers. Findings are \
                    {tipo, severidad, detalle}."
)]
impl ServerHandler for Dns {}

/// An address with an optional port, `53` when none is given.
pub fn parse_address(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Some(address);
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>()
        .ok()
        .map(|ip| SocketAddr::new(ip, DNS_PORT))
}
