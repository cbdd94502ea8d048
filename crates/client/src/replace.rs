//! Replacing a file whole, the one way every JSON file nexo keeps is
//! written (tokens, consents, conversations, pins): the new content goes to
//! a temporary file of a unique name in the same directory (readable by
//! its owner only), is flushed to disk, and is renamed over the old one. A
//! reader sees the old file or the new one, never a part; two processes
//! writing at once each write a whole file of their own (a fixed temporary
//! name let one truncate the other's), and the last rename wins.

use std::io::Write;
use std::path::Path;

/// Replaces the file at `path` with `bytes`. The directory must exist.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // tempfile creates the file with mode 0600 on Unix, under a random name.
    let mut temporary = tempfile::NamedTempFile::new_in(dir)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn writers_at_once_each_leave_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token.json");
        let bodies: Vec<Vec<u8>> = (0..8_u8)
            .map(|n| serde_json::to_vec(&vec![n; 50_000]).unwrap())
            .collect();
        std::thread::scope(|scope| {
            for body in &bodies {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..20 {
                        replace(path, body).unwrap();
                    }
                });
            }
        });
        let written = std::fs::read(&path).unwrap();
        assert!(bodies.contains(&written), "a mix of writes was left");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files were left: {left:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
