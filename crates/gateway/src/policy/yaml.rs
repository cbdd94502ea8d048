//! Policies written in YAML (or JSON, which YAML reads): the document is
//! rewritten as equivalent TOML, which the one policy reader then reads,
//! so both formats take exactly the same fields and are checked by the same
//! code. Every value and key written keeps the line and column it came
//! from, so an error found in the TOML points into the YAML as written.
//!
//! Scalars are read by YAML 1.2's core schema (`yes` is a string, `~` and
//! `null` are nothing); a field set to nothing is left out. Anchors and
//! aliases are expanded (within a budget, against "billion laughs");
//! tags other than the core ones, keys that are not scalars and more than
//! one document are refused.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// How many values aliases may expand to, all told.
const NODE_BUDGET: usize = 100_000;

/// A place in the file as written (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub line: usize,
    pub column: usize,
}

/// A YAML document rewritten as TOML, with where each part came from.
#[derive(Debug)]
pub struct Transcoded {
    pub toml: String,
    /// Byte ranges of the TOML and the place each came from.
    spans: Vec<(std::ops::Range<usize>, Place)>,
}

impl Transcoded {
    /// The place in the YAML of the innermost value or key that holds
    /// `offset` of the TOML (the document's start when none does).
    pub fn place_of(&self, offset: usize) -> Place {
        self.spans
            .iter()
            .filter(|(range, _)| {
                range.start <= offset && (offset < range.end || range.start == range.end)
            })
            .min_by_key(|(range, _)| range.end - range.start)
            .map_or(Place { line: 1, column: 1 }, |(_, place)| *place)
    }
}

/// Why a YAML document could not be rewritten: where, and what.
#[derive(Debug)]
pub struct YamlError {
    pub place: Place,
    pub message: String,
}

/// Rewrites `text` as TOML; an error is placed inside `text`.
pub fn transcode(text: &str) -> Result<Transcoded, YamlError> {
    rewrite(text).map_err(|problem| YamlError {
        place: within(text, problem.place),
        ..problem
    })
}

fn rewrite(text: &str) -> Result<Transcoded, YamlError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(problem) = parser.load(&mut builder, true) {
        return Err(YamlError {
            place: place(*problem.marker()),
            message: problem.info().to_owned(),
        });
    }
    if let Some(problem) = builder.problem {
        return Err(problem);
    }
    let mut documents = builder.documents.into_iter();
    let root = documents.next();
    if let Some(second) = documents.next() {
        return Err(YamlError {
            place: second.place,
            message: "the file holds more than one YAML document (`---`)".to_owned(),
        });
    }
    let mut out = Transcoded {
        toml: String::new(),
        spans: Vec::new(),
    };
    match root.map(|node| (node.value, node.place)) {
        None | Some((Value::Null, _)) => {}
        Some((Value::Map(entries), _)) => {
            for (key, value) in entries {
                if matches!(value.value, Value::Null) {
                    continue;
                }
                write_key(&mut out, &key);
                out.toml.push_str(" = ");
                write_value(&mut out, value)?;
                out.toml.push('\n');
            }
        }
        Some((_, place)) => {
            return Err(YamlError {
                place,
                message: "a policy is a mapping of fields (`rule:`, `default:`...), not a list \
                          or a single value"
                    .to_owned(),
            });
        }
    }
    Ok(out)
}

/// `place`, or the end of the text when it lies past it: the parser
/// places what it reads at the end of the input on a line after the last
/// (found by the `policy_twins` fuzz target: one-line files refused at
/// line 2, `{"rule": [` and ` !`, and an empty list item on the last line
/// refused on the line after it).
fn within(text: &str, place: Place) -> Place {
    let lines: Vec<&str> = text.split('\n').collect();
    match lines.get(place.line.saturating_sub(1)) {
        Some(line) if place.line >= 1 && place.column <= line.chars().count() + 1 => place,
        Some(line) => Place {
            line: place.line,
            column: line.chars().count() + 1,
        },
        None => Place {
            line: lines.len(),
            column: lines.last().map_or(0, |last| last.chars().count()) + 1,
        },
    }
}

