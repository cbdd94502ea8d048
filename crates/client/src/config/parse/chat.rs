//! The top-level `chat` object: nexo's own settings for the chat, beside
//! the servers. `provider`, `model`, `baseUrl`, `maxSteps` and
//! `contextWindow` choose the model and how it is used; `approvals` maps `server__tool` patterns to `allow`, `ask` or
//! `deny`. A project's file (found, not chosen) may add approval rules,
//! which the policy lets tighten only, but not choose the model or where
//! requests, and the API key with them, are sent: there those fields are
//! set aside and listed.

use jsonc_parser::ast::{ObjectProp, Value};
use jsonc_parser::common::Ranged;

use super::{Reader, kind_of};
use crate::config::{
    ApprovalAction, ApprovalRule, ChatSettings, ConfigError, ProviderKind, ToolSettings,
};

/// The fields of `chat`.
const CHAT_FIELDS: &[&str] = &[
    "provider",
    "model",
    "baseUrl",
    "maxSteps",
    "contextWindow",
    "approvals",
    "tools",
];
/// The fields of `chat.tools`.
const TOOLS_FIELDS: &[&str] = &["include", "exclude", "alwaysLoad", "searchShare"];
/// The smallest context window worth a chat, in tokens.
const MIN_WINDOW: u64 = 2_048;
/// The most steps a turn may be given.
const MAX_STEPS: u64 = 1000;
/// Why a project's file does not choose the model.
const NOT_FROM_A_PROJECT: &str = "a project's file does not choose the model or where requests \
                                  and your API key go; set it in your own config.json, with a flag \
                                  or in the environment";

