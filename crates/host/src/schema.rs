//! Tools' input schemas made acceptable to each provider, so that one odd
//! tool never fails a request: a schema is [`Normalization::Normalized`]
//! (possibly with [`changes`](Normalization::Normalized::changes) worth
//! showing), or [`Normalization::Withheld`] with the reason a person reads
//! in /servers. Names are not touched: nexo-client's namespace already
//! makes them safe for every provider.
//!
//! For every [`Dialect`]:
//! - Local `$ref`s (`#/$defs/...`, `#/definitions/...`, any JSON Pointer
//!   into the schema) are inlined, read by nexo-client's [`Schema`]; a
//!   keyword beside a `$ref` is kept over the target's. `$defs` and
//!   `definitions` are then dropped. A recursive reference (a `$ref` met
//!   again while it is being inlined, or `#`), one to a definition the
//!   schema lacks and one outside the schema (`https://...`) withhold the
//!   tool: the model cannot be told what to send.
//! - Nesting is bounded ([`MAX_DEPTH`] levels) and so is the size once
//!   inlined ([`MAX_NODES`] JSON values): a deeper or larger schema is
//!   withheld. Both bounds are explicit, so no schema exhausts the stack or
//!   blows up through references to references.
//! - The top level is `{"type": "object", ...}`: a missing `type` is
//!   added, `["object", "null"]` becomes `"object"`, any other type (or a
//!   schema that is no object, or `false`) withholds the tool; an absent
//!   `properties` becomes `{}`. A property whose schema is neither an object
//!   nor a boolean is dropped (OpenAI answers 400 "is not of type 'object',
//!   'boolean'"), and so is a keyword that should hold schemas and holds
//!   something else.
//! - A `description` longer than [`MAX_DESCRIPTION`] characters is cut,
//!   with a marker saying how much ([`truncate_description`]; the tool's own
//!   description goes through the same function).
//!
//! [`Dialect::Anthropic`] (the Messages API answers 400 "input_schema does
//! not support oneOf, allOf, or anyOf at the top level", for the whole
//! request, as many MCP hosts' issue trackers show): a root `allOf` is
//! merged into the root (its branches' `properties` and `required`); a root
//! `anyOf` or `oneOf` is dropped when the root has its own `properties`
//! (the server still checks it), and otherwise merged (every branch's
//! properties, `required` only where every branch requires it). A branch
//! that is not an object schema withholds the tool.
//!
//! [`Dialect::OpenAiCompatible`] (Chat Completions function `parameters`,
//! also read by Ollama, vLLM, llama.cpp and LM Studio, whose grammar
//! converters know less than OpenAI): `$schema`, `$id`, `$comment` and
//! `examples` are dropped; `const` becomes a one-value `enum`; a `format`
//! outside the ones OpenAI's structured outputs list (`date-time`, `time`,
//! `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`) is
//! dropped.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use nexo_client::arguments::Schema;
use rmcp::model::JsonObject;
use serde_json::Value;

/// The deepest a schema may nest, references inlined.
pub const MAX_DEPTH: usize = 64;
/// The most JSON values a schema may hold, references inlined.
pub const MAX_NODES: usize = 50_000;
/// The longest description sent, in characters.
pub const MAX_DESCRIPTION: usize = 4_096;

/// The `format` values OpenAI's structured outputs accept.
const OPENAI_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The JSON Schema a provider's API takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// The Anthropic Messages API's `input_schema`.
    Anthropic,
    /// OpenAI-compatible Chat Completions' function `parameters`.
    OpenAiCompatible,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Anthropic => "Anthropic",
            Self::OpenAiCompatible => "OpenAI-compatible providers",
        })
    }
}

/// A schema ready to send, or why the tool is not sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Normalization {
    Normalized {
        schema: JsonObject,
        /// What was changed, each a short sentence, for /servers.
        changes: Vec<String>,
    },
    Withheld {
        reason: Withheld,
    },
}

/// Why a tool's schema cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Withheld {
    #[error("its input schema is {found}, and a tool takes an object of arguments")]
    NotAnObject { found: String },
    #[error(
        "its input schema refers to `{reference}` from inside itself, a recursion that cannot be inlined"
    )]
    Recursive { reference: String },
    #[error("its input schema refers to `{reference}`, which it does not define")]
    MissingReference { reference: String },
    #[error("its input schema refers to `{reference}`, outside itself, which nexo does not fetch")]
    RemoteReference { reference: String },
    #[error("its input schema nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("its input schema holds more than {MAX_NODES} values once its references are inlined")]
    TooLarge,
    #[error("its input schema's top-level `{keyword}` cannot be expressed for {dialect}: {detail}")]
    Inexpressible {
        keyword: &'static str,
        dialect: Dialect,
        detail: String,
    },
}

