//! `init --apply` and `init --undo`: the client's file pointed at quickforge,
//! with the original kept byte for byte next to it as
//! `<file>.quickforge-backup`, and put back from there.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::parse::project_entries;
use super::paths::{Client, Places};
use super::snippet::{ENTRY, Entry, pretty};
use crate::files::{self, write_atomic};

/// Where `file`'s original is kept.
pub(super) fn backup_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".quickforge-backup");
    PathBuf::from(name)
}

/// Refuses an `--apply` that would write through a link (the client's
/// file, or its backup's name) or lose an earlier backup.
pub(super) fn check(file: &Path) -> Result<(), String> {
    let backup = backup_of(file);
    files::refuse_link(file).map_err(|e| e.to_string())?;
    files::refuse_link(&backup).map_err(|e| e.to_string())?;
    if files::occupied(&backup) {
        return Err(format!(
            "{} already exists (from an earlier --apply); run `quickforge init --undo` first, or move it away",
            backup.display()
        ));
    }
    Ok(())
}

/// Rewrites `file` (whose content is `original`) so the client runs only
/// quickforge, after saving the original as its backup. Refuses when a
/// backup is already there: it holds the config from before an earlier
/// `--apply`, and overwriting it would lose that. Neither file is written
/// through a link.
pub(super) fn apply(
    file: &Path,
    original: &str,
    entry: &Entry<'_>,
    places: &Places,
) -> Result<PathBuf, String> {
    check(file)?;
    let backup = backup_of(file);
    let rewritten = rewrite(entry, original, places)?;
    files::write_new(&backup, original.as_bytes()).map_err(|e| e.to_string())?;
    if let Err(e) = write_atomic(file, rewritten.as_bytes()) {
        let _ = std::fs::remove_file(&backup);
        return Err(e.to_string());
    }
    Ok(backup)
}

/// Puts `file`'s backup back in place, byte for byte, and removes it. A
/// backup that is a link is refused, not read: restoring it would copy
/// whatever it points at into the client's file.
pub(super) fn undo(file: &Path) -> Result<(), String> {
    let backup = backup_of(file);
    let bytes = files::read(&backup).map_err(|e| match e {
        files::FileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            format!(
                "no backup to restore at {} ({source}); `--undo` restores what `--apply` saved",
                backup.display()
            )
        }
        e => e.to_string(),
    })?;
    write_atomic(file, &bytes).map_err(|e| e.to_string())?;
    std::fs::remove_file(&backup).map_err(|e| {
        format!(
            "restored {}, but could not remove {}: {e}",
            file.display(),
            backup.display()
        )
    })
}

/// `original` with its servers replaced by quickforge's entry; everything
/// else of the file kept (JSON re-indented, TOML as it was).
fn rewrite(entry: &Entry<'_>, original: &str, places: &Places) -> Result<String, String> {
    if entry.client == Client::Codex {
        let mut doc: toml_edit::DocumentMut = original
            .parse()
            .map_err(|e| format!("not valid TOML: {e}"))?;
        let mut servers = toml_edit::Table::new();
        servers.set_implicit(true);
        servers.insert(ENTRY, toml_edit::Item::Table(entry.codex()));
        doc.insert("mcp_servers", toml_edit::Item::Table(servers));
        return Ok(doc.to_string());
    }
    let mut root: Map<String, Value> =
        serde_json::from_str(original).map_err(|e| format!("not plain JSON: {e}"))?;
    let key = if entry.client == Client::Vscode {
        "servers"
    } else {
        "mcpServers"
    };
    root.insert(key.into(), json!({ ENTRY: entry.json() }));
    if entry.client == Client::ClaudeCodeUser
        && project_entries(&root, &places.project).next().is_some()
    {
        // The project's local servers are behind quickforge now.
        let project = places.project.to_string_lossy().into_owned();
        if let Some(p) = root
            .get_mut("projects")
            .and_then(|p| p.get_mut(&project))
            .and_then(Value::as_object_mut)
        {
            p.insert("mcpServers".into(), json!({}));
        }
    }
    Ok(pretty(&Value::Object(root)))
}
