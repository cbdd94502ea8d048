//! The library on SQLite: [`Library`] opens (and creates) the database,
//! runs the migrations of [`crate::migrations`], and does every read and
//! write the tools need. It knows nothing of MCP.
//!
//! The database is in WAL mode with `synchronous=FULL`, so a committed
//! transaction survives a crash of the process or of the machine. Every
//! write is one `BEGIN IMMEDIATE` transaction that takes the write lock
//! before it reads what it decides on, so two processes on one file never
//! decide on stale reads; a busy database is waited for (`busy_timeout`)
//! rather than failed. `add_song` plans and writes in the same transaction:
//! when the plan needs a confirmation it rolls back and says what to ask,
//! so nothing is written before the answer.
//!
//! SQLite calls block, so each runs on tokio's blocking pool; calls of one
//! process share one connection, one at a time.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::StoreError;
use crate::migrations::{self, MIGRATIONS};
use crate::rules::{self, Rule, RuleKind};
use crate::song::{self, NewSong};

/// How long a call waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The length of the key that seals `requestState`.
const STATE_KEY_LENGTH: usize = 32;

/// A song as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StoredSong {
    /// The song's number in the database.
    pub id: i64,
    pub title: String,
    pub artist: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub album: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub genre: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<i32>,
    /// Length in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<u32>,
    pub tags: Vec<String>,
    /// When it was added (RFC 3339, UTC).
    pub added_at: String,
}

/// A playlist without its songs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PlaylistSummary {
    pub name: String,
    /// How many songs it holds.
    pub songs: u64,
    /// The sum of the known song lengths, in seconds.
    pub duration_s: u64,
}

/// A playlist with its songs, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Playlist {
    pub name: String,
    pub songs: Vec<StoredSong>,
}

/// How much a workspace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Counts {
    pub songs: u64,
    pub playlists: u64,
}

/// What a caller already decided about a song, by argument or by answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// Add it even though a song with the same title and artist exists.
    pub confirm_duplicate: bool,
    /// The playlist to put it in (created if missing); checked with
    /// [`song::playlist_name`].
    pub playlist: Option<String>,
}

/// The outcome of [`Library::add_song`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddOutcome {
    Added(Added),
    /// Nothing written: the caller must answer first.
    NeedsConfirmation(Questions),
}

/// A song stored, in `playlist` if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub song: StoredSong,
    pub playlist: Option<String>,
    /// The playlists it could go in ([`Questions::candidates`]).
    pub candidates: Vec<String>,
    /// The song it repeats, when the caller confirmed adding it anyway.
    pub duplicate_of: Option<StoredSong>,
}

/// What must be confirmed before a song is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Questions {
    /// The song it seems to repeat, when that must be confirmed.
    pub duplicate_of: Option<StoredSong>,
    /// The playlists it could go in: of those the rules propose, the ones
    /// that already exist, or every one when none exists yet. A choice is
    /// needed when [`Questions::choose`].
    pub candidates: Vec<String>,
    /// More than one candidate, and no playlist given.
    pub choose: bool,
}

/// The music library: one SQLite file, shared by every clone.
#[derive(Debug, Clone)]
pub struct Library {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    connection: Mutex<Connection>,
    state_key: Vec<u8>,
}

