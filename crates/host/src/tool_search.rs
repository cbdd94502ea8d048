//! Which tools the model is offered, and how when there are many. The
//! configuration's `chat.tools` chooses (`include` and `exclude` patterns
//! over `server__tool`, `alwaysLoad` for those always sent in full); when
//! the definitions would take more than a share of the model's context
//! window ([`DEFAULT_SHARE`]), the model gets the names of the tools and
//! one tool to search them, [`SEARCH_TOOL`]: the definitions it finds are
//! sent from then on, for the rest of the conversation.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use crate::approval::Pattern;
use crate::provider::ToolDefinition;

/// nexo's tool that finds tools. One `_`, like every tool of nexo's own:
/// no server's tool can be named so.
pub const SEARCH_TOOL: &str = "nexo_search_tools";
/// The share of the context window the definitions may take before the
/// model is given names and the search tool instead.
pub const DEFAULT_SHARE: f64 = 0.10;
/// The most definitions one search loads.
const MOST_FOUND: usize = 8;

/// The configuration's choice of tools, as patterns over `server__tool`
/// (the server's and the tool's own names).
#[derive(Debug, Clone, Default)]
pub struct ToolSelection {
    /// Only these, when any is given.
    pub include: Vec<Pattern>,
    /// Never these.
    pub exclude: Vec<Pattern>,
    /// Always sent in full, even when the others are searched for.
    pub always_load: Vec<Pattern>,
}

impl ToolSelection {
    /// Whether the tool `own` (`server__tool`) is offered at all.
    pub fn offers(&self, own: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|pattern| pattern.matches(own)))
            && !self.exclude.iter().any(|pattern| pattern.matches(own))
    }

    /// Whether the tool `own` is always sent in full.
    pub fn always(&self, own: &str) -> bool {
        self.always_load.iter().any(|pattern| pattern.matches(own))
    }
}

/// The definitions the search has loaded so far, by the name offered.
#[derive(Debug, Default)]
pub struct Loaded(Mutex<BTreeSet<String>>);

impl Loaded {
    pub fn contains(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    fn add(&self, name: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned());
    }
}

/// The search tool's definition, naming the tools it can load.
pub fn definition(names: &[&str]) -> ToolDefinition {
    ToolDefinition {
        name: SEARCH_TOOL.to_owned(),
        description: format!(
            "Finds tools by what they do and makes them callable. Only some tools are given in \
             full; these others exist too, and must be found with this tool before they are \
             called: {}.",
            names.join(", ")
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words of what the tool should do, or part of its name."
                }
            },
            "required": ["query"]
        }),
    }
}

/// Searches `tools` for `arguments.query`; the definitions found are
/// loaded. The text answers the model.
pub fn search(arguments: &Value, tools: &[ToolDefinition], loaded: &Loaded) -> (String, bool) {
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_lowercase();
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    if words.is_empty() {
        return (
            "give `query`: words of what the tool should do".to_owned(),
            true,
        );
    }
    let mut scored: Vec<(usize, &ToolDefinition)> = tools
        .iter()
        .filter_map(|tool| {
            let name = tool.name.to_lowercase();
            let description = tool.description.to_lowercase();
            let score: usize = words
                .iter()
                .map(|word| {
                    2 * usize::from(name.contains(word)) + usize::from(description.contains(word))
                })
                .sum();
            (score > 0).then_some((score, tool))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    if scored.is_empty() {
        return (
            format!("no tool matches `{query}`; try other words, or a part of one of the names"),
            false,
        );
    }
    let mut text = String::from("These tools are now callable:\n");
    for (_, tool) in scored.into_iter().take(MOST_FOUND) {
        loaded.add(&tool.name);
        let first_line = tool.description.lines().next().unwrap_or_default();
        text.push_str(&format!("- {}: {first_line}\n", tool.name));
    }
    (text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: json!({"type": "object"}),
        }
    }

    #[test]
    fn a_search_loads_what_it_finds_best_first() {
        let tools = [
            tool("dns__salud_dns", "Checks the health of a domain's DNS."),
            tool("music__add_song", "Adds a song to the library."),
            tool(
                "dns__correo_politicas",
                "Mail policies (SPF, DMARC) of a domain.",
            ),
        ];
        let loaded = Loaded::default();
        let (text, failed) = search(&json!({"query": "dns health"}), &tools, &loaded);
        assert!(!failed);
        assert!(
            text.find("dns__salud_dns") < text.find("dns__correo_politicas"),
            "{text}"
        );
        assert!(loaded.contains("dns__salud_dns") && loaded.contains("dns__correo_politicas"));
        assert!(!loaded.contains("music__add_song"));
        let (text, _) = search(&json!({"query": "weather"}), &tools, &loaded);
        assert!(text.starts_with("no tool matches"), "{text}");
        assert!(search(&json!({}), &tools, &loaded).1);
    }

    #[test]
    fn the_selection_includes_excludes_and_always_loads() -> Result<(), Box<dyn std::error::Error>>
    {
        let selection = ToolSelection {
            include: vec![Pattern::new("dns__*")?, Pattern::new("utils__*")?],
            exclude: vec![Pattern::new("utils__calc")?],
            always_load: vec![Pattern::new("dns__ping")?],
        };
        assert!(selection.offers("dns__ping"));
        assert!(!selection.offers("music__add_song"));
        assert!(!selection.offers("utils__calc"));
        assert!(selection.always("dns__ping") && !selection.always("dns__salud_dns"));
        assert!(ToolSelection::default().offers("anything__at_all"));
        Ok(())
    }
}
