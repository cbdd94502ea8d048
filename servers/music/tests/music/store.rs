//! The library on real SQLite files: what is written survives a reopen,
//! workspaces stay apart, proposals follow the seeded rules, concurrent
//! writers on two connections all succeed, and files that cannot be used
//! are refused with errors that say why.

use std::collections::BTreeSet;

use nexo_music::StoreError;
use nexo_music::song::SongInput;
use nexo_music::store::{AddOutcome, Decision, Library, Questions};

use crate::TempDb;

fn song(
    title: &str,
    artist: &str,
    genre: Option<&str>,
    year: Option<i64>,
) -> nexo_music::song::NewSong {
    SongInput {
        title: title.to_owned(),
        artist: artist.to_owned(),
        genre: genre.map(str::to_owned),
        year,
        ..SongInput::default()
    }
    .validate(2026)
    .unwrap()
}

/// Adds `song` to `workspace`, expecting it stored; returns its playlist.
async fn added(
    library: &Library,
    workspace: &str,
    song: nexo_music::song::NewSong,
    decision: Decision,
) -> Option<String> {
    match library
        .add_song(workspace.to_owned(), song, decision)
        .await
        .unwrap()
    {
        AddOutcome::Added(added) => added.playlist,
        AddOutcome::NeedsConfirmation(questions) => panic!("asked {questions:?}"),
    }
}

async fn asked(
    library: &Library,
    workspace: &str,
    song: nexo_music::song::NewSong,
    decision: Decision,
) -> Questions {
    match library
        .add_song(workspace.to_owned(), song, decision)
        .await
        .unwrap()
    {
        AddOutcome::NeedsConfirmation(questions) => questions,
        AddOutcome::Added(added) => panic!("stored {added:?}"),
    }
}

#[tokio::test]
async fn songs_and_playlists_survive_a_reopen() {
    let db = TempDb::create();
    {
        let library = Library::open(&db.path()).unwrap();
        let playlist = added(
            &library,
            "default",
            song("Yesterday", "The Beatles", Some("pop"), None),
            Decision::default(),
        )
        .await;
        assert_eq!(playlist.as_deref(), Some("Pop"));
    }
    let reopened = Library::open(&db.path()).unwrap();
    let playlist = reopened
        .playlist("default".into(), "pop".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(playlist.name, "Pop", "found by key, shown as stored");
    let titles: Vec<&str> = playlist.songs.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["Yesterday"]);
    assert!(
        db.path().with_extension("sqlite3-wal").exists(),
        "WAL mode keeps a -wal file"
    );
}

#[tokio::test]
async fn a_choice_or_a_duplicate_writes_nothing_until_answered() {
    let db = TempDb::create();
    let library = Library::open(&db.path()).unwrap();
    let rhapsody = || song("Bohemian Rhapsody", "Queen", Some("rock"), Some(1975));

    let questions = asked(&library, "default", rhapsody(), Decision::default()).await;
    assert_eq!(questions.candidates, ["Rock", "1970s"]);
    assert!(questions.choose && questions.duplicate_of.is_none());
    let counts = library.counts("default".into()).await.unwrap();
    assert_eq!((counts.songs, counts.playlists), (0, 0), "nothing written");

    let choice = Decision {
        playlist: Some("1970s".into()),
        ..Decision::default()
    };
    assert_eq!(
        added(&library, "default", rhapsody(), choice.clone())
            .await
            .as_deref(),
        Some("1970s")
    );

    let again = song("bohemian  rhapsody!", "QUEEN", Some("rock"), Some(1975));
    let questions = asked(&library, "default", again.clone(), choice.clone()).await;
    let existing = questions.duplicate_of.expect("a duplicate");
    assert_eq!(existing.title, "Bohemian Rhapsody");
    assert!(!questions.choose, "the playlist was given");

    let confirmed = Decision {
        confirm_duplicate: true,
        ..choice
    };
    added(&library, "default", again, confirmed).await;
    let playlist = library
        .playlist("default".into(), "1970s".into())
        .await
        .unwrap()
        .unwrap();
    let titles: Vec<&str> = playlist.songs.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        ["Bohemian Rhapsody", "bohemian  rhapsody!"],
        "in the order added"
    );
}

