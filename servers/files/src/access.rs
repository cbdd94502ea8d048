//! Opening what a [`Target`] names, beneath its root's directory handle.
//!
//! The relative path goes to cap-std, which resolves it with
//! `openat2(RESOLVE_BENEATH)` (or component by component on kernels without
//! it): `..` above the handle, absolute symbolic links and relative ones
//! that climb out are all refused by the resolution itself, so there is no
//! window between a check and an open. Files are opened with `O_NONBLOCK`,
//! so a FIFO swapped in at the last moment cannot block, and their type is
//! then taken from the open handle (`fstat`) before a byte is read.
//!
//! Once open, the handle's real name (from `/proc/self/fd`) is checked too:
//! it must still lie under the root, outside version-control metadata, and
//! a file's real name must have an allowed extension, so that a symbolic
//! link called `notes.md` cannot serve `.env` or `.git/config`.
//!
//! A hard link is the file itself: no resolution beneath a handle, and no
//! real name, can tell that its other name lies outside every root. So a
//! regular file with more than one link is refused ([`ReadRules`]) unless
//! the server was started with `--allow-hard-links`.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, File, FileTypeExt, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};
use rustix::fs::{Mode, OFlags};

use crate::error::FsError;
use crate::extensions::{self, AllowedExtensions};
use crate::resolve::{Target, vcs_component};

/// Flags for reading a file: never block on a FIFO or device, never take a
/// terminal as the controlling one.
const READ_FLAGS: OFlags = OFlags::NONBLOCK.union(OFlags::NOCTTY);
/// Flags for a handle that only names a file, whatever its type: opening it
/// reads nothing and has no side effect on devices.
const PATH_FLAGS: OFlags = OFlags::PATH;
/// Flags for opening, through a handle that only names it, the directory
/// that handle names: for reading its entries.
const LIST_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
/// Flags for entering a subdirectory during a walk: a directory, and not
/// through a symbolic link.
const WALK_FLAGS: OFlags = OFlags::DIRECTORY.union(OFlags::NOFOLLOW);

/// Which regular files may be read or described, besides lying in a root.
#[derive(Debug, Clone, Default)]
pub struct ReadRules {
    /// The names whose contents are served (`--allow-ext`).
    pub extensions: AllowedExtensions,
    /// Serve files with more than one hard link (`--allow-hard-links`).
    pub hard_links: bool,
}

impl ReadRules {
    /// Refuses a regular file with more than one name, unless allowed.
    fn check_links(&self, target: &Target, metadata: &Metadata) -> Result<(), FsError> {
        let links = metadata.nlink();
        if metadata.is_file() && links > 1 && !self.hard_links {
            return Err(FsError::HardLink {
                path: target.shown.clone(),
                links,
            });
        }
        Ok(())
    }
}

fn options(flags: OFlags) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(flags.bits() as i32);
    options
}

/// What a file is, having followed symbolic links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl FileKind {
    pub fn of(metadata: &Metadata) -> Self {
        let file_type = metadata.file_type();
        [
            (file_type.is_file(), FileKind::File),
            (file_type.is_dir(), FileKind::Directory),
            (file_type.is_fifo(), FileKind::Fifo),
            (file_type.is_socket(), FileKind::Socket),
            (file_type.is_char_device(), FileKind::CharDevice),
            (file_type.is_block_device(), FileKind::BlockDevice),
        ]
        .into_iter()
        .find_map(|(is, kind)| is.then_some(kind))
        .unwrap_or(FileKind::Other)
    }

    /// Its name in `get_file_info`'s `type`.
    pub fn wire_name(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Directory => "directory",
            FileKind::Fifo => "fifo",
            FileKind::Socket => "socket",
            FileKind::CharDevice => "char_device",
            FileKind::BlockDevice => "block_device",
            FileKind::Other => "other",
        }
    }

    /// Its name in messages.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::File => "regular file",
            FileKind::Directory => "directory",
            FileKind::Fifo => "FIFO (named pipe)",
            FileKind::Socket => "socket",
            FileKind::CharDevice => "character device",
            FileKind::BlockDevice => "block device",
            FileKind::Other => "special file",
        }
    }
}

/// The metadata of the target, following symbolic links beneath the root.
fn stat(target: &Target) -> Result<Metadata, FsError> {
    target
        .root
        .dir
        .metadata(&target.relative)
        .map_err(|error| FsError::from_io(&error, &target.shown))
}

/// The target's directory, opened for reading its entries. The name is
/// resolved once, to a handle that reads nothing; its type is taken from
/// that handle (`fstat`), and the directory is then opened through the
/// handle itself (`openat` of `.`), so that what is read is the directory
/// that was checked, whatever is renamed meanwhile.
pub fn open_dir(target: &Target) -> Result<Dir, FsError> {
    let handle = open_path(target)?;
    let metadata = handle
        .metadata()
        .map_err(|error| FsError::from_io(&error, &target.shown))?;
    if !metadata.is_dir() {
        return Err(FsError::NotADirectory(target.shown.clone()));
    }
    let dir = rustix::fs::openat(&handle, ".", LIST_FLAGS, Mode::empty())
        .map_err(|errno| FsError::from_io(&errno.into(), &target.shown))?;
    Ok(Dir::from_std_file(std::fs::File::from(dir)))
}

