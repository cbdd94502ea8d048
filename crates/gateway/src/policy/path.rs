//! The path matcher: is a file path an argument names inside or outside
//! given directories? Decided lexically, without touching the disk (the
//! gateway does not see the upstream's file system; symbolic links are the
//! upstream's to refuse, as nexo's files server does with cap-std).
//!
//! A value may reach a server in more than one reading: as written, with
//! `%2e%2e`-style escapes decoded, with backslashes taken for separators,
//! with full-width lookalikes folded (NFKC), or as a `file://` URL. Every
//! reading is normalized (`.` dropped, `..` resolved) and the path counts as
//! inside only when every reading is inside; a NUL byte, a `~` home
//! reference or a relative path with no base is never inside. Written by
//! hand: path crates resolve against the disk or take one reading only.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;
use unicode_normalization::UnicodeNormalization;

/// Directories, each normalized and absolute, and the base a relative path
/// is taken from.
#[derive(Debug, Clone)]
pub struct Dirs {
    dirs: Vec<Vec<String>>,
    shown: Vec<String>,
    base: Option<Vec<String>>,
}

/// Where a path lies, with what a person needs to see why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub inside: bool,
    pub detail: String,
}

impl Dirs {
    /// `dirs` and `base` must be absolute; the error names the first that
    /// is not.
    pub fn new(dirs: &[String], base: Option<&str>) -> Result<Self, String> {
        let mut parsed = Vec::with_capacity(dirs.len());
        for dir in dirs {
            parsed.push(absolute(dir)?);
        }
        let base = base.map(absolute).transpose()?;
        Ok(Self {
            dirs: parsed,
            shown: dirs.to_vec(),
            base,
        })
    }

    /// Where `value` lies, every reading of it considered.
    pub fn place(&self, value: &str) -> Placement {
        if value.contains('\0') {
            return self.outside(value, "contains a NUL byte".to_owned());
        }
        let Some(readings) = readings(value) else {
            return self.outside(
                value,
                format!(
                    "is percent-encoded more than {DECODE_ROUNDS} times over, deeper than nexo reads"
                ),
            );
        };
        for reading in readings {
            let Some(interpretations) = self.interpretations(&reading) else {
                return self.outside(
                    value,
                    "is relative or names a home directory, with no base to resolve it".to_owned(),
                );
            };
            for components in interpretations {
                let within = self.dirs.iter().any(|dir| components.starts_with(dir));
                if !within {
                    let resolved = format!("/{}", components.join("/"));
                    let how = if reading == value {
                        format!("resolves to `{resolved}`")
                    } else {
                        format!("read as `{reading}` resolves to `{resolved}`")
                    };
                    return self.outside(value, how);
                }
            }
        }
        Placement {
            inside: true,
            detail: format!("`{value}` is inside {}", self.listed()),
        }
    }

    fn outside(&self, value: &str, how: String) -> Placement {
        Placement {
            inside: false,
            detail: format!("`{value}` {how}, outside {}", self.listed()),
        }
    }

    fn listed(&self) -> String {
        self.shown
            .iter()
            .map(|dir| format!("`{dir}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The normalized components of one reading, as each kind of server
    /// may take it, or `None` when it cannot be placed.
    fn interpretations(&self, reading: &str) -> Option<Vec<Vec<String>>> {
        if reading.starts_with('~') {
            return None;
        }
        if reading.starts_with('/') {
            return Some(vec![normalize(&[], reading)]);
        }
        let relative = self.base.as_ref().map(|base| normalize(base, reading));
        if looks_like_drive(reading) {
            // `C:/...`: absolute on Windows, under no Unix directory; on
            // Unix a relative path (`f:` a plain name), taken from the base
            // when there is one.
            let drive = normalize(&[], &format!("/{reading}"));
            return Some(std::iter::once(drive).chain(relative).collect());
        }
        relative.map(|components| vec![components])
    }
}

/// `dir` as normalized components, or why it cannot be a directory of a
/// policy.
fn absolute(dir: &str) -> Result<Vec<String>, String> {
    if !dir.starts_with('/') {
        return Err(format!("`{dir}` is not an absolute path"));
    }
    Ok(normalize(&[], dir))
}

/// `path`'s components after `base`'s, with `.` dropped and `..` taking
/// one off (never above the root: `/..` is `/`).
fn normalize(base: &[String], path: &str) -> Vec<String> {
    let mut components: Vec<String> = base.to_vec();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                components.pop();
            }
            other => components.push(other.to_owned()),
        }
    }
    components
}