fn place(marker: Marker) -> Place {
    Place {
        line: marker.line(),
        column: marker.col() + 1,
    }
}

#[derive(Debug, Clone)]
struct Node {
    value: Value,
    place: Place,
}

#[derive(Debug, Clone)]
enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

#[derive(Debug, Clone)]
struct Key {
    name: String,
    place: Place,
}

/// A collection being read, with its anchor and, for a mapping, the key
/// waiting for its value.
struct Open {
    node: Node,
    anchor: usize,
    key: Option<Key>,
}

/// Builds the documents' trees from the parser's events.
#[derive(Default)]
struct Builder {
    documents: Vec<Node>,
    stack: Vec<Open>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    problem: Option<YamlError>,
}

impl Builder {
    fn fail(&mut self, place: Place, message: String) {
        if self.problem.is_none() {
            self.problem = Some(YamlError { place, message });
        }
    }

    /// Places a finished node in the collection being read, or as a
    /// document; `new` is how many values it adds to the document (an
    /// alias adds a copy of all it names).
    fn finish(&mut self, node: Node, anchor: usize, new: usize) {
        self.nodes += new;
        if self.nodes > NODE_BUDGET {
            self.fail(
                node.place,
                format!("the document expands to more than {NODE_BUDGET} values"),
            );
            return;
        }
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let Some(mut open) = self.stack.pop() else {
            self.documents.push(node);
            return;
        };
        if let Err(problem) = open.take(node) {
            self.problem = Some(problem);
        }
        self.stack.push(open);
    }
}

