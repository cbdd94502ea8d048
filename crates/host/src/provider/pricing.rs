//! What a turn cost, from the providers' list prices (US dollars per
//! million tokens) for the models nexo knows. A model not in the table (a
//! local one, a new one) has no price: its tokens are shown, never a
//! guessed cost.

use super::Usage;

/// A model's list prices, per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Price {
    input: f64,
    output: f64,
    /// Input read from the prompt cache.
    cache_read: f64,
    /// Input written to the prompt cache.
    cache_write: f64,
}

const fn anthropic(input: f64, output: f64) -> Price {
    Price {
        input,
        output,
        cache_read: input * 0.1,
        cache_write: input * 1.25,
    }
}

const fn openai(input: f64, output: f64, cache_read: f64) -> Price {
    Price {
        input,
        output,
        cache_read,
        cache_write: input,
    }
}

/// Model name prefixes and their prices; the longest prefix that matches
/// wins (`gpt-4.1-mini` before `gpt-4.1`), so dated names
/// (`claude-sonnet-4-5-20250929`) find theirs.
const PRICES: &[(&str, Price)] = &[
    ("claude-opus-4-1", anthropic(15.0, 75.0)),
    ("claude-opus-4", anthropic(15.0, 75.0)),
    ("claude-sonnet-4", anthropic(3.0, 15.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("claude-3-5-sonnet", anthropic(3.0, 15.0)),
    ("claude-haiku-4-5", anthropic(1.0, 5.0)),
    ("claude-3-5-haiku", anthropic(0.8, 4.0)),
    ("gpt-4.1", openai(2.0, 8.0, 0.5)),
    ("gpt-4.1-mini", openai(0.4, 1.6, 0.1)),
    ("gpt-4.1-nano", openai(0.1, 0.4, 0.025)),
    ("gpt-4o", openai(2.5, 10.0, 1.25)),
    ("gpt-4o-mini", openai(0.15, 0.6, 0.075)),
    ("o3", openai(2.0, 8.0, 0.5)),
    ("o4-mini", openai(1.1, 4.4, 0.275)),
];

/// The cost of `usage` on `model` in US dollars, if its price is known.
/// Cached input is priced as cached and not again as input: Anthropic
/// counts it apart from `input_tokens`, OpenAI within `prompt_tokens`
/// (`cached_in_input`).
pub fn cost(model: &str, usage: &Usage, cached_in_input: bool) -> Option<f64> {
    let model = model.rsplit('/').next().unwrap_or(model);
    let (_, price) = PRICES
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())?;
    let read = usage.cache_read_tokens.unwrap_or(0) as f64;
    let write = usage.cache_write_tokens.unwrap_or(0) as f64;
    let mut input = usage.input_tokens as f64;
    if cached_in_input {
        input = (input - read - write).max(0.0);
    }
    let dollars = input * price.input
        + usage.output_tokens as f64 * price.output
        + read * price.cache_read
        + write * price.cache_write;
    Some(dollars / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: None,
        }
    }

    fn about(dollars: Option<f64>, expected: f64) -> bool {
        dollars.is_some_and(|dollars| (dollars - expected).abs() < 1e-9)
    }

    #[test]
    fn known_models_are_priced_by_their_longest_prefix() {
        let cost_of = |model, usage: &Usage| cost(model, usage, false);
        let million = usage(1_000_000, 1_000_000, None);
        assert!(about(cost_of("claude-sonnet-4-5-20250929", &million), 18.0));
        assert!(about(cost_of("gpt-4.1-mini", &million), 2.0));
        assert!(about(cost_of("gpt-4.1", &million), 10.0));
        assert!(about(cost_of("openai/gpt-4o-mini", &million), 0.75));
        assert_eq!(cost_of("llama3.2", &million), None);
        assert_eq!(cost_of("qwen3:8b", &million), None);
    }

    #[test]
    fn cached_input_is_priced_once() {
        // OpenAI: 1M prompt tokens of which 400k cached.
        let openai = cost("gpt-4.1", &usage(1_000_000, 0, Some(400_000)), true);
        assert!(about(openai, 1.2 + 0.2));
        // Anthropic: input counted apart from the cache read.
        let anthropic = cost(
            "claude-sonnet-4-5",
            &usage(1_000, 0, Some(1_000_000)),
            false,
        );
        assert!(about(anthropic, 0.003 + 0.3));
    }
}
