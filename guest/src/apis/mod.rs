//! The `host` object the JS prelude is called with: the native functions
//! through which the prelude reaches the host's WIT imports, one module per
//! JS API, each with a `register` that puts its natives on `host`.
//!
//! - [`calls`]: `forge.callTool` and `forge.readResource`, and the promises
//!   of the calls in flight, which the engine settles as the host completes
//!   them.
//! - [`stash`]: the natives of `forge.stash`.
//! - [`manifest`]: the natives of the `manifest` global.
//! - [`logging`]: `console` and `forge.log`.
//! - [`random`]: `Math.random`, reseeded from `wasi:random` for every run.
//! - [`timers`]: web timers, `performance.now`, cancelling an operation.
//! - [`web`]: `TextEncoder`/`TextDecoder`, `crypto`.
//! - [`url`]: `URL` and `URLSearchParams`, over the `url` crate.
//! - [`intl`]: `Intl` and `toLocaleString`, over ICU4X.
//!
//! `callTool` and `readResource` are the script's API as they are: they check
//! their arguments, encode them, and return a promise that settles when the
//! host completes the call, rejected with a `ForgeError` on any failure. The
//! synchronous natives (stash, manifest) throw a failure as a
//! `[code, message, retryable, suggestion]` array, which the prelude turns
//! into a `ForgeError`. Both ways of failing, and the prelude's `ForgeError`
//! factory behind the first, live here, shared by the API modules.

use std::cell::RefCell;
use std::ptr::NonNull;

use rquickjs::{Array, Ctx, Error, Function, Object, Persistent, Result, Value, qjs};

use crate::quickforge::sandbox::types::{Code, ErrorCode, ForgeError};

mod calls;
mod intl;
mod logging;
mod manifest;
mod random;
mod stash;
mod timers;
mod url;
mod web;

pub use calls::{calls_asked, in_flight, settle};
pub use random::reseed;

/// Starts a run: clocks, counters and per-run settings of the API modules.
pub fn begin(max_parallel: u32, time_zone: Option<String>) {
    calls::begin(max_parallel);
    timers::begin();
    intl::begin(time_zone);
}

thread_local! {
    /// The prelude's `ForgeError` factory, set once the prelude has run.
    static MAKE_ERROR: RefCell<Option<Persistent<Function<'static>>>> = const { RefCell::new(None) };
    /// The prelude's `shield`, set once the prelude has run.
    static SHIELD: RefCell<Option<Persistent<Function<'static>>>> = const { RefCell::new(None) };
    /// The hooks `web.js` returned (`fireTimer`, `withSignal`), set once it
    /// has run.
    static WEB_HOOKS: RefCell<Option<Persistent<Object<'static>>>> = const { RefCell::new(None) };
}

/// Records the hooks `web.js` returned, for the natives to call.
pub fn set_web_hooks<'js>(ctx: &Ctx<'js>, hooks: Object<'js>) {
    WEB_HOOKS.with(|h| *h.borrow_mut() = Some(Persistent::save(ctx, hooks)));
}

/// The `web.js` hook named `name`.
fn web_hook<'js>(ctx: &Ctx<'js>, name: &str) -> Result<Function<'js>> {
    let hooks = WEB_HOOKS
        .with(|h| h.borrow().clone())
        .expect("web.js has run");
    hooks.restore(ctx)?.get(name)
}

/// Builds the `host` object the prelude is called with.
pub fn host_object<'js>(ctx: &Ctx<'js>) -> Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;
    calls::register(ctx, &host)?;
    stash::register(ctx, &host)?;
    manifest::register(ctx, &host)?;
    logging::register(ctx, &host)?;
    random::register(ctx, &host)?;
    timers::register(ctx, &host)?;
    web::register(ctx, &host)?;
    url::register(ctx, &host)?;
    intl::register(ctx, &host)?;
    // The codes the prelude reports itself, from the shared list.
    let codes = Object::new(ctx.clone())?;
    codes.set(
        "invalidArgument",
        crate::codes::known(ErrorCode::InvalidArgument),
    )?;
    codes.set("thrown", crate::codes::known(ErrorCode::Thrown))?;
    let all: Vec<String> = crate::codes::every().map(crate::codes::known).collect();
    codes.set("all", all)?;
    host.set("codes", codes)?;
    Ok(host)
}

/// `err` as the array the prelude's `native` wrapper turns into a `ForgeError`.
fn forge_error_value<'js>(ctx: &Ctx<'js>, err: ForgeError) -> Result<Value<'js>> {
    let arr = Array::new(ctx.clone())?;
    arr.set(0, crate::codes::text(&err.code))?;
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

/// Records the prelude's `shield` (see `prelude.js`), which every value a
/// call's promise resolves with passes first.
pub fn set_shield<'js>(ctx: &Ctx<'js>, shield: Function<'js>) {
    SHIELD.with(|m| *m.borrow_mut() = Some(Persistent::save(ctx, shield)));
}

/// `value` passed through the prelude's `shield`: given an own
/// `then: undefined` when resolving a promise with it would otherwise call
/// a `then` a script put on a prototype.
fn shield<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> Result<()> {
    let shield = SHIELD
        .with(|m| m.borrow().clone())
        .expect("the prelude has run");
    shield.restore(ctx)?.call((value.clone(),))
}

/// A `ForgeError` instance for `err`.
fn forge_error_object<'js>(ctx: &Ctx<'js>, err: ForgeError) -> Result<Value<'js>> {
    let make = MAKE_ERROR
        .with(|m| m.borrow().clone())
        .expect("the prelude has run");
    make.restore(ctx)?.call((
        crate::codes::text(&err.code),
        err.message,
        err.retryable,
        err.suggestion,
    ))
}

fn usage(message: String, suggestion: Option<&str>) -> ForgeError {
    ForgeError {
        code: Code::Known(ErrorCode::InvalidArgument),
        message,
        retryable: false,
        suggestion: suggestion.map(Into::into),
    }
}

/// `raw` as an rquickjs context, for the paths that are not hot (errors,
/// the `JSON.stringify` fallback).
///
/// # Safety
/// `raw` must be the live context of the native being called.
unsafe fn with_ctx<R>(raw: *mut qjs::JSContext, f: impl for<'js> FnOnce(Ctx<'js>) -> R) -> R {
    let raw = NonNull::new(raw).expect("QuickJS passes a context");
    // SAFETY: the caller's guarantee; the lock is held while a native runs.
    f(unsafe { Ctx::from_raw(raw) })
}