impl Open {
    /// Takes `node` as the next item, key or value of this collection.
    fn take(&mut self, node: Node) -> Result<(), YamlError> {
        let Value::Map(entries) = &mut self.node.value else {
            if let Value::Seq(items) = &mut self.node.value {
                items.push(node);
            }
            return Ok(());
        };
        let Some(key) = self.key.take() else {
            let name = match node.value {
                Value::Str(name) => name,
                Value::Bool(value) => value.to_string(),
                Value::Int(value) => value.to_string(),
                Value::Float(value) => value.to_string(),
                Value::Null | Value::Seq(_) | Value::Map(_) => {
                    return Err(YamlError {
                        place: node.place,
                        message: "a key is a list, a mapping or nothing; keys are names".to_owned(),
                    });
                }
            };
            self.key = Some(Key {
                name,
                place: node.place,
            });
            return Ok(());
        };
        if entries.iter().any(|(known, _)| known.name == key.name) {
            return Err(YamlError {
                place: key.place,
                message: format!("the key `{}` is given twice", key.name),
            });
        }
        entries.push((key, node));
        Ok(())
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, marker: Marker) {
        if self.problem.is_some() {
            return;
        }
        let at = place(marker);
        match event {
            Event::Scalar(text, style, anchor, tag) => match scalar(text, style, tag.as_ref()) {
                Ok(value) => self.finish(Node { value, place: at }, anchor, 1),
                Err(message) => self.fail(at, message),
            },
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if let Some(tag) = tag
                    && !matches!(core(tag), Some("seq" | "map"))
                {
                    self.fail(at, unsupported(tag));
                    return;
                }
                let value = if matches!(event, Event::SequenceStart(..)) {
                    Value::Seq(Vec::new())
                } else {
                    Value::Map(Vec::new())
                };
                self.stack.push(Open {
                    node: Node { value, place: at },
                    anchor,
                    key: None,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(open) = self.stack.pop() {
                    self.finish(open.node, open.anchor, 1);
                }
            }
            Event::Alias(anchor) => match self.anchors.get(&anchor) {
                Some(node) => {
                    let node = Node {
                        value: node.value.clone(),
                        place: at,
                    };
                    let new = count(&node);
                    self.finish(node, 0, new);
                }
                None => self.fail(at, "an alias names no anchor before it".to_owned()),
            },
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

/// How many values a node holds, itself included.
fn count(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(count).sum(),
        Value::Map(entries) => entries.iter().map(|(_, value)| count(value)).sum(),
        _ => 0,
    }
}

/// The name of a tag of YAML's core schema (`!!str` is `str`).
fn core(tag: &Tag) -> Option<&str> {
    matches!(tag.handle.as_str(), "!!" | "tag:yaml.org,2002:").then_some(tag.suffix.as_str())
}

fn unsupported(tag: &Tag) -> String {
    format!(
        "the tag `{}{}` is not taken; write the value without a tag",
        tag.handle, tag.suffix
    )
}

/// A scalar read by YAML 1.2's core schema: quoted or block scalars and
/// `!!str` are strings; plain ones may be nothing, booleans or numbers.
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if let Some(tag) = tag {
        return match core(tag) {
            Some("str") => Ok(Value::Str(text)),
            Some(kind @ ("null" | "bool" | "int" | "float")) => plain(text)
                .filter(|value| {
                    matches!(
                        (kind, value),
                        ("null", Value::Null)
                            | ("bool", Value::Bool(_))
                            | ("int", Value::Int(_))
                            | ("float", Value::Float(_) | Value::Int(_))
                    )
                })
                .ok_or_else(|| format!("the value is not a valid `!!{}`", tag.suffix)),
            _ => Err(unsupported(tag)),
        };
    }
    if style != TScalarStyle::Plain {
        return Ok(Value::Str(text));
    }
    Ok(plain(text.clone()).unwrap_or(Value::Str(text)))
}

/// A plain scalar that is not a string, if it is one.
fn plain(text: String) -> Option<Value> {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Some(Value::Float(f64::INFINITY));
        }
        "-.inf" | "-.Inf" | "-.INF" => return Some(Value::Float(f64::NEG_INFINITY)),
        ".nan" | ".NaN" | ".NAN" => return Some(Value::Float(f64::NAN)),
        _ => {}
    }
    if let Some(octal) = text.strip_prefix("0o") {
        return i64::from_str_radix(octal, 8).ok().map(Value::Int);
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok().map(Value::Int);
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(&text);
    if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return text.parse().ok().map(Value::Int);
    }
    let numeric = digits
        .bytes()
        .all(|byte| byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E' | b'-' | b'+'));
    if numeric && digits.bytes().any(|byte| byte.is_ascii_digit()) {
        return text.parse().ok().map(Value::Float);
    }
    None
}

fn write_key(out: &mut Transcoded, key: &Key) {
    let start = out.toml.len();
    write_string(&mut out.toml, &key.name);
    out.spans.push((start..out.toml.len(), key.place));
}

fn write_value(out: &mut Transcoded, node: Node) -> Result<(), YamlError> {
    let start = out.toml.len();
    match node.value {
        Value::Null => {
            return Err(YamlError {
                place: node.place,
                message: "a list holds nothing (`~`, `null` or an empty item)".to_owned(),
            });
        }
        Value::Bool(value) => out.toml.push_str(if value { "true" } else { "false" }),
        Value::Int(value) => out.toml.push_str(&value.to_string()),
        Value::Float(value) if value.is_nan() => out.toml.push_str("nan"),
        Value::Float(value) if value.is_infinite() => {
            out.toml.push_str(if value > 0.0 { "inf" } else { "-inf" });
        }
        Value::Float(value) => out.toml.push_str(&format!("{value:?}")),
        Value::Str(text) => write_string(&mut out.toml, &text),
        Value::Seq(items) => {
            out.toml.push('[');
            for (index, item) in items.into_iter().enumerate() {
                if index > 0 {
                    out.toml.push_str(", ");
                }
                write_value(out, item)?;
            }
            out.toml.push(']');
        }
        Value::Map(entries) => {
            out.toml.push('{');
            let mut first = true;
            for (key, value) in entries {
                if matches!(value.value, Value::Null) {
                    continue;
                }
                out.toml.push_str(if first { " " } else { ", " });
                first = false;
                write_key(out, &key);
                out.toml.push_str(" = ");
                write_value(out, value)?;
            }
            out.toml.push_str(if first { "}" } else { " }" });
        }
    }
    out.spans.push((start..out.toml.len(), node.place));
    Ok(())
}

/// `text` as a TOML basic string.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            control if control.is_control() => {
                out.push_str(&format!("\\u{:04X}", u32::from(control)));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a test fails loudly")]
mod tests {
    use super::*;

