//! HTML for what servers send: tool results (text, Markdown, images,
//! resources, structured content checked against the tool's output
//! schema), JSON as a tree to unfold, and resource contents. Everything a
//! server wrote is escaped here or by askama; nothing it sends is ever
//! placed in HTML as markup, in an attribute unquoted, or in a URL other
//! than an image's `data:` of a raster or SVG type (shown by `<img>`,
//! which runs no script) or a Markdown link to http, https or mailto.

use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

/// How deep a JSON tree is drawn; deeper values are shown as their text.
const MAX_DEPTH: usize = 32;
/// How many members of one object or array are drawn.
const MAX_MEMBERS: usize = 500;
/// Image types shown inline.
const IMAGE_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/svg+xml",
];

/// `text` with the characters that mean something in HTML (and carriage
/// returns, which Server-Sent Events cannot carry) as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\r' => out.push_str("&#13;"),
            other => out.push(other),
        }
    }
    out
}

/// A JSON value as nested `<details>`: objects and arrays fold, scalars
/// are shown with their type's class.
pub fn json_tree(value: &Value) -> String {
    let mut out = String::new();
    tree(&mut out, value, 0, true);
    out
}

fn tree(out: &mut String, value: &Value, depth: usize, open: bool) {
    if depth >= MAX_DEPTH {
        let _ = write!(
            out,
            "<code class=\"json-deep\">{}</code>",
            escape(&value.to_string())
        );
        return;
    }
    let members: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| (index.to_string(), item))
            .collect(),
        scalar => {
            let class = match scalar {
                Value::String(_) => "json-string",
                Value::Number(_) => "json-number",
                Value::Bool(_) => "json-bool",
                _ => "json-null",
            };
            let _ = write!(
                out,
                "<code class=\"{class}\">{}</code>",
                escape(&scalar.to_string())
            );
            return;
        }
    };
    let (opening, closing) = if value.is_array() {
        ("[", "]")
    } else {
        ("{", "}")
    };
    if members.is_empty() {
        let _ = write!(out, "<code>{opening}{closing}</code>");
        return;
    }
    let _ = write!(
        out,
        "<details class=\"json\"{}><summary>{opening} {} {}</summary><ul>",
        if open { " open" } else { "" },
        members.len(),
        if value.is_array() { "items" } else { "keys" }
    );
    for (key, member) in members.iter().take(MAX_MEMBERS) {
        let _ = write!(out, "<li><span class=\"json-key\">{}</span>: ", escape(key));
        tree(out, member, depth + 1, depth < 1);
        out.push_str("</li>");
    }
    if members.len() > MAX_MEMBERS {
        let _ = write!(
            out,
            "<li class=\"muted\">{} more not shown</li>",
            members.len() - MAX_MEMBERS
        );
    }
    let _ = write!(out, "</ul><code>{closing}</code></details>");
}

/// A tool's result: each content block, the structured content (checked
/// against `tool`'s output schema when it has one) and whether the tool
/// reported an error.
pub fn tool_result(result: &CallToolResult, tool: Option<&Tool>, duration_ms: u128) -> String {
    let mut out = String::new();
    let error = result.is_error == Some(true);
    let _ = write!(
        out,
        "<section class=\"result{}\"><p class=\"result-head\">{} in {duration_ms} ms</p>",
        if error { " result-error" } else { "" },
        if error {
            "<strong>The tool reported an error</strong>"
        } else {
            "Result"
        }
    );
    for content in &result.content {
        out.push_str(&content_block(content));
    }
    if let Some(structured) = &result.structured_content {
        out.push_str("<h4>Structured content</h4>");
        if let Some(schema) = tool.and_then(|tool| tool.output_schema.as_ref()) {
            match crate::schema_check::check(&Value::Object((**schema).clone()), structured) {
                Ok(()) => out.push_str("<p class=\"ok\">matches the tool's output schema</p>"),
                Err(problems) => {
                    out.push_str(
                        "<div class=\"warning\"><p>does not match the tool's output schema:</p><ul>",
                    );
                    for problem in problems {
                        let _ = write!(out, "<li>{}</li>", escape(&problem));
                    }
                    out.push_str("</ul></div>");
                }
            }
        }
        out.push_str(&json_tree(structured));
    } else if tool.is_some_and(|tool| tool.output_schema.is_some()) && !error {
        out.push_str(
            "<div class=\"warning\"><p>the tool declares an output schema but returned no \
             structured content</p></div>",
        );
    }
    out.push_str("</section>");
    out
}

/// One content block of a result or a prompt message.
pub fn content_block(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text_block(&text.text),
        ContentBlock::Image(image) => media(&image.mime_type, &image.data, "image"),
        ContentBlock::Audio(audio) => format!(
            "<p class=\"muted\">audio ({}, {} bytes of base64)</p>",
            escape(&audio.mime_type),
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => {
            format!(
                "<div class=\"embedded\"><p class=\"muted\">embedded resource</p>{}</div>",
                resource_contents(&embedded.resource)
            )
        }
        ContentBlock::ResourceLink(link) => format!(
            "<p>link to resource <code>{}</code>{}</p>",
            escape(&link.uri),
            link.description
                .as_deref()
                .map(|text| format!(": {}", escape(text)))
                .unwrap_or_default()
        ),
        other => json_tree(&serde_json::to_value(other).unwrap_or(Value::Null)),
    }
}

