//! The fixed data the fixture hands out: a one-pixel PNG, a silent WAV, the
//! texts the conformance suite compares against, and the JSON Schema 2020-12
//! input schema whose keywords must survive `tools/list` untouched.

use serde_json::{Value, json};

/// A 1x1 red PNG, base64.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with one silent sample, base64.
pub const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
pub const EMBEDDED_TEXT: &str = "This is an embedded resource content.";
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";
pub const WATCHED_TEXT: &str = "Watched resource content";

/// The input schema of `json_schema_2020_12_tool`: `$schema`, `$defs` with an
/// `$anchor`, `$ref`, composition (`allOf`/`anyOf`), conditionals
/// (`if`/`then`/`else`) and `additionalProperties`, all of which a server
/// must publish as written.
pub fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"]
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}
