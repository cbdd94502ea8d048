//! Multi Round-Trip Requests (SEP-2322, protocol 2026-07-28): the tools and
//! the prompt that answer with an `input_required` result, asking the client
//! to elicit, sample or list its roots, and complete once it retries with
//! the answers.
//!
//! Every round's `requestState` is sealed with rmcp's [`RequestStateCodec`]
//! (HMAC-SHA256 under a per-process random key, bound to the tool's name):
//! a retry without state starts at the first round, and one whose state does
//! not verify is refused with `-32602`. Answers are read with rmcp's own
//! result types; an answer that is missing or malformed is asked for again
//! rather than trusted. Each input request needs a client capability
//! (`elicitation`, `sampling`, `roots`) that the request must declare, or the
//! call fails with `-32021`, except in `test_input_required_result_capabilities`,
//! which asks only for what the client declared.

#![expect(
    deprecated,
    reason = "sampling and roots are deprecated by SEP-2577 but are what input requests ask for"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    CreateMessageResult, ElicitResult, ElicitationAction, GetPromptResponse, GetPromptResult,
    InputRequest, InputRequiredResult, InputResponses, ListRootsResult, PromptMessage,
    RequestStateCodec, Role, SealOptions,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::server::Everything;

/// The tools of this module, with their descriptions.
pub const TOOLS: &[(&str, &str)] = &[
    (
        "test_missing_capability",
        "Needs the client's sampling capability; fails with -32021 without it",
    ),
    (
        "test_input_required_result_elicitation",
        "Asks the user's name (input_required, elicitation)",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question (input_required, sampling)",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots (input_required, roots/list)",
    ),
    (
        "test_input_required_result_request_state",
        "Asks for a confirmation and needs its requestState back",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks for a name, a sampled greeting and the roots at once",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks for a name, then for a colour, in two rounds",
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks for a confirmation under a signed requestState and refuses a forged one",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only for the inputs the client declared it can give",
    ),
    (
        "test_streaming_elicitation",
        "Reports progress, then asks the user for a value",
    ),
];

/// The prompt that needs input before it can be rendered.
pub const PROMPT: &str = "test_input_required_result_prompt";

/// How long a sealed `requestState` stays valid.
const STATE_TTL: Duration = Duration::from_secs(600);

/// What one round remembers, sealed into `requestState`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The round that was asked for, from 1.
    round: u8,
    /// The name given in an earlier round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

/// The sealing key for `requestState`, random per process.
pub fn state_codec() -> RequestStateCodec {
    let mut key = [0u8; RequestStateCodec::MIN_KEY_LENGTH];
    if let Err(error) = getrandom::fill(&mut key) {
        // Very unlikely on any supported system; fall back to a key that is
        // at least different per process and start, and say so.
        tracing::warn!(%error, "no system randomness: the requestState key is guessable");
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos())
            ^ u128::from(std::process::id());
        key[..16].copy_from_slice(&seed.to_le_bytes());
    }
    // The key has exactly the minimum length, which `try_new` would check.
    RequestStateCodec::new_unchecked(key.to_vec())
}

/// One thing to ask the client.
#[derive(Debug, Clone, Copy)]
enum Ask {
    /// A form with one field of `kind` (`string` or `boolean`).
    Form {
        message: &'static str,
        field: &'static str,
        kind: &'static str,
    },
    /// A sampling request with one user message.
    Sample {
        prompt: &'static str,
        max_tokens: u32,
    },
    /// `roots/list`.
    Roots,
}

impl Ask {
    fn capability(self) -> &'static str {
        match self {
            Ask::Form { .. } => "elicitation",
            Ask::Sample { .. } => "sampling",
            Ask::Roots => "roots",
        }
    }

    fn request(self) -> Result<InputRequest, McpError> {
        let value = match self {
            Ask::Form {
                message,
                field,
                kind,
            } => json!({
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": message,
                    "requestedSchema": {
                        "type": "object",
                        "properties": { field: { "type": kind } },
                        "required": [field]
                    }
                }
            }),
            Ask::Sample { prompt, max_tokens } => json!({
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
                    "maxTokens": max_tokens
                }
            }),
            Ask::Roots => json!({ "method": "roots/list", "params": {} }),
        };
        serde_json::from_value(value).map_err(|error| {
            McpError::internal_error(format!("cannot build an input request: {error}"), None)
        })
    }

    /// Reads the client's answer to this request; `None` when it is missing
    /// or is not a result of the right kind.
    fn answer(self, response: Option<&Value>) -> Option<Answer> {
        let response = response?.clone();
        match self {
            Ask::Form { field, .. } => {
                let result: ElicitResult = serde_json::from_value(response).ok()?;
                if result.action != ElicitationAction::Accept {
                    return Some(Answer::Declined);
                }
                let value = result.content?.get(field)?.clone();
                Some(Answer::Value(value))
            }
            Ask::Sample { .. } => {
                let result: CreateMessageResult = serde_json::from_value(response).ok()?;
                let text = result
                    .message
                    .content
                    .into_vec()
                    .into_iter()
                    .find_map(|block| block.as_text().map(|text| text.text.clone()))
                    .unwrap_or_default();
                Some(Answer::Value(Value::String(text)))
            }
            Ask::Roots => {
                let result: ListRootsResult = serde_json::from_value(response).ok()?;
                Some(Answer::Value(Value::from(result.roots.len())))
            }
        }
    }
}

