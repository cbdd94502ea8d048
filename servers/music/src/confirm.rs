//! Asking the user before writing, in whatever way the client supports
//! ([`Channel`]): an `elicitation/create` request over a 2025-era session
//! whose client declared form elicitation; an `input_required` result
//! (Multi Round-Trip Requests, 2026-07-28) carrying the same form and a
//! sealed `requestState`, when a 2026-07-28 request declares elicitation;
//! otherwise a `needs_confirmation` result, answered by retrying with
//! arguments (the tools build that one).
//!
//! The questions are one [`Form`]: a boolean `confirm` and/or a `playlist`
//! chosen from an enum of candidates. An answer is read into a [`Reply`];
//! a declined or cancelled form means nothing is written.
//!
//! `requestState` is sealed with rmcp's [`RequestStateCodec`] (HMAC-SHA256)
//! under the key kept in the database, bound to the tool and to what the
//! call is about (its workspace and validated arguments), and valid for
//! [`STATE_TTL`]. So a retry may reach any server process on the same
//! database, or the same one after a restart, and a state copied to
//! another call, altered or expired is refused with `-32602`.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequiredResult,
    InputResponses, JsonObject, ProtocolVersion, RequestStateCodec, SealOptions,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The form field holding a yes/no answer.
pub const CONFIRM: &str = "confirm";
/// The form field holding the chosen playlist.
pub const PLAYLIST: &str = "playlist";
/// The key of the one input request an `input_required` result carries.
pub const INPUT_KEY: &str = "confirmation";
/// How long a sealed `requestState` stays valid: long enough for a person
/// to read the question.
pub const STATE_TTL: Duration = Duration::from_secs(30 * 60);
/// How long an `elicitation/create` request waits for the person's answer
/// before the call falls back to `needs_confirmation`.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How this request's client can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A 2025-era session whose client declared form elicitation.
    Elicitation,
    /// A 2026-07-28 request whose client declared form elicitation.
    InputRequired,
    /// A client that declared neither: the caller retries with arguments.
    Arguments,
}

impl Channel {
    /// The channel for `context`'s request: by its protocol revision and
    /// the elicitation capability its client declared (an empty
    /// `elicitation` object means form elicitation, as the spec says).
    pub fn of(context: &RequestContext<RoleServer>) -> Self {
        let form = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        let stateless = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        match (form, stateless) {
            (false, _) => Channel::Arguments,
            (true, true) => Channel::InputRequired,
            (true, false) => Channel::Elicitation,
        }
    }
}

/// One form: a message and the fields asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub message: String,
    /// Ask `confirm`, with this title.
    pub confirm: Option<String>,
    /// Ask `playlist`, one of these.
    pub playlists: Vec<String>,
}

impl Form {
    /// The form's JSON schema, as `requestedSchema`.
    fn schema(&self) -> Value {
        let mut properties = JsonObject::new();
        let mut required = Vec::new();
        if let Some(title) = &self.confirm {
            properties.insert(
                CONFIRM.to_owned(),
                json!({ "type": "boolean", "title": title, "default": false }),
            );
            required.push(CONFIRM);
        }
        if !self.playlists.is_empty() {
            properties.insert(
                PLAYLIST.to_owned(),
                json!({
                    "type": "string",
                    "title": "Playlist",
                    "description": "The playlist to add the song to",
                    "enum": self.playlists,
                }),
            );
            required.push(PLAYLIST);
        }
        json!({ "type": "object", "properties": properties, "required": required })
    }

    /// The `elicitation/create` parameters asking this form.
    pub fn params(&self) -> Result<ElicitRequestParams, McpError> {
        serde_json::from_value(json!({
            "mode": "form",
            "message": self.message,
            "requestedSchema": self.schema(),
        }))
        .map_err(|error| McpError::internal_error(format!("cannot build the form: {error}"), None))
    }

    /// The same request as an `input_required` input request.
    fn input_request(&self) -> Result<InputRequest, McpError> {
        Ok(InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
            self.params()?,
        )))
    }
}

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Accepted, with these field values.
    Accepted(JsonObject),
    Declined,
    Cancelled,
}

impl Reply {
    pub fn from_result(result: ElicitResult) -> Self {
        match result.action {
            ElicitationAction::Accept => match result.content {
                Some(Value::Object(fields)) => Reply::Accepted(fields),
                _ => Reply::Accepted(JsonObject::new()),
            },
            ElicitationAction::Decline => Reply::Declined,
            // Cancel, and any action a later revision may add: not a yes.
            _ => Reply::Cancelled,
        }
    }

    /// The client's answer to [`INPUT_KEY`] in an `input_required` retry;
    /// `None` when missing or not an elicitation result.
    pub fn from_responses(responses: Option<&InputResponses>) -> Option<Self> {
        let response = responses?.get(INPUT_KEY)?.clone();
        let result: ElicitResult = serde_json::from_value(response).ok()?;
        Some(Self::from_result(result))
    }
}

/// Asks `form` over the session and waits for the answer, at most
/// [`ELICITATION_TIMEOUT`].
pub async fn elicit(context: &RequestContext<RoleServer>, form: &Form) -> Result<Reply, McpError> {
    let result = context
        .peer
        .create_elicitation_with_timeout(form.params()?, Some(ELICITATION_TIMEOUT))
        .await
        .map_err(|error| McpError::internal_error(error.to_string(), None))?;
    Ok(Reply::from_result(result))
}

