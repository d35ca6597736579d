//! The QuickJS runtime and the life of one script.
//!
//! One runtime holds two contexts:
//!
//! - the **compiler** context has the `Eval` intrinsic and is only ever used
//!   to compile source to bytecode (`JS_EVAL_FLAG_COMPILE_ONLY`); no script
//!   code runs in it;
//! - the **sandbox** context has no `Eval` intrinsic, so `eval`, `Function`,
//!   `AsyncFunction` and `GeneratorFunction` all throw `eval is not
//!   supported`, whatever path a script takes to reach them.
//!
//! Bytecode crosses from one to the other through `JS_WriteObject` /
//! `JS_ReadObject`: reading binds the function to the sandbox realm (QuickJS
//! runs bytecode in the realm it was read into), and `JS_EvalFunction` needs
//! no eval intrinsic. Both contexts, the compiled prelude and its hooks are
//! built in [`initialize`], which runs once under Wizer.

use std::cell::RefCell;
use std::ffi::CString;
use std::ptr;

use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Promise, Runtime, Value, qjs};

use crate::apis;
use crate::deadline;
use crate::describe::type_name;
use crate::heap::{self, Heap, Refusal};
use crate::quickforge::sandbox::calls;
use crate::quickforge::sandbox::types::{
    Code, ForgeError, Outcome, RunOptions, ScriptError, ScriptErrorKind,
};

const PRELUDE: &str = include_str!("prelude.js");

/// The web-platform globals (timers, `URL`, `TextEncoder`, ...), in JS over
/// the natives of [`apis`].
const WEB: &str = include_str!("web.js");

/// `Intl` and the locale-aware built-in methods, in JS over [`apis`]'s ICU4X
/// natives.
const INTL: &str = include_str!("intl.js");

/// File name scripts are compiled under; shows in stacks and syntax errors.
const SCRIPT_NAME: &str = "script.js";

