//! What a caller may store, checked before anything touches the database:
//! [`SongInput`] (the arguments of `add_song`) becomes a [`NewSong`] or an
//! [`InputError`] saying what to fix. Also the other names callers give
//! (workspaces, playlists) and [`key`], the normalized form under which
//! titles, artists, tags and playlist names are compared.
//!
//! Bounds: title and artist 1 to 200 characters, album 200, genre 60,
//! at most 20 tags of 1 to 40 characters, year 1000 to next year, duration 1
//! to 86400 seconds, workspace 1 to 64 letters, digits, `-`, `_` or `.`,
//! playlist names 1 to 100 characters. Titles may hold line breaks and tabs
//! (seed 001's library had such titles); no field may hold other control
//! characters.

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::error::InputError;

pub const MAX_TITLE: usize = 200;
pub const MAX_ARTIST: usize = 200;
pub const MAX_ALBUM: usize = 200;
pub const MAX_GENRE: usize = 60;
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG: usize = 40;
pub const MAX_WORKSPACE: usize = 64;
pub const MAX_PLAYLIST: usize = 100;
pub const MIN_YEAR: i64 = 1000;
pub const MAX_DURATION_S: i64 = 86_400;

/// The workspace used when a call names none.
pub const DEFAULT_WORKSPACE: &str = "default";

/// A song as a caller describes it; nothing checked yet.
#[derive(Debug, Clone, Default)]
pub struct SongInput {
    pub title: String,
    pub artist: String,
    pub album: Option<String>,
    pub genre: Option<String>,
    pub year: Option<i64>,
    pub duration_s: Option<i64>,
    pub tags: Vec<String>,
}

/// A song that passed every check, trimmed, ready to store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewSong {
    pub title: String,
    pub artist: String,
    pub album: Option<String>,
    pub genre: Option<String>,
    pub year: Option<i32>,
    pub duration_s: Option<u32>,
    pub tags: Vec<String>,
}

impl NewSong {
    /// The normalized title, for duplicate detection.
    pub fn title_key(&self) -> String {
        key(&self.title)
    }

    /// The normalized artist, for duplicate detection and artist rules.
    pub fn artist_key(&self) -> String {
        key(&self.artist)
    }
}

impl SongInput {
    /// Checks every field against the bounds of this module; `this_year`
    /// decides the latest year accepted (next year, for announced releases).
    pub fn validate(self, this_year: i64) -> Result<NewSong, InputError> {
        let title = required("title", &self.title, MAX_TITLE, LineBreaks::Allowed)?;
        let artist = required("artist", &self.artist, MAX_ARTIST, LineBreaks::Refused)?;
        let album = optional("album", self.album.as_deref(), MAX_ALBUM)?;
        let genre = optional("genre", self.genre.as_deref(), MAX_GENRE)?;
        let latest = this_year + 1;
        let year = self
            .year
            .map(|year| {
                (MIN_YEAR..=latest)
                    .contains(&year)
                    .then(|| i32::try_from(year).ok())
                    .flatten()
                    .ok_or(InputError::Year { year, latest })
            })
            .transpose()?;
        let duration_s = self
            .duration_s
            .map(|seconds| {
                (1..=MAX_DURATION_S)
                    .contains(&seconds)
                    .then(|| u32::try_from(seconds).ok())
                    .flatten()
                    .ok_or(InputError::Duration(seconds))
            })
            .transpose()?;
        if self.tags.len() > MAX_TAGS {
            return Err(InputError::TooManyTags(self.tags.len()));
        }
        let mut tags: Vec<String> = Vec::with_capacity(self.tags.len());
        for tag in &self.tags {
            let tag = required("tags", tag, MAX_TAG, LineBreaks::Refused)?;
            if !tags.iter().any(|seen| key(seen) == key(&tag)) {
                tags.push(tag);
            }
        }
        Ok(NewSong {
            title,
            artist,
            album,
            genre,
            year,
            duration_s,
            tags,
        })
    }
}

/// The workspace a call names, or [`DEFAULT_WORKSPACE`].
pub fn workspace(given: Option<&str>) -> Result<String, InputError> {
    let Some(given) = given.map(str::trim).filter(|given| !given.is_empty()) else {
        return Ok(DEFAULT_WORKSPACE.to_owned());
    };
    let allowed = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.');
    if given.chars().count() > MAX_WORKSPACE || !given.chars().all(allowed) {
        return Err(InputError::Workspace(given.to_owned()));
    }
    Ok(given.to_owned())
}

/// A playlist name a caller gives, trimmed and checked.
pub fn playlist_name(given: &str) -> Result<String, InputError> {
    required("playlist", given, MAX_PLAYLIST, LineBreaks::Refused)
}

/// Whether line breaks and tabs may appear in a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineBreaks {
    Allowed,
    Refused,
}

fn required(
    field: &'static str,
    value: &str,
    max: usize,
    breaks: LineBreaks,
) -> Result<String, InputError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(InputError::Empty(field));
    }
    let length = value.chars().count();
    if length > max {
        return Err(InputError::TooLong { field, length, max });
    }
    let permitted = |c: char| breaks == LineBreaks::Allowed && matches!(c, '\n' | '\r' | '\t');
    if let Some(control) = value.chars().find(|&c| c.is_control() && !permitted(c)) {
        return Err(InputError::Control {
            field,
            code: u32::from(control),
        });
    }
    Ok(value.to_owned())
}

/// An optional text field: absent, empty and blank all mean "not given".
fn optional(
    field: &'static str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, InputError> {
    match value.map(str::trim).filter(|value| !value.is_empty()) {
        Some(value) => required(field, value, max, LineBreaks::Refused).map(Some),
        None => Ok(None),
    }
}

