//! The five tools of seed 001's playlist server: `add_song`,
//! `list_playlists`, `get_playlist`, `export_playlist` and
//! `clear_library`, with their arguments and outputs.
//!
//! Every result carries a text content for people and a structured content
//! matching the tool's output schema. An argument that cannot be used is a
//! tool error (`isError: true`) saying what to fix, and nothing is written.
//! `add_song` and `clear_library` ask before writing when they must (see
//! [`crate::confirm`]); a question that cannot be asked is a
//! `needs_confirmation` result naming the arguments to retry with, which
//! is not an error.

use rmcp::handler::server::tool::{
    InputResponses as InputResponsesPart, RequestState as RequestStatePart, schema_for_output,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::confirm::{self, Asked, Channel, Form, Reply};
use crate::error::{InputError, LookupError, StoreError};
use crate::export::{self, Format};
use crate::server::Music;
use crate::song::{self, NewSong, SongInput};
use crate::store::{AddOutcome, Added, Counts, Decision, PlaylistSummary, Questions, StoredSong};

/// How many times one `add_song` call asks over a session before it falls
/// back to `needs_confirmation` (a client answering with forms that lack
/// the fields asked).
const MAX_ELICITATIONS: usize = 3;

/// Arguments of `add_song`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddSongArgs {
    /// The song's title, 1 to 200 characters (line breaks allowed).
    pub title: String,
    /// The performer, 1 to 200 characters.
    pub artist: String,
    /// The album, at most 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub album: Option<String>,
    /// The genre, at most 60 characters; proposes the playlist of that genre.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub genre: Option<String>,
    /// The release year, from 1000 to next year; proposes its decade's playlist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i64")]
    pub year: Option<i64>,
    /// The length in seconds, from 1 to 86400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i64")]
    pub duration_s: Option<i64>,
    /// Up to 20 tags of at most 40 characters. Tags naming a mood (chill,
    /// happy, sad, energetic, workout, focus, party, romantic, sleep, ...)
    /// propose that mood's playlist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub tags: Option<Vec<String>>,
    /// A separate library in the same database; default `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub workspace: Option<String>,
    /// The playlist to put the song in, when several are proposed (retry
    /// after `needs_confirmation`), or any playlist name (created if missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub playlist: Option<String>,
    /// `true` adds a song that looks like a duplicate of one already in the
    /// library (retry after `needs_confirmation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub confirm: Option<bool>,
}

/// Arguments of `list_playlists`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WorkspaceArgs {
    /// The library to look in; default `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub workspace: Option<String>,
}

/// Arguments of `get_playlist`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlaylistArgs {
    /// The playlist's name (case, accents and punctuation are ignored).
    pub name: String,
    /// The library to look in; default `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub workspace: Option<String>,
}

/// Arguments of `export_playlist`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportArgs {
    /// The playlist's name (case, accents and punctuation are ignored).
    pub name: String,
    /// `m3u` (extended M3U), `json` or `csv` (RFC 4180).
    pub format: String,
    /// The library to look in; default `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub workspace: Option<String>,
}

/// Arguments of `clear_library`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ClearArgs {
    /// The library to empty; default `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub workspace: Option<String>,
    /// For clients that cannot ask their user: `true` on the retry after
    /// `needs_confirmation`. Clients that can ask are always asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub confirm: Option<bool>,
}

/// How a writing call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The song was stored.
    Added,
    /// The workspace was emptied.
    Cleared,
    /// Nothing was written: retry with the arguments in `retry_with`.
    NeedsConfirmation,
    /// Nothing was written: the user said no.
    Declined,
    /// Nothing was written: the user dismissed the question.
    Cancelled,
}

/// Why a call needs confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A song with the same normalized title and artist exists.
    Duplicate,
    /// Several playlists are proposed and none was chosen.
    AmbiguousPlaylist,
    /// The call deletes data.
    Destructive,
}