impl Library {
    /// Opens the library at `path`, creating the file and its directory if
    /// missing, and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
        }
        let opened = |source: rusqlite::Error| {
            if source.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
                return StoreError::NotADatabase {
                    path: path.to_owned(),
                };
            }
            StoreError::Open {
                path: path.to_owned(),
                source,
            }
        };
        let mut connection = Connection::open(path).map_err(opened)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(opened)?;
        let mode: String = connection
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(opened)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NotWal {
                path: path.to_owned(),
                mode,
            });
        }
        connection
            .pragma_update(None, "synchronous", "FULL")
            .map_err(opened)?;
        connection
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(opened)?;
        let state_key = prepare(&mut connection, path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                connection: Mutex::new(connection),
                state_key,
            }),
        })
    }

    /// The key that seals `requestState`, the same for every process on
    /// this database.
    pub fn state_key(&self) -> &[u8] {
        &self.shared.state_key
    }

    /// Runs `work` on the connection, on the blocking pool.
    async fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            let mut connection = shared
                .connection
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            work(&mut connection)
        })
        .await
        .map_err(|_| StoreError::Worker)?
    }

    /// Stores `song` in `workspace` as `decision` says, or, when something
    /// must be confirmed first, writes nothing and says what.
    pub async fn add_song(
        &self,
        workspace: String,
        song: NewSong,
        decision: Decision,
    ) -> Result<AddOutcome, StoreError> {
        self.run(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let outcome = add_song(&tx, &workspace, &song, &decision)?;
            if matches!(outcome, AddOutcome::Added(_)) {
                tx.commit()?;
            }
            Ok(outcome)
        })
        .await
    }

    /// Every playlist of `workspace`, by name.
    pub async fn playlists(&self, workspace: String) -> Result<Vec<PlaylistSummary>, StoreError> {
        self.run(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT p.name, COUNT(ps.song_id), COALESCE(SUM(s.duration_s), 0)
                 FROM playlists p
                 LEFT JOIN playlist_songs ps ON ps.playlist_id = p.id
                 LEFT JOIN songs s ON s.id = ps.song_id
                 WHERE p.workspace = ?1
                 GROUP BY p.id
                 ORDER BY p.name_key, p.id",
            )?;
            let rows = statement.query_map(params![workspace], |row| {
                Ok(PlaylistSummary {
                    name: row.get(0)?,
                    songs: count(row, 1)?,
                    duration_s: count(row, 2)?,
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
        .await
    }

    /// The playlist of `workspace` called `name` (compared by
    /// [`song::key`]), with its songs in order; `None` if there is none.
    pub async fn playlist(
        &self,
        workspace: String,
        name: String,
    ) -> Result<Option<Playlist>, StoreError> {
        self.run(move |connection| {
            let Some((id, name)) = find_playlist(connection, &workspace, &name)? else {
                return Ok(None);
            };
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {SONG_COLUMNS} FROM songs s
                 JOIN playlist_songs ps ON ps.song_id = s.id
                 WHERE ps.playlist_id = ?1
                 ORDER BY ps.position, s.id"
            ))?;
            let songs = statement
                .query_map(params![id], song_row)?
                .collect::<Result<_, _>>()?;
            Ok(Some(Playlist { name, songs }))
        })
        .await
    }

    /// The songs of `workspace`, by artist and title, at most `limit`.
    pub async fn songs(
        &self,
        workspace: String,
        limit: u32,
    ) -> Result<Vec<StoredSong>, StoreError> {
        self.run(move |connection| {
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {SONG_COLUMNS} FROM songs s WHERE s.workspace = ?1
                 ORDER BY s.artist_key, s.title_key, s.id LIMIT ?2"
            ))?;
            let songs = statement
                .query_map(params![workspace, limit], song_row)?
                .collect::<Result<_, _>>()?;
            Ok(songs)
        })
        .await
    }

    /// How many songs and playlists `workspace` holds.
    pub async fn counts(&self, workspace: String) -> Result<Counts, StoreError> {
        self.run(move |connection| Ok(counts(connection, &workspace)?))
            .await
    }

    /// Deletes every song and playlist of `workspace`, in one transaction;
    /// returns what was deleted.
    pub async fn clear(&self, workspace: String) -> Result<Counts, StoreError> {
        self.run(move |connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let deleted = counts(&tx, &workspace)?;
            tx.execute(
                "DELETE FROM playlists WHERE workspace = ?1",
                params![workspace],
            )?;
            tx.execute("DELETE FROM songs WHERE workspace = ?1", params![workspace])?;
            tx.commit()?;
            Ok(deleted)
        })
        .await
    }
}

/// Brings the schema up to date and reads the `requestState` key, making
/// it the first time, in one `BEGIN IMMEDIATE` transaction: start-up takes
/// the write lock once, and two processes opening a new database at once
/// migrate it once.
fn prepare(connection: &mut Connection, path: &Path) -> Result<Vec<u8>, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    migrate(&tx, path)?;
    let key = state_key(&tx)?;
    tx.commit()?;
    Ok(key)
}

/// Applies every migration the database lacks and bumps its version.
fn migrate(tx: &Transaction<'_>, path: &Path) -> Result<(), StoreError> {
    let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let latest = migrations::latest();
    if version > latest {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found: version,
            known: latest,
        });
    }
    let pending = usize::try_from(version)
        .ok()
        .and_then(|done| MIGRATIONS.get(done..))
        .unwrap_or_default();
    if pending.is_empty() {
        return Ok(());
    }
    for migration in pending {
        tx.execute_batch(migration)?;
    }
    tx.pragma_update(None, "user_version", latest)?;
    tracing::info!(from = version, to = latest, "music library schema migrated");
    Ok(())
}

