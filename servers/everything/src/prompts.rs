//! The prompts: one without arguments, one with two, one embedding a
//! resource and one showing an image; the prompt that first asks the client
//! for input is in [`crate::mrtr`].

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ContentBlock, GetPromptRequestParams, GetPromptResult, Prompt, PromptArgument, PromptMessage,
    ResourceContents, Role,
};

use crate::fixtures;
use crate::mrtr;

pub fn list() -> Vec<Prompt> {
    let argument = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    let prompt = |name: &str, title: &str, description: &str, arguments: Vec<PromptArgument>| {
        let arguments = (!arguments.is_empty()).then_some(arguments);
        Prompt::new(name, Some(description), arguments).with_title(title)
    };
    vec![
        prompt(
            "test_simple_prompt",
            "Simple Test Prompt",
            "A simple prompt without arguments",
            Vec::new(),
        ),
        prompt(
            "test_prompt_with_arguments",
            "Prompt With Arguments",
            "A prompt with required arguments",
            vec![
                argument("arg1", "First test argument"),
                argument("arg2", "Second test argument"),
            ],
        ),
        prompt(
            "test_prompt_with_embedded_resource",
            "Prompt With Embedded Resource",
            "A prompt that includes an embedded resource",
            vec![argument("resourceUri", "URI of the resource to embed")],
        ),
        prompt(
            "test_prompt_with_image",
            "Prompt With Image",
            "A prompt that includes image content",
            Vec::new(),
        ),
        prompt(
            mrtr::PROMPT,
            "Prompt Needing Input",
            "A prompt that first asks the client what context to use (input_required)",
            Vec::new(),
        ),
    ]
}

/// Renders every prompt but [`mrtr::PROMPT`].
pub fn get(request: &GetPromptRequestParams) -> Result<GetPromptResult, McpError> {
    let argument = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get(name))
            .and_then(|value| value.as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                McpError::invalid_params(format!("the prompt needs the argument `{name}`"), None)
            })
    };
    let user = |content: ContentBlock| PromptMessage::new(Role::User, content);
    let messages = match request.name.as_str() {
        "test_simple_prompt" => vec![user(ContentBlock::text(
            "This is a simple prompt for testing.",
        ))],
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
            vec![user(ContentBlock::text(format!(
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
            )))]
        }
        "test_prompt_with_embedded_resource" => {
            let uri = argument("resourceUri")?;
            vec![
                user(ContentBlock::resource(
                    ResourceContents::text("Embedded resource content for testing.", uri)
                        .with_mime_type("text/plain"),
                )),
                user(ContentBlock::text(
                    "Please process the embedded resource above.",
                )),
            ]
        }
        "test_prompt_with_image" => vec![
            user(ContentBlock::image(fixtures::PNG, "image/png")),
            user(ContentBlock::text("Please analyze the image above.")),
        ],
        name => {
            return Err(McpError::invalid_params(
                format!("no prompt is called `{name}`"),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(messages))
}
