//! The resources: two static ones (text and binary), one whose updates a
//! client may subscribe to, the counter's MCP App, and the template
//! `test://template/{id}/data`.
//! Reading any other URI is an error naming it (SEP-2164), never an empty
//! result.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde_json::json;

use crate::{app, fixtures};

/// The template's URI, `{id}` standing for any path segment.
const TEMPLATE: &str = "test://template/{id}/data";

pub fn list() -> ListResourcesResult {
    let resource = |uri: &str, name: &str, title: &str, description: &str, mime: &str| {
        Resource::new(uri, name)
            .with_title(title)
            .with_description(description)
            .with_mime_type(mime)
    };
    ListResourcesResult::with_all_items(vec![
        resource(
            "test://static-text",
            "static-text",
            "Static Text Resource",
            "A static text resource for testing",
            "text/plain",
        ),
        resource(
            "test://static-binary",
            "static-binary",
            "Static Binary Resource",
            "A static binary resource (a PNG image) for testing",
            "image/png",
        ),
        resource(
            "test://watched-resource",
            "watched-resource",
            "Watched Resource",
            "A resource clients may subscribe to",
            "text/plain",
        ),
        app::resource(),
    ])
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(TEMPLATE, "template")
            .with_title("Resource Template")
            .with_description("A resource template with parameter substitution")
            .with_mime_type("application/json"),
    ])
}

/// Whether `uri` names a resource a client may subscribe to.
pub fn exists(uri: &str) -> bool {
    read(uri).is_ok()
}

pub fn read(uri: &str) -> Result<ReadResourceResult, McpError> {
    let contents = match uri {
        "test://static-text" => {
            ResourceContents::text(fixtures::STATIC_TEXT, uri).with_mime_type("text/plain")
        }
        "test://static-binary" => {
            ResourceContents::blob(fixtures::PNG, uri).with_mime_type("image/png")
        }
        "test://watched-resource" => {
            ResourceContents::text(fixtures::WATCHED_TEXT, uri).with_mime_type("text/plain")
        }
        app::URI => app::read(),
        _ => match template_id(uri) {
            Some(id) => {
                let body =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                ResourceContents::text(body.to_string(), uri).with_mime_type("application/json")
            }
            None => {
                return Err(McpError::resource_not_found(
                    format!("no resource at `{uri}`"),
                    Some(json!({ "uri": uri })),
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The `{id}` of a URI that matches [`TEMPLATE`].
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_ids_are_one_segment() {
        assert_eq!(template_id("test://template/42/data"), Some("42"));
        assert_eq!(template_id("test://template//data"), None);
        assert_eq!(template_id("test://template/a/b/data"), None);
        assert_eq!(template_id("test://static-text"), None);
    }
}
