//! Reading what the writer needs from one message in a single borrowing
//! parse: `method`, the raw `id`, whether there is a `result` (and whether
//! it is a tool result with `isError`), and an `error`'s code and message.
//! Lenient where a broken peer may be: a `result` or `error` of any shape
//! still makes a response or an error; only what is no JSON-RPC message at
//! all becomes [`Kind::Invalid`].

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::record::Kind;

/// The envelope of one JSON-RPC message.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(default)]
    pub result: ResultPeek,
    #[serde(default)]
    pub error: ErrorPeek,
}

impl Envelope<'_> {
    pub fn kind(&self) -> Kind {
        match (&self.method, self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, _) if self.error.present => Kind::Error,
            (None, Some(_)) if self.result.present => Kind::Response,
            (None, _) => Kind::Invalid,
        }
    }
}

/// One message, or the elements of a batch, or nothing readable.
pub enum Parsed<'a> {
    One(Envelope<'a>),
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
    match serde_json::from_str::<Envelope<'_>>(text) {
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
            Parsed::One(envelope) => envelope.kind(),
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
        assert!(result.result.is_error);
        let Parsed::One(error) =
            parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad \"x\""}}"#)
        else {
            panic!("not one message");
        };
        assert_eq!(error.error.code, Some(-32602));
        assert_eq!(error.error.message.as_deref(), Some("bad \"x\""));
        assert_eq!(error.id.map(RawValue::get), Some("1"));
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
