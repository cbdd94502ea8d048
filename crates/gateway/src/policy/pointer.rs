//! JSON pointers (RFC 6901) into a request's arguments, with one addition:
//! a `*` token stands for every element of an array or every member of an
//! object (`/files/*/path`). Resolution is a loop over the tokens, not a
//! recursion, so no depth of input can exhaust the stack.

use serde_json::Value;

/// A parsed pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Key(String),
    Any,
}

impl Pointer {
    /// Parses `text`: empty (the whole value) or `/`-separated tokens with
    /// `~1` for `/` and `~0` for `~`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Ok(Self {
                text: String::new(),
                tokens: Vec::new(),
            });
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!(
                "the pointer `{text}` does not start with `/` (write `/{text}`)"
            ));
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            if raw == "*" {
                tokens.push(Token::Any);
                continue;
            }
            let mut chars = raw.chars().peekable();
            let mut token = String::with_capacity(raw.len());
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => token.push('~'),
                        Some('1') => token.push('/'),
                        _ => {
                            return Err(format!(
                                "the pointer `{text}` has a `~` not followed by 0 or 1 \
                                 (write `~0` for `~` and `~1` for `/`)"
                            ));
                        }
                    }
                } else {
                    token.push(c);
                }
            }
            tokens.push(Token::Key(token));
        }
        Ok(Self {
            text: text.to_owned(),
            tokens,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every value the pointer reaches in `root`, each with its concrete
    /// pointer (wildcards replaced by the key or index taken).
    pub fn resolve<'v>(&self, root: &'v Value) -> Vec<(String, &'v Value)> {
        let mut current: Vec<(String, &'v Value)> = vec![(String::new(), root)];
        for token in &self.tokens {
            let mut next = Vec::new();
            for (at, value) in current {
                match (token, value) {
                    (Token::Key(key), Value::Object(map)) => {
                        if let Some(child) = map.get(key) {
                            next.push((format!("{at}/{}", escape(key)), child));
                        }
                    }
                    (Token::Key(key), Value::Array(items)) => {
                        if let Some(child) = index(key).and_then(|i| items.get(i)) {
                            next.push((format!("{at}/{key}"), child));
                        }
                    }
                    (Token::Any, Value::Object(map)) => {
                        for (key, child) in map {
                            next.push((format!("{at}/{}", escape(key)), child));
                        }
                    }
                    (Token::Any, Value::Array(items)) => {
                        for (i, child) in items.iter().enumerate() {
                            next.push((format!("{at}/{i}"), child));
                        }
                    }
                    _ => {}
                }
            }
            current = next;
        }
        current
    }
}

/// An array index as RFC 6901 writes it: digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.len() > 1 && token.starts_with('0') {
        return None;
    }
    token.parse().ok()
}

/// A key as a pointer token.
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn pointers_reach_values_and_wildcards_fan_out() {
        let value = serde_json::json!({"a/b": {"c": 1}, "files": [{"path": "x"}, {"path": "y"}]});
        let found = Pointer::parse("/a~1b/c").unwrap().resolve(&value);
        assert_eq!(found, vec![("/a~1b/c".to_owned(), &serde_json::json!(1))]);
        let paths: Vec<String> = Pointer::parse("/files/*/path")
            .unwrap()
            .resolve(&value)
            .into_iter()
            .map(|(at, _)| at)
            .collect();
        assert_eq!(paths, ["/files/0/path", "/files/1/path"]);
        assert!(Pointer::parse("files").is_err());
        assert!(Pointer::parse("/a~2").is_err());
    }
}