/// Intrinsics of the sandbox context. Not `Eval` (see the module docs) and
/// not `Performance` (its high-resolution clock is a side channel; `web.js`
/// defines a `performance.now` coarsened to 100 µs instead). `Proxy` is only
/// there for `forge.server` and the forgotten-`await` hint; the prelude
/// captures it and removes the global.
type SandboxIntrinsics = (
    intrinsic::Date,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

/// Intrinsics of the compiler context: parsing needs the eval machinery, and
/// regex literals are compiled at parse time.
type CompilerIntrinsics = (intrinsic::Eval, intrinsic::RegExpCompiler);

/// The contexts own the runtime (and its [`Heap`]), so they keep it alive.
struct Engine {
    compiler: Context,
    sandbox: Context,
    /// The object the prelude returned: `makeError`, `toPromise`, `isForgeError`,
    /// `promisePath`, `shield`.
    hooks: Persistent<Object<'static>>,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

/// Builds the engine if it is not built yet. Runs under Wizer, where no host
/// import may be called.
pub fn initialize() {
    ENGINE.with(|cell| {
        if cell.borrow().is_some() {
            return;
        }
        let engine = match crate::clock::frozen(Engine::new) {
            Ok(engine) => engine,
            Err(message) => panic!("quickforge guest failed to initialize: {message}"),
        };
        *cell.borrow_mut() = Some(engine);
    });
}

/// Runs one script; see `run` in `wit/sandbox.wit`.
pub fn run(options: RunOptions, code: &str) -> Result<Outcome, ScriptError> {
    initialize();
    ENGINE.with(|cell| {
        let engine = cell.borrow();
        let engine = engine.as_ref().expect("initialized above");
        engine.run(&options, code)
    })
}

impl Engine {
    fn new() -> Result<Self, String> {
        let runtime = Runtime::new_with_alloc(Heap).map_err(|e| e.to_string())?;
        let compiler =
            Context::custom::<CompilerIntrinsics>(&runtime).map_err(|e| e.to_string())?;
        let sandbox = Context::custom::<SandboxIntrinsics>(&runtime).map_err(|e| e.to_string())?;
        let bytecode = compile(&compiler, PRELUDE, "prelude.js")?;
        let web = compile(&compiler, WEB, "web.js")?;
        let intl = compile(&compiler, INTL, "intl.js")?;
        let hooks = sandbox.with(|ctx| -> Result<_, String> {
            let describe = |e: rquickjs::Error| format!("{e}: {:?}", ctx.catch());
            let prelude = load(&ctx, &bytecode).map_err(describe)?;
            let prelude = prelude
                .into_function()
                .ok_or("the prelude is not a function")?;
            let host = apis::host_object(&ctx).map_err(describe)?;
            let hooks: Object = prelude.call((host.clone(),)).map_err(describe)?;
            let make_error: Function = hooks.get("makeError").map_err(describe)?;
            apis::set_make_error(&ctx, make_error);
            let shield: Function = hooks.get("shield").map_err(describe)?;
            apis::set_shield(&ctx, shield);
            let web = load(&ctx, &web)
                .map_err(describe)?
                .into_function()
                .ok_or("web.js is not a function")?;
            let web_hooks: Object = web.call((host.clone(),)).map_err(describe)?;
            load(&ctx, &intl)
                .map_err(describe)?
                .into_function()
                .ok_or("intl.js is not a function")?
                .call::<_, ()>((host,))
                .map_err(describe)?;
            apis::set_web_hooks(&ctx, web_hooks);
            crate::json::prepare(&ctx).map_err(describe)?;
            Ok(Persistent::save(&ctx, hooks))
        })?;
        // Collect what building the prelude left behind, so the snapshot is
        // as small as it can be.
        runtime.run_gc();
        Ok(Engine {
            compiler,
            sandbox,
            hooks,
        })
    }

    /// Runs one script under the run's deadline, if the host set one: the
    /// interrupt handler is installed for this run only and removed after
    /// it, and a run that ends past the deadline is a timeout whatever it
    /// returned (the uncatchable interrupt still rejects an async
    /// function's promise, which a script could have caught).
    fn run(&self, options: &RunOptions, code: &str) -> Result<Outcome, ScriptError> {
        let runtime = self.sandbox.runtime();
        let handler = deadline::begin(options.deadline_ms);
        let timed = handler.is_some();
        if timed {
            runtime.set_interrupt_handler(handler);
        }
        let result = self.run_script(options, code);
        if timed {
            runtime.set_interrupt_handler(None);
        }
        let late = deadline::passed();
        deadline::end();
        if late {
            return Err(timeout());
        }
        result
    }

    fn run_script(&self, options: &RunOptions, code: &str) -> Result<Outcome, ScriptError> {
        apis::reseed();
        apis::begin(options.max_parallel, options.time_zone.clone());
        heap::begin(usize::try_from(options.js_memory_limit).unwrap_or(usize::MAX));
        let bytecode = match self.compile_script(code) {
            Ok(bytecode) => bytecode,
            Err(message) => {
                return Err(match heap::refusal() {
                    Some(refused) => out_of_memory(refused, Doing::Compiling),
                    None => error(ScriptErrorKind::Syntax, script_positions(&message)),
                });
            }
        };
        self.sandbox.with(|ctx| {
            let hooks = self
                .hooks
                .clone()
                .restore(&ctx)
                .map_err(|e| internal(format!("prelude hooks: {e}")))?;
            let (cx, hk) = (&ctx, &hooks);
            let fail = |doing| move |e: rquickjs::Error| exception(cx, hk, e, doing);
            let value = load(&ctx, &bytecode).map_err(fail(Doing::Loading))?;
            let Some(function) = value.as_function() else {
                return Err(error(
                    ScriptErrorKind::NotAFunction,
                    format!(
                        "the code must be a function expression such as `async () => {{ ... }}`, \
                         but it evaluated to {}",
                        type_name(&value)
                    ),
                ));
            };
            let running = fail(Doing::Running);
            let returned: Value = function.call(()).map_err(running)?;
            let to_promise: Function = hooks.get("toPromise").map_err(running)?;
            let promise: Promise = to_promise.call((returned,)).map_err(running)?;
            self.drive(&ctx, &promise)
                .map_err(|(e, doing)| fail(doing)(e))?;
            match promise.result::<Value>() {
                Some(Ok(value)) => {
                    if value.is_undefined() {
                        crate::hints::nothing_returned(apis::calls_asked());
                    }
                    serialize(&ctx, &hooks, value, options.max_output_bytes)
                }
                Some(Err(e)) => Err(running(e)),
                None => Err(never_settled()),
            }
        })
    }

    /// Compiles the script, parenthesized so that it must be one
    /// expression; the opening parenthesis shifts columns on line 1, which
    /// `script_positions` undoes. Code that ends in `;` after the function
    /// (`async () => { ... };`, as Forgemax's examples are written) is
    /// compiled again without the trailing semicolons: if that parses as one
    /// expression, they were only the end of its statement. Any other
    /// failure keeps the first compile's message.
    fn compile_script(&self, code: &str) -> Result<Vec<u8>, String> {
        let first = compile(&self.compiler, &format!("({code}\n)"), SCRIPT_NAME);
        let Err(message) = first else {
            return first;
        };
        let trimmed = code.trim_end_matches(|c: char| c == ';' || c.is_whitespace());
        if trimmed.len() == code.trim_end().len() || heap::refusal().is_some() {
            return Err(message);
        }
        compile(&self.compiler, &format!("({trimmed}\n)"), SCRIPT_NAME).map_err(|_| message)
    }

    /// Runs the job queue and feeds host completions in until `promise`
    /// settles. Blocks in `next-completion` only when no job is left. A
    /// failure says whether it came from the script's jobs or from handing
    /// it a completion.
    fn drive<'js>(
        &self,
        ctx: &Ctx<'js>,
        promise: &Promise<'js>,
    ) -> Result<(), (rquickjs::Error, Doing)> {
        loop {
            run_jobs(ctx).map_err(|e| (e, Doing::Running))?;
            if promise.state() != PromiseState::Pending {
                return Ok(());
            }
            if apis::in_flight() == 0 {
                return Ok(());
            }
            // Past the deadline, or its timer completing, ends the wait; the
            // caller reports the timeout.
            if !deadline::arm() {
                return Ok(());
            }
            let Some(done) = calls::next_completion() else {
                return Ok(());
            };
            if deadline::is_timer(done.id) {
                return Ok(());
            }
            apis::settle(ctx, done).map_err(|e| (e, Doing::Settling))?;
        }
    }
}

/// Runs every pending job; an exception that escapes a job (only the engine's
/// own failures, such as running out of memory, do) ends the run.
fn run_jobs(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let rt = unsafe { qjs::JS_GetRuntime(ctx.as_raw().as_ptr()) };
    loop {
        let mut job_ctx: *mut qjs::JSContext = ptr::null_mut();
        // SAFETY: `rt` is the live runtime whose lock `ctx` holds.
        let r = unsafe { qjs::JS_ExecutePendingJob(rt, &mut job_ctx) };
        if r == 0 {
            return Ok(());
        }
        if r < 0 {
            // The exception is left pending on `job_ctx`; only the sandbox
            // context ever runs jobs, so it is the one `ctx` will catch from.
            return Err(rquickjs::Error::Exception);
        }
    }
}

/// Compiles `source` in the compiler context to serialized bytecode, or
/// returns the syntax error's message with its location.
fn compile(compiler: &Context, source: &str, filename: &str) -> Result<Vec<u8>, String> {
    let input =
        CString::new(source).map_err(|_| "the code contains a NUL character".to_string())?;
    let filename = CString::new(filename).expect("static file names have no NUL");
    compiler.with(|ctx| {
        let raw = ctx.as_raw().as_ptr();
        let mut options = qjs::JSEvalOptions {
            version: qjs::JS_EVAL_OPTIONS_VERSION as i32,
            eval_flags: (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32,
            filename: filename.as_ptr(),
            line_num: 1,
        };
        // SAFETY: `raw` is the compiler context, locked by `with`; `input` is
        // NUL-terminated as JS_Eval2 requires.
        let compiled =
            unsafe { qjs::JS_Eval2(raw, input.as_ptr(), source.len() as _, &mut options) };
        if unsafe { qjs::JS_IsException(compiled) } {
            let exc = ctx.catch();
            return Err(syntax_message(&exc));
        }
        let mut size: qjs::size_t = 0;
        // SAFETY: `compiled` is a live bytecode value owned here.
        let buf = unsafe {
            qjs::JS_WriteObject(raw, &mut size, compiled, qjs::JS_WRITE_OBJ_BYTECODE as i32)
        };
        unsafe { qjs::JS_FreeValue(raw, compiled) };
        if buf.is_null() {
            let exc = ctx.catch();
            return Err(format!(
                "could not serialize the compiled code: {}",
                plain_message(&exc)
            ));
        }
        // SAFETY: JS_WriteObject returned `size` bytes at `buf`, ours to free.
        let bytes = unsafe { std::slice::from_raw_parts(buf, size as usize) }.to_vec();
        unsafe { qjs::js_free(raw, buf.cast()) };
        Ok(bytes)
    })
}

/// Reads bytecode into the sandbox context and evaluates it.
fn load<'js>(ctx: &Ctx<'js>, bytecode: &[u8]) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the locked sandbox context; the buffer outlives the call.
    unsafe {
        let function = qjs::JS_ReadObject(
            raw,
            bytecode.as_ptr(),
            bytecode.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if qjs::JS_IsException(function) {
            return Err(rquickjs::Error::Exception);
        }
        // Consumes `function`.
        let value = qjs::JS_EvalFunction(raw, function);
        if qjs::JS_IsException(value) {
            return Err(rquickjs::Error::Exception);
        }
        Ok(Value::from_raw(ctx.clone(), value))
    }
}

/// Turns the script's result into JSON text within the output limit.
fn serialize<'js>(
    ctx: &Ctx<'js>,
    hooks: &Object<'js>,
    value: Value<'js>,
    max_output_bytes: u64,
) -> Result<Outcome, ScriptError> {
    let json = if let Some(json) = crate::json::encode(ctx, &value) {
        json
    } else {
        stringify(ctx, hooks, value)?
    };
    if json.len() as u64 > max_output_bytes {
        return Err(error(
            ScriptErrorKind::OutputTooLarge,
            format!(
                "the result is {} bytes of JSON, over the {max_output_bytes}-byte output limit; \
                 return less (filter, summarize, or page through the data)",
                json.len()
            ),
        ));
    }
    Ok(Outcome { value_json: json })
}

