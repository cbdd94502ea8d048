//! Conversations saved, to be resumed: one JSON file each in a directory
//! the caller gives (nexo's state directory), replaced whole after every
//! turn (readable by the user alone, like every state file of the host).
//! A conversation is named by when it started and the process that
//! started it (`20261124-030530-4242`); the newest of a working directory
//! is the one resumed when no name is given.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{ConversationError, StoreError};
use crate::provider::{Content, Message, Role};
use crate::store;
use crate::tasks::KeptTask;

const KIND: &str = "conversation";
const VERSION: u32 = 1;
/// How much of the first message names a conversation in a list.
const TITLE_CHARS: usize = 60;

/// A conversation, and what it is listed by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    version: u32,
    pub id: String,
    /// When it started and was last saved (RFC 3339).
    pub started: String,
    pub updated: String,
    /// The working directory it was held in.
    pub directory: PathBuf,
    pub model: String,
    pub messages: Vec<Message>,
    /// The tasks still running on their servers when it was saved, taken
    /// up when it is resumed ([`crate::tasks`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<KeptTask>,
}

impl Conversation {
    /// A new conversation in `directory` with `model`.
    pub fn new(directory: PathBuf, model: &str) -> Self {
        let now = jiff::Zoned::now();
        Self {
            version: VERSION,
            id: format!("{}-{}", now.strftime("%Y%m%d-%H%M%S"), std::process::id()),
            started: now.timestamp().to_string(),
            updated: now.timestamp().to_string(),
            directory,
            model: model.to_owned(),
            messages: Vec::new(),
            tasks: Vec::new(),
        }
    }

    /// The person's first message, shortened: what the list shows.
    pub fn title(&self) -> String {
        let first = self
            .messages
            .iter()
            .find(|message| message.role == Role::User)
            .and_then(|message| {
                message.content.iter().find_map(|content| match content {
                    Content::Text(text) => Some(text.as_str()),
                    _ => None,
                })
            })
            .unwrap_or("(no message yet)");
        let line = first.lines().next().unwrap_or_default();
        match line.char_indices().nth(TITLE_CHARS) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_owned(),
        }
    }
}

/// The saved conversations, in `dir`.
#[derive(Debug, Clone)]
pub struct Conversations {
    dir: PathBuf,
}

impl Conversations {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Saves `conversation` whole, stamped now.
    pub fn save(&self, conversation: &mut Conversation) -> Result<(), StoreError> {
        conversation.updated = jiff::Timestamp::now().to_string();
        store::write(KIND, &self.path(&conversation.id), conversation)
    }

    /// The conversation `id`.
    pub fn load(&self, id: &str) -> Result<Conversation, ConversationError> {
        // Ids are ours: digits and `-`; anything else names no file.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            return Err(ConversationError::Unknown { id: id.to_owned() });
        }
        match store::read::<Conversation>(KIND, &self.path(id))? {
            Some(conversation) if conversation.version == VERSION => Ok(conversation),
            Some(conversation) => {
                Err(StoreError::version(KIND, &self.path(id), conversation.version, VERSION).into())
            }
            None => Err(ConversationError::Unknown { id: id.to_owned() }),
        }
    }

    /// Every saved conversation, the newest first; a file that cannot be
    /// read is left out.
    pub fn list(&self) -> Vec<Conversation> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut conversations: Vec<Conversation> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                self.load(name.strip_suffix(".json")?).ok()
            })
            .collect();
        conversations.sort_by(|a, b| b.updated.cmp(&a.updated));
        conversations
    }

    /// The conversation to resume without an id: the newest held in
    /// `directory`, else the newest of all.
    pub fn latest(&self, directory: &Path) -> Result<Conversation, ConversationError> {
        let mut all = self.list();
        match all.iter().position(|found| found.directory == directory) {
            Some(here) => Ok(all.swap_remove(here)),
            None if !all.is_empty() => Ok(all.swap_remove(0)),
            None => Err(ConversationError::None),
        }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_are_saved_listed_and_resumed() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let saved = Conversations::new(dir.path().join("conversations"));
        assert!(matches!(
            saved.latest(Path::new("/here")),
            Err(ConversationError::None)
        ));

        let mut here = Conversation::new(PathBuf::from("/here"), "model-a");
        here.id = "20260101-000000-1".into();
        here.messages
            .push(Message::user(format!("{}\nsecond line", "é".repeat(70))));
        saved.save(&mut here)?;
        let mut there = Conversation::new(PathBuf::from("/there"), "model-b");
        there.id = "20260101-000000-2".into();
        there.messages.push(Message::user("elsewhere"));
        saved.save(&mut there)?;

        assert_eq!(saved.load(&here.id)?, here);
        assert_eq!(saved.list().len(), 2);
        assert_eq!(saved.list()[0].id, there.id);
        assert_eq!(saved.latest(Path::new("/here"))?.id, here.id);
        assert_eq!(saved.latest(Path::new("/nowhere"))?.id, there.id);
        assert_eq!(here.title(), format!("{}…", "é".repeat(60)));

        for id in ["../../etc/passwd", "x", "", "1-2-3"] {
            assert!(
                matches!(saved.load(id), Err(ConversationError::Unknown { .. })),
                "{id}"
            );
        }
        Ok(())
    }
}
