//! Arguments from the command line: tool arguments as `key=value` pairs
//! coerced by the tool's `inputSchema` or one JSON object passed as is,
//! prompt arguments as `key=value` strings; arguments made from a schema
//! alone ([`Schema::example_arguments`], for a client that calls a tool
//! nobody gave arguments for: the conformance client); and [`split_pair`],
//! the one reader of `key<separator>value` words, which headers and
//! environment variables ([`crate::secret`]) share.

use rmcp::model::JsonObject;
use serde_json::Value;

use crate::ClientError;

/// Splits `word` at the first `separator` into a key with the blanks
/// around it removed and the value exactly as written; `None` when there is
/// no separator or no key.
pub fn split_pair(word: &str, separator: char) -> Option<(&str, &str)> {
    let (key, value) = word.split_once(separator)?;
    let key = key.trim();
    (!key.is_empty()).then_some((key, value))
}

fn not_a_pair(word: &str, hint: &str) -> ClientError {
    ClientError::usage(
        format!("`{word}` is not of the form key=value"),
        Some(hint.to_owned()),
    )
}

/// Builds a prompt's `arguments` from `key=value` words; prompt arguments
/// are strings.
pub fn prompt_arguments(words: &[String]) -> Result<JsonObject, ClientError> {
    words
        .iter()
        .map(|word| match split_pair(word, '=') {
            Some((key, value)) => Ok((key.to_owned(), Value::String(value.to_owned()))),
            None => Err(not_a_pair(word, "write prompt arguments as key=value")),
        })
        .collect()
}

/// A JSON Schema object as nexo reads tools' input schemas and
/// elicitation forms: its `properties` (sorted by name: the workspace's
/// serde_json keeps no insertion order) and which of them `required` names.
/// The one reader of both keys.
#[derive(Debug, Clone, Copy)]
pub struct Schema<'a> {
    /// The whole schema, where `$ref`s point.
    root: Option<&'a JsonObject>,
    properties: Option<&'a JsonObject>,
    required: Option<&'a Vec<Value>>,
}

/// How many `$ref`s one property may go through (a loop ends here).
const MAX_REFS: usize = 16;

/// One property of a [`Schema`].
#[derive(Debug, Clone, Copy)]
pub struct Property<'a> {
    pub name: &'a str,
    /// Its schema, `$ref`s followed.
    pub schema: &'a Value,
    pub required: bool,
}

impl<'a> Schema<'a> {
    pub fn new(schema: &'a JsonObject) -> Self {
        Self {
            root: Some(schema),
            properties: schema.get("properties").and_then(Value::as_object),
            required: schema.get("required").and_then(Value::as_array),
        }
    }

    /// `schema` with its local `$ref`s (`#/$defs/Address`) followed, so that
    /// a property defined elsewhere in the schema reads as its definition.
    pub fn resolve(&self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..MAX_REFS {
            let Some(target) = schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| self.pointer(reference))
            else {
                break;
            };
            schema = target;
        }
        schema
    }

    /// What a local reference (`#`, then a JSON Pointer) names in the schema.
    fn pointer(&self, reference: &str) -> Option<&'a Value> {
        let path = reference.strip_prefix('#')?;
        let mut segments = path
            .split('/')
            .skip(1)
            .map(|segment| segment.replace("~1", "/").replace("~0", "~"));
        let first = segments.next()?;
        let mut current = self.root?.get(&first)?;
        for segment in segments {
            current = match current {
                Value::Object(object) => object.get(&segment)?,
                Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(current)
    }

    /// Whether the schema refuses arguments it does not describe
    /// (`additionalProperties: false`).
    pub fn closed(&self) -> bool {
        self.root
            .and_then(|root| root.get("additionalProperties"))
            .is_some_and(|extra| extra == &Value::Bool(false))
    }

    /// A schema given as any JSON value; one that is no object has nothing.
    pub fn of_value(schema: &'a Value) -> Self {
        match schema.as_object() {
            Some(object) => Self::new(object),
            None => Self {
                root: None,
                properties: None,
                required: None,
            },
        }
    }

    pub fn is_required(&self, name: &str) -> bool {
        self.required
            .is_some_and(|names| names.iter().any(|required| required.as_str() == Some(name)))
    }

    /// The property called `name`, if the schema describes one.
    pub fn property(&self, name: &str) -> Option<Property<'a>> {
        let (name, schema) = self.properties?.get_key_value(name)?;
        Some(Property {
            name,
            schema: self.resolve(schema),
            required: self.is_required(name),
        })
    }

    /// Every property, in the order the schema lists them.
    pub fn properties(&self) -> impl Iterator<Item = Property<'a>> + '_ {
        self.properties
            .into_iter()
            .flatten()
            .map(|(name, schema)| Property {
                name,
                schema: self.resolve(schema),
                required: self.is_required(name),
            })
    }

    /// The names `required` lists, in its order, described or not.
    pub fn required(&self) -> impl Iterator<Item = &'a str> {
        self.required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }

    /// Arguments this schema accepts, made from it alone: each required
    /// property gets its `default`, else its first `enum` value, else a
    /// plain value of its type (`1`, `true`, `"test"`, `[]`, `{}`).
    pub fn example_arguments(&self) -> JsonObject {
        self.required()
            .map(|name| {
                let example = self.property(name).map_or_else(
                    || Value::String("test".into()),
                    |property| property.example(),
                );
                (name.to_owned(), example)
            })
            .collect()
    }
}

