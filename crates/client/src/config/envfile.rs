//! VS Code's (and Cursor's) `envFile`: `KEY=VALUE` lines, as a `.env` file
//! holds them. Blank lines and `#` comments are skipped, `export ` before a
//! key is allowed, a value may be quoted (`"..."` with `\n`, `\"` and `\\`
//! escapes, or `'...'` taken literally), and an unquoted value ends at ` #`.
//! Nothing is expanded inside values.
//!
//! Hand-written rather than with `dotenvy`: it expands `$VAR` in values
//! from the process's own environment, which this library must not read.

/// A line that is not `KEY=VALUE`: its 1-based line and column, and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadLine {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// The variables of an env file, in its order.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, BadLine> {
    let mut vars = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let bad = |column: usize, message: &str| BadLine {
            line: index + 1,
            column,
            message: message.to_owned(),
        };
        let content = line.trim_start();
        let indent = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let content = content.strip_prefix("export ").unwrap_or(content);
        let Some((key, value)) = content.split_once('=') else {
            return Err(bad(indent + 1, "the line is not `KEY=VALUE`"));
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(bad(indent + 1, "the line has no variable name before `=`"));
        }
        let value_column = line.len() - value.len() + 1;
        let value = value.trim();
        let value = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => quoted(&value[1..], quote)
                .ok_or_else(|| bad(value_column, "a quote is not closed"))?,
            _ => match value.find(" #") {
                Some(comment) => value[..comment].trim_end().to_owned(),
                None => value.to_owned(),
            },
        };
        vars.push((key.to_owned(), value));
    }
    Ok(vars)
}

/// The value up to the closing `quote`; `None` when it is not closed.
/// What follows the closing quote (a comment) is dropped.
fn quoted(text: &str, quote: char) -> Option<String> {
    let mut value = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c == quote => return Some(value),
            '\\' if quote == '"' => match chars.next()? {
                'n' => value.push('\n'),
                'r' => value.push('\r'),
                't' => value.push('\t'),
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_dotenv_writes_them() -> Result<(), BadLine> {
        let text = concat!(
            "# a comment\n\nA=1\nexport B = two words \n",
            "C=\"x \\\"y\\\"\\nz\" # note\nD='$E \\n'\n",
            "F=g # trailing\nG=\n  H=x=y\n",
        );
        let vars = parse(text)?;
        let expected = [
            ("A", "1"),
            ("B", "two words"),
            ("C", "x \"y\"\nz"),
            ("D", "$E \\n"),
            ("F", "g"),
            ("G", ""),
            ("H", "x=y"),
        ];
        let got: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
        Ok(())
    }

    #[test]
    fn bad_lines_are_placed() {
        assert_eq!(
            parse("A=1\n  just words\n"),
            Err(BadLine {
                line: 2,
                column: 3,
                message: "the line is not `KEY=VALUE`".into()
            })
        );
        assert!(matches!(parse("=x"), Err(BadLine { line: 1, .. })));
        assert!(matches!(
            parse("A=1\nB=\"open"),
            Err(BadLine {
                line: 2,
                column: 3,
                ..
            })
        ));
    }
}
