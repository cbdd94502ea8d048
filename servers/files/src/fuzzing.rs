//! The files server's paths under a fuzzer (`fuzz/fuzz_targets/files_path.rs`
//! calls [`files_path`]; the committed corpus is replayed by this module's
//! test). The invariant, checked against the file system: whatever path a
//! client names, what the server resolves it to is beneath a root, and
//! what it then opens (a file, a directory, or its metadata) really is
//! beneath the root once every symbolic link is followed. The tree has
//! links that lead out of the root (to a file and to a directory) and one
//! that stays inside.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::access::{ReadRules, metadata, open_dir, open_file};
use crate::extensions::AllowedExtensions;
use crate::resolve::resolve;
use crate::roots::Roots;

/// A tree to resolve paths in: `root/` (served) beside `outside/`.
pub struct Tree {
    root: PathBuf,
    roots: Roots,
}

impl Tree {
    /// Builds the tree under `dir`.
    pub fn new(dir: &Path) -> Self {
        let build = || -> std::io::Result<PathBuf> {
            let root = dir.join("root");
            let outside = dir.join("outside");
            std::fs::create_dir_all(root.join("sub"))?;
            std::fs::create_dir_all(&outside)?;
            std::fs::write(root.join("a.txt"), "inside")?;
            std::fs::write(root.join("sub/b.md"), "inside too")?;
            std::fs::write(outside.join("secret.txt"), "outside")?;
            std::os::unix::fs::symlink("../outside/secret.txt", root.join("link-out.txt"))?;
            std::os::unix::fs::symlink("../outside", root.join("dir-out"))?;
            std::os::unix::fs::symlink("sub/b.md", root.join("link-in.md"))?;
            std::fs::canonicalize(&root)
        };
        let root = build().unwrap_or_else(|error| panic!("cannot build the tree: {error}"));
        let roots = Roots::open(std::slice::from_ref(&root))
            .unwrap_or_else(|error| panic!("cannot open the root: {error}"));
        Self { root, roots }
    }

    /// One path as a client names it, resolved and opened.
    pub fn check(&self, data: &[u8]) {
        let requested = String::from_utf8_lossy(data);
        let Ok(target) = resolve(&self.roots, &requested) else {
            return;
        };
        assert!(
            target.absolute().starts_with(&self.root),
            "{requested:?} resolved to {}",
            target.absolute().display()
        );
        let rules = ReadRules {
            extensions: AllowedExtensions::default(),
            hard_links: false,
        };
        let opened = open_file(&target, &rules).is_ok()
            || open_dir(&target).is_ok()
            || metadata(&target, &rules).is_ok();
        if opened && let Ok(real) = std::fs::canonicalize(target.absolute()) {
            assert!(
                real.starts_with(&self.root),
                "{requested:?} opened {}, outside the root",
                real.display()
            );
        }
    }
}

/// One fuzz input: a path, checked in a tree made once per process (in
/// the temporary directory, left for the fuzzing run).
pub fn files_path(data: &[u8]) {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        Tree::new(&std::env::temp_dir().join(format!("nexo-fuzz-files-{}", std::process::id())))
    })
    .check(data);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_paths_pass() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let tree = super::Tree::new(dir.path());
        nexo_testkit::replay("files_path", |data| tree.check(data));
    }
}
