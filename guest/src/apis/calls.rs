//! `forge.callTool` and `forge.readResource`: the natives that start a host
//! operation and hand the script a promise for it, and the table of the
//! calls in flight, whose promises [`settle`] settles as the host completes
//! them.
//!
//! Every tool call goes through here, so these natives are called straight
//! from QuickJS as C functions: they borrow their string arguments and
//! create and settle their promises through QuickJS's C API, without
//! rquickjs's closure machinery.

use std::cell::RefCell;
use std::ffi::{c_char, c_int};

use rquickjs::{Ctx, Error, Object, Result, Value, qjs};

use super::{forge_error_object, usage, with_ctx};
use crate::describe::type_name;
use crate::quickforge::sandbox::calls::Completion;
use crate::quickforge::sandbox::types::ForgeError;
use crate::quickforge::sandbox::{resources, tools};

/// The resolve and reject functions of one call's promise, as references
/// this module owns until the call settles.
struct Settlers {
    id: u32,
    resolve: qjs::JSValue,
    reject: qjs::JSValue,
}

thread_local! {
    /// Tool calls this run asked for (started or refused by the host).
    static STARTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// This run's ceiling on `forge.parallel`'s concurrency.
    static MAX_PARALLEL: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
    /// Host operations started in this run and not yet completed. A short
    /// list searched by call id: it holds only what is in flight at once.
    static PENDING: RefCell<Vec<Settlers>> = const { RefCell::new(Vec::new()) };
}

/// Tool calls this run asked the host for.
pub fn calls_asked() -> u32 {
    STARTED.get()
}

/// Starts a run: no tool call asked for yet, and the run's ceiling on
/// `forge.parallel`.
pub fn begin(max_parallel: u32) {
    STARTED.set(0);
    MAX_PARALLEL.set(max_parallel.max(1));
}

/// Number of host operations started and not yet completed, timers
/// included.
pub fn in_flight() -> usize {
    PENDING.with(|p| p.borrow().len()) + super::timers::pending()
}

/// Stops waiting for call `id` (its `AbortSignal` fired): its promise is
/// never settled by the host, and its settlers are released.
pub fn forget(ctx: &Ctx<'_>, id: u32) {
    let Some(settlers) = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let i = p.iter().position(|s| s.id == id)?;
        Some(p.swap_remove(i))
    }) else {
        return;
    };
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: references this module owned, released once.
    unsafe {
        qjs::JS_FreeValue(raw, settlers.resolve);
        qjs::JS_FreeValue(raw, settlers.reject);
    }
}

/// Settles the promise of the call that `done` completes: resolved with the
/// parsed JSON, or rejected with a `ForgeError` (or the parse error).
/// Parsing and settling go through QuickJS's C API, not through `JSON` or
/// `Promise` globals a script could have replaced; resolving with an object
/// looks up its `then`, as every promise does, so the value passes the
/// prelude's `shield` first (a `then` a script put on a prototype is not
/// called).
pub fn settle(ctx: &Ctx<'_>, done: Completion) -> Result<()> {
    match super::timers::fired(done.id) {
        Some(true) => return super::web_hook(ctx, "fireTimer")?.call((f64::from(done.id),)),
        Some(false) => return Ok(()),
        None => {}
    }
    let Some(settlers) = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let i = p.iter().position(|s| s.id == done.id)?;
        Some(p.swap_remove(i))
    }) else {
        return Ok(());
    };
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context whose lock `ctx` holds; `settlers`
    // are references this module owns, released here once whatever happens;
    // `arg` is owned and released after the call.
    unsafe {
        let settled = match done.outcome {
            // QuickJS's JSON parser reads up to a terminating NUL; the host
            // sends serde_json text, which escapes every control character.
            Ok(json) => std::ffi::CString::new(json)
                .map_err(|_| Error::new_from_js("tool result", "JSON text"))
                .and_then(|text| {
                    let len = text.as_bytes().len();
                    let value =
                        qjs::JS_ParseJSON(raw, text.as_ptr(), len as _, c"<result>".as_ptr());
                    if qjs::JS_IsException(value) {
                        return Ok((settlers.reject, qjs::JS_GetException(raw)));
                    }
                    if !qjs::JS_IsObject(value) {
                        return Ok((settlers.resolve, value));
                    }
                    // The parsed value, owned by `value` until handed on.
                    let value = Value::from_raw(ctx.clone(), value);
                    super::shield(ctx, &value)?;
                    Ok((settlers.resolve, owned(value)))
                }),
            Err(e) => forge_error_object(ctx, e).map(|err| (settlers.reject, owned(err))),
        };
        let r = settled.map(|(func, mut arg)| {
            let r = qjs::JS_Call(raw, func, qjs::JS_UNDEFINED, 1, &mut arg);
            qjs::JS_FreeValue(raw, arg);
            r
        });
        qjs::JS_FreeValue(raw, settlers.resolve);
        qjs::JS_FreeValue(raw, settlers.reject);
        let r = r?;
        if qjs::JS_IsException(r) {
            return Err(Error::Exception);
        }
        qjs::JS_FreeValue(raw, r);
    }
    Ok(())
}

