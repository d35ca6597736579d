//! What the model reads about its usual mistakes: a name the sandbox will
//! never have, a Promise returned without `await`, a script that returned
//! nothing after calling tools, and stacks cut to the script's own frames.
//!
//! (A property read on a Promise is the prelude's: see "hints for a
//! forgotten `await`" in `prelude.js`.)

use rquickjs::{Function, Object, Value};

use crate::quickforge::sandbox::logging;
use crate::quickforge::sandbox::types::LogLevel;

/// Names scripts reach for that no quickforge sandbox will ever define, and
/// what to do instead.
///
/// The names stay undefined, so `typeof fetch === "undefined"` and the like
/// keep working as feature checks (a stub, or a getter that throws, would
/// break them); only the `ReferenceError` an unguarded use raises gets the
/// advice, where the model reads it.
const NEVER: &[(&str, &str)] = &[
    (
        "fetch",
        "scripts have no network access; call a tool that fetches, e.g. forge.callTool(server, tool, { url }) (find one with manifest.search(\"fetch\"))",
    ),
    (
        "XMLHttpRequest",
        "scripts have no network access; call a tool that fetches with forge.callTool",
    ),
    (
        "WebSocket",
        "scripts have no network access; call a tool that talks to the service with forge.callTool",
    ),
    (
        "require",
        "there are no modules: everything a script can use is global (forge, manifest, console and the web globals)",
    ),
    (
        "module",
        "there are no modules: return the result from the function instead of exporting it",
    ),
    (
        "exports",
        "there are no modules: return the result from the function instead of exporting it",
    ),
    (
        "process",
        "there is no process (no environment, arguments or exit); put values in the script or get them from a tool",
    ),
    (
        "Deno",
        "scripts run in quickforge's QuickJS sandbox, not Deno; use forge.* and the web globals",
    ),
    (
        "Bun",
        "scripts run in quickforge's QuickJS sandbox, not Bun; use forge.* and the web globals",
    ),
    (
        "fs",
        "there is no file system; read files with a tool (forge.callTool) or forge.readResource",
    ),
    (
        "Buffer",
        "there is no Buffer; use Uint8Array, TextEncoder/TextDecoder and atob/btoa",
    ),
    (
        "setImmediate",
        "use setTimeout(fn, 0) or queueMicrotask(fn)",
    ),
];

/// `message` with advice appended when it is the `ReferenceError` of a name
/// in [`NEVER`].
pub fn with_hint(message: String) -> String {
    let name = message
        .strip_prefix("ReferenceError: ")
        .and_then(|m| m.strip_suffix(" is not defined"));
    match name.and_then(|n| NEVER.iter().find(|(never, _)| *never == n)) {
        Some((_, advice)) => format!("{message}: {advice}"),
        None => message,
    }
}

/// The lines of `stack` that are the script's: the prelude's, web.js's and intl.js's
/// frames (`at makeError (prelude.js:…)`) locate nothing the model wrote.
pub fn script_frames(stack: &str) -> String {
    stack
        .lines()
        .filter(|l| {
            !l.contains("(prelude.js:") && !l.contains("(web.js:") && !l.contains("(intl.js:")
        })
        .fold(String::new(), |mut out, l| {
            out.push_str(l);
            out.push('\n');
            out
        })
}

/// Where the result holds a Promise (`result.r`), by the prelude's walk.
pub fn promise_path<'js>(hooks: &Object<'js>, value: &Value<'js>) -> Option<String> {
    let walk: Function = hooks.get("promisePath").ok()?;
    walk.call::<_, Option<String>>((value.clone(),))
        .ok()
        .flatten()
}

/// A run that called tools and resolved to `undefined` most likely lost
/// its `return`: say so in a log line (the result itself stays `null`,
/// not an error: returning nothing is allowed).
pub fn nothing_returned(calls: u32) {
    if calls > 0 {
        logging::log(
            LogLevel::Warn,
            &format!(
                "[quickforge] the script made {calls} tool call(s) and returned undefined, \
                 so the result is null; `return` the value you want back"
            ),
        );
    }
}
