// The JS half of the quickforge guest: `forge`, `manifest`, `console`, `ForgeError`.
//
// This file is one function expression. The guest compiles it once, at
// snapshot time, and calls it with `host`, an object of native functions that
// reach the WIT imports. `host` is never stored on the global object: only the
// closures below can reach it. Every built-in this file relies on is captured
// here, before any script runs, so a script that replaces `JSON.parse` or
// `Map.prototype.get` changes nothing in this machinery. Nor does what a
// script puts on a prototype: this file writes array elements and result
// fields as own properties (`own`), never by assignment, which a setter on
// `Array.prototype[0]` would catch; it locks `then`, `constructor` and
// `Symbol.species` of `Promise`, which every `await` consults; and it shields
// every value it resolves a promise with from a `then` a script put on
// `Object.prototype` or `Array.prototype` (`shield`).
//
// The public shape of this API is documented in `host/forge.d.ts`.
(function (host) {
  "use strict";

  const global = globalThis;
  const ObjectCreate = Object.create;
  const ObjectFreeze = Object.freeze;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectKeys = Object.keys;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectProto = Object.prototype;
  const ArrayProto = Array.prototype;
  const WeakMapCtor = WeakMap;
  const WeakMapHas = WeakMap.prototype.has;
  const WeakMapSet = WeakMap.prototype.set;
  const ArrayIsArray = Array.isArray;
  const apply = Reflect.apply;
  const ProxyCtor = Proxy;
  const PromiseCtor = Promise;
  const PromiseResolve = Promise.resolve;
  const promiseResolve = (v) => apply(PromiseResolve, PromiseCtor, [v]);
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const StringCtor = String;
  const toWellFormed = String.prototype.toWellFormed;
  const startsWith = String.prototype.startsWith;
  const stringSlice = String.prototype.slice;
  const ErrorCtor = Error;
  const NumberIsFinite = Number.isFinite;
  const MathFloor = Math.floor;
  const MathMin = Math.min;
  const MathMax = Math.max;
  const U32_MAX = 4294967295;

  // `o[key] = value` as an own data property: an assignment would run a
  // setter a script put on a prototype (`Array.prototype[0]`) instead.
  const own = (o, key, value) => ObjectDefineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });

  // Whether resolving a promise with `v` (a plain object or array this file
  // or the host made) would find a `then` on its prototypes, which a script
  // put there: resolution would call it and take whatever it hands back.
  // Only the intrinsic prototypes are read, by descriptor, so no script
  // code runs; any other prototype (a script re-parented Array.prototype)
  // counts as one.
  function inheritsThen(v) {
    for (let p = ObjectGetPrototypeOf(v); p !== null; p = ObjectGetPrototypeOf(p)) {
      if (p !== ObjectProto && p !== ArrayProto) return true;
      if (ObjectGetOwnPropertyDescriptor(p, "then") !== undefined) return true;
    }
    return false;
  }

  // `v`, which a promise of this machinery is about to resolve with, with an
  // own, non-enumerable `then: undefined` when a prototype's `then` would
  // otherwise be found: resolution then fulfills with `v` itself. Nothing is
  // added unless a script put a `then` on a prototype; JSON and keys are
  // unchanged either way.
  function shield(v) {
    if (v !== null && typeof v === "object" && ObjectGetOwnPropertyDescriptor(v, "then") === undefined && inheritsThen(v)) {
      ObjectDefineProperty(v, "then", { value: undefined, writable: true, enumerable: false, configurable: true });
    }
    return v;
  }

  // The codes the prelude reports itself, and every code quickforge
  // reports, from the list the host shares (the WIT enum error-code).
  const codes = host.codes;

  // -- ForgeError -----------------------------------------------------------

  /** What every failure of a `forge.*` call throws. */
  class ForgeError extends ErrorCtor {
    constructor(code, message, retryable, suggestion) {
      super(message);
      // Own data properties, defined rather than assigned, so that nothing a
      // script puts on Object.prototype (setters, read-only fields) changes them.
      const field = (value, enumerable) => ({ value, enumerable, writable: true, configurable: true });
      ObjectDefineProperty(this, "name", field("ForgeError", false));
      ObjectDefineProperty(this, "code", field(StringCtor(code), true));
      ObjectDefineProperty(this, "retryable", field(!!retryable, true));
      ObjectDefineProperty(this, "suggestion", field(suggestion == null ? null : StringCtor(suggestion), true));
      // Forgemax's names for the same facts (its failed calls resolve to
      // {error: true, code, message, retryable, suggested_fix}), so its
      // error-handling snippets read them from what quickforge throws.
      // Not enumerable: the JSON form stays the one above.
      ObjectDefineProperty(this, "error", field(true, false));
      ObjectDefineProperty(this, "suggested_fix", field(this.suggestion, false));
    }
    toJSON() {
      return { name: "ForgeError", code: this.code, message: this.message, retryable: this.retryable, suggestion: this.suggestion };
    }
  }
  ObjectDefineProperty(ForgeError, "codes", { value: ObjectFreeze(codes.all), enumerable: true, writable: false, configurable: false });
  ObjectFreeze(ForgeError.prototype);
  ObjectFreeze(ForgeError);

  // `host` natives report a failure by throwing [code, message, retryable,
  // suggestion]; `native` turns that into a ForgeError.
  const toError = (e) => new ForgeError(e[0], e[1], e[2], e[3]);
  function native(f, a, b, c) {
    try {
      return f(a, b, c);
    } catch (e) {
      throw ArrayIsArray(e) ? toError(e) : e;
    }
  }
  const usage = (message, suggestion) => new ForgeError(codes.invalidArgument, message, false, suggestion);

  // -- forge ----------------------------------------------------------------

  function requireName(what, value) {
    if (typeof value !== "string" || value.length === 0) {
      throw usage(`${what} must be a non-empty string, got ${describe(value)}`, null);
    }
  }

  function describe(value) {
    if (value === null) return "null";
    if (ArrayIsArray(value)) return "an array";
    return typeof value;
  }

  // Native: type checks, JSON encoding and the promise all happen in Rust.
  const callTool = host.callTool;
  const readResource = host.readResource;
  ObjectFreeze(callTool);
  ObjectFreeze(readResource);

  const NOT_TOOL_NAMES = ObjectFreeze({
    __proto__: null,
    then: true,
    toString: true,
    valueOf: true,
    toJSON: true,
    toLocaleString: true,
    constructor: true,
    prototype: true,
    name: true,
    length: true,
    apply: true,
    call: true,
    bind: true,
  });

  // `forge.server(name).tool(args)` and `forge.server(name).category.tool(args)`:
  // every property step extends a dotted tool name; calling it calls the tool.
  function server(name) {
    requireName("server", name);
    const node = (path) =>
      new ProxyCtor(() => {}, {
        get(_, prop) {
          // Symbols, `then` (so that `await forge.server(x)` does not call a
          // tool named "then") and the names that conversions and function
          // machinery look up (so that `String(proxy)` calls no tool) are not
          // tool names.
          if (typeof prop !== "string" || NOT_TOOL_NAMES[prop] === true) return undefined;
          return node(path === null ? prop : `${path}.${prop}`);
        },
        apply(_, __, argv) {
          // Forgemax files undotted tools under the category `general`, and
          // its `forge.server(s).general.tool()` calls `tool`.
          if (path !== null && apply(startsWith, path, ["general."])) return callTool(name, apply(stringSlice, path, [8]), argv[0]);
          if (path === null) {
            return new PromiseCtor((_, reject) =>
              reject(usage(`forge.server("${name}") is not a function`, `call a tool: forge.server("${name}").<tool>(args)`)),
            );
          }
          return callTool(name, path, argv[0]);
        },
        set() {
          return false;
        },
        defineProperty() {
          return false;
        },
      });
    return node(null);
  }

  // Stash operations complete synchronously on the host; they still return
  // promises so that scripts written for Forgemax (`await forge.stash.get(k)`)
  // run unchanged.
  function settled(fn) {
    try {
      return promiseResolve(shield(fn()));
    } catch (e) {
      return new PromiseCtor((_, reject) => reject(e));
    }
  }

  const stash = ObjectFreeze({
    put(key, value, options) {
      return settled(() => {
        requireName("key", key);
        let ttl = options == null ? undefined : options.ttl;
        if (ttl !== undefined && (typeof ttl !== "number" || !NumberIsFinite(ttl) || ttl <= 0)) {
          throw usage(`ttl must be a positive number of seconds, got ${StringCtor(ttl)}`, null);
        }
        let json;
        try {
          json = jsonStringify(value === undefined ? null : value);
        } catch (e) {
          throw usage(`stash value is not serializable to JSON: ${e && e.message}`, "store plain data: no BigInt, no cycles");
        }
        native(host.stashPut, key, json, ttl === undefined ? undefined : MathMax(1, MathFloor(ttl)));
        return { ok: true };
      });
    },
    get(key) {
      return settled(() => {
        requireName("key", key);
        const json = native(host.stashGet, key);
        return json == null ? null : jsonParse(json);
      });
    },
    delete(key) {
      return settled(() => {
        requireName("key", key);
        return { deleted: native(host.stashDelete, key) };
      });
    },
    keys() {
      return settled(() => native(host.stashKeys));
    },
  });

  // Default of `forge.parallel`'s concurrency. Eight overlaps the waits of
  // a typical batch without queueing behind one server's in-flight slots
  // (`max_in_flight`, 16 by default). The ceiling is the host's
  // (`[sandbox] max_parallel`), read per run.
  const PARALLEL_DEFAULT = 8;
  const maxParallel = host.maxParallel;

  // Runs `calls` (functions, or `{ fn }` descriptors) with at most
  // `concurrency` in flight. Resolves to { results, errors, aborted }, as
  // Forgemax's does: results[i] is call i's value (null if it failed or
  // never ran), errors lists { index, error, code, retryable, suggestion }
  // for the failures (error: the message, as Forgemax gives it), aborted
  // says whether failFast stopped the remaining calls after the first
  // failure.
  async function parallel(calls, options) {
    if (!ArrayIsArray(calls)) {
      throw usage(`forge.parallel expects an array of functions, got ${describe(calls)}`, "forge.parallel([() => forge.callTool(...), ...])");
    }
    // No default object to read: a field a script put on Object.prototype
    // (`failFast`, `concurrency`) must not become this call's option.
    const opts = options == null ? ObjectCreate(null) : options;
    const ceiling = maxParallel();
    let concurrency = opts.concurrency === undefined ? MathMin(PARALLEL_DEFAULT, ceiling) : opts.concurrency;
    if (typeof concurrency !== "number" || !NumberIsFinite(concurrency) || concurrency < 1) {
      throw usage(`concurrency must be a number >= 1, got ${StringCtor(concurrency)}`, null);
    }
    concurrency = MathMin(MathFloor(concurrency), ceiling);
    const failFast = !!opts.failFast;
    const n = calls.length;
    const results = [];
    for (let i = 0; i < n; i++) own(results, i, null);
    const errors = [];
    let next = 0;
    let aborted = false;

    async function worker() {
      while (!aborted && next < n) {
        const index = next++;
        const call = calls[index];
        const fn = typeof call === "function" ? call : call != null ? call.fn : undefined;
        try {
          if (typeof fn !== "function") {
            throw usage(`forge.parallel: item ${index} is not a function or { fn }`, null);
          }
          own(results, index, await fn());
        } catch (e) {
          const p = plainError(e);
          own(errors, errors.length, { index, error: p.message, code: p.code, retryable: p.retryable, suggestion: p.suggestion });
          if (failFast) aborted = true;
        }
      }
    }
    const workers = [];
    for (let i = 0; i < MathMin(concurrency, n); i++) own(workers, i, worker());
    for (let i = 0; i < workers.length; i++) await workers[i];
    return shield({ results, errors, aborted });
  }

  function plainError(e) {
    if (e instanceof ForgeError) return e.toJSON();
    if (e !== null && typeof e === "object") {
      return { name: StringCtor(e.name), code: codes.thrown, message: StringCtor(e.message), retryable: false, suggestion: null };
    }
    return { name: "Error", code: codes.thrown, message: StringCtor(e), retryable: false, suggestion: null };
  }

  // -- logging --------------------------------------------------------------

  function format(value) {
    if (typeof value === "string") return value;
    if (value instanceof ErrorCtor) return `${value.name}: ${value.message}`;
    if (value === undefined) return "undefined";
    if (typeof value === "function") return `[function ${value.name || "anonymous"}]`;
    if (typeof value === "bigint") return `${value}n`;
    if (typeof value === "symbol") return value.toString();
    try {
      const s = jsonStringify(value);
      return s === undefined ? StringCtor(value) : s;
    } catch (e) {
      return StringCtor(value);
    }
  }

  function logger(level) {
    return function () {
      let line = "";
      for (let i = 0; i < arguments.length; i++) {
        line += (i === 0 ? "" : " ") + format(arguments[i]);
      }
      // Lone surrogates cannot cross into UTF-8; replace them with U+FFFD.
      host.log(level, apply(toWellFormed, line, []));
    };
  }

  // forge.progress(done, total?, message?): the client's progress bar, when
  // it asked for one. Numbers only; the host coalesces and bounds the rest.
  function progress(done, total, message) {
    if (typeof done !== "number" || !NumberIsFinite(done)) {
      throw usage(`forge.progress: done must be a finite number, got ${describe(done)}`, "e.g. forge.progress(3, 10, \"3 of 10 files\")");
    }
    const t = typeof total === "number" && NumberIsFinite(total) ? total : undefined;
    const m = message === undefined || message === null ? undefined : apply(toWellFormed, StringCtor(message), []);
    host.progress(done, t, m);
  }

  const forge = ObjectFreeze({
    callTool,
    server,
    readResource,
    stash,
    parallel,
    log: logger("info"),
    progress,
  });

  const console = ObjectFreeze({
    log: logger("info"),
    info: logger("info"),
    debug: logger("debug"),
    warn: logger("warn"),
    error: logger("error"),
  });

  // -- manifest -------------------------------------------------------------

  const manifest = ObjectFreeze(
    ObjectCreate(Object.prototype, {
      servers: {
        enumerable: true,
        get() {
          // Not cached: what a run may see narrows when its first call
          // locks it to a strict group.
          return jsonParse(host.manifestServers());
        },
      },
      search: {
        enumerable: true,
        value: function search(query, options) {
          if (typeof query !== "string") {
            throw usage(`manifest.search expects a string query, got ${describe(query)}`, 'manifest.search("issues")');
          }
          let limit = options == null || options.limit === undefined ? 10 : options.limit;
          if (typeof limit !== "number" || !NumberIsFinite(limit) || limit < 1) {
            throw usage(`limit must be a number >= 1, got ${StringCtor(limit)}`, null);
          }
          // The host caps the limit (MAX_SEARCH_LIMIT); this only keeps it
          // inside the WIT u32 it travels as.
          return jsonParse(native(host.manifestSearch, query, MathMin(MathFloor(limit), U32_MAX)));
        },
      },
      tool: {
        enumerable: true,
        value: function tool(server, name) {
          requireName("server", server);
          requireName("tool", name);
          return jsonParse(native(host.manifestTool, server, name));
        },
      },
    }),
  );

  // -- hints for a forgotten `await` ----------------------------------------

  // A property a Promise does not have, read on one, is almost always a
  // forgotten `await` (`r.split(" ")`, `r.items.length`). Promise.prototype
  // gets a prototype of its own: a Proxy over Object.prototype that turns
  // such a read into a TypeError saying so. Symbols, what Object.prototype
  // has and `toJSON` (JSON.stringify's probe) read as usual, so `await`,
  // conversions and serialization are untouched; only a read that would
  // have given `undefined` throws.
  const TypeErrorCtor = TypeError;
  const ReflectGet = Reflect.get;
  Object.setPrototypeOf(
    PromiseCtor.prototype,
    new ProxyCtor(ObjectProto, {
      get(target, prop, receiver) {
        if (typeof prop === "symbol" || prop in target || prop === "toJSON") return apply(ReflectGet, undefined, [target, prop, receiver]);
        throw new TypeErrorCtor(`cannot read .${prop} of a Promise: the value is a Promise, not its result; add \`await\` (e.g. \`const r = await forge.callTool(...)\`)`);
      },
    }),
  );

  // Most values `promisePath` visits: a result is data, seldom this large,
  // and the walk only runs when the fast JSON encoder has given up.
  const MAX_VISIT = 100000;

  // Where a result holds a Promise (`result.r`, `result.items[2]`), or null.
  function promisePath(value) {
    const seen = new WeakMapCtor();
    let visited = 0;
    const walk = (v, path) => {
      if (v === null || typeof v !== "object" || visited++ > MAX_VISIT) return null;
      if (v instanceof PromiseCtor) return path;
      if (apply(WeakMapHas, seen, [v])) return null;
      apply(WeakMapSet, seen, [v, true]);
      // Data properties only: a getter runs when the result is encoded,
      // and must run exactly once.
      const array = ArrayIsArray(v);
      const keys = ObjectKeys(v);
      for (let i = 0; i < keys.length; i++) {
        const d = ObjectGetOwnPropertyDescriptor(v, keys[i]);
        if (d === undefined || !("value" in d)) continue;
        const found = walk(d.value, array ? `${path}[${keys[i]}]` : `${path}.${keys[i]}`);
        if (found !== null) return found;
      }
      return null;
    };
    return walk(value, "result");
  }

  // -- the global object ----------------------------------------------------

  const hidden = (name, value) =>
    ObjectDefineProperty(global, name, { value, enumerable: false, writable: false, configurable: false });
  hidden("forge", forge);
  hidden("manifest", manifest);
  hidden("ForgeError", ForgeError);
  hidden("console", console);

  // Deny by default: the sandbox context has no eval intrinsic, so `eval` and
  // every Function constructor already throw; remove the names as well, and
  // the Proxy constructor, which only `forge.server` needs (captured above).
  delete global.eval;
  delete global.Proxy;
  // Without threads it is only an ArrayBuffer, but nothing needs it.
  delete global.SharedArrayBuffer;
  // V8's stack hook would hand a script the prelude's own functions as live
  // objects (CallSite.getFunction); pin it to undefined.
  ObjectDefineProperty(ErrorCtor, "prepareStackTrace", { value: undefined, writable: false, enumerable: false, configurable: false });
  ObjectDefineProperty(Math, "random", { value: host.random, enumerable: false, writable: true, configurable: true });

  // Every `await` of a promise reads its `constructor` (and, when that is not
  // Promise, its `then`), and `then` reads `Symbol.species`: locked as they
  // are, so that what `await forge.callTool(...)` yields, and what
  // forge.parallel collects, is what the call resolved with. An assignment
  // to them is ignored (a TypeError in strict code).
  const PromiseProto = PromiseCtor.prototype;
  const lock = (o, key) => {
    const d = ObjectGetOwnPropertyDescriptor(o, key);
    d.configurable = false;
    if ("value" in d) d.writable = false;
    ObjectDefineProperty(o, key, d);
  };
  lock(PromiseProto, "then");
  lock(PromiseProto, "constructor");
  lock(PromiseCtor, Symbol.species);

  // The guest's hooks: what its Rust half calls during a run.
  return ObjectFreeze({
    makeError: (code, message, retryable, suggestion) => new ForgeError(code, message, retryable, suggestion),
    toPromise: promiseResolve,
    isForgeError: (e) => e instanceof ForgeError,
    promisePath,
    shield,
  });
})
