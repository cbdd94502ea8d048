//! Lints over what a server says about itself: the `initialize` result and
//! the tools, resources and prompts it lists. Pure functions of the JSON,
//! no wire: names safe for every LLM provider, useful descriptions, strict
//! input schemas, plausible annotations, the schema keywords each provider
//! refuses, and the tokens each definition costs a host.

use std::collections::HashMap;

use serde_json::Value;

use crate::finding::{Finding, Group, Severity};

/// Words in a tool's name that say it destroys something.
const DESTRUCTIVE_WORDS: [&str; 12] = [
    "delete", "drop", "remove", "rm", "clear", "destroy", "purge", "wipe", "erase", "truncate",
    "reset", "kill",
];

/// What the words of a description must not be alone.
const PLACEHOLDERS: [&str; 6] = ["todo", "fixme", "tbd", "xxx", "description", "placeholder"];

/// The tokens a tool's definition costs, approximated as its JSON bytes / 4
/// (no tokenizer is run: providers differ, and the figure is for sizing).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ToolSize {
    pub name: String,
    pub tokens: usize,
}

/// Bytes per token in the approximation.
pub const BYTES_PER_TOKEN: usize = 4;
/// A definition this large (in approximate tokens) is worth a look.
const LARGE_TOOL_TOKENS: usize = 1_500;
/// All definitions together this large is worth a look.
const LARGE_TOTAL_TOKENS: usize = 20_000;

pub fn sizes(tools: &[Value]) -> Vec<ToolSize> {
    tools
        .iter()
        .map(|tool| ToolSize {
            name: name_of(tool).to_owned(),
            tokens: tool.to_string().len().div_ceil(BYTES_PER_TOKEN),
        })
        .collect()
}

