//! The direct client commands: `tools`, `call`, `resources`, `read`,
//! `prompts`, `prompt`, `discover`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nexo_client::arguments::Schema;
use nexo_client::auth::{LoopbackAgent, OAuthOptions};
use nexo_client::hub::ToolLimits;
use nexo_client::{
    CallLimits, ClientError, ConnectOptions, ElicitationPolicy, EnvVar, Era, Header, HttpTransport,
    Session, Target,
};
use nexo_trace::{TraceOptions, Tracer};
use rmcp::model::{CallToolResult, ContentBlock, GetPromptResult, ReadResourceResult, Tool};
use serde_json::Value;

use crate::args::{
    CallArgs, EraArg, ListArgs, PromptArgs, ReadArgs, TargetArgs, ToolsArgs, TransportArg,
};
use crate::env;
use crate::failure::{Exit, Failure};
use crate::output;

/// What the target flags name: how to reach the server, the time limits
/// of its tool calls, and the trace file (`--trace`, else the
/// configuration's `"trace"` for `--server`).
pub(crate) struct Chosen {
    pub(crate) target: Target,
    limits: ToolLimits,
    trace: Option<(PathBuf, TraceOptions)>,
}

pub(crate) fn choose(args: &TargetArgs) -> Result<Chosen, Failure> {
    let direct_limits = ToolLimits::uniform(CallLimits {
        idle: args.timeout,
        total: None,
    });
    if let Some(name) = &args.server {
        let config = crate::host::load(args.config.as_deref())?;
        let server = crate::host::find(&config, name)?;
        return Ok(Chosen {
            target: crate::host::target_of(server)?,
            limits: crate::host::limits(server, args.timeout),
            trace: crate::host::trace_choice(&args.trace, Some(&config)),
        });
    }
    let target = match args.builtin {
        Some(bundled) => {
            let given = crate::builtin::defaults(bundled);
            Target::InProcess(crate::builtin::in_process(bundled, &given)?)
        }
        None => address(args)?,
    };
    Ok(Chosen {
        target,
        limits: direct_limits,
        trace: crate::host::trace_choice(&args.trace, None),
    })
}

/// A `--url` or `--stdio` target.
fn address(args: &TargetArgs) -> Result<Target, ClientError> {
    match (&args.url, &args.stdio) {
        (Some(url), _) => Ok(Target::Url {
            url: url.clone(),
            transport: match args.transport {
                TransportArg::Auto => HttpTransport::Auto,
                TransportArg::Http => HttpTransport::Http,
                TransportArg::Sse => HttpTransport::Sse,
            },
            headers: args
                .headers
                .iter()
                .map(|text| Header::parse(text.expose()))
                .collect::<Result<_, _>>()?,
        }),
        (None, Some(command)) => Target::stdio(
            command,
            args.env
                .iter()
                .map(|text| EnvVar::parse(text.expose()))
                .collect::<Result<_, _>>()?,
        ),
        (None, None) => Err(ClientError::usage(
            "no server given",
            Some(
                "add `--url URL`, `--stdio 'COMMAND'`, `--builtin NAME` or `--server NAME`"
                    .to_owned(),
            ),
        )),
    }
}

async fn open(
    args: &TargetArgs,
    target: &Target,
    trace: Option<Tracer>,
) -> Result<Session, Failure> {
    let options = ConnectOptions {
        timeout: args.timeout,
        startup: args.startup.seconds,
        era: match args.protocol {
            EraArg::Auto => Era::Auto,
            EraArg::Initialize => Era::Initialize,
            EraArg::Discover => Era::Discover,
        },
        oauth: oauth(args).for_target(target),
        elicitation: ElicitationPolicy::Decline,
        child_stderr: args
            .verbose
            .then(|| Arc::new(|line: &str| output::status(line)) as nexo_client::StderrSink),
        notices: Some(Arc::new(output::notice)),
        trace,
        server_name: args.server.clone(),
        // A command run by hand offers no roots: the server's own settle
        // what it may touch.
        roots: Vec::new(),
        sampling: None,
        // Nor does it draw MCP Apps' interfaces.
        extensions: Default::default(),
    };
    Ok(nexo_client::connect(target, &options).await?)
}

