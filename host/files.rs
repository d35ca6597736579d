//! Every file quickforge creates, rewrites, backs up or appends to (forge.toml,
//! a client's configuration and its backup, the man pages, the cache's key
//! and compiled guest, the audit log) goes through this module, and none of
//! them is ever opened through a symbolic link in its own name.
//!
//! Why: a project can ship a dangling link where quickforge will write (say
//! `.mcp.json.quickforge-backup` pointing at `~/.bashrc`); a write that
//! follows it puts the project's bytes wherever the link points. So:
//!
//! - a file is replaced by writing a temporary file (created with `O_EXCL`
//!   by `tempfile`, in the same folder) and renaming it over the name:
//!   `rename` replaces a link, it never writes through one;
//! - a file that must not exist yet (a backup, the cache's key) is renamed
//!   into place only if the name is free (`renameat2(RENAME_NOREPLACE)` or
//!   `link`, both refuse any existing name, a dangling link included);
//! - a file read back or appended to is opened with `O_NOFOLLOW`;
//! - and when a link is in the way, the write is refused with a message
//!   that names it, rather than the link silently replaced: it was put there
//!   by someone, and the person should see it.
//!
//! Only the last component counts: the folders above may be links (a
//! symlinked `~/.cache` or `~/.config` is normal).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Why a file was not written (or read back).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file's own name is a symbolic link, dangling or not.
    #[error("refusing to {doing} {path:?}: it is a symbolic link; remove it and run again")]
    Link {
        /// `write` or `read`.
        doing: &'static str,
        /// The link.
        path: PathBuf,
    },
    /// A file that must be new is already there.
    #[error("refusing to write {path:?}: it already exists; move it away and run again")]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The system refused.
    #[error("could not {doing} {path:?}: {source}")]
    Io {
        /// `write` or `read`.
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl From<FileError> for io::Error {
    fn from(e: FileError) -> io::Error {
        let kind = match &e {
            FileError::Link { .. } => io::ErrorKind::Other,
            FileError::Exists { .. } => io::ErrorKind::AlreadyExists,
            FileError::Io { source, .. } => source.kind(),
        };
        io::Error::new(kind, e.to_string())
    }
}

fn io_error<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> FileError + 'a {
    move |source| FileError::Io {
        doing,
        path: path.to_path_buf(),
        source,
    }
}

/// Whether anything is at `path`: a file, a folder, or a link (even one
/// whose target is missing, which `Path::exists` calls absent).
pub fn occupied(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// Refuses when `path`'s last component is a symbolic link.
pub fn refuse_link(path: &Path) -> Result<(), FileError> {
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Err(FileError::Link {
            doing: "write",
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// The folder a temporary file for `path` goes in: `path`'s own, so the
/// rename stays on one file system.
fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A complete temporary file holding `bytes` next to `path`, with `mode`
/// when given (else `tempfile`'s 0600).
fn staged(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<tempfile::NamedTempFile, FileError> {
    let fail = io_error("write", path);
    let result = (|| {
        let mut tmp = tempfile::NamedTempFile::new_in(folder(path))?;
        tmp.write_all(bytes)?;
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        tmp.as_file().sync_all()?;
        Ok(tmp)
    })();
    result.map_err(fail)
}

/// Replaces (or creates) `path` with `bytes`, so a reader sees the old or
/// the new content, never half. An existing file keeps its permissions; a
/// new one is readable by its owner only (0600 on Unix), since these files
/// may name secrets. Refused when `path` is a symbolic link.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_replacing(path, bytes, None)
}

/// [`write_atomic`] for a file meant to be read by others (a man page): a
/// new one is 0644.
pub fn write_atomic_readable(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_replacing(path, bytes, Some(0o644))
}

fn write_replacing(path: &Path, bytes: &[u8], new_mode: Option<u32>) -> Result<(), FileError> {
    let existing = match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(FileError::Link {
                doing: "write",
                path: path.to_path_buf(),
            });
        }
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("write", path)(e)),
    };
    #[cfg(unix)]
    let mode = match &existing {
        Some(m) if m.is_file() => {
            use std::os::unix::fs::PermissionsExt;
            Some(m.permissions().mode() & 0o7777)
        }
        _ => new_mode,
    };
    #[cfg(not(unix))]
    let mode = {
        let _ = &existing;
        new_mode
    };
    let tmp = staged(path, bytes, mode)?;
    // rename(2) replaces the name: had a link appeared since the check
    // above, the link is what gets replaced, not its target.
    tmp.persist(path)
        .map(drop)
        .map_err(|e| io_error("write", path)(e.error))
}

/// Creates `path` with `bytes`, readable by its owner only, atomically and
/// only if nothing is there yet: an existing file, folder or link (dangling
/// or not) is refused, so nothing is overwritten or written through.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    refuse_link(path)?;
    let tmp = staged(path, bytes, None)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Err(refuse_link(path)
            .err()
            .unwrap_or_else(|| FileError::Exists {
                path: path.to_path_buf(),
            })),
        Err(e) => Err(io_error("write", path)(e.error)),
    }
}