fn name_of(value: &Value) -> &str {
    value.get("name").and_then(Value::as_str).unwrap_or("")
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// `serverInfo` (footgun 12).
pub fn server_info(initialize: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    let info = initialize.get("serverInfo");
    let version = info.and_then(|info| text(info, "version")).unwrap_or("");
    if version.trim().is_empty() {
        findings.push(
            Finding::new(
                "server-version-missing",
                Severity::Warning,
                Group::Definitions,
                "`serverInfo.version` is missing or empty",
                "footgun 12 (seed 002, Appendix B); best practices §16.6",
                "set serverInfo.version to the server's SemVer version and bump it with every release",
            )
            .evidence(format!(
                "serverInfo: {}",
                info.map(Value::to_string).unwrap_or_else(|| "absent".to_owned())
            )),
        );
    }
    findings
}

/// Every tool's definition.
pub fn tools(tools: &[Value]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for tool in tools {
        *seen.entry(name_of(tool)).or_default() += 1;
    }
    for (name, count) in &seen {
        if *count > 1 {
            findings.push(
                Finding::new(
                    "tool-name-duplicate",
                    Severity::Error,
                    Group::Definitions,
                    format!("{count} tools are named `{name}`"),
                    "spec: tools are identified by name; §16.1 naming",
                    "give every tool a unique name",
                )
                .subject(*name),
            );
        }
    }
    let mut sized = sizes(tools);
    for tool in tools {
        let name = name_of(tool);
        findings.extend(tool_name(name));
        findings.extend(description(
            "tool",
            name,
            text(tool, "description"),
            Severity::Warning,
        ));
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        findings.extend(input_schema(name, schema));
        findings.extend(portability(name, schema));
        findings.extend(annotations(name, tool.get("annotations")));
    }
    sized.sort_by_key(|size| std::cmp::Reverse(size.tokens));
    for size in sized.iter().filter(|size| size.tokens > LARGE_TOOL_TOKENS) {
        findings.push(
            Finding::new(
                "tool-definition-large",
                Severity::Info,
                Group::Definitions,
                format!(
                    "tool `{}` costs about {} tokens before the first prompt",
                    size.name, size.tokens
                ),
                "best practices §16.2–16.3: every definition is sent to the model on every turn",
                "shorten the description, drop examples from the schema, or split the tool",
            )
            .evidence("approximated as the definition's JSON bytes / 4")
            .subject(size.name.clone()),
        );
    }
    let total: usize = sized.iter().map(|size| size.tokens).sum();
    if total > LARGE_TOTAL_TOKENS {
        findings.push(
            Finding::new(
                "tool-definitions-large",
                Severity::Warning,
                Group::Definitions,
                format!(
                    "the {} tools cost about {total} tokens before the first prompt",
                    tools.len()
                ),
                "best practices §16.3: a host pays for every definition on every turn",
                "fewer, better-described tools; move reference material into resources",
            )
            .evidence("approximated as the definitions' JSON bytes / 4"),
        );
    }
    findings
}

/// Names every provider takes: `^[a-zA-Z0-9_-]{1,64}$`.
fn tool_name(name: &str) -> Option<Finding> {
    let safe = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (!safe).then(|| {
        Finding::new(
            "tool-name-unsafe",
            Severity::Error,
            Group::Portability,
            format!("tool name `{name}` is refused by some LLM providers"),
            "best practices §16.1; OpenAI and Anthropic take function names matching ^[a-zA-Z0-9_-]{1,64}$ (Gemini also refuses a leading digit)",
            "use letters, digits, `_` and `-` only, at most 64 characters",
        )
        .evidence(format!("name: {name:?} ({} bytes)", name.len()))
        .subject(name)
    })
}

/// A description that helps the model choose (footgun 5).
fn description(
    kind: &str,
    name: &str,
    description: Option<&str>,
    missing: Severity,
) -> Vec<Finding> {
    const WHY: &str = "footgun 5 (seed 002, Appendix B); best practices §16.2";
    const FIX: &str = "say what it does, when to use it and what it returns, in a sentence or two the model can act on";
    let text = description.unwrap_or("").trim();
    if text.is_empty() {
        return vec![
            Finding::new(
                "description-missing",
                missing,
                Group::Definitions,
                format!("{kind} `{name}` has no description"),
                WHY,
                FIX,
            )
            .evidence(format!("description: {description:?}"))
            .subject(name),
        ];
    }
    let words: String = text
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    let bare: String = name
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    if PLACEHOLDERS.iter().any(|word| words == *word) || text.to_lowercase().starts_with("todo") {
        return vec![
            Finding::new(
                "description-placeholder",
                Severity::Warning,
                Group::Definitions,
                format!("{kind} `{name}`'s description is a placeholder"),
                WHY,
                FIX,
            )
            .evidence(format!("description: {text:?}"))
            .subject(name),
        ];
    }
    if words == bare {
        return vec![
            Finding::new(
                "description-is-name",
                Severity::Warning,
                Group::Definitions,
                format!("{kind} `{name}`'s description only repeats its name"),
                WHY,
                FIX,
            )
            .evidence(format!("description: {text:?}"))
            .subject(name),
        ];
    }
    Vec::new()
}

/// The input schema (best practices §16.7).
fn input_schema(name: &str, schema: &Value) -> Vec<Finding> {
    const WHY: &str =
        "best practices §16.7 (strict schemas); spec: inputSchema is a JSON Schema object";
    let mut findings = Vec::new();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        findings.push(
            Finding::new(
                "schema-not-object",
                Severity::Error,
                Group::Definitions,
                format!("tool `{name}`'s inputSchema is not `\"type\": \"object\"`"),
                WHY,
                "make the input schema an object with typed properties",
            )
            .evidence(format!("inputSchema: {schema}"))
            .subject(name),
        );
        return findings;
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (property, definition) in properties.into_iter().flatten() {
        let typed = ["type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"]
            .iter()
            .any(|key| definition.get(key).is_some());
        if !typed {
            findings.push(
                Finding::new(
                    "schema-property-untyped",
                    Severity::Warning,
                    Group::Definitions,
                    format!("tool `{name}`'s argument `{property}` has no type"),
                    WHY,
                    "give every property a `type` (or an `enum`)",
                )
                .evidence(format!("{property}: {definition}"))
                .subject(name),
            );
        }
    }
    let has_properties = properties.is_some_and(|properties| !properties.is_empty());
    if has_properties && schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        findings.push(
            Finding::new(
                "schema-additional-properties",
                Severity::Info,
                Group::Definitions,
                format!("tool `{name}`'s inputSchema allows arguments it does not name"),
                "best practices §16.7; OpenAI's strict mode requires `additionalProperties: false`",
                "add `\"additionalProperties\": false` so a misspelt argument is refused, not ignored",
            )
            .subject(name),
        );
    }
    findings
}