/// `text` cut to [`MAX_DESCRIPTION`] characters, with a marker saying how
/// many were left out.
pub fn truncate_description(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_DESCRIPTION) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => {
            let left = text[cut..].chars().count();
            Cow::Owned(format!(
                "{}… [cut by nexo: {left} more characters]",
                &text[..cut]
            ))
        }
    }
}

/// Normalizes a tool's input schema for `dialect` (the rules in the module
/// comment).
pub fn normalize(schema: &Value, dialect: Dialect) -> Normalization {
    match normalized(schema, dialect) {
        Ok((schema, changes)) => Normalization::Normalized { schema, changes },
        Err(reason) => Normalization::Withheld { reason },
    }
}

fn normalized(schema: &Value, dialect: Dialect) -> Result<(JsonObject, Vec<String>), Withheld> {
    let empty = Value::Object(JsonObject::new());
    let schema = match schema {
        Value::Bool(true) => &empty,
        other => other,
    };
    let root = match schema {
        Value::Object(root) => root,
        other => {
            return Err(Withheld::NotAnObject {
                found: kind(other).to_owned(),
            });
        }
    };
    let mut walker = Walker {
        reader: Schema::new(root),
        dialect,
        nodes: 0,
        expanding: Vec::new(),
        changes: BTreeSet::new(),
    };
    let mut out = match walker.schema(schema, 0)? {
        Value::Object(out) => out,
        other => {
            return Err(Withheld::NotAnObject {
                found: kind(&other).to_owned(),
            });
        }
    };
    match out.get("type") {
        None => {
            out.insert("type".into(), Value::String("object".into()));
            walker.change("`type: object` added at the top");
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(Value::Array(kinds)) if kinds.iter().any(|kind| kind == "object") => {
            out.insert("type".into(), Value::String("object".into()));
            walker.change("the top-level `type` narrowed to `object`");
        }
        Some(other) => {
            return Err(Withheld::NotAnObject {
                found: format!("of type {other}"),
            });
        }
    }
    if dialect == Dialect::Anthropic {
        flatten_root(&mut out, &mut walker)?;
    }
    if !out.get("properties").is_some_and(Value::is_object) {
        out.insert("properties".into(), Value::Object(JsonObject::new()));
    }
    Ok((out, walker.changes.into_iter().collect()))
}

/// A JSON value's kind, in words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(true) => "`true`",
        Value::Bool(false) => "`false`, which no arguments satisfy",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Merges or drops the root's `allOf`, `anyOf` and `oneOf`.
fn flatten_root(out: &mut JsonObject, walker: &mut Walker<'_>) -> Result<(), Withheld> {
    let had_properties = out.contains_key("properties");
    for keyword in ["allOf", "anyOf", "oneOf"] {
        let Some(branches) = out.remove(keyword) else {
            continue;
        };
        let Value::Array(branches) = branches else {
            continue;
        };
        if keyword != "allOf" && had_properties {
            walker.change(format!(
                "the top-level `{keyword}` dropped (the server still checks it)"
            ));
            continue;
        }
        let inexpressible = |detail: String| Withheld::Inexpressible {
            keyword,
            dialect: walker.dialect,
            detail,
        };
        let mut required: Option<BTreeSet<String>> = None;
        for branch in &branches {
            let branch = match branch {
                Value::Bool(true) => continue,
                Value::Object(branch) => branch,
                Value::Bool(false) if keyword != "allOf" => continue,
                other => return Err(inexpressible(format!("a branch is {}", kind(other)))),
            };
            match branch.get("type") {
                None => {}
                Some(Value::String(kind)) if kind == "object" => {}
                Some(other) => {
                    return Err(inexpressible(format!("a branch is of type {other}")));
                }
            }
            if let Some(Value::Object(properties)) = branch.get("properties") {
                let target = out
                    .entry("properties")
                    .or_insert_with(|| Value::Object(JsonObject::new()));
                if let Value::Object(target) = target {
                    for (name, schema) in properties {
                        target.entry(name.clone()).or_insert_with(|| schema.clone());
                    }
                }
            }
            let names: BTreeSet<String> = branch
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|name| name.as_str().map(str::to_owned))
                .collect();
            required = Some(match (keyword, required) {
                (_, None) => names,
                ("allOf", Some(all)) => all.union(&names).cloned().collect(),
                (_, Some(every)) => every.intersection(&names).cloned().collect(),
            });
        }
        let mut merged: Vec<Value> = out
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for name in required.into_iter().flatten() {
            if !merged
                .iter()
                .any(|known| known.as_str() == Some(name.as_str()))
            {
                merged.push(Value::String(name));
            }
        }
        if !merged.is_empty() {
            out.insert("required".into(), Value::Array(merged));
        }
        walker.change(format!(
            "the top-level `{keyword}` merged into the top-level properties"
        ));
    }
    Ok(())
}

