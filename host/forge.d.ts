// search mode: only manifest and logs; forge calls and stash reject (MODE_DENIED)
// globals: timers, AbortController, URL, TextEncoder/Decoder, atob/btoa, structuredClone, crypto, performance, Intl; no fetch
type Log = (...a: any[]) => void;
type Fail = { code: string; retryable: boolean; suggestion: string | null };
type Err = Fail & { name: string; message: string };
type Doc = { name: string; description: string };
// s.tool(args); s.cat.tool(args) calls tool "cat.tool"
type Server = { [k: string]: Server & ((args?: object) => Promise<any>) };
declare class ForgeError extends Error {
  static codes: string[]; // every code
  code: string; // e.g. TOOL_NOT_FOUND
  retryable: boolean;
  suggestion: string | null;
  error: true; suggested_fix: string | null;
  toJSON(): Err;
}
declare const forge: {
  callTool(server: string, tool: string, args?: object, opts?: { signal: AbortSignal }): Promise<any>;
  server(name: string): Server;
  readResource(server: string, uri: string): Promise<any>;
  stash: { // across executions: result.stash -> execute's stash; ttl s
    put(key: string, value: unknown, opts?: { ttl?: number }): Promise<{ ok: true }>;
    get(key: string): Promise<unknown | null>;
    delete(key: string): Promise<{ deleted: boolean }>;
    keys(): Promise<string[]>;
  };
  // a failed call: results[i] null, in errors; failFast: start no more (aborted)
  parallel(calls: ((() => unknown) | { fn: () => unknown })[], opts?: { concurrency?: number; failFast?: boolean }): Promise<{ results: unknown[]; errors: ({ index: number; error: string } & Fail)[]; aborted: boolean }>;
  log: Log;
  progress(done: number, total?: number, message?: string): void; // client's progress bar
};
declare const console: { log: Log; info: Log; debug: Log; warn: Log; error: Log };
declare const manifest: {
  servers: (Doc & { status: "connecting" | "ready" | "unavailable"; error?: string; tools: number; categories: { [c: string]: Doc & { tools: (Doc & { input_schema: object })[] } }; resources: { uri: string; name: string; mimeType?: string }[]; templates: { uriTemplate: string; name: string }[] })[];
  search(query: string, opts?: { limit?: number }): { server: string; tool: string; description: string }[];
  tool(server: string, name: string): Doc & { server: string; title?: string; inputSchema: object; outputSchema?: object; annotations?: object; signature: string };
};
