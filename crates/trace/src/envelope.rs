//! What the writer needs of one message, its [`Envelope`]: the kind, the
//! `id`, the `method`, whether a result is a tool's error, and an error's
//! code and message. A tap holding the message rmcp parsed or built hands
//! it over and the envelope is taken from it ([`crate::from_rmcp`]);
//! otherwise it is read from the bytes ([`parse`]) in a single borrowing
//! parse, lenient where a broken peer may be: a `result` or `error` of any
//! shape still makes a response or an error; only what is no JSON-RPC
//! message at all becomes [`Kind::Invalid`].

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::record::Kind;

/// What one JSON-RPC message says of itself, as the writer needs it.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    pub(crate) kind: Kind,
    pub(crate) id: Option<Id<'a>>,
    pub(crate) method: Option<Method<'a>>,
    pub(crate) error_code: Option<i64>,
    pub(crate) error_message: Option<&'a str>,
    /// A response whose result has `"isError": true`.
    pub(crate) tool_error: bool,
}

/// A JSON-RPC id: as the bytes gave it, or as rmcp holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Id<'a> {
    /// The id's JSON text, as the message gave it.
    Json(&'a str),
    Number(i64),
    String(&'a str),
}

/// A method name. One rmcp knows is `'static`, waits for its answer
/// without a copy, and is written without looking for what to escape
/// (MCP's method names are plain ASCII).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Method<'a> {
    Known(&'static str),
    Other(&'a str),
}

impl<'a> Method<'a> {
    pub(crate) fn as_str(&self) -> &'a str {
        match *self {
            Self::Known(method) => method,
            Self::Other(method) => method,
        }
    }

    /// The method as the table of waiting requests keeps it.
    pub(crate) fn to_kept(self) -> Cow<'static, str> {
        match self {
            Self::Known(method) => Cow::Borrowed(method),
            Self::Other(method) => Cow::Owned(method.to_owned()),
        }
    }

    /// The method the table of waiting requests kept.
    #[expect(clippy::ptr_arg, reason = "a borrowed method is a known one")]
    pub(crate) fn kept(method: &'a Cow<'static, str>) -> Self {
        match method {
            Cow::Borrowed(method) => Self::Known(method),
            Cow::Owned(method) => Self::Other(method),
        }
    }
}

/// The envelope of one message as the bytes give it.
#[derive(Debug, Deserialize)]
pub struct RawEnvelope<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    result: ResultPeek,
    #[serde(default)]
    error: ErrorPeek,
}

impl RawEnvelope<'_> {
    pub fn envelope(&self) -> Envelope<'_> {
        let kind = match (&self.method, self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, _) if self.error.present => Kind::Error,
            (None, Some(_)) if self.result.present => Kind::Response,
            (None, _) => Kind::Invalid,
        };
        Envelope {
            kind,
            id: self.id.map(|id| Id::Json(id.get())),
            method: self.method.as_deref().map(Method::Other),
            error_code: self.error.code,
            error_message: self.error.message.as_deref(),
            tool_error: kind == Kind::Response && self.result.is_error,
        }
    }
}

/// One message, or the elements of a batch, or nothing readable.
pub enum Parsed<'a> {
    One(RawEnvelope<'a>),
    Batch(Vec<&'a RawValue>),
    Invalid,
}

/// Reads `text` (already known to be UTF-8).
pub fn parse(text: &str) -> Parsed<'_> {
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(elements) if !elements.is_empty() => Parsed::Batch(elements),
            _ => Parsed::Invalid,
        };
    }
    match serde_json::from_str::<RawEnvelope<'_>>(text) {
        Ok(envelope) => Parsed::One(envelope),
        Err(_) => Parsed::Invalid,
    }
}

/// Whether a `result` was there (any value, `null` included), and whether
/// it was an object with `"isError": true`.
#[derive(Debug, Default)]
pub struct ResultPeek {
    pub present: bool,
    pub is_error: bool,
}

impl<'de> Deserialize<'de> for ResultPeek {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Peek;
        impl<'de> Visitor<'de> for Peek {
            type Value = ResultPeek;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultPeek, A::Error> {
                let mut is_error = false;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "isError" {
                        is_error = map.next_value::<serde_json::Value>()? == true;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ResultPeek {
                    present: true,
                    is_error,
                })
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<ResultPeek, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(present())
            }

            fn visit_bool<E>(self, _: bool) -> Result<ResultPeek, E> {
                Ok(present())
            }
            fn visit_i64<E>(self, _: i64) -> Result<ResultPeek, E> {
                Ok(present())
            }
            fn visit_u64<E>(self, _: u64) -> Result<ResultPeek, E> {
                Ok(present())
            }
            fn visit_f64<E>(self, _: f64) -> Result<ResultPeek, E> {
                Ok(present())
            }
            fn visit_str<E>(self, _: &str) -> Result<ResultPeek, E> {
                Ok(present())
            }
            fn visit_unit<E>(self) -> Result<ResultPeek, E> {
                Ok(present())
            }
        }
        fn present() -> ResultPeek {
            ResultPeek {
                present: true,
                is_error: false,
            }
        }
        deserializer.deserialize_any(Peek)
    }
}

/// Whether an `error` was there, with its `code` and `message` when they
/// have the types JSON-RPC gives them.
#[derive(Debug, Default)]
pub struct ErrorPeek {
    pub present: bool,
    pub code: Option<i64>,
    pub message: Option<String>,
}

impl<'de> Deserialize<'de> for ErrorPeek {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(ErrorPeek {
            present: true,
            code: value.get("code").and_then(serde_json::Value::as_i64),
            message: value
                .get("message")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Kind {
        match parse(text) {
            Parsed::One(raw) => raw.envelope().kind,
            Parsed::Batch(_) => panic!("a batch: {text}"),
            Parsed::Invalid => Kind::Invalid,
        }
    }

    #[test]
    fn kinds_come_from_the_envelope() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, Kind::Request),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                Kind::Notification,
            ),
            (r#"{"jsonrpc":"2.0","id":"a","result":{}}"#, Kind::Response),
            (r#"{"jsonrpc":"2.0","id":1,"result":null}"#, Kind::Response),
            (r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#, Kind::Response),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
                Kind::Error,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
                Kind::Error,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"error":"odd"}"#, Kind::Error),
            (r#"{"jsonrpc":"2.0","id":1}"#, Kind::Invalid),
            (r#"{"method":7}"#, Kind::Invalid),
            ("not json", Kind::Invalid),
            (r#"{"id":1,"method":"ping""#, Kind::Invalid),
            ("42", Kind::Invalid),
        ];
        for (text, expected) in cases {
            assert_eq!(kind(text), expected, "{text}");
        }
    }

    #[test]
    fn tool_errors_and_error_details_are_read() {
        let Parsed::One(result) = parse(
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#,
        ) else {
            panic!("not one message");
        };
        assert!(result.envelope().tool_error);
        let Parsed::One(error) =
            parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad \"x\""}}"#)
        else {
            panic!("not one message");
        };
        let error = error.envelope();
        assert_eq!(error.error_code, Some(-32602));
        assert_eq!(error.error_message, Some("bad \"x\""));
        assert!(matches!(error.id, Some(Id::Json("1"))));
    }

    #[test]
    fn batches_are_split_and_empty_ones_are_invalid() {
        let Parsed::Batch(elements) =
            parse(r#" [{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]"#)
        else {
            panic!("not a batch");
        };
        assert_eq!(elements.len(), 2);
        assert!(matches!(parse("[]"), Parsed::Invalid));
        assert!(matches!(parse("[1,"), Parsed::Invalid));
    }
}
