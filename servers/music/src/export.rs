//! A playlist as a document: extended M3U, JSON or CSV. Pure functions; the
//! layouts are described in the crate README.
//!
//! - M3U: `#EXTM3U`, `#PLAYLIST:<name>`, then per song `#EXTINF:<seconds>,
//!   <artist> - <title>` (-1 when the length is unknown), `#EXTALB:` and
//!   `#EXTGENRE:` when known, and a location line. The library keeps
//!   metadata, not files, so the location is the file name a player would
//!   look for beside the playlist, `<artist> - <title>`, with characters
//!   file systems refuse replaced by `_`. M3U is line-based: line breaks
//!   inside a title become spaces there.
//! - JSON: `{"name": ..., "songs": [...]}`, each song as `get_playlist`
//!   shows it.
//! - CSV (RFC 4180: CRLF line ends, fields with commas, quotes or line
//!   breaks quoted, quotes doubled): a header row, then `position, id,
//!   title, artist, album, genre, year, duration_s, tags`, the tags as a
//!   JSON list so that any tag text survives.

use std::fmt::Write as _;
use std::str::FromStr;

use serde_json::json;

use crate::error::InputError;
use crate::store::Playlist;

/// The formats `export_playlist` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    M3u,
    Json,
    Csv,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::M3u => "m3u",
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }

    pub fn mime_type(self) -> &'static str {
        match self {
            Format::M3u => "audio/x-mpegurl",
            Format::Json => "application/json",
            Format::Csv => "text/csv",
        }
    }
}

impl FromStr for Format {
    type Err = InputError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "m3u" | "m3u8" => Ok(Format::M3u),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(InputError::Format(text.to_owned())),
        }
    }
}

/// The columns of the CSV export, in order.
pub const CSV_HEADER: [&str; 9] = [
    "position",
    "id",
    "title",
    "artist",
    "album",
    "genre",
    "year",
    "duration_s",
    "tags",
];

/// `playlist` written as `format`.
pub fn export(playlist: &Playlist, format: Format) -> Result<String, csv::Error> {
    match format {
        Format::M3u => Ok(m3u(playlist)),
        Format::Json => {
            let document = json!({ "name": playlist.name, "songs": playlist.songs });
            Ok(serde_json::to_string_pretty(&document).unwrap_or_default())
        }
        Format::Csv => csv(playlist),
    }
}

/// `text` on one line: each run of line breaks and tabs becomes a space.
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_break = false;
    for c in text.chars() {
        if matches!(c, '\n' | '\r' | '\t') {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            out.push(c);
            in_break = false;
        }
    }
    out
}

