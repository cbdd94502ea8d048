//! The files server's paths under a fuzzer (`fuzz/fuzz_targets/files_path.rs`
//! calls [`files_path`]; the committed corpus is replayed by this module's
//! test). The invariant, checked against the file system: whatever path a
//! client names, what the server resolves it to is beneath a root, and
//! what it then opens (a file, a directory, or its metadata) really is
//! beneath the root once every symbolic link is followed. The tree has
//! links that lead out of the root (to a file and to a directory) and ones
//! that stay inside (to a file and to a directory). A walk (`list`, `tree`,
//! `search`) enters each directory of the path from its parent's handle as
//! [`crate::access::enter`] does: a name that is a symbolic link is never
//! entered, wherever it leads (the file system says which names are
//! links), and what is entered is beneath the root.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::access::{ReadRules, enter, metadata, open_dir, open_file};
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
            std::os::unix::fs::symlink("sub", root.join("dir-in"))?;
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
        self.walk_into(&target);
    }

    /// Enters the target's directories one name at a time, as a walk does.
    fn walk_into(&self, target: &crate::resolve::Target) {
        let Ok(mut dir) = target.root.dir.try_clone() else {
            return;
        };
        let mut here = self.root.clone();
        for name in target.relative.iter().filter(|name| *name != ".") {
            here.push(name);
            let link = std::fs::symlink_metadata(&here).is_ok_and(|meta| meta.is_symlink());
            let entered = enter(&dir, Path::new(name));
            let Ok(Some(child)) = entered else {
                return;
            };
            assert!(!link, "a walk entered the symbolic link {}", here.display());
            let fd = std::os::fd::AsRawFd::as_raw_fd(&child);
            let real = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
            if let Some(real) = real {
                assert!(
                    real.starts_with(&self.root),
                    "a walk entered {} through {}",
                    real.display(),
                    here.display()
                );
            }
            dir = child;
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
