//! `write_report`: the one write seed 004 allows (its WF-03). A report is
//! created in the first allowed directory as
//! `SENTINEL_REPORT_YYYYMMDD.md`, or `SENTINEL_REPORT_YYYYMMDD_NN.md` (`01`
//! to `99`) when that name is taken. It never overwrites: each name is
//! created with `O_CREAT|O_EXCL` beneath the root's handle, which also
//! refuses to follow a symbolic link planted under the name.

use std::io::Write;

use cap_std::fs::{OpenOptions, OpenOptionsExt};
use jiff::civil::Date;

use crate::error::FsError;
use crate::roots::Root;

/// The report names for `date`, in the order they are tried.
pub fn names(date: Date) -> impl Iterator<Item = String> {
    let day = date.strftime("%Y%m%d").to_string();
    std::iter::once(format!("SENTINEL_REPORT_{day}.md"))
        .chain((1..=99).map(move |n| format!("SENTINEL_REPORT_{day}_{n:02}.md")))
}

/// Writes `content` as a new report in `root`; returns its name.
pub fn write_report(root: &Root, content: &str, date: Date, limit: u64) -> Result<String, FsError> {
    let size = content.len() as u64;
    if size > limit {
        return Err(FsError::ReportTooLarge { size, limit });
    }
    if content.contains('\0') {
        return Err(FsError::InvalidArgument(
            "the report holds a NUL byte; a report is Markdown text".to_owned(),
        ));
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o644);
    for name in names(date) {
        let mut file = match root.dir.open_with(&name, &options) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(FsError::from_io(&error, &name)),
        };
        if let Err(error) = file.write_all(content.as_bytes()) {
            // A partial report is worse than none: take it away again.
            let _ = root.dir.remove_file(&name);
            return Err(FsError::from_io(&error, &name));
        }
        return Ok(name);
    }
    Err(FsError::ReportNamesTaken {
        date: date.to_string(),
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;
    use crate::roots::Roots;

    #[test]
    fn reports_take_the_next_free_name_and_never_overwrite() {
        let base = tempfile::tempdir().unwrap();
        let roots = Roots::open(&[base.path().to_owned()]).unwrap();
        let root = &roots.0[0];
        let date = Date::constant(2026, 2, 4);
        std::os::unix::fs::symlink(
            "/nonexistent-target",
            base.path().join("SENTINEL_REPORT_20260204_01.md"),
        )
        .unwrap();
        assert_eq!(
            write_report(root, "# one", date, 100).unwrap(),
            "SENTINEL_REPORT_20260204.md"
        );
        assert_eq!(
            write_report(root, "# two", date, 100).unwrap(),
            "SENTINEL_REPORT_20260204_02.md"
        );
        let first =
            std::fs::read_to_string(base.path().join("SENTINEL_REPORT_20260204.md")).unwrap();
        assert_eq!(first, "# one");
        assert!(!std::path::Path::new("/nonexistent-target").exists());

        let error = write_report(root, "too long", date, 3).unwrap_err();
        assert_eq!(error.code().as_str(), "too_large");
        for name in names(date) {
            let path = base.path().join(name);
            if path.symlink_metadata().is_err() {
                std::fs::write(path, "taken").unwrap();
            }
        }
        let error = write_report(root, "# late", date, 100).unwrap_err();
        assert_eq!(error.code().as_str(), "limit_exceeded");
    }
}