/// A library where Bohemian Rhapsody (rock, 1975) is in `Rock` and, when
/// `with_decade`, Dancing Queen (pop, 1976) is in `1970s`.
async fn library_with_rock(db: &TempDb, with_decade: bool) -> Library {
    let library = Library::open(&db.path()).unwrap();
    let into = |playlist: &str| Decision {
        playlist: Some(playlist.to_owned()),
        ..Decision::default()
    };
    let rhapsody = song("Bohemian Rhapsody", "Queen", Some("rock"), Some(1975));
    added(&library, "default", rhapsody, into("Rock")).await;
    if with_decade {
        let dancing = song("Dancing Queen", "ABBA", Some("pop"), Some(1976));
        added(&library, "default", dancing, into("1970s")).await;
    }
    library
}

#[tokio::test]
async fn a_song_fitting_one_existing_playlist_goes_there_without_a_question() {
    let db = TempDb::create();
    let library = library_with_rock(&db, false).await;
    let hotel = song("Hotel California", "Eagles", Some("rock"), Some(1976));
    assert_eq!(
        added(&library, "default", hotel, Decision::default())
            .await
            .as_deref(),
        Some("Rock"),
        "1970s is proposed too, but only Rock exists"
    );
    let names: Vec<String> = library
        .playlists("default".into())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["Rock"], "no 1970s playlist was made");
}

#[tokio::test]
async fn a_song_fitting_two_existing_playlists_asks_which() {
    let db = TempDb::create();
    let library = library_with_rock(&db, true).await;
    let hotel = song("Hotel California", "Eagles", Some("rock"), Some(1976));
    let questions = asked(&library, "default", hotel, Decision::default()).await;
    assert!(questions.choose && questions.duplicate_of.is_none());
    assert_eq!(questions.candidates, ["Rock", "1970s"]);
    let counts = library.counts("default".into()).await.unwrap();
    assert_eq!((counts.songs, counts.playlists), (2, 2), "nothing written");
}

#[tokio::test]
async fn one_candidate_is_chosen_without_asking_and_artists_earn_a_playlist() {
    let db = TempDb::create();
    let library = Library::open(&db.path()).unwrap();
    let bare = |title: &str| song(title, "Daft Punk", None, None);
    assert_eq!(
        added(&library, "w", bare("One More Time"), Decision::default()).await,
        None,
        "no rule fits"
    );
    assert_eq!(
        added(&library, "w", bare("Aerodynamic"), Decision::default()).await,
        None
    );
    assert_eq!(
        added(&library, "w", bare("Digital Love"), Decision::default())
            .await
            .as_deref(),
        Some("Best of Daft Punk"),
        "the third song by the artist"
    );
    let mut mood = SongInput {
        title: "Weightless".into(),
        artist: "Marconi Union".into(),
        tags: vec!["Relax".into(), "ambient".into()],
        ..SongInput::default()
    }
    .validate(2026)
    .unwrap();
    assert_eq!(
        added(&library, "w", mood.clone(), Decision::default())
            .await
            .as_deref(),
        Some("Chill")
    );
    mood.title = "Flying".into();
    mood.tags = vec!["chill".into()];
    assert_eq!(
        added(&library, "w", mood, Decision::default())
            .await
            .as_deref(),
        Some("Chill")
    );
    let names: Vec<String> = library
        .playlists("w".into())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["Best of Daft Punk", "Chill"]);
}