/// Walks a schema, writing its normalized copy.
struct Walker<'a> {
    reader: Schema<'a>,
    dialect: Dialect,
    nodes: usize,
    /// The references being inlined, outermost first.
    expanding: Vec<&'a str>,
    changes: BTreeSet<String>,
}

/// Keywords whose value is one schema.
const ONE_SCHEMA: [&str; 11] = [
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LIST: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAP: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];

impl<'a> Walker<'a> {
    fn change(&mut self, change: impl Into<String>) {
        self.changes.insert(change.into());
    }

    fn count(&mut self, depth: usize) -> Result<(), Withheld> {
        if depth > MAX_DEPTH {
            return Err(Withheld::TooDeep);
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Withheld::TooLarge);
        }
        Ok(())
    }

    /// One (sub)schema.
    fn schema(&mut self, value: &'a Value, depth: usize) -> Result<Value, Withheld> {
        self.count(depth)?;
        let object = match value {
            Value::Object(object) => object,
            Value::Bool(flag) => return Ok(Value::Bool(*flag)),
            _ => return Ok(Value::Object(JsonObject::new())),
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            return self.inline(value, object, reference, depth);
        }
        let mut out = JsonObject::new();
        self.keywords(object, &mut out, depth)?;
        Ok(Value::Object(out))
    }

    /// Replaces a `$ref` by its target, the keywords beside it kept.
    fn inline(
        &mut self,
        value: &'a Value,
        object: &'a JsonObject,
        reference: &'a str,
        depth: usize,
    ) -> Result<Value, Withheld> {
        let owned = || reference.to_owned();
        if !reference.starts_with('#') {
            return Err(Withheld::RemoteReference { reference: owned() });
        }
        if reference == "#" || self.expanding.contains(&reference) {
            return Err(Withheld::Recursive { reference: owned() });
        }
        let target = self.reader.resolve(value);
        if std::ptr::eq(target, value) {
            return Err(Withheld::MissingReference { reference: owned() });
        }
        if target.get("$ref").is_some() {
            return Err(Withheld::Recursive { reference: owned() });
        }
        if !(target.is_object() || target.is_boolean()) {
            return Err(Withheld::MissingReference { reference: owned() });
        }
        self.expanding.push(reference);
        let inlined = self.schema(target, depth + 1)?;
        self.expanding.pop();
        self.change("`$ref`s inlined");
        let mut out = match inlined {
            Value::Object(out) => out,
            Value::Bool(true) => JsonObject::new(),
            other => return Ok(other),
        };
        let mut siblings = JsonObject::new();
        self.keywords(object, &mut siblings, depth)?;
        out.extend(siblings);
        Ok(Value::Object(out))
    }

    /// The keywords of one schema object (its `$ref` aside).
    fn keywords(
        &mut self,
        object: &'a JsonObject,
        out: &mut JsonObject,
        depth: usize,
    ) -> Result<(), Withheld> {
        let openai = self.dialect == Dialect::OpenAiCompatible;
        for (key, value) in object {
            let key = key.as_str();
            let kept = match (key, value) {
                ("$ref", _) => continue,
                ("$defs" | "definitions", _) => {
                    self.change("`$defs` dropped once inlined");
                    continue;
                }
                (_, Value::Object(map)) if SCHEMA_MAP.contains(&key) => {
                    let mut schemas = JsonObject::new();
                    for (name, schema) in map {
                        if schema.is_object() || schema.is_boolean() {
                            schemas.insert(name.clone(), self.schema(schema, depth + 1)?);
                        } else {
                            self.change(format!("`{key}` entry `{name}` dropped: it is no schema"));
                        }
                    }
                    Value::Object(schemas)
                }
                (_, Value::Array(items)) if SCHEMA_LIST.contains(&key) || key == "items" => {
                    let mut schemas = Vec::with_capacity(items.len());
                    for item in items {
                        if item.is_object() || item.is_boolean() {
                            schemas.push(self.schema(item, depth + 1)?);
                        } else {
                            self.change(format!("an entry of `{key}` dropped: it is no schema"));
                        }
                    }
                    Value::Array(schemas)
                }
                (_, Value::Object(_) | Value::Bool(_))
                    if ONE_SCHEMA.contains(&key) || key == "items" =>
                {
                    self.schema(value, depth + 1)?
                }
                _ if SCHEMA_MAP.contains(&key)
                    || SCHEMA_LIST.contains(&key)
                    || ONE_SCHEMA.contains(&key)
                    || key == "items" =>
                {
                    self.change(format!("`{key}` dropped: it holds no schema"));
                    continue;
                }
                ("description", Value::String(text)) => {
                    let text = truncate_description(text);
                    if let Cow::Owned(_) = text {
                        self.change("a long description cut");
                    }
                    Value::String(text.into_owned())
                }
                ("$schema" | "$id" | "$comment" | "examples", _) if openai => {
                    self.change(format!("`{key}` dropped"));
                    continue;
                }
                ("const", _) if openai => {
                    if !object.contains_key("enum") {
                        out.insert(
                            "enum".into(),
                            Value::Array(vec![self.data(value, depth + 1)?]),
                        );
                    }
                    self.change("`const` written as a one-value `enum`");
                    continue;
                }
                ("format", Value::String(format)) if openai => {
                    if !OPENAI_FORMATS.contains(&format.as_str()) {
                        self.change(format!("`format: {format}` dropped"));
                        continue;
                    }
                    value.clone()
                }
                _ => self.data(value, depth + 1)?,
            };
            out.insert(key.to_owned(), kept);
        }
        Ok(())
    }

    /// A keyword's value that holds no schema (`enum`, `default`, ...),
    /// copied within the same bounds.
    fn data(&mut self, value: &'a Value, depth: usize) -> Result<Value, Withheld> {
        self.count(depth)?;
        Ok(match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.data(item, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, item)| Ok((key.clone(), self.data(item, depth + 1)?)))
                    .collect::<Result<_, Withheld>>()?,
            ),
            Value::String(text) => Value::String(text.clone()),
            other => other.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn normalized(schema: &Value, dialect: Dialect) -> Value {
        match normalize(schema, dialect) {
            Normalization::Normalized { schema, .. } => Value::Object(schema),
            Normalization::Withheld { reason } => json!({"withheld": reason.to_string()}),
        }
    }

    fn withheld(schema: &Value, dialect: Dialect) -> Option<Withheld> {
        match normalize(schema, dialect) {
            Normalization::Withheld { reason } => Some(reason),
            Normalization::Normalized { .. } => None,
        }
    }

    /// Takes a deep value apart without recursion (serde_json's drop recurses).
    fn teardown(value: Value) {
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(object) => stack.extend(object.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }

    #[test]
    fn references_are_inlined_and_definitions_dropped() {
        let schema = json!({
            "type": "object",
            "properties": {
                "home": {"$ref": "#/$defs/Address", "description": "Where you live"},
                "work": {"$ref": "#/definitions/Place"}
            },
            "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}, "description": "An address"}},
            "definitions": {"Place": {"$ref": "#/$defs/Address"}}
        });
        let expected = json!({
            "type": "object",
            "properties": {
                "home": {"type": "object", "properties": {"city": {"type": "string"}}, "description": "Where you live"},
                "work": {"type": "object", "properties": {"city": {"type": "string"}}, "description": "An address"}
            }
        });
        for dialect in [Dialect::Anthropic, Dialect::OpenAiCompatible] {
            assert_eq!(normalized(&schema, dialect), expected);
        }
    }

    #[test]
    fn bad_references_withhold_the_tool() {
        let cycle = json!({"properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"properties": {"next": {"$ref": "#/$defs/Node"}}}}});
        assert_eq!(
            withheld(&cycle, Dialect::Anthropic),
            Some(Withheld::Recursive {
                reference: "#/$defs/Node".into()
            })
        );
        let loop_of_refs = json!({"properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}});
        assert!(matches!(
            withheld(&loop_of_refs, Dialect::Anthropic),
            Some(Withheld::Recursive { .. })
        ));
        let root = json!({"properties": {"again": {"$ref": "#"}}});
        assert!(matches!(
            withheld(&root, Dialect::Anthropic),
            Some(Withheld::Recursive { .. })
        ));
        let missing = json!({"properties": {"a": {"$ref": "#/$defs/Nope"}}});
        let reason = withheld(&missing, Dialect::OpenAiCompatible);
        assert_eq!(
            reason.as_ref().map(ToString::to_string).as_deref(),
            Some("its input schema refers to `#/$defs/Nope`, which it does not define")
        );
        let remote = json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}});
        assert!(matches!(
            withheld(&remote, Dialect::Anthropic),
            Some(Withheld::RemoteReference { .. })
        ));
    }

    #[test]
    fn references_that_multiply_are_bounded() {
        let mut defs = JsonObject::new();
        defs.insert("L0".into(), json!({"type": "string"}));
        for level in 1..30 {
            let below = format!("#/$defs/L{}", level - 1);
            defs.insert(
                format!("L{level}"),
                json!({"properties": {"a": {"$ref": below}, "b": {"$ref": below}}}),
            );
        }
        let schema = json!({"properties": {"x": {"$ref": "#/$defs/L29"}}, "$defs": defs});
        assert_eq!(
            withheld(&schema, Dialect::Anthropic),
            Some(Withheld::TooLarge)
        );
    }

    #[test]
    fn the_top_level_is_an_object() {
        assert_eq!(
            normalized(
                &json!({"properties": {"a": {"type": "string"}}}),
                Dialect::Anthropic
            ),
            json!({"properties": {"a": {"type": "string"}}, "type": "object"})
        );
        assert_eq!(
            normalized(
                &json!({"type": ["object", "null"]}),
                Dialect::OpenAiCompatible
            ),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            normalized(&json!(true), Dialect::Anthropic),
            json!({"type": "object", "properties": {}})
        );
        for schema in [
            json!({"type": "string"}),
            json!(false),
            json!([1]),
            json!("x"),
            json!(null),
        ] {
            assert!(
                matches!(
                    withheld(&schema, Dialect::Anthropic),
                    Some(Withheld::NotAnObject { .. })
                ),
                "{schema}"
            );
        }
        // Properties that are no schemas are dropped.
        let broken =
            json!({"type": "object", "properties": {"a": {"type": "string"}, "type": "object"}});
        assert_eq!(
            normalized(&broken, Dialect::OpenAiCompatible),
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
    }

    #[test]
    fn anthropic_gets_no_combinator_at_the_root() {
        let either = json!({"anyOf": [
            {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content", "kind"]},
            {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url", "kind"]}
        ]});
        assert_eq!(
            normalized(&either, Dialect::Anthropic),
            json!({"type": "object", "properties": {"content": {"type": "string"}, "url": {"type": "string"}}, "required": ["kind"]})
        );
        let constrained = json!({"type": "object", "properties": {"a": {}, "b": {}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]});
        assert_eq!(
            normalized(&constrained, Dialect::Anthropic),
            json!({"type": "object", "properties": {"a": {}, "b": {}}})
        );
        let all = json!({"allOf": [{"properties": {"a": {}}, "required": ["a"]}, {"properties": {"b": {}}, "required": ["b"]}]});
        assert_eq!(
            normalized(&all, Dialect::Anthropic),
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]})
        );
        let strings = json!({"anyOf": [{"type": "string"}, {"type": "number"}]});
        assert!(matches!(
            withheld(&strings, Dialect::Anthropic),
            Some(Withheld::Inexpressible {
                keyword: "anyOf",
                ..
            })
        ));
        // Inside properties, combinators stay.
        let inner = json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
        assert_eq!(normalized(&inner, Dialect::Anthropic), inner);
        // OpenAI-compatible providers keep them.
        assert_eq!(
            normalized(&strings, Dialect::OpenAiCompatible)["anyOf"],
            strings["anyOf"]
        );
    }

    #[test]
    fn openai_gets_no_keyword_it_refuses() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:x", "$comment": "c",
            "type": "object",
            "properties": {
                "kind": {"const": "note", "examples": ["note"]},
                "when": {"type": "string", "format": "date-time"},
                "site": {"type": "string", "format": "uri"},
                "format": {"type": "string"},
                "const": {"type": "string", "const": "x", "enum": ["x"]}
            }
        });
        let expected = json!({
            "type": "object",
            "properties": {
                "kind": {"enum": ["note"]},
                "when": {"type": "string", "format": "date-time"},
                "site": {"type": "string"},
                "format": {"type": "string"},
                "const": {"type": "string", "enum": ["x"]}
            }
        });
        assert_eq!(normalized(&schema, Dialect::OpenAiCompatible), expected);
        match normalize(&schema, Dialect::OpenAiCompatible) {
            Normalization::Normalized { changes, .. } => {
                assert!(
                    changes.contains(&"`format: uri` dropped".to_owned()),
                    "{changes:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Anthropic takes them as they are.
        assert_eq!(
            normalized(&schema, Dialect::Anthropic)["$schema"],
            schema["$schema"]
        );
    }

    #[test]
    fn long_descriptions_are_cut_with_a_marker() {
        let huge = "é".repeat(1 << 20);
        let cut = truncate_description(&huge);
        assert!(cut.starts_with(&"é".repeat(MAX_DESCRIPTION)));
        assert!(cut.ends_with(&format!(
            "… [cut by nexo: {} more characters]",
            (1 << 20) - MAX_DESCRIPTION
        )));
        assert!(matches!(
            truncate_description("short"),
            Cow::Borrowed("short")
        ));
        let schema = json!({"type": "object", "description": huge, "properties": {"a": {"description": huge}}});
        let out = normalized(&schema, Dialect::Anthropic);
        assert!(
            out["description"]
                .as_str()
                .is_some_and(|text| text.len() < 10_000)
        );
        assert!(
            out["properties"]["a"]["description"]
                .as_str()
                .is_some_and(|text| text.len() < 10_000)
        );
    }

    #[test]
    fn ten_thousand_properties_pass_and_deep_nesting_is_withheld() {
        let properties: JsonObject = (0..10_000)
            .map(|index| (format!("p{index}"), json!({"type": "string"})))
            .collect();
        let wide = json!({"type": "object", "properties": properties});
        match normalize(&wide, Dialect::OpenAiCompatible) {
            Normalization::Normalized { schema, .. } => {
                assert_eq!(
                    schema["properties"].as_object().map(JsonObject::len),
                    Some(10_000)
                );
            }
            other => panic!("{other:?}"),
        }

        // Built by hand: `json!` with a value inside copies it recursively.
        let object = |key: &str, value: Value| {
            Value::Object(JsonObject::from_iter([(key.to_owned(), value)]))
        };
        let mut deep = json!({"type": "string"});
        for _ in 0..10_000 {
            deep = object("items", deep);
        }
        let schema = object("properties", object("p", deep));
        assert_eq!(
            withheld(&schema, Dialect::Anthropic),
            Some(Withheld::TooDeep)
        );
        let mut data = json!(1);
        for _ in 0..10_000 {
            data = Value::Array(vec![data]);
        }
        let with_default = object("default", data);
        assert_eq!(
            withheld(&with_default, Dialect::OpenAiCompatible),
            Some(Withheld::TooDeep)
        );
        teardown(schema);
        teardown(with_default);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("object".to_owned()),
                Just("string".to_owned()),
                Just("#/$defs/a".to_owned()),
                Just("#".to_owned()),
                ".{0,6}".prop_map(|text| text)
            ]
            .prop_map(Value::String),
        ];
        let key = prop_oneof![
            Just("type"),
            Just("properties"),
            Just("items"),
            Just("$ref"),
            Just("$defs"),
            Just("anyOf"),
            Just("allOf"),
            Just("oneOf"),
            Just("const"),
            Just("format"),
            Just("required"),
            Just("enum"),
            Just("description"),
            Just("a"),
            Just("not"),
            Just("definitions"),
            Just("additionalProperties"),
            Just("prefixItems"),
        ];
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..6).prop_map(|entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_gives_an_object_schema_or_a_reason(schema in json_value()) {
            for dialect in [Dialect::Anthropic, Dialect::OpenAiCompatible] {
                match normalize(&schema, dialect) {
                    Normalization::Normalized { schema: out, .. } => {
                        prop_assert_eq!(out.get("type"), Some(&json!("object")));
                        prop_assert!(out.get("properties").is_some_and(Value::is_object));
                        prop_assert!(!out.contains_key("$defs") && !out.contains_key("definitions"));
                        if dialect == Dialect::Anthropic {
                            for keyword in ["anyOf", "oneOf", "allOf"] {
                                prop_assert!(!out.contains_key(keyword));
                            }
                        }
                        prop_assert!(!out.contains_key("$ref"));
                    }
                    Normalization::Withheld { reason } => {
                        prop_assert!(!reason.to_string().is_empty());
                    }
                }
            }
        }
    }
}