/// A usable answer.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// The form's field, the sampled text, or the number of roots.
    Value(Value),
    /// The user declined or cancelled the form.
    Declined,
}

impl Answer {
    fn text(&self) -> String {
        match self {
            Answer::Value(Value::String(text)) => text.clone(),
            Answer::Value(other) => other.to_string(),
            Answer::Declined => "(declined)".to_owned(),
        }
    }
}

const NAME: Ask = Ask::Form {
    message: "What is your name?",
    field: "name",
    kind: "string",
};
const CONFIRM: Ask = Ask::Form {
    message: "Please confirm",
    field: "ok",
    kind: "boolean",
};

/// One round of a call: what came back, and how to ask for more.
struct Round<'a> {
    server: &'a Everything,
    /// The tool or prompt name, which the sealed state is bound to.
    name: &'a str,
    state: Option<State>,
    responses: Option<&'a InputResponses>,
    capabilities: Option<ClientCapabilities>,
}

impl<'a> Round<'a> {
    fn open(
        server: &'a Everything,
        name: &'a str,
        request_state: Option<&str>,
        responses: Option<&'a InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Self, McpError> {
        let state = request_state
            .map(|sealed| {
                server
                    .state_codec()
                    .open_json_with::<State>(sealed, name.as_bytes())
                    .map_err(|error| {
                        McpError::invalid_params(
                            format!("requestState failed its integrity check: {error}"),
                            None,
                        )
                    })
            })
            .transpose()?;
        Ok(Self {
            server,
            name,
            state,
            responses,
            capabilities: context.client_capabilities(),
        })
    }

    /// The round the client answered (0 when it sent no state).
    fn round(&self) -> u8 {
        self.state.as_ref().map_or(0, |state| state.round)
    }

    fn declares(&self, capability: &str) -> bool {
        let Some(capabilities) = &self.capabilities else {
            return false;
        };
        match capability {
            "elicitation" => capabilities.elicitation.is_some(),
            "sampling" => capabilities.sampling.is_some(),
            "roots" => capabilities.roots.is_some(),
            _ => false,
        }
    }

    /// Fails with -32021 unless the client declared what `asks` need.
    fn require(&self, asks: &[(&str, Ask)]) -> Result<(), McpError> {
        let missing: serde_json::Map<String, Value> = asks
            .iter()
            .map(|(_, ask)| ask.capability())
            .filter(|capability| !self.declares(capability))
            .map(|capability| (capability.to_owned(), json!({})))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let required: ClientCapabilities = serde_json::from_value(Value::Object(missing))
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        Err(McpError::missing_required_client_capability(required))
    }

    /// The answer to `key`, if the client gave a usable one.
    fn answer(&self, key: &str, ask: Ask) -> Option<Answer> {
        ask.answer(self.responses.and_then(|responses| responses.get(key)))
    }

    /// Every answer to `asks`, or `None` if any is missing.
    fn answers(&self, asks: &[(&str, Ask)]) -> Option<Vec<Answer>> {
        asks.iter()
            .map(|(key, ask)| self.answer(key, *ask))
            .collect()
    }

    /// An `input_required` result asking `asks`, sealing `state`.
    fn ask(&self, asks: &[(&str, Ask)], state: &State) -> Result<InputRequiredResult, McpError> {
        let requests = asks
            .iter()
            .map(|(key, ask)| Ok(((*key).to_owned(), ask.request()?)))
            .collect::<Result<BTreeMap<_, _>, McpError>>()?;
        let options = SealOptions::new()
            .associated_data(self.name.as_bytes())
            .ttl(STATE_TTL);
        let sealed = self
            .server
            .state_codec()
            .seal_json_with(state, &options)
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }

    /// Asks `asks` in round 1 until every one is answered, then `finish`es:
    /// a tool's result or a prompt's.
    fn single<R: From<InputRequiredResult>>(
        &self,
        asks: &[(&str, Ask)],
        finish: impl FnOnce(Vec<Answer>) -> R,
    ) -> Result<R, McpError> {
        self.require(asks)?;
        match self.answers(asks) {
            Some(answers) => Ok(finish(answers)),
            None => Ok(self.ask(asks, &first_round())?.into()),
        }
    }
}

fn first_round() -> State {
    State {
        round: 1,
        name: None,
    }
}

