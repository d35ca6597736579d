//! The source digest of `edge/dist/`: which files decide the composed
//! component, and their SHA-256. Compiled by the compose tool (which writes
//! `edge/dist/SOURCE_DIGEST`) and by the root `build.rs` (which checks it
//! under `QUICKFORGE_CHECK_DIST=1`), so both hash exactly the same way.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The composed component, relative to the repository root.
pub const DIST_WASM: &str = "edge/dist/quickforge_edge.wasm";
/// The composed component whose stash lives in `wasi:keyvalue`.
#[allow(dead_code)] // the root build.rs compiles this file too and reads only the digest
pub const DIST_WASM_KEYVALUE: &str = "edge/dist/quickforge_edge_keyvalue.wasm";
/// Its recorded digest, relative to the repository root.
pub const DIST_DIGEST: &str = "edge/dist/SOURCE_DIGEST";

/// Files and directories (relative to the root) whose content decides the
/// composed component: the edge crates and their lockfile, both WIT
/// packages, the committed guest itself, and the host sources the provider
/// and front compile (the filters, catalog and core crates,
/// `forge.d.ts`).
const INPUTS: &[&str] = &[
    "edge/Cargo.toml",
    "edge/Cargo.lock",
    "edge/provider",
    "edge/redactor",
    "edge/front",
    "edge/compose",
    "wit/sandbox.wit",
    "wit/edge",
    "guest/dist/quickforge_guest.wasm",
    "host/forge.d.ts",
    "host/core/Cargo.toml",
    "host/core/src",
    "host/catalog/Cargo.toml",
    "host/catalog/src",
    "host/filters/Cargo.toml",
    "host/filters/src",
    "host/filters/rules",
];

/// Every input file under `root`, sorted; `target` directories are skipped.
pub fn edge_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for input in INPUTS {
        collect(&root.join(input), &mut files);
    }
    files.sort();
    files
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        collect(&p, files);
    }
}

/// SHA-256 over each file's path (relative, `/`-separated) and content; a
/// text file's CRLF is folded to LF so a Windows checkout hashes the same.
pub fn digest(root: &Path, files: &[PathBuf]) -> String {
    let mut hasher = Sha256::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = fs::read(file).unwrap_or_default();
        let content = match String::from_utf8(bytes) {
            Ok(text) => text.replace("\r\n", "\n").into_bytes(),
            Err(e) => e.into_bytes(),
        };
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    hex::encode(hasher.finalize())
}