/// The result through `JSON.stringify`, for what [`crate::json::encode`]
/// leaves to it.
fn stringify<'js>(
    ctx: &Ctx<'js>,
    hooks: &Object<'js>,
    value: Value<'js>,
) -> Result<String, ScriptError> {
    if let Some(path) = crate::hints::promise_path(hooks, &value) {
        return Err(error(
            ScriptErrorKind::NotSerializable,
            format!(
                "the result holds a Promise at `{path}`: it was never awaited, so it would \
                 serialize as {{}}; `await` it (e.g. `const r = await forge.callTool(...)`) \
                 before returning it"
            ),
        ));
    }
    Ok(match ctx.json_stringify(value) {
        Ok(Some(s)) => s
            .to_string()
            .map_err(|e| exception(ctx, hooks, e, Doing::Serializing))?,
        Ok(None) => "null".to_string(),
        Err(e) => {
            let mut err = exception(ctx, hooks, e, Doing::Serializing);
            if err.kind == ScriptErrorKind::Thrown {
                err.kind = ScriptErrorKind::NotSerializable;
                err.message = format!("the result is not serializable to JSON: {}", err.message);
            }
            return Err(err);
        }
    })
}

/// Classifies the pending exception (after `e`, raised while `doing`) as a
/// script error.
///
/// Running out of memory is the engine's verdict, never the script's: it
/// takes a refusal in the heap's own record ([`heap::refusal`]) for this
/// run. With one, an exception that is what QuickJS raises for it (`null`
/// when it could not even allocate its error, none at all, or its
/// `out of memory` error) reports `out-of-memory` with the refusal as its
/// cause; anything else the script threw after catching that error stays
/// the script's own. Without one, an `InternalError: out of memory` or a
/// `null` is just a value the script threw.
fn exception<'js>(
    ctx: &Ctx<'js>,
    hooks: &Object<'js>,
    e: rquickjs::Error,
    doing: Doing,
) -> ScriptError {
    let refused = heap::refusal();
    if !matches!(e, rquickjs::Error::Exception) {
        // A conversion error raised by rquickjs itself, not by the script:
        // when an allocation failed, that is why.
        return match refused {
            Some(refused) => out_of_memory(refused, doing),
            None => internal(format!("{e} (while {})", doing.text())),
        };
    }
    let exc = ctx.catch();
    if let Some(refused) = refused
        && raised_for_memory(&exc)
    {
        return out_of_memory(refused, doing);
    }
    if exc.type_of() == rquickjs::Type::Uninitialized {
        return internal(format!(
            "QuickJS failed while {} without raising an exception",
            doing.text()
        ));
    }
    let forge = forge_error(hooks, &exc);
    let message = match &forge {
        Some(f) => format!(
            "ForgeError [{}]: {}",
            crate::codes::text(&f.code),
            f.message
        ),
        None => crate::hints::with_hint(plain_message(&exc)),
    };
    let stack = exc
        .as_object()
        .and_then(|o| o.get::<_, Option<String>>("stack").ok().flatten())
        .map(|s| crate::hints::script_frames(&s))
        .filter(|s| !s.is_empty())
        .map(|s| script_positions(&s));
    ScriptError {
        kind: ScriptErrorKind::Thrown,
        message,
        stack,
        forge,
    }
}

