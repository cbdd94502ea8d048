//! The resources: `music://playlists` (every playlist of a workspace) and
//! the template `music://playlist/{name}` (one playlist with its songs),
//! both JSON, the same documents `list_playlists` and `get_playlist`
//! return. Names are percent-encoded in URIs (`Best%20of%20Queen`); a
//! `?workspace=NAME` query picks a workspace other than `default`.
//! Resource listings name the playlists of the default workspace.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde_json::json;

use crate::error::LookupError;
use crate::server::Music;
use crate::song::{self, DEFAULT_WORKSPACE};
use crate::tools::ListOutput;

/// Every playlist of a workspace.
pub const PLAYLISTS: &str = "music://playlists";
/// One playlist, by name.
pub const PLAYLIST_TEMPLATE: &str = "music://playlist/{name}";
const PLAYLIST_PREFIX: &str = "music://playlist/";
const JSON: &str = "application/json";

/// What a playlist name keeps unencoded in a URI (RFC 3986 unreserved).
const NAME_IN_URI: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The URI of the playlist `name`.
pub fn playlist_uri(name: &str) -> String {
    format!(
        "{PLAYLIST_PREFIX}{}",
        utf8_percent_encode(name, NAME_IN_URI)
    )
}

pub async fn list(music: &Music) -> Result<ListResourcesResult, McpError> {
    let mut resources = vec![
        Resource::new(PLAYLISTS, "playlists")
            .with_title("Playlists")
            .with_description("Every playlist of the default workspace, with song counts")
            .with_mime_type(JSON),
    ];
    let playlists = music
        .library()
        .playlists(DEFAULT_WORKSPACE.to_owned())
        .await
        .map_err(|error| McpError::internal_error(error.chain(), None))?;
    for playlist in playlists {
        resources.push(
            Resource::new(playlist_uri(&playlist.name), playlist.name.clone())
                .with_title(playlist.name.clone())
                .with_description(format!("The playlist with its {} songs", playlist.songs))
                .with_mime_type(JSON),
        );
    }
    Ok(ListResourcesResult::with_all_items(resources))
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(PLAYLIST_TEMPLATE, "playlist")
            .with_title("Playlist")
            .with_description(
                "One playlist with its songs in order; add ?workspace=NAME for another workspace",
            )
            .with_mime_type(JSON),
    ])
}

fn not_found(uri: &str, why: String) -> McpError {
    McpError::resource_not_found(why, Some(json!({ "uri": uri })))
}

pub async fn read(music: &Music, uri: &str) -> Result<ReadResourceResult, McpError> {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let workspace = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("workspace="))
        .map(|value| percent_decode_str(value).decode_utf8_lossy().into_owned());
    let workspace =
        song::workspace(workspace.as_deref()).map_err(|error| not_found(uri, error.to_string()))?;
    let body = if path == PLAYLISTS {
        let playlists = music
            .library()
            .playlists(workspace.clone())
            .await
            .map_err(|error| McpError::internal_error(error.chain(), None))?;
        serde_json::to_string_pretty(&ListOutput {
            workspace,
            playlists,
        })
    } else if let Some(encoded) = path.strip_prefix(PLAYLIST_PREFIX) {
        let name = percent_decode_str(encoded).decode_utf8_lossy();
        let playlist = music
            .find_playlist(Some(&workspace), &name)
            .await
            .map_err(|error| match error {
                LookupError::Input(error) => not_found(uri, error.to_string()),
                LookupError::Store(error) => McpError::internal_error(error.chain(), None),
            })?;
        serde_json::to_string_pretty(&playlist)
    } else {
        return Err(not_found(
            uri,
            format!("no resource at `{uri}`; read `{PLAYLISTS}` or `{PLAYLIST_TEMPLATE}`"),
        ));
    }
    .map_err(|error| McpError::internal_error(error.to_string(), None))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(body, uri).with_mime_type(JSON),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_percent_encoded() {
        assert_eq!(
            playlist_uri("Best of Queen"),
            "music://playlist/Best%20of%20Queen"
        );
        assert_eq!(playlist_uri("1990s"), "music://playlist/1990s");
        assert_eq!(playlist_uri("R&B/Soul"), "music://playlist/R%26B%2FSoul");
    }
}
