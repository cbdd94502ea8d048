//! From the path a client gives to a root and a relative path beneath it.
//!
//! Nothing here decides what may be read: it only finds which root a path
//! names and what lies below that root, refusing early, with a clear
//! message, what can never be inside (`~`, a path elsewhere, `..` above the
//! root, a NUL byte, over-long names). The relative path is then opened
//! beneath the root's directory handle, where the kernel (or cap-std)
//! refuses every way out, symbolic links included.
//!
//! Paths are taken literally: `%2e%2e` is a name of six characters and `\`
//! is part of a name, as they are to the filesystem. Only a `file:` URI is
//! percent-decoded, as URIs are, and the path it gives is then confined
//! like any other.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::error::FsError;
use crate::limits::{MAX_NAME_BYTES, MAX_PATH_BYTES};
use crate::roots::{Root, Roots, normalize};

/// Names of version-control metadata, hidden wherever they appear.
pub const VCS_NAMES: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    "_darcs",
    ".jj",
    ".pijul",
    "CVS",
    ".fslckout",
    "_FOSSIL_",
];

/// Whether `name` is version-control metadata.
pub fn is_vcs(name: &OsStr) -> bool {
    VCS_NAMES.iter().any(|vcs| name == *vcs)
}

/// The first version-control name among `path`'s components.
pub fn vcs_component(path: &Path) -> Option<String> {
    path.components().find_map(|component| match component {
        Component::Normal(name) if is_vcs(name) => Some(name.to_string_lossy().into_owned()),
        _ => None,
    })
}

/// A path resolved to a root.
#[derive(Debug, Clone)]
pub struct Target {
    pub root: Arc<Root>,
    /// Below the root, with only plain names (`.` for the root itself).
    pub relative: PathBuf,
    /// The path as the client gave it, for messages.
    pub shown: String,
}

impl Target {
    /// The absolute name of the target, under the root's canonical name.
    pub fn absolute(&self) -> PathBuf {
        if self.relative == Path::new(".") {
            self.root.path.clone()
        } else {
            self.root.path.join(&self.relative)
        }
    }
}

/// Finds the root `requested` lies in. Relative paths are taken from the
/// first root.
pub fn resolve(roots: &Roots, requested: &str) -> Result<Target, FsError> {
    let shown = requested.to_owned();
    let path = parse(requested)?;
    check_lengths(&path)?;
    if path
        .components()
        .next()
        .is_some_and(|first| first.as_os_str().to_string_lossy().starts_with('~'))
    {
        return Err(FsError::Home(shown));
    }
    let Some(first) = roots.0.first() else {
        return Err(FsError::NoRoots);
    };
    let absolute = if path.is_absolute() {
        normalize(&path)
    } else {
        normalize(&first.path.join(&path))
    };
    let (root, relative) = roots
        .0
        .iter()
        .flat_map(|root| root.names().map(move |name| (root, name)))
        .filter_map(|(root, name)| Some((root, absolute.strip_prefix(name).ok()?)))
        .max_by_key(|(_, relative)| std::cmp::Reverse(relative.components().count()))
        .ok_or_else(|| FsError::OutsideRoots {
            path: shown.clone(),
            roots: roots.describe(),
        })?;
    if let Some(name) = vcs_component(relative) {
        return Err(FsError::Hidden { path: shown, name });
    }
    let relative = if relative.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        relative.to_owned()
    };
    Ok(Target {
        root: Arc::clone(root),
        relative,
        shown,
    })
}

/// The path named by `requested`: a plain path as it is, a `file:` URI
/// decoded.
fn parse(requested: &str) -> Result<PathBuf, FsError> {
    if requested.is_empty() {
        return Err(FsError::EmptyPath);
    }
    if requested.contains('\0') {
        return Err(FsError::NulByte);
    }
    if requested.len() > MAX_PATH_BYTES {
        return Err(FsError::PathTooLong(requested.len()));
    }
    let is_uri = requested
        .get(..5)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file:"));
    if !is_uri {
        return Ok(PathBuf::from(requested));
    }
    let bad = || FsError::BadUri(requested.to_owned());
    let url = url::Url::parse(requested).map_err(|_| bad())?;
    let path = url.to_file_path().map_err(|()| bad())?;
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(FsError::NulByte);
    }
    Ok(path)
}

