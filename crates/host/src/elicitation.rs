//! A server's elicitation form (`requestedSchema`), as fields a person
//! fills in one by one: each with its title, description, default and
//! choices, and the answer typed checked against the schema (type,
//! bounds, length, format, choices) before it is sent. The terminal and
//! the web page ask; this module says what to ask and whether the answer
//! will do. Only the flat object of primitives the specification allows
//! is taken; anything else is a field the person cannot fill, and the
//! form can only be declined.

use serde_json::{Map, Value};

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// What to show: the title, else the name.
    pub label: String,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        /// `email`, `uri`, `date` or `date-time`.
        format: Option<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of these values (with the labels to show).
    Choice {
        options: Vec<(Value, String)>,
    },
    /// Several of these values.
    Choices {
        options: Vec<(Value, String)>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// The fields of `schema`, in its order; the error says why it is no form
/// a person can fill.
pub fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
            let number = |key: &str| property.get(key).and_then(Value::as_f64);
            let count = |key: &str| property.get(key).and_then(Value::as_u64);
            let kind = match property.get("type").and_then(Value::as_str) {
                _ if choices(property).is_some() => Kind::Choice {
                    options: choices(property).unwrap_or_default(),
                },
                Some("array") => Kind::Choices {
                    options: property
                        .get("items")
                        .and_then(choices)
                        .ok_or_else(|| format!("`{name}` is a list of no known choices"))?,
                    min_items: count("minItems"),
                    max_items: count("maxItems"),
                },
                Some("string") => Kind::Text {
                    min_length: count("minLength"),
                    max_length: count("maxLength"),
                    format: text("format"),
                },
                Some(kind @ ("number" | "integer")) => Kind::Number {
                    integer: kind == "integer",
                    minimum: number("minimum"),
                    maximum: number("maximum"),
                },
                Some("boolean") => Kind::Boolean,
                other => {
                    return Err(format!(
                        "`{name}` is of type {}, which a form cannot ask for",
                        other.map_or_else(|| "none".to_owned(), |kind| format!("`{kind}`"))
                    ));
                }
            };
            Ok(Field {
                name: name.clone(),
                label: text("title").unwrap_or_else(|| name.clone()),
                description: text("description"),
                required: required.contains(&name.as_str()),
                default: property.get("default").cloned(),
                kind,
            })
        })
        .collect()
}

/// The choices of an `enum` (with `enumNames`), or a `oneOf`/`anyOf` of
/// `const`s with titles.
fn choices(property: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let names = property.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(index, value)| {
                    let label = names
                        .and_then(|names| names.get(index))
                        .and_then(Value::as_str)
                        .map_or_else(|| shown(value), str::to_owned);
                    (value.clone(), label)
                })
                .collect(),
        );
    }
    let options = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))?
        .as_array()?;
    options
        .iter()
        .map(|option| {
            let value = option.get("const")?.clone();
            let label = option
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| shown(&value), str::to_owned);
            Some((value, label))
        })
        .collect()
}

/// A value as a person reads it: a string without quotes.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Field {
    /// What the person typed, as the value to send: `Ok(None)` leaves an
    /// optional field out (an empty answer without a default); the error
    /// says what to type instead.
    pub fn read(&self, typed: &str) -> Result<Option<Value>, String> {
        let typed = typed.trim();
        if typed.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, false) => Ok(None),
                (None, true) => Err("this field is required".into()),
            };
        }
        match &self.kind {
            Kind::Text {
                min_length,
                max_length,
                format,
            } => {
                let length = typed.chars().count() as u64;
                if min_length.is_some_and(|min| length < min) {
                    return Err(format!("at least {} characters", min_length.unwrap_or(0)));
                }
                if max_length.is_some_and(|max| length > max) {
                    return Err(format!("at most {} characters", max_length.unwrap_or(0)));
                }
                if let Some(format) = format
                    && !fits_format(typed, format)
                {
                    return Err(format!("not a valid {format}"));
                }
                Ok(Some(Value::String(typed.to_owned())))
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let number: f64 = typed.parse().map_err(|_| {
                    format!("type a number{}", if *integer { " (whole)" } else { "" })
                })?;
                if !number.is_finite() || (*integer && number.fract() != 0.0) {
                    return Err("type a whole number".into());
                }
                if minimum.is_some_and(|min| number < min) {
                    return Err(format!("at least {}", minimum.unwrap_or(0.0)));
                }
                if maximum.is_some_and(|max| number > max) {
                    return Err(format!("at most {}", maximum.unwrap_or(0.0)));
                }
                Ok(Some(if *integer {
                    Value::from(number as i64)
                } else {
                    Value::from(number)
                }))
            }
            Kind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
                "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
                _ => Err("answer y or n".into()),
            },
            Kind::Choice { options } => pick(options, typed).map(Some),
            Kind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let picked = typed
                    .split(',')
                    .map(|word| pick(options, word.trim()))
                    .collect::<Result<Vec<Value>, String>>()?;
                let count = picked.len() as u64;
                if min_items.is_some_and(|min| count < min) {
                    return Err(format!("choose at least {}", min_items.unwrap_or(0)));
                }
                if max_items.is_some_and(|max| count > max) {
                    return Err(format!("choose at most {}", max_items.unwrap_or(0)));
                }
                Ok(Some(Value::Array(picked)))
            }
        }
    }

    /// What the prompt shows after the label: the choices, the default.
    pub fn hint(&self) -> String {
        let mut hint = match &self.kind {
            Kind::Boolean => "y/n".to_owned(),
            Kind::Choice { options } | Kind::Choices { options, .. } => options
                .iter()
                .enumerate()
                .map(|(index, (_, label))| format!("{} {label}", index + 1))
                .collect::<Vec<_>>()
                .join(", "),
            Kind::Number { integer: true, .. } => "a whole number".to_owned(),
            Kind::Number { .. } => "a number".to_owned(),
            Kind::Text { format, .. } => format.clone().unwrap_or_default(),
        };
        if matches!(self.kind, Kind::Choices { .. }) {
            hint.push_str("; several, separated by commas");
        }
        if let Some(default) = &self.default {
            if !hint.is_empty() {
                hint.push_str("; ");
            }
            hint.push_str(&format!("default {}", shown(default)));
        } else if !self.required {
            if !hint.is_empty() {
                hint.push_str("; ");
            }
            hint.push_str("optional");
        }
        hint
    }
}