/// Opens `path` with `options`, never through a link in its last component.
fn open_no_follow(
    path: &Path,
    options: &mut std::fs::OpenOptions,
    doing: &'static str,
) -> Result<File, FileError> {
    let link = || FileError::Link {
        doing,
        path: path.to_path_buf(),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(link());
    }
    options.open(path).map_err(|e| {
        // ELOOP also means a loop in the folders above; only a link at the
        // name itself is reported as one.
        if path
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            link()
        } else {
            io_error(doing, path)(e)
        }
    })
}

/// The content of `path`, refused when `path` is a symbolic link (a
/// backup to restore: a link there would copy whatever it names).
pub fn read(path: &Path) -> Result<Vec<u8>, FileError> {
    let mut file = open_no_follow(path, std::fs::OpenOptions::new().read(true), "read")?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(io_error("read", path))?;
    Ok(bytes)
}

/// Opens `path` for appending, creating it readable by its owner only
/// (0600 on Unix); refused when `path` is a symbolic link.
pub fn open_append(path: &Path) -> Result<File, FileError> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    open_no_follow(path, &mut options, "write")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn link(target: &Path, at: &Path) {
        std::os::unix::fs::symlink(target, at).unwrap();
    }

    /// A dangling link where a file is to be written is refused by every
    /// writer, and what it points at is never created. Reproduces: `init
    /// --apply` writing the client's file through a planted backup link.
    #[cfg(unix)]
    #[test]
    fn no_writer_follows_a_link_in_the_last_component() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        let at = dir.path().join("planted");
        link(&victim, &at);
        for result in [
            write_atomic(&at, b"x"),
            write_atomic_readable(&at, b"x"),
            write_new(&at, b"x"),
            open_append(&at).map(drop),
        ] {
            let e = result.unwrap_err();
            assert!(matches!(e, FileError::Link { .. }), "{e}");
            assert_eq!(
                e.to_string(),
                format!("refusing to write {at:?}: it is a symbolic link; remove it and run again")
            );
            assert!(!occupied(&victim));
        }
        std::fs::write(&victim, "secret").unwrap();
        assert!(matches!(
            read(&at),
            Err(FileError::Link { doing: "read", .. })
        ));
        assert!(matches!(
            write_atomic(&at, b"x"),
            Err(FileError::Link { .. })
        ));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret");
        assert!(occupied(&at));
    }

    /// Folders above may be links; files are replaced whole, keep their
    /// mode, and a new file is private; `write_new` never overwrites.
    #[cfg(unix)]
    #[test]
    fn a_linked_folder_is_fine_and_modes_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let linked = dir.path().join("linked");
        link(&real, &linked);
        let file = linked.join("forge.toml");
        write_atomic(&file, b"one").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&real.join("forge.toml")), 0o600);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&file, b"two").unwrap();
        assert_eq!(std::fs::read(real.join("forge.toml")).unwrap(), b"two");
        assert_eq!(mode(&file), 0o640);
        assert_eq!(read(&file).unwrap(), b"two");

        let backup = linked.join("backup");
        write_new(&backup, b"kept").unwrap();
        assert_eq!(mode(&backup), 0o600);
        assert!(matches!(
            write_new(&backup, b"lost"),
            Err(FileError::Exists { .. })
        ));
        assert_eq!(std::fs::read(&backup).unwrap(), b"kept");

        let mut log = open_append(&linked.join("audit.log")).unwrap();
        log.write_all(b"line\n").unwrap();
        assert_eq!(mode(&real.join("audit.log")), 0o600);
        write_atomic_readable(&linked.join("page.1"), b".TH").unwrap();
        assert_eq!(mode(&real.join("page.1")), 0o644);
    }
}