fn check_lengths(path: &Path) -> Result<(), FsError> {
    let length = path.as_os_str().len();
    if length > MAX_PATH_BYTES {
        return Err(FsError::PathTooLong(length));
    }
    match path
        .components()
        .map(|component| component.as_os_str().len())
        .find(|length| *length > MAX_NAME_BYTES)
    {
        Some(length) => Err(FsError::NameTooLong(length)),
        None => Ok(()),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    struct Bed {
        _base: tempfile::TempDir,
        app: PathBuf,
        roots: Roots,
    }

    fn bed() -> Bed {
        let base = tempfile::tempdir().unwrap();
        let app = base.path().join("app");
        std::fs::create_dir_all(app.join("src")).unwrap();
        std::fs::create_dir_all(base.path().join("app_evil")).unwrap();
        let roots = Roots::open(std::slice::from_ref(&app)).unwrap();
        let app = std::fs::canonicalize(&app).unwrap();
        Bed {
            _base: base,
            app,
            roots,
        }
    }

    fn code(roots: &Roots, path: &str) -> Option<ErrorCode> {
        resolve(roots, path).err().map(|error| error.code())
    }

    #[test]
    fn paths_inside_resolve_to_plain_relative_names() {
        let bed = bed();
        let app = bed.app.to_str().unwrap();
        for (given, relative) in [
            (".", "."),
            ("src", "src"),
            ("./src/../src/x.md", "src/x.md"),
            (&format!("{app}/src/x.md") as &str, "src/x.md"),
            (&format!("{app}//src/./x.md"), "src/x.md"),
            (&format!("{app}/../app/src"), "src"),
            (&format!("file://{app}/src/a%20b.md"), "src/a b.md"),
            ("%2e%2e/etc/passwd", "%2e%2e/etc/passwd"),
            (r"..\..\etc\passwd", r"..\..\etc\passwd"),
        ] {
            let target = resolve(&bed.roots, given).unwrap();
            assert_eq!(target.relative, Path::new(relative), "{given}");
        }
    }

    #[test]
    fn what_can_never_be_inside_is_refused_early() {
        let bed = bed();
        let app = bed.app.to_str().unwrap();
        let long_name = "a".repeat(256);
        let long_path = "a/".repeat(2049);
        for (given, expected) in [
            ("", ErrorCode::InvalidPath),
            ("src/\0x", ErrorCode::InvalidPath),
            (&long_name as &str, ErrorCode::InvalidPath),
            (&long_path, ErrorCode::InvalidPath),
            ("file://host/etc", ErrorCode::InvalidPath),
            ("file:///x/%00y", ErrorCode::InvalidPath),
            ("../etc/passwd", ErrorCode::PathOutsideRoots),
            ("/etc/passwd", ErrorCode::PathOutsideRoots),
            ("~", ErrorCode::PathOutsideRoots),
            ("~/.ssh/id_rsa", ErrorCode::PathOutsideRoots),
            ("~root/.bashrc", ErrorCode::PathOutsideRoots),
            (
                &format!("{app}_evil/secret.md"),
                ErrorCode::PathOutsideRoots,
            ),
            (
                &format!("{app}/../app_evil/secret.md"),
                ErrorCode::PathOutsideRoots,
            ),
            (
                &format!("file://{app}/%2e%2e/app_evil"),
                ErrorCode::PathOutsideRoots,
            ),
            (".git/config", ErrorCode::HiddenPath),
            ("src/.hg", ErrorCode::HiddenPath),
        ] {
            assert_eq!(code(&bed.roots, given), Some(expected), "{given:?}");
        }
    }

    #[test]
    fn the_longest_matching_root_wins() {
        let bed = bed();
        let both = Roots::open(&[bed.app.clone(), bed.app.join("src")]).unwrap();
        let target = resolve(&both, bed.app.join("src/x.md").to_str().unwrap()).unwrap();
        assert_eq!(target.root.path, bed.app.join("src"));
        assert_eq!(target.relative, Path::new("x.md"));
        assert_eq!(target.absolute(), bed.app.join("src/x.md"));
    }

    #[test]
    fn no_roots_means_nothing_is_inside() {
        assert_eq!(
            code(&Roots::default(), "x.md"),
            Some(ErrorCode::PathOutsideRoots)
        );
    }
}
