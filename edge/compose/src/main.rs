//! Builds quickforge's edge components: the provider, redactor and front
//! crates for `wasm32-wasip2`, the redactor pre-initialized with Wizer
//! (`preinit.rs`), composed with the committed guest
//! (`guest/dist/quickforge_guest.wasm`) as redactor → provider → guest → front into
//! `wasi:http` components, written to `edge/dist/` with their source
//! digest: `quickforge_edge.wasm` (runs in any `wasi:http` runtime; the
//! stash lives for one request) and `quickforge_edge_keyvalue.wasm` (the
//! provider built with its `keyvalue` feature: it also imports
//! `wasi:keyvalue/store` and keeps the stash there between requests).
//!
//! ```text
//! cargo run --manifest-path edge/Cargo.toml -p quickforge-edge-compose            # build, compose, write edge/dist/
//! cargo run --manifest-path edge/Cargo.toml -p quickforge-edge-compose -- check   # is edge/dist/ current?
//! cargo run --manifest-path edge/Cargo.toml -p quickforge-edge-compose -- inspect FILE.wasm
//! ```
//!
//! wac-graph as a library rather than the `wac` CLI: one `cargo run` with
//! no other tool to install, and the wiring below is checked by the same
//! type checker `wac compose` uses.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions, NodeId, PackageId};

mod digest;
mod preinit;

/// The guest's interfaces the provider exports, in the order the guest
/// imports them.
const SANDBOX: &[&str] = &[
    "types",
    "calls",
    "tools",
    "resources",
    "stash",
    "manifest",
    "logging",
];
/// The version of the `quickforge:sandbox` WIT package.
const SANDBOX_VERSION: &str = "0.1.0";
/// The root-level types the guest's and front's `run` use. wac does not
/// infer these from the interfaces; they are passed explicitly.
const RUN_TYPES: &[&str] = &["run-options", "outcome", "script-error"];
/// The front's export, the composition's one export.
const INCOMING: &str = "wasi:http/incoming-handler@0.2.12";
/// The provider's empty environment, plugged into the guest's and the
/// front's imports of the interface (whatever `wasi:cli` version each was
/// built against) so neither the JS sandbox nor the component that parses
/// the client's requests sees the runtime's environment: the downstream
/// credentials and the bearer token live there. Only the provider reads it.
const EMPTY_ENVIRONMENT: &str = "wasi:cli/environment@0.2.12";
/// An import of the environment, any version.
const ENVIRONMENT_PREFIX: &str = "wasi:cli/environment@";
/// The redactor's exports, the provider's imports of them: redaction and
/// the sanitizer, both in the redactor's pre-initialized snapshot.
const REDACT: &str = "quickforge:edge/redact@0.1.0";
/// See [`REDACT`].
const SANITIZE: &str = "quickforge:edge/sanitize@0.1.0";

fn main() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().context("finding the repository root")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("build") => build(&root),
        Some("check") => check(&root),
        Some("inspect") => {
            let file = args.get(1).context("inspect needs a .wasm file")?;
            inspect(Path::new(file))
        }
        Some(other) => bail!("unknown command {other:?}: use build, check or inspect FILE"),
    }
}

/// Builds the crates, composes both components, and writes `edge/dist/`.
fn build(root: &Path) -> Result<()> {
    let edge = root.join("edge");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| edge.join("target"));
    let built = target.join("wasm32-wasip2/release");
    // The provider twice: one build overwrites the other's output, so each
    // is read before the next build.
    cargo_build(&edge, &target, &["-p", "quickforge-edge-front"])?;
    let front = std::fs::read(built.join("quickforge_edge_front.wasm"))?;
    cargo_build(&edge, &target, &["-p", "quickforge-edge-redactor"])?;
    let redactor =
        preinit::pre_initialize(&std::fs::read(built.join("quickforge_edge_redactor.wasm"))?)?;
    let mut written = Vec::new();
    for (features, dist) in [
        (None, digest::DIST_WASM),
        (Some("keyvalue"), digest::DIST_WASM_KEYVALUE),
    ] {
        let mut args = vec!["-p", "quickforge-edge-provider"];
        if let Some(f) = features {
            args.extend(["--features", f]);
        }
        cargo_build(&edge, &target, &args)?;
        let provider = std::fs::read(built.join("quickforge_edge_provider.wasm"))?;
        let guest = std::fs::read(root.join("guest/dist/quickforge_guest.wasm"))
            .context("reading guest/dist/quickforge_guest.wasm")?;
        let bytes = compose(redactor.clone(), provider, guest, front.clone())?;
        let dist = root.join(dist);
        std::fs::create_dir_all(dist.parent().unwrap())?;
        std::fs::write(&dist, &bytes)?;
        written.push(format!("{} ({} bytes)", dist.display(), bytes.len()));
    }
    let sources = digest::edge_sources(root);
    std::fs::write(
        root.join(digest::DIST_DIGEST),
        format!("{}\n", digest::digest(root, &sources)),
    )?;
    eprintln!("wrote {}", written.join(", "));
    Ok(())
}

