// wasi:keyvalue/store@0.2.0-draft for Node through jco, which ships no
// key-value shim: one in-memory bucket ("") per Node process, shared by every
// request that process serves, so the edge component's stash outlives a
// request as it does in a runtime with a real store. Values end with the
// process; for a store that outlives it, back the five methods below with one
// (a file, Redis, Workers KV) instead.
//
// With `jco serve --isolate-requests instance` (a fresh instance per request,
// which the edge component needs), jco builds each instance's imports with
// preview2-shim's WASIShim and takes no `--jco-map`; this module, given as
// `--jco-import`, adds itself there:
//
//   jco serve --isolate-requests instance --jco-import edge/jco/keyvalue.mjs \
//     edge/dist/quickforge_edge.wasm
//
// For a transpiled component with ESM imports, map it instead:
// `--map 'wasi:keyvalue/store@0.2.0-draft=./keyvalue.mjs#store'`.
//
// Results follow jco's convention: a value is `ok`, `{tag: "err", val}` an
// error of the interface's `error` variant.

import { createRequire } from "node:module";
import process from "node:process";
import { pathToFileURL } from "node:url";

const data = new Map();

class Bucket {
  get(key) {
    const v = data.get(key);
    return v === undefined ? undefined : v.slice();
  }
  set(key, value) {
    data.set(key, Uint8Array.from(value));
  }
  delete(key) {
    data.delete(key);
  }
  exists(key) {
    return data.has(key);
  }
  listKeys(_cursor) {
    return { keys: [...data.keys()], cursor: undefined };
  }
}

function open(identifier) {
  if (identifier !== "") {
    return { tag: "err", val: { tag: "no-such-store" } };
  }
  return new Bucket();
}

export const store = { Bucket, open };

// Loaded by `jco serve --jco-import`: the main script is jco's runner, in the
// directory whose node_modules holds the preview2-shim it instantiates with.
// Resolve that same copy (the same module instance) and add the store to the
// import object every request's instance is built from.
const runner = process.argv[1];
if (runner && runner.endsWith("_run.js")) {
  const require = createRequire(pathToFileURL(runner));
  const shim = require.resolve("@bytecodealliance/preview2-shim/instantiation");
  const { WASIShim } = await import(pathToFileURL(shim).href);
  const base = WASIShim.prototype.getImportObject;
  WASIShim.prototype.getImportObject = function (opts) {
    const imports = base.call(this, opts);
    imports["wasi:keyvalue/store"] = store;
    imports["wasi:keyvalue/store@0.2.0-draft"] = store;
    return imports;
  };
}