impl<'a> Property<'a> {
    /// The JSON type the property names (the first non-null one of a list).
    /// A schema with `properties` and no `type` is an object.
    pub fn type_name(&self) -> Option<&'a str> {
        match self.schema.get("type") {
            Some(Value::String(kind)) => Some(kind),
            Some(Value::Array(kinds)) => kinds
                .iter()
                .filter_map(Value::as_str)
                .find(|kind| *kind != "null"),
            Some(_) => None,
            None => self.schema.get("properties").map(|_| "object"),
        }
    }

    /// A value the property accepts: its `default`, else its first `enum`
    /// value, else a plain value of its type.
    pub fn example(&self) -> Value {
        if let Some(default) = self.schema.get("default") {
            return default.clone();
        }
        if let Some(first) = self
            .schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|values| values.first())
        {
            return first.clone();
        }
        match self.type_name().unwrap_or("string") {
            "number" | "integer" => Value::from(1),
            "boolean" => Value::Bool(true),
            "array" => Value::Array(Vec::new()),
            "object" => Value::Object(JsonObject::new()),
            "null" => Value::Null,
            _ => Value::String("test".into()),
        }
    }
}

/// A call's `arguments`, with what is worth telling the person about them.
#[derive(Debug, Clone, Default)]
pub struct ToolArguments {
    pub arguments: JsonObject,
    /// Arguments the schema does not describe, sent anyway (it allows more).
    pub undescribed: Vec<String>,
}

/// Builds the `arguments` object for a call from command-line words:
/// `key=value` pairs coerced by `schema`, or one JSON object passed as is.
/// A key given twice is refused, and so is one the schema does not
/// describe when it allows no others; one it does not describe but allows
/// is sent, and named in [`ToolArguments::undescribed`].
pub fn tool_arguments(schema: &JsonObject, words: &[String]) -> Result<ToolArguments, ClientError> {
    if let [only] = words
        && only.trim_start().starts_with('{')
    {
        return match serde_json::from_str::<Value>(only) {
            Ok(Value::Object(arguments)) => Ok(ToolArguments {
                arguments,
                undescribed: Vec::new(),
            }),
            _ => Err(ClientError::usage(
                format!("`{only}` is not a JSON object"),
                Some("pass one JSON object, or key=value pairs".to_owned()),
            )),
        };
    }
    let schema = Schema::new(schema);
    let names: Vec<&str> = schema.properties().map(|property| property.name).collect();
    let mut result = ToolArguments::default();
    for word in words {
        let Some((key, raw)) = split_pair(word, '=') else {
            return Err(not_a_pair(
                word,
                "write arguments as key=value, or pass one JSON object",
            ));
        };
        if result.arguments.contains_key(key) {
            return Err(ClientError::usage(
                format!("the argument `{key}` is given twice"),
                Some("give each argument once".to_owned()),
            ));
        }
        let property = schema.property(key);
        if property.is_none() && schema.closed() {
            return Err(ClientError::usage(
                format!("the tool takes no argument `{key}`"),
                Some(if names.is_empty() {
                    "the tool takes no arguments".to_owned()
                } else {
                    format!("its arguments: {}", names.join(", "))
                }),
            ));
        }
        if property.is_none() && !names.is_empty() {
            result.undescribed.push(key.to_owned());
        }
        let value = coerce(key, raw, property.as_ref().and_then(Property::type_name))?;
        result.arguments.insert(key.to_owned(), value);
    }
    Ok(result)
}