/// A choice by its number or its label or value (any case).
fn pick(options: &[(Value, String)], typed: &str) -> Result<Value, String> {
    if let Ok(number) = typed.parse::<usize>()
        && let Some((value, _)) = number.checked_sub(1).and_then(|index| options.get(index))
    {
        return Ok(value.clone());
    }
    options
        .iter()
        .find(|(value, label)| {
            label.eq_ignore_ascii_case(typed) || shown(value).eq_ignore_ascii_case(typed)
        })
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("`{typed}` is none of the choices; type its number"))
}

fn fits_format(text: &str, format: &str) -> bool {
    match format {
        "email" => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !text.contains(' ')
        }),
        "uri" => url::Url::parse(text).is_ok(),
        "date" => jiff::civil::Date::strptime("%Y-%m-%d", text).is_ok(),
        "date-time" => text.parse::<jiff::Timestamp>().is_ok(),
        _ => true,
    }
}

/// The answers, as the content of an accepted elicitation.
pub fn content(answers: Vec<(String, Value)>) -> Value {
    Value::Object(answers.into_iter().collect::<Map<String, Value>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    type Result = std::result::Result<(), Box<dyn std::error::Error>>;

    fn form() -> std::result::Result<Vec<Field>, String> {
        fields(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "minLength": 2},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "subscribe": {"type": "boolean", "default": false},
                "size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]},
                "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2}
            },
            "required": ["name", "age"]
        }))
    }

    #[test]
    fn answers_are_checked_against_the_schema() -> Result {
        let form = form()?;
        let field = |name: &str| -> &Field {
            form.iter()
                .find(|field| field.name == name)
                .unwrap_or(&form[0])
        };
        assert_eq!(field("name").label, "Your name");
        assert!(field("name").read("").is_err());
        assert!(field("name").read("A").is_err());
        assert_eq!(field("name").read(" Ana ")?, Some(json!("Ana")));
        assert!(field("email").read("not an address").is_err());
        assert_eq!(field("email").read("")?, None);
        assert_eq!(field("age").read("42")?, Some(json!(42)));
        assert!(field("age").read("4.5").is_err());
        assert!(field("age").read("200").is_err());
        assert_eq!(field("subscribe").read("")?, Some(json!(false)));
        assert_eq!(field("subscribe").read("y")?, Some(json!(true)));
        assert_eq!(field("size").read("2")?, Some(json!("m")));
        assert_eq!(field("size").read("large")?, Some(json!("l")));
        assert!(field("size").read("xl").is_err());
        assert_eq!(field("colour").read("Green")?, Some(json!("g")));
        assert_eq!(field("tags").read("1, c")?, Some(json!(["a", "c"])));
        assert!(field("tags").read("a,b,c").is_err());
        assert_eq!(field("size").hint(), "1 Small, 2 Medium, 3 Large; optional");
        assert_eq!(field("subscribe").hint(), "y/n; default false");
        Ok(())
    }

    #[test]
    fn what_a_form_cannot_ask_for_is_refused() {
        for schema in [
            json!({"properties": {"x": {"type": "object"}}}),
            json!({"properties": {"x": {}}}),
            json!({"properties": {"x": {"type": "array", "items": {"type": "string"}}}}),
        ] {
            assert!(fields(&schema).is_err(), "{schema}");
        }
    }
}