/// The structured result of `add_song`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AddSongOutput {
    pub status: Status,
    /// What happened, in a sentence.
    pub message: String,
    pub workspace: String,
    /// The song stored (status `added`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub song: Option<StoredSong>,
    /// The playlist it went into, if any (status `added`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playlist: Option<String>,
    /// The playlists it could go in: of those its metadata proposes, the
    /// ones that exist, or every one when none exists yet.
    pub candidates: Vec<String>,
    /// The song this one seems to repeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<StoredSong>,
    /// Why confirmation is needed (status `needs_confirmation`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
    /// The arguments to add to the same call (status `needs_confirmation`):
    /// `confirm` (true) and/or `playlist` (one of `candidates`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retry_with: Vec<String>,
}

/// The structured result of `list_playlists`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListOutput {
    pub workspace: String,
    pub playlists: Vec<PlaylistSummary>,
}

/// The structured result of `get_playlist`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlaylistOutput {
    pub workspace: String,
    pub name: String,
    /// The sum of the known song lengths, in seconds.
    pub duration_s: u64,
    pub songs: Vec<StoredSong>,
}

/// The structured result of `export_playlist`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExportOutput {
    pub workspace: String,
    pub name: String,
    /// `m3u`, `json` or `csv`.
    pub format: String,
    pub mime_type: String,
    /// How many songs the document lists.
    pub songs: usize,
    /// The document.
    pub content: String,
}

/// The structured result of `clear_library`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClearOutput {
    pub status: Status,
    /// What happened, in a sentence.
    pub message: String,
    pub workspace: String,
    /// Songs deleted (`cleared`), or that would be.
    pub songs: u64,
    /// Playlists deleted (`cleared`), or that would be.
    pub playlists: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
    /// The arguments to add to the same call (status `needs_confirmation`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retry_with: Vec<String>,
}

/// A successful result: `text` for people, `output` as structured content.
fn reply(text: String, output: &impl Serialize) -> CallToolResponse {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = serde_json::to_value(output).ok();
    result.into()
}