/// OAuth for a person: they open the authorization URL, the browser comes
/// back to a loopback listener, tokens are kept per issuer in the token
/// directory.
fn oauth(args: &TargetArgs) -> OAuthOptions {
    let store = env::token_store();
    let show = |url: &str| {
        output::status(&format!(
            "the server requires authorization; open this URL in a browser to continue:\n\n  {url}\n\nwaiting for the browser to come back..."
        ));
    };
    let agent = Arc::new(LoopbackAgent::new(Arc::new(show), AUTHORIZATION_WAIT));
    OAuthOptions::new(store, agent)
        .with_client(args.client_id.clone(), args.client_secret.clone())
        .with_metadata_url(args.client_metadata_url.clone())
}

/// How long a person has to finish authorizing in the browser.
const AUTHORIZATION_WAIT: Duration = Duration::from_secs(300);

/// Runs `work` on an open session, closing it whatever happens; `work` is
/// also given the time limits of the server's tool calls.
async fn with_session<T>(
    args: &TargetArgs,
    work: impl AsyncFnOnce(&Session, &ToolLimits) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let chosen = choose(args)?;
    let trace = match &chosen.trace {
        Some((path, options)) => Some(crate::host::tracer(path, *options)?),
        None => None,
    };
    let session = open(args, &chosen.target, trace.clone()).await?;
    let result = work(&session, &chosen.limits).await;
    output::end_progress();
    session.close().await;
    if let Some(trace) = trace
        && let Err(error) = trace.flush()
    {
        tracing::warn!(%error, "cannot write the trace file");
    }
    result
}

