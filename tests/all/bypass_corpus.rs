//! Attack corpus for the quickforge script validator (pure data).
//!
//! `BYPASSES`: scripts whose success at run time would return `"PWNED"` (or
//! otherwise escape the sandbox) through dynamic code evaluation, the global
//! object, prototypes or obfuscation. With the validator switched off, every
//! one must be stopped by the sandbox itself (`hostile.rs`): that is the
//! containment. The validator, which reads literal spellings only, must
//! reject every case spelled literally. Names read
//! `expected-rule[|other-rule]: description`; the rules before the colon are
//! the ones the validator may report, and `runtime` among them marks a case
//! not spelled literally (an alias, a key built at run time), which the
//! validator may let through to the runtime.
//!
//! `BENIGN`: ordinary tool-orchestration scripts that must pass.
#![allow(dead_code)]

/// Bypass attempts: `(name, script)`.
pub const BYPASSES: &[(&str, &str)] = &[
    // --- eval, directly and through aliases -------------------------------
    ("eval: direct call", r#"async () => eval("'PW' + 'NED'")"#),
    (
        "eval: indirect comma call",
        r#"async () => (0, eval)("'PW' + 'NED'")"#,
    ),
    (
        "eval: optional call",
        r#"async () => eval?.("'PW' + 'NED'")"#,
    ),
    (
        "eval: alias chain",
        r#"async () => { const e = eval; const f = e; return f("'PW' + 'NED'"); }"#,
    ),
    (
        "eval: reference kept in an array",
        r#"async () => { const fns = [eval]; return fns[0]("'PW' + 'NED'"); }"#,
    ),
    (
        "eval: map value",
        r#"async () => new Map([["run", eval]]).get("run")("'PW' + 'NED'")"#,
    ),
    ("eval: tagged template", r#"async () => eval`'PWNED'`[0]"#),
    (
        "eval: globalThis.eval",
        r#"async () => globalThis.eval("'PW' + 'NED'")"#,
    ),
    (
        "eval: optional member",
        r#"async () => globalThis?.eval("'PW' + 'NED'")"#,
    ),
    (
        "eval: this.eval at top level",
        r#"async () => this.eval("'PW' + 'NED'")"#,
    ),
    (
        "eval: window alias",
        r#"async () => { const w = window; return w.eval("'PW' + 'NED'"); }"#,
    ),
    (
        "eval|computed-global: window string key",
        r#"async () => window["eval"]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: self string key",
        r#"async () => self["eval"]("'PW' + 'NED'")"#,
    ),
    (
        "eval: destructured from globalThis",
        r#"async () => { const { eval: e } = globalThis; return e("'PW' + 'NED'"); }"#,
    ),
    (
        "eval: shorthand destructuring",
        r#"async () => { const { eval: run = null } = globalThis; return run("'PW' + 'NED'"); }"#,
    ),
    (
        "eval: assignment destructuring",
        r#"async () => { let e; ({ eval: e } = globalThis); return e("'PW' + 'NED'"); }"#,
    ),
    (
        "eval: comma operator alias",
        r#"async () => (1, globalThis.eval)("'PW' + 'NED'")"#,
    ),
    (
        "with-statement|eval: inside with body",
        r#"async () => { with ({}) { return eval("'PW' + 'NED'"); } }"#,
    ),
    // --- eval spelled differently ---------------------------------------------
    (
        "eval: unicode escape identifier",
        r#"async () => \u0065val("'PW' + 'NED'")"#,
    ),
    (
        "eval: braced unicode escape identifier",
        r#"async () => \u{65}v\u{61}l("'PW' + 'NED'")"#,
    ),
    (
        "eval: escaped property name",
        r#"async () => globalThis.\u0065val("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: escaped string key",
        r#"async () => globalThis["\u0065\x76al"]("'PW' + 'NED'")"#,
    ),
    (
        "eval: cyrillic e identifier",
        r#"async () => еval("'PW' + 'NED'")"#,
    ),
    (
        "eval: greek alpha property",
        r#"async () => globalThis.evαl("'PW' + 'NED'")"#,
    ),
    (
        "eval: fullwidth identifier",
        r#"async () => ｅｖａｌ("'PW' + 'NED'")"#,
    ),
    (
        "eval: mathematical bold identifier",
        r#"async () => 𝐞𝐯𝐚𝐥("'PW' + 'NED'")"#,
    ),
    (
        "eval: zero-width joiner identifier",
        r#"async () => ev‍al("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: cyrillic key repaired at run time",
        r#"async () => globalThis["еvаl".replace("е", "e").replace("а", "a")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: fullwidth key normalised at run time",
        r#"async () => globalThis["ｅｖａｌ".normalize("NFKC")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: zero-width key cleaned at run time",
        r#"async () => globalThis["ev\u200dal".replace("\u200d", "")]("'PW' + 'NED'")"#,
    ),
    // --- computed keys built from pieces --------------------------------------
    (
        "eval|computed-global: concatenated key",
        r#"async () => globalThis["ev" + "al"]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: template key",
        r#"async () => globalThis[`ev${"al"}`]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: plain template key",
        r#"async () => globalThis[`eval`]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: joined array key",
        r#"async () => globalThis[["e", "v", "a", "l"].join("")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: reversed key",
        r#"async () => globalThis["lave".split("").reverse().join("")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: base64 key",
        r#"async () => globalThis[atob("ZXZhbA==")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: percent-encoded key",
        r#"async () => globalThis[decodeURIComponent("%65%76al")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: unescape key",
        r#"async () => globalThis[unescape("%u0065val")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: radix-36 key",
        r#"async () => globalThis[(14).toString(36) + (31).toString(36) + (10).toString(36) + (21).toString(36)]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: lowercased key",
        r#"async () => globalThis["EVAL".toLowerCase()]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: key from const",
        r#"async () => { const a = "ev"; const k = a + "al"; return globalThis[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "eval|computed-global: key built with +=",
        r#"async () => { let k = "ev"; k += "al"; return globalThis[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "eval|computed-global: key from object literal",
        r#"async () => { const o = { k: "eval" }; return globalThis[o.k]("'PW' + 'NED'"); }"#,
    ),
    (
        "eval|computed-global: key from array destructuring",
        r#"async () => { const [a, b] = ["ev", "al"]; return globalThis[a + b]("'PW' + 'NED'"); }"#,
    ),
    (
        "eval|computed-global: key from IIFE",
        r#"async () => globalThis[(() => "eval")()]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: key from Object.keys",
        r#"async () => globalThis[Object.keys({ eval: 1 })[0]]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global: key from Array.from",
        r#"async () => globalThis[Array.from("eval").join("")]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global|char-code-obfuscation: fromCharCode key",
        r#"async () => globalThis[String.fromCharCode(101, 118, 97, 108)]("'PW' + 'NED'")"#,
    ),
    (
        "eval|computed-global|char-code-obfuscation: fromCodePoint key",
        r#"async () => globalThis[String.fromCodePoint(0x65, 0x76, 0x61, 0x6c)]("'PW' + 'NED'")"#,
    ),
    // --- the global object through aliases and escapes ------------------------
    (
        "computed-global: runtime-built key",
        r#"async () => globalThis[["e", "v", "a", "l"].map((c) => c).join("")]("'PW' + 'NED'")"#,
    ),
    (
        "runtime|eval|computed-global: alias then slice-folded key",
        r#"async () => { const g = globalThis; return g["ev" + "al".slice(0)]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|computed-global: alias assigned later",
        r#"async () => { let g; g = globalThis; const k = [..."eval"].map((c) => c).join(""); return g[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|computed-global: alias through conditional",
        r#"async () => { const g = Math.random() < 2 ? globalThis : {}; const k = "lave".split("").map((c) => c).reverse().join(""); return g[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "computed-global: alias through globalThis.globalThis",
        r#"async () => { const k = ["ev", "al"].map((s) => s).join(""); return globalThis.globalThis[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|computed-global: destructured globalThis property",
        r#"async () => { const { globalThis: g } = globalThis; const k = ["ev", "al"].map((s) => s).join(""); return g[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|computed-global: default parameter alias",
        r#"async () => ((g = globalThis, k = ["ev", "al"].map((s) => s).join("")) => g[k]("'PW' + 'NED'"))()"#,
    ),
    (
        "computed-global: computed destructuring of globalThis",
        r#"async () => { const k = ["ev", "al"].map((s) => s).join(""); const { [k]: run } = globalThis; return run("'PW' + 'NED'"); }"#,
    ),
    (
        "computed-global: top-level this",
        r#"async () => { const k = ["ev", "al"].map((s) => s).join(""); return this[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "computed-global: object with toString as key",
        r#"async () => globalThis[{ toString: () => "eval" }]("'PW' + 'NED'")"#,
    ),
    (
        "runtime|global-escape: passed to a function",
        r#"async () => { const pick = (o, k) => o[k]; return pick(globalThis, ["ev", "al"].join(""))("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|global-escape: hidden in an array",
        r#"async () => { const [g] = [globalThis]; const k = ["ev", "al"].map((s) => s).join(""); return g[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|global-escape: hidden in an object",
        r#"async () => { const box = { g: globalThis }; const k = ["ev", "al"].map((s) => s).join(""); return box.g[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|global-escape: sloppy function this",
        r#"async () => { const g = (function () { return this; })(); const k = ["ev", "al"].map((s) => s).join(""); return g[k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|global-escape: Object.values of globalThis wrapper",
        r#"async () => { const k = ["ev", "al"].map((s) => s).join(""); return Object.values({ g: globalThis })[0][k]("'PW' + 'NED'"); }"#,
    ),
    (
        "runtime|global-escape: returned from arrow",
        r#"async () => { const get = () => globalThis; const k = ["ev", "al"].map((s) => s).join(""); return get()[k]("'PW' + 'NED'"); }"#,
    ),
    // --- the Function constructor family ----------------------------------------
    (
        "function-constructor: Function call",
        r#"async () => Function("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: new Function",
        r#"async () => new Function("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: Function.prototype.constructor",
        r#"async () => Function.prototype.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: globalThis.Function",
        r#"async () => globalThis.Function("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: async arrow constructor",
        r#"async () => { const F = (async () => {}).constructor; return await F("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "function-constructor: inline async constructor",
        r#"async () => await (async () => {}).constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: escaped constructor name",
        r#"async () => (() => {}).\u0063onstructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "proto|function-constructor: generator constructor via getPrototypeOf",
        r#"async () => Object.getPrototypeOf(function* () {}).constructor("yield 'PW' + 'NED'")().next().value"#,
    ),
    (
        "proto|function-constructor: async generator constructor",
        r#"async () => (await Object.getPrototypeOf(async function* () {}).constructor("yield 'PW' + 'NED'")().next()).value"#,
    ),
    (
        "proto|function-constructor: descriptor of the prototype",
        r#"async () => Object.getOwnPropertyDescriptor(Object.getPrototypeOf(async () => {}), "constructor").value("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: object constructor chain",
        r#"async () => ({}).constructor.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: array constructor chain",
        r#"async () => [].constructor.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: string constructor chain",
        r#"async () => "".constructor.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: constructor of a builtin function",
        r#"async () => Array.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: constructor of a tool method",
        r#"async () => forge.callTool.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: constructor of bind",
        r#"async () => (function () {}).bind.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: error object chain",
        r#"async () => { try { null.x; } catch (e) { return e.constructor.constructor("return 'PW' + 'NED'")(); } }"#,
    ),
    (
        "function-constructor: global this chain",
        r#"async () => this.constructor.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "function-constructor: constructor kept in a variable",
        r#"async () => { const c = [].map.constructor; return c("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "function-constructor: destructured constructor",
        r#"async () => { const { constructor: F } = async () => {}; return await F("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "function-constructor: shorthand destructured constructor",
        r#"async () => { const { constructor } = () => {}; return constructor("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "function-constructor: assignment-destructured constructor",
        r#"async () => { let constructor; ({ constructor } = () => {}); return constructor("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "computed-constructor: string key",
        r#"async () => (() => {})["constructor"]("return 'PW' + 'NED'")()"#,
    ),
    (
        "computed-constructor: concatenated key",
        r#"async () => [].map["constr" + "uctor"]("return 'PW' + 'NED'")()"#,
    ),
    (
        "computed-constructor: double computed chain",
        r#"async () => ({})["constructor"]["constructor"]("return 'PW' + 'NED'")()"#,
    ),
    (
        "computed-constructor: key in a const",
        r#"async () => { const k = "constructor"; return Object[k]("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "computed-constructor: reversed key",
        r#"async () => (() => {})["rotcurtsnoc".split("").reverse().join("")]("return 'PW' + 'NED'")()"#,
    ),
    (
        "computed-constructor: runtime key on a function",
        r#"async () => { const k = ["con", "struc", "tor"].map((s) => s).join(""); return (() => {})[k]("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "runtime|computed-constructor: runtime key on a named function",
        r#"async () => { function f() {} const k = ["con", "struc", "tor"].map((s) => s).join(""); return f[k]("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "computed-constructor: key assembled with push",
        r#"async () => { const parts = []; parts.push("con"); parts.push("structor"); return (() => {})[parts.join("")]("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "computed-constructor: JSON.parse key",
        r#"async () => (() => {})[JSON.parse('"constructor"')]("return 'PW' + 'NED'")()"#,
    ),
    (
        "runtime|computed-constructor: JSON.parse array key on a method",
        r#"async () => { const k = JSON.parse('["constructor"]')[0]; return [].map[k]("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "computed-constructor: runtime key on a namespace method",
        r#"async () => Math.max[["con", "structor"].map((s) => s).join("")]("return 'PW' + 'NED'")()"#,
    ),
    (
        "computed-constructor: runtime key on arguments.callee",
        r#"async () => { function f() { return arguments.callee[["con", "structor"].map((s) => s).join("")]; } return f()("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "function-constructor: destructured in for-of",
        r#"async () => { for (const { constructor: c } of [() => {}]) return c("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "function-constructor: destructured catch parameter",
        r#"async () => { try { throw () => {}; } catch ({ constructor }) { return constructor("return 'PW' + 'NED'")(); } }"#,
    ),
    (
        "function-constructor: destructured parameter",
        r#"async () => (({ constructor }) => constructor("return 'PW' + 'NED'")())(() => {})"#,
    ),
    (
        "function-constructor: class extends Function",
        r#"async () => { class X extends Function {} return new X("return 'PW' + 'NED'")(); }"#,
    ),
    // --- Reflect, Proxy, WebAssembly -----------------------------------------
    (
        "reflect|function-constructor: Reflect.construct",
        r#"async () => Reflect.construct(Function, ["return 'PW' + 'NED'"])()"#,
    ),
    (
        "reflect: Reflect.get on globalThis",
        r#"async () => Reflect.get(globalThis, "ev" + "al")("'PW' + 'NED'")"#,
    ),
    (
        "reflect: Reflect alias",
        r#"async () => { let R = Reflect; return R.apply(R.get(globalThis, "eval"), null, ["'PW' + 'NED'"]); }"#,
    ),
    (
        "proxy|eval: Proxy trap",
        r#"async () => new Proxy({}, { get: (_, k) => globalThis[k] }).eval("'PW' + 'NED'")"#,
    ),
    (
        "webassembly: compile",
        r#"async () => { const m = await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); return m ? "PWNED" : ""; }"#,
    ),
    (
        "webassembly: via globalThis",
        r#"async () => { const W = globalThis.WebAssembly; return (await W.instantiate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))) ? "PWNED" : ""; }"#,
    ),
    // --- modules -------------------------------------------------------------------
    (
        "dynamic-import: data url",
        r#"async () => (await import("data:text/javascript,export default 'PW' + 'NED'")).default"#,
    ),
    (
        "dynamic-import: module name",
        r#"async () => { const os = await import("os"); return os ? "PWNED" : ""; }"#,
    ),
    (
        "import-meta: url",
        r#"async () => import.meta.url ? "PWNED" : """#,
    ),
    (
        "require: child_process",
        r#"async () => require("child_process").execSync("echo PWNED").toString().trim()"#,
    ),
    (
        "require: fs alias",
        r#"async () => { const r = require; return r("fs").readFileSync("/etc/hostname") ? "PWNED" : ""; }"#,
    ),
    // --- prototypes --------------------------------------------------------------
    (
        "proto|function-constructor: __proto__ property",
        r#"async () => (() => {}).__proto__.constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "proto|function-constructor: __proto__ string key",
        r#"async () => (() => {})["__proto__"].constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "proto|function-constructor: __proto__ built key",
        r#"async () => (() => {})["__pro" + "to__"].constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "proto: __proto__ in object literal",
        r#"async () => { const o = { __proto__: async () => {} }; return await o.constructor("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "proto: __proto__ destructuring",
        r#"async () => { const { __proto__: p } = () => {}; return p.constructor("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "proto: setPrototypeOf",
        r#"async () => { const o = Object.setPrototypeOf({}, Object.getPrototypeOf(() => {})); return o.constructor("return 'PW' + 'NED'")(); }"#,
    ),
    (
        "proto|function-constructor: __lookupGetter__",
        r#"async () => ({}).__lookupGetter__("__proto__").call(() => {}).constructor("return 'PW' + 'NED'")()"#,
    ),
    (
        "proto|function-constructor: prototype of a class",
        r#"async () => { class A {} return Object.getPrototypeOf(A).constructor("return 'PW' + 'NED'")(); }"#,
    ),
    // --- obfuscation -----------------------------------------------------------------
    (
        "eval|char-code-obfuscation: eval of fromCharCode",
        r#"async () => eval(String.fromCharCode(39, 80, 87, 78, 69, 68, 39))"#,
    ),
    (
        "function-constructor|char-code-obfuscation: Function of fromCharCode",
        r#"async () => Function(String.fromCharCode(114, 101, 116, 117, 114, 110, 32, 39, 80, 87, 78, 69, 68, 39))()"#,
    ),
    (
        "runtime: fromCharCode alias",
        r#"async () => { const { fromCharCode: d } = String; return globalThis.process ? d(80, 87, 78, 69, 68) : ""; }"#,
    ),
    (
        "string-raw|computed-global: String.raw tag",
        r#"async () => globalThis[String.raw`ev${""}al`]("'PW' + 'NED'")"#,
    ),
    (
        "string-raw|computed-global: aliased String",
        r#"async () => { const S = String; return globalThis[S.raw`ev${""}al`]("'PW' + 'NED'"); }"#,
    ),
    (
        "string-raw|computed-global: destructured raw",
        r#"async () => { const { raw } = String; return globalThis[raw({ raw: ["ev", "al"] }, "")]("'PW' + 'NED'"); }"#,
    ),
    (
        "function-constructor|string-raw: String.raw feeding Function",
        r#"async () => Function(String.raw`return 'PW' + 'NED'`)()"#,
    ),
    (
        "with-statement: with globalThis",
        r#"async () => { with (globalThis) { return ev\u0061l("'PW' + 'NED'"); } }"#,
    ),
    (
        "with-statement|eval: with over a proxy-like object",
        r#"async () => { const scope = { x: 1 }; with (scope) { return eval("'PW' + 'NED'"); } }"#,
    ),
    (
        "timer-string: setTimeout with code",
        r#"async () => { setTimeout("globalThis.out = 'PW' + 'NED'", 0); await new Promise((r) => setTimeout(r, 10)); return globalThis.out; }"#,
    ),
    (
        "timer-string: setInterval with template",
        r#"async () => { const id = setInterval(`globalThis.out = 'PWNED'`, 1); await new Promise((r) => setTimeout(r, 10)); clearInterval(id); return globalThis.out; }"#,
    ),
    (
        "runtime|timer-string: setTimeout with a string variable",
        r#"async () => { const code = "globalThis.out = 'PW' + 'NED'"; globalThis.setTimeout(code, 0); await new Promise((r) => setTimeout(r, 10)); return globalThis.out; }"#,
    ),
    (
        "timer-string: setTimeout with concatenation",
        r#"async () => { const v = "PWNED"; setTimeout("globalThis.out = '" + v + "'"); await new Promise((r) => setTimeout(r, 10)); return globalThis.out; }"#,
    ),
    // --- depth ---------------------------------------------------------------------------
    (
        "too-deep|eval: eval buried in 100 nested arrays",
        concat!(
            "async () => ",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            "eval(\"'PW' + 'NED'\")",
            "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
            ".flat(Infinity)[0]",
        ),
    ),
    (
        "too-deep|eval: eval buried in 40 nested arrow calls",
        concat!(
            "async () => ",
            "(() => (() => (() => (() => (() => (() => (() => (() => (() => (() => ",
            "(() => (() => (() => (() => (() => (() => (() => (() => (() => (() => ",
            "(() => (() => (() => (() => (() => (() => (() => (() => (() => (() => ",
            "(() => (() => (() => (() => (() => (() => (() => (() => (() => (() => ",
            "eval(\"'PW' + 'NED'\")",
            ")())())())())())())())())())()",
            ")())())())())())())())())())()",
            ")())())())())())())())())())()",
            ")())())())())())())())())())()",
        ),
    ),
];

/// Ordinary scripts that must pass: `(name, script)`.
pub const BENIGN: &[(&str, &str)] = &[
    (
        "single tool call",
        r#"async () => {
  const result = await forge.callTool("github", "search_issues", { q: "is:open label:bug" });
  return result.items.length;
}"#,
    ),
    (
        "manifest search",
        r#"async () => {
  const tools = await manifest.search("weather forecast");
  return tools.map((t) => `${t.server}/${t.name}`);
}"#,
    ),
    (
        "sequential tool chain",
        r#"async () => {
  const user = await forge.callTool("crm", "get_user", { id: 42 });
  const orders = await forge.callTool("shop", "list_orders", { email: user.email });
  const total = orders.reduce((sum, o) => sum + o.amount, 0);
  return { name: user.name, total, average: orders.length ? total / orders.length : 0 };
}"#,
    ),
    (
        "Promise.all fan-out",
        r#"async () => {
  const cities = ["Paris", "Berlin", "Rome"];
  const results = await Promise.all(cities.map((city) => forge.callTool("weather", "current", { city })));
  return Object.fromEntries(cities.map((c, i) => [c, results[i].temp]));
}"#,
    ),
    (
        "loops with break and continue",
        r#"async () => {
  const out = [];
  for (let page = 1; page <= 10; page++) {
    const res = await forge.callTool("api", "list", { page });
    if (!res.items.length) break;
    for (const item of res.items) {
      if (item.archived) continue;
      out.push(item.id);
    }
  }
  let i = 0;
  while (i < out.length && out[i] < 100) i++;
  do { i--; } while (i > 0);
  return out;
}"#,
    ),
    (
        "class with constructor, fields and methods",
        r#"async () => {
  class Cache {
    #store = new Map();
    static created = 0;
    constructor(limit) { this.limit = limit; Cache.created++; }
    get size() { return this.#store.size; }
    set(key, value) { this.#store.set(key, value); this[key] = value; return this; }
    static of(limit) { return new Cache(limit); }
  }
  const c = Cache.of(3).set("a", 1).set("b", 2);
  return [c.size, c.a, Cache.created, c instanceof Cache];
}"#,
    ),
    (
        "destructuring with defaults and rest",
        r#"async () => {
  const { data: { items = [], meta: { total = 0 } = {} } = {}, ...rest } = await forge.callTool("s", "t", {});
  const [first, , third = "none", ...others] = items;
  let a, b;
  [a, b] = [b, a];
  ({ a, b = 2 } = { a: 1 });
  return { first, third, others, total, rest, a, b };
}"#,
    ),
    (
        "strings and names mentioning eval",
        r#"async () => {
  // eval, Function and constructor are banned; this comment is fine.
  /* so is new Function("...") in a block comment */
  const note = "do not use eval() or new Function(); constructor and __proto__ are words";
  const result = await forge.callTool("sandbox", "eval_tool", { expression: "1 + 1" });
  const obj = { evaluation: 1, constructorName: "Foo", eval: "just a key", Function: 2, raw: "x" };
  return [note, result, obj.evaluation, obj.constructorName, "eval", `eval ${obj.raw}`];
}"#,
    ),
    (
        "JSON round trip",
        r#"async () => {
  const raw = await forge.callTool("files", "read", { path: "config.json" });
  const config = JSON.parse(raw.text);
  config.updated = new Date().toISOString();
  return JSON.stringify(config, null, 2);
}"#,
    ),
    (
        "regular expressions",
        r#"async () => {
  const text = "order (123)-456 [x] {y} /path/";
  const m = /\((\d+)\)-(\d+)/.exec(text);
  const cleaned = text.replace(/[()[\]{}]/g, "").split(/\s+/);
  const slash = /\//.test(text) ? text.match(/\/(\w+)\//)[1] : null;
  if (m) /^\d+$/.test(m[1]) && cleaned.push(m[1]);
  return { id: m && m[1], cleaned, slash };
}"#,
    ),
    (
        "for await over an async generator",
        r#"async () => {
  async function* pages() {
    for (let p = 1; p <= 3; p++) yield await forge.callTool("api", "page", { p });
  }
  const all = [];
  for await (const page of pages()) all.push(...page.items);
  return all.length;
}"#,
    ),
    (
        "optional chaining and nullish coalescing",
        r#"async () => {
  const r = await forge.callTool("s", "t", {});
  const name = r?.user?.profile?.name ?? "anonymous";
  const first = r?.items?.[0]?.id ?? null;
  const count = r.items?.length ?? 0;
  r.cache ??= {};
  r.count ||= count;
  return { name, first, count, call: r.fn?.() };
}"#,
    ),
    (
        "template literals",
        r#"async () => {
  const rows = [{ a: 1, b: 2 }, { a: 3, b: 4 }];
  const table = rows.map((r) => `| ${r.a} | ${r.b} | ${r.a + r.b > 4 ? `big ${r.a}` : "small"} |`).join("\n");
  return `rows:\n${table}\n${"}"}{`;
}"#,
    ),
    (
        "generators",
        r#"async () => {
  function* range(n) { for (let i = 0; i < n; i++) yield i; }
  const gen = function* () { yield* range(3); };
  return [...gen()].map((x) => x * 2);
}"#,
    ),
    (
        "try catch finally",
        r#"async () => {
  let attempts = 0;
  try {
    attempts++;
    return await forge.callTool("flaky", "op", {});
  } catch (err) {
    return { error: err.message, type: err.constructor.name, isError: err.constructor === Error || err instanceof Error };
  } finally {
    attempts = 0;
  }
}"#,
    ),
    (
        "switch and labels",
        r#"async () => {
  const kinds = { a: 0, b: 0, other: 0 };
  outer: for (const row of [["a", "b"], ["c", "stop"]]) {
    for (const k of row) {
      switch (k) {
        case "a": kinds.a++; break;
        case "b": kinds.b++; break;
        case "stop": break outer;
        default: kinds.other++;
      }
    }
  }
  return kinds;
}"#,
    ),
    (
        "objects: entries, spread, assign, computed keys",
        r#"async () => {
  const base = { a: 1, b: 2 };
  const key = "dynamic";
  const merged = { ...base, [key]: 3, [`${key}2`]: 4 };
  Object.assign(merged, { c: 5 });
  const picked = Object.entries(merged).filter(([k, v]) => v > 1).map(([k]) => merged[k]);
  const lookup = {};
  for (const k of Object.keys(merged)) lookup[k.toUpperCase()] = merged[k];
  return { merged, picked, lookup, has: "a" in base, own: Object.hasOwn(base, "a") };
}"#,
    ),
    (
        "timers with functions",
        r#"async () => {
  await new Promise((resolve) => setTimeout(resolve, 10));
  const tick = () => 1;
  const id = setInterval(tick, 1000);
  clearInterval(id);
  setTimeout(tick.bind(null), 0);
  return "done";
}"#,
    ),
    (
        "numbers, dates and math",
        r#"async () => {
  const n = 255;
  const hex = n.toString(16), bin = (5).toString(2);
  const total = [1.5, 2.25, 3].reduce((a, b) => a + b, 0) / 3;
  const when = new Date(Date.UTC(2024, 0, 1)).toISOString();
  return { hex, bin, total: Math.round(total * 100) / 100, when, max: Math.max(...[1, 5, 3]), big: 10n ** 3n };
}"#,
    ),
    (
        "Map, Set, sorting and grouping",
        r#"async () => {
  const people = [{ name: "b", age: 30 }, { name: "a", age: 25 }, { name: "c", age: 30 }];
  const byAge = new Map();
  for (const p of people) byAge.set(p.age, [...(byAge.get(p.age) ?? []), p.name]);
  const unique = [...new Set(people.map((p) => p.age))].sort((x, y) => x - y);
  const deduped = [3, 1, 3, 2].filter((v, i, self) => self.indexOf(v) === i);
  return { groups: Object.fromEntries(byAge), unique, deduped, sorted: people.sort((x, y) => x.name.localeCompare(y.name)) };
}"#,
    ),
    (
        "closures and recursion",
        r#"async () => {
  const memo = {};
  function fib(n) { if (n < 2) return n; if (memo[n]) return memo[n]; return (memo[n] = fib(n - 1) + fib(n - 2)); }
  const counter = (() => { let c = 0; return { inc: () => ++c, get: () => c }; })();
  counter.inc(); counter.inc();
  const walk = (node, depth = 0) => node.children ? node.children.map((c) => walk(c, depth + 1)).flat() : [depth];
  return { fib: fib(20), count: counter.get(), depths: walk({ children: [{}, { children: [{}] }] }) };
}"#,
    ),
    (
        "global reads by name",
        r#"async () => {
  const hasFetch = typeof globalThis.fetch === "function";
  const parse = globalThis.JSON.parse;
  const same = globalThis === globalThis;
  if (!globalThis.cache) globalThis.cache = {};
  return { hasFetch, value: parse("[1]"), same, keys: typeof globalThis };
}"#,
    ),
    (
        "constructor used for type checks",
        r#"async () => {
  const values = [{}, [], "s", 1, null];
  return values.map((v) => v !== null && v.constructor === Object ? "plain" : v?.constructor?.name ?? "null");
}"#,
    ),
    (
        "long string concatenation",
        r#"async () => {
  const a = 1, b = 2, c = 3;
  return "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "a=" + a + ", b=" + b + ", c=" + c + "; " + "end";
}"#,
    ),
    (
        "long promise chain",
        r#"async () => {
  return Promise.resolve(1)
    .then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1)
    .then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1)
    .then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1)
    .then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1)
    .then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x + 1).then((x) => x * 2)
    .catch(() => 0);
}"#,
    ),
    (
        "unicode names and text",
        r#"async () => {
  const сумма = [1, 2, 3].reduce((a, b) => a + b, 0);
  const greeting = "привет, мир — ¡hola! 你好 🎉";
  const ñame = "ok";
  return { сумма, greeting, ñame, len: greeting.length };
}"#,
    ),
    (
        "object literal accessors and methods",
        r#"async () => {
  const account = {
    balance: 10,
    get doubled() { return this.balance * 2; },
    set amount(v) { this.balance = v; },
    deposit(x) { this.balance += x; return this.balance; },
  };
  account.amount = 5;
  return [account.deposit(3), account.doubled];
}"#,
    ),
    (
        "parenthesised arrow with comments and semicolon",
        r#"// fetches the weather
(async () => {
  /* one call */
  return await forge.callTool("weather", "today", { city: "Oslo" });
});
// done"#,
    ),
    (
        "arrow with parameters and expression body",
        r#"async (input = {}) => ({ doubled: (input.x ?? 1) * 2, division: 10 / 2 / 5 })"#,
    ),
    (
        "deeply but reasonably nested logic",
        r#"async () => {
  const report = [];
  for (const org of await forge.callTool("gh", "orgs", {})) {
    try {
      for (const repo of org.repos ?? []) {
        if (repo.archived) continue;
        const issues = await Promise.all((repo.labels ?? []).map(async (label) => {
          const res = await forge.callTool("gh", "issues", { repo: repo.name, label, state: "open", opts: { page: { size: 50, cursor: null } } });
          return res?.items?.filter((i) => i.comments > 2 && !i.locked).map((i) => ({ id: i.id, title: i.title.trim() })) ?? [];
        }));
        report.push({ repo: repo.name, issues: issues.flat() });
      }
    } catch (e) {
      report.push({ org: org.name, error: String(e) });
    }
  }
  return report;
}"#,
    ),
    (
        "feature check with typeof require",
        r#"async () => {
  // Code written for Node and browsers alike checks what exists first.
  const inNode = typeof require === "function" && typeof module !== "undefined";
  const hasProxy = typeof Proxy !== "undefined";
  const hasReflect = typeof globalThis.Reflect === "object";
  return { inNode, hasProxy, hasReflect };
}"#,
    ),
    (
        "base64 helper with String.fromCharCode",
        r#"async () => {
  const toBase64 = (bytes) => btoa(String.fromCharCode(...bytes));
  const fromBase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const letters = Array.from({ length: 26 }, (_, i) => String.fromCodePoint(97 + i)).join("");
  return { b64: toBase64([104, 105]), back: hex(fromBase64("aGk=")), letters };
}"#,
    ),
    (
        "instanceof checks against built-in constructors",
        r#"async () => {
  const kinds = [() => 1, new Date(0), [1], new Map()].map((v) =>
    v instanceof Function ? "function" : v instanceof Date ? "date" : Array.isArray(v) ? "array" : "other");
  return kinds;
}"#,
    ),
];