/// The form under which two names are the same: compatibility-decomposed,
/// accents dropped, lower case, letters and digits only, so that
/// `Don't Stop Me Now!`, `dont stop me  now` and `DON’T STOP ME NOW` meet.
/// A name of punctuation only keeps its lower-cased, trimmed self, so that
/// it never collides with every other such name.
pub fn key(text: &str) -> String {
    let folded: String = text
        .nfkd()
        .filter(|&c| !is_combining_mark(c))
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric())
        .collect();
    if folded.is_empty() {
        text.trim().to_lowercase()
    } else {
        folded
    }
}

/// The first letter of every word in upper case, the rest as given:
/// `hip hop` -> `Hip Hop`, `R&B` stays `R&B`.
pub fn title_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word_start = true;
    for c in text.chars() {
        if word_start && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        word_start = c.is_whitespace();
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    fn song(title: &str, artist: &str) -> SongInput {
        SongInput {
            title: title.to_owned(),
            artist: artist.to_owned(),
            ..SongInput::default()
        }
    }

    #[test]
    fn keys_ignore_case_accents_punctuation_and_spacing() {
        let same = [
            "Don't Stop Me Now!",
            "dont stop me  now",
            "DON’T STOP ME NOW",
            "  Dont-Stop-Me-Now ",
        ];
        for variant in same {
            assert_eq!(key(variant), "dontstopmenow", "{variant}");
        }
        assert_eq!(key("Canción Añeja"), key("CANCION ANEJA"));
        assert_eq!(key("ｆｕｌｌ width"), "fullwidth");
        assert_ne!(key("Yesterday"), key("Today"));
        assert_eq!(key("!!!"), "!!!");
        assert_ne!(key("!!!"), key("???"));
    }

    #[test]
    fn a_valid_song_is_trimmed_and_its_tags_deduplicated() {
        let mut input = song("  Bohemian Rhapsody ", "Queen");
        input.album = Some("  ".to_owned());
        input.genre = Some(" rock ".to_owned());
        input.year = Some(1975);
        input.duration_s = Some(354);
        input.tags = vec!["epic".into(), " Epic ".into(), "opera".into()];
        let valid = input.validate(2026).unwrap();
        assert_eq!(valid.title, "Bohemian Rhapsody");
        assert_eq!(valid.album, None, "a blank album is no album");
        assert_eq!(valid.genre.as_deref(), Some("rock"));
        assert_eq!((valid.year, valid.duration_s), (Some(1975), Some(354)));
        assert_eq!(valid.tags, ["epic", "opera"]);
    }

    #[test]
    fn every_bound_is_enforced_with_a_message_naming_the_field() {
        let this_year = 2026;
        let cases: Vec<(SongInput, &str)> = vec![
            (song("", "Queen"), "`title` is empty"),
            (song("  ", "Queen"), "`title` is empty"),
            (song("Song", ""), "`artist` is empty"),
            (song(&"x".repeat(201), "Queen"), "`title` is 201 characters"),
            (song("Song", "Que\u{7}en"), "`artist` contains a control"),
            (song("Song", "Que\nen"), "`artist` contains a control"),
            (
                SongInput {
                    year: Some(99_999),
                    ..song("Song", "Queen")
                },
                "`year` 99999 is out of range; give a year from 1000 to 2027",
            ),
            (
                SongInput {
                    year: Some(999),
                    ..song("Song", "Queen")
                },
                "`year` 999",
            ),
            (
                SongInput {
                    duration_s: Some(0),
                    ..song("Song", "Queen")
                },
                "`duration_s` 0",
            ),
            (
                SongInput {
                    duration_s: Some(86_401),
                    ..song("Song", "Queen")
                },
                "`duration_s` 86401",
            ),
            (
                SongInput {
                    tags: vec!["a".into(); 21],
                    ..song("Song", "Queen")
                },
                "21 tags",
            ),
            (
                SongInput {
                    tags: vec![" ".into()],
                    ..song("Song", "Queen")
                },
                "`tags` is empty",
            ),
            (
                SongInput {
                    genre: Some("g".repeat(61)),
                    ..song("Song", "Queen")
                },
                "`genre` is 61 characters",
            ),
        ];
        for (input, expected) in cases {
            let error = input.clone().validate(this_year).unwrap_err().to_string();
            assert!(error.contains(expected), "{input:?}: {error}");
        }
        let edges = SongInput {
            year: Some(2027),
            duration_s: Some(86_400),
            ..song("Line one\nline two", "Queen")
        };
        assert!(edges.validate(this_year).is_ok(), "bounds are inclusive");
    }

    #[test]
    fn workspaces_and_playlist_names() {
        assert_eq!(workspace(None).unwrap(), DEFAULT_WORKSPACE);
        assert_eq!(workspace(Some("  ")).unwrap(), DEFAULT_WORKSPACE);
        assert_eq!(workspace(Some("casa-2.0_b")).unwrap(), "casa-2.0_b");
        assert!(workspace(Some("a/b")).is_err());
        assert!(workspace(Some(&"w".repeat(65))).is_err());
        assert_eq!(playlist_name(" Rock ").unwrap(), "Rock");
        assert!(playlist_name("").is_err());
        assert!(playlist_name(&"p".repeat(101)).is_err());
    }

    #[test]
    fn title_case_capitalizes_words_only() {
        assert_eq!(title_case("hip hop"), "Hip Hop");
        assert_eq!(title_case("R&B"), "R&B");
        assert_eq!(title_case("k-pop"), "K-pop");
        assert_eq!(title_case("música ligera"), "Música Ligera");
    }
}
