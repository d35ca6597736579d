//! Native functions handed to the JS prelude as its `host` object: each one
//! is a thin bridge to one WIT import.
//!
//! `callTool` and `readResource` are the script's API as they are: they check
//! their arguments, encode them, and return a promise that settles when the
//! host completes the call, rejected with a `ForgeError` on any failure. The
//! synchronous natives (stash, manifest) throw a failure as a
//! `[code, message, retryable, suggestion]` array, which the prelude turns
//! into a `ForgeError`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use rquickjs::function::Opt;
use rquickjs::{Array, Ctx, Error, Function, IntoJs, Object, Persistent, Promise, Result, Value};

use crate::engine::type_name;
use crate::quickforge::sandbox::calls::Completion;
use crate::quickforge::sandbox::types::{ForgeError, LogLevel};
use crate::quickforge::sandbox::{logging, manifest, random, resources, stash, tools};

/// The resolve and reject functions of one call's promise.
type Settlers = (Persistent<Function<'static>>, Persistent<Function<'static>>);

thread_local! {
    /// The prelude's `ForgeError` factory, set once the prelude has run.
    static MAKE_ERROR: RefCell<Option<Persistent<Function<'static>>>> = const { RefCell::new(None) };
    /// Host operations started in this run and not yet completed, by call id.
    static PENDING: RefCell<HashMap<u32, Settlers>> = RefCell::new(HashMap::new());
    /// xorshift64* state behind `Math.random`; reseeded from the host per run.
    static RNG: Cell<u64> = const { Cell::new(0x9E37_79B9_7F4A_7C15) };
}

/// Number of host operations started and not yet completed.
pub fn in_flight() -> usize {
    PENDING.with(|p| p.borrow().len())
}

/// Settles the promise of the call that `done` completes: resolved with the
/// parsed JSON, or rejected with a `ForgeError`. Parsing
/// and settling go through QuickJS's C API, never through globals a script
/// could have replaced.
pub fn settle<'js>(ctx: &Ctx<'js>, done: Completion) -> Result<()> {
    let Some((resolve, reject)) = PENDING.with(|p| p.borrow_mut().remove(&done.id)) else {
        return Ok(());
    };
    match done.outcome {
        Ok(json) => match ctx.json_parse(json) {
            Ok(value) => resolve.restore(ctx)?.call((value,)),
            Err(Error::Exception) => {
                let err = ctx.catch();
                reject.restore(ctx)?.call((err,))
            }
            Err(e) => Err(e),
        },
        Err(e) => {
            let err = forge_error_object(ctx, e)?;
            reject.restore(ctx)?.call((err,))
        }
    }
}

/// Starts a run: reseeds `Math.random` from the host's entropy (the snapshot
/// froze whatever state init left behind) and forgets any earlier calls.
pub fn reseed() {
    let seed = random::seed();
    // xorshift must not start at zero.
    RNG.with(|s| {
        s.set(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    });
    PENDING.with(|p| p.borrow_mut().clear());
}

fn next_random() -> f64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        // 53 high bits of the xorshift64* output, scaled into [0, 1).
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    })
}

/// `err` as the array the prelude's `native` wrapper turns into a `ForgeError`.
fn forge_error_value<'js>(ctx: &Ctx<'js>, err: ForgeError) -> Result<Value<'js>> {
    let arr = Array::new(ctx.clone())?;
    arr.set(0, err.code)?;
    arr.set(1, err.message)?;
    arr.set(2, err.retryable)?;
    arr.set(3, err.suggestion)?;
    Ok(arr.into_value())
}

fn throw(ctx: &Ctx<'_>, err: ForgeError) -> Error {
    match forge_error_value(ctx, err) {
        Ok(v) => ctx.throw(v),
        Err(e) => e,
    }
}

/// Records the prelude's `ForgeError` factory for the natives to use.
pub fn set_make_error<'js>(ctx: &Ctx<'js>, make_error: Function<'js>) {
    MAKE_ERROR.with(|m| *m.borrow_mut() = Some(Persistent::save(ctx, make_error)));
}

/// A `ForgeError` instance for `err`.
fn forge_error_object<'js>(ctx: &Ctx<'js>, err: ForgeError) -> Result<Value<'js>> {
    let make = MAKE_ERROR
        .with(|m| m.borrow().clone())
        .expect("the prelude has run");
    make.restore(ctx)?
        .call((err.code, err.message, err.retryable, err.suggestion))
}

/// A promise already rejected with `err` as a `ForgeError`: `forge.*` calls
/// report every failure through their promise, never synchronously.
fn rejected<'js>(ctx: &Ctx<'js>, err: ForgeError) -> Result<Promise<'js>> {
    let (promise, _, reject) = ctx.promise()?;
    reject.call::<_, ()>((forge_error_object(ctx, err)?,))?;
    Ok(promise)
}

fn usage(message: String, suggestion: Option<&str>) -> ForgeError {
    ForgeError {
        code: "INVALID_ARGUMENT".into(),
        message,
        retryable: false,
        suggestion: suggestion.map(Into::into),
    }
}

/// The non-empty string in `value`, or an `INVALID_ARGUMENT` error naming `what`.
fn name_arg(what: &str, value: &Value<'_>) -> std::result::Result<String, ForgeError> {
    match value.as_string().and_then(|s| s.to_string().ok()) {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(usage(
            format!(
                "{what} must be a non-empty string, got {}",
                type_name(value)
            ),
            None,
        )),
    }
}