/// `cargo build --release --locked --target wasm32-wasip2` with `args`.
fn cargo_build(edge: &Path, target: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(edge)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
        ])
        .args(args)
        .env("CARGO_TARGET_DIR", target)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!(
            "building the edge crates for wasm32-wasip2 failed (is the target installed? `rustup target add wasm32-wasip2`)"
        );
    }
    Ok(())
}

/// Fails when `edge/dist/SOURCE_DIGEST` does not match the sources.
fn check(root: &Path) -> Result<()> {
    let recorded = std::fs::read_to_string(root.join(digest::DIST_DIGEST)).unwrap_or_default();
    let current = digest::digest(root, &digest::edge_sources(root));
    if recorded.trim() != current {
        bail!(
            "edge/dist/ is stale: rebuild it with `cargo run --manifest-path edge/Cargo.toml -p quickforge-edge-compose`"
        );
    }
    eprintln!("edge/dist/ is current");
    Ok(())
}

/// redactor → provider → guest → front, with the front's incoming handler
/// exported.
fn compose(
    redactor: Vec<u8>,
    provider: Vec<u8>,
    guest: Vec<u8>,
    front: Vec<u8>,
) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let mut register = |name: &str, bytes: Vec<u8>| -> Result<_> {
        let package = Package::from_bytes(name, None, bytes, graph.types_mut())
            .with_context(|| format!("reading {name}"))?;
        Ok(graph.register_package(package)?)
    };
    let redactor = register("quickforge:edge-redactor", redactor)?;
    let provider = register("quickforge:edge-provider", provider)?;
    let guest = register("quickforge:guest", guest)?;
    let front = register("quickforge:edge-front", front)?;
    let guest_environment = environment_import(&graph, guest);
    let front_environment = environment_import(&graph, front);

    let redactor = graph.instantiate(redactor);
    let provider = graph.instantiate(provider);
    for name in [REDACT, SANITIZE] {
        let export = graph
            .alias_instance_export(redactor, name)
            .with_context(|| format!("the redactor does not export {name}"))?;
        graph
            .set_instantiation_argument(provider, name, export)
            .with_context(|| format!("wiring the provider's {name}"))?;
    }
    let mut sandbox: Vec<(String, NodeId)> = Vec::new();
    for name in SANDBOX {
        let full = format!("quickforge:sandbox/{name}@{SANDBOX_VERSION}");
        let node = graph
            .alias_instance_export(provider, &full)
            .with_context(|| format!("the provider does not export {full}"))?;
        sandbox.push((full, node));
    }
    let types = sandbox[0].1;
    let mut run_types = Vec::new();
    for name in RUN_TYPES {
        run_types.push((*name, graph.alias_instance_export(types, name)?));
    }

    let guest = graph.instantiate(guest);
    for (name, node) in &sandbox {
        graph
            .set_instantiation_argument(guest, name, *node)
            .with_context(|| format!("wiring the guest's {name}"))?;
    }
    for (name, node) in &run_types {
        graph
            .set_instantiation_argument(guest, name, *node)
            .with_context(|| format!("wiring the guest's type {name}"))?;
    }
    // The guest's and the front's environment come from the provider, not
    // the runtime. A component that imports none has nothing to hide.
    let empty = graph
        .alias_instance_export(provider, EMPTY_ENVIRONMENT)
        .with_context(|| format!("the provider does not export {EMPTY_ENVIRONMENT}"))?;
    if let Some(name) = &guest_environment {
        graph
            .set_instantiation_argument(guest, name, empty)
            .with_context(|| format!("wiring the guest's {name} to the provider's"))?;
    }
    let run = graph.alias_instance_export(guest, "run")?;

    let front = graph.instantiate(front);
    graph.set_instantiation_argument(front, &sandbox[0].0, types)?;
    let control = graph.alias_instance_export(provider, "quickforge:edge/control@0.1.0")?;
    graph.set_instantiation_argument(front, "quickforge:edge/control@0.1.0", control)?;
    for (name, node) in &run_types {
        graph.set_instantiation_argument(front, name, *node)?;
    }
    graph.set_instantiation_argument(front, "run", run)?;
    if let Some(name) = &front_environment {
        graph
            .set_instantiation_argument(front, name, empty)
            .with_context(|| format!("wiring the front's {name} to the provider's"))?;
    }
    let handler = graph.alias_instance_export(front, INCOMING)?;
    graph.export(handler, INCOMING)?;
    Ok(graph.encode(EncodeOptions::default())?)
}

/// The name under which `package` imports `wasi:cli/environment`, if it
/// does (any version).
fn environment_import(graph: &CompositionGraph, package: PackageId) -> Option<String> {
    let world = graph[package].ty();
    graph.types()[world]
        .imports
        .keys()
        .find(|name| name.starts_with(ENVIRONMENT_PREFIX))
        .cloned()
}

/// Prints a component's imports and exports.
fn inspect(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path)?;
    let decoded = wit_component::decode(&bytes)?;
    let resolve = decoded.resolve();
    let package = &resolve.packages[decoded.package()];
    for world in package.worlds.values() {
        let world = &resolve.worlds[*world];
        for key in world.imports.keys() {
            println!("import {}", resolve.name_world_key(key));
        }
        for key in world.exports.keys() {
            println!("export {}", resolve.name_world_key(key));
        }
    }
    Ok(())
}