#[tokio::test]
async fn workspaces_are_separate_libraries_and_clear_empties_only_one() {
    let db = TempDb::create();
    let library = Library::open(&db.path()).unwrap();
    for (workspace, title) in [
        ("casa", "Song A"),
        ("trabajo", "Song A"),
        ("trabajo", "Song B"),
    ] {
        added(
            &library,
            workspace,
            song(title, "Artist", Some("jazz"), None),
            Decision::default(),
        )
        .await;
    }

    let deleted = library.clear("trabajo".into()).await.unwrap();
    assert_eq!((deleted.songs, deleted.playlists), (2, 1));
    let left = library.counts("casa".into()).await.unwrap();
    assert_eq!((left.songs, left.playlists), (1, 1));
    let gone = library.counts("trabajo".into()).await.unwrap();
    assert_eq!((gone.songs, gone.playlists), (0, 0));
    assert!(
        library
            .playlist("trabajo".into(), "Jazz".into())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_connections_writing_at_once_both_succeed() {
    const EACH: usize = 40;
    let db = TempDb::create();
    let first = Library::open(&db.path()).unwrap();
    let second = Library::open(&db.path()).unwrap();
    let mut tasks = Vec::new();
    for (who, library) in [("first", first.clone()), ("second", second.clone())] {
        for n in 0..EACH {
            let library = library.clone();
            tasks.push(tokio::spawn(async move {
                let name = format!("{who} {n}");
                let song = song(&name, &name, Some("rock"), None);
                added(&library, "default", song, Decision::default()).await
            }));
        }
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().as_deref(), Some("Rock"));
    }
    let rock = first
        .playlist("default".into(), "rock".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        rock.songs.len(),
        2 * EACH,
        "every write landed, in one playlist"
    );
    let ids: BTreeSet<i64> = rock.songs.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), 2 * EACH);
    let summaries = second.playlists("default".into()).await.unwrap();
    assert_eq!(summaries.len(), 1, "the playlist was created once");
}

#[test]
fn a_database_from_a_newer_nexo_is_refused() {
    let db = TempDb::create();
    drop(Library::open(&db.path()).unwrap());
    let connection = rusqlite::Connection::open(db.path()).unwrap();
    connection.pragma_update(None, "user_version", 99).unwrap();
    drop(connection);
    let error = Library::open(&db.path()).unwrap_err();
    assert!(
        matches!(error, StoreError::SchemaTooNew { found: 99, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("another `--db`"), "{error}");
}

#[test]
fn paths_that_cannot_hold_a_database_are_refused() {
    let db = TempDb::create();
    let directory = db.path();
    std::fs::create_dir(&directory).unwrap();
    let error = Library::open(&directory).unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(
        error.chain().contains("cannot open the music library"),
        "{}",
        error.chain()
    );

    let file = db.path().with_extension("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let error = Library::open(&file.join("music.sqlite3")).unwrap_err();
    assert!(matches!(error, StoreError::CreateDir { .. }), "{error:?}");

    let garbage = db.path().with_extension("garbage");
    std::fs::write(&garbage, vec![0x5a; 4096]).unwrap();
    assert!(
        Library::open(&garbage).is_err(),
        "a file that is not SQLite"
    );
}

#[test]
fn a_missing_directory_is_created() {
    let db = TempDb::create();
    let nested = db.path().with_extension("d").join("a/b/music.sqlite3");
    Library::open(&nested).unwrap();
    assert!(nested.exists());
    let connection = rusqlite::Connection::open(&nested).unwrap();
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn issue_15_a_file_that_is_not_sqlite_gets_a_hint_that_says_so() {
    let db = TempDb::create();
    let text = db.path().with_extension("txt");
    let content = "these are my notes, not a music library\n".repeat(200);
    std::fs::write(&text, &content).unwrap();
    let error = Library::open(&text).unwrap_err();
    assert!(
        matches!(error, StoreError::NotADatabase { .. }),
        "{error:?}"
    );
    let hint = error.hint();
    assert!(hint.contains("SQLite"), "{hint}");
    assert!(!hint.contains("directory"), "{hint}");
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        content,
        "the file is left as it was"
    );
}