/// Whether `exc` is what QuickJS leaves when an allocation fails: no
/// exception, `null` (its error could not be allocated either), or the
/// `Error` object it throws, whose own `message` is `out of memory`, or
/// `Invalid error message` when the error object fit but its message did
/// not (`JS_MakeError2`'s fallback: what a `Map` of a million string keys
/// ends with at 64 MiB). Only asked once the heap has recorded a refusal
/// in this run.
fn raised_for_memory(exc: &Value<'_>) -> bool {
    if exc.is_null() || exc.type_of() == rquickjs::Type::Uninitialized {
        return true;
    }
    exc.is_error()
        && exc.as_object().is_some_and(|o| {
            matches!(
                o.get::<_, Option<String>>("message")
                    .ok()
                    .flatten()
                    .as_deref(),
                Some("out of memory" | "Invalid error message")
            )
        })
}

fn forge_error<'js>(hooks: &Object<'js>, exc: &Value<'js>) -> Option<ForgeError> {
    let is: Function = hooks.get("isForgeError").ok()?;
    if !is.call::<_, bool>((exc.clone(),)).ok()? {
        return None;
    }
    let obj = exc.as_object()?;
    // A script may throw a ForgeError with a code of its own; the host
    // recognizes its own codes by their text.
    Some(ForgeError {
        code: Code::Other(obj.get("code").ok()?),
        message: obj.get("message").ok()?,
        retryable: obj.get("retryable").unwrap_or(false),
        suggestion: obj.get::<_, Option<String>>("suggestion").ok().flatten(),
    })
}