impl Reader<'_> {
    pub(super) fn chat(&mut self, prop: &ObjectProp<'_>) -> Result<ChatSettings, ConfigError> {
        let Value::Object(object) = &prop.value else {
            return Err(self.expected(
                &prop.value,
                "chat",
                None,
                "an object of chat settings",
                "\"chat\": {\"provider\": \"anthropic\", \"approvals\": {\"files__*\": \"allow\"}}",
            ));
        };
        let from_project = self.place.project_file.is_some();
        let mut settings = ChatSettings::default();
        for (name, field) in self.unique(object, "in `chat`")? {
            if from_project
                && !["approvals", "tools"].contains(&name)
                && CHAT_FIELDS.contains(&name)
            {
                self.set_aside(field, None, &format!("chat.{name}"), NOT_FROM_A_PROJECT);
                continue;
            }
            match name {
                "provider" => {
                    let example = "\"provider\": \"anthropic\"";
                    let lit = self.string(&field.value, "provider", None, example)?;
                    settings.provider = Some(match lit.value.parse::<ProviderKind>() {
                        Ok(kind) => kind,
                        Err(unknown) => {
                            return Err(self.error(
                                field.value.start(),
                                unknown.to_string(),
                                Some(
                                    "write `anthropic`, or `openai` for any OpenAI-compatible \
                                     server (Ollama, vLLM, llama.cpp, LM Studio) with its \
                                     `baseUrl`"
                                        .into(),
                                ),
                            ));
                        }
                    });
                }
                "model" => {
                    let lit = self.string(&field.value, "model", None, "\"model\": \"gpt-4.1\"")?;
                    settings.model = Some(self.expand(lit, None, false)?);
                }
                "baseUrl" => {
                    let example = "\"baseUrl\": \"http://127.0.0.1:11434/v1\"";
                    let lit = self.string(&field.value, "baseUrl", None, example)?;
                    settings.base_url = Some(self.expand(lit, None, false)?);
                }
                "maxSteps" => settings.max_steps = Some(self.steps(&field.value)?),
                "contextWindow" => settings.context_window = Some(self.window(&field.value)?),
                "approvals" => settings.approvals = self.approvals(&field.value, from_project)?,
                "tools" => settings.tools = self.tools(field)?,
                _ => return Err(self.unknown(field, None, "`chat`", CHAT_FIELDS)),
            }
        }
        Ok(settings)
    }

    fn steps(&self, value: &Value<'_>) -> Result<u32, ConfigError> {
        let steps = match value {
            Value::NumberLit(number) => number.value.parse::<u64>().ok(),
            _ => None,
        };
        match steps {
            Some(steps @ 1..=MAX_STEPS) => Ok(steps as u32),
            _ => Err(self.error(
                value.start(),
                format!(
                    "`maxSteps` must be a whole number from 1 to {MAX_STEPS}, not {}",
                    match value {
                        Value::NumberLit(number) => number.value.to_owned(),
                        other => kind_of(other).to_owned(),
                    }
                ),
                Some("write it as `\"maxSteps\": 25`".into()),
            )),
        }
    }

    fn tools(&self, prop: &ObjectProp<'_>) -> Result<ToolSettings, ConfigError> {
        let example =
            "\"tools\": {\"exclude\": [\"music__clear_library\"], \"alwaysLoad\": [\"dns__*\"]}";
        let Value::Object(object) = &prop.value else {
            return Err(self.expected(&prop.value, "tools", None, "an object", example));
        };
        let mut tools = ToolSettings {
            location: Some(self.location(prop.start())),
            ..ToolSettings::default()
        };
        for (name, field) in self.unique(object, "in `tools`")? {
            let patterns = || -> Result<Vec<String>, ConfigError> {
                let Value::Array(array) = &field.value else {
                    return Err(self.expected(
                        &field.value,
                        name,
                        None,
                        "a list of `server__tool` patterns",
                        &format!("\"{name}\": [\"files__*\"]"),
                    ));
                };
                array
                    .elements
                    .iter()
                    .map(|element| match element {
                        Value::StringLit(lit) => Ok(lit.value.to_string()),
                        other => Err(self.expected(
                            other,
                            name,
                            None,
                            "a `server__tool` pattern",
                            &format!("\"{name}\": [\"files__*\"]"),
                        )),
                    })
                    .collect()
            };
            match name {
                "include" => tools.include = patterns()?,
                "exclude" => tools.exclude = patterns()?,
                "alwaysLoad" => tools.always_load = patterns()?,
                "searchShare" => {
                    let share = match &field.value {
                        Value::NumberLit(number) => number.value.parse::<f64>().ok(),
                        _ => None,
                    };
                    match share {
                        Some(share) if (0.0..=1.0).contains(&share) => {
                            tools.search_share = Some(share);
                        }
                        _ => {
                            return Err(self.error(
                                field.value.start(),
                                "`searchShare` must be a share of the context window, from 0 to 1",
                                Some("write it as `\"searchShare\": 0.1` (a tenth)".into()),
                            ));
                        }
                    }
                }
                _ => return Err(self.unknown(field, None, "`chat.tools`", TOOLS_FIELDS)),
            }
        }
        Ok(tools)
    }

    fn window(&self, value: &Value<'_>) -> Result<u64, ConfigError> {
        match value {
            Value::NumberLit(number) => match number.value.parse::<u64>() {
                Ok(tokens) if tokens >= MIN_WINDOW => Ok(tokens),
                _ => Err(self.error(
                    value.start(),
                    format!(
                        "`contextWindow` must be a whole number of tokens, at least {MIN_WINDOW}, not {}",
                        number.value
                    ),
                    Some("write it as `\"contextWindow\": 32768`".into()),
                )),
            },
            other => Err(self.expected(
                other,
                "contextWindow",
                None,
                "a number of tokens",
                "\"contextWindow\": 32768",
            )),
        }
    }

    fn approvals(
        &self,
        value: &Value<'_>,
        from_project: bool,
    ) -> Result<Vec<ApprovalRule>, ConfigError> {
        let example = "\"approvals\": {\"files__*\": \"allow\", \"*__delete_*\": \"deny\"}";
        let Value::Object(object) = value else {
            return Err(self.expected(
                value,
                "approvals",
                None,
                "an object of tool patterns and what to do",
                example,
            ));
        };
        let mut rules = Vec::new();
        for (pattern, prop) in self.unique(object, "in `approvals`")? {
            let action = match &prop.value {
                Value::StringLit(lit) => lit.value.parse::<ApprovalAction>().ok(),
                _ => None,
            };
            let Some(action) = action else {
                return Err(self.error(
                    prop.value.start(),
                    format!("the rule for `{pattern}` must be `allow`, `ask` or `deny`"),
                    Some(format!("write it as `{example}`")),
                ));
            };
            rules.push(ApprovalRule {
                pattern: pattern.to_owned(),
                action,
                location: self.location(prop.start()),
                from_project,
            });
        }
        Ok(rules)
    }
}