/// Tool arguments as JSON: an object, or `{}` for `undefined`/`null`.
fn args_json<'js>(
    ctx: &Ctx<'js>,
    args: Option<Value<'js>>,
) -> std::result::Result<String, ForgeError> {
    let args = match args {
        None => return Ok("{}".into()),
        Some(a) if a.is_undefined() || a.is_null() => return Ok("{}".into()),
        Some(a) => a,
    };
    if !args.is_object() || args.is_array() || args.is_function() {
        return Err(usage(
            format!("tool arguments must be an object, got {}", type_name(&args)),
            Some("pass an object such as { query: \"...\" }"),
        ));
    }
    if let Some(json) = crate::json::encode(ctx, &args) {
        return Ok(json);
    }
    match ctx.json_stringify(args) {
        Ok(Some(s)) => s.to_string().map_err(|e| usage(e.to_string(), None)),
        Ok(None) => Ok("{}".into()),
        Err(_) => {
            let exc = ctx.catch();
            let why = exc
                .as_object()
                .and_then(|o| o.get::<_, String>("message").ok())
                .unwrap_or_default();
            Err(usage(
                format!("tool arguments are not serializable to JSON: {why}"),
                Some("pass plain data: no BigInt, no cycles"),
            ))
        }
    }
}

/// A promise for the call the host started, or one rejected with its refusal.
fn started<'js>(ctx: &Ctx<'js>, r: std::result::Result<u32, ForgeError>) -> Result<Promise<'js>> {
    let id = match r {
        Ok(id) => id,
        Err(e) => return rejected(ctx, e),
    };
    let (promise, resolve, reject) = ctx.promise()?;
    let settlers = (
        Persistent::save(ctx, resolve),
        Persistent::save(ctx, reject),
    );
    PENDING.with(|p| p.borrow_mut().insert(id, settlers));
    Ok(promise)
}

fn level(name: &str) -> LogLevel {
    match name {
        "debug" => LogLevel::Debug,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        _ => LogLevel::Info,
    }
}

/// Builds the `host` object the prelude is called with.
pub fn host_object<'js>(ctx: &Ctx<'js>) -> Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;
    host.set(
        "callTool",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             server: Opt<Value<'js>>,
             tool: Opt<Value<'js>>,
             args: Opt<Value<'js>>| {
                // Missing arguments reject like wrong ones, rather than
                // throwing rquickjs's arity TypeError synchronously.
                let undefined = || Value::new_undefined(ctx.clone());
                let (server, tool) = (
                    server.0.unwrap_or_else(undefined),
                    tool.0.unwrap_or_else(undefined),
                );
                let call = name_arg("server", &server).and_then(|server| {
                    let tool = name_arg("tool", &tool)?;
                    let args = args_json(&ctx, args.0)?;
                    tools::start_call(&server, &tool, &args)
                });
                started(&ctx, call)
            },
        )?
        .with_name("callTool")?,
    )?;
    host.set(
        "readResource",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, server: Opt<Value<'js>>, uri: Opt<Value<'js>>| {
                let undefined = || Value::new_undefined(ctx.clone());
                let (server, uri) = (
                    server.0.unwrap_or_else(undefined),
                    uri.0.unwrap_or_else(undefined),
                );
                let read = name_arg("server", &server).and_then(|server| {
                    let uri = name_arg("uri", &uri)?;
                    resources::start_read(&server, &uri)
                });
                started(&ctx, read)
            },
        )?
        .with_name("readResource")?,
    )?;
    host.set(
        "stashPut",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, key: String, json: String, ttl: Opt<Option<f64>>| {
                let ttl = ttl.0.flatten().map(|t| t.max(1.0) as u64);
                stash::put(&key, &json, ttl).map_err(|e| throw(&ctx, e))
            },
        )?,
    )?;
    host.set(
        "stashGet",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, key: String| {
            stash::get(&key).map_err(|e| throw(&ctx, e))
        })?,
    )?;
    host.set(
        "stashDelete",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, key: String| {
            stash::delete(&key).map_err(|e| throw(&ctx, e))
        })?,
    )?;
    host.set(
        "stashKeys",
        Function::new(ctx.clone(), |ctx: Ctx<'js>| {
            let keys = stash::keys().map_err(|e| throw(&ctx, e))?;
            keys.into_js(&ctx)
        })?,
    )?;
    host.set(
        "manifestServers",
        Function::new(ctx.clone(), manifest::servers)?,
    )?;
    host.set(
        "manifestSearch",
        Function::new(ctx.clone(), |query: String, limit: u32| {
            manifest::search(&query, limit)
        })?,
    )?;
    host.set(
        "manifestTool",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, server: String, name: String| {
                manifest::tool(&server, &name).map_err(|e| throw(&ctx, e))
            },
        )?,
    )?;
    host.set(
        "log",
        Function::new(ctx.clone(), |lvl: String, line: String| {
            logging::log(level(&lvl), &line)
        })?,
    )?;
    host.set(
        "random",
        Function::new(ctx.clone(), next_random)?.with_name("random")?,
    )?;
    Ok(host)
}