/// `Name: message` for an Error, the JSON or string form of anything else.
fn plain_message(exc: &Value<'_>) -> String {
    if let Some(obj) = exc.as_object() {
        let name = obj.get::<_, Option<String>>("name").ok().flatten();
        let message = obj.get::<_, Option<String>>("message").ok().flatten();
        match (name, message) {
            (Some(n), Some(m)) if !m.is_empty() => return format!("{n}: {m}"),
            (Some(n), _) if obj.is_error() => return n,
            (_, Some(m)) => return m,
            _ => {}
        }
    }
    let text = exc
        .ctx()
        .json_stringify(exc.clone())
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .or_else(|| {
            exc.get::<rquickjs::convert::Coerced<String>>()
                .ok()
                .map(|c| c.0)
        })
        .unwrap_or_else(|| type_name(exc).to_string());
    format!("Uncaught {text}")
}

/// The syntax error's message with the line and column QuickJS reports.
fn syntax_message(exc: &Value<'_>) -> String {
    let message = plain_message(exc);
    let location = exc
        .as_object()
        .and_then(|o| o.get::<_, Option<String>>("stack").ok().flatten())
        .and_then(|stack| {
            stack
                .lines()
                .find_map(|l| l.trim().strip_prefix("at "))
                .map(|l| l.trim_matches(|c| c == '(' || c == ')').to_string())
        });
    match location {
        Some(at) => format!("{message} (at {at})"),
        None => message,
    }
}

