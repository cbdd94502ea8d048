//! Finding the `id` of a message that is refused before it is read as a
//! JSON-RPC message: one over the size limit (a stdio line, an HTTP body,
//! [`crate::body`]), or valid JSON that is no message object
//! ([`crate::inbound`]). The error answer then carries the request's id, so
//! that the client fails at once instead of waiting for its own timeout;
//! `null` is left for a message whose id cannot be found, and for a parse
//! error, as JSON-RPC 2.0 words it.
//!
//! [`IdScanner`] is pushed the bytes as they arrive and keeps only a few
//! counters and the id itself (at most [`MAX_ID_BYTES`]): an oversized
//! message is never held whole. It reads just enough JSON to walk the
//! top-level object: keys, and values skipped by their brackets and string
//! quotes, so an `"id"` inside `params` is never taken for the request's.
//! Written by hand because the JSON crates we use parse from a slice or a
//! blocking reader, and this must take bytes in chunks as they arrive from
//! an async stream, across which a string or a key may be split.

use serde_json::value::RawValue;

/// The longest id kept (a string id's raw JSON, quotes and escapes included).
pub const MAX_ID_BYTES: usize = 256;

/// Where the scanner is in the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// Where a key, a `,` or the closing `}` may come.
    BeforeKey,
    /// Inside a key; `escaped` after a backslash.
    Key { escaped: bool },
    /// After a key, before its `:`.
    Colon,
    /// After the `:`, before the value.
    BeforeValue,
    /// Inside a value of another key: `nesting` open brackets, maybe in a
    /// string.
    Skip {
        nesting: usize,
        in_string: bool,
        escaped: bool,
    },
    /// Inside the value of `id`.
    Id { in_string: bool, escaped: bool },
    /// Finished: the id was found, or cannot be.
    Done,
}

/// A push scanner for the top-level `"id"` of one JSON-RPC message.
#[derive(Debug)]
pub struct IdScanner {
    state: State,
    /// The key being read, when it may still be `id`.
    key: Vec<u8>,
    /// The key being read is longer than `id`, or escaped: not `id`.
    other_key: bool,
    /// The raw id, once its value has started.
    id: Vec<u8>,
    found: Option<Box<RawValue>>,
}

impl Default for IdScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl IdScanner {
    pub fn new() -> Self {
        Self {
            state: State::Start,
            key: Vec::with_capacity(2),
            other_key: false,
            id: Vec::new(),
            found: None,
        }
    }

