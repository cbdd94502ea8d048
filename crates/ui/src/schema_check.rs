//! Structured content checked against a tool's output schema, as the
//! specification asks of clients, with the jsonschema crate (no remote
//! `$ref` is ever fetched).

use serde_json::Value;

/// How many problems are listed.
const MAX_PROBLEMS: usize = 20;

/// `Ok` when `instance` matches `schema`; else each problem, with where.
pub fn check(schema: &Value, instance: &Value) -> Result<(), Vec<String>> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|error| vec![format!("the output schema itself is invalid: {error}")])?;
    let problems: Vec<String> = validator
        .iter_errors(instance)
        .take(MAX_PROBLEMS)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("at `{at}`: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mismatches_are_named_with_their_place() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        assert!(check(&schema, &json!({"n": 1})).is_ok());
        let problems = check(&schema, &json!({"n": "one"}))
            .err()
            .unwrap_or_default();
        assert!(problems.iter().any(|p| p.contains("/n")), "{problems:?}");
        assert!(check(&schema, &json!({})).is_err());
        assert!(check(&json!({"type": 7}), &json!(1)).is_err());
    }
}