/// Undoes the one-column shift the wrapping parenthesis causes on the
/// script's first line, in every `script.js:1:<column>` of `text`.
fn script_positions(text: &str) -> String {
    let marker = "script.js:1:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let (before, after) = rest.split_at(at + marker.len());
        out.push_str(before);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(column) = after[..digits].parse::<u32>() {
            out.push_str(&column.saturating_sub(1).max(1).to_string());
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// What the guest was doing when a run failed, for the cause in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doing {
    /// Compiling the source to bytecode.
    Compiling,
    /// Evaluating the bytecode to the script's function.
    Loading,
    /// Running the script's function or its jobs.
    Running,
    /// Turning a finished tool call or resource read into JS values.
    Settling,
    /// Serializing the result to JSON.
    Serializing,
}

impl Doing {
    fn text(self) -> &'static str {
        match self {
            Doing::Compiling => "compiling the script",
            Doing::Loading => "loading the script",
            Doing::Running => "running the script",
            Doing::Settling => "handing the script a tool or resource result",
            Doing::Serializing => "serializing the result to JSON",
        }
    }
}

/// `out-of-memory`, with the refused allocation as its cause.
fn out_of_memory(refused: Refusal, doing: Doing) -> ScriptError {
    let cause = if refused.by_limit {
        format!(
            "an allocation of {} did not fit, with {} of the {} heap limit in use",
            bytes(refused.requested),
            bytes(refused.in_use),
            bytes(refused.limit)
        )
    } else {
        format!(
            "the sandbox's memory could not grow for an allocation of {}, with {} of the heap in use",
            bytes(refused.requested),
            bytes(refused.in_use)
        )
    };
    error(
        ScriptErrorKind::OutOfMemory,
        format!(
            "the script ran out of memory while {}: {cause}; work on smaller pieces of data",
            doing.text()
        ),
    )
}

/// `n` bytes for a message: bytes, KiB or MiB with one decimal.
fn bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n == usize::MAX {
        "more bytes than the address space holds".into()
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{n} bytes")
    }
}

/// `timeout`, in the words the host uses for its own time limit.
fn timeout() -> ScriptError {
    error(
        ScriptErrorKind::Timeout,
        format!(
            "the execution ran past its {} ms time limit; do less per execution \
             (fewer or smaller tool calls, less computation)",
            deadline::limit_ms()
        ),
    )
}

fn never_settled() -> ScriptError {
    error(
        ScriptErrorKind::NeverSettled,
        "the script's promise can never settle: nothing is pending and no job is queued \
         (a promise that is never resolved, or an await on one)"
            .into(),
    )
}

fn error(kind: ScriptErrorKind, message: String) -> ScriptError {
    ScriptError {
        kind,
        message,
        stack: None,
        forge: None,
    }
}

fn internal(message: String) -> ScriptError {
    error(ScriptErrorKind::Internal, message)
}
