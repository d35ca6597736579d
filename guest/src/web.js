// The web-platform globals of the quickforge guest: timers, AbortController,
// URL, TextEncoder/TextDecoder, atob/btoa, structuredClone, crypto,
// performance, DOMException.
//
// Like `prelude.js`, this file is one function expression, compiled once at
// snapshot time and called with `host` (the natives, see `apis/`). The
// globals it defines are writable and configurable, as on the web: a script
// may shadow them for itself, which reaches nothing of quickforge's.
// What the guest's Rust half calls (`fireTimer`, `withSignal`) is returned
// as hooks and closes over built-ins captured here, before any script runs.
(function (host) {
  "use strict";

  const global = globalThis;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectKeys = Object.keys;
  const ObjectToString = Object.prototype.toString;
  const ArrayIsArray = Array.isArray;
  const apply = Reflect.apply;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const MapCtor = Map;
  const SetCtor = Set;
  const WeakMapCtor = WeakMap;
  const DateCtor = Date;
  const RegExpCtor = RegExp;
  const PromiseCtor = Promise;
  const ArrayBufferCtor = ArrayBuffer;
  const Uint8ArrayCtor = Uint8Array;
  const DataViewCtor = DataView;
  const isView = ArrayBuffer.isView;
  const fromCharCode = String.fromCharCode;
  const toWellFormed = String.prototype.toWellFormed;
  const charCodeAt = String.prototype.charCodeAt;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const mapForEach = Map.prototype.forEach;
  const setAdd = Set.prototype.add;
  const setForEach = Set.prototype.forEach;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const promiseThen = Promise.prototype.then;
  const dateGetTime = Date.prototype.getTime;
  const bufferSlice = ArrayBuffer.prototype.slice;
  const arrayPush = Array.prototype.push;
  const arraySplice = Array.prototype.splice;
  const MAX_DELAY = 2147483647;

  const mget = (m, k) => apply(mapGet, m, [k]);
  const mset = (m, k, v) => apply(mapSet, m, [k, v]);
  const mdel = (m, k) => apply(mapDelete, m, [k]);
  const wget = (m, k) => apply(weakGet, m, [k]);
  const wset = (m, k, v) => apply(weakSet, m, [k, v]);
  const push = (a, v) => apply(arrayPush, a, [v]);
  const tagOf = (v) => apply(ObjectToString, v, []).slice(8, -1);
  const describe = (v) => (v === null ? "null" : ArrayIsArray(v) ? "an array" : typeof v);

  // -- DOMException -----------------------------------------------------------

  const DOM_CODES = {
    __proto__: null,
    IndexSizeError: 1,
    InvalidCharacterError: 5,
    NotFoundError: 8,
    NotSupportedError: 9,
    InvalidStateError: 11,
    SyntaxError: 12,
    TypeMismatchError: 17,
    AbortError: 20,
    QuotaExceededError: 22,
    TimeoutError: 23,
    DataCloneError: 25,
  };

  class DOMException extends ErrorCtor {
    constructor(message, name) {
      super(message === undefined ? "" : StringCtor(message));
      ObjectDefineProperty(this, "name", { value: name === undefined ? "Error" : StringCtor(name), writable: true, configurable: true });
    }
    get code() {
      return DOM_CODES[this.name] || 0;
    }
  }
  const domError = (message, name) => new DOMException(message, name);

  // -- timers -----------------------------------------------------------------

  // handle → timer, and the host's timer id → timer. A timer is
  // { handle, fn, args, delay, repeat, due, host }.
  const timers = new MapCtor();
  const byHost = new MapCtor();
  let lastHandle = 0;

  function delayOf(ms) {
    const n = +ms;
    if (!(n > 0)) return 0;
    return n > MAX_DELAY ? MAX_DELAY : n;
  }

  function arm(t) {
    t.due = host.now() + t.delay;
    t.host = host.timerStart(t.delay);
    mset(byHost, t.host, t);
  }

  function schedule(fn, ms, args, repeat, name) {
    if (typeof fn !== "function") {
      throw new TypeErrorCtor(`${name} expects a function, got ${describe(fn)}; e.g. ${name}(() => work(), 100)`);
    }
    const t = { handle: ++lastHandle, fn, args, delay: delayOf(ms), repeat, due: 0, host: 0 };
    arm(t);
    mset(timers, t.handle, t);
    return t.handle;
  }

  function clear(handle) {
    const t = mget(timers, handle);
    if (t === undefined) return;
    mdel(timers, handle);
    mdel(byHost, t.host);
    host.cancel(t.host);
  }

  // The host completed timer `hostId`. One completion fires one timer: the
  // earliest due (ties in the order they were set), which is this one
  // unless the host's sleeps woke out of order; then this timer takes over
  // the earlier one's pending host timer. Promise jobs run between two
  // timers, as on the web.
  function fireTimer(hostId) {
    const t = mget(byHost, hostId);
    if (t === undefined) return;
    mdel(byHost, hostId);
    let first = t;
    apply(mapForEach, timers, [
      (x) => {
        if (x.due < first.due || (x.due === first.due && x.handle < first.handle)) first = x;
      },
    ]);
    if (first !== t) {
      mdel(byHost, first.host);
      t.host = first.host;
      mset(byHost, t.host, t);
    }
    if (first.repeat) arm(first);
    else mdel(timers, first.handle);
    apply(first.fn, undefined, first.args);
  }

  function setTimeout(fn, ms, ...args) {
    return schedule(fn, ms, args, false, "setTimeout");
  }
  function setInterval(fn, ms, ...args) {
    return schedule(fn, ms, args, true, "setInterval");
  }
  function clearTimeout(handle) {
    clear(handle);
  }
  function clearInterval(handle) {
    clear(handle);
  }
  const resolved = PromiseCtor.resolve();
  function queueMicrotask(fn) {
    if (typeof fn !== "function") throw new TypeErrorCtor(`queueMicrotask expects a function, got ${describe(fn)}`);
    apply(promiseThen, resolved, [() => fn()]);
  }

  // -- Event, EventTarget, AbortController, AbortSignal -----------------------

  class Event {
    constructor(type) {
      this.type = StringCtor(type);
      this.target = null;
    }
  }

  const listenersOf = new WeakMapCtor();
  class EventTarget {
    constructor() {
      wset(listenersOf, this, []);
    }
    addEventListener(type, listener, options) {
      const list = wget(listenersOf, this);
      if (list === undefined || listener == null) return;
      for (let i = 0; i < list.length; i++) if (list[i].type === type && list[i].listener === listener) return;
      const once = options !== null && typeof options === "object" && !!options.once;
      push(list, { type: StringCtor(type), listener, once });
    }
    removeEventListener(type, listener) {
      const list = wget(listenersOf, this);
      if (list === undefined) return;
      for (let i = 0; i < list.length; i++) {
        if (list[i].type === type && list[i].listener === listener) {
          apply(arraySplice, list, [i, 1]);
          return;
        }
      }
    }
    dispatchEvent(event) {
      const list = wget(listenersOf, this);
      if (list === undefined) return true;
      event.target = this;
      const handler = this["on" + event.type];
      if (typeof handler === "function") apply(handler, this, [event]);
      const now = [];
      for (let i = 0; i < list.length; i++) if (list[i].type === event.type) push(now, list[i]);
      for (let i = 0; i < now.length; i++) {
        const { listener, once } = now[i];
        if (once) this.removeEventListener(event.type, listener);
        if (typeof listener === "function") apply(listener, this, [event]);
        else if (listener !== null && typeof listener === "object" && typeof listener.handleEvent === "function") listener.handleEvent(event);
      }
      return true;
    }
  }

  // signal → { aborted, reason, onAbort: [internal callbacks] }
  const signals = new WeakMapCtor();
  const INTERNAL = {};
  const signalState = (s) => {
    const st = s !== null && typeof s === "object" ? wget(signals, s) : undefined;
    if (st === undefined) throw new TypeErrorCtor(`expected an AbortSignal, got ${describe(s)}`);
    return st;
  };

  function abortSignal(signal, reason) {
    const st = wget(signals, signal);
    if (st.aborted) return;
    st.aborted = true;
    st.reason = reason === undefined ? domError("This operation was aborted", "AbortError") : reason;
    const internal = st.onAbort;
    st.onAbort = [];
    for (let i = 0; i < internal.length; i++) internal[i]();
    signal.dispatchEvent(new Event("abort"));
  }

  class AbortSignal extends EventTarget {
    constructor(key) {
      if (key !== INTERNAL) throw new TypeErrorCtor("Illegal constructor: use new AbortController().signal, AbortSignal.timeout(ms) or AbortSignal.abort()");
      super();
      wset(signals, this, { aborted: false, reason: undefined, onAbort: [] });
      this.onabort = null;
    }
    get aborted() {
      return signalState(this).aborted;
    }
    get reason() {
      return signalState(this).reason;
    }
    throwIfAborted() {
      const st = signalState(this);
      if (st.aborted) throw st.reason;
    }
    static abort(reason) {
      const s = new AbortSignal(INTERNAL);
      abortSignal(s, reason);
      return s;
    }
    static timeout(ms) {
      const s = new AbortSignal(INTERNAL);
      schedule(() => abortSignal(s, domError("The operation timed out.", "TimeoutError")), ms, [], false, "AbortSignal.timeout");
      return s;
    }
    static any(list) {
      const s = new AbortSignal(INTERNAL);
      const all = [];
      for (const x of list) push(all, x);
      for (let i = 0; i < all.length; i++) {
        const st = signalState(all[i]);
        if (st.aborted) {
          abortSignal(s, st.reason);
          return s;
        }
      }
      for (let i = 0; i < all.length; i++) {
        const st = signalState(all[i]);
        push(st.onAbort, () => abortSignal(s, st.reason));
      }
      return s;
    }
  }

  class AbortController {
    constructor() {
      ObjectDefineProperty(this, "signal", { value: new AbortSignal(INTERNAL), enumerable: true });
    }
    abort(reason) {
      abortSignal(this.signal, reason);
    }
  }

  // `forge.callTool(server, tool, args, { signal })`: the call's promise, or
  // one that rejects with the signal's reason once it aborts; the host then
  // drops the call, which cancels it.
  function withSignal(promise, options, id) {
    const signal = options !== null && typeof options === "object" ? options.signal : undefined;
    if (signal === undefined || signal === null) return promise;
    let st;
    try {
      st = signalState(signal);
    } catch (e) {
      host.cancel(id);
      return new PromiseCtor((_, reject) => reject(new TypeErrorCtor(`callTool's options.signal must be an AbortSignal, got ${describe(signal)}`)));
    }
    if (st.aborted) {
      host.cancel(id);
      return new PromiseCtor((_, reject) => reject(st.reason));
    }
    return new PromiseCtor((resolve, reject) => {
      let done = false;
      push(st.onAbort, () => {
        if (done) return;
        done = true;
        host.cancel(id);
        reject(st.reason);
      });
      apply(promiseThen, promise, [
        (v) => {
          done = true;
          resolve(v);
        },
        (e) => {
          done = true;
          reject(e);
        },
      ]);
    });
  }

  // -- TextEncoder, TextDecoder, atob, btoa -----------------------------------

  // A Uint8Array over the bytes of an ArrayBuffer or any view of one.
  function bytesOf(input, what) {
    if (input instanceof Uint8ArrayCtor) return input;
    if (isView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
    if (input instanceof ArrayBufferCtor) return new Uint8ArrayCtor(input);
    throw new TypeErrorCtor(`${what} expects an ArrayBuffer or a typed array, got ${describe(input)}`);
  }

  const wellFormed = (s) => apply(toWellFormed, StringCtor(s), []);

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input) {
      return host.encodeUtf8(input === undefined ? "" : wellFormed(input));
    }
    encodeInto(input, dest) {
      const bytes = this.encode(input);
      let n = bytes.length <= dest.length ? bytes.length : dest.length;
      // Never split a character: back up to the start of one.
      while (n < bytes.length && n > 0 && (bytes[n] & 0xc0) === 0x80) n--;
      for (let i = 0; i < n; i++) dest[i] = bytes[i];
      const read = host.decodeUtf8(new Uint8ArrayCtor(bytes.buffer, 0, n), false, true).length;
      return { read, written: n };
    }
  }

  const UTF8_LABELS = { __proto__: null, "utf-8": true, utf8: true, "unicode-1-1-utf-8": true };
  const decoderState = new WeakMapCtor();
  class TextDecoder {
    constructor(label, options) {
      const name = label === undefined ? "utf-8" : StringCtor(label).trim().toLowerCase();
      if (UTF8_LABELS[name] !== true) {
        throw new RangeErrorCtor(`TextDecoder: the encoding "${name}" is not supported; quickforge decodes utf-8 only`);
      }
      const o = options == null ? {} : options;
      wset(decoderState, this, { fatal: !!o.fatal, ignoreBOM: !!o.ignoreBOM });
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return wget(decoderState, this).fatal;
    }
    get ignoreBOM() {
      return wget(decoderState, this).ignoreBOM;
    }
    // `{ stream: true }` is not supported: every call decodes a whole text.
    decode(input) {
      const st = wget(decoderState, this);
      if (input === undefined) return "";
      return host.decodeUtf8(bytesOf(input, "TextDecoder.decode"), st.fatal, st.ignoreBOM);
    }
  }

  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_INDEX = {};
  for (let i = 0; i < 64; i++) B64_INDEX[B64[i]] = i;

  function btoa(data) {
    if (arguments.length === 0) throw new TypeErrorCtor("btoa expects 1 argument");
    const s = StringCtor(data);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const a = apply(charCodeAt, s, [i]);
      const b = i + 1 < s.length ? apply(charCodeAt, s, [i + 1]) : 0;
      const c = i + 2 < s.length ? apply(charCodeAt, s, [i + 2]) : 0;
      if (a > 255 || b > 255 || c > 255) {
        throw domError("btoa: the string contains characters outside of the Latin1 range; encode it first, e.g. btoa(String.fromCharCode(...new TextEncoder().encode(text)))", "InvalidCharacterError");
      }
      const n = (a << 16) | (b << 8) | c;
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
      out += i + 1 < s.length ? B64[(n >> 6) & 63] : "=";
      out += i + 2 < s.length ? B64[n & 63] : "=";
    }
    return out;
  }

  // The HTML Standard's forgiving-base64 decode.
  function atob(data) {
    if (arguments.length === 0) throw new TypeErrorCtor("atob expects 1 argument");
    const raw = StringCtor(data);
    let s = "";
    for (let i = 0; i < raw.length; i++) {
      const ch = raw[i];
      if (ch !== " " && ch !== "\t" && ch !== "\n" && ch !== "\f" && ch !== "\r") s += ch;
    }
    if (s.length % 4 === 0 && s.length > 0 && s[s.length - 1] === "=") {
      s = s.slice(0, s[s.length - 2] === "=" ? -2 : -1);
    }
    const bad = () => domError("atob: the string is not correctly encoded base64", "InvalidCharacterError");
    if (s.length % 4 === 1) throw bad();
    let out = "";
    let bits = 0;
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const v = B64_INDEX[s[i]];
      if (v === undefined) throw bad();
      bits = (bits << 6) | v;
      n += 6;
      if (n >= 8) {
        n -= 8;
        out += fromCharCode((bits >> n) & 255);
      }
    }
    return out;
  }

  // -- structuredClone --------------------------------------------------------

  const TYPED = {
    __proto__: null,
    Int8Array,
    Uint8Array,
    Uint8ClampedArray,
    Int16Array,
    Uint16Array,
    Int32Array,
    Uint32Array,
    Float32Array,
    Float64Array,
    BigInt64Array,
    BigUint64Array,
  };
  const ERRORS = { __proto__: null, Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
  const UNCLONEABLE = { __proto__: null, Promise: true, WeakMap: true, WeakSet: true, WeakRef: true, FinalizationRegistry: true, Generator: true, AsyncGenerator: true };

  function cannotClone(what) {
    return domError(`structuredClone: ${what} could not be cloned; clone plain data (objects, arrays, Map, Set, Date, RegExp, typed arrays)`, "DataCloneError");
  }

  function clone(v, seen) {
    const t = typeof v;
    if (t === "function") throw cannotClone(`the function ${v.name || "(anonymous)"}`);
    if (t === "symbol") throw cannotClone(`the symbol ${v.toString()}`);
    if (v === null || t !== "object") return v;
    const known = mget(seen, v);
    if (known !== undefined) return known;
    const tag = tagOf(v);
    let out;
    if (tag === "Date") out = new DateCtor(apply(dateGetTime, v, []));
    else if (tag === "RegExp") out = new RegExpCtor(v.source, v.flags);
    else if (tag === "ArrayBuffer") out = apply(bufferSlice, v, [0]);
    else if (tag === "DataView") out = new DataViewCtor(clone(v.buffer, seen), v.byteOffset, v.byteLength);
    else if (TYPED[tag] !== undefined && isView(v)) out = new TYPED[tag](clone(v.buffer, seen), v.byteOffset, v.length);
    else if (tag === "Boolean" || tag === "Number" || tag === "String" || tag === "BigInt") out = Object(v.valueOf());
    else if (UNCLONEABLE[tag] === true) throw cannotClone(`a ${tag}`);
    if (out !== undefined) {
      mset(seen, v, out);
      return out;
    }
    if (tag === "Map") {
      out = new MapCtor();
      mset(seen, v, out);
      apply(mapForEach, v, [(value, key) => mset(out, member(key, seen), member(value, seen))]);
      return out;
    }
    if (tag === "Set") {
      out = new SetCtor();
      mset(seen, v, out);
      apply(setForEach, v, [(value) => apply(setAdd, out, [member(value, seen)])]);
      return out;
    }
    if (tag === "Error") {
      const Ctor = ERRORS[v.name] || ErrorCtor;
      out = new Ctor(StringCtor(v.message));
      mset(seen, v, out);
      if (v.stack !== undefined) ObjectDefineProperty(out, "stack", { value: StringCtor(v.stack), writable: true, configurable: true });
      if ("cause" in v) ObjectDefineProperty(out, "cause", { value: member(v.cause, seen), writable: true, configurable: true });
      return out;
    }
    out = ArrayIsArray(v) ? new Array(v.length) : {};
    mset(seen, v, out);
    const keys = ObjectKeys(v);
    for (let i = 0; i < keys.length; i++) out[keys[i]] = member(v[keys[i]], seen);
    return out;
  }

  const member = clone;

  function structuredClone(value) {
    if (arguments.length === 0) throw new TypeErrorCtor("structuredClone expects 1 argument");
    return member(value, new MapCtor());
  }

  // -- crypto, performance ----------------------------------------------------

  const INTEGER_ARRAYS = { __proto__: null, Int8Array: 1, Uint8Array: 1, Uint8ClampedArray: 1, Int16Array: 1, Uint16Array: 1, Int32Array: 1, Uint32Array: 1, BigInt64Array: 1, BigUint64Array: 1 };
  // The Web Crypto API's own limit for one getRandomValues call.
  const MAX_RANDOM = 65536;

  function getRandomValues(array) {
    if (!isView(array) || INTEGER_ARRAYS[tagOf(array)] !== 1) {
      throw domError(`crypto.getRandomValues expects an integer typed array such as Uint8Array, got ${describe(array)}`, "TypeMismatchError");
    }
    if (array.byteLength > MAX_RANDOM) {
      throw domError(`crypto.getRandomValues: ${array.byteLength} bytes requested, over the ${MAX_RANDOM}-byte limit of one call`, "QuotaExceededError");
    }
    host.randomFill(new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }

  const HEX = [];
  for (let i = 0; i < 256; i++) HEX[i] = (i < 16 ? "0" : "") + i.toString(16);

  function randomUUID() {
    const b = new Uint8ArrayCtor(16);
    host.randomFill(b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = "";
    for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? "-" : "") + HEX[b[i]];
    return s;
  }

  const DIGESTS = { __proto__: null, "SHA-1": true, "SHA-256": true, "SHA-384": true, "SHA-512": true };

  function digest(algorithm, data) {
    return new PromiseCtor((resolve, reject) => {
      const name = StringCtor(algorithm !== null && typeof algorithm === "object" ? algorithm.name : algorithm).toUpperCase();
      if (DIGESTS[name] !== true) {
        reject(domError(`crypto.subtle.digest: unsupported algorithm ${JSON.stringify(StringCtor(algorithm && algorithm.name || algorithm))}; use SHA-1, SHA-256, SHA-384 or SHA-512`, "NotSupportedError"));
        return;
      }
      resolve(host.digest(name, bytesOf(data, "crypto.subtle.digest")));
    });
  }

  const crypto = { getRandomValues, randomUUID, subtle: { digest } };
  const performance = { now: () => host.now() };

  // -- URL, URLSearchParams ---------------------------------------------------

  // URL → { parts: [href, origin, protocol, ...] (see apis/url.rs), params }
  const urls = new WeakMapCtor();
  // URLSearchParams → { list: [[name, value], ...], url }
  const paramStates = new WeakMapCtor();
  const FIELDS = ["href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"];
  const urlState = (u) => {
    const st = u !== null && typeof u === "object" ? wget(urls, u) : undefined;
    if (st === undefined) throw new TypeErrorCtor("not a URL");
    return st;
  };

  class URL {
    constructor(url, base) {
      if (arguments.length === 0) throw new TypeErrorCtor("URL expects 1 argument");
      const parts = base === undefined ? host.urlParse(StringCtor(url)) : host.urlParse(StringCtor(url), StringCtor(base));
      wset(urls, this, { parts, params: null });
    }
    static canParse(url, base) {
      try {
        new URL(url, base);
        return true;
      } catch (e) {
        return false;
      }
    }
    static parse(url, base) {
      try {
        return new URL(url, base);
      } catch (e) {
        return null;
      }
    }
    get searchParams() {
      const st = urlState(this);
      if (st.params === null) {
        st.params = new URLSearchParams(st.parts[9]);
        wget(paramStates, st.params).url = this;
      }
      return st.params;
    }
    toString() {
      return urlState(this).parts[0];
    }
    toJSON() {
      return urlState(this).parts[0];
    }
  }
  for (let i = 0; i < FIELDS.length; i++) {
    const field = FIELDS[i];
    const accessor = {
      get() {
        return urlState(this).parts[i];
      },
      enumerable: true,
      configurable: true,
    };
    if (field !== "origin") {
      accessor.set = function (value) {
        const st = urlState(this);
        st.parts = host.urlSet(st.parts[0], field, StringCtor(value));
        if (st.params !== null) wget(paramStates, st.params).list = pairs(host.formParse(st.parts[9]));
      };
    }
    ObjectDefineProperty(URL.prototype, field, accessor);
  }

  const pairs = (flat) => {
    const list = [];
    for (let i = 0; i + 1 < flat.length; i += 2) push(list, [flat[i], flat[i + 1]]);
    return list;
  };
  const paramsState = (p) => {
    const st = p !== null && typeof p === "object" ? wget(paramStates, p) : undefined;
    if (st === undefined) throw new TypeErrorCtor("not a URLSearchParams");
    return st;
  };
  const serialize = (list) => {
    const flat = [];
    for (let i = 0; i < list.length; i++) {
      push(flat, list[i][0]);
      push(flat, list[i][1]);
    }
    return host.formSerialize(flat);
  };
  // After a change, the URL the params belong to takes their query.
  function changed(st) {
    if (st.url === null) return;
    const u = urlState(st.url);
    u.parts = host.urlSet(u.parts[0], "search", serialize(st.list));
  }

  class URLSearchParams {
    constructor(init) {
      let list = [];
      if (init === undefined || init === null) {
        // empty
      } else if (typeof init === "object" && wget(paramStates, init) !== undefined) {
        const other = wget(paramStates, init).list;
        for (let i = 0; i < other.length; i++) push(list, [other[i][0], other[i][1]]);
      } else if (typeof init === "object" && typeof init[Symbol.iterator] === "function") {
        for (const pair of init) {
          const p = [];
          for (const x of pair) push(p, wellFormed(x));
          if (p.length !== 2) throw new TypeErrorCtor("URLSearchParams: each pair must have exactly two items, a name and a value");
          push(list, p);
        }
      } else if (typeof init === "object") {
        const keys = ObjectKeys(init);
        for (let i = 0; i < keys.length; i++) push(list, [wellFormed(keys[i]), wellFormed(init[keys[i]])]);
      } else {
        list = pairs(host.formParse(wellFormed(init)));
      }
      wset(paramStates, this, { list, url: null });
    }
    get size() {
      return paramsState(this).list.length;
    }
    append(name, value) {
      const st = paramsState(this);
      push(st.list, [wellFormed(name), wellFormed(value)]);
      changed(st);
    }
    delete(name, value) {
      const st = paramsState(this);
      const n = wellFormed(name);
      const v = value === undefined ? undefined : wellFormed(value);
      const kept = [];
      for (let i = 0; i < st.list.length; i++) {
        const p = st.list[i];
        if (!(p[0] === n && (v === undefined || p[1] === v))) push(kept, p);
      }
      st.list = kept;
      changed(st);
    }
    get(name) {
      const list = paramsState(this).list;
      const n = wellFormed(name);
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) return list[i][1];
      return null;
    }
    getAll(name) {
      const list = paramsState(this).list;
      const n = wellFormed(name);
      const out = [];
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) push(out, list[i][1]);
      return out;
    }
    has(name, value) {
      const list = paramsState(this).list;
      const n = wellFormed(name);
      const v = value === undefined ? undefined : wellFormed(value);
      for (let i = 0; i < list.length; i++) if (list[i][0] === n && (v === undefined || list[i][1] === v)) return true;
      return false;
    }
    set(name, value) {
      const st = paramsState(this);
      const n = wellFormed(name);
      const v = wellFormed(value);
      const kept = [];
      let found = false;
      for (let i = 0; i < st.list.length; i++) {
        const p = st.list[i];
        if (p[0] !== n) push(kept, p);
        else if (!found) {
          found = true;
          push(kept, [n, v]);
        }
      }
      if (!found) push(kept, [n, v]);
      st.list = kept;
      changed(st);
    }
    sort() {
      const st = paramsState(this);
      // Stable, by UTF-16 code units, as the Standard asks.
      st.list = st.list.map((p, i) => [p, i]).sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1])).map((x) => x[0]);
      changed(st);
    }
    forEach(fn, thisArg) {
      const list = paramsState(this).list;
      for (let i = 0; i < list.length; i++) apply(fn, thisArg, [list[i][1], list[i][0], this]);
    }
    entries() {
      return paramsState(this).list.map((p) => [p[0], p[1]]).values();
    }
    keys() {
      return paramsState(this).list.map((p) => p[0]).values();
    }
    values() {
      return paramsState(this).list.map((p) => p[1]).values();
    }
    [Symbol.iterator]() {
      return this.entries();
    }
    toString() {
      return serialize(paramsState(this).list);
    }
  }

  // -- the global object ------------------------------------------------------

  const globals = {
    setTimeout,
    clearTimeout,
    setInterval,
    clearInterval,
    queueMicrotask,
    DOMException,
    Event,
    EventTarget,
    AbortController,
    AbortSignal,
    TextEncoder,
    TextDecoder,
    atob,
    btoa,
    structuredClone,
    crypto,
    performance,
    URL,
    URLSearchParams,
  };
  const names = ObjectKeys(globals);
  for (let i = 0; i < names.length; i++) {
    ObjectDefineProperty(global, names[i], { value: globals[names[i]], writable: true, enumerable: false, configurable: true });
  }

  return Object.freeze({ fireTimer, withSignal });
})
