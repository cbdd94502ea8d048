//! The prompt `curate_playlist(mood, length?, workspace?)`: asks the model
//! to pick `length` songs (default 10) for a mood from the library, which
//! the prompt lists (at most [`LISTED_SONGS`] songs), so that the model
//! chooses among songs that exist rather than inventing them.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role,
};
use serde_json::Value;

use crate::error::InputError;
use crate::server::Music;
use crate::song;
use crate::store::StoredSong;

pub const CURATE_PLAYLIST: &str = "curate_playlist";
/// How many songs the prompt lists at most.
pub const LISTED_SONGS: u32 = 500;
/// The longest playlist the prompt asks for.
pub const MAX_LENGTH: usize = 100;
const DEFAULT_LENGTH: usize = 10;

pub fn list() -> Vec<Prompt> {
    let argument = |name: &str, description: &str, required: bool| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(required)
    };
    vec![
        Prompt::new(
            CURATE_PLAYLIST,
            Some("Pick songs from the music library for a mood, in a good order"),
            Some(vec![
                argument(
                    "mood",
                    "The mood, e.g. chill, happy, melancholy, energy, focus, party",
                    true,
                ),
                argument("length", "How many songs, 1 to 100 (default 10)", false),
                argument("workspace", "The library to use (default `default`)", false),
            ]),
        )
        .with_title("Curate a playlist"),
    ]
}

/// One line describing `song` for the model.
fn describe(song: &StoredSong) -> String {
    let mut details = Vec::new();
    if let Some(genre) = &song.genre {
        details.push(genre.clone());
    }
    if let Some(year) = song.year {
        details.push(year.to_string());
    }
    if let Some(seconds) = song.duration_s {
        details.push(format!("{}:{:02}", seconds / 60, seconds % 60));
    }
    if !song.tags.is_empty() {
        details.push(format!("tags: {}", song.tags.join(", ")));
    }
    let title = song.title.replace('\n', " ");
    if details.is_empty() {
        format!("- “{title}” by {}", song.artist)
    } else {
        format!("- “{title}” by {} ({})", song.artist, details.join("; "))
    }
}

pub async fn get(
    music: &Music,
    request: &GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    if request.name != CURATE_PLAYLIST {
        return Err(McpError::invalid_params(
            format!(
                "no prompt is called `{}`; the prompt is `{CURATE_PLAYLIST}`",
                request.name
            ),
            None,
        ));
    }
    let argument = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get(name))
            .and_then(|value| match value {
                Value::String(text) => Some(text.trim().to_owned()),
                Value::Number(number) => Some(number.to_string()),
                _ => None,
            })
            .filter(|text| !text.is_empty())
    };
    let invalid = |error: InputError| McpError::invalid_params(error.to_string(), None);
    let mood = argument("mood").ok_or_else(|| invalid(InputError::Empty("mood")))?;
    let length = match argument("length") {
        None => DEFAULT_LENGTH,
        Some(given) => given
            .parse::<usize>()
            .ok()
            .filter(|length| (1..=MAX_LENGTH).contains(length))
            .ok_or(InputError::PromptLength {
                given,
                max: MAX_LENGTH,
            })
            .map_err(invalid)?,
    };
    let workspace = song::workspace(argument("workspace").as_deref()).map_err(invalid)?;
    let songs = music
        .library()
        .songs(workspace.clone(), LISTED_SONGS)
        .await
        .map_err(|error| McpError::internal_error(error.chain(), None))?;
    let library = if songs.is_empty() {
        "The library is empty: say so, and suggest adding songs with the add_song tool.".to_owned()
    } else {
        let lines: Vec<String> = songs.iter().map(describe).collect();
        format!("The library holds these songs:\n{}", lines.join("\n"))
    };
    let text = format!(
        "Curate a playlist of {length} songs for a “{mood}” mood from my music library \
         (workspace “{workspace}”). Choose only songs listed below; prefer those whose tags, \
         genre or era fit the mood, and if fewer than {length} fit, give fewer and say why. \
         Put them in a good listening order and give one short line per song on why it fits.\n\n\
         {library}"
    );
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(format!("{length} songs for a {mood} mood")),
    )
}
