//! Builds the QuickJS guest (`guest/`) into a WebAssembly component and hands
//! it to the host as `$OUT_DIR/guest.wasm`.
//!
//! - With the wasm toolchain present (the `wasm32-wasip2` Rust target, a clang
//!   that targets wasm32, and wasi-libc headers), the guest is built from
//!   source, in release mode, in its own target dir under `OUT_DIR` (the outer
//!   build holds the lock on the outer target dir), fully offline.
//! - Otherwise the committed `guest/dist/quickforge_guest.wasm` is used, but
//!   only if `guest/dist/SOURCE_DIGEST` matches the current guest and wit
//!   sources; if not, the build fails and says what to install.
//!
//! The committed guest is pre-initialized (Wizer-snapshotted), so that any
//! host starts it without building QuickJS first; a guest built from source
//! is not. The host learns which one it got from
//! `QUICKFORGE_GUEST_PREINITIALIZED` (`1` or `0`) and pre-initializes only a
//! raw one (`host/sandbox/artifact.rs`). A build script cannot run Wizer
//! without compiling Wasmtime a second time for itself, so the snapshot for
//! `guest/dist/` is made by the host crate, in the test that also proves it
//! (`dist_guest_is_pre_initialized`).
//!
//! Environment knobs:
//! - `QUICKFORGE_GUEST=dist` uses `guest/dist/` even when the toolchain is
//!   present (how CI proves a Rust-only machine can build quickforge).
//! - `QUICKFORGE_UPDATE_DIST=1` copies a freshly built guest into `guest/dist/`
//!   with its digest; the test above, run with the same variable, then
//!   pre-initializes it in place. After changing `guest/` or `wit/`, run
//!   both at once: `QUICKFORGE_UPDATE_DIST=1 cargo test --release --lib dist_guest`.
//! - `QUICKFORGE_CHECK_DIST=1` fails the build if `guest/dist/` or
//!   `edge/dist/` (the composed edge component, built by `edge/compose`)
//!   is stale.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The edge dist's inputs and digest, shared with the tool that writes it.
#[path = "edge/compose/src/digest.rs"]
#[allow(dead_code)]
mod edge_digest;

