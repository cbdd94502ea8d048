//! The music library's inputs and exports under a fuzzer
//! (`fuzz/fuzz_targets/music.rs` calls [`songs_and_exports`]; the
//! committed corpus is replayed by this module's test). A song is checked
//! as `add_song` checks it, without panicking; a playlist of the songs it
//! takes is exported in every format, and each export reads back: the
//! JSON as the same playlist, the CSV (read by the csv crate) as the same
//! fields and tags, and the M3U as one entry a song, each on its lines
//! whether a reader splits lines at `\n` alone or at every Unicode line
//! break (as Python's `splitlines` does).

use serde_json::{Value, json};

use crate::export::{CSV_HEADER, Format, export};
use crate::song::{SongInput, playlist_name};
use crate::store::{Playlist, StoredSong};

/// One fuzz input: the playlist's name, then songs, separated by `0x1e`;
/// a song's fields (title, artist, album, genre, tags) by `0x1f`, its tags
/// by `0x1d`; year and length come from the title's bytes.
pub fn songs_and_exports(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut records = text.split('\u{1e}');
    let Ok(name) = playlist_name(records.next().unwrap_or_default()) else {
        return;
    };
    let mut songs = Vec::new();
    for (id, record) in (1..).zip(records) {
        let mut fields = record.split('\u{1f}');
        let mut field = || fields.next().map(str::to_owned);
        let title = field().unwrap_or_default();
        let sum: i64 = title.bytes().map(i64::from).sum();
        let input = SongInput {
            artist: field().unwrap_or_default(),
            album: field(),
            genre: field(),
            tags: field()
                .map(|tags| tags.split('\u{1d}').map(str::to_owned).collect())
                .unwrap_or_default(),
            year: (sum % 3 != 0).then_some(900 + sum % 1200),
            duration_s: (sum % 5 != 0).then_some(sum % 90_000 - 10),
            title,
        };
        let Ok(song) = input.validate(2026) else {
            continue;
        };
        songs.push(StoredSong {
            id,
            title: song.title,
            artist: song.artist,
            album: song.album,
            genre: song.genre,
            year: song.year,
            duration_s: song.duration_s,
            tags: song.tags,
            added_at: "2026-01-01T00:00:00Z".to_owned(),
        });
    }
    let playlist = Playlist { name, songs };
    json_reads_back(&playlist);
    csv_reads_back(&playlist);
    m3u_reads_back(&playlist);
}

fn json_reads_back(playlist: &Playlist) {
    let Ok(written) = export(playlist, Format::Json) else {
        panic!("the JSON export fails");
    };
    let read: Value = serde_json::from_str(&written)
        .unwrap_or_else(|error| panic!("the JSON export is not JSON: {error}\n{written}"));
    assert_eq!(
        read,
        json!({"name": playlist.name, "songs": playlist.songs}),
        "{written}"
    );
}

fn csv_reads_back(playlist: &Playlist) {
    let written = export(playlist, Format::Csv)
        .unwrap_or_else(|error| panic!("the CSV export fails: {error}"));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(written.as_bytes());
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|row| {
            row.unwrap_or_else(|error| panic!("the CSV export cannot be read: {error}\n{written}"))
                .iter()
                .map(str::to_owned)
                .collect()
        })
        .collect();
    let text = |value: Option<String>| value.unwrap_or_default();
    let mut expected = vec![CSV_HEADER.map(str::to_owned).to_vec()];
    for (position, song) in (1..).zip(&playlist.songs) {
        expected.push(vec![
            u32::to_string(&position),
            song.id.to_string(),
            song.title.clone(),
            song.artist.clone(),
            text(song.album.clone()),
            text(song.genre.clone()),
            text(song.year.map(|year| year.to_string())),
            text(song.duration_s.map(|seconds| seconds.to_string())),
            serde_json::to_string(&song.tags).unwrap_or_default(),
        ]);
    }
    assert_eq!(rows, expected, "{written:?}");
    for (row, song) in rows.iter().skip(1).zip(&playlist.songs) {
        let tags: Vec<String> = serde_json::from_str(&row[8])
            .unwrap_or_else(|error| panic!("the tags {:?} are not JSON: {error}", row[8]));
        assert_eq!(tags, song.tags);
    }
}

/// The line breaks of Unicode and of Python's `str.splitlines`.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

fn m3u_reads_back(playlist: &Playlist) {
    let Ok(written) = export(playlist, Format::M3u) else {
        panic!("the M3U export fails");
    };
    let lines: Vec<&str> = written.lines().collect();
    let strict: Vec<&str> = written
        .split(is_line_break)
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(
        lines, strict,
        "the M3U export has other line breaks than its own: {written:?}"
    );
    let mut expected = 2;
    for song in &playlist.songs {
        expected += 2 + usize::from(song.album.is_some()) + usize::from(song.genre.is_some());
    }
    assert_eq!(lines.len(), expected, "{written:?}");
    assert_eq!(lines.first(), Some(&"#EXTM3U"));
    assert_eq!(
        lines
            .iter()
            .filter(|line| line.starts_with("#EXTINF:"))
            .count(),
        playlist.songs.len(),
        "{written:?}"
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_playlists_pass() {
        nexo_testkit::replay("music", super::songs_and_exports);
    }
}
