//! The policy file as written (TOML, or YAML and JSON rewritten as TOML by
//! [`super::yaml`]), and the errors that point into it: every error names
//! the file, the line and column, what is wrong and what to write instead
//! ("did you mean" for a misspelt field or value).

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::shell::ShellHazard;
use super::sql::SqlClass;
use super::yaml::{self, Transcoded};
use crate::detect::Actions;
use crate::error::PolicyError;

/// Where to look for every field a policy takes.
pub const EXAMPLE: &str = "examples/gateway/policy.toml shows every field a policy takes";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// What happens to a request no `allow` or `deny` rule decides.
    pub default: Option<Spanned<DefaultDecision>>,
    #[serde(default)]
    pub sql: SqlFile,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Spanned<RuleFile>>,
    #[serde(default)]
    pub detectors: DetectorsFile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultDecision {
    Allow,
    Deny,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlFile {
    pub dialect: Option<Spanned<String>>,
    pub unparseable: Option<SqlClass>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleDecision {
    Allow,
    Deny,
    Redact,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    pub name: Spanned<String>,
    pub decision: RuleDecision,
    pub reason: Option<String>,
    pub replacement: Option<String>,
    pub server: Option<Spanned<Patterns>>,
    pub method: Option<Spanned<Patterns>>,
    pub tool: Option<Spanned<Patterns>>,
    pub subject: Option<Spanned<Patterns>>,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub lacks_scope: Vec<String>,
    pub client: Option<Spanned<Patterns>>,
    #[serde(default, rename = "argument")]
    pub arguments: Vec<Spanned<ArgumentFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentFile {
    pub pointer: Spanned<String>,
    pub path: Option<Spanned<PathFile>>,
    pub url: Option<Spanned<UrlFile>>,
    pub sql: Option<Vec<SqlClass>>,
    pub shell: Option<Vec<ShellHazard>>,
    pub regex: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathFile {
    pub inside: Option<Vec<String>>,
    pub outside: Option<Vec<String>>,
    pub relative_to: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlFile {
    pub schemes: Option<Vec<String>>,
    pub allow_hosts: Option<Vec<String>>,
    pub deny_hosts: Option<Vec<String>>,
    #[serde(default)]
    pub allow_private: bool,
    #[serde(default)]
    pub allow_addresses: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorsFile {
    pub secrets: Option<ActionsFile>,
    pub injection: Option<ActionsFile>,
}

/// A family's action in each place: `block`, `redact`, `flag` or `off`;
/// a place left out keeps its default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionsFile {
    pub arguments: Option<ActionOrOff>,
    pub results: Option<ActionOrOff>,
    pub descriptions: Option<ActionOrOff>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionOrOff {
    Flag,
    Redact,
    Block,
    Off,
}

impl ActionsFile {
    /// These actions over `defaults`.
    pub fn over(&self, defaults: Actions) -> Actions {
        let pick = |given: Option<ActionOrOff>, default| match given {
            None => default,
            Some(ActionOrOff::Off) => None,
            Some(ActionOrOff::Flag) => Some(crate::detect::Action::Flag),
            Some(ActionOrOff::Redact) => Some(crate::detect::Action::Redact),
            Some(ActionOrOff::Block) => Some(crate::detect::Action::Block),
        };
        Actions {
            arguments: pick(self.arguments, defaults.arguments),
            results: pick(self.results, defaults.results),
            descriptions: pick(self.descriptions, defaults.descriptions),
        }
    }
}

/// One pattern or a list of them (`tool = "read_*"` or `tool = ["a", "b"]`).
#[derive(Debug, Clone)]
pub struct Patterns(pub Vec<String>);

impl<'de> Deserialize<'de> for Patterns {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Patterns;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a string or a list of strings")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Patterns, E> {
                Ok(Patterns(vec![text.to_owned()]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Patterns, A::Error> {
                let mut patterns = Vec::new();
                while let Some(pattern) = seq.next_element::<String>()? {
                    patterns.push(pattern);
                }
                Ok(Patterns(patterns))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A policy file's text, as the TOML reader takes it, and the way back
/// from a place in that TOML to the line and column of the file as written.
pub struct Source<'a> {
    path: &'a Path,
    written: &'a str,
    /// The TOML a YAML or JSON file was rewritten as; `None` for TOML.
    transcoded: Option<Transcoded>,
}

impl<'a> Source<'a> {
    /// Reads `text`, the contents of `path`: YAML for a `.yaml` or `.yml`
    /// file, JSON for `.json`, TOML otherwise.
    pub fn new(path: &'a Path, text: &'a str) -> Result<Self, PolicyError> {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !matches!(
            extension.to_ascii_lowercase().as_str(),
            "yaml" | "yml" | "json"
        ) {
            return Ok(Self {
                path,
                written: text,
                transcoded: None,
            });
        }
        let transcoded = yaml::transcode(text).map_err(|problem| PolicyError::Invalid {
            path: path.to_owned(),
            line: problem.place.line,
            column: problem.place.column,
            message: problem.message,
            hint: format!("check the YAML at that place; {EXAMPLE}"),
        })?;
        Ok(Self {
            path,
            written: text,
            transcoded: Some(transcoded),
        })
    }

    /// Reads the fields of the policy.
    pub fn parse(&self) -> Result<PolicyFile, PolicyError> {
        let toml = self
            .transcoded
            .as_ref()
            .map_or(self.written, |transcoded| transcoded.toml.as_str());
        toml::from_str(toml).map_err(|error| {
            let message = error.message().trim_end().to_owned();
            let hint = serde_hint(&message, self.transcoded.is_some());
            self.error(error.span().unwrap_or(0..0), message, hint)
        })
    }

    /// An error at `span` of the TOML read.
    pub fn error(&self, span: Range<usize>, message: String, hint: String) -> PolicyError {
        let (line, column) = match &self.transcoded {
            Some(transcoded) => {
                let place = transcoded.place_of(span.start);
                (place.line, place.column)
            }
            None => {
                let before = self.written.get(..span.start).unwrap_or(self.written);
                let line = before.matches('\n').count() + 1;
                let column = before
                    .rfind('\n')
                    .map_or(before.chars().count(), |newline| {
                        before[newline + 1..].chars().count()
                    })
                    + 1;
                (line, column)
            }
        };
        PolicyError::Invalid {
            path: self.path.to_owned(),
            line,
            column,
            message,
            hint,
        }
    }
}

/// What to write instead of a field or value serde did not take: the
/// closest of the names it expected, when one is close.
fn serde_hint(message: &str, yaml: bool) -> String {
    let unknown = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|prefix| message.split_once(prefix).map(|(_, rest)| rest));
    if let Some(rest) = unknown
        && let Some((given, rest)) = rest.split_once('`')
    {
        let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
        let closest = expected
            .iter()
            .map(|name| (strsim::jaro_winkler(given, name), *name))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((_, name)) = closest {
            return format!("write `{name}` instead of `{given}`");
        }
        if !expected.is_empty() {
            return format!(
                "write one of {}; {EXAMPLE}",
                expected
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if message.contains("missing field `name`") {
        return "give every rule a `name`: decisions and the audit log name the rule".to_owned();
    }
    if message.contains("missing field `decision`") {
        return "give the rule a `decision`: `allow`, `deny` or `redact`".to_owned();
    }
    if message.contains("missing field `pointer`") {
        return "say which argument to look at: a `pointer` such as `/path` (a JSON pointer into \
                the arguments)"
            .to_owned();
    }
    if yaml {
        format!("check the value at that place; {EXAMPLE}")
    } else {
        format!("check the TOML syntax at that place; {EXAMPLE}")
    }
}