    /// Reads the next bytes of the message.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.state == State::Done {
                return;
            }
            self.step(byte);
        }
    }

    /// The id found, if any: a string or a number, as JSON-RPC allows.
    pub fn finish(mut self) -> Option<Box<RawValue>> {
        // A number id ends the message only when nothing follows it.
        if matches!(
            self.state,
            State::Id {
                in_string: false,
                ..
            }
        ) {
            self.end_id();
        }
        self.found
    }

    fn step(&mut self, byte: u8) {
        let blank = byte.is_ascii_whitespace();
        self.state = match self.state {
            State::Start if blank => State::Start,
            State::Start if byte == b'{' => State::BeforeKey,
            State::BeforeKey if blank || byte == b',' => State::BeforeKey,
            State::BeforeKey if byte == b'"' => {
                self.key.clear();
                self.other_key = false;
                State::Key { escaped: false }
            }
            State::Key { escaped: true } => {
                self.other_key = true;
                State::Key { escaped: false }
            }
            State::Key { escaped: false } => match byte {
                b'"' => State::Colon,
                b'\\' => State::Key { escaped: true },
                _ => {
                    if self.key.len() < 2 {
                        self.key.push(byte);
                    } else {
                        self.other_key = true;
                    }
                    State::Key { escaped: false }
                }
            },
            State::Colon if blank => State::Colon,
            State::Colon if byte == b':' => State::BeforeValue,
            State::BeforeValue if blank => State::BeforeValue,
            State::BeforeValue if !self.other_key && self.key == b"id" => {
                self.id.push(byte);
                match byte {
                    b'"' => State::Id {
                        in_string: true,
                        escaped: false,
                    },
                    b'-' | b'0'..=b'9' => State::Id {
                        in_string: false,
                        escaped: false,
                    },
                    // An object, an array, `null` or a boolean: no usable id.
                    _ => State::Done,
                }
            }
            State::BeforeValue => match byte {
                b'"' => State::Skip {
                    nesting: 0,
                    in_string: true,
                    escaped: false,
                },
                b'{' | b'[' => State::Skip {
                    nesting: 1,
                    in_string: false,
                    escaped: false,
                },
                _ => State::Skip {
                    nesting: 0,
                    in_string: false,
                    escaped: false,
                },
            },
            State::Skip {
                nesting,
                in_string: true,
                escaped,
            } => match (escaped, byte) {
                (true, _) => State::Skip {
                    nesting,
                    in_string: true,
                    escaped: false,
                },
                (false, b'\\') => State::Skip {
                    nesting,
                    in_string: true,
                    escaped: true,
                },
                (false, b'"') if nesting == 0 => State::BeforeKey,
                (false, b'"') => State::Skip {
                    nesting,
                    in_string: false,
                    escaped: false,
                },
                (false, _) => State::Skip {
                    nesting,
                    in_string: true,
                    escaped: false,
                },
            },
            State::Skip {
                nesting,
                in_string: false,
                ..
            } => match byte {
                b'"' => State::Skip {
                    nesting,
                    in_string: true,
                    escaped: false,
                },
                b'{' | b'[' => State::Skip {
                    nesting: nesting + 1,
                    in_string: false,
                    escaped: false,
                },
                b'}' | b']' if nesting <= 1 => {
                    // The end of a nested value, or (a scalar's end) of the
                    // whole object, in which no id came.
                    if nesting == 1 {
                        State::BeforeKey
                    } else {
                        State::Done
                    }
                }
                b'}' | b']' => State::Skip {
                    nesting: nesting - 1,
                    in_string: false,
                    escaped: false,
                },
                b',' if nesting == 0 => State::BeforeKey,
                _ => State::Skip {
                    nesting,
                    in_string: false,
                    escaped: false,
                },
            },
            State::Id { in_string, escaped } => {
                if self.id.len() >= MAX_ID_BYTES {
                    State::Done
                } else if in_string {
                    self.id.push(byte);
                    match (escaped, byte) {
                        (false, b'"') => {
                            self.end_id();
                            State::Done
                        }
                        (false, b'\\') => State::Id {
                            in_string,
                            escaped: true,
                        },
                        _ => State::Id {
                            in_string,
                            escaped: false,
                        },
                    }
                } else if blank || byte == b',' || byte == b'}' {
                    self.end_id();
                    State::Done
                } else {
                    self.id.push(byte);
                    State::Id {
                        in_string,
                        escaped: false,
                    }
                }
            }
            // Not an object, or not JSON: nothing more to learn.
            State::Start | State::BeforeKey | State::Colon | State::Done => State::Done,
        };
    }

    /// Keeps the id read so far if it is a JSON string or number.
    fn end_id(&mut self) {
        let raw = std::mem::take(&mut self.id);
        let Ok(text) = String::from_utf8(raw) else {
            return;
        };
        let usable = matches!(
            serde_json::from_str::<serde_json::Value>(&text),
            Ok(serde_json::Value::String(_) | serde_json::Value::Number(_))
        );
        if usable {
            self.found = RawValue::from_string(text).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(message: &str) -> Option<String> {
        let mut scanner = IdScanner::new();
        scanner.feed(message.as_bytes());
        scanner.finish().map(|raw| raw.get().to_owned())
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, Some("7")),
            (
                r#"{"method":"ping","params":{"id":1,"a":[{"id":2}]},"id":"x-1"}"#,
                Some(r#""x-1""#),
            ),
            (
                r#" { "params" : "}\"id\":9" , "id" : -3.5e2 } "#,
                Some("-3.5e2"),
            ),
            (r#"{"method":"tools/call","params":{"x":"#, None),
            (
                r#"{"method":"tools/call","id":12,"params":{"x":"#,
                Some("12"),
            ),
            (r#"{"id":null,"method":"x"}"#, None),
            (r#"{"id":{"a":1}}"#, None),
            (r#"{"ids":1,"i":2}"#, None),
            (r#"{"\u0069d":1}"#, None),
            (r#"{"id":"a\"b"}"#, Some(r#""a\"b""#)),
            (r#"[{"id":1}]"#, None),
            ("not json at all", None),
            (r#"{"a":true,"b":null,"id":4}"#, Some("4")),
            (r#"{"a":1}"#, None),
        ];
        for (message, id) in cases {
            assert_eq!(id_of(message).as_deref(), id, "{message}");
        }
    }

    #[test]
    fn bytes_may_arrive_one_at_a_time() {
        let message = r#"{"params":{"text":"\"}{"},"id":"chunked"}"#;
        let mut scanner = IdScanner::new();
        for byte in message.as_bytes() {
            scanner.feed(std::slice::from_ref(byte));
        }
        assert_eq!(
            scanner.finish().map(|raw| raw.get().to_owned()).as_deref(),
            Some(r#""chunked""#)
        );
    }

    #[test]
    fn an_over_long_id_is_not_kept() {
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID_BYTES));
        assert_eq!(id_of(&long), None);
    }
}
