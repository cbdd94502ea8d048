//! Listings, trees and searches. A walk holds a directory handle for each
//! level it is in and enters a subdirectory from its parent's handle with
//! `O_NOFOLLOW`: it never follows a symbolic link, so it cannot be led out
//! of the root or round a cycle, even if entries change while it walks.
//! Version-control metadata is left out. Every walk counts what it gathers
//! against the entry limit, its depth against the depth limit, and checks
//! the deadline at each entry.

use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, FileType};
use glob::{MatchOptions, Pattern};
use schemars::JsonSchema;
use serde::Serialize;

use crate::access;
use crate::error::FsError;
use crate::limits::{Deadline, Limits};
use crate::resolve::is_vcs;

/// What an entry is, without following a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File,
    Directory,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl Kind {
    fn of(file_type: &FileType) -> Kind {
        if file_type.is_dir() {
            Kind::Directory
        } else if file_type.is_file() {
            Kind::File
        } else if file_type.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Other
        }
    }

    /// The prefix of a `list_directory` line.
    pub fn tag(self) -> &'static str {
        match self {
            Kind::File => "[FILE]",
            Kind::Directory => "[DIR]",
            Kind::Symlink => "[LINK]",
            Kind::Other => "[OTHER]",
        }
    }
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Entry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Kind,
}

/// One entry of a tree; directories (not symbolic links to them) have
/// children.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Node {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<Node>>,
    /// Set on a subdirectory the server's process may not read; its
    /// children are then empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<bool>,
}

/// Glob patterns that leave entries out of a tree or search. A pattern
/// matches an entry's path relative to the walk's start; one without `/`
/// also matches its name at any depth (`node_modules`, `*.log`). A left-out
/// directory is not entered.
#[derive(Debug, Default)]
pub struct Excludes(Vec<Pattern>);

const MATCH: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// A glob pattern, or an error naming it.
pub fn pattern(text: &str) -> Result<Pattern, FsError> {
    Pattern::new(text).map_err(|error| {
        FsError::InvalidArgument(format!(
            "`{text}` is not a glob pattern: {} at character {}; use `*`, `?`, `**`, `[abc]`",
            error.msg, error.pos
        ))
    })
}

impl Excludes {
    pub fn new(patterns: &[String]) -> Result<Self, FsError> {
        patterns
            .iter()
            .map(|text| pattern(text))
            .collect::<Result<_, _>>()
            .map(Excludes)
    }

    fn leaves_out(&self, relative: &str, name: &str) -> bool {
        self.0.iter().any(|pattern| {
            pattern.matches_with(relative, MATCH)
                || (!pattern.as_str().contains('/') && pattern.matches_with(name, MATCH))
        })
    }
}

/// The entries of `dir`, sorted by name.
pub fn list(
    dir: &Dir,
    limits: &Limits,
    deadline: &Deadline,
    shown: &str,
) -> Result<Vec<Entry>, FsError> {
    let mut entries = Vec::new();
    for (name, file_type) in read_entries(dir, deadline, shown)? {
        entries.push(Entry {
            name,
            kind: Kind::of(&file_type),
        });
        if entries.len() > limits.max_entries {
            return Err(FsError::TooManyEntries {
                path: shown.to_owned(),
                limit: limits.max_entries,
            });
        }
    }
    Ok(entries)
}

/// The tree under `dir`.
pub fn tree(
    dir: &Dir,
    excludes: &Excludes,
    limits: &Limits,
    deadline: &Deadline,
    shown: &str,
) -> Result<Vec<Node>, FsError> {
    Walk::new(excludes, limits, deadline, shown).tree(dir, Path::new(""), 1)
}

/// The paths under `dir` (relative to it, `/`-separated) that match
/// `pattern`, directories included, in walk order.
pub fn search(
    dir: &Dir,
    pattern: &Pattern,
    excludes: &Excludes,
    limits: &Limits,
    deadline: &Deadline,
    shown: &str,
) -> Result<Vec<String>, FsError> {
    let mut found = Vec::new();
    Walk::new(excludes, limits, deadline, shown).search(
        dir,
        Path::new(""),
        1,
        pattern,
        &mut found,
    )?;
    Ok(found)
}