/// A tool error whose only content is `message`.
fn failure(message: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

fn input_failure(error: &InputError) -> CallToolResponse {
    failure(error.to_string())
}

fn store_failure(error: &StoreError) -> CallToolResponse {
    failure(format!(
        "{}; nothing was changed, try again in a moment",
        error.chain()
    ))
}

/// A song as messages name it: “title” by artist.
fn named(title: &str, artist: &str) -> String {
    format!("“{}” by {artist}", title.replace('\n', " "))
}

/// The current year, UTC.
fn this_year() -> i64 {
    i64::from(
        jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .year(),
    )
}

/// What a confirmation of `add_song` is bound to: its workspace and song.
fn song_subject(workspace: &str, song: &NewSong) -> Vec<u8> {
    serde_json::to_vec(&(workspace, song)).unwrap_or_default()
}

/// The form asking `questions` about `song`.
fn add_form(song: &NewSong, questions: &Questions) -> Form {
    let mut lines = Vec::new();
    if let Some(existing) = &questions.duplicate_of {
        lines.push(format!(
            "{} looks like a song already in the library: {} (song {}, added {}). Add it anyway?",
            named(&song.title, &song.artist),
            named(&existing.title, &existing.artist),
            existing.id,
            existing.added_at
        ));
    }
    if questions.choose {
        lines.push(format!(
            "Which playlist should {} go in?",
            named(&song.title, &song.artist)
        ));
    }
    Form {
        message: lines.join("\n"),
        confirm: questions
            .duplicate_of
            .as_ref()
            .map(|_| "Add it anyway".to_owned()),
        playlists: if questions.choose {
            questions.candidates.clone()
        } else {
            Vec::new()
        },
    }
}

fn asked(questions: &Questions) -> Asked {
    Asked {
        confirm: questions.duplicate_of.is_some(),
        playlist: questions.choose,
    }
}

/// Takes an accepted form's answers into `decision`; `false` when
/// `confirm` was asked and the answer is anything but `true`. A missing or
/// unusable `playlist` leaves the choice open, to be asked again.
fn apply(fields: &JsonObject, asked: Asked, decision: &mut Decision) -> bool {
    if asked.confirm {
        if confirm::confirmed(fields) != Some(true) {
            return false;
        }
        decision.confirm_duplicate = true;
    }
    if asked.playlist
        && let Some(name) = confirm::chosen_playlist(fields)
        && let Ok(name) = song::playlist_name(name)
    {
        decision.playlist = Some(name);
    }
    true
}

fn add_song_output(workspace: &str, status: Status, message: String) -> AddSongOutput {
    AddSongOutput {
        status,
        message,
        workspace: workspace.to_owned(),
        song: None,
        playlist: None,
        candidates: Vec::new(),
        duplicate_of: None,
        reasons: Vec::new(),
        retry_with: Vec::new(),
    }
}

/// The status of a call the user did not agree to, given how its question
/// ended (a form accepted without a yes counts as a no), and the sentence
/// saying that nothing was `done` (`written`, `deleted`) and why.
fn refusal(answer: &Reply, done: &str) -> (Status, String) {
    match answer {
        Reply::Cancelled => (
            Status::Cancelled,
            format!("Nothing was {done}: the question was dismissed."),
        ),
        Reply::Declined | Reply::Accepted(_) => (
            Status::Declined,
            format!("Nothing was {done}: the user said no."),
        ),
    }
}

/// Nothing written, because the user said no or dismissed the question.
fn refused(workspace: &str, answer: &Reply) -> CallToolResponse {
    let (status, message) = refusal(answer, "written");
    let output = add_song_output(workspace, status, message.clone());
    reply(message, &output)
}

/// The `needs_confirmation` result: nothing written, retry with arguments.
fn needs_confirmation(workspace: &str, song: &NewSong, questions: Questions) -> CallToolResponse {
    let mut sentences = vec!["Nothing was written yet.".to_owned()];
    let mut reasons = Vec::new();
    let mut retry_with = Vec::new();
    if let Some(existing) = &questions.duplicate_of {
        sentences.push(format!(
            "{} looks like song {} already in the library; to add it anyway, call add_song \
             again with the same arguments and confirm=true.",
            named(&song.title, &song.artist),
            existing.id
        ));
        reasons.push(Reason::Duplicate);
        retry_with.push(confirm::CONFIRM.to_owned());
    }
    if questions.choose {
        sentences.push(format!(
            "It fits several playlists ({}); call add_song again with playlist set to one \
             of them.",
            questions.candidates.join(", ")
        ));
        reasons.push(Reason::AmbiguousPlaylist);
        retry_with.push(confirm::PLAYLIST.to_owned());
    }
    let message = sentences.join(" ");
    let output = AddSongOutput {
        candidates: questions.candidates,
        duplicate_of: questions.duplicate_of,
        reasons,
        retry_with,
        ..add_song_output(workspace, Status::NeedsConfirmation, message.clone())
    };
    reply(message, &output)
}

fn added_response(workspace: &str, added: Added) -> CallToolResponse {
    let Added {
        song,
        playlist,
        candidates,
        duplicate_of,
    } = added;
    let mut message = format!("Added {}", named(&song.title, &song.artist));
    match &playlist {
        Some(name) => message.push_str(&format!(" to the playlist “{name}”")),
        None => message.push_str(" (no playlist proposed)"),
    }
    if let Some(existing) = &duplicate_of {
        message.push_str(&format!(", a second copy of song {}", existing.id));
    }
    message.push('.');
    let output = AddSongOutput {
        song: Some(song),
        playlist,
        candidates,
        duplicate_of,
        ..add_song_output(workspace, Status::Added, message.clone())
    };
    reply(message, &output)
}

fn clear_output(
    workspace: &str,
    status: Status,
    message: String,
    counts: Counts,
) -> CallToolResponse {
    let needs = status == Status::NeedsConfirmation;
    let output = ClearOutput {
        status,
        message: message.clone(),
        workspace: workspace.to_owned(),
        songs: counts.songs,
        playlists: counts.playlists,
        reasons: if needs {
            vec![Reason::Destructive]
        } else {
            Vec::new()
        },
        retry_with: if needs {
            vec![confirm::CONFIRM.to_owned()]
        } else {
            Vec::new()
        },
    };
    reply(message, &output)
}

/// Nothing deleted, because the user said no or dismissed the question.
fn clear_refused(workspace: &str, answer: &Reply, counts: Counts) -> CallToolResponse {
    let (status, message) = refusal(answer, "deleted");
    clear_output(workspace, status, message, counts)
}

impl Music {
    async fn clear(&self, workspace: &str) -> CallToolResponse {
        match self.library().clear(workspace.to_owned()).await {
            Ok(deleted) => clear_output(
                workspace,
                Status::Cleared,
                format!(
                    "Deleted {} songs and {} playlists from the workspace “{workspace}”.",
                    deleted.songs, deleted.playlists
                ),
                deleted,
            ),
            Err(error) => store_failure(&error),
        }
    }
}

#[tool_router(vis = "pub(crate)")]
impl Music {
    #[tool(
        title = "Add a song",
        description = "Store a song in the music library and put it in a playlist proposed from \
                       its genre, decade, mood tags or artist. Asks before writing when the song \
                       looks like a duplicate (same title and artist, ignoring case, accents and \
                       punctuation) or when several playlists fit; a client that cannot ask its \
                       user gets status `needs_confirmation` and retries with `confirm` or \
                       `playlist`. Nothing is written before the answer.",
        output_schema = schema_for_output::<AddSongOutput>(),
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_song(
        &self,
        Parameters(args): Parameters<AddSongArgs>,
        context: RequestContext<RoleServer>,
        RequestStatePart(request_state): RequestStatePart,
        InputResponsesPart(responses): InputResponsesPart,
    ) -> Result<CallToolResponse, McpError> {
        let workspace = match song::workspace(args.workspace.as_deref()) {
            Ok(workspace) => workspace,
            Err(error) => return Ok(input_failure(&error)),
        };
        let input = SongInput {
            title: args.title,
            artist: args.artist,
            album: args.album,
            genre: args.genre,
            year: args.year,
            duration_s: args.duration_s,
            tags: args.tags.unwrap_or_default(),
        };
        let song = match input.validate(this_year()) {
            Ok(song) => song,
            Err(error) => return Ok(input_failure(&error)),
        };
        let playlist = match args
            .playlist
            .as_deref()
            .map(song::playlist_name)
            .transpose()
        {
            Ok(playlist) => playlist,
            Err(error) => return Ok(input_failure(&error)),
        };
        let mut decision = Decision {
            confirm_duplicate: args.confirm == Some(true),
            playlist,
        };
        let subject = song_subject(&workspace, &song);
        if let Some(sealed) = &request_state {
            let asked = self.sealer().open("add_song", &subject, sealed)?;
            match Reply::from_responses(responses.as_ref()) {
                Some(Reply::Accepted(fields)) if !apply(&fields, asked, &mut decision) => {
                    return Ok(refused(&workspace, &Reply::Declined));
                }
                Some(Reply::Accepted(_)) | None => {}
                Some(refusal) => return Ok(refused(&workspace, &refusal)),
            }
        }
        let channel = Channel::of(&context);
        let mut elicited = 0;
        loop {
            let outcome = match self
                .library()
                .add_song(workspace.clone(), song.clone(), decision.clone())
                .await
            {
                Ok(outcome) => outcome,
                Err(error) => return Ok(store_failure(&error)),
            };
            let questions = match outcome {
                AddOutcome::NeedsConfirmation(questions) => questions,
                AddOutcome::Added(added) => return Ok(added_response(&workspace, added)),
            };
            let form = add_form(&song, &questions);
            let elicitation = match channel {
                Channel::InputRequired => {
                    let result =
                        self.sealer()
                            .ask("add_song", &subject, &form, asked(&questions))?;
                    return Ok(result.into());
                }
                Channel::Elicitation if elicited < MAX_ELICITATIONS => {
                    elicited += 1;
                    confirm::elicit(&context, &form).await
                }
                Channel::Elicitation | Channel::Arguments => {
                    return Ok(needs_confirmation(&workspace, &song, questions));
                }
            };
            match elicitation {
                Ok(Reply::Accepted(fields)) => {
                    if !apply(&fields, asked(&questions), &mut decision) {
                        return Ok(refused(&workspace, &Reply::Declined));
                    }
                }
                Ok(refusal) => return Ok(refused(&workspace, &refusal)),
                Err(error) => {
                    tracing::info!(%error, "elicitation failed; asking for arguments instead");
                    return Ok(needs_confirmation(&workspace, &song, questions));
                }
            }
        }
    }

    #[tool(
        title = "List playlists",
        description = "List the playlists of a workspace with how many songs each holds and \
                       their total length in seconds.",
        output_schema = schema_for_output::<ListOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_playlists(
        &self,
        Parameters(args): Parameters<WorkspaceArgs>,
    ) -> CallToolResponse {
        let workspace = match song::workspace(args.workspace.as_deref()) {
            Ok(workspace) => workspace,
            Err(error) => return input_failure(&error),
        };
        match self.library().playlists(workspace.clone()).await {
            Ok(playlists) => {
                let output = ListOutput {
                    workspace,
                    playlists,
                };
                reply(pretty(&output), &output)
            }
            Err(error) => store_failure(&error),
        }
    }

    #[tool(
        title = "Get a playlist",
        description = "The songs of one playlist, in order, with all their metadata.",
        output_schema = schema_for_output::<PlaylistOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_playlist(&self, Parameters(args): Parameters<PlaylistArgs>) -> CallToolResponse {
        match self
            .find_playlist(args.workspace.as_deref(), &args.name)
            .await
        {
            Ok(output) => reply(pretty(&output), &output),
            Err(error) => lookup_failure(&error),
        }
    }

    #[tool(
        title = "Export a playlist",
        description = "Write a playlist as extended M3U (`m3u`, with #EXTINF lines), `json` or \
                       `csv` (RFC 4180 quoting); the document is the text content and \
                       `content` of the result.",
        output_schema = schema_for_output::<ExportOutput>(),
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn export_playlist(&self, Parameters(args): Parameters<ExportArgs>) -> CallToolResponse {
        let format: Format = match args.format.parse() {
            Ok(format) => format,
            Err(error) => return input_failure(&error),
        };
        let found = match self
            .find_playlist(args.workspace.as_deref(), &args.name)
            .await
        {
            Ok(found) => found,
            Err(error) => return lookup_failure(&error),
        };
        let playlist = crate::store::Playlist {
            name: found.name,
            songs: found.songs,
        };
        match export::export(&playlist, format) {
            Ok(content) => {
                let output = ExportOutput {
                    workspace: found.workspace,
                    name: playlist.name,
                    format: format.name().to_owned(),
                    mime_type: format.mime_type().to_owned(),
                    songs: playlist.songs.len(),
                    content: content.clone(),
                };
                reply(content, &output)
            }
            Err(error) => failure(format!(
                "cannot write the {} export: {error}",
                format.name()
            )),
        }
    }

    #[tool(
        title = "Clear the library",
        description = "Delete every song and playlist of a workspace. Always asks first: by \
                       elicitation when the client supports it, else it answers \
                       `needs_confirmation` and deletes on the retry with `confirm: true`.",
        output_schema = schema_for_output::<ClearOutput>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn clear_library(
        &self,
        Parameters(args): Parameters<ClearArgs>,
        context: RequestContext<RoleServer>,
        RequestStatePart(request_state): RequestStatePart,
        InputResponsesPart(responses): InputResponsesPart,
    ) -> Result<CallToolResponse, McpError> {
        let workspace = match song::workspace(args.workspace.as_deref()) {
            Ok(workspace) => workspace,
            Err(error) => return Ok(input_failure(&error)),
        };
        let counts = match self.library().counts(workspace.clone()).await {
            Ok(counts) => counts,
            Err(error) => return Ok(store_failure(&error)),
        };
        let subject = workspace.as_bytes();
        if let Some(sealed) = &request_state {
            self.sealer().open("clear_library", subject, sealed)?;
            match Reply::from_responses(responses.as_ref()) {
                Some(Reply::Accepted(fields)) if confirm::confirmed(&fields) == Some(true) => {
                    return Ok(self.clear(&workspace).await);
                }
                Some(refusal) => return Ok(clear_refused(&workspace, &refusal, counts)),
                None => {}
            }
        }
        let form = Form {
            message: format!(
                "Delete all {} songs and {} playlists of the workspace “{workspace}”? This \
                 cannot be undone.",
                counts.songs, counts.playlists
            ),
            confirm: Some(format!("Delete everything in “{workspace}”")),
            playlists: Vec::new(),
        };
        let asked = Asked {
            confirm: true,
            playlist: false,
        };
        match Channel::of(&context) {
            Channel::InputRequired => {
                let result = self.sealer().ask("clear_library", subject, &form, asked)?;
                return Ok(result.into());
            }
            Channel::Elicitation => match confirm::elicit(&context, &form).await {
                Ok(Reply::Accepted(fields)) if confirm::confirmed(&fields) == Some(true) => {
                    return Ok(self.clear(&workspace).await);
                }
                Ok(refusal) => return Ok(clear_refused(&workspace, &refusal, counts)),
                Err(error) => {
                    tracing::info!(%error, "elicitation failed; asking for arguments instead");
                }
            },
            Channel::Arguments => {}
        }
        // Only a client that cannot be asked, or whose question failed, gets here:
        // for it, `confirm: true` is the answer.
        if args.confirm == Some(true) {
            return Ok(self.clear(&workspace).await);
        }
        let message = format!(
            "Nothing was deleted yet. The workspace “{workspace}” holds {} songs and {} \
             playlists; to delete them all, call clear_library again with confirm=true.",
            counts.songs, counts.playlists
        );
        Ok(clear_output(
            &workspace,
            Status::NeedsConfirmation,
            message,
            counts,
        ))
    }
}

/// `value` as pretty JSON, for a text content.
fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

impl Music {
    /// The playlist `name` of the workspace `workspace` names.
    pub(crate) async fn find_playlist(
        &self,
        workspace: Option<&str>,
        name: &str,
    ) -> Result<PlaylistOutput, LookupError> {
        let workspace = song::workspace(workspace)?;
        let name = song::playlist_name(name)?;
        let playlist = self
            .library()
            .playlist(workspace.clone(), name.clone())
            .await?
            .ok_or(InputError::UnknownPlaylist {
                name,
                workspace: workspace.clone(),
            })?;
        Ok(PlaylistOutput {
            workspace,
            duration_s: playlist
                .songs
                .iter()
                .filter_map(|song| song.duration_s)
                .map(u64::from)
                .sum(),
            name: playlist.name,
            songs: playlist.songs,
        })
    }
}

fn lookup_failure(error: &LookupError) -> CallToolResponse {
    match error {
        LookupError::Input(error) => input_failure(error),
        LookupError::Store(error) => store_failure(error),
    }
}
