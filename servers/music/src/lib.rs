//! The music library server of seed 001's local server, as a library:
//! [`Music`] is an rmcp server handler with five tools, `add_song`,
//! `list_playlists`, `get_playlist`, `export_playlist` and
//! `clear_library`; the resources `music://playlists` and
//! `music://playlist/{name}`; and the prompt `curate_playlist`. Songs live
//! in a SQLite file ([`MusicOptions::db`]), in separate workspaces, and are
//! filed in playlists proposed by rules kept in the database.
//!
//! It knows nothing of transports or of the command line: whoever hosts it
//! builds it from [`MusicOptions`] and hands it a connection; [`tools`]
//! gives the tool list for a health document. Writes that need a person's
//! confirmation ask through elicitation, an `input_required` result, or a
//! `needs_confirmation` answer, whichever the client supports
//! ([`confirm`]). The README beside this crate documents the tools, the
//! confirmation flows, the storage and the errors.

pub mod confirm;
mod error;
pub mod export;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod migrations;
mod prompts;
mod resources;
pub mod rules;
mod server;
pub mod song;
pub mod store;
mod tools;

pub use error::{InputError, LookupError, StoreError};
pub use server::{DEFAULT_DB_FILE, Music, MusicOptions, tools};