/// The `requestState` key, made (from the system's randomness) the first
/// time the database is opened.
fn state_key(tx: &Transaction<'_>) -> Result<Vec<u8>, StoreError> {
    let existing: Option<Vec<u8>> = tx
        .query_row(
            "SELECT key FROM request_state_key WHERE id = 1",
            [],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(key) = existing.filter(|key| key.len() >= STATE_KEY_LENGTH) {
        return Ok(key);
    }
    let mut key = vec![0u8; STATE_KEY_LENGTH];
    getrandom::fill(&mut key).map_err(StoreError::Randomness)?;
    tx.execute(
        "INSERT OR REPLACE INTO request_state_key (id, key) VALUES (1, ?1)",
        params![key],
    )?;
    Ok(key)
}

/// The columns [`song_row`] reads, from a table aliased `s`.
const SONG_COLUMNS: &str =
    "s.id, s.title, s.artist, s.album, s.genre, s.year, s.duration_s, s.tags, s.added_at";

/// One song from the columns of [`SONG_COLUMNS`]; a `tags` column that is
/// not a JSON list of strings is a conversion error.
fn song_row(row: &Row<'_>) -> rusqlite::Result<StoredSong> {
    let tags: String = row.get(7)?;
    let tags = serde_json::from_str(&tags).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(7, rusqlite::types::Type::Text, Box::new(error))
    })?;
    Ok(StoredSong {
        id: row.get(0)?,
        title: row.get(1)?,
        artist: row.get(2)?,
        album: row.get(3)?,
        genre: row.get(4)?,
        year: row.get(5)?,
        duration_s: row.get(6)?,
        tags,
        added_at: row.get(8)?,
    })
}

/// A column holding a count or a sum, never negative.
fn count(row: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    let value: i64 = row.get(index)?;
    u64::try_from(value).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Integer,
            Box::new(error),
        )
    })
}

fn counts(connection: &Connection, workspace: &str) -> Result<Counts, rusqlite::Error> {
    connection.query_row(
        "SELECT (SELECT COUNT(*) FROM songs WHERE workspace = ?1),
                (SELECT COUNT(*) FROM playlists WHERE workspace = ?1)",
        params![workspace],
        |row| {
            Ok(Counts {
                songs: count(row, 0)?,
                playlists: count(row, 1)?,
            })
        },
    )
}

/// Every rule, in order.
fn load_rules(tx: &Transaction<'_>) -> Result<Vec<Rule>, StoreError> {
    let mut statement = tx.prepare_cached(
        "SELECT kind, match_key, playlist, min_artist_songs FROM playlist_rules
         ORDER BY position, id",
    )?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, Option<String>>(1)?,
            row.get::<_, String>(2)?,
            count(row, 3)?,
        ))
    })?;
    let mut rules = Vec::new();
    for row in rows {
        let (kind, match_key, playlist, min_artist_songs) = row?;
        match RuleKind::parse(&kind) {
            Some(kind) => rules.push(Rule {
                kind,
                match_key,
                playlist,
                min_artist_songs,
            }),
            None => tracing::warn!(kind, "a playlist rule of an unknown kind is ignored"),
        }
    }
    Ok(rules)
}

/// The id and stored name of the playlist of `workspace` called `name`
/// (compared by [`song::key`]), if there is one.
fn find_playlist(
    connection: &Connection,
    workspace: &str,
    name: &str,
) -> Result<Option<(i64, String)>, rusqlite::Error> {
    connection
        .prepare_cached("SELECT id, name FROM playlists WHERE workspace = ?1 AND name_key = ?2")?
        .query_row(params![workspace, song::key(name)], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()
}

fn add_song(
    tx: &Transaction<'_>,
    workspace: &str,
    song: &NewSong,
    decision: &Decision,
) -> Result<AddOutcome, StoreError> {
    let duplicate_of = tx
        .query_row(
            &format!(
                "SELECT {SONG_COLUMNS} FROM songs s
                 WHERE s.workspace = ?1 AND s.artist_key = ?2 AND s.title_key = ?3
                 ORDER BY s.id LIMIT 1"
            ),
            params![workspace, song.artist_key(), song.title_key()],
            song_row,
        )
        .optional()?;
    let artist_songs = tx.query_row(
        "SELECT COUNT(*) FROM songs WHERE workspace = ?1 AND artist_key = ?2",
        params![workspace, song.artist_key()],
        |row| count(row, 0),
    )?;
    let rules = load_rules(tx)?;
    let mut existing = Vec::new();
    let mut new = Vec::new();
    for name in rules::propose(&rules, song, artist_songs) {
        match find_playlist(tx, workspace, &name)? {
            Some((_, stored)) => existing.push(stored),
            None => new.push(name),
        }
    }
    let candidates = if existing.is_empty() { new } else { existing };
    let ask_duplicate = duplicate_of.is_some() && !decision.confirm_duplicate;
    let choose = decision.playlist.is_none() && candidates.len() > 1;
    if ask_duplicate || choose {
        return Ok(AddOutcome::NeedsConfirmation(Questions {
            duplicate_of: duplicate_of.filter(|_| ask_duplicate),
            candidates,
            choose,
        }));
    }
    let now = jiff::Timestamp::now().to_string();
    tx.execute(
        "INSERT INTO songs (workspace, title, artist, album, genre, year, duration_s, tags,
                            title_key, artist_key, added_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            workspace,
            song.title,
            song.artist,
            song.album,
            song.genre,
            song.year,
            song.duration_s,
            serde_json::to_string(&song.tags)?,
            song.title_key(),
            song.artist_key(),
            now,
        ],
    )?;
    let id = tx.last_insert_rowid();
    let chosen = decision
        .playlist
        .clone()
        .or_else(|| (candidates.len() == 1).then(|| candidates[0].clone()));
    let playlist = match chosen {
        Some(name) => Some(put_in_playlist(tx, workspace, &name, id, &now)?),
        None => None,
    };
    let stored = StoredSong {
        id,
        title: song.title.clone(),
        artist: song.artist.clone(),
        album: song.album.clone(),
        genre: song.genre.clone(),
        year: song.year,
        duration_s: song.duration_s,
        tags: song.tags.clone(),
        added_at: now,
    };
    Ok(AddOutcome::Added(Added {
        song: stored,
        playlist,
        candidates,
        duplicate_of,
    }))
}