/// The target's regular file, opened for reading, with its size. Refuses
/// names and real names outside the allowed extensions, files with several
/// hard links (unless allowed), and every type of file but a regular one,
/// without opening it for reading where the type is known beforehand.
pub fn open_file(target: &Target, rules: &ReadRules) -> Result<(File, u64), FsError> {
    let allowed = &rules.extensions;
    let metadata = stat(target)?;
    refuse_unless_regular(target, &metadata)?;
    rules.check_links(target, &metadata)?;
    check_extension(target, &target.relative, allowed)?;
    let file = target
        .root
        .dir
        .open_with(&target.relative, &options(READ_FLAGS))
        .map_err(|error| FsError::from_io(&error, &target.shown))?;
    let metadata = file
        .metadata()
        .map_err(|error| FsError::from_io(&error, &target.shown))?;
    refuse_unless_regular(target, &metadata)?;
    rules.check_links(target, &metadata)?;
    if let Some(real) = check_real_name(target, &file)? {
        check_extension(target, &real, allowed)?;
    }
    Ok((file, metadata.len()))
}

/// The metadata of whatever the target is, taken through a handle that
/// reads nothing (`O_PATH`): FIFOs, sockets and devices included. A regular
/// file with several hard links is refused unless `rules` allow it: its
/// size and times are already something of a file maybe outside the roots.
pub fn metadata(target: &Target, rules: &ReadRules) -> Result<Metadata, FsError> {
    let metadata = open_path(target)?
        .metadata()
        .map_err(|error| FsError::from_io(&error, &target.shown))?;
    rules.check_links(target, &metadata)?;
    Ok(metadata)
}

/// A handle that only names the target (`O_PATH`), whose real name has
/// been checked.
fn open_path(target: &Target) -> Result<File, FsError> {
    let handle = target
        .root
        .dir
        .open_with(&target.relative, &options(PATH_FLAGS))
        .map_err(|error| FsError::from_io(&error, &target.shown))?;
    check_real_name(target, &handle)?;
    Ok(handle)
}

/// Opens `name`, a directory in `parent`, without following a symbolic
/// link; `None` when it is no longer a directory (it changed meanwhile).
pub fn enter(parent: &Dir, name: &Path) -> std::io::Result<Option<Dir>> {
    const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();
    const ENOTDIR: i32 = rustix::io::Errno::NOTDIR.raw_os_error();
    match parent.open_with(name, &options(WALK_FLAGS)) {
        Ok(file) => Ok(Some(Dir::from_std_file(file.into_std()))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) if matches!(error.raw_os_error(), Some(ELOOP | ENOTDIR)) => Ok(None),
        Err(error) => Err(error),
    }
}

fn refuse_unless_regular(target: &Target, metadata: &Metadata) -> Result<(), FsError> {
    if metadata.is_dir() {
        return Err(FsError::IsADirectory(target.shown.clone()));
    }
    if !metadata.is_file() {
        return Err(FsError::NotARegularFile {
            path: target.shown.clone(),
            kind: FileKind::of(metadata).describe(),
        });
    }
    Ok(())
}

fn check_extension(
    target: &Target,
    path: &Path,
    allowed: &AllowedExtensions,
) -> Result<(), FsError> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if allowed.allows(&name) {
        Ok(())
    } else {
        Err(FsError::ExtensionNotAllowed {
            path: target.shown.clone(),
            kind: extensions::kind_of(&name),
        })
    }
}

/// The handle's real name below the root, from `/proc/self/fd`; `None`
/// where the system does not tell (the resolution beneath the handle still
/// stands). Refuses a real name outside the root or inside version-control
/// metadata.
fn check_real_name(target: &Target, handle: &impl AsRawFd) -> Result<Option<PathBuf>, FsError> {
    let link = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let Ok(real) = std::fs::read_link(link) else {
        return Ok(None);
    };
    let Ok(inside) = real.strip_prefix(&target.root.path) else {
        return Err(FsError::Escapes(target.shown.clone()));
    };
    if let Some(name) = vcs_component(inside) {
        return Err(FsError::Hidden {
            path: target.shown.clone(),
            name,
        });
    }
    Ok(Some(inside.to_owned()))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{CWD, RenameFlags, renameat_with};

    use super::*;
    use crate::error::ErrorCode;
    use crate::resolve::resolve;
    use crate::roots::Roots;

    #[test]
    fn open_dir_never_mistakes_a_directory_swapped_for_a_file() {
        let base = tempfile::tempdir().unwrap();
        let swap = base.path().join("swap");
        let other = base.path().join("other.md");
        std::fs::create_dir(&swap).unwrap();
        std::fs::write(&other, "x").unwrap();
        let roots = Roots::open(&[base.path().to_owned()]).unwrap();
        let target = resolve(&roots, "swap").unwrap();

        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    renameat_with(CWD, &swap, CWD, &other, RenameFlags::EXCHANGE).unwrap();
                }
            })
        };
        let mut seen = (0, 0);
        let unexpected: Vec<ErrorCode> = (0..20_000)
            .filter_map(|_| match open_dir(&target) {
                Ok(_) => {
                    seen.0 += 1;
                    None
                }
                Err(FsError::NotADirectory(_)) => {
                    seen.1 += 1;
                    None
                }
                Err(error) => Some(error.code()),
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(
            unexpected.is_empty(),
            "`swap` always exists, as a directory or a file, yet {} opens failed (first: {:?}) \
             beside {seen:?} directories and files",
            unexpected.len(),
            unexpected.first()
        );
    }
}