    #[test]
    fn scalars_follow_the_core_schema() {
        let yaml = "a: yes\nb: true\nc: 0x1f\nd: '12'\ne: ~\nf: 1.5\ng: \"x\\\"y\"\nh: [1, -2]\n";
        let toml = transcode(yaml).unwrap().toml;
        assert_eq!(
            toml,
            "\"a\" = \"yes\"\n\"b\" = true\n\"c\" = 31\n\"d\" = \"12\"\n\"f\" = 1.5\n\"g\" = \"x\\\"y\"\n\"h\" = [1, -2]\n"
        );
    }

    /// Issue 22 (the `policy_twins` fuzz target): an error at the end of
    /// a one-line file was placed at line 2, and an empty list item on
    /// the last line on the line after it.
    #[test]
    fn issue_22_an_error_at_the_end_is_placed_inside_the_file() {
        let text = r#"{"rule": [{"name": "a", "#;
        let Err(problem) = transcode(text) else {
            panic!("an unclosed mapping is read");
        };
        assert_eq!(problem.place.line, 1, "{problem:?}");
        assert!(problem.place.column <= text.len() + 1, "{problem:?}");
        let Err(problem) = transcode("n:\n\n-") else {
            panic!("an empty list item is taken");
        };
        assert_eq!(problem.place.line, 3, "{problem:?}");
        let Err(problem) = transcode(" !") else {
            panic!("an unknown tag is taken");
        };
        assert_eq!(
            (problem.place.line, problem.place.column),
            (1, 3),
            "{problem:?}"
        );
    }

    #[test]
    fn places_point_into_the_yaml() {
        let yaml = "rule:\n  - name: a\n    decision: maybe\n";
        let out = transcode(yaml).unwrap();
        let offset = out.toml.find("\"maybe\"").unwrap();
        assert_eq!(
            out.place_of(offset),
            Place {
                line: 3,
                column: 15
            }
        );
        let key = out.toml.find("\"decision\"").unwrap();
        assert_eq!(out.place_of(key), Place { line: 3, column: 5 });
    }

    #[test]
    fn hostile_documents_are_refused() {
        let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
        let error = transcode(laughs).unwrap_err();
        assert!(error.message.contains("more than"), "{}", error.message);
        assert_eq!(error.place.line, 5);

        let twice = transcode("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!((twice.place.line, twice.place.column), (3, 1));
        assert!(twice.message.contains("`a` is given twice"));

        let two_documents = transcode("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(two_documents.message.contains("more than one"));

        let list = transcode("- a\n- b\n").unwrap_err();
        assert!(list.message.contains("mapping of fields"));

        let tag = transcode("a: !custom x\n").unwrap_err();
        assert!(tag.message.contains("`!custom`"), "{}", tag.message);

        let syntax = transcode("a: [1, 2\n").unwrap_err();
        assert!(syntax.place.line >= 1);
    }

    #[test]
    fn json_is_read_as_yaml() {
        let out = transcode("{\"default\": \"allow\", \"rule\": [{\"name\": \"a\"}]}").unwrap();
        assert_eq!(
            out.toml,
            "\"default\" = \"allow\"\n\"rule\" = [{ \"name\" = \"a\" }]\n"
        );
    }
}