/// What an `input_required` round asked, sealed into `requestState`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    /// Whether `confirm` was asked.
    pub confirm: bool,
    /// Whether `playlist` was asked.
    pub playlist: bool,
}

/// Seals and opens `requestState` under the library's key.
#[derive(Debug)]
pub struct Sealer {
    codec: RequestStateCodec,
}

impl Sealer {
    /// A sealer with `key` (at least [`RequestStateCodec::MIN_KEY_LENGTH`]
    /// bytes, which the library's key always is).
    pub fn new(key: &[u8]) -> Result<Self, rmcp::model::RequestStateError> {
        Ok(Self {
            codec: RequestStateCodec::try_new(key.to_vec())?,
        })
    }

    /// What the state is bound to: the tool and the call's subject.
    fn bound(tool: &str, subject: &[u8]) -> Vec<u8> {
        let mut bound = Vec::with_capacity(tool.len() + 1 + subject.len());
        bound.extend_from_slice(tool.as_bytes());
        bound.push(0);
        bound.extend_from_slice(subject);
        bound
    }

    /// An `input_required` result asking `form`, remembering `asked`.
    pub fn ask(
        &self,
        tool: &str,
        subject: &[u8],
        form: &Form,
        asked: Asked,
    ) -> Result<InputRequiredResult, McpError> {
        let bound = Self::bound(tool, subject);
        let options = SealOptions::new().associated_data(&bound).ttl(STATE_TTL);
        let sealed = self
            .codec
            .seal_json_with(&asked, &options)
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        let requests = BTreeMap::from([(INPUT_KEY.to_owned(), form.input_request()?)]);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }

    /// What the round that sealed `sealed` asked, if it was sealed for this
    /// tool and subject, unaltered, and is still valid.
    pub fn open(&self, tool: &str, subject: &[u8], sealed: &str) -> Result<Asked, McpError> {
        self.codec
            .open_json_with(sealed, &Self::bound(tool, subject))
            .map_err(|error| {
                McpError::invalid_params(
                    format!(
                        "requestState does not belong to this `{tool}` call ({error}); \
                         call again without requestState and inputResponses"
                    ),
                    None,
                )
            })
    }
}

/// The boolean `confirm` of an accepted form, if it holds one.
pub fn confirmed(fields: &JsonObject) -> Option<bool> {
    fields.get(CONFIRM).and_then(Value::as_bool)
}

/// The `playlist` of an accepted form, if it holds a string.
pub fn chosen_playlist(fields: &JsonObject) -> Option<&str> {
    fields.get(PLAYLIST).and_then(Value::as_str)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::new(&[7u8; 32]).unwrap()
    }

    fn form() -> Form {
        Form {
            message: "Add it?".into(),
            confirm: Some("Add it anyway".into()),
            playlists: vec!["Rock".into(), "1970s".into()],
        }
    }

    #[test]
    fn the_form_asks_a_boolean_and_an_enum() {
        let params = serde_json::to_value(form().params().unwrap()).unwrap();
        assert_eq!(params["mode"], "form");
        let schema = &params["requestedSchema"];
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
        assert_eq!(
            schema["properties"]["playlist"]["enum"],
            json!(["Rock", "1970s"])
        );
        assert_eq!(schema["required"], json!(["confirm", "playlist"]));
    }

    #[test]
    fn state_opens_only_for_its_tool_and_subject() {
        let sealer = sealer();
        let asked = Asked {
            confirm: true,
            playlist: false,
        };
        let result = sealer.ask("add_song", b"song-a", &form(), asked).unwrap();
        let sealed = result.request_state.clone().unwrap();
        assert_eq!(sealer.open("add_song", b"song-a", &sealed).unwrap(), asked);
        assert!(sealer.open("add_song", b"song-b", &sealed).is_err());
        assert!(sealer.open("clear_library", b"song-a", &sealed).is_err());
        let mut forged = sealed.clone();
        forged.push('x');
        assert!(sealer.open("add_song", b"song-a", &forged).is_err());
        let other = Sealer::new(&[8u8; 32]).unwrap();
        assert!(other.open("add_song", b"song-a", &sealed).is_err());
        let request = serde_json::to_value(&result).unwrap();
        assert_eq!(
            request["inputRequests"][INPUT_KEY]["method"],
            "elicitation/create"
        );
    }

    #[test]
    fn replies_from_input_responses() {
        let responses = |value: Value| BTreeMap::from([(INPUT_KEY.to_owned(), value)]);
        let accepted = responses(json!({ "action": "accept", "content": { "confirm": true } }));
        let Some(Reply::Accepted(fields)) = Reply::from_responses(Some(&accepted)) else {
            panic!("an accepted form");
        };
        assert_eq!(confirmed(&fields), Some(true));
        let declined = responses(json!({ "action": "decline" }));
        assert_eq!(
            Reply::from_responses(Some(&declined)),
            Some(Reply::Declined)
        );
        let cancelled = responses(json!({ "action": "cancel" }));
        assert_eq!(
            Reply::from_responses(Some(&cancelled)),
            Some(Reply::Cancelled)
        );
        assert_eq!(Reply::from_responses(Some(&responses(json!(3)))), None);
        assert_eq!(Reply::from_responses(None), None);
    }
}
