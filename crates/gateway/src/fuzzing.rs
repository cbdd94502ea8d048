//! The policy's path matcher under a fuzzer (`fuzz/fuzz_targets/path.rs`
//! calls [`path_matcher`]; the committed corpus is replayed by this
//! module's test). The invariant: a path the matcher places inside its
//! directories is inside them however a server reads it (as written,
//! percent-decoded until nothing changes, backslashes as separators,
//! full-width lookalikes folded), each reading normalized by a reference
//! written from the rules alone; and no input panics.

use unicode_normalization::UnicodeNormalization;

use crate::policy::path::Dirs;

const DIR: &str = "/srv/data";
const BASE: &str = "/srv/data/work";

/// One fuzz input: an argument's value.
pub fn path_matcher(data: &[u8]) {
    let value = String::from_utf8_lossy(data);
    let Ok(dirs) = Dirs::new(&[DIR.to_owned()], Some(BASE)) else {
        return;
    };
    let placed = dirs.place(&value);
    // A `file:` URL is read by its own rules; only the other readings
    // are checked here.
    if !placed.inside
        || value
            .get(..5)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file:"))
    {
        return;
    }
    for reading in readings(&value) {
        assert!(
            inside(&reading),
            "{value:?} was placed inside {DIR}, but read as {reading:?} it is not"
        );
    }
}

/// The readings a server might make of `value`.
fn readings(value: &str) -> Vec<String> {
    let mut decoded = value.to_owned();
    loop {
        let next = percent_encoding::percent_decode_str(&decoded)
            .decode_utf8_lossy()
            .into_owned();
        if next == decoded {
            break;
        }
        decoded = next;
    }
    let mut readings = Vec::new();
    for text in [value.to_owned(), decoded] {
        for form in [text.clone(), text.nfkc().collect::<String>()] {
            readings.push(form.replace('\\', "/"));
            readings.push(form);
        }
    }
    readings
}

/// Whether `path`, resolved against the base and normalized, is in `DIR`.
fn inside(path: &str) -> bool {
    let full = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{BASE}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in full.split('/') {
        match part {
            "" | "." => {}
            ".." => drop(parts.pop()),
            other => parts.push(other),
        }
    }
    parts.len() >= 2 && parts[0] == "srv" && parts[1] == "data"
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_paths_pass() {
        nexo_testkit::replay("path", super::path_matcher);
    }
}