/// Text as sent; JSON text is drawn as a tree as well, and text that
/// looks like Markdown can be read rendered.
fn text_block(text: &str) -> String {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(text)
    {
        return format!(
            "<div class=\"text-json\">{}<details><summary>as text</summary><pre>{}</pre></details></div>",
            json_tree(&value),
            escape(text)
        );
    }
    if looks_like_markdown(text) {
        return format!(
            "<pre class=\"text\">{}</pre><details><summary>as Markdown</summary><div class=\"md\">{}</div></details>",
            escape(text),
            markdown(text)
        );
    }
    format!("<pre class=\"text\">{}</pre>", escape(text))
}

/// Markdown's marks that plain text seldom has: headings, fenced code,
/// links, emphasis, tables, lists.
fn looks_like_markdown(text: &str) -> bool {
    let line_marks = text.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with("# ")
            || line.starts_with("## ")
            || line.starts_with("### ")
            || line.starts_with("```")
            || line.starts_with("|---")
            || line.starts_with("| ---")
            || line.starts_with("- [")
    });
    line_marks || text.contains("](") || text.contains("**")
}

/// `text` as Markdown (CommonMark with tables, strikethrough and task
/// lists), made safe: raw HTML is shown as text, a link keeps its target
/// only when it is http, https, mailto or a fragment, and an image is
/// replaced by its description and address (the page loads nothing from
/// outside).
pub fn markdown(text: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut events = Vec::new();
    // Whether each open link was kept; an image's address, shown at its end.
    let mut links = Vec::new();
    let mut images = Vec::new();
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let kept = safe_link(&dest_url);
                links.push(kept);
                if kept {
                    events.push(Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    }));
                }
            }
            Event::End(TagEnd::Link) => {
                if links.pop().unwrap_or(false) {
                    events.push(Event::End(TagEnd::Link));
                }
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                events.push(Event::Text(CowStr::Borrowed("[image: ")));
                images.push(dest_url);
            }
            Event::End(TagEnd::Image) => {
                let address = images.pop().unwrap_or(CowStr::Borrowed(""));
                events.push(Event::Text(format!(" ({address})]").into()));
            }
            other => events.push(other),
        }
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// Whether a Markdown link may keep its target.
fn safe_link(target: &str) -> bool {
    let target = target.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| target.starts_with(scheme))
        || target.starts_with('#')
}

/// An image shown inline when its type is one a browser draws without
/// running anything; anything else is described.
fn media(mime: &str, base64: &str, what: &str) -> String {
    let mime = mime.trim().to_ascii_lowercase();
    let clean = base64
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'=' | b'\n'));
    if IMAGE_TYPES.contains(&mime.as_str()) && clean {
        return format!(
            "<img class=\"media\" alt=\"{what} from the server\" src=\"data:{};base64,{}\">",
            escape(&mime),
            escape(&base64.replace('\n', ""))
        );
    }
    format!(
        "<p class=\"muted\">{what} of type <code>{}</code> ({} bytes of base64), not shown</p>",
        escape(&mime),
        base64.len()
    )
}

/// A resource's contents: text as text (JSON as a tree), a blob by type
/// and size (an image drawn).
pub fn resource_contents(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => {
            let is_markdown = mime_type.as_deref().is_some_and(|mime| {
                mime.trim()
                    .to_ascii_lowercase()
                    .starts_with("text/markdown")
            });
            let shown = if is_markdown {
                format!(
                    "<div class=\"md\">{}</div><details><summary>as text</summary><pre>{}</pre></details>",
                    markdown(text),
                    escape(text)
                )
            } else {
                text_block(text)
            };
            format!(
                "<p class=\"muted\"><code>{}</code> {}</p>{shown}",
                escape(uri),
                escape(mime_type.as_deref().unwrap_or("")),
            )
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "<p class=\"muted\"><code>{}</code></p>{}",
            escape(uri),
            media(
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                blob,
                "blob"
            )
        ),
        other => json_tree(&serde_json::to_value(other).unwrap_or(Value::Null)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_drawn_without_its_html_or_unsafe_links() {
        let html = markdown(
            "# Title\n\n**bold** <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n\
             [ok](https://example.com) [bad](javascript:alert(1)) [data](data:text/html,x)\n\n\
             ![pic](https://evil.example/track.png)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;") && !html.contains("<script"),
            "{html}"
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.com\">ok</a>"),
            "{html}"
        );
        assert!(
            !html.contains("javascript:") || !html.contains("href=\"javascript"),
            "{html}"
        );
        assert!(!html.contains("href=\"data:"), "{html}");
        assert!(
            html.contains("[image: pic (https://evil.example/track.png)]"),
            "{html}"
        );
        assert!(html.contains("<table>"), "{html}");
    }

    #[test]
    fn markdown_is_offered_only_for_text_that_looks_like_it() {
        assert!(text_block("## Report\n\n- one").contains("as Markdown"));
        assert!(!text_block("... --- ...").contains("as Markdown"));
        assert!(!text_block("plain words").contains("as Markdown"));
    }

    #[test]
    fn server_text_is_never_markup() {
        let hostile = "<script>alert(1)</script><img src=x onerror=alert(1)>\"'&";
        let html = text_block(hostile);
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        let tree = json_tree(&serde_json::json!({"<b>key</b>": "<i>value</i>"}));
        assert!(!tree.contains("<b>") && !tree.contains("<i>"), "{tree}");
    }

    #[test]
    fn only_drawable_images_are_inlined() {
        assert!(media("image/png", "iVBORw0KGgo=", "image").starts_with("<img"));
        let html = media("text/html", "PHNjcmlwdD4=", "image");
        assert!(!html.contains("<img") && !html.contains("data:"), "{html}");
        let smuggled = media("image/png", "AAAA\" onerror=\"alert(1)", "image");
        assert!(!smuggled.contains("<img"), "{smuggled}");
    }
}