/// A file name from `text`: what Windows, macOS or Linux refuse becomes `_`.
fn file_name(text: &str) -> String {
    one_line(text)
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn m3u(playlist: &Playlist) -> String {
    let mut out = String::from("#EXTM3U\n");
    let _ = writeln!(out, "#PLAYLIST:{}", one_line(&playlist.name));
    for song in &playlist.songs {
        let seconds = song.duration_s.map_or(-1, i64::from);
        let (artist, title) = (one_line(&song.artist), one_line(&song.title));
        let _ = writeln!(out, "#EXTINF:{seconds},{artist} - {title}");
        if let Some(album) = &song.album {
            let _ = writeln!(out, "#EXTALB:{}", one_line(album));
        }
        if let Some(genre) = &song.genre {
            let _ = writeln!(out, "#EXTGENRE:{}", one_line(genre));
        }
        let _ = writeln!(out, "{}", file_name(&format!("{artist} - {title}")));
    }
    out
}

fn csv(playlist: &Playlist) -> Result<String, csv::Error> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    writer.write_record(CSV_HEADER)?;
    for (position, song) in playlist.songs.iter().enumerate() {
        let optional = |value: Option<String>| value.unwrap_or_default();
        writer.write_record([
            (position + 1).to_string(),
            song.id.to_string(),
            song.title.clone(),
            song.artist.clone(),
            optional(song.album.clone()),
            optional(song.genre.clone()),
            optional(song.year.map(|year| year.to_string())),
            optional(song.duration_s.map(|seconds| seconds.to_string())),
            serde_json::to_string(&song.tags).unwrap_or_default(),
        ])?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|error| csv::Error::from(error.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use crate::store::StoredSong;

    fn song(id: i64, title: &str, artist: &str) -> StoredSong {
        StoredSong {
            id,
            title: title.to_owned(),
            artist: artist.to_owned(),
            album: None,
            genre: None,
            year: None,
            duration_s: None,
            tags: Vec::new(),
            added_at: "2026-01-01T00:00:00Z".to_owned(),
        }
    }

    /// Titles that break naive writers: commas, quotes, line breaks,
    /// separators of every format.
    fn awkward() -> Playlist {
        let mut first = song(7, "Hello, \"World\"\nPart 2", "Ana, Luis & \"Co\"");
        first.album = Some("Best, Of".to_owned());
        first.genre = Some("pop".to_owned());
        first.year = Some(1999);
        first.duration_s = Some(215);
        first.tags = vec!["a;b".to_owned(), "c,\"d\"".to_owned()];
        let second = song(9, "AC/DC: Live?", "Band\r\nName");
        Playlist {
            name: "Mix, \"2026\"".to_owned(),
            songs: vec![first, second],
        }
    }

    #[test]
    fn csv_round_trips_every_awkward_field() {
        let playlist = awkward();
        let text = export(&playlist, Format::Csv).unwrap();
        assert!(text.ends_with("\r\n"), "RFC 4180 records end in CRLF");
        let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header, CSV_HEADER);
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        for (row, (position, song)) in rows.iter().zip(playlist.songs.iter().enumerate()) {
            assert_eq!(row[0], (position + 1).to_string());
            assert_eq!(row[1], song.id.to_string());
            assert_eq!(&row[2], song.title);
            assert_eq!(&row[3], song.artist);
            assert_eq!(row[4], song.album.clone().unwrap_or_default());
            let tags: Vec<String> = serde_json::from_str(&row[8]).unwrap();
            assert_eq!(tags, song.tags);
        }
        assert_eq!(&rows[0][6], "1999");
        assert_eq!(&rows[1][6], "", "an unknown year is an empty field");
    }

    #[test]
    fn json_round_trips() {
        let playlist = awkward();
        let text = export(&playlist, Format::Json).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["name"], playlist.name);
        assert_eq!(
            parsed["songs"],
            serde_json::to_value(&playlist.songs).unwrap()
        );
    }

    #[test]
    fn m3u_has_one_entry_per_song_on_single_lines() {
        let text = export(&awkward(), Format::M3u).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "#EXTM3U");
        assert_eq!(lines[1], "#PLAYLIST:Mix, \"2026\"");
        assert_eq!(
            lines[2],
            "#EXTINF:215,Ana, Luis & \"Co\" - Hello, \"World\" Part 2"
        );
        assert_eq!(lines[3], "#EXTALB:Best, Of");
        assert_eq!(lines[4], "#EXTGENRE:pop");
        assert_eq!(lines[5], "Ana, Luis & _Co_ - Hello, _World_ Part 2");
        assert_eq!(lines[6], "#EXTINF:-1,Band Name - AC/DC: Live?");
        assert_eq!(lines[7], "Band Name - AC_DC_ Live_");
        assert_eq!(lines.len(), 8);
    }

    #[test]
    fn formats_by_name() {
        assert_eq!("M3U".parse::<Format>(), Ok(Format::M3u));
        assert_eq!(" json ".parse::<Format>(), Ok(Format::Json));
        assert_eq!("csv".parse::<Format>(), Ok(Format::Csv));
        let error = "xml".parse::<Format>().unwrap_err().to_string();
        assert!(error.contains("`xml` is not an export format"), "{error}");
    }
}
