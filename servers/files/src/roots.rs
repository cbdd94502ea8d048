//! The allowed directories. Each [`Root`] is an open directory handle with
//! the absolute names it answers to; every file the server touches is
//! opened beneath one of these handles, never by an absolute name.
//!
//! Command-line roots are opened once, at start. A directory given twice,
//! under two spellings (a trailing `/`, a symbolic link to it), is one root
//! that answers to both and is shown as the user first spelled it.
//!
//! A client that offers MCP roots narrows them: the effective roots are the
//! command-line roots that lie inside one of the client's `file:` roots, and
//! the client's roots that lie inside a command-line root, the latter opened
//! beneath that root's handle so that a client root cannot lead anywhere a
//! command-line root does not.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::OptionsError;

/// One allowed directory.
#[derive(Debug)]
pub struct Root {
    /// Its canonical absolute name, which real names are checked against.
    pub path: PathBuf,
    /// The name the user first gave it, made absolute: what
    /// `list_allowed_directories` and messages show.
    pub shown: PathBuf,
    /// Other absolute names that lead to it (the names given on the command
    /// line, before symbolic links were resolved).
    pub aliases: Vec<PathBuf>,
    /// The handle everything beneath it is opened from.
    pub dir: Dir,
}

impl Root {
    /// Every absolute name of the root, canonical first.
    pub fn names(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.path.as_path()).chain(self.aliases.iter().map(PathBuf::as_path))
    }
}

/// The allowed directories, in order: relative paths are taken from the first.
#[derive(Debug, Clone, Default)]
pub struct Roots(pub Vec<Arc<Root>>);

impl Roots {
    /// Opens the command-line roots; each must be a directory this process
    /// may open. A directory given again, under any spelling, adds that
    /// spelling to the root already opened.
    pub fn open(paths: &[PathBuf]) -> Result<Self, OptionsError> {
        if paths.is_empty() {
            return Err(OptionsError::NoRoots);
        }
        let mut roots: Vec<Root> = Vec::new();
        for given in paths {
            let unreadable = |source| OptionsError::Unreadable {
                path: given.clone(),
                source,
            };
            let canonical = std::fs::canonicalize(given).map_err(unreadable)?;
            if !canonical.is_dir() {
                return Err(OptionsError::NotADirectory(given.clone()));
            }
            let absolute = std::path::absolute(given)
                .map(|path| normalize(&path))
                .unwrap_or_else(|_| canonical.clone());
            if let Some(known) = roots.iter_mut().find(|root| root.path == canonical) {
                if !known.names().any(|name| name == absolute) {
                    known.aliases.push(absolute);
                }
                continue;
            }
            let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(unreadable)?;
            let aliases = if absolute == canonical {
                Vec::new()
            } else {
                vec![absolute.clone()]
            };
            roots.push(Root {
                path: canonical,
                shown: absolute,
                aliases,
                dir,
            });
        }
        Ok(Roots(roots.into_iter().map(Arc::new).collect()))
    }

    /// The roots' names as shown, joined for a message.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .0
            .iter()
            .map(|root| format!("`{}`", root.shown.display()))
            .collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    }

    /// The command-line roots narrowed by the client's roots (`file:` URIs;
    /// others are ignored). `None` when the client named no usable root,
    /// which leaves the command-line roots as they are.
    pub fn narrowed_by(&self, client_uris: &[String]) -> Option<Roots> {
        let client: Vec<PathBuf> = client_uris
            .iter()
            .filter_map(|uri| client_root_path(uri))
            .collect();
        if client.is_empty() {
            return None;
        }
        let mut effective: Vec<Arc<Root>> = Vec::new();
        let mut add = |root: Arc<Root>| {
            if !effective.iter().any(|known| known.path == root.path) {
                effective.push(root);
            }
        };
        for wanted in &client {
            for root in &self.0 {
                if wanted.starts_with(&root.path) {
                    if let Some(inner) = open_inside(root, wanted) {
                        add(Arc::new(inner));
                    }
                } else if root.path.starts_with(wanted) {
                    add(Arc::clone(root));
                }
            }
        }
        Some(Roots(effective))
    }
}

/// The canonical path of a client's `file:` root, if it names an existing
/// directory on this machine.
fn client_root_path(uri: &str) -> Option<PathBuf> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    let path = url.to_file_path().ok()?;
    std::fs::canonicalize(path).ok()
}

/// `wanted`, a directory inside `root`, opened beneath `root`'s handle.
fn open_inside(root: &Root, wanted: &Path) -> Option<Root> {
    let relative = wanted.strip_prefix(&root.path).ok()?;
    let dir = if relative.as_os_str().is_empty() {
        root.dir.try_clone().ok()?
    } else {
        root.dir.open_dir(relative).ok()?
    };
    Some(Root {
        path: wanted.to_owned(),
        shown: wanted.to_owned(),
        aliases: Vec::new(),
        dir,
    })
}

/// `path` with `.` dropped and each `..` taking away the name before it,
/// without asking the filesystem; `..` at the top stays at the top.
pub fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_lexical_and_stops_at_the_top() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/../../etc")), Path::new("/etc"));
        assert_eq!(
            normalize(Path::new("/data/app/../app_evil")),
            Path::new("/data/app_evil")
        );
    }

    #[test]
    fn client_roots_narrow_and_never_widen() {
        let base = tempfile::tempdir().unwrap();
        let app = base.path().join("app");
        let sub = app.join("sub");
        let other = base.path().join("other");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let roots = Roots::open(std::slice::from_ref(&app)).unwrap();
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap();
        let uri = |p: &Path| url::Url::from_file_path(canonical(p)).unwrap().to_string();

        let inside = roots.narrowed_by(&[uri(&sub)]).unwrap();
        let paths: Vec<&Path> = inside.0.iter().map(|r| r.path.as_path()).collect();
        assert_eq!(paths, [canonical(&sub)]);

        let wider = roots.narrowed_by(&[uri(base.path())]).unwrap();
        let paths: Vec<&Path> = wider.0.iter().map(|r| r.path.as_path()).collect();
        assert_eq!(
            paths,
            [canonical(&app)],
            "a wider client root gives the server's root"
        );

        let disjoint = roots.narrowed_by(&[uri(&other)]).unwrap();
        assert!(disjoint.0.is_empty());

        assert!(
            roots
                .narrowed_by(&["https://example.com/".to_owned()])
                .is_none()
        );
        assert!(roots.narrowed_by(&[]).is_none());
    }

    #[test]
    fn roots_must_be_directories() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("f.md");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            Roots::open(&[file]),
            Err(OptionsError::NotADirectory(_))
        ));
        assert!(matches!(
            Roots::open(&[base.path().join("missing")]),
            Err(OptionsError::Unreadable { .. })
        ));
        assert!(matches!(Roots::open(&[]), Err(OptionsError::NoRoots)));
    }
}
