// A downstream MCP server on the official TypeScript SDK (McpServer) for
// what quickforge relays between a script's calls and its client, where
// server-everything has no deterministic tool for it. Every tool does one
// real protocol thing:
//
//   slow {ms}            waits, and appends {"cancelled": true|false, ms,
//                        traceparent, tracestate} to the file named by
//                        --record when it ends (cancelled means the server
//                        heard notifications/cancelled; the trace fields are
//                        the request's _meta ones, if any)
//   wipe {target}        a tool annotated destructiveHint: true
//   ask {question}       elicitation/create (form), returns the answer
//   sample {prompt}      sampling/createMessage, returns the reply text
//   roots {}             roots/list, returns the roots
//   progress {steps}     one notifications/progress per step (on the
//                        caller's token), then returns
//   log {levels}         one notifications/message per level, then returns
//   slow_task {ms}       runs only as a 2025-11-25 task (taskSupport:
//                        "required"): appends {"tool": "slow_task",
//                        traceparent, tracestate} to the --record file when
//                        the task is created, and completes after ms
//
// and a prompt `review {file}` (with completion of `file`), a resource
// note://readme and a resource template note://{id} (with completion of
// `id`).
//
// Usage: node relay.mjs [--record FILE] [--http PORT]
// With --http (PORT 0: any free one) it serves streamable HTTP at
// http://127.0.0.1:PORT/mcp and writes "relay: listening on PORT" to stderr.

import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from "@modelcontextprotocol/sdk/experimental/tasks";
import { completable } from "@modelcontextprotocol/sdk/server/completable.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const args = process.argv.slice(2);
const record = args.includes("--record") ? args[args.indexOf("--record") + 1] : null;
const note = (entry) => {
  if (record) appendFileSync(record, JSON.stringify(entry) + "\n");
};
const text = (value) => ({ content: [{ type: "text", text: JSON.stringify(value) }] });

function makeServer() {
  const server = new McpServer(
    { name: "quickforge-relay-fixture", version: "1.0.0" },
    {
      capabilities: { logging: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: new InMemoryTaskStore(),
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );

  server.experimental.tasks.registerToolTask(
    "slow_task",
    {
      description: "Wait ms milliseconds as a task (task augmentation required)",
      inputSchema: { ms: z.number() },
      execution: { taskSupport: "required" },
    },
    {
      createTask: async ({ ms }, extra) => {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
        note({ tool: "slow_task", traceparent: extra._meta?.traceparent, tracestate: extra._meta?.tracestate });
        setTimeout(() => {
          extra.taskStore.storeTaskResult(task.taskId, "completed", text({ slept: ms })).catch(() => {});
        }, ms);
        return { task };
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId),
    },
  );

  server.registerTool(
    "slow",
    { description: "Wait ms milliseconds; record whether the wait was cancelled", inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => {
      const cancelled = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      note({ tool: "slow", ms, cancelled, traceparent: extra._meta?.traceparent, tracestate: extra._meta?.tracestate });
      return text({ slept: ms, cancelled });
    },
  );

  server.registerTool(
    "wipe",
    {
      description: "Delete everything under target (a test double: deletes nothing)",
      inputSchema: { target: z.string() },
      annotations: { destructiveHint: true },
    },
    async ({ target }) => {
      note({ tool: "wipe", target });
      return text({ wiped: target });
    },
  );

  server.registerTool(
    "ask",
    { description: "Ask the user a question (elicitation)", inputSchema: { question: z.string() } },
    async ({ question }, extra) => {
      const answer = await server.server.elicitInput(
        {
          mode: "form",
          message: question,
          requestedSchema: {
            type: "object",
            properties: { answer: { type: "string", description: "Your answer" } },
            required: ["answer"],
          },
        },
        { relatedRequestId: extra.requestId, timeout: 600_000 },
      );
      return text(answer);
    },
  );

  server.registerTool(
    "sample",
    { description: "Ask the client's model (sampling)", inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const reply = await server.server.createMessage(
        { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 50 },
        { relatedRequestId: extra.requestId, timeout: 600_000 },
      );
      return text({ model: reply.model, text: reply.content.text });
    },
  );

  server.registerTool(
    "roots",
    { description: "List the client's roots", inputSchema: {} },
    async (_args, extra) => {
      const roots = await server.server.listRoots(undefined, { relatedRequestId: extra.requestId });
      return text(roots.roots);
    },
  );

  server.registerTool(
    "progress",
    { description: "Report progress steps times", inputSchema: { steps: z.number() } },
    async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
          });
        }
        await new Promise((r) => setTimeout(r, 150));
      }
      return text({ steps, token: token !== undefined });
    },
  );

  // answers at once, then logs after `ms`: a message that relates to a call
  // no longer in flight (and, on stdio, carries no request id)
  server.registerTool(
    "log_later",
    { description: "Answer, then log `marker` after `ms` milliseconds", inputSchema: { ms: z.number(), marker: z.string() } },
    async ({ ms, marker }) => {
      setTimeout(() => {
        server.server.sendLoggingMessage({ level: "error", logger: "late", data: marker }).catch(() => {});
      }, ms);
      return text({ scheduled: marker });
    },
  );

  server.registerTool(
    "log",
    {
      description: "Send one log message per level",
      inputSchema: { levels: z.array(z.string()), logger: z.string().optional() },
    },
    async ({ levels, logger }, extra) => {
      for (const level of levels) {
        await extra.sendNotification({
          method: "notifications/message",
          params: { level, logger: logger ?? "relay-fixture", data: `a ${level} message; token=ghp_${"A".repeat(36)}` },
        });
      }
      return text({ logged: levels.length });
    },
  );

  server.registerPrompt(
    "review",
    {
      description: "Review a file",
      argsSchema: { file: completable(z.string(), (value) => ["main.rs", "mod.rs", "lib.rs"].filter((f) => f.startsWith(value))) },
    },
    ({ file }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Review ${file}; the key is sk_live_${"a".repeat(24)}` } }],
    }),
  );

  server.registerResource(
    "readme",
    "note://readme",
    { description: "The fixed note", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, text: "read me first" }] }),
  );

  // a file's URI, which the redactor's path rule would take for a path
  server.registerResource(
    "home-note",
    "file:///home/alice/notes/todo.md",
    { description: "A note in a home directory", mimeType: "text/markdown" },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: "text/markdown", text: `see /home/alice/.ssh/id_rsa; token ghp_${"B".repeat(36)}` }],
    }),
  );

  server.registerResource(
    "note",
    new ResourceTemplate("note://{id}", {
      list: undefined,
      complete: { id: (value) => ["1", "2", "12"].filter((id) => id.startsWith(value)) },
    }),
    { description: "A note by id", mimeType: "text/plain" },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `note ${id}` }] }),
  );

  return server;
}

if (args.includes("--http")) {
  const port = Number(args[args.indexOf("--http") + 1]);
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    let transport = sessions.get(req.headers["mcp-session-id"]);
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(port, "127.0.0.1", () => console.error(`relay: listening on ${http.address().port}`));
} else {
  await makeServer().connect(new StdioServerTransport());
}