/// The schema keywords each provider refuses.
fn portability(name: &str, schema: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    let combinators: Vec<&str> = ["anyOf", "oneOf", "allOf", "not", "enum"]
        .into_iter()
        .filter(|key| schema.get(key).is_some())
        .collect();
    if !combinators.is_empty() {
        findings.push(
            Finding::new(
                "schema-top-level-combinator",
                Severity::Warning,
                Group::Portability,
                format!(
                    "tool `{name}`'s inputSchema has `{}` at the top level",
                    combinators.join("`, `")
                ),
                "Anthropic refuses oneOf/allOf/anyOf at the top level of input_schema; OpenAI requires a plain object there",
                "keep the top level a plain object; move alternatives into a property",
            )
            .subject(name),
        );
    }
    let mut keywords: Vec<&'static str> = Vec::new();
    walk(schema, &mut |key, value| {
        let keyword = match key {
            "$ref" => "$ref",
            "$defs" => "$defs",
            "definitions" => "definitions",
            "format"
                if value
                    .as_str()
                    .is_some_and(|format| !matches!(format, "date-time" | "enum")) =>
            {
                "format"
            }
            _ => return,
        };
        if !keywords.contains(&keyword) {
            keywords.push(keyword);
        }
    });
    if keywords
        .iter()
        .any(|key| key.starts_with('$') || *key == "definitions")
    {
        findings.push(
            Finding::new(
                "schema-refs",
                Severity::Warning,
                Group::Portability,
                format!("tool `{name}`'s inputSchema uses `$ref`/`$defs`"),
                "Gemini's function declarations (an OpenAPI 3.0 subset) refuse `$ref` and `$defs`; some hosts do not resolve them",
                "inline the referenced definitions",
            )
            .subject(name),
        );
    }
    if keywords.contains(&"format") {
        findings.push(
            Finding::new(
                "schema-format",
                Severity::Info,
                Group::Portability,
                format!("tool `{name}`'s inputSchema uses `format`"),
                "Gemini takes only `enum` and `date-time` as string formats; OpenAI's strict mode takes a short list",
                "describe the format in the property's description instead, or keep to date-time",
            )
            .subject(name),
        );
    }
    findings
}

/// Calls `visit` with every key and value of `schema`, at any depth.
fn walk(schema: &Value, visit: &mut impl FnMut(&str, &Value)) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value.as_object()) {
                    // Property names are names, not keywords.
                    ("properties", Some(properties)) => {
                        properties.values().for_each(|value| walk(value, visit));
                    }
                    _ => {
                        visit(key, value);
                        walk(value, visit);
                    }
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| walk(item, visit)),
        _ => {}
    }
}

/// Whether a tool's name says it destroys something.
pub fn sounds_destructive(name: &str) -> bool {
    split_words(name)
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| DESTRUCTIVE_WORDS.contains(&word))
}