fn text(text: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

/// Runs the tool `name` of this module.
pub async fn call(
    server: &Everything,
    name: &str,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    if !TOOLS.iter().any(|(tool, _)| *tool == name) {
        return Err(crate::tools::not_found(name));
    }
    let round = Round::open(
        server,
        name,
        request.request_state.as_deref(),
        request.input_responses.as_ref(),
        context,
    )?;
    match name {
        "test_missing_capability" => {
            let asks = [(
                "sample",
                Ask::Sample {
                    prompt: "Say hello",
                    max_tokens: 20,
                },
            )];
            round.single(&asks, |_| text("Success".to_owned()))
        }
        "test_input_required_result_elicitation" => round
            .single(&[("user_name", NAME)], |answers| {
                text(format!("Hello, {}!", answers[0].text()))
            }),
        "test_input_required_result_sampling" => {
            let asks = [(
                "sample_request",
                Ask::Sample {
                    prompt: "What is the capital of France?",
                    max_tokens: 100,
                },
            )];
            round.single(&asks, |answers| {
                text(format!("Sampling result: {}", answers[0].text()))
            })
        }
        "test_input_required_result_list_roots" => round
            .single(&[("roots_request", Ask::Roots)], |answers| {
                text(format!("Found {} root(s)", answers[0].text()))
            }),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            let asks = [("confirm", CONFIRM)];
            round.require(&asks)?;
            match (round.round(), round.answers(&asks)) {
                (1, Some(answers)) if answers[0] == Answer::Value(Value::Bool(true)) => {
                    Ok(text("state-ok: requestState verified".to_owned()))
                }
                (1, Some(_)) => Ok(text("not confirmed".to_owned())),
                _ => Ok(round.ask(&asks, &first_round())?.into()),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let asks = [
                ("user_name", NAME),
                (
                    "greeting",
                    Ask::Sample {
                        prompt: "Generate a greeting",
                        max_tokens: 50,
                    },
                ),
                ("client_roots", Ask::Roots),
            ];
            round.single(&asks, |answers| {
                text(format!(
                    "Name: {}; Greeting: {}; Roots: {}",
                    answers[0].text(),
                    answers[1].text(),
                    answers[2].text()
                ))
            })
        }
        "test_input_required_result_multi_round" => multi_round(&round),
        "test_input_required_result_capabilities" => {
            let offered = [
                (
                    "elicit_input",
                    Ask::Form {
                        message: "Elicitation input",
                        field: "value",
                        kind: "string",
                    },
                ),
                (
                    "sample_input",
                    Ask::Sample {
                        prompt: "Sample request",
                        max_tokens: 50,
                    },
                ),
            ];
            let asks: Vec<(&str, Ask)> = offered
                .into_iter()
                .filter(|(_, ask)| round.declares(ask.capability()))
                .collect();
            if asks.is_empty() {
                return Ok(text(
                    "the client declared neither elicitation nor sampling".to_owned(),
                ));
            }
            round.single(&asks, |_| {
                let keys: Vec<&str> = asks.iter().map(|(key, _)| *key).collect();
                text(format!("capabilities-ok: received {}", keys.join(",")))
            })
        }
        _ => {
            // test_streaming_elicitation: progress first, then the question.
            if let Some(token) = context.meta.get_progress_token() {
                let params = rmcp::model::ProgressNotificationParam::new(token, 50.0)
                    .with_total(100.0)
                    .with_message("waiting for the user");
                if let Err(error) = context.peer.notify_progress(params).await {
                    tracing::debug!(%error, "cannot send a progress notification");
                }
            }
            let asks = [(
                "value",
                Ask::Form {
                    message: "Enter a value",
                    field: "value",
                    kind: "string",
                },
            )];
            round.single(&asks, |answers| {
                text(format!("Streaming complete: {}", answers[0].text()))
            })
        }
    }
}

/// `test_input_required_result_multi_round`: the name in round 1, the
/// colour in round 2, carrying the name in the sealed state. A round that
/// comes back unanswered is asked again.
fn multi_round(round: &Round<'_>) -> Result<CallToolResponse, McpError> {
    let name_step = [("step1", NAME)];
    let color_step = [(
        "step2",
        Ask::Form {
            message: "What is your favorite color?",
            field: "color",
            kind: "string",
        },
    )];
    round.require(&name_step)?;
    let carried = round.state.as_ref().and_then(|state| state.name.clone());
    let name = match (round.round(), carried) {
        (2, Some(name)) => Some(name),
        (1, _) => round.answers(&name_step).map(|answers| answers[0].text()),
        _ => None,
    };
    let Some(name) = name else {
        return Ok(round.ask(&name_step, &first_round())?.into());
    };
    if round.round() == 2
        && let Some(answers) = round.answers(&color_step)
    {
        return Ok(text(format!(
            "Multi-round complete for {name} who likes {}",
            answers[0].text()
        )));
    }
    let second = State {
        round: 2,
        name: Some(name),
    };
    Ok(round.ask(&color_step, &second)?.into())
}

/// `prompts/get` of [`PROMPT`]: asks what context to use, then renders.
pub fn get_prompt(
    server: &Everything,
    request: &rmcp::model::GetPromptRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<GetPromptResponse, McpError> {
    let round = Round::open(
        server,
        PROMPT,
        request.request_state.as_deref(),
        request.input_responses.as_ref(),
        context,
    )?;
    let asks = [(
        "user_context",
        Ask::Form {
            message: "What context should the prompt use?",
            field: "context",
            kind: "string",
        },
    )];
    round.single(&asks, |answers| {
        GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Prompt with context: {}", answers[0].text()),
        )])
        .into()
    })
}
