//! Where tokens live between runs: one record per authorization server
//! (issuer) and protected resource, as rmcp's [`CredentialStore`].
//!
//! On disk the layout is `ROOT/<issuer>/<resource>.json`, both names
//! percent-encoded, files `0600` inside `0700` directories, each written to
//! a temporary file and renamed so that a crash never leaves half a token.
//! Keying by issuer is what makes an authorization-server migration safe: a
//! token minted by the old server is simply not found under the new one.
//!
//! Two nexo processes may share one record (a chat and a `nexo call` at
//! once). Refreshing is what they must not do together: where the
//! authorization server rotates refresh tokens, the second to spend the old
//! one is refused and must authorize again. So a refresh holds a lock
//! ([`CredentialStore::acquire_refresh_guard`]): an advisory lock on
//! `<resource>.lock` beside the record, taken for the load, the token
//! request and the save, so the second process reads the first one's new
//! refresh token. The lock file stays (removing a lock file another process
//! holds would let a third take it at once).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};

/// The token store: a directory, or memory only (tests, the conformance client).
#[derive(Clone, Debug)]
pub struct TokenStore {
    root: Option<PathBuf>,
    memory: Arc<Mutex<HashMap<String, StoredCredentials>>>,
    /// Refreshes of an in-memory store, one at a time (a directory's are
    /// serialized by file locks, across processes too).
    memory_refresh: Arc<tokio::sync::Mutex<()>>,
}

impl TokenStore {
    /// Tokens kept under `root` (created on first save).
    pub fn in_dir(root: impl Into<PathBuf>) -> Self {
        Self {
            root: Some(root.into()),
            memory: Arc::default(),
            memory_refresh: Arc::default(),
        }
    }

    /// Tokens kept for the life of this process only.
    pub fn in_memory() -> Self {
        Self {
            root: None,
            memory: Arc::default(),
            memory_refresh: Arc::default(),
        }
    }

    /// The record for tokens `issuer` minted for `resource`.
    pub fn entry(&self, issuer: &str, resource: &str) -> StoreEntry {
        StoreEntry {
            store: self.clone(),
            relative: Path::new(&encode(issuer)).join(format!("{}.json", encode(resource))),
        }
    }

    /// Every record kept for `resource`, whichever issuer minted it, with
    /// the issuer's name (`nexo logout`).
    pub fn records_for(&self, resource: &str) -> Result<Vec<(String, StoreEntry)>, AuthError> {
        let file = format!("{}.json", encode(resource));
        let Some(root) = &self.root else {
            let memory = self.memory.lock().map_err(|_| poisoned())?;
            let mut records = Vec::new();
            for key in memory.keys() {
                let relative = PathBuf::from(key);
                if relative.file_name().and_then(|name| name.to_str()) == Some(file.as_str())
                    && let Some(issuer) = relative.parent().and_then(issuer_of_dir)
                {
                    records.push((issuer, self.entry_at(relative)));
                }
            }
            records.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(records);
        };
        let issuers = match fs::read_dir(root) {
            Ok(issuers) => issuers,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(store_error("read", root, error)),
        };
        let mut records = Vec::new();
        for dir in issuers {
            let dir = dir.map_err(|error| store_error("read", root, error))?;
            let relative = Path::new(&dir.file_name()).join(&file);
            if root.join(&relative).is_file()
                && let Some(issuer) = relative.parent().and_then(issuer_of_dir)
            {
                records.push((issuer, self.entry_at(relative)));
            }
        }
        records.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(records)
    }

    fn entry_at(&self, relative: PathBuf) -> StoreEntry {
        StoreEntry {
            store: self.clone(),
            relative,
        }
    }
}

/// The issuer an issuer directory's name stands for ([`encode`] undone).
fn issuer_of_dir(dir: &Path) -> Option<String> {
    decode(dir.to_str()?)
}

