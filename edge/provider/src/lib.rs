//! quickforge at the edge, the provider: implements the guest's sandbox
//! imports (`wit/sandbox.wit`) by calling downstream MCP servers over
//! `wasi:http/outgoing-handler`, and tells the front (`control`) what it
//! needs: whether a request is authorized, the run's options, the report.
//!
//! Enforcement lives here, whatever the guest shows or hides: the mode, the
//! call budget, the argument and response caps, per-call deadlines, the
//! egress allowlist. One instance serves one request; its state is the
//! instance's own and dies with it.

#![allow(missing_docs)] // the generated bindings

/// The portable provider (the stash lives for one request), or with the
/// `keyvalue` feature the one that imports `wasi:keyvalue/store`.
#[cfg(not(feature = "keyvalue"))]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/sandbox.wit", "../../wit/edge"],
        world: "quickforge:edge/provider",
        generate_all,
    });
}
#[cfg(feature = "keyvalue")]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/sandbox.wit", "../../wit/edge"],
        world: "quickforge:edge/provider-keyvalue",
        generate_all,
    });
}

mod catalog;
mod config;
mod error;
mod http;
mod mcp;
mod redact;
mod refresh;
mod run;
mod stash_kv;

use std::cell::RefCell;

use bindings::exports::quickforge::edge::control::{self, Report};
use bindings::exports::quickforge::sandbox::{
    calls, logging, manifest, resources, stash, tools,
    types::{ForgeError as Wit, LogLevel, Mode, RunOptions},
};
use serde_json::{Value, json};

use crate::error::{ErrorCode, ForgeError};
use crate::run::Run;
use quickforge_catalog::schema;

/// QuickJS's heap cap, bytes. Edge runtimes commonly cap an instance at
/// 128 MiB; 112 leaves room for the guest's stack and static data, so an
/// allocation storm ends as a catchable out-of-memory error first.
const JS_MEMORY_LIMIT: u64 = 112 << 20;
/// Largest JSON result, bytes: the native `max_output_size`.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;
/// Most calls `forge.parallel` runs at once: the native `max_parallel`.
const MAX_PARALLEL: u32 = 64;
/// Longest script, bytes: the native `max_code_size`.
const MAX_CODE_BYTES: u32 = 64 * 1024;

thread_local! {
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
}

/// Runs `f` on this instance's run, creating it (and reading the
/// configuration) on first use.
fn with<T>(f: impl FnOnce(&mut Run) -> T) -> T {
    RUN.with(|cell| f(cell.borrow_mut().get_or_insert_with(Run::new)))
}

struct Provider;

/// A name or URI a script passed, held to the shared size bound before
/// anything looks it up, folds it or quotes it (as natively, see
/// `quickforge_core::limits::name`).
fn bounded(api: &str, what: &str, value: &str) -> Result<(), Wit> {
    quickforge_core::limits::name(api, what, value).map_err(Wit::from)
}

impl calls::Guest for Provider {
    fn next_completion() -> Option<calls::Completion> {
        with(Run::next_completion)
    }
    fn start_timer(ms: u32) -> Result<u32, String> {
        with(|r| r.start_timer(ms))
    }
    fn cancel(id: u32) {
        with(|r| r.cancel(id))
    }
}

impl tools::Guest for Provider {
    fn start_call(server: String, tool: String, args_json: String) -> Result<u32, Wit> {
        bounded("forge.callTool", "server name", &server)?;
        bounded("forge.callTool", "tool name", &tool)?;
        with(|r| {
            r.require_execute("forge.callTool")?;
            if args_json.len() > r.config.max_args {
                return Err(ForgeError::args_too_large(
                    &server,
                    &tool,
                    args_json.len(),
                    r.config.max_args,
                )
                .into());
            }
            let args: Value = match serde_json::from_str(&args_json) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    return Err(ForgeError::new(
                        ErrorCode::InvalidArgument,
                        "tool arguments must be a JSON object",
                    )
                    .into());
                }
            };
            if !r.config.manifest.is_empty() {
                // As natively: a call to a tool the manifest lacks, and
                // arguments that do not match its input schema, never reach
                // the server. The check is compiled once per tool and
                // request, as the native manifest compiles it once per
                // listing.
                let key = (server.clone(), tool.clone());
                r.ensure_manifest();
                let entry = catalog::Catalog::new(&r.config.manifest)
                    .tool(&server, &tool)
                    .map_err(Wit::from)?;
                if !r.checks.contains_key(&key) {
                    let check = entry
                        .get("inputSchema")
                        .filter(|s| s.is_object())
                        .map(schema::ArgsCheck::new);
                    r.checks.insert(key.clone(), check);
                }
                if let Some(Some(check)) = r.checks.get(&key)
                    && let Some(message) = check.mismatch(&server, &tool, &args)
                {
                    return Err(ForgeError::new(ErrorCode::InvalidArguments, message)
                        .suggest(schema::suggestion(&server, &tool))
                        .into());
                }
            }
            r.start(
                &server,
                &tool,
                "tools/call",
                json!({"name": tool, "arguments": args}),
            )
        })
    }
}

