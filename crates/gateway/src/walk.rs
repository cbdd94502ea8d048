//! Visiting every string of a JSON value without recursion: an explicit
//! stack, so input nested a million levels deep costs memory, never the
//! thread's stack. Paths are kept as borrowed segments and written out as
//! a JSON pointer only when a visitor asks.

use serde_json::Value;

use crate::policy::pointer::escape;

/// One step down a JSON value.
#[derive(Debug, Clone, Copy)]
pub enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// Where a string lies, as a JSON pointer on demand.
#[derive(Debug)]
pub struct Path<'p, 'a>(&'p [Segment<'a>]);

impl Path<'_, '_> {
    pub fn pointer(&self) -> String {
        let mut pointer = String::new();
        for segment in self.0 {
            pointer.push('/');
            match segment {
                Segment::Key(key) => pointer.push_str(&escape(key)),
                Segment::Index(index) => pointer.push_str(&index.to_string()),
            }
        }
        pointer
    }
}

/// Calls `visit` with every string value in `value` (object keys are not
/// visited), depth first, in document order.
pub fn strings_mut<'a>(value: &'a mut Value, mut visit: impl FnMut(&Path<'_, 'a>, &mut String)) {
    let mut path: Vec<Segment<'a>> = Vec::new();
    let mut stack: Vec<(usize, Option<Segment<'a>>, &'a mut Value)> = vec![(0, None, value)];
    while let Some((depth, segment, value)) = stack.pop() {
        path.truncate(depth);
        if let Some(segment) = segment {
            path.push(segment);
        }
        let below = path.len();
        match value {
            Value::String(text) => visit(&Path(&path), text),
            Value::Array(items) => {
                stack.extend(
                    items
                        .iter_mut()
                        .enumerate()
                        .rev()
                        .map(|(index, item)| (below, Some(Segment::Index(index)), item)),
                );
            }
            Value::Object(map) => {
                let start = stack.len();
                stack.extend(
                    map.iter_mut()
                        .map(|(key, item)| (below, Some(Segment::Key(key.as_str())), item)),
                );
                stack[start..].reverse();
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_visited_in_order_with_their_pointers() {
        let mut value = serde_json::json!({"a": ["x", {"b/c": "y"}], "d": 1, "e": "z"});
        let mut seen = Vec::new();
        strings_mut(&mut value, |path, text| {
            seen.push((path.pointer(), text.clone()));
            text.make_ascii_uppercase();
        });
        assert_eq!(
            seen,
            [
                ("/a/0".to_owned(), "x".to_owned()),
                ("/a/1/b~1c".to_owned(), "y".to_owned()),
                ("/e".to_owned(), "z".to_owned()),
            ]
        );
        assert_eq!(value["e"], "Z");
    }
}
