//! Writing a file so that a reader sees either the old or the new content,
//! never half of it: a temporary file in the same folder, then a rename
//! (`tempfile`'s `persist`). Used by `init` (forge.toml, a client's file) and
//! by `add`/`remove`.

use std::io::Write;
use std::path::Path;

/// Replaces (or creates) `path` with `bytes`. An existing file keeps its
/// permissions; a new one is readable by its owner only (0600 on Unix, the
/// temporary file's mode), since these files may name secrets.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