/// The relative paths of a tree, one a line, directories ending in `/`
/// (seed 004's `readProjectStructure`).
pub fn flatten(nodes: &[Node]) -> Vec<String> {
    fn add(nodes: &[Node], prefix: &str, lines: &mut Vec<String>) {
        for node in nodes {
            let path = format!("{prefix}{}", node.name);
            match &node.children {
                Some(children) => {
                    lines.push(format!("{path}/"));
                    add(children, &format!("{path}/"), lines);
                }
                None => lines.push(path),
            }
        }
    }
    let mut lines = Vec::new();
    add(nodes, "", &mut lines);
    lines
}

struct Walk<'a> {
    excludes: &'a Excludes,
    limits: &'a Limits,
    deadline: &'a Deadline,
    shown: &'a str,
    count: usize,
}

impl<'a> Walk<'a> {
    fn new(
        excludes: &'a Excludes,
        limits: &'a Limits,
        deadline: &'a Deadline,
        shown: &'a str,
    ) -> Self {
        Self {
            excludes,
            limits,
            deadline,
            shown,
            count: 0,
        }
    }

    /// The entries of `dir` (at `prefix` below the start, `depth` levels
    /// down) that no pattern leaves out.
    fn visible(
        &mut self,
        dir: &Dir,
        prefix: &Path,
        depth: usize,
    ) -> Result<Vec<(String, FileType, PathBuf)>, FsError> {
        let mut visible = Vec::new();
        for (name, file_type) in read_entries(dir, self.deadline, self.shown)? {
            let relative = prefix.join(&name);
            if self.excludes.leaves_out(&relative.to_string_lossy(), &name) {
                continue;
            }
            if depth > self.limits.max_depth {
                return Err(FsError::TooDeep {
                    path: self.shown.to_owned(),
                    limit: self.limits.max_depth,
                });
            }
            visible.push((name, file_type, relative));
        }
        Ok(visible)
    }

    fn tree(&mut self, dir: &Dir, prefix: &Path, depth: usize) -> Result<Vec<Node>, FsError> {
        let mut nodes = Vec::new();
        for (name, file_type, relative) in self.visible(dir, prefix, depth)? {
            self.count += 1;
            if self.count > self.limits.max_entries {
                return Err(FsError::TooManyEntries {
                    path: self.shown.to_owned(),
                    limit: self.limits.max_entries,
                });
            }
            let kind = Kind::of(&file_type);
            let mut node = Node {
                name,
                kind,
                children: None,
                unreadable: None,
            };
            if kind == Kind::Directory {
                node.children = Some(Vec::new());
                match self.enter(dir, &node.name)? {
                    Entered::Dir(child) => {
                        node.children = Some(self.tree(&child, &relative, depth + 1)?);
                    }
                    Entered::Unreadable => node.unreadable = Some(true),
                    Entered::Gone => continue,
                }
            }
            nodes.push(node);
        }
        Ok(nodes)
    }

    fn search(
        &mut self,
        dir: &Dir,
        prefix: &Path,
        depth: usize,
        pattern: &Pattern,
        found: &mut Vec<String>,
    ) -> Result<(), FsError> {
        for (name, file_type, relative) in self.visible(dir, prefix, depth)? {
            let text = relative.to_string_lossy();
            if pattern.matches_with(&text, MATCH) {
                found.push(text.into_owned());
                if found.len() > self.limits.max_entries {
                    return Err(FsError::TooManyEntries {
                        path: self.shown.to_owned(),
                        limit: self.limits.max_entries,
                    });
                }
            }
            if file_type.is_dir()
                && let Entered::Dir(child) = self.enter(dir, &name)?
            {
                self.search(&child, &relative, depth + 1, pattern, found)?;
            }
        }
        Ok(())
    }

    fn enter(&self, dir: &Dir, name: &str) -> Result<Entered, FsError> {
        match access::enter(dir, Path::new(name)) {
            Ok(Some(child)) => Ok(Entered::Dir(child)),
            Ok(None) => Ok(Entered::Gone),
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                Ok(Entered::Unreadable)
            }
            Err(error) => Err(FsError::from_io(&error, self.shown)),
        }
    }
}

enum Entered {
    Dir(Dir),
    /// The process may not open it.
    Unreadable,
    /// It is no longer a directory, or no longer there.
    Gone,
}