/// Appends song `id` to the playlist `name` of `workspace`, creating the
/// playlist if missing; returns the playlist's name as stored.
fn put_in_playlist(
    tx: &Transaction<'_>,
    workspace: &str,
    name: &str,
    id: i64,
    now: &str,
) -> Result<String, rusqlite::Error> {
    tx.execute(
        "INSERT INTO playlists (workspace, name, name_key, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (workspace, name_key) DO NOTHING",
        params![workspace, name, song::key(name), now],
    )?;
    let (playlist_id, stored_name) =
        find_playlist(tx, workspace, name)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    tx.execute(
        "INSERT INTO playlist_songs (playlist_id, song_id, position)
         VALUES (?1, ?2, (SELECT COALESCE(MAX(position), 0) + 1 FROM playlist_songs
                          WHERE playlist_id = ?1))",
        params![playlist_id, id],
    )?;
    Ok(stored_name)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_version_1_database_is_migrated_and_keeps_its_songs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite3");
        {
            let connection = Connection::open(&path).unwrap();
            connection.execute_batch(MIGRATIONS[0]).unwrap();
            connection.pragma_update(None, "user_version", 1).unwrap();
            connection
                .execute(
                    "INSERT INTO songs (workspace, title, artist, title_key, artist_key, added_at)
                     VALUES ('default', 'Old', 'Band', 'old', 'band', '2025-01-01T00:00:00Z')",
                    [],
                )
                .unwrap();
        }
        let library = Library::open(&path).unwrap();
        let connection = library.shared.connection.lock().unwrap();
        let version: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, migrations::latest());
        let rules: i64 = connection
            .query_row("SELECT COUNT(*) FROM playlist_rules", [], |row| row.get(0))
            .unwrap();
        assert!(rules > 0, "migration 2 seeded the rules");
        let title: String = connection
            .query_row("SELECT title FROM songs", [], |row| row.get(0))
            .unwrap();
        assert_eq!(title, "Old");
        assert_eq!(library.state_key().len(), STATE_KEY_LENGTH);
    }

    #[test]
    fn opening_a_new_or_current_database_is_one_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("once.sqlite3");
        for database in ["new", "current"] {
            let mut connection = Connection::open(&path).unwrap();
            let transactions = Arc::new(AtomicUsize::new(0));
            let committed = Arc::clone(&transactions);
            connection
                .commit_hook(Some(move || {
                    committed.fetch_add(1, Ordering::SeqCst);
                    false
                }))
                .unwrap();
            let rolled_back = Arc::clone(&transactions);
            connection
                .rollback_hook(Some(move || {
                    rolled_back.fetch_add(1, Ordering::SeqCst);
                }))
                .unwrap();
            prepare(&mut connection, &path).unwrap();
            assert_eq!(
                transactions.load(Ordering::SeqCst),
                1,
                "the {database} database: migrations and key under one write lock"
            );
        }
        let connection = Connection::open(&path).unwrap();
        let version: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, migrations::latest());
    }

    #[test]
    fn the_request_state_key_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.sqlite3");
        let first = Library::open(&path).unwrap().state_key().to_vec();
        let second = Library::open(&path).unwrap().state_key().to_vec();
        assert_eq!(first, second);
        let other = Library::open(&dir.path().join("other.sqlite3")).unwrap();
        assert_ne!(first, other.state_key(), "each database has its own key");
    }
}
