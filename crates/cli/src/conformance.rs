//! `nexo conformance-client URL`: the client the official MCP conformance
//! suite drives (hidden from `--help`). It is the same code as `nexo tools`
//! and `nexo call --url`: connect (with OAuth when the server asks), list
//! the tools, call each with arguments its schema implies, answer
//! elicitation with the schema's defaults. Nothing depends on the
//! scenario's name; what it does comes from what the server says.
//!
//! The suite tells it the protocol revision and, for some scenarios, client
//! credentials, through the `MCP_CONFORMANCE_*` variables ([`crate::env`]).
//! Its authorization server redirects without a person, so the
//! authorization URL is followed headlessly and tokens stay in memory.

use std::sync::Arc;

use nexo_client::arguments::Schema;
use nexo_client::auth::{HeadlessAgent, OAuthOptions, Secret, TokenStore};
use nexo_client::{ConnectOptions, ElicitationPolicy, Era, HttpTransport, Target};
use rmcp::model::JsonObject;

use crate::args::ConformanceArgs;
use crate::env;
use crate::failure::Failure;

/// The Client ID Metadata Document URL the suite's authorization servers
/// accept as this client's id (the suite hosts no document; its servers
/// recognise this URL).
const SUITE_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// What `MCP_CONFORMANCE_CONTEXT` may carry: client credentials, and
/// arguments to use for named tools instead of ones made from the schema.
#[derive(Debug, Default, serde::Deserialize)]
struct Context {
    client_id: Option<String>,
    client_secret: Option<String>,
    #[serde(default, alias = "toolCalls")]
    tool_calls: Vec<ToolCall>,
}

#[derive(Debug, serde::Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: JsonObject,
}

pub async fn run(args: ConformanceArgs) -> Result<(), Failure> {
    let timeout = args.timeout;
    let revision = env::var(env::CONFORMANCE_PROTOCOL_VERSION);
    let context: Context = match env::var(env::CONFORMANCE_CONTEXT) {
        Some(text) => serde_json::from_str(&text).map_err(|error| {
            Failure::usage(
                format!(
                    "`{}` is not the JSON expected: {error}",
                    env::CONFORMANCE_CONTEXT
                ),
                None,
            )
        })?,
        None => Context::default(),
    };
    tracing::info!(
        scenario = env::var(env::CONFORMANCE_SCENARIO).unwrap_or_default(),
        revision = revision.as_deref().unwrap_or("any"),
        "conformance client"
    );
    let agent = HeadlessAgent::new(timeout).map_err(|error| {
        Failure::unexpected(
            &anyhow::anyhow!("cannot build the HTTP client: {error}"),
            None,
        )
    })?;
    let tool_calls = context.tool_calls;
    let options = ConnectOptions {
        timeout,
        era: revision.as_deref().map_or(Era::Auto, Era::for_revision),
        oauth: Some(
            OAuthOptions::new(TokenStore::in_memory(), Arc::new(agent))
                .with_client(context.client_id, context.client_secret.map(Secret::new))
                .with_metadata_url(Some(SUITE_CLIENT_METADATA_URL.into())),
        ),
        elicitation: ElicitationPolicy::SchemaDefaults,
        ..ConnectOptions::default()
    };
    let target = Target::Url {
        url: args.url.into(),
        transport: HttpTransport::Http,
        headers: Vec::new(),
    };
    let session = nexo_client::connect(&target, &options).await?;
    let result = async {
        let tools = session.list_tools().await?;
        for tool in &tools {
            let given = tool_calls.iter().find(|call| call.name == tool.name);
            let arguments = given.map_or_else(
                || Schema::new(&tool.input_schema).example_arguments(),
                |call| call.arguments.clone(),
            );
            match session.call_tool(&tool.name, arguments).await {
                Ok(result) => {
                    tracing::info!(tool = %tool.name, is_error = ?result.is_error, "called")
                }
                // A tool the server lists but will not run is the server's
                // business; the suite judges the exchange, not the outcome.
                Err(error) => tracing::warn!(tool = %tool.name, %error, "call failed"),
            }
        }
        Ok::<_, Failure>(())
    }
    .await;
    session.close().await;
    result
}