fn coerce(key: &str, raw: &str, kind: Option<&str>) -> Result<Value, ClientError> {
    let mismatch = |expected: &str| ClientError::Usage {
        message: format!("`{key}` must be {expected}, got `{raw}`"),
        hint: Some(crate::error::schema_hint("see the tool's schema")),
    };
    match kind {
        Some("integer") => raw
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| mismatch("an integer")),
        Some("number") => serde_json::from_str::<serde_json::Number>(raw.trim())
            .map(Value::Number)
            .map_err(|_| mismatch("a number")),
        Some("boolean") => match raw.trim() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(mismatch("true or false")),
        },
        Some("array") => match serde_json::from_str::<Value>(raw) {
            Ok(value @ Value::Array(_)) => Ok(value),
            _ => Err(mismatch("a JSON array")),
        },
        Some("object") => match serde_json::from_str::<Value>(raw) {
            Ok(value @ Value::Object(_)) => Ok(value),
            _ => Err(mismatch("a JSON object")),
        },
        _ => Ok(Value::String(raw.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use nexo_hint::Hinted;

    use super::*;

    #[test]
    fn example_arguments_follow_the_schema() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "integer", "default": 7},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "flag": {"type": ["boolean", "null"]},
                "optional": {"type": "string"}
            },
            "required": ["a", "b", "mode", "flag", "undescribed"]
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        assert_eq!(
            Value::Object(Schema::new(&schema).example_arguments()),
            serde_json::json!({"a": 1, "b": 7, "mode": "fast", "flag": true, "undescribed": "test"})
        );
    }

    fn schema() -> JsonObject {
        let value = serde_json::json!({
            "type": "object",
            "properties": {
                "texto": {"type": "string"},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "loud": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "maybe": {"type": ["null", "integer"]}
            }
        });
        match value {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        }
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn pairs_are_coerced_by_schema() -> Result<(), ClientError> {
        let ToolArguments {
            arguments,
            undescribed,
        } = tool_arguments(
            &schema(),
            &words(&[
                "texto=42",
                "count=7",
                "ratio=0.5",
                "loud=true",
                r#"tags=["a","b"]"#,
                "maybe=3",
                "extra=x=y",
            ]),
        )?;
        assert_eq!(undescribed, ["extra"]);
        assert_eq!(arguments["texto"], "42");
        assert_eq!(arguments["count"], 7);
        assert_eq!(arguments["ratio"], 0.5);
        assert_eq!(arguments["loud"], true);
        assert_eq!(arguments["tags"], serde_json::json!(["a", "b"]));
        assert_eq!(arguments["maybe"], 3);
        assert_eq!(arguments["extra"], "x=y");
        Ok(())
    }

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        }
    }

    /// Issue 15, point 11: a property defined behind `$ref` is coerced by
    /// its definition (an object was sent as a string, and shown as `any`).
    #[test]
    fn issue_15_refs_are_followed() -> Result<(), ClientError> {
        let schema = object(serde_json::json!({
            "type": "object",
            "$defs": {
                "Address": {"type": "object", "properties": {"street": {"type": "string"}}},
                "Count": {"$ref": "#/$defs/Number"},
                "Number": {"type": "integer"},
                "Loop": {"$ref": "#/$defs/Loop"}
            },
            "properties": {
                "address": {"$ref": "#/$defs/Address"},
                "count": {"$ref": "#/$defs/Count"},
                "looping": {"$ref": "#/$defs/Loop"},
                "dangling": {"$ref": "#/$defs/Nothing"}
            }
        }));
        let arguments = tool_arguments(
            &schema,
            &words(&[
                r#"address={"street": "Mayor"}"#,
                "count=3",
                "looping=x",
                "dangling=y",
            ]),
        )?
        .arguments;
        assert_eq!(arguments["address"], serde_json::json!({"street": "Mayor"}));
        assert_eq!(arguments["count"], 3);
        assert_eq!(
            (&arguments["looping"], &arguments["dangling"]),
            (&serde_json::json!("x"), &serde_json::json!("y"))
        );
        let view = Schema::new(&schema);
        assert_eq!(
            view.property("address").and_then(|p| p.type_name()),
            Some("object")
        );
        Ok(())
    }

    /// Issue 15, point 11: duplicate and empty names are refused, and so is
    /// an undescribed name where the schema allows no others.
    #[test]
    fn issue_15_duplicates_empty_names_and_closed_schemas() {
        let closed = object(serde_json::json!({
            "type": "object",
            "properties": {"texto": {"type": "string"}},
            "additionalProperties": false
        }));
        let refused = [
            (&schema(), &["count=1", "count=2"][..], "given twice"),
            (&schema(), &["=x"], "not of the form"),
            (&closed, &["textoo=x"], "no argument `textoo`"),
        ];
        for (schema, given, expected) in refused {
            match tool_arguments(schema, &words(given)) {
                Err(error) => assert!(error.to_string().contains(expected), "{error}"),
                Ok(arguments) => panic!("{given:?} accepted: {arguments:?}"),
            }
        }
        match tool_arguments(&closed, &words(&["textoo=x"])) {
            Err(error) => assert_eq!(
                error.hint().map(|hint| hint.terminal()).as_deref(),
                Some("its arguments: texto")
            ),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn pairs_split_at_the_first_separator() {
        assert_eq!(split_pair("a=b=c", '='), Some(("a", "b=c")));
        assert_eq!(split_pair(" Name : v ", ':'), Some(("Name", " v ")));
        assert_eq!(split_pair("=v", '='), None);
        assert_eq!(split_pair("novalue", '='), None);
    }

    #[test]
    fn prompt_arguments_are_strings() -> Result<(), ClientError> {
        let arguments = prompt_arguments(&words(&["a=1", "b= x=y"]))?;
        assert_eq!(
            Value::Object(arguments),
            serde_json::json!({"a": "1", "b": " x=y"})
        );
        assert!(prompt_arguments(&words(&["novalue"])).is_err());
        Ok(())
    }

    #[test]
    fn schemas_are_read_with_what_is_required() {
        let value = serde_json::json!({
            "type": "object",
            "properties": {"b": {"type": ["null", "integer"]}, "a": {"type": "string"}, "c": {}},
            "required": ["a", "ghost"]
        });
        let schema = Schema::of_value(&value);
        let seen: Vec<(&str, bool, Option<&str>)> = schema
            .properties()
            .map(|p| (p.name, p.required, p.type_name()))
            .collect();
        // In the schema's order (issue 15, point 13).
        assert_eq!(
            seen,
            [
                ("b", false, Some("integer")),
                ("a", true, Some("string")),
                ("c", false, None)
            ]
        );
        assert_eq!(schema.required().collect::<Vec<_>>(), ["a", "ghost"]);
        assert!(schema.property("ghost").is_none());
        assert_eq!(Schema::of_value(&Value::Null).properties().count(), 0);
    }

    #[test]
    fn one_json_object_passes_as_is() -> Result<(), ClientError> {
        let arguments =
            tool_arguments(&schema(), &words(&[r#"{"count": "not coerced"}"#]))?.arguments;
        assert_eq!(arguments["count"], "not coerced");
        Ok(())
    }

    #[test]
    fn bad_words_are_usage_errors() {
        for bad in [
            &["count=seven"][..],
            &["loud=yes"],
            &["novalue"],
            &["{not json"],
        ] {
            let error = tool_arguments(&schema(), &words(bad));
            assert!(matches!(error, Err(ClientError::Usage { .. })), "{bad:?}");
        }
    }
}