/// Percent-encodes everything but ASCII letters, digits, `-` and `.`, so
/// that any URL becomes one safe file name and different URLs never collide.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || (byte == b'.' && !out.is_empty()) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// [`encode`] undone; `None` for a name [`encode`] cannot have made.
fn decode(name: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(name.len());
    let mut rest = name.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        if first == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(first);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// One issuer's record for one resource.
#[derive(Clone, Debug)]
pub struct StoreEntry {
    store: TokenStore,
    relative: PathBuf,
}

fn store_error(action: &str, path: &Path, error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(format!("cannot {action} `{}`: {error}", path.display()))
}

impl StoreEntry {
    fn key(&self) -> String {
        self.relative.to_string_lossy().into_owned()
    }

    fn load_sync(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(root) = &self.store.root else {
            let memory = self.store.memory.lock().map_err(|_| poisoned())?;
            return Ok(memory.get(&self.key()).cloned());
        };
        let path = root.join(&self.relative);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(store_error("read", &path, error)),
        };
        match serde_json::from_slice(&bytes) {
            Ok(credentials) => Ok(Some(credentials)),
            Err(error) => {
                // A damaged record means authorizing again, not failing forever.
                tracing::warn!(path = %path.display(), %error, "ignoring an unreadable token file");
                Ok(None)
            }
        }
    }

    fn save_sync(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let Some(root) = &self.store.root else {
            let mut memory = self.store.memory.lock().map_err(|_| poisoned())?;
            memory.insert(self.key(), credentials);
            return Ok(());
        };
        let path = root.join(&self.relative);
        let dir = path.parent().unwrap_or(root);
        create_private_dir(dir).map_err(|error| store_error("create", dir, error))?;
        let body = serde_json::to_vec_pretty(&credentials)
            .map_err(|error| store_error("encode", &path, error))?;
        crate::replace::replace(&path, &body).map_err(|error| store_error("write", &path, error))
    }

    /// Takes the refresh lock of this record, waiting for another holder
    /// (in this process or another) to let it go.
    async fn refresh_lock(&self) -> Result<CredentialRefreshGuard, AuthError> {
        let Some(root) = &self.store.root else {
            let guard = self.store.memory_refresh.clone().lock_owned().await;
            return Ok(CredentialRefreshGuard::new(guard));
        };
        let mut path = root.join(&self.relative);
        path.set_extension("lock");
        let lock = tokio::task::spawn_blocking(move || -> Result<fs::File, AuthError> {
            let dir = path.parent().unwrap_or(Path::new("."));
            create_private_dir(dir).map_err(|error| store_error("create", dir, error))?;
            let file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|error| store_error("open", &path, error))?;
            file.lock()
                .map_err(|error| store_error("lock", &path, error))?;
            Ok(file)
        })
        .await
        .map_err(|error| {
            AuthError::CredentialStoreError(format!("the lock was lost: {error}"))
        })??;
        // Closing the file (dropping the guard) lets the lock go.
        Ok(CredentialRefreshGuard::new(lock))
    }

    fn clear_sync(&self) -> Result<(), AuthError> {
        let Some(root) = &self.store.root else {
            let mut memory = self.store.memory.lock().map_err(|_| poisoned())?;
            memory.remove(&self.key());
            return Ok(());
        };
        let path = root.join(&self.relative);
        match fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(store_error("remove", &path, error))
            }
            _ => Ok(()),
        }
    }
}

fn poisoned() -> AuthError {
    AuthError::CredentialStoreError("the in-memory token store was poisoned".into())
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

#[async_trait::async_trait]
impl CredentialStore for StoreEntry {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.load_sync()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.save_sync(credentials)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.clear_sync()
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        self.refresh_lock().await.map(Some)
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn names_are_injective_and_safe() {
        assert_eq!(
            encode("https://as.example/t1"),
            "https%3A%2F%2Fas.example%2Ft1"
        );
        assert_ne!(encode("a/b"), encode("a_b"));
        assert_eq!(encode(".."), "%2E.");
        assert!(!encode("../../etc/passwd").contains('/'));
        for name in ["https://as.example/t1", "..", "a/b", "é%", ""] {
            assert_eq!(decode(&encode(name)).as_deref(), Some(name));
        }
        assert_eq!(decode("%4"), None);
        assert_eq!(decode("%ZZ"), None);
    }

    #[tokio::test]
    async fn records_are_found_by_resource_whatever_the_issuer() {
        let dir = tempfile::tempdir().unwrap();
        let resource = "http://127.0.0.1:1/mcp";
        for store in [TokenStore::in_dir(dir.path()), TokenStore::in_memory()] {
            let saved = StoredCredentials::new("client".into(), None, Vec::new(), Some(1));
            for issuer in ["https://as2.example", "https://as1.example/t"] {
                store
                    .entry(issuer, resource)
                    .save(saved.clone())
                    .await
                    .unwrap();
            }
            store
                .entry("https://as1.example/t", "http://other/mcp")
                .save(saved)
                .await
                .unwrap();
            let found: Vec<String> = store
                .records_for(resource)
                .unwrap()
                .into_iter()
                .map(|(issuer, _)| issuer)
                .collect();
            assert_eq!(found, ["https://as1.example/t", "https://as2.example"]);
        }
    }

    /// A second holder of a record's refresh lock waits for the first, as
    /// a second process does.
    #[tokio::test]
    async fn refreshes_of_one_record_wait_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        for store in [TokenStore::in_dir(dir.path()), TokenStore::in_memory()] {
            let entry = store.entry("https://as.example", "http://127.0.0.1:1/mcp");
            let first = entry.acquire_refresh_guard().await.unwrap();
            let second = {
                let entry = entry.clone();
                tokio::spawn(async move { entry.acquire_refresh_guard().await.map(|_| ()) })
            };
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            assert!(!second.is_finished(), "the lock was taken twice");
            drop(first);
            second.await.unwrap().unwrap();
        }
    }

    #[tokio::test]
    async fn records_are_private_and_separate_per_issuer() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        let first = store.entry("https://as1.example", "http://127.0.0.1:1/mcp");
        let second = store.entry("https://as2.example", "http://127.0.0.1:1/mcp");
        let saved = StoredCredentials::new("client".into(), None, vec!["a".into()], Some(1));
        first.save(saved).await.unwrap();
        let loaded = first.load().await.unwrap();
        assert_eq!(loaded.map(|c| c.client_id), Some("client".to_owned()));
        assert!(second.load().await.unwrap().is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(&first.relative);
            let mode = fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
            assert_eq!(mode.ok(), Some(0o600));
        }
        first.clear().await.unwrap();
        assert!(first.load().await.unwrap().is_none());
    }
}
