//! Where tokens live between runs: one record per authorization server
//! (issuer) and protected resource, as rmcp's [`CredentialStore`].
//!
//! On disk the layout is `ROOT/<issuer>/<resource>.json`, both names
//! percent-encoded, files `0600` inside `0700` directories, each written to
//! a temporary file and renamed so that a crash never leaves half a token.
//! Keying by issuer is what makes an authorization-server migration safe: a
//! token minted by the old server is simply not found under the new one.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

/// The token store: a directory, or memory only (tests, the conformance client).
#[derive(Clone, Debug)]
pub struct TokenStore {
    root: Option<PathBuf>,
    memory: Arc<Mutex<HashMap<String, StoredCredentials>>>,
}

impl TokenStore {
    /// Tokens kept under `root` (created on first save).
    pub fn in_dir(root: impl Into<PathBuf>) -> Self {
        Self {
            root: Some(root.into()),
            memory: Arc::default(),
        }
    }

    /// Tokens kept for the life of this process only.
    pub fn in_memory() -> Self {
        Self {
            root: None,
            memory: Arc::default(),
        }
    }

    /// The record for tokens `issuer` minted for `resource`.
    pub fn entry(&self, issuer: &str, resource: &str) -> StoreEntry {
        StoreEntry {
            store: self.clone(),
            relative: Path::new(&encode(issuer)).join(format!("{}.json", encode(resource))),
        }
    }
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