/// Annotations present and plausible (footgun 8).
fn annotations(name: &str, annotations: Option<&Value>) -> Vec<Finding> {
    const WHY: &str = "footgun 8 (seed 002, Appendix B); best practices §16.5";
    let hint = |key: &str| {
        annotations
            .and_then(|annotations| annotations.get(key))
            .and_then(Value::as_bool)
    };
    let evidence = format!(
        "annotations: {}",
        annotations
            .map(Value::to_string)
            .unwrap_or_else(|| "absent".to_owned())
    );
    let destructive_name = sounds_destructive(name);
    if destructive_name && hint("readOnlyHint") == Some(true) {
        return vec![
            Finding::new(
                "readonly-destructive-name",
                Severity::Error,
                Group::Definitions,
                format!("tool `{name}` sounds destructive but says `readOnlyHint: true`"),
                WHY,
                "if it changes anything, drop readOnlyHint and set destructiveHint: true; if it does not, rename it",
            )
            .evidence(evidence)
            .subject(name),
        ];
    }
    if destructive_name && hint("destructiveHint") != Some(true) {
        return vec![
            Finding::new(
                "destructive-without-hint",
                Severity::Error,
                Group::Definitions,
                format!("tool `{name}` sounds destructive but has no `destructiveHint: true`"),
                WHY,
                "set annotations.destructiveHint: true (and readOnlyHint: false), so hosts ask before calling it",
            )
            .evidence(evidence)
            .subject(name),
        ];
    }
    if annotations.is_none_or(|annotations| annotations.as_object().is_none_or(|a| a.is_empty())) {
        return vec![
            Finding::new(
                "annotations-missing",
                Severity::Info,
                Group::Definitions,
                format!("tool `{name}` has no annotations"),
                WHY,
                "set readOnlyHint, destructiveHint, idempotentHint and openWorldHint to what the tool does",
            )
            .subject(name),
        ];
    }
    Vec::new()
}

/// `deleteUser` and `delete-user` as `delete_user`, for word matching.
fn split_words(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Resources and templates: names and descriptions.
pub fn resources(resources: &[Value], templates: &[Value]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for resource in resources.iter().chain(templates) {
        let uri = text(resource, "uri")
            .or_else(|| text(resource, "uriTemplate"))
            .unwrap_or("");
        findings.extend(description(
            "resource",
            uri,
            text(resource, "description"),
            Severity::Info,
        ));
    }
    findings
}

/// Prompts: descriptions.
pub fn prompts(prompts: &[Value]) -> Vec<Finding> {
    prompts
        .iter()
        .flat_map(|prompt| {
            description(
                "prompt",
                name_of(prompt),
                text(prompt, "description"),
                Severity::Info,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(findings: &[Finding]) -> Vec<&str> {
        findings.iter().map(|finding| finding.id).collect()
    }

    #[test]
    fn a_clean_tool_has_no_findings_above_info() {
        let tool = json!({
            "name": "echo",
            "description": "Returns the text it is given, unchanged.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        });
        assert!(tools(&[tool]).is_empty());
    }

    #[test]
    fn names_descriptions_schemas_and_annotations_are_linted() {
        let found = tools(&[
            json!({"name": "delete.user", "description": "TODO", "inputSchema": {"anyOf": [{"type": "object"}]}}),
            json!({"name": "deleteUser", "description": "Delete user", "inputSchema": {"type": "object", "properties": {"id": {}}}}),
            json!({"name": "wipe_disk", "description": "Wipes the disk.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
            json!({"name": "x", "description": "x", "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a", "format": "uri"}}}}),
        ]);
        let ids = ids(&found);
        for id in [
            "tool-name-unsafe",
            "description-placeholder",
            "schema-not-object",
            "destructive-without-hint",
            "description-is-name",
            "schema-property-untyped",
            "readonly-destructive-name",
            "schema-refs",
            "schema-format",
        ] {
            assert!(ids.contains(&id), "{id} missing from {ids:?}");
        }
    }

    #[test]
    fn sizes_are_bytes_over_four() {
        let tool = json!({"name": "a"});
        assert_eq!(sizes(&[tool])[0].tokens, 3);
    }
}