const TARGET: &str = "wasm32-wasip2";
const DIST_WASM: &str = "guest/dist/quickforge_guest.wasm";
const DIST_DIGEST: &str = "guest/dist/SOURCE_DIGEST";
/// Where Debian's `wasi-libc` package puts its headers.
const DEBIAN_WASI_INCLUDE: &str = "/usr/include/wasm32-wasi";

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for var in [
        "QUICKFORGE_GUEST",
        "QUICKFORGE_UPDATE_DIST",
        "QUICKFORGE_CHECK_DIST",
        "WASI_SYSROOT",
        "CC_wasm32_wasip2",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let sources = guest_sources(&root);
    for path in &sources {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed=guest/src");
    println!("cargo:rerun-if-changed=guest/intl/baked");
    println!("cargo:rerun-if-changed=wit/sandbox.wit");
    println!("cargo:rerun-if-changed={DIST_WASM}");
    println!("cargo:rerun-if-changed={DIST_DIGEST}");

    let digest = source_digest(&root, &sources);
    let recorded = fs::read_to_string(root.join(DIST_DIGEST)).unwrap_or_default();
    let dist_current = recorded.trim() == digest;
    let force_dist = env::var("QUICKFORGE_GUEST").as_deref() == Ok("dist");

    if env::var("QUICKFORGE_CHECK_DIST").as_deref() == Ok("1") && !dist_current {
        fail(
            &format!(
                "guest/dist/ is stale: its SOURCE_DIGEST is {:?} but guest/ and wit/ now hash to {digest}",
                recorded.trim()
            ),
            "rebuild it with `QUICKFORGE_UPDATE_DIST=1 cargo test --release --lib dist_guest` and commit guest/dist/",
        );
    }

    if env::var("QUICKFORGE_CHECK_DIST").as_deref() == Ok("1") {
        check_edge_dist(&root);
    }

    let toolchain = if force_dist {
        Err("QUICKFORGE_GUEST=dist".to_string())
    } else {
        find_toolchain(&out)
    };
    let wasm = match toolchain {
        Ok(tc) => {
            let built = match build_guest(&root, &out, &tc) {
                Ok(built) => built,
                Err(why) if dist_current => {
                    println!("cargo:warning={why}; using the prebuilt guest/dist/ instead");
                    return use_guest(&root.join(DIST_WASM), &out, true);
                }
                Err(why) => fail(
                    &why,
                    "see the cargo output above; `cargo fetch --manifest-path guest/Cargo.toml` fetches the guest's crates",
                ),
            };
            if env::var("QUICKFORGE_UPDATE_DIST").as_deref() == Ok("1") {
                fs::copy(&built, root.join(DIST_WASM)).expect("could not write guest/dist/");
                fs::write(root.join(DIST_DIGEST), format!("{digest}\n"))
                    .expect("could not write guest/dist/");
            } else if !dist_current {
                println!(
                    "cargo:warning=guest/dist/ is stale for the current guest/ and wit/ sources; refresh it with `QUICKFORGE_UPDATE_DIST=1 cargo test --release --lib dist_guest` before committing"
                );
            }
            built
        }
        Err(missing) => {
            if !dist_current {
                fail(
                    &format!(
                        "cannot build the QuickJS guest ({missing}), and the prebuilt guest/dist/ does not match the current guest/ and wit/ sources"
                    ),
                    "install the wasm toolchain: `rustup target add wasm32-wasip2` and \
                     `apt-get install clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc llvm-19` \
                     (or set CC_wasm32_wasip2 to a wasm32-capable clang and WASI_SYSROOT to a wasi-libc sysroot)",
                );
            }
            return use_guest(&root.join(DIST_WASM), &out, true);
        }
    };
    use_guest(&wasm, &out, false);
}

/// Hands `wasm` to the host as `$OUT_DIR/guest.wasm`, saying whether it is
/// pre-initialized: the committed `guest/dist/` is (see
/// `host/sandbox/artifact.rs`), a guest built from source is not.
fn use_guest(wasm: &Path, out: &Path, pre_initialized: bool) {
    fs::copy(wasm, out.join("guest.wasm"))
        .expect("could not copy the guest component into OUT_DIR");
    println!(
        "cargo:rustc-env=QUICKFORGE_GUEST_PREINITIALIZED={}",
        u8::from(pre_initialized)
    );
}

/// What building the guest needs from this machine.
struct Toolchain {
    cc: String,
    ar: String,
    sysroot: PathBuf,
}

fn find_toolchain(out: &Path) -> Result<Toolchain, String> {
    let sysroot = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("could not run rustc: {e}"))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if !sysroot.join("lib/rustlib").join(TARGET).exists() {
        return Err(format!("the {TARGET} target is not installed"));
    }
    let cc = env::var("CC_wasm32_wasip2").unwrap_or_else(|_| "clang-19".into());
    let ar = env::var("AR_wasm32_wasip2").unwrap_or_else(|_| "llvm-ar-19".into());
    for tool in [&cc, &ar] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Err(format!("`{tool}` is not installed"));
        }
    }
    let wasi_sysroot = match env::var("WASI_SYSROOT") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => {
            // clang looks for wasip2 headers in <sysroot>/include; Debian ships
            // them under a wasm32-wasi directory, so point a sysroot at it.
            if !Path::new(DEBIAN_WASI_INCLUDE).join("stdlib.h").exists() {
                return Err(format!(
                    "wasi-libc headers are not installed ({DEBIAN_WASI_INCLUDE} is missing)"
                ));
            }
            let dir = out.join("wasi-sysroot");
            fs::create_dir_all(&dir).unwrap();
            link_sysroot_include(&dir.join("include"))?;
            dir
        }
    };
    Ok(Toolchain {
        cc,
        ar,
        sysroot: wasi_sysroot,
    })
}

