//! The MCP face of the crate: [`Morse`], an rmcp [`ServerHandler`] with the
//! `echo`, `morse` and `demorse` tools of seed 000, and [`tools`], their list.
//!
//! Every successful result carries the plain text as its text content (as the
//! seed's server sent it) and `{"result": <text>}` as structured content,
//! matching the output schema each tool declares. A failed conversion is a
//! tool error (`isError: true`) with only a text content naming what could not
//! be converted: the spec asks for structured content that fits the schema on
//! success only.

use std::sync::{Arc, LazyLock};

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::schema_for_output, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Tool},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::code;

/// The tool router, built once per process: every [`Morse`] shares it, so
/// creating a handler per session or per request costs one reference count.
static ROUTER: LazyLock<Arc<ToolRouter<Morse>>> = LazyLock::new(|| Arc::new(Morse::tool_router()));

/// The Morse server: an rmcp [`ServerHandler`] offering `echo(texto)`,
/// `morse(texto)` and `demorse(codigo)`. Cheap to create and to clone;
/// whoever runs it chooses the transport.
#[derive(Debug, Clone)]
pub struct Morse {
    tool_router: Arc<ToolRouter<Morse>>,
}

impl Morse {
    /// A handler for one connection or session.
    pub fn new() -> Self {
        Self {
            tool_router: Arc::clone(&ROUTER),
        }
    }
}

impl Default for Morse {
    fn default() -> Self {
        Self::new()
    }
}

/// The tools [`Morse`] offers, sorted by name, as `tools/list` returns them.
pub fn tools() -> Vec<Tool> {
    ROUTER.list_all()
}

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// Any text; it comes back prefixed with `echo: `.
    texto: String,
}

/// Arguments of `morse`.
#[derive(Debug, Deserialize, JsonSchema)]
struct MorseArgs {
    /// Letters, digits and . , : ? ' - / ( ) " = + @ ×; case and accents are ignored.
    texto: String,
}

/// Arguments of `demorse`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DemorseArgs {
    /// Morse code of '.' and '-': letters separated by spaces, words by '/' or '|'.
    codigo: String,
}

/// The structured result of every tool; only its schema is used, as the
/// output schema the tools declare ([`reply`] writes the same shape).
#[derive(Debug, Serialize, JsonSchema)]
struct Output {
    /// The tool's result, the same text as the text content.
    result: String,
}

/// A successful result: `text` as text content and as `{"result": text}`.
fn reply(text: String) -> CallToolResult {
    let structured = serde_json::json!({ "result": &text });
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A tool error whose only content is the message.
fn failure(error: &impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

#[tool_router]
impl Morse {
    #[tool(
        title = "Echo",
        description = "Return the given text prefixed with 'echo: '. Useful to check that \
                       the server answers.",
        output_schema = schema_for_output::<Output>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn echo(&self, Parameters(EchoArgs { texto }): Parameters<EchoArgs>) -> CallToolResult {
        reply(format!("echo: {texto}"))
    }

    #[tool(
        title = "Encode Morse",
        description = "Encode text as International Morse code (ITU-R M.1677-1): letters \
                       separated by one space, words by ' / '. Case is ignored and accents \
                       are stripped; characters without a Morse code are reported as an error.",
        output_schema = schema_for_output::<Output>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn morse(&self, Parameters(MorseArgs { texto }): Parameters<MorseArgs>) -> CallToolResult {
        match code::encode(&texto) {
            Ok(encoded) => reply(encoded),
            Err(error) => failure(&error),
        }
    }

    #[tool(
        title = "Decode Morse",
        description = "Decode International Morse code (ITU-R M.1677-1) into upper-case text. \
                       Letters are separated by spaces, words by '/' or '|'; sequences that \
                       are not a letter's code are reported as an error.",
        output_schema = schema_for_output::<Output>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn demorse(
        &self,
        Parameters(DemorseArgs { codigo }): Parameters<DemorseArgs>,
    ) -> CallToolResult {
        match code::decode(&codigo) {
            Ok(decoded) => reply(decoded),
            Err(error) => failure(&error),
        }
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "nexo-morse",
    instructions = "Converts text to and from International Morse code: `morse` encodes, \
                    `demorse` decodes, `echo` answers with its input."
)]
impl ServerHandler for Morse {}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn reply_has_the_shape_of_the_output_schema() {
        let result = reply("... --- ...".to_owned());
        let output = serde_json::to_value(Output {
            result: "... --- ...".to_owned(),
        })
        .unwrap();
        assert_eq!(result.structured_content, Some(output));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.content[0].as_text().unwrap().text,
            "... --- ...",
            "the text content is the plain result, as the seed's server sent it"
        );
    }

    #[test]
    fn handlers_share_one_router() {
        let (a, b) = (Morse::new(), Morse::default());
        assert!(Arc::ptr_eq(&a.tool_router, &b.tool_router));
        assert!(Arc::ptr_eq(&a.tool_router, &a.clone().tool_router));
    }

    #[test]
    fn server_info_names_the_server_and_offers_tools_only() {
        let info = Morse::new().get_info();
        assert_eq!(info.server_info.name, "nexo-morse");
        assert_eq!(info.server_info.version, env!("CARGO_PKG_VERSION"));
        assert!(info.instructions.is_some_and(|i| !i.contains('\n')));
        let capabilities = serde_json::to_value(&info.capabilities).unwrap();
        let names: Vec<&String> = capabilities.as_object().unwrap().keys().collect();
        assert_eq!(names, ["tools"]);
    }
}