/// The raw reference `value` holds, now owned by the caller.
fn owned(value: Value<'_>) -> qjs::JSValue {
    let raw = value.as_raw();
    // SAFETY: the reference `value` releases on drop is replaced by this one.
    unsafe { qjs::JS_DupValue(value.ctx().as_raw().as_ptr(), raw) }
}

/// A string argument borrowed from QuickJS as UTF-8: a flat ASCII string is
/// read in place, without a copy.
struct Name {
    ctx: *mut qjs::JSContext,
    ptr: *const c_char,
    len: usize,
}

impl Name {
    /// The non-empty string in `value`, or an `INVALID_ARGUMENT` error naming
    /// `what`.
    ///
    /// # Safety
    /// `ctx` must be the live context `value` belongs to, and `value` live
    /// for as long as the returned `Name`.
    unsafe fn new(
        ctx: *mut qjs::JSContext,
        what: &str,
        value: qjs::JSValue,
    ) -> std::result::Result<Self, ForgeError> {
        // SAFETY: the caller's guarantee; a string converts without running
        // script code.
        unsafe {
            if qjs::JS_IsString(value) {
                let mut len = 0;
                let ptr = qjs::JS_ToCStringLen2(ctx, &mut len, value, false);
                if !ptr.is_null() {
                    let name = Name {
                        ctx,
                        ptr,
                        len: len as usize,
                    };
                    match name.text() {
                        Some("") => {}
                        Some(_) => return Ok(name),
                        // QuickJS encodes a lone surrogate as its own three
                        // bytes, which no UTF-8 decoder accepts.
                        None => {
                            return Err(usage(
                                format!(
                                    "{what} must be valid Unicode, not a lone UTF-16 surrogate"
                                ),
                                None,
                            ));
                        }
                    }
                } else {
                    // Out of memory: the error below replaces it.
                    qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                }
            }
            let kind = with_ctx(ctx, |c| {
                type_name(&Value::from_raw(c.clone(), qjs::JS_DupValue(ctx, value)))
            });
            Err(usage(
                format!("{what} must be a non-empty string, got {kind}"),
                None,
            ))
        }
    }

    fn text(&self) -> Option<&str> {
        // SAFETY: QuickJS returned `len` bytes at `ptr`, live until dropped.
        std::str::from_utf8(unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len) }).ok()
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.text().expect("checked in Name::new")
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        // SAFETY: taken from JS_ToCStringLen2 in `new`, released once.
        unsafe { qjs::JS_FreeCString(self.ctx, self.ptr) }
    }
}