fn looks_like_drive(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// Every reading a server might make of `value`, the value itself first;
/// `None` when percent-decoding it does not settle within
/// [`DECODE_ROUNDS`] (a server that decodes once more would read a path
/// nexo never saw).
fn readings(value: &str) -> Option<Vec<String>> {
    let mut readings: Vec<String> = Vec::with_capacity(4);
    let mut push = |reading: String| {
        if !readings.contains(&reading) {
            readings.push(reading);
        }
    };
    let base = match file_url_path(value) {
        Some(path) => path,
        None => value.to_owned(),
    };
    push(base.clone());
    let decoded = decode_fully(&base);
    if percent_decode_str(&decoded).decode_utf8_lossy() != decoded {
        return None;
    }
    for text in [base, decoded] {
        let folded: String = text.nfkc().collect();
        for form in [text, folded] {
            let slashed = form.replace('\\', "/");
            push(form);
            push(slashed);
        }
    }
    Some(readings)
}

/// The path of a `file:` URL (`file:///etc/passwd`, `file://localhost/x`);
/// any other host is kept in the path so that it cannot be mistaken for a
/// local file inside a directory.
fn file_url_path(value: &str) -> Option<String> {
    let scheme = value.get(..5)?;
    if !scheme.eq_ignore_ascii_case("file:") {
        return None;
    }
    match url::Url::parse(value) {
        Ok(url) => match url.host_str() {
            None | Some("" | "localhost") => Some(decode_fully(url.path())),
            Some(host) => Some(format!("//{host}{}", url.path())),
        },
        Err(_) => Some(value[5..].to_owned()),
    }
}

/// How many times over a value is percent-decoded.
const DECODE_ROUNDS: usize = 8;

/// Percent-decoding repeated until nothing changes (`%252e` is `%2e` is
/// `.`), [`DECODE_ROUNDS`] at most.
fn decode_fully(text: &str) -> String {
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    for _ in 0..DECODE_ROUNDS {
        let decoded = percent_decode_str(&current)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == current {
            break;
        }
        current = Cow::Owned(decoded);
    }
    current.into_owned()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    fn work() -> Dirs {
        Dirs::new(&["/srv/work".to_owned()], Some("/srv/work")).unwrap()
    }

    #[test]
    fn paths_inside_stay_inside() {
        for path in [
            "/srv/work/a.txt",
            "/srv/work/./sub/../b.txt",
            "sub/c.txt",
            "/srv/work",
            "file:///srv/work/d.txt",
        ] {
            assert!(work().place(path).inside, "{path}");
        }
    }

    #[test]
    fn every_escape_is_outside() {
        for path in [
            "/srv/work/../../etc/passwd",
            "../etc/passwd",
            "/srv/workspace/x",
            "/srv/work/%2e%2e/%2e%2e/etc/passwd",
            "/srv/work/%252e%252e/secret",
            "/srv/work\\..\\..\\etc\\passwd",
            "/srv/work/．．/．．/etc",
            "file:///etc/passwd",
            "file:///srv/work/%2e%2e/x",
            "file://evil.example/srv/work/x",
            "~/.ssh/id_rsa",
            "C:\\Windows\\system32",
            "/srv/work/a\0b",
        ] {
            let placement = work().place(path);
            assert!(!placement.inside, "{path}: {}", placement.detail);
        }
    }

    #[test]
    fn relative_paths_without_a_base_are_outside() {
        let dirs = Dirs::new(&["/srv/work".to_owned()], None).unwrap();
        assert!(!dirs.place("a.txt").inside);
        assert!(Dirs::new(&["srv".to_owned()], None).is_err());
    }
}
