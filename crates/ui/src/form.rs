//! Forms built from a tool's `inputSchema`, and the arguments read back
//! from them. The schema is read by nexo-client's [`Schema`] and the
//! submitted values are coerced by [`tool_arguments`], the code behind
//! `nexo call`'s `key=value` words: a form field is one such word, so the
//! page and the command line read a schema the same way.

use askama::Template;
use nexo_client::ClientError;
use nexo_client::arguments::{Schema, tool_arguments};
use rmcp::model::JsonObject;
use serde_json::Value;

/// How many enum values are offered as a list (more become a text field).
const MAX_CHOICES: usize = 200;

/// The input a field is drawn with.
#[derive(Debug, Clone)]
pub enum Widget {
    /// An `<input>` of this type (`text`, `url`, `email`, `date`...).
    Text(&'static str),
    /// A number, with this step (`1` for integers, `any` otherwise).
    Number(&'static str),
    /// One of these values (an `enum`, or a boolean).
    Choice(Vec<String>),
    /// JSON text (an object, an array, or a value of several types).
    Json,
}

#[derive(Debug, Clone)]
pub struct Field {
    /// Unique within the page, for `id` and `for`.
    pub id: usize,
    pub name: String,
    pub kind_label: String,
    pub required: bool,
    pub description: String,
    /// The schema's default, as the field shows it.
    pub default: String,
    pub widget: Widget,
}

#[derive(Template)]
#[template(path = "fields.html")]
pub struct Fields<'a> {
    pub fields: &'a [Field],
}

/// The fields of a form for `schema` (a tool's input schema).
pub fn fields(schema: &JsonObject) -> Vec<Field> {
    Schema::new(schema)
        .properties()
        .enumerate()
        .map(|(id, property)| {
            let kind = property.type_name().unwrap_or("any");
            let choices: Option<Vec<String>> = property
                .schema
                .get("enum")
                .and_then(Value::as_array)
                .filter(|values| values.len() <= MAX_CHOICES)
                .map(|values| {
                    values
                        .iter()
                        .map(|value| match value {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                });
            let widget = match (kind, choices) {
                (_, Some(choices)) => Widget::Choice(choices),
                ("boolean", None) => Widget::Choice(vec!["true".to_owned(), "false".to_owned()]),
                ("integer", None) => Widget::Number("1"),
                ("number", None) => Widget::Number("any"),
                ("string", None) => Widget::Text(
                    match property.schema.get("format").and_then(Value::as_str) {
                        Some("uri" | "url") => "url",
                        Some("email") => "email",
                        Some("date") => "date",
                        _ => "text",
                    },
                ),
                _ => Widget::Json,
            };
            let default = match property.schema.get("default") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
            };
            let description = property
                .schema
                .get("description")
                .or_else(|| property.schema.get("title"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            Field {
                id,
                name: property.name.to_owned(),
                kind_label: kind.to_owned(),
                required: property.required,
                description: nexo_host::schema::truncate_description(description).into_owned(),
                default,
                widget,
            }
        })
        .collect()
}

/// The arguments a submitted form gives: the `json` field when it holds
/// anything, else each non-empty `a:NAME` field as the word `NAME=value`.
pub fn arguments(
    schema: &JsonObject,
    submitted: &[(String, String)],
) -> Result<JsonObject, ClientError> {
    if let Some((_, raw)) = submitted
        .iter()
        .find(|(name, value)| name == "json" && !value.trim().is_empty())
    {
        return match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(arguments)) => Ok(arguments),
            _ => Err(ClientError::usage(
                "the JSON arguments are not a JSON object",
                Some(
                    "write an object such as {\"text\": \"hello\"}, or clear it and use the fields"
                        .to_owned(),
                ),
            )),
        };
    }
    let words: Vec<String> = submitted
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .filter_map(|(name, value)| {
            name.strip_prefix("a:")
                .map(|name| format!("{name}={value}"))
        })
        .collect();
    tool_arguments(schema, &words).map(|built| built.arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn each_type_gets_its_widget_and_values_come_back_typed() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "<b>what</b> to send"},
                "count": {"type": "integer", "default": 3},
                "ratio": {"type": "number"},
                "loud": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "site": {"type": "string", "format": "uri"}
            },
            "required": ["text"]
        }));
        let fields = fields(&schema);
        let widget = |name: &str| {
            fields
                .iter()
                .find(|field| field.name == name)
                .map(|field| format!("{:?}", field.widget))
                .unwrap_or_default()
        };
        assert_eq!(widget("count"), "Number(\"1\")");
        assert_eq!(widget("ratio"), "Number(\"any\")");
        assert!(widget("loud").starts_with("Choice"));
        assert!(widget("mode").contains("\"a\""));
        assert_eq!(widget("tags"), "Json");
        assert_eq!(widget("site"), "Text(\"url\")");
        let html = Fields { fields: &fields }.render().unwrap_or_default();
        assert!(!html.contains("<b>") && html.contains("what"), "{html}");
        assert!(html.contains("required"), "{html}");

        let submitted = [
            ("a:text", "hi"),
            ("a:count", "4"),
            ("a:ratio", ""),
            ("a:loud", "true"),
            ("a:tags", "[\"x\"]"),
            ("json", " "),
        ]
        .map(|(name, value)| (name.to_owned(), value.to_owned()));
        let arguments = arguments(&schema, &submitted).unwrap_or_default();
        assert_eq!(
            Value::Object(arguments),
            json!({"text": "hi", "count": 4, "loud": true, "tags": ["x"]})
        );
        let bad = [("a:count".to_owned(), "four".to_owned())];
        assert!(super::arguments(&schema, &bad).is_err());
        let raw = [("json".to_owned(), "{\"text\": \"raw\"}".to_owned())];
        assert_eq!(
            super::arguments(&schema, &raw).map(Value::Object).ok(),
            Some(json!({"text": "raw"}))
        );
    }
}