impl resources::Guest for Provider {
    fn start_read(server: String, uri: String) -> Result<u32, Wit> {
        bounded("forge.readResource", "server name", &server)?;
        bounded("forge.readResource", "resource URI", &uri)?;
        with(|r| r.start(&server, &uri, "resources/read", json!({"uri": uri})))
    }
}

impl stash::Guest for Provider {
    fn put(key: String, value_json: String, ttl_secs: Option<u64>) -> Result<(), Wit> {
        with(|r| {
            r.require_execute("forge.stash")?;
            r.require_config()?;
            r.stash.put(&key, value_json, ttl_secs)
        })
    }
    fn get(key: String) -> Result<Option<String>, Wit> {
        with(|r| {
            r.require_execute("forge.stash")?;
            r.require_config()?;
            r.stash.get(&key)
        })
    }
    fn delete(key: String) -> Result<bool, Wit> {
        with(|r| {
            r.require_execute("forge.stash")?;
            r.require_config()?;
            r.stash.delete(&key)
        })
    }
    fn keys() -> Result<Vec<String>, Wit> {
        with(|r| {
            r.require_execute("forge.stash")?;
            r.require_config()?;
            r.stash.keys()
        })
    }
}

impl manifest::Guest for Provider {
    fn servers() -> String {
        with(|r| r.catalog().servers_json().to_string())
    }
    fn search(query: String, limit: u32) -> Result<String, Wit> {
        with(|r| {
            r.catalog()
                .search(&query, limit)
                .map(|v| v.to_string())
                .map_err(Into::into)
        })
    }
    fn tool(server: String, name: String) -> Result<String, Wit> {
        bounded("manifest.tool", "server name", &server)?;
        bounded("manifest.tool", "tool name", &name)?;
        with(|r| {
            r.catalog()
                .tool(&server, &name)
                .map(Value::to_string)
                .map_err(Into::into)
        })
    }
}

impl logging::Guest for Provider {
    fn log(level: LogLevel, message: String) {
        with(|r| r.log(level, message))
    }
    fn progress(_done: f64, _total: Option<f64>, _message: Option<String>) {
        // A request/response edge endpoint has no progress channel yet.
    }
}

impl control::Guest for Provider {
    fn authorize(authorization: Option<String>) -> bool {
        with(|r| match &r.config.token {
            config::Token::None => true,
            config::Token::Bearer(token) => authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .is_some_and(|given| same(given.as_bytes(), token.as_bytes())),
            config::Token::Unusable => {
                // The runtime's log (wasi:cli/stderr): the operator's one
                // way to learn why every request gets 401.
                eprintln!("quickforge-edge: {}", config::UNUSABLE_TOKEN);
                false
            }
        })
    }
    fn begin(mode: Mode) -> Result<RunOptions, String> {
        with(|r| {
            if r.mode.is_some() {
                return Err(
                    "this instance already ran a script; a run needs a fresh instance".into(),
                );
            }
            r.mode = Some(mode);
            Ok(RunOptions {
                mode,
                js_memory_limit: JS_MEMORY_LIMIT,
                max_output_bytes: MAX_OUTPUT_BYTES,
                max_parallel: MAX_PARALLEL,
                deadline_ms: Some(r.config.timeout_ms),
                time_zone: r.config.time_zone.clone(),
            })
        })
    }
    fn max_code_bytes() -> u32 {
        MAX_CODE_BYTES
    }
    fn stash_kept() -> bool {
        with(|r| r.stash.kept())
    }
    fn use_stash(handle: String) -> Result<(), String> {
        with(|r| {
            if r.mode.is_some() {
                return Err("the stash is chosen before the run begins".into());
            }
            r.stash.open(&handle)
        })
    }
    fn finish() -> Report {
        with(Run::report)
    }
}

/// The guest's `wasi:cli/environment`, plugged in by the composition: empty,
/// so the JS sandbox holds none of the configuration (downstream
/// credentials, the bearer token). The provider reads the real environment
/// through its own import (`config.rs`), which the runtime satisfies.
impl bindings::exports::wasi::cli::environment::Guest for Provider {
    fn get_environment() -> Vec<(String, String)> {
        Vec::new()
    }
    fn get_arguments() -> Vec<String> {
        Vec::new()
    }
    fn initial_cwd() -> Option<String> {
        None
    }
}

/// Compares a presented token with the configured one in time that does
/// not depend on where they first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

bindings::export!(Provider with_types_in bindings);
