//! The errors of the crate. [`InputError`]: something a caller gave that
//! cannot be used, reported as a tool error (`isError: true`) with what to
//! do; nothing is written. [`StoreError`]: the database cannot be opened or
//! fails, reported when the server starts or, during a call, as a tool
//! error.

use std::path::PathBuf;

use thiserror::Error;

use crate::song::{MAX_DURATION_S, MAX_TAGS, MAX_WORKSPACE, MIN_YEAR};

/// An argument that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InputError {
    #[error("`{0}` is empty; give a value")]
    Empty(&'static str),
    #[error("`{field}` is {length} characters long; the limit is {max}")]
    TooLong {
        field: &'static str,
        length: usize,
        max: usize,
    },
    #[error("`{field}` contains a control character (U+{code:04X}); remove it")]
    Control { field: &'static str, code: u32 },
    #[error("`year` {year} is out of range; give a year from {MIN_YEAR} to {latest}")]
    Year { year: i64, latest: i64 },
    #[error(
        "`duration_s` {0} is out of range; give the length in seconds, from 1 to {MAX_DURATION_S}"
    )]
    Duration(i64),
    #[error("{0} tags given; the limit is {MAX_TAGS}")]
    TooManyTags(usize),
    #[error(
        "`{0}` is not a workspace name; use at most {MAX_WORKSPACE} letters, digits, `-`, `_` or `.`"
    )]
    Workspace(String),
    #[error(
        "no playlist is called `{name}` in workspace `{workspace}`; `list_playlists` shows the ones there are"
    )]
    UnknownPlaylist { name: String, workspace: String },
    #[error("`{0}` is not an export format; use `m3u`, `json` or `csv`")]
    Format(String),
    #[error("`length` must be a whole number of songs from 1 to {max}, not `{given}`")]
    PromptLength { given: String, max: usize },
}

/// The music library cannot be used.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot create the directory `{}` for the music library", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the music library `{}`", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("`{}` is not a SQLite database", path.display())]
    NotADatabase { path: PathBuf },
    #[error(
        "`{}` is not a music library of this nexo (schema version {found}, known up to {known}); use a newer nexo or another `--db`",
        path.display()
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("`{}` is not in WAL mode (SQLite answered `{mode}`); put it on a local file system", path.display())]
    NotWal { path: PathBuf, mode: String },
    #[error("the music library database failed")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot encode a song's tags")]
    Tags(#[from] serde_json::Error),
    #[error("no system randomness to make the requestState key")]
    Randomness(#[source] getrandom::Error),
    #[error("the requestState key kept in the music library cannot be used")]
    StateKey,
    #[error("the database worker stopped before it answered")]
    Worker,
}

impl StoreError {
    /// What to do about it, for the command line.
    pub fn hint(&self) -> String {
        match self {
            StoreError::CreateDir { .. } | StoreError::Open { .. } => {
                "check that the file's directory can be written, or give another file with `--db FILE`"
                    .to_owned()
            }
            StoreError::NotADatabase { .. } => {
                "`--db` names a file that is not a SQLite database, which is left untouched: \
                 give a new file or an existing music library with `--db FILE`"
                    .to_owned()
            }
            StoreError::SchemaTooNew { .. } => {
                "run a newer nexo on this library, or give another file with `--db FILE`".to_owned()
            }
            StoreError::NotWal { .. } => {
                "keep the library on a local file system, or give another file with `--db FILE`"
                    .to_owned()
            }
            StoreError::Sqlite(_) | StoreError::Tags(_) | StoreError::StateKey => {
                "the library may be damaged: give another file with `--db FILE`, or restore a copy"
                    .to_owned()
            }
            StoreError::Randomness(_) => {
                "the system has no randomness source available; try again once it has".to_owned()
            }
            StoreError::Worker => "try again; if it persists, report it".to_owned(),
        }
    }

    /// The message with every cause after it, for a tool error's text.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }
}

/// Why a playlist cannot be read.
#[derive(Debug, Error)]
pub enum LookupError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
