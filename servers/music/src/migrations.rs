//! The versioned schema: migration `n` (from 1) brings a database from
//! `PRAGMA user_version` `n - 1` to `n`. The store runs the missing ones
//! with the version bump inside the one `BEGIN IMMEDIATE` transaction that
//! opens the library, so that two processes opening a new database at once
//! migrate it once, and a crash leaves it at the version it had. Migrations
//! are never edited once released; a change is a new one at the end.

/// Every migration, in order; the schema version is its length.
pub const MIGRATIONS: &[&str] = &[SCHEMA, SEED_RULES];

/// The version a database has once every migration ran.
pub fn latest() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

/// 1: songs, playlists and their order, the playlist rules, and the key
/// that seals `requestState` (kept here so that any server process on the
/// database, or the same one after a restart, can open what another sealed).
const SCHEMA: &str = "
CREATE TABLE songs (
    id          INTEGER PRIMARY KEY,
    workspace   TEXT NOT NULL,
    title       TEXT NOT NULL,
    artist      TEXT NOT NULL,
    album       TEXT,
    genre       TEXT,
    year        INTEGER,
    duration_s  INTEGER,
    tags        TEXT NOT NULL DEFAULT '[]',
    title_key   TEXT NOT NULL,
    artist_key  TEXT NOT NULL,
    added_at    TEXT NOT NULL
);
CREATE INDEX songs_by_identity ON songs (workspace, artist_key, title_key);

CREATE TABLE playlists (
    id          INTEGER PRIMARY KEY,
    workspace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (workspace, name_key)
);

CREATE TABLE playlist_songs (
    playlist_id INTEGER NOT NULL REFERENCES playlists (id) ON DELETE CASCADE,
    song_id     INTEGER NOT NULL REFERENCES songs (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    PRIMARY KEY (playlist_id, song_id)
);
CREATE INDEX playlist_songs_by_song ON playlist_songs (song_id);

CREATE TABLE playlist_rules (
    id               INTEGER PRIMARY KEY,
    position         INTEGER NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('genre', 'decade', 'tag', 'artist')),
    match_key        TEXT,
    playlist         TEXT NOT NULL,
    min_artist_songs INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE request_state_key (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL
);
";

/// 2: the rules every library starts with: a playlist per genre and per
/// decade, mood playlists for the tags that name a mood, and `Best of
/// <Artist>` once an artist has three songs.
const SEED_RULES: &str = "
INSERT INTO playlist_rules (position, kind, match_key, playlist, min_artist_songs) VALUES
    (10, 'genre',  NULL,            '{value}',         1),
    (20, 'decade', NULL,            '{value}',         1),
    (30, 'tag',    'chill',         'Chill',           1),
    (30, 'tag',    'relax',         'Chill',           1),
    (30, 'tag',    'relaxing',      'Chill',           1),
    (30, 'tag',    'calm',          'Chill',           1),
    (30, 'tag',    'happy',         'Happy',           1),
    (30, 'tag',    'upbeat',        'Happy',           1),
    (30, 'tag',    'feelgood',      'Happy',           1),
    (30, 'tag',    'sad',           'Melancholy',      1),
    (30, 'tag',    'melancholic',   'Melancholy',      1),
    (30, 'tag',    'melancholy',    'Melancholy',      1),
    (30, 'tag',    'energetic',     'Energy',          1),
    (30, 'tag',    'workout',       'Energy',          1),
    (30, 'tag',    'gym',           'Energy',          1),
    (30, 'tag',    'focus',         'Focus',           1),
    (30, 'tag',    'study',         'Focus',           1),
    (30, 'tag',    'party',         'Party',           1),
    (30, 'tag',    'dance',         'Party',           1),
    (30, 'tag',    'romantic',      'Romance',         1),
    (30, 'tag',    'love',          'Romance',         1),
    (30, 'tag',    'sleep',         'Sleep',           1),
    (40, 'artist', NULL,            'Best of {value}', 3);
";