#[cfg(unix)]
fn link_sysroot_include(link: &Path) -> Result<(), String> {
    if fs::read_link(link).ok().as_deref() != Some(Path::new(DEBIAN_WASI_INCLUDE)) {
        let _ = fs::remove_file(link);
        std::os::unix::fs::symlink(DEBIAN_WASI_INCLUDE, link)
            .map_err(|e| format!("could not link the wasi sysroot: {e}"))?;
    }
    Ok(())
}

/// Debian's header layout only exists on Linux; elsewhere WASI_SYSROOT must be set.
#[cfg(not(unix))]
fn link_sysroot_include(_link: &Path) -> Result<(), String> {
    Err("WASI_SYSROOT is not set".into())
}

fn build_guest(root: &Path, out: &Path, tc: &Toolchain) -> Result<PathBuf, String> {
    let guest = root.join("guest");
    let target_dir = out.join("guest-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&guest)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir)
        .env("CC_wasm32_wasip2", &tc.cc)
        .env("AR_wasm32_wasip2", &tc.ar)
        .env(
            "CFLAGS_wasm32_wasip2",
            format!("--sysroot={}", tc.sysroot.display()),
        )
        .env("RQUICKJS_SYS_NO_WASI_SDK", "1");
    // A build script's stdout is read by cargo as directives: keep the nested
    // cargo's output on stderr.
    #[cfg(unix)]
    if let Ok(fd) = std::os::fd::AsFd::as_fd(&std::io::stderr()).try_clone_to_owned() {
        cmd.stdout(std::process::Stdio::from(fd));
    }
    // The outer build's flags and target settings are not for the guest.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("could not run cargo to build the guest: {e}"))?;
    if !status.success() {
        return Err("building the QuickJS guest for wasm32-wasip2 failed".into());
    }
    Ok(target_dir
        .join(TARGET)
        .join("release/quickforge_guest.wasm"))
}

/// Every file whose content decides the guest component, sorted.
fn guest_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        root.join("guest/Cargo.toml"),
        root.join("guest/Cargo.lock"),
        root.join("guest/.cargo/config.toml"),
    ];
    collect(&root.join("guest/src"), &mut files);
    // The ICU4X data `Intl` is built against (ICU4X_DATA_DIR, set in
    // guest/.cargo/config.toml).
    collect(&root.join("guest/intl/baked"), &mut files);
    // Only the guest's own WIT: wit/edge/ is the edge components' (see
    // edge_digest), and does not change the guest.
    files.push(root.join("wit/sandbox.wit"));
    files.retain(|f| f.is_file());
    files.sort();
    files
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// SHA-256 over each source's path (relative, `/`-separated) and content,
/// with CRLF folded to LF so a Windows checkout hashes the same.
fn source_digest(root: &Path, files: &[PathBuf]) -> String {
    let mut hasher = Sha256::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let content = fs::read(file).unwrap();
        let content = String::from_utf8_lossy(&content).replace("\r\n", "\n");
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(content.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Fails the build when `edge/dist/SOURCE_DIGEST` does not match the edge's
/// sources (`QUICKFORGE_CHECK_DIST=1`, as CI runs it).
fn check_edge_dist(root: &Path) {
    let sources = edge_digest::edge_sources(root);
    for path in &sources {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let recorded = fs::read_to_string(root.join(edge_digest::DIST_DIGEST)).unwrap_or_default();
    let digest = edge_digest::digest(root, &sources);
    if recorded.trim() != digest {
        fail(
            &format!(
                "edge/dist/ is stale: its SOURCE_DIGEST is {:?} but its sources now hash to {digest}",
                recorded.trim()
            ),
            "rebuild it with `cargo run --manifest-path edge/Cargo.toml -p quickforge-edge-compose` and commit edge/dist/",
        );
    }
}

fn fail(error: &str, help: &str) -> ! {
    eprintln!("error: {error}\nhelp: {help}");
    std::process::exit(1);
}