/// Tool arguments as JSON: an object, or `{}` for `undefined`/`null`.
///
/// # Safety
/// `ctx` must be the live context `args` belongs to.
unsafe fn args_json(
    ctx: *mut qjs::JSContext,
    args: qjs::JSValue,
) -> std::result::Result<String, ForgeError> {
    // SAFETY: the caller's guarantee.
    unsafe {
        if qjs::JS_IsUndefined(args) || qjs::JS_IsNull(args) {
            return Ok("{}".into());
        }
        if let Some(json) = crate::json::encode_object(ctx, args) {
            return Ok(json);
        }
        with_ctx(ctx, |c| {
            let args = Value::from_raw(c.clone(), qjs::JS_DupValue(ctx, args));
            if !args.is_object() || args.is_array() || args.is_function() {
                return Err(usage(
                    format!("tool arguments must be an object, got {}", type_name(&args)),
                    Some("pass an object such as { query: \"...\" }"),
                ));
            }
            match c.json_stringify(args) {
                Ok(Some(s)) => s.to_string().map_err(|e| {
                    // Out of memory converting the text: the usage error
                    // replaces the exception it left.
                    if qjs::JS_HasException(ctx) {
                        qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                    }
                    usage(e.to_string(), None)
                }),
                Ok(None) => Ok("{}".into()),
                Err(_) => {
                    let exc = c.catch();
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
        })
    }
}

/// A promise for the operation `start` starts, or rejected with a
/// `ForgeError` for its refusal: `forge.*` calls report every failure
/// through their promise, never synchronously. The promise exists before
/// the operation starts, so a started operation always has one to settle.
///
/// # Safety
/// `ctx` must be the live context of the native being called.
unsafe fn started(
    ctx: *mut qjs::JSContext,
    start: impl FnOnce() -> std::result::Result<u32, ForgeError>,
) -> qjs::JSValue {
    // SAFETY: the caller's guarantee; the resolving functions are owned
    // references, kept in PENDING until `settle` releases them, or released
    // here after a refusal.
    unsafe {
        let mut funcs = [qjs::JS_UNDEFINED; 2];
        let promise = qjs::JS_NewPromiseCapability(ctx, funcs.as_mut_ptr());
        if qjs::JS_IsException(promise) {
            return promise;
        }
        let [resolve, reject] = funcs;
        let refusal = match start() {
            Ok(id) => {
                PENDING.with(|p| {
                    p.borrow_mut().push(Settlers {
                        id,
                        resolve,
                        reject,
                    })
                });
                return promise;
            }
            Err(e) => e,
        };
        let rejected = with_ctx(ctx, |c| match forge_error_object(&c, refusal) {
            Ok(err) => {
                let mut arg = err.as_raw();
                let r = qjs::JS_Call(ctx, reject, qjs::JS_UNDEFINED, 1, &mut arg);
                let ok = !qjs::JS_IsException(r);
                qjs::JS_FreeValue(ctx, r);
                ok
            }
            Err(Error::Exception) => false,
            Err(e) => {
                let _ = rquickjs::Exception::throw_internal(&c, &e.to_string());
                false
            }
        });
        qjs::JS_FreeValue(ctx, resolve);
        qjs::JS_FreeValue(ctx, reject);
        if rejected {
            promise
        } else {
            qjs::JS_FreeValue(ctx, promise);
            qjs::JS_EXCEPTION
        }
    }
}

/// The arguments QuickJS passed a native, with `undefined` past the end.
///
/// # Safety
/// `argv` must point at `argc` live values.
unsafe fn argument(argc: c_int, argv: *mut qjs::JSValue, i: usize) -> qjs::JSValue {
    if i < argc.max(0) as usize {
        // SAFETY: in bounds, per the caller's guarantee.
        unsafe { *argv.add(i) }
    } else {
        qjs::JS_UNDEFINED
    }
}

/// `forge.callTool(server, tool, args?, options?)`, called straight from
/// QuickJS: this is the hot path of every tool call, so it borrows its names
/// and settles its promise without rquickjs's closure machinery. Missing
/// arguments reject like wrong ones. Only a call given `options` (an
/// `AbortSignal`) goes through JS, to race the call against it.
unsafe extern "C" fn call_tool(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: c_int,
    argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS calls natives with their live context and arguments.
    unsafe {
        let arg = |i| argument(argc, argv, i);
        let mut id = 0;
        let promise = started(ctx, || {
            let server = Name::new(ctx, "server", arg(0))?;
            if !qjs::JS_IsString(arg(1))
                && let Some((s, t)) = server.split_once('.')
            {
                return Err(usage(
                    format!(
                        "forge.callTool takes the server and the tool as two strings, \
                         got {:?} and no tool name",
                        &*server
                    ),
                    Some(&format!("did you mean forge.callTool({s:?}, {t:?}, args)?")),
                ));
            }
            let tool = Name::new(ctx, "tool", arg(1))?;
            let args = args_json(ctx, arg(2))?;
            STARTED.set(STARTED.get() + 1);
            let started = tools::start_call(&server, &tool, &args);
            if let Ok(started) = started {
                id = started;
            }
            started
        });
        let options = arg(3);
        if qjs::JS_IsUndefined(options) || qjs::JS_IsException(promise) {
            return promise;
        }
        // `{ signal }`: the prelude's hook races the call against it.
        with_ctx(ctx, |c| {
            let promise = Value::from_raw(c.clone(), promise);
            let options = Value::from_raw(c.clone(), qjs::JS_DupValue(ctx, options));
            let wrapped = super::web_hook(&c, "withSignal")
                .and_then(|hook| hook.call::<_, Value>((promise, options, f64::from(id))));
            match wrapped {
                Ok(v) => owned(v),
                Err(_) => qjs::JS_EXCEPTION,
            }
        })
    }
}

/// `forge.readResource(server, uri)`; see [`call_tool`].
unsafe extern "C" fn read_resource(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: c_int,
    argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS calls natives with their live context and arguments.
    unsafe {
        let arg = |i| argument(argc, argv, i);
        started(ctx, || {
            let server = Name::new(ctx, "server", arg(0))?;
            let uri = Name::new(ctx, "uri", arg(1))?;
            resources::start_read(&server, &uri)
        })
    }
}

type RawNative = unsafe extern "C" fn(
    *mut qjs::JSContext,
    qjs::JSValue,
    c_int,
    *mut qjs::JSValue,
) -> qjs::JSValue;

/// A JS function object for `native`, named `name`, declaring `length`
/// parameters.
fn raw_function<'js>(
    ctx: &Ctx<'js>,
    native: RawNative,
    name: &std::ffi::CStr,
    length: c_int,
) -> Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context `ctx` holds; the new reference is
    // handed to the returned `Value`.
    unsafe {
        let f = qjs::JS_NewCFunction2(
            raw,
            Some(native),
            name.as_ptr(),
            length,
            qjs::JSCFunctionEnum_JS_CFUNC_generic,
            0,
        );
        if qjs::JS_IsException(f) {
            return Err(Error::Exception);
        }
        Ok(Value::from_raw(ctx.clone(), f))
    }
}

/// Puts `callTool`, `readResource` and `cancel` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    // `cancel(id)`: stop waiting for a call (its `AbortSignal` fired) or a
    // timer (cleared); the host drops it.
    host.set(
        "cancel",
        rquickjs::Function::new(ctx.clone(), |ctx: Ctx<'js>, id: f64| {
            // Ids are u32s that crossed as numbers (see `timerStart`).
            let id = id as u32;
            if super::timers::fired(id).is_none() {
                forget(&ctx, id);
            }
            crate::quickforge::sandbox::calls::cancel(id);
        })?,
    )?;
    // `maxParallel()`: the host's ceiling on `forge.parallel`'s concurrency
    // for this run (read per run: the prelude is snapshotted before any).
    host.set(
        "maxParallel",
        rquickjs::Function::new(ctx.clone(), || MAX_PARALLEL.get())?,
    )?;
    host.set("callTool", raw_function(ctx, call_tool, c"callTool", 3)?)?;
    host.set(
        "readResource",
        raw_function(ctx, read_resource, c"readResource", 2)?,
    )?;
    Ok(())
}