fn signature(tool: &Tool) -> String {
    Schema::new(&tool.input_schema)
        .properties()
        .map(|property| {
            let optional = if property.required { "" } else { "?" };
            let kind = property.type_name().unwrap_or("any");
            format!("{}{optional}: {kind}", property.name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub async fn tools(args: ToolsArgs) -> Result<(), Failure> {
    if let Some(name) = &args.name {
        let tool = with_session(&args.target, async |session, _| {
            Ok(session.tool(name).await?)
        })
        .await?;
        if args.target.json {
            output::json(&tool);
        } else {
            output::data(&tool_text(&tool));
        }
        return Ok(());
    }
    let tools = with_session(&args.target, async |session, _| {
        Ok(session.list_tools().await?)
    })
    .await?;
    if args.target.json {
        output::json(&serde_json::json!({ "tools": tools }));
        return Ok(());
    }
    if tools.is_empty() {
        output::status("the server offers no tools");
        return Ok(());
    }
    let rows = tools
        .iter()
        .map(|tool| {
            vec![
                tool.name.to_string(),
                signature(tool),
                output::summary(tool.description.as_deref()),
            ]
        })
        .collect();
    output::data(&output::table(
        &["TOOL", "ARGUMENTS", "DESCRIPTION"],
        rows,
        output::Overflow::Cut,
    ));
    Ok(())
}

/// One tool in full: its description, its arguments (required ones first)
/// with their types and descriptions, and its output schema.
fn tool_text(tool: &Tool) -> String {
    let mut text = format!("{}\n", tool.name);
    if let Some(title) = &tool.title {
        text.push_str(&format!("{title}\n"));
    }
    if let Some(description) = &tool.description {
        text.push_str(&format!("\n{}\n", description.trim_end()));
    }
    let schema = Schema::new(&tool.input_schema);
    let mut properties: Vec<_> = schema.properties().collect();
    properties.sort_by_key(|property| !property.required);
    text.push_str("\nArguments:\n");
    if properties.is_empty() {
        text.push_str("  (none)\n");
    }
    let rows: Vec<Vec<String>> = properties
        .iter()
        .map(|property| {
            let kind = property.type_name().unwrap_or("any");
            let described = property
                .schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![
                format!("  {}", property.name),
                if property.required {
                    format!("{kind}, required")
                } else {
                    kind.to_owned()
                },
                described.to_owned(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        text.push_str(&output::rows(rows));
    }
    if let Some(output_schema) = &tool.output_schema {
        text.push_str(&format!(
            "\nOutput schema:\n{}\n",
            serde_json::to_string_pretty(output_schema.as_ref()).unwrap_or_default()
        ));
    }
    text
}

pub async fn call(args: CallArgs) -> Result<(), Failure> {
    let words = argument_words(&args.arguments)?;
    let result = with_session(&args.target, async |session, limits| {
        let tool = session.tool(&args.tool).await?;
        let given = nexo_client::arguments::tool_arguments(&tool.input_schema, &words)?;
        for name in &given.undescribed {
            output::status(&format!(
                "warning: the tool's schema describes no argument `{name}`; sending it anyway"
            ));
        }
        Ok(session
            .call_tool_within(&args.tool, given.arguments, limits.for_tool(&args.tool))
            .await?)
    })
    .await?;
    let failure = nexo_client::tool_failure(&args.tool, &result);
    if args.target.json {
        output::json(&result);
    } else if failure.is_none() {
        // A tool's error is no data: it is told once, on stderr.
        output::data(&call_text(&result));
    }
    match failure {
        Some(error) => Err(error.into()),
        None => Ok(()),
    }
}

/// One line for a content block, read from its wire form so that block
/// kinds added by later revisions still print something.
pub(crate) fn block_text(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_owned(),
        "resource" => block.get("resource").map(resource_text).unwrap_or_default(),
        "resource_link" => format!("[resource link {}]", field("uri")),
        kind => format!(
            "[{kind} {}, {} base64 bytes]",
            field("mimeType"),
            field("data").len()
        ),
    }
}

fn content_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|block| {
            format!(
                "{}\n",
                block_text(&serde_json::to_value(block).unwrap_or_default())
            )
        })
        .collect()
}

/// The call's argument words, with `@FILE` and `-` (stdin) read: each a
/// JSON object, for arguments too large for a command line.
pub(crate) fn argument_words(words: &[String]) -> Result<Vec<String>, Failure> {
    let (text, source) = match words {
        [only] if only == "-" => (
            std::io::read_to_string(std::io::stdin()).map_err(|error| {
                Failure::usage(
                    format!("cannot read the arguments from stdin: {error}"),
                    None,
                )
            })?,
            "stdin".to_owned(),
        ),
        [only] if only.starts_with('@') => {
            let path = &only[1..];
            let text = std::fs::read_to_string(path).map_err(|error| {
                Failure::usage(
                    format!("cannot read the arguments file `{path}`: {error}"),
                    Some("give a file holding one JSON object: `@args.json`".into()),
                )
            })?;
            (text, format!("`{path}`"))
        }
        _ => return Ok(words.to_vec()),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(_)) => Ok(vec![text]),
        _ => Err(Failure::usage(
            format!("the arguments in {source} are not one JSON object"),
            Some(r#"write them as one object: {"name": "value"}"#.into()),
        )),
    }
}

pub(crate) fn call_text(result: &CallToolResult) -> String {
    if result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        return format!(
            "{}\n",
            serde_json::to_string_pretty(structured).unwrap_or_default()
        );
    }
    content_text(&result.content)
}

/// The text of a resource's contents, or a summary of a binary one.
fn resource_text(contents: &Value) -> String {
    let field = |name: &str| contents.get(name).and_then(Value::as_str);
    match (field("text"), field("blob")) {
        (Some(text), _) => text.to_owned(),
        (None, blob) => format!(
            "[{}: {}, {} base64 bytes]",
            field("uri").unwrap_or_default(),
            field("mimeType").unwrap_or("binary"),
            blob.unwrap_or_default().len()
        ),
    }
}

pub async fn resources(args: ListArgs) -> Result<(), Failure> {
    let resources = with_session(&args.target, async |session, _| {
        Ok(session.list_resources().await?)
    })
    .await?;
    if args.target.json {
        output::json(&serde_json::json!({ "resources": resources }));
        return Ok(());
    }
    if resources.is_empty() {
        output::status("the server offers no resources");
        return Ok(());
    }
    output::data(&resources_table(&resources));
    Ok(())
}

/// Resources as a table: URI, name, type, description.
pub(crate) fn resources_table(resources: &[rmcp::model::Resource]) -> String {
    let rows = resources
        .iter()
        .map(|resource| {
            vec![
                resource.uri.clone(),
                resource.name.clone(),
                resource.mime_type.clone().unwrap_or_default(),
                output::summary(resource.description.as_deref()),
            ]
        })
        .collect();
    output::table(
        &["URI", "NAME", "TYPE", "DESCRIPTION"],
        rows,
        output::Overflow::Cut,
    )
}

pub async fn read(args: ReadArgs) -> Result<(), Failure> {
    let result: ReadResourceResult = with_session(&args.target, async |session, _| {
        Ok(session.read_resource(&args.uri).await?)
    })
    .await?;
    if args.target.json {
        output::json(&result);
    } else {
        output::data(&read_text(&result));
    }
    Ok(())
}

/// The text of every content a read gave.
pub(crate) fn read_text(result: &ReadResourceResult) -> String {
    result
        .contents
        .iter()
        .map(|contents| {
            format!(
                "{}\n",
                resource_text(&serde_json::to_value(contents).unwrap_or_default())
            )
        })
        .collect()
}

pub async fn prompts(args: ListArgs) -> Result<(), Failure> {
    let prompts = with_session(&args.target, async |session, _| {
        Ok(session.list_prompts().await?)
    })
    .await?;
    if args.target.json {
        output::json(&serde_json::json!({ "prompts": prompts }));
        return Ok(());
    }
    if prompts.is_empty() {
        output::status("the server offers no prompts");
        return Ok(());
    }
    output::data(&prompts_table(&prompts));
    Ok(())
}

/// Prompts as a table: name, arguments (`?` marks an optional one),
/// description.
pub(crate) fn prompts_table(prompts: &[rmcp::model::Prompt]) -> String {
    let rows = prompts
        .iter()
        .map(|prompt| {
            let arguments = prompt
                .arguments
                .iter()
                .flatten()
                .map(|argument| {
                    let optional = if argument.required == Some(true) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{}{optional}", argument.name)
                })
                .collect::<Vec<_>>()
                .join(", ");
            vec![
                prompt.name.clone(),
                arguments,
                output::summary(prompt.description.as_deref()),
            ]
        })
        .collect();
    output::table(
        &["PROMPT", "ARGUMENTS", "DESCRIPTION"],
        rows,
        output::Overflow::Cut,
    )
}

pub async fn prompt(args: PromptArgs) -> Result<(), Failure> {
    let arguments = nexo_client::arguments::prompt_arguments(&args.arguments)?;
    let result: GetPromptResult = with_session(&args.target, async |session, _| {
        Ok(session.get_prompt(&args.name, arguments).await?)
    })
    .await?;
    if args.target.json {
        output::json(&result);
        return Ok(());
    }
    let mut text = String::new();
    for message in &result.messages {
        let body = block_text(&serde_json::to_value(&message.content).unwrap_or_default());
        let role = serde_json::to_value(&message.role).unwrap_or_default();
        text.push_str(&format!("{}: {body}\n", role.as_str().unwrap_or("message")));
    }
    output::data(&text);
    Ok(())
}

pub async fn discover(args: ListArgs) -> Result<(), Failure> {
    let (info, transport) = with_session(&args.target, async |session, _| {
        let info = session.server_info().ok_or_else(|| {
            Failure::new(
                Exit::Usage,
                "protocol_error",
                "the server gave no information about itself",
            )
        })?;
        Ok((info, session.transport()))
    })
    .await?;
    if args.target.json {
        let mut value = serde_json::to_value(info.as_ref()).unwrap_or_default();
        value["transport"] = Value::String(transport.to_owned());
        output::json(&value);
        return Ok(());
    }
    let identity = info
        .server_info
        .as_ref()
        .map(|server| format!("{} {}", server.name, server.version))
        .unwrap_or_else(|| "(not given)".into());
    let capabilities = serde_json::to_value(&info.capabilities)
        .ok()
        .and_then(|value| {
            value
                .as_object()
                .map(|map| map.keys().cloned().collect::<Vec<_>>())
        })
        .unwrap_or_default();
    let mut text = format!(
        "server        {identity}\nprotocol      {}\ntransport     {transport}\ncapabilities  {}\n",
        info.protocol_version,
        if capabilities.is_empty() {
            "(none)".to_owned()
        } else {
            capabilities.join(", ")
        },
    );
    if let Some(instructions) = &info.instructions {
        text.push_str(&format!(
            "instructions  {}\n",
            output::summary(Some(instructions))
        ));
    }
    output::data(&text);
    Ok(())
}