/// The names and types of `dir`'s entries, sorted by name, without
/// version-control metadata.
fn read_entries(
    dir: &Dir,
    deadline: &Deadline,
    shown: &str,
) -> Result<Vec<(String, FileType)>, FsError> {
    let io = |error: std::io::Error| FsError::from_io(&error, shown);
    let mut entries = Vec::new();
    for entry in dir.entries().map_err(io)? {
        deadline.check()?;
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        if is_vcs(&name) {
            continue;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        entries.push((name.to_string_lossy().into_owned(), file_type));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use std::time::Duration;

    use super::*;

    fn dir_of(base: &Path) -> Dir {
        Dir::open_ambient_dir(base, cap_std::ambient_authority()).unwrap()
    }

    fn later() -> Deadline {
        Deadline::after(Duration::from_secs(60))
    }

    /// The tree of `dir` under the default limits, nothing excluded.
    fn whole_tree(dir: &Dir) -> Vec<Node> {
        tree(dir, &Excludes::default(), &Limits::default(), &later(), ".").unwrap()
    }

    fn files(base: &Path, paths: &[&str]) {
        for path in paths {
            let path = base.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
    }

    #[test]
    fn globs_match_relative_paths_and_excludes_match_names_too() {
        let base = tempfile::tempdir().unwrap();
        files(
            base.path(),
            &[
                "a.rs",
                "src/b.rs",
                "src/deep/c.rs",
                "node_modules/m/d.rs",
                "src/e.md",
            ],
        );
        let dir = dir_of(base.path());
        let limits = Limits::default();
        let search = |pattern_text: &str, excludes: &[&str]| {
            let excludes: Vec<String> = excludes.iter().map(|e| (*e).to_owned()).collect();
            let excludes = Excludes::new(&excludes).unwrap();
            search(
                &dir,
                &pattern(pattern_text).unwrap(),
                &excludes,
                &limits,
                &later(),
                ".",
            )
            .unwrap()
        };
        assert_eq!(search("*.rs", &[]), ["a.rs"]);
        assert_eq!(
            search("**/*.rs", &["node_modules"]),
            ["a.rs", "src/b.rs", "src/deep/c.rs"]
        );
        assert_eq!(search("src/**/*.rs", &["deep"]), ["src/b.rs"]);
        assert_eq!(
            search("**/*.rs", &["**/deep/**", "node_modules/**"]),
            ["a.rs", "src/b.rs"]
        );
        assert_eq!(search("src", &[]), ["src"]);
        assert!(pattern("[").is_err());
    }

    #[test]
    fn trees_count_entries_and_depth() {
        let base = tempfile::tempdir().unwrap();
        files(base.path(), &["a/b/c/d.md", "top.md"]);
        std::fs::create_dir(base.path().join(".git")).unwrap();
        let dir = dir_of(base.path());
        let nodes = whole_tree(&dir);
        assert_eq!(
            flatten(&nodes),
            ["a/", "a/b/", "a/b/c/", "a/b/c/d.md", "top.md"]
        );

        let shallow = Limits {
            max_depth: 3,
            ..Limits::default()
        };
        let error = tree(&dir, &Excludes::default(), &shallow, &later(), ".").unwrap_err();
        assert!(
            matches!(error, FsError::TooDeep { limit: 3, .. }),
            "{error}"
        );
        let excluded = Excludes::new(&["c".to_owned()]).unwrap();
        assert!(tree(&dir, &excluded, &shallow, &later(), ".").is_ok());

        let few = Limits {
            max_entries: 4,
            ..Limits::default()
        };
        let error = tree(&dir, &Excludes::default(), &few, &later(), ".").unwrap_err();
        assert!(
            matches!(error, FsError::TooManyEntries { limit: 4, .. }),
            "{error}"
        );
        let error = list(&dir, &few, &Deadline::after(Duration::ZERO), ".").unwrap_err();
        assert!(matches!(error, FsError::Timeout(_)), "{error}");
    }

    #[test]
    fn walks_do_not_follow_symbolic_links() {
        let base = tempfile::tempdir().unwrap();
        files(base.path(), &["inside/f.md"]);
        std::os::unix::fs::symlink("..", base.path().join("inside/up")).unwrap();
        std::os::unix::fs::symlink("/", base.path().join("inside/slash")).unwrap();
        let dir = dir_of(&base.path().join("inside"));
        let nodes = whole_tree(&dir);
        let kinds: Vec<(&str, Kind, bool)> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.kind, n.children.is_some()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("f.md", Kind::File, false),
                ("slash", Kind::Symlink, false),
                ("up", Kind::Symlink, false)
            ]
        );
    }
}
